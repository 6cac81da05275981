/* test_dp.c — Check tests of the dp module: rk-Rotor's table and plans on
 * 1- and 2-block chains, hand-worked homogeneous chains at both extremes,
 * random chains against an exhaustive search of the plan family, every
 * schedule replayed by the simulator (peak <= budget, peak and time as
 * predicted), 1 vs 2 threads, the ordering rockmate <= rotor <= sqrt, and the
 * `rkmate solve` command. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dp_fixtures.h"

#define A_ 1000
#define H_ 3000

static void params(rk_dp_params *p, int slots, int threads, int fallback) {
    rk_dp_params_default(p);
    p->slots = slots;
    p->threads = threads;
    p->fallback = fallback;
}

/* Solve, build, simulate and check the simulator agrees with the prediction
 * and the budget.  Returns feasibility; fills res, sim. */
static int solve_check(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c, rk_dp_algo algo,
                       int64_t budget, const rk_dp_params *p, rk_dp_result *res, rk_sim_result *sim, rk_schedule *out) {
    rk_dp_plan plan;
    rk_error err;
    rk_status st = rk_dp_solve(c, algo, budget, p, &plan, res, &err);
    ck_assert_msg(st == RK_OK, "solve: %s", err.msg);
    if (!res->feasible) return 0;
    rk_schedule s;
    st = fx_build_and_simulate(ch, o, c, &plan, &s, sim, &err);
    ck_assert_msg(st == RK_OK, "%s at %lld: %s", rk_dp_algo_name(algo), (long long)budget, err.msg);
    ck_assert_msg(sim->peak <= budget, "%s: peak %lld > budget %lld", rk_dp_algo_name(algo), (long long)sim->peak,
                  (long long)budget);
    ck_assert_msg(sim->peak == s.predicted_peak && s.predicted_peak == res->predicted_peak,
                  "%s: simulated peak %lld, predicted %lld / %lld", rk_dp_algo_name(algo), (long long)sim->peak,
                  (long long)s.predicted_peak, (long long)res->predicted_peak);
    ck_assert_msg(fabs(sim->time - res->predicted_time) <= 1e-9 * (1 + sim->time), "%s: time %.17g predicted %.17g",
                  rk_dp_algo_name(algo), sim->time, res->predicted_time);
    if (out) *out = s;
    else rk_schedule_free(&s);
    rk_dp_plan_free(&plan);
    return 1;
}

static void setup_chain(const rk_chain *ch, int rotor, rk_dp_options *o, rk_dp_costs *c) {
    rk_error err;
    rk_status st = rotor ? rk_dp_options_rotor(ch, o, &err) : rk_dp_options_default(ch, o, &err);
    ck_assert_msg(st == RK_OK, "options: %s", err.msg);
    st = rk_dp_costs_build(ch, o, c, &err);
    ck_assert_msg(st == RK_OK, "costs: %s", err.msg);
}

/* A random chain of 2 to 10 blocks of 1 to 3 classes, with its default
 * options and their costs. */
static void random_setup(fx_rng *r, rk_chain *ch, rk_dp_options *o, rk_dp_costs *c) {
    int L = fx_int(r, 2, 10);
    ck_assert_int_eq(fx_random_chain(ch, r, L, fx_int(r, 1, 3), 1000 + fx_int(r, 0, 999), 997), RK_OK);
    setup_chain(ch, 0, o, c);
}

static void teardown(rk_chain *ch, rk_dp_options *o, rk_dp_costs *c) {
    rk_dp_costs_free(c);
    rk_dp_options_free(o);
    rk_chain_free(ch);
}

/* A chain's costs under Rockmate's default options (ro, co) and under
 * Rotor's (rr, cr), for the tests that compare the two. */
typedef struct {
    rk_dp_options ro, rr;
    rk_dp_costs co, cr;
} fx_both;

static void setup_both(const rk_chain *ch, fx_both *f) {
    setup_chain(ch, 1, &f->rr, &f->cr);
    setup_chain(ch, 0, &f->ro, &f->co);
}

static void teardown_both(rk_chain *ch, fx_both *f) {
    rk_dp_costs_free(&f->cr);
    rk_dp_options_free(&f->rr);
    teardown(ch, &f->ro, &f->co);
}

/* ------------------------------------------------------------ costs */

START_TEST(test_costs_match_option_evaluate) {
    fx_rng r = {11};
    for (int k = 0; k < 30; k++) {
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, 1, 1, 1000 * fx_int(&r, 1, 4), 1 + fx_int(&r, 0, 1) * 999), RK_OK);
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&ch, 0, &o, &c);
        for (int i = 0; i < o.classes[0].n_options; i++) {
            rk_option e = o.classes[0].options[i];
            rk_error err;
            ck_assert_int_eq(rk_option_evaluate(&ch.classes[0], &e, &err), RK_OK);
            const rk_dp_option_cost *x = &c.classes[0].opt[i];
            ck_assert_int_eq(x->fwd_peak, e.fwd_peak);
            ck_assert_int_eq(x->saved, e.saved);
            ck_assert(x->fwd_time == e.fwd_time);
            if (i > 0) {
                ck_assert_int_eq(x->bwd_peak, e.bwd_peak);
                ck_assert(x->bwd_time == e.bwd_time);
            }
            ck_assert(x->fwd_peak_re <= x->fwd_peak + c.classes[0].output_size);
        }
        ck_assert_int_eq(c.classes[0].keep_all, 1);
        teardown(&ch, &o, &c);
    }
}
END_TEST

START_TEST(test_bad_costs_and_params) {
    rk_chain ch;
    ck_assert_int_eq(fx_hand_chain(&ch, 3, A_, H_), RK_OK);
    rk_dp_options o;
    rk_dp_costs c;
    setup_chain(&ch, 1, &o, &c);
    rk_error err;
    rk_dp_params p;
    params(&p, 500, 1, 1);
    rk_dp_table *t;
    ck_assert_int_eq(rk_dp_table_fill(&c, -1, &p, &t, &err), RK_EINPUT);
    p.slots = 0;
    ck_assert_int_eq(rk_dp_table_fill(&c, 100000, &p, &t, &err), RK_EINPUT);
    /* option 0 with a backward is refused */
    rk_dp_options bad;
    ck_assert_int_eq(rk_dp_options_rotor(&ch, &bad, &err), RK_OK);
    rk_option tmp = bad.classes[0].options[0];
    bad.classes[0].options[0] = bad.classes[0].options[1];
    bad.classes[0].options[1] = tmp;
    rk_dp_costs bc;
    ck_assert_int_eq(rk_dp_costs_build(&ch, &bad, &bc, &err), RK_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "option 0"));
    rk_dp_options_free(&bad);
    /* a plan with a decision outside the subproblem is refused */
    rk_dp_plan pl;
    ck_assert_int_eq(rk_dp_plan_init(&pl, 3), RK_OK);
    rk_dp_plan_set(&pl, 0, 3, -3);
    rk_dp_eval ev;
    ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev, &err), RK_EINPUT);
    rk_dp_plan_set(&pl, 0, 3, 7);
    ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev, &err), RK_EINPUT);
    rk_dp_plan_free(&pl);
    teardown(&ch, &o, &c);
}
END_TEST

/* ------------------------------------------------------- 1 and 2 blocks */

START_TEST(test_one_block) {
    fx_rng r = {3};
    for (int k = 0; k < 20; k++) {
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, 1, 1, 1000 * fx_int(&r, 1, 4), 1000), RK_OK);
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&ch, k % 2, &o, &c);
        /* by hand: one base case with the loss, nothing held outside */
        int64_t want = INT64_MAX;
        for (int i = 1; i < c.classes[0].n_options; i++) {
            const rk_dp_option_cost *x = &c.classes[0].opt[i];
            int64_t v = x->fwd_peak > x->loss_peak ? x->fwd_peak : x->loss_peak;
            if (x->bwd_peak > v) v = x->bwd_peak;
            if (v < want) want = v;
        }
        ck_assert_int_eq(rk_dp_min_memory(&c), want);
        rk_dp_params p;
        rk_dp_result res;
        rk_sim_result sim;
        for (int64_t B = want - 1000; B <= want + 3000; B += 1000) {
            params(&p, (int)(B / 1000), 1, 0); /* one slot = 1000 bytes: exact */
            int f = solve_check(&ch, &o, &c, k % 2 ? RK_DP_ROTOR : RK_DP_ROCKMATE, B, &p, &res, &sim, NULL);
            ck_assert_int_eq(f, B >= want);
            if (f) {
                ck_assert_int_eq(res.n_forwards, 1);
                ck_assert(fabs(sim.time - sim.baseline_time) < 1e-9);
            }
        }
        teardown(&ch, &o, &c);
    }
}
END_TEST

START_TEST(test_two_blocks_by_hand) {
    /* Hand class (A = 1000, H = 3000): fwd peaks 2A+H, loss peak 3A+H, bwd
     * peak 2A+2H (x, dh and h, dy: y is freed first), keep-all saves h.
     * (0,2) case 1: F0 (5000), then (1,2) with X = A+H: 4000 + 8000 = 12000,
     *   B0 8000: needs 12000, time 2*2 + 2*4 = 12, 2 forwards.
     * (0,2) case 2 at 1: F0_0 (5000), (1,2) with X = A: 9000, then (0,1)
     *   with a_1, d_1 present: max(A + fwd_re 5000, 8000): needs 9000, time
     *   2 + 6 + 6 = 14, 3 forwards. */
    rk_chain ch;
    ck_assert_int_eq(fx_hand_chain(&ch, 2, A_, H_), RK_OK);
    for (int rot = 0; rot < 2; rot++) {
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&ch, rot, &o, &c);
        const rk_dp_option_cost *ka = &c.classes[0].opt[1];
        ck_assert_int_eq(ka->fwd_peak, 2 * A_ + H_);
        ck_assert_int_eq(ka->saved, H_);
        ck_assert_int_eq(ka->bwd_peak, 2 * A_ + 2 * H_);
        ck_assert_int_eq(ka->loss_peak, 3 * A_ + H_);
        ck_assert_int_eq(rk_dp_min_memory(&c), 9000);
        rk_dp_params p;
        rk_dp_result res;
        rk_sim_result sim;
        for (int64_t B = 8000; B <= 14000; B += 500) {
            params(&p, (int)(B / 500), 2, 0);
            int f = solve_check(&ch, &o, &c, rot ? RK_DP_ROTOR : RK_DP_ROCKMATE, B, &p, &res, &sim, NULL);
            ck_assert_int_eq(f, B >= 9000);
            if (!f) continue;
            ck_assert_int_eq(res.n_forwards, B >= 12000 ? 2 : 3);
            ck_assert(fabs(sim.time - (B >= 12000 ? 12.0 : 14.0)) < 1e-9);
            ck_assert_int_eq(sim.peak, B >= 12000 ? 12000 : 9000);
        }
        rk_dp_costs_free(&c);
        rk_dp_options_free(&o);
    }
    rk_chain_free(&ch);
}
END_TEST

START_TEST(test_two_blocks_random) {
    fx_rng r = {5};
    for (int k = 0; k < 20; k++) {
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, 2, 2, 1000 * fx_int(&r, 1, 3), 997), RK_OK);
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&ch, 0, &o, &c);
        int64_t lo = rk_dp_min_memory(&c);
        rk_dp_params p;
        rk_dp_result res;
        rk_sim_result sim;
        params(&p, 500, 2, 1);
        for (int j = 0; j < 8; j++) {
            int64_t B = lo + (int64_t)j * lo / 10;
            solve_check(&ch, &o, &c, RK_DP_ROCKMATE, B, &p, &res, &sim, NULL);
        }
        teardown(&ch, &o, &c);
    }
}
END_TEST

/* ------------------------------------------------- homogeneous extremes */

START_TEST(test_homogeneous_keep_everything) {
    /* L = 6 hand blocks: keeping everything holds a_s + h for every block
     * before the last, whose backward needs 2A + 2H: (L+1)(A+H) = 28000.  With
     * that budget the DP recomputes nothing: 6 forwards, time 6*2 + 6*4 = 36,
     * overhead 0. */
    int L = 6;
    rk_chain ch;
    ck_assert_int_eq(fx_hand_chain(&ch, L, A_, H_), RK_OK);
    rk_dp_options o;
    rk_dp_costs c;
    setup_chain(&ch, 0, &o, &c);
    rk_dp_params p;
    rk_dp_result res;
    rk_sim_result sim;
    params(&p, 28, 2, 0);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_KEEP_ALL, 28000, &p, &res, &sim, NULL));
    ck_assert_int_eq(sim.peak, (L + 1) * (A_ + H_));
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, 28000, &p, &res, &sim, NULL));
    ck_assert_str_eq(res.source, "dp");
    ck_assert_int_eq(res.n_forwards, L);
    ck_assert(fabs(sim.time - 36.0) < 1e-9);
    ck_assert(fabs(sim.overhead) < 1e-12);
    /* one slot less and something must be recomputed */
    params(&p, 27999, 2, 0);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, 27999, &p, &res, &sim, NULL));
    ck_assert_int_gt(res.n_forwards, L);
    ck_assert(sim.time > 36.0);
    teardown(&ch, &o, &c);
}
END_TEST

START_TEST(test_homogeneous_smallest_budget) {
    /* Smallest budget, worked by hand (A = 1000, H = 3000, L = 6):
     *  - a base case (s, s+1) needs 2A + 2H = 8000 for its backward, and for
     *    s >= 1 some caller holds a_0 (A): 3A + 2H = 9000 at least;
     *  - case 1 above a base case adds a_s + h = A + H to what is held, and a
     *    second checkpoint adds another A: both exceed 9000;
     *  - so the only plan at 9000 is "recompute everything": for t = L..1,
     *    F0 blocks 0..t-2 from a_0, then block t-1 with keep-all and its
     *    backward.  Its forward chains need at most 5A + H = 8000.
     *  Forwards: 1 + 2 + ... + L = 21; time 21 * 2 + 6 * 4 = 66. */
    int L = 6;
    rk_chain ch;
    ck_assert_int_eq(fx_hand_chain(&ch, L, A_, H_), RK_OK);
    rk_dp_options o;
    rk_dp_costs c;
    setup_chain(&ch, 0, &o, &c);
    ck_assert_int_eq(rk_dp_min_memory(&c), 3 * A_ + 2 * H_);
    rk_dp_params p;
    rk_dp_result res;
    rk_sim_result sim;
    rk_schedule s;
    params(&p, 900, 2, 0); /* 10 bytes per slot: exact */
    ck_assert(!solve_check(&ch, &o, &c, RK_DP_ROCKMATE, 8999, &p, &res, &sim, NULL));
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, 9000, &p, &res, &sim, &s));
    ck_assert_int_eq(res.n_forwards, L * (L + 1) / 2);
    ck_assert_int_eq(sim.peak, 9000);
    ck_assert(fabs(sim.time - 66.0) < 1e-9);
    /* the forward marks, in order: for t = 6..1, blocks 0..t-1, the last
     * with keep-all (option 1) and the others without saving (option 0) */
    int n = 0;
    for (int i = 0; i < s.n_ops; i++) {
        const rk_op *op = &s.ops[i];
        if (op->kind != RK_OP_MARK || op->node != RK_MARK_FWD_BEGIN) continue;
        int t = L, k = n;
        while (k >= t) k -= t--;
        ck_assert_msg(op->block == k && op->option == (k == t - 1 ? 1 : 0), "forward %d: block %d option %d", n,
                      op->block, op->option);
        n++;
    }
    ck_assert_int_eq(n, 21);
    /* the loss of the last block runs between its forward and backward */
    int seen_loss = 0;
    for (int i = 0; i < s.n_ops; i++)
        if (s.ops[i].kind == RK_OP_RUN && s.ops[i].block == L - 1 && s.ops[i].node == ch.classes[0].loss) seen_loss++;
    ck_assert_int_eq(seen_loss, 1);
    rk_schedule_free(&s);
    /* the same as the recompute-all baseline */
    ck_assert(solve_check(&ch, &o, &c, RK_DP_RECOMPUTE_ALL, 9000, &p, &res, &sim, NULL));
    ck_assert_int_eq(res.n_forwards, 21);
    /* with the default 500 slots the smallest budget is a little higher (rounding up) and works */
    int64_t mb;
    rk_error err;
    ck_assert_int_eq(rk_dp_min_budget(&c, 500, &mb, &err), RK_OK);
    ck_assert_int_ge(mb, 9000);
    ck_assert_int_le(mb, 9000 + 9000 / 500 * 8);
    params(&p, 500, 2, 0);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, mb, &p, &res, &sim, NULL));
    ck_assert(!solve_check(&ch, &o, &c, RK_DP_ROCKMATE, mb - 1, &p, &res, &sim, NULL));
    teardown(&ch, &o, &c);
}
END_TEST

/* ---------------------------------------------------- exhaustive search */

START_TEST(test_exhaustive_small_chains) {
    fx_rng r = {7};
    long total_plans = 0;
    for (int k = 0; k < 16; k++) {
        int L = 1 + k % 4;
        int rot = (k / 4) % 2;
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, L, 1 + k % 2, 1000 * fx_int(&r, 1, 3), 1000), RK_OK);
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&ch, rot, &o, &c);
        fx_exhaustive ex;
        rk_dp_plan pl;
        rk_dp_eval ev;
        rk_error err;
        ck_assert_int_eq(rk_dp_plan_keep_all(&c, &pl, &err), RK_OK);
        ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev, &err), RK_OK);
        rk_dp_plan_free(&pl);
        int64_t hi = ev.peak, lo = rk_dp_min_memory(&c);
        for (int64_t B = lo - 1000; B <= hi; B += 1000 * (1 + (hi - lo) / 8000)) {
            ck_assert_int_eq(fx_exhaustive_search(&ch, &o, &c, B, &ex), RK_OK);
            ck_assert_int_eq(ex.mismatches, 0); /* the exact accounting is the simulator's */
            ck_assert_int_eq(ex.min_peak, lo);
            total_plans += ex.n_plans;
            rk_dp_params p;
            rk_dp_result res;
            rk_sim_result sim;
            params(&p, B > 0 ? (int)(B / 1000) : 1, 2, 0); /* exact slots */
            int f = solve_check(&ch, &o, &c, rot ? RK_DP_ROTOR : RK_DP_ROCKMATE, B, &p, &res, &sim, NULL);
            ck_assert_int_eq(f, isfinite(ex.best_time));
            if (f)
                ck_assert_msg(fabs(sim.time - ex.best_time) <= 1e-9 * ex.best_time,
                              "L=%d B=%lld: DP %.17g, exhaustive %.17g over %ld plans", L, (long long)B, sim.time,
                              ex.best_time, ex.n_plans);
        }
        teardown(&ch, &o, &c);
    }
    ck_assert_int_gt(total_plans, 500); /* two options per class ({none, keep_all}) */
}
END_TEST

/* --------------------------------------------- random chains, replayed */

START_TEST(test_random_chains_replayed_and_ordered) {
    fx_rng r = {_i * 7919 + 13};
    int checked = 0, ordered = 0;
    for (int k = 0; k < 12; k++) {
        int L = fx_int(&r, 1, 14);
        rk_chain ch;
        /* sizes that are not multiples of anything the slots use */
        ck_assert_int_eq(fx_random_chain(&ch, &r, L, fx_int(&r, 1, 3), 1000 + fx_int(&r, 0, 999), 997), RK_OK);
        fx_both f;
        setup_both(&ch, &f);
        rk_dp_plan pl;
        rk_dp_eval ev;
        rk_error err;
        ck_assert_int_eq(rk_dp_plan_keep_all(&f.cr, &pl, &err), RK_OK);
        ck_assert_int_eq(rk_dp_plan_evaluate(&f.cr, &pl, &ev, &err), RK_OK);
        rk_dp_plan_free(&pl);
        int64_t lo = rk_dp_min_memory(&f.co), hi = ev.peak;
        ck_assert_int_le(lo, rk_dp_min_memory(&f.cr));
        for (int j = 0; j <= 10; j++) {
            int64_t B = lo + (hi - lo) * j / 10 + (j == 3 ? 1 : 0);
            rk_dp_params p;
            params(&p, fx_int(&r, 0, 1) ? 500 : fx_int(&r, 20, 300), 2, 1);
            rk_dp_result a, b, s, n, z;
            rk_sim_result sa, sb, ss, sn, sz;
            int fa = solve_check(&ch, &f.ro, &f.co, RK_DP_ROCKMATE, B, &p, &a, &sa, NULL);
            int fb = solve_check(&ch, &f.rr, &f.cr, RK_DP_ROTOR, B, &p, &b, &sb, NULL);
            int fs = solve_check(&ch, &f.rr, &f.cr, RK_DP_SQRT, B, &p, &s, &ss, NULL);
            int fn = solve_check(&ch, &f.rr, &f.cr, RK_DP_KEEP_ALL, B, &p, &n, &sn, NULL);
            int fz = solve_check(&ch, &f.rr, &f.cr, RK_DP_RECOMPUTE_ALL, B, &p, &z, &sz, NULL);
            checked += fa + fb + fs + fn + fz;
            /* rk-Rotor's options contain Rotor's; the fallback keeps Rotor
             * at least as good as the family's rule plans */
            if (fb) ck_assert(fa);
            if (fa && fb) ck_assert_msg(sa.overhead <= sb.overhead + 1e-12, "rockmate %.17g > rotor %.17g", sa.overhead, sb.overhead);
            if (fb && fs) {
                ck_assert_msg(sb.overhead <= ss.overhead + 1e-12, "rotor %.17g > sqrt %.17g", sb.overhead, ss.overhead);
                ordered++;
            }
            if (fn) ck_assert(fb && fabs(sb.overhead) < 1e-9);
            if (fz) ck_assert(fb && sb.overhead <= sz.overhead + 1e-12);
            /* the smallest budget works */
            int64_t mb;
            ck_assert_int_eq(rk_dp_algo_min_budget(&f.co, RK_DP_ROCKMATE, &p, &mb, &err), RK_OK);
            ck_assert_int_ge(mb, lo);
            ck_assert(solve_check(&ch, &f.ro, &f.co, RK_DP_ROCKMATE, mb, &p, &a, &sa, NULL));
        }
        teardown_both(&ch, &f);
    }
    ck_assert_int_gt(checked, 100);
    ck_assert_int_gt(ordered, 10);
}
END_TEST

START_TEST(test_output_rebuilt_input_dropped) {
    /* rk-Rotor frees every block's output once the next block's backward is
     * done (its forward before its own backward rebuilds it: out_rebuilt),
     * and a block whose input is freed right after its backward (case 2's
     * checkpoint) forgets that input after its last real use
     * (bwd_peak_drop).  Against the same costs under the rules before (an
     * output kept unless no backward of its block reads it; no input
     * dropped), and with only the input drop off, the smallest memory never
     * grows and shrinks on some chains; schedules at the new smallest
     * budget replay as predicted (solve_check), with forgets of block outputs
     * after a later block's backward and of a block's input inside its own
     * backward. */
    fx_rng r = {4242};
    int lower = 0, lower_drop = 0, freed = 0, freed_read = 0, dropped = 0;
    for (int k = 0; k < 24; k++) {
        rk_chain ch;
        rk_dp_options o;
        rk_dp_costs c;
        random_setup(&r, &ch, &o, &c);
        int *keep = malloc((size_t)c.n_classes * sizeof *keep), *rule = malloc((size_t)c.n_classes * sizeof *rule);
        int64_t **drop = malloc((size_t)c.n_classes * sizeof *drop);
        for (int q = 0; q < c.n_classes; q++) {
            const rk_graph *g = &ch.classes[q];
            int read = 0;
            for (int n = 0; n < g->n_c; n++)
                for (int e = 0; e < g->c[n].n_uses; e++)
                    read |= g->c[n].kind == RK_C_BWD && g->c[n].uses[e].data == g->output &&
                            g->c[n].uses[e].kind == RK_EDGE_REAL;
            ck_assert_int_eq(c.classes[q].out_rebuilt, 1); /* no class's output is its input */
            keep[q] = c.classes[q].out_rebuilt;
            rule[q] = !read;
            drop[q] = malloc((size_t)c.classes[q].n_options * sizeof **drop);
            for (int x = 0; x < c.classes[q].n_options; x++) {
                ck_assert_int_le(c.classes[q].opt[x].bwd_peak_drop, c.classes[q].opt[x].bwd_peak);
                drop[q][x] = c.classes[q].opt[x].bwd_peak_drop;
            }
        }
        int64_t now = rk_dp_min_memory(&c);
        for (int q = 0; q < c.n_classes; q++)
            for (int x = 0; x < c.classes[q].n_options; x++) c.classes[q].opt[x].bwd_peak_drop = 0;
        int64_t no_drop = rk_dp_min_memory(&c);
        for (int q = 0; q < c.n_classes; q++) c.classes[q].out_rebuilt = rule[q];
        int64_t before = rk_dp_min_memory(&c);
        for (int q = 0; q < c.n_classes; q++) {
            c.classes[q].out_rebuilt = keep[q];
            for (int x = 0; x < c.classes[q].n_options; x++) c.classes[q].opt[x].bwd_peak_drop = drop[q][x];
            free(drop[q]);
        }
        free(drop);
        free(keep);
        free(rule);
        ck_assert_int_le(now, no_drop);
        ck_assert_int_le(no_drop, before);
        lower += now < before;
        lower_drop += now < no_drop;
        rk_dp_params p;
        params(&p, 500, 2, 0);
        int64_t mb;
        rk_error err;
        ck_assert_int_eq(rk_dp_min_budget(&c, 500, &mb, &err), RK_OK);
        rk_dp_result res;
        rk_sim_result sim;
        rk_schedule s;
        ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, mb, &p, &res, &sim, &s));
        for (int i = 0, bwd_after = 0, in_bwd = -1; i < s.n_ops; i++) {
            const rk_op *op = &s.ops[i];
            if (op->kind == RK_OP_MARK && op->node == RK_MARK_BWD_BEGIN) in_bwd = op->block;
            if (op->kind == RK_OP_MARK && op->node == RK_MARK_BWD_END) bwd_after = op->block, in_bwd = -1;
            if (op->kind != RK_OP_FORGET) continue;
            const rk_graph *g = &ch.classes[ch.blocks[op->block].cls];
            /* a block's output after a later block's backward */
            if (op->node == g->output && bwd_after > op->block && s.ops[i - 1].kind == RK_OP_MARK &&
                s.ops[i - 1].node == RK_MARK_BWD_END) {
                freed++;
                /* one whose own backward reads it (kept before out_rebuilt) */
                for (int n = 0; n < g->n_c; n++)
                    for (int e = 0; e < g->c[n].n_uses; e++)
                        if (g->c[n].kind == RK_C_BWD && g->c[n].uses[e].data == g->output &&
                            g->c[n].uses[e].kind == RK_EDGE_REAL) {
                            freed_read++;
                            n = g->n_c;
                            break;
                        }
            }
            /* a block's input inside its own backward */
            if (op->block == in_bwd && op->node == g->inputs[0]) {
                ck_assert_int_gt(op->block, 0);
                dropped++;
            }
        }
        rk_schedule_free(&s);
        teardown(&ch, &o, &c);
    }
    ck_assert_int_gt(lower, 0);
    ck_assert_int_gt(lower_drop, 0);
    ck_assert_int_gt(freed, 0);
    ck_assert_int_gt(freed_read, 0);
    ck_assert_int_gt(dropped, 0);
}
END_TEST

/* The boundary counts of one schedule: a block's input forgotten between its
 * forward and the next op outside it (early), a backward that does not
 * forget its block's output (it was gone before: noout). */
static void count_unread(const rk_chain *ch, const rk_schedule *s, int *early, int *noout) {
    int fwd_end = -1, in_bwd = -1, out_seen = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const rk_op *op = &s->ops[i];
        const rk_graph *g = &ch->classes[ch->blocks[op->block].cls];
        if (op->kind == RK_OP_MARK && op->node == RK_MARK_FWD_END) fwd_end = op->block;
        else if (op->kind == RK_OP_MARK) fwd_end = -1;
        if (op->kind == RK_OP_MARK && op->node == RK_MARK_BWD_BEGIN) in_bwd = op->block, out_seen = 0;
        if (op->kind == RK_OP_FORGET && op->block == fwd_end && op->node == g->inputs[0]) (*early)++;
        if (in_bwd == op->block && op->kind == RK_OP_FORGET && op->node == g->output) out_seen = 1;
        if (op->kind == RK_OP_MARK && op->node == RK_MARK_BWD_END) {
            if (!out_seen && op->block < ch->n_blocks - 1) (*noout)++;
            in_bwd = -1;
        }
    }
}

/* Min memory of c with in_unread / out_unread as measured and with both off. */
static void min_memory_on_off(rk_dp_costs *c, int64_t *now, int64_t *off) {
    *now = rk_dp_min_memory(c);
    int *flags = calloc(2 * 64 * (size_t)c->n_classes, sizeof *flags);
    for (int q = 0; q < c->n_classes; q++)
        for (int x = 0; x < c->classes[q].n_options && x < 64; x++) {
            flags[128 * q + 2 * x] = c->classes[q].opt[x].in_unread;
            flags[128 * q + 2 * x + 1] = c->classes[q].opt[x].out_unread;
            c->classes[q].opt[x].in_unread = c->classes[q].opt[x].out_unread = 0;
        }
    *off = rk_dp_min_memory(c);
    for (int q = 0; q < c->n_classes; q++)
        for (int x = 0; x < c->classes[q].n_options && x < 64; x++) {
            c->classes[q].opt[x].in_unread = flags[128 * q + 2 * x];
            c->classes[q].opt[x].out_unread = flags[128 * q + 2 * x + 1];
        }
    free(flags);
}

/* Rockmate at n+1 budgets from c's smallest to its keep-all peak: each
 * schedule replays as predicted (solve_check); the boundary counts summed. */
static void solve_span(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c, int n, int *early,
                       int *noout) {
    rk_error err;
    rk_dp_params p;
    params(&p, 500, 2, 0);
    int64_t mb;
    ck_assert_int_eq(rk_dp_min_budget(c, 500, &mb, &err), RK_OK);
    rk_dp_plan pl;
    rk_dp_eval ev;
    ck_assert_int_eq(rk_dp_plan_keep_all(c, &pl, &err), RK_OK);
    ck_assert_int_eq(rk_dp_plan_evaluate(c, &pl, &ev, &err), RK_OK);
    rk_dp_plan_free(&pl);
    for (int j = 0; j <= n; j++) {
        rk_dp_result res;
        rk_sim_result sim;
        rk_schedule s;
        int64_t B = mb + (ev.peak > mb ? (ev.peak - mb) * j / n : 0);
        ck_assert(solve_check(ch, o, c, RK_DP_ROCKMATE, B, &p, &res, &sim, &s));
        count_unread(ch, &s, early, noout);
        rk_schedule_free(&s);
    }
}

START_TEST(test_unread_boundaries_freed_early) {
    /* A block whose backward reads its input for its shape only forgets it
     * right after its forward when the caller frees it after the subproblem
     * anyway (in_unread, dp_early_drop); a block whose backward does not
     * read its output lets the next block's backward free it and runs
     * without it (out_unread, dp_case1_sub_flag).  On random chains (their
     * ops read their input and output at random) both are measured; against
     * the same costs with both off the smallest memory never grows and
     * shrinks on some chains; schedules at the new smallest budget replay
     * as predicted (solve_check) and forget some block's input between its
     * forward and the next block's, and run some backward without its
     * block's output. */
    /* VGG's head: a convolution + ReLU keeping a mask (its backward reads
     * the model input, not its 900 B output), a max pool keeping indices
     * (reads neither its input nor its output), a convolution + ReLU
     * (reads both), a Linear.  The pool's input may go right after the
     * pool's forward, which no plan could do before. */
    rk_op_spec c0 = {"conv1", 1, {-1}, 900, 225, 5, 9, 700, 600, 1, 0};
    rk_op_spec c1 = {"pool", 1, {-1}, 225, 450, 1, 1, 0, 0, 0, 0};
    rk_op_spec c2 = {"conv2", 1, {-1}, 450, 0, 4, 8, 300, 300, 1, 1};
    rk_op_spec c3 = {"conv3", 1, {-1}, 450, 0, 4, 8, 300, 300, 1, 1};
    rk_op_spec c4 = {"fc", 1, {-1}, 10, 0, 1, 2, 0, 0, 1, 0};
    const rk_op_spec *specs[5] = {&c0, &c1, &c2, &c3, &c4};
    int64_t in_size[5] = {100, 900, 225, 450, 450};
    int cls_of[6] = {0, 1, 2, 3, 3, 4};
    rk_chain hc;
    rk_chain_init(&hc);
    rk_error err;
    for (int k = 0; k < 5; k++) {
        rk_graph g;
        ck_assert_int_eq(rk_graph_from_specs(&g, in_size[k], k > 0, specs[k], 1, &err), RK_OK);
        ck_assert_int_ge(rk_chain_add_class(&hc, &g), 0);
    }
    for (int b = 0; b < 6; b++) {
        char nm[8];
        snprintf(nm, sizeof nm, "b%d", b);
        ck_assert_int_ge(rk_chain_add_block(&hc, nm, cls_of[b]), 0);
    }
    ck_assert_int_eq(rk_chain_validate(&hc, "hand", &err), RK_OK);
    {
        rk_dp_options o;
        rk_dp_costs c;
        setup_chain(&hc, 0, &o, &c);
        ck_assert_int_eq(c.classes[0].opt[1].out_unread, 1);
        ck_assert_int_eq(c.classes[1].opt[1].in_unread, 1);
        ck_assert_int_eq(c.classes[2].opt[1].in_unread + c.classes[2].opt[1].out_unread, 0);
        int64_t now, off;
        min_memory_on_off(&c, &now, &off);
        ck_assert_int_lt(now, off);
        /* keep-all holds less too: the pool's input goes after its forward */
        rk_dp_plan pl;
        rk_dp_eval ev, ev_off;
        ck_assert_int_eq(rk_dp_plan_keep_all(&c, &pl, &err), RK_OK);
        ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev, &err), RK_OK);
        c.classes[0].opt[c.classes[0].keep_all].out_unread = 0;
        c.classes[1].opt[c.classes[1].keep_all].in_unread = 0;
        ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev_off, &err), RK_OK);
        c.classes[0].opt[c.classes[0].keep_all].out_unread = 1;
        c.classes[1].opt[c.classes[1].keep_all].in_unread = 1;
        ck_assert_int_lt(ev.peak, ev_off.peak);
        rk_dp_plan_free(&pl);
        /* from the smallest budget to keep-all's: the larger schedules
         * compute the pool once and forget its input right after its
         * forward; some run conv1's backward without its output */
        int early = 0, noout = 0;
        solve_span(&hc, &o, &c, 4, &early, &noout);
        ck_assert_int_gt(early, 0);
        ck_assert_int_gt(noout, 0);
        teardown(&hc, &o, &c);
    }
    /* random chains: never more memory; schedules replay as predicted */
    fx_rng r = {777};
    int n_in = 0, n_out = 0, early = 0, noout = 0;
    for (int k = 0; k < 40; k++) {
        rk_chain ch;
        rk_dp_options o;
        rk_dp_costs c;
        random_setup(&r, &ch, &o, &c);
        for (int q = 0; q < c.n_classes; q++)
            for (int x = 0; x < c.classes[q].n_options; x++) {
                const rk_dp_option_cost *y = &c.classes[q].opt[x];
                n_in += y->in_unread;
                n_out += y->out_unread;
                if (y->out_unread) {
                    ck_assert_int_le(y->bwd_peak_noout, y->bwd_peak);
                    ck_assert_int_le(y->bwd_peak_drop_noout, y->bwd_peak_noout);
                }
            }
        int64_t now, off;
        min_memory_on_off(&c, &now, &off);
        ck_assert_int_le(now, off);
        solve_span(&ch, &o, &c, 3, &early, &noout);
        teardown(&ch, &o, &c);
    }
    ck_assert_int_gt(n_in, 0);
    ck_assert_int_gt(n_out, 0);
    ck_assert_int_gt(early, 0);
    ck_assert_int_gt(noout, 0);
}
END_TEST

START_TEST(test_ordering_without_fallback_on_exact_slots) {
    /* With slots that make the rounding exact, the DP alone (no fallback) is
     * at least as good as every rule plan of its family. */
    fx_rng r = {1234};
    for (int k = 0; k < 10; k++) {
        int L = fx_int(&r, 2, 12);
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, L, 2, 2000, 1000), RK_OK);
        fx_both f;
        setup_both(&ch, &f);
        int64_t lo = rk_dp_min_memory(&f.cr);
        for (int j = 0; j < 8; j++) {
            int64_t B = (lo / 1000 + j * 2) * 1000;
            rk_dp_params p;
            params(&p, (int)(B / 1000), 1, 0);
            rk_dp_result a, b, s;
            rk_sim_result sa, sb, ss;
            int fa = solve_check(&ch, &f.ro, &f.co, RK_DP_ROCKMATE, B, &p, &a, &sa, NULL);
            int fb = solve_check(&ch, &f.rr, &f.cr, RK_DP_ROTOR, B, &p, &b, &sb, NULL);
            int fs = solve_check(&ch, &f.rr, &f.cr, RK_DP_SQRT, B, &p, &s, &ss, NULL);
            if (fb) ck_assert(fa && sa.time <= sb.time * (1 + 1e-12));
            if (fs) ck_assert(fb && sb.time <= ss.time * (1 + 1e-12));
        }
        teardown_both(&ch, &f);
    }
}
END_TEST

START_TEST(test_rotor_on_richer_options) {
    /* RK_DP_ROTOR on costs with more options uses only none and keep-all:
     * the same time as on Rotor's own costs, and its plan builds with the
     * richer option lists. */
    fx_rng r = {4242};
    for (int k = 0; k < 6; k++) {
        rk_chain ch;
        ck_assert_int_eq(fx_random_chain(&ch, &r, fx_int(&r, 2, 10), 2, 1500, 1), RK_OK);
        fx_both f;
        setup_both(&ch, &f);
        int64_t lo = rk_dp_min_memory(&f.cr);
        rk_dp_params p;
        params(&p, 500, 2, 1);
        for (int j = 0; j < 5; j++) {
            int64_t B = lo + lo * j / 4;
            rk_dp_result a, b;
            rk_sim_result sa, sb;
            int fa = solve_check(&ch, &f.ro, &f.co, RK_DP_ROTOR, B, &p, &a, &sa, NULL);
            int fb = solve_check(&ch, &f.rr, &f.cr, RK_DP_ROTOR, B, &p, &b, &sb, NULL);
            ck_assert_int_eq(fa, fb);
            if (fa) ck_assert(fabs(sa.time - sb.time) <= 1e-9 * sb.time);
            int64_t m1, m2;
            rk_error err;
            ck_assert_int_eq(rk_dp_algo_min_budget(&f.co, RK_DP_ROTOR, &p, &m1, &err), RK_OK);
            ck_assert_int_eq(rk_dp_algo_min_budget(&f.cr, RK_DP_ROTOR, &p, &m2, &err), RK_OK);
            ck_assert_int_eq(m1, m2);
        }
        teardown_both(&ch, &f);
    }
}
END_TEST

/* ------------------------------------------------------------- threads */

static void compare_tables(const rk_dp_costs *c, int64_t budget, int slots) {
    rk_dp_params p1, p2;
    params(&p1, slots, 1, 0);
    params(&p2, slots, 2, 0);
    rk_dp_table *t1, *t2;
    rk_error err;
    ck_assert_int_eq(rk_dp_table_fill(c, budget, &p1, &t1, &err), RK_OK);
    ck_assert_int_eq(rk_dp_table_fill(c, budget, &p2, &t2, &err), RK_OK);
    ck_assert_int_eq(rk_dp_table_feasible(t1), rk_dp_table_feasible(t2));
    ck_assert_int_eq(rk_dp_table_bytes(t1), rk_dp_table_bytes(t2));
    int L = c->n_blocks, M = rk_dp_table_slots(t1);
    long finite = 0;
    for (int s = 0; s < L; s++)
        for (int e = s + 1; e <= L; e++)
            for (int m = 0; m <= M; m++) {
                double a = rk_dp_table_opt(t1, s, e, m), b = rk_dp_table_opt(t2, s, e, m);
                ck_assert(memcmp(&a, &b, sizeof a) == 0);
                ck_assert_int_eq(rk_dp_table_decision(t1, s, e, m), rk_dp_table_decision(t2, s, e, m));
                finite += isfinite(a);
            }
    ck_assert_int_gt(finite, 0);
    rk_dp_plan a, b;
    if (rk_dp_table_feasible(t1)) {
        ck_assert_int_eq(rk_dp_table_plan(t1, &a, &err), RK_OK);
        ck_assert_int_eq(rk_dp_table_plan(t2, &b, &err), RK_OK);
        ck_assert(memcmp(a.code, b.code, (size_t)(L + 1) * (L + 1) * sizeof *a.code) == 0);
        rk_dp_plan_free(&a);
        rk_dp_plan_free(&b);
    }
    rk_dp_table_free(t1);
    rk_dp_table_free(t2);
}

START_TEST(test_one_and_two_threads_identical) {
    rk_dp_costs c;
    ck_assert_int_eq(rk_dp_costs_random(&c, 40, 30, 99), RK_OK);
    rk_error err;
    ck_assert_int_eq(rk_dp_costs_check(&c, &err), RK_OK);
    int64_t lo = rk_dp_min_memory(&c);
    compare_tables(&c, lo + lo / 3, 500);
    compare_tables(&c, 2 * lo, 377);
    rk_dp_costs_free(&c);
    fx_rng r = {77};
    rk_chain ch;
    ck_assert_int_eq(fx_random_chain(&ch, &r, 25, 3, 3000, 1), RK_OK);
    rk_dp_options o;
    setup_chain(&ch, 0, &o, &c);
    lo = rk_dp_min_memory(&c);
    compare_tables(&c, lo + lo / 2, 500);
    teardown(&ch, &o, &c);
}
END_TEST

/* ----------------------------------------- long chains, tight budgets */

START_TEST(test_long_chain_tight_budget) {
    /* L = 60 at the smallest budget: a schedule of ~L^2 block forwards is
     * built and replayed (no fixed-size buffer anywhere). */
    int L = 60;
    rk_chain ch;
    ck_assert_int_eq(fx_hand_chain(&ch, L, A_, H_), RK_OK);
    rk_dp_options o;
    rk_dp_costs c;
    setup_chain(&ch, 1, &o, &c);
    rk_dp_params p;
    rk_dp_result res;
    rk_sim_result sim;
    params(&p, 900, 2, 0);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROTOR, 9000, &p, &res, &sim, NULL));
    ck_assert_int_eq(res.n_forwards, L * (L + 1) / 2);
    params(&p, 500, 2, 1);
    int64_t mb;
    rk_error err;
    ck_assert_int_eq(rk_dp_algo_min_budget(&c, RK_DP_ROTOR, &p, &mb, &err), RK_OK);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROTOR, mb, &p, &res, &sim, NULL));
    ck_assert(solve_check(&ch, &o, &c, RK_DP_SQRT, 1000000, &p, &res, &sim, NULL));
    teardown(&ch, &o, &c);
}
END_TEST

START_TEST(test_table_size_long_chain) {
    /* L = 200, 500 slots, 30 options: the table fits and says its size. */
    rk_dp_costs c;
    ck_assert_int_eq(rk_dp_costs_random(&c, 200, 30, 5), RK_OK);
    int64_t lo = rk_dp_min_memory(&c);
    rk_dp_params p;
    params(&p, 500, 2, 0);
    rk_dp_table *t;
    rk_error err;
    ck_assert_int_eq(rk_dp_table_fill(&c, lo + lo / 3, &p, &t, &err), RK_OK);
    ck_assert(rk_dp_table_feasible(t));
    size_t full = (size_t)201 * 200 / 2 * 501 * (sizeof(double) + sizeof(int16_t));
    ck_assert_uint_gt(rk_dp_table_bytes(t), 1000000);
    ck_assert_uint_le(rk_dp_table_bytes(t), full + (size_t)201 * 201 * 16 + 100000);
    rk_dp_plan pl;
    ck_assert_int_eq(rk_dp_table_plan(t, &pl, &err), RK_OK);
    rk_dp_eval ev;
    ck_assert_int_eq(rk_dp_plan_evaluate(&c, &pl, &ev, &err), RK_OK);
    ck_assert_int_le(ev.peak, lo + lo / 3);
    ck_assert(fabs(ev.time - rk_dp_table_time(t)) <= 1e-9 * ev.time);
    rk_dp_plan_free(&pl);
    rk_dp_table_free(t);
    rk_dp_costs_free(&c);
}
END_TEST

START_TEST(test_zero_sizes) {
    /* Every size zero: budget 0 is enough and nothing is recomputed (the
     * zero shifts read only shorter, already computed rows). */
    rk_op_spec ops[2] = {
        {"a", 1, {-1}, 0, 0, 1, 2, -5, 0, 1, 1},
        {"b", 1, {0}, 0, 0, 1, 2, 0, -3, 1, 0},
    };
    rk_chain ch;
    rk_chain_init(&ch);
    rk_graph g;
    rk_error err;
    ck_assert_int_eq(rk_graph_from_specs(&g, 0, 1, ops, 2, &err), RK_OK);
    rk_chain_add_class(&ch, &g);
    for (int b = 0; b < 5; b++) rk_chain_add_block(&ch, "z", 0);
    ck_assert_int_eq(rk_chain_validate(&ch, "z", &err), RK_OK);
    rk_dp_options o;
    rk_dp_costs c;
    setup_chain(&ch, 0, &o, &c);
    ck_assert_int_eq(rk_dp_min_memory(&c), 0);
    rk_dp_params p;
    rk_dp_result res;
    rk_sim_result sim;
    params(&p, 500, 2, 0);
    ck_assert(solve_check(&ch, &o, &c, RK_DP_ROCKMATE, 0, &p, &res, &sim, NULL));
    ck_assert_int_eq(res.n_forwards, 5);
    ck_assert_int_eq(sim.peak, 0);
    teardown(&ch, &o, &c);
}
END_TEST

/* ------------------------------------------------------------- the CLI */

static int run_cmd(const char *cmd, char *out, size_t n) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t k = fread(out, 1, n - 1, f);
    out[k] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_cli_solve) {
    const char *exe = getenv("RKMATE");
    if (!exe) return; /* only under meson test */
    char dir[] = "/tmp/rkmate_dp_cli_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char chain[256], sched[256], cmd[1024], out[8192];
    snprintf(chain, sizeof chain, "%s/hand.rkg", dir);
    snprintf(sched, sizeof sched, "%s/hand.rks", dir);
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(fx_hand_chain(&ch, 6, A_, H_), RK_OK);
    ck_assert_int_eq(rk_chain_write(chain, &ch, &err), RK_OK);
    /* feasible, JSON, schedule written and accepted by the simulator */
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 20kB --algo rockmate --builtin-options --slots 20 --threads 2 --json -o '%s'",
             exe, chain, sched);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"feasible\": true"));
    ck_assert_ptr_nonnull(strstr(out, "\"algo\": \"rockmate\""));
    ck_assert_ptr_nonnull(strstr(out, "\"overhead\": "));
    ck_assert_ptr_nonnull(strstr(out, "\"solve_time_s\": "));
    snprintf(cmd, sizeof cmd, "'%s' simulate '%s' '%s' --json", exe, chain, sched);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"within_budget\": true"));
    /* every algorithm (rockmate with rk-Checkmate's options is the solve
     * pipeline's and the e2e tests' business) */
    const char *algos[] = {"rotor", "sqrt", "none", "recompute-all"};
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 1MB --algo %s --json --quiet", exe, chain, algos[i]);
        ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
        ck_assert_ptr_nonnull(strstr(out, "\"feasible\": true"));
    }
    /* infeasible: exit 3 and the smallest budget that works (9000 exactly
     * with 9 slots of 1000 bytes... here 500 slots: a little more) */
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 8000 --algo rockmate --builtin-options --whole-graph 0 2>&1",
             exe, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 3);
    ck_assert_ptr_nonnull(strstr(out, "smallest budget that works is 9"));
    ck_assert_ptr_null(strstr(out, "whole-graph"));
    /* the same budget by default: no plan over the blocks fits, whole-graph
     * Checkmate's schedule does (the chain is small), and it replays within
     * the budget */
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 8000 --algo rockmate --builtin-options --json -o '%s'", exe,
             chain, sched);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"whole_graph\": true"));
    ck_assert_ptr_nonnull(strstr(out, "\"source\": "));
    snprintf(cmd, sizeof cmd, "'%s' simulate '%s' '%s' --json", exe, chain, sched);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"within_budget\": true"));
    /* below the proven floor it is not tried: the block plans' smallest
     * budget, exact */
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 1000 --algo rockmate --builtin-options --json 2>/dev/null", exe,
             chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 3);
    ck_assert_ptr_nonnull(strstr(out, "\"whole_graph_tried\": false"));
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 8000 --algo recompute-all 2>&1", exe, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 3);
    ck_assert_ptr_nonnull(strstr(out, "smallest budget that works is 9000 bytes"));
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 8000 --builtin-options --whole-graph 0 --json 2>/dev/null",
             exe, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 3);
    ck_assert_ptr_nonnull(strstr(out, "\"feasible\": false"));
    /* bad input */
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 1MB --algo magic 2>&1", exe, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget lots 2>&1", exe, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "'%s' solve '%s' --budget 1MB -o '%s' 2>&1", exe, chain, chain);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "'%s' solve '%s/missing.rkg' --budget 1MB 2>&1", exe, dir);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    unlink(chain);
    unlink(sched);
    rmdir(dir);
    rk_chain_free(&ch);
}
END_TEST

static Suite *dp_suite(void) {
    Suite *s = suite_create("dp");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_costs_match_option_evaluate);
    tcase_add_test(t, test_bad_costs_and_params);
    tcase_add_test(t, test_one_block);
    tcase_add_test(t, test_two_blocks_by_hand);
    tcase_add_test(t, test_two_blocks_random);
    tcase_add_test(t, test_homogeneous_keep_everything);
    tcase_add_test(t, test_homogeneous_smallest_budget);
    tcase_add_test(t, test_exhaustive_small_chains);
    tcase_add_loop_test(t, test_random_chains_replayed_and_ordered, 0, 4);
    tcase_add_test(t, test_ordering_without_fallback_on_exact_slots);
    tcase_add_test(t, test_rotor_on_richer_options);
    tcase_add_test(t, test_one_and_two_threads_identical);
    tcase_add_test(t, test_long_chain_tight_budget);
    tcase_add_test(t, test_table_size_long_chain);
    tcase_add_test(t, test_zero_sizes);
    tcase_add_test(t, test_output_rebuilt_input_dropped);
    tcase_add_test(t, test_unread_boundaries_freed_early);
    tcase_add_test(t, test_cli_solve);
    suite_add_tcase(s, t);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(dp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
