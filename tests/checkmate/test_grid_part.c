/* test_grid_part.c — the rk-Checkmate grid solved in part (rk_checkmate_grid):
 * points solved over several calls keep every point's optimum exact
 * (exhaustive search), the coarse and near selections, and the solve
 * pipeline's pattern search (rockmate's default): identical for 1 and 3
 * threads, never worse than the built-in options, reused across budgets,
 * its work box (identical for 1 and 3 threads when reached) and its time
 * box. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_testlib.h"
#include "rk_checkmate.h"
#include "rk_solve.h"

static rk_checkmate_params params(int P, int S, int threads) {
    rk_checkmate_params p;
    rk_checkmate_params_default(&p);
    p.time_limit = 60;
    p.grid_peak = P;
    p.grid_save = S;
    p.threads = threads;
    return p;
}

/* Cheapest option of opts (n) that fits (pk, sv) on block g: its whole
 * replay (forward, loss, backward) within pk, saved within sv. */
static double best_fit(const rk_graph *g, const rk_option *opts, int n, int64_t pk, int64_t sv) {
    double best = INFINITY;
    for (int k = 0; k < n; k++) {
        const rk_option *o = &opts[k];
        int64_t lo = o->input_size + o->saved + o->output_size + (g->c[g->loss].overhead > 0 ? g->c[g->loss].overhead : 0) +
                     g->d[g->output_grad].size;
        int64_t full = o->fwd_peak > o->bwd_peak ? o->fwd_peak : o->bwd_peak;
        if (lo > full) full = lo;
        double t = o->fwd_time + g->c[g->loss].time + o->bwd_time;
        if (full <= pk && o->saved <= sv && t < best) best = t;
    }
    return best;
}

/* Random blocks, a 6x5 grid solved in three calls (the coarse points, the
 * neighbours of one option, then the rest), half of them with greedy seeds:
 * at every grid budget the cheapest option that fits is the exhaustive
 * optimum, as when the grid is solved in one call, and every option
 * replays.  (A budget that took an unsolved looser budget for an
 * infeasible or solved one would break it.) */
START_TEST(parts_keep_optima) {
    for (unsigned seed = 2000; seed < 2012; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 5, &g, &err), RK_OK);
        rk_checkmate_params p = params(6, 5, 2);
        /* odd seeds: with the greedy schedules of every other M_peak line
         * (options before any ILP; they must not hide an optimum) */
        p.greedy_step = seed % 2 ? 2 : 0;
        rk_checkmate_grid *gr = NULL;
        ck_assert_msg(rk_checkmate_grid_new(&g, &p, &gr, &err) == RK_OK, "%s", err.msg);
        if (p.greedy_step) {
            rk_option *o0 = NULL;
            int n0 = 0;
            ck_assert_int_eq(rk_checkmate_grid_options(gr, &o0, &n0, &err), RK_OK);
            ck_assert(n0 >= 1); /* at the keep-all peak the greedy always fits */
            for (int k = 0; k < n0; k++) rk_option_free(&o0[k]);
            free(o0);
        }
        int P, S;
        rk_checkmate_grid_size(gr, &P, &S);
        ck_assert(P == 6 && S == 5);
        char *want = calloc((size_t)(P * S), 1);
        ck_assert_ptr_nonnull(want);
        /* coarse, step 3 from the loosest corner: rows 5, 2 x columns 4, 1,
         * and (5, 0) */
        int nc = rk_checkmate_grid_want_coarse(gr, 3, want);
        ck_assert(nc >= 1 && nc <= 5);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < S; j++)
                if (want[i * S + j])
                    ck_assert(((P - 1 - i) % 3 == 0 && (S - 1 - j) % 3 == 0) || (i == P - 1 && j == 0));
        ck_assert_int_eq(rk_checkmate_grid_solve(&gr, 1, &want, &err), RK_OK);
        ck_assert(rk_checkmate_grid_solved(gr, P - 1, S - 1));
        rk_checkmate_stats st;
        rk_checkmate_grid_stats(gr, &st);
        ck_assert(st.n_budgets >= 1 && st.n_budgets <= nc);
        rk_option *o = NULL;
        int n = 0;
        ck_assert_int_eq(rk_checkmate_grid_options(gr, &o, &n, &err), RK_OK);
        memset(want, 0, (size_t)(P * S));
        /* the tightest budget: (0, 0) and its neighbours, those not solved */
        int nw = rk_checkmate_grid_want_budget(gr, 0, 0, 1, want), nf = 0;
        ck_assert(nw >= 0 && nw <= 4);
        ck_assert(want[0] || rk_checkmate_grid_solved(gr, 0, 0));
        for (int k = 0; k < P * S; k++) {
            if (!want[k]) continue;
            nf++;
            ck_assert(k / S <= 1 && k % S <= 1 && !rk_checkmate_grid_solved(gr, k / S, k % S));
        }
        ck_assert_int_eq(nf, nw);
        memset(want, 0, (size_t)(P * S));
        int nn = n > 0 ? rk_checkmate_grid_want_near(gr, &o[0], 1, want) : 0;
        ck_assert(nn >= -1); /* -1: a seed's option (the min-peak ILP's or a greedy one), found by no point */
        for (int k = 0; k < P * S; k++)
            if (want[k]) ck_assert(!rk_checkmate_grid_solved(gr, k / S, k % S));
        if (nn > 0) ck_assert_int_eq(rk_checkmate_grid_solve(&gr, 1, &want, &err), RK_OK);
        for (int k = 0; k < n; k++) rk_option_free(&o[k]);
        free(o);
        ck_assert_int_eq(rk_checkmate_grid_solve(&gr, 1, NULL, &err), RK_OK);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < S; j++) ck_assert(rk_checkmate_grid_solved(gr, i, j));
        /* nothing left to flag, near an option or around a budget */
        memset(want, 0, (size_t)(P * S));
        ck_assert_int_eq(rk_checkmate_grid_want_budget(gr, 0, 0, 1, want), 0);
        ck_assert_int_eq(rk_checkmate_grid_options(gr, &o, &n, &err), RK_OK);
        rk_checkmate_grid_stats(gr, &st);
        for (int i = 0; i < P; i++) {
            int64_t pk = st.min_peak + (int64_t)((double)(st.max_peak - st.min_peak) * i / (P - 1));
            for (int j = 0; j < S; j++) {
                int64_t out = g.d[g.output].size;
                int64_t sv = out + (int64_t)((double)(pk - out) * j / (S - 1));
                double bfv = cmt_brute_force(&g, pk, sv);
                if (bfv < 0) continue;
                double best = best_fit(&g, o, n, pk, sv);
                ck_assert_msg(best == bfv || fabs(best - bfv) <= 1e-9 * bfv,
                              "seed %u budget (%lld, %lld): options give %g, exhaustive %g", seed, (long long)pk,
                              (long long)sv, best, bfv);
            }
        }
        for (int k = 0; k < n; k++) {
            rk_option c;
            ck_assert_int_eq(rk_option_copy(&c, &o[k]), RK_OK);
            ck_assert_msg(rk_option_evaluate(&g, &c, &err) == RK_OK, "%s", err.msg);
            rk_option_free(&c);
            rk_option_free(&o[k]);
        }
        free(o);
        free(want);
        rk_checkmate_grid_free(gr);
        rk_graph_free(&g);
    }
}
END_TEST

/* Size limits of the grid solved in part: with ilp_max_cols below every
 * model's size no ILP is solved (min-peak included), the greedy options
 * are the grid's options and fit the lines they were made for; with
 * node_limit_rows below every LP's rows each grid ILP gets one node. */
START_TEST(size_limits) {
    for (unsigned seed = 2100; seed < 2104; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 5, &g, &err), RK_OK);
        rk_checkmate_params p = params(6, 5, 2);
        p.greedy_step = 2;
        p.ilp_max_cols = 1;
        rk_checkmate_grid *gr = NULL;
        ck_assert_msg(rk_checkmate_grid_new(&g, &p, &gr, &err) == RK_OK, "%s", err.msg);
        ck_assert_int_eq(rk_checkmate_grid_solve(&gr, 1, NULL, &err), RK_OK);
        rk_checkmate_stats st;
        rk_checkmate_grid_stats(gr, &st);
        ck_assert_int_eq(st.n_ilps, 0);
        ck_assert_int_eq(st.nodes, 0);
        rk_option *o = NULL;
        int n = 0;
        ck_assert_int_eq(rk_checkmate_grid_options(gr, &o, &n, &err), RK_OK);
        ck_assert(n >= 1);
        for (int k = 0; k < n; k++) {
            rk_option c;
            ck_assert_int_eq(rk_option_copy(&c, &o[k]), RK_OK);
            ck_assert_msg(rk_option_evaluate(&g, &c, &err) == RK_OK, "%s", err.msg);
            ck_assert(c.fwd_time == o[k].fwd_time && c.bwd_time == o[k].bwd_time);
            ck_assert(c.fwd_peak <= st.max_peak && c.bwd_peak <= st.max_peak);
            rk_option_free(&c);
            rk_option_free(&o[k]);
        }
        free(o);
        rk_checkmate_grid_free(gr);

        p = params(6, 5, 2);
        p.node_limit = 10;
        p.node_limit_rows = 1;
        ck_assert_msg(rk_checkmate_grid_new(&g, &p, &gr, &err) == RK_OK, "%s", err.msg);
        rk_checkmate_stats st0;
        rk_checkmate_grid_stats(gr, &st0); /* the min-peak ILP: no such limit */
        ck_assert_int_eq(rk_checkmate_grid_solve(&gr, 1, NULL, &err), RK_OK);
        rk_checkmate_grid_stats(gr, &st);
        ck_assert(st.nodes - st0.nodes <= st.n_ilps);
        rk_checkmate_grid_free(gr);
        rk_graph_free(&g);
    }
}
END_TEST

/* Solve the chain at budget b with the given parameters (fresh solver). */
static rk_status solve_at(const rk_chain *ch, rk_solve_params *sp, int64_t b, rk_solve_result *res,
                          rk_schedule *s, rk_checkmate_stats *st) {
    rk_solver *sv = NULL;
    rk_error err;
    ck_assert_msg(rk_solver_new(ch, sp, &sv, &err) == RK_OK, "%s", err.msg);
    rk_status r = rk_solver_solve(sv, b, s, res, &err);
    ck_assert_msg(r == RK_OK || r == RK_EINFEASIBLE, "%s", err.msg);
    if (st) *st = rk_solver_get_info(sv)->cm;
    rk_solver_free(sv);
    return r;
}

/* The built-in GPT-like chain of these tests (3 blocks) and its keep-all replay. */
static rk_sim_result example_keep_all(rk_chain *ch) {
    rk_error err;
    ck_assert_int_eq(rk_chain_example(ch, 3, 2, 16, 16, &err), RK_OK);
    rk_schedule ka;
    ck_assert_int_eq(rk_schedule_keep_all(ch, &ka, &err), RK_OK);
    rk_sim_result ska;
    ck_assert_int_eq(rk_simulate(ch, &ka, &ska, &err), RK_OK);
    rk_schedule_free(&ka);
    return ska;
}

/* The solver parameters of these tests: rockmate's defaults with a P x P
 * grid on `threads` grid threads and a one-thread DP. */
static rk_solve_params grid_params(int P, int threads) {
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    sp.cm = params(P, P, threads);
    sp.dp.threads = 1;
    return sp;
}

/* A block too large for rk-Checkmate's model (here: p.cm.max_model_cols
 * set tiny) gets segmented options (checkpointing inside the block), so
 * rockmate fits budgets well below the no-recomputation peak, where rotor,
 * with the built-in options only, fits none; the same for 1 and 3 threads,
 * with the grid solved in part and whole. */
START_TEST(too_large_block_segmented) {
    enum { STEPS = 30 };
    rk_op_spec ops[STEPS + 1];
    static char names[STEPS + 1][16];
    ops[0] = (rk_op_spec){"m", 1, {-1}, 100, 10, 2, 3, 0, 0, 1, 0};
    for (int i = 1; i <= STEPS; i++) {
        snprintf(names[i], sizeof names[i], "h%d", i);
        ops[i] = (rk_op_spec){names[i], 2, {i - 1, 0}, 50, 20, 1, 2, 0, 0, 3, 0};
    }
    rk_error err;
    rk_graph g;
    ck_assert_int_eq(rk_graph_from_specs(&g, 8, 0, ops, STEPS + 1, &err), RK_OK);
    rk_chain ch;
    rk_chain_init(&ch);
    rk_chain_add_class(&ch, &g);
    rk_chain_add_block(&ch, "rnn", 0);
    ck_assert_msg(rk_chain_validate(&ch, "test", &err) == RK_OK, "%s", err.msg);
    rk_schedule fa;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &fa, &err), RK_OK);
    int64_t b = fa.predicted_peak / 2;
    rk_schedule_free(&fa);
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    sp.cm = params(4, 4, 1);
    sp.cm.max_model_cols = 10;
    sp.algo = RK_SOLVE_ROTOR;
    rk_solve_result res;
    rk_schedule s;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &res, &s, NULL), RK_EINFEASIBLE);
    sp.algo = RK_SOLVE_ROCKMATE;
    double t[4];
    for (int q = 0; q < 4; q++) {
        sp.cm.threads = q % 2 ? 3 : 1;
        sp.full_grid = q >= 2;
        ck_assert_int_eq(solve_at(&ch, &sp, b, &res, &s, NULL), RK_OK);
        ck_assert(res.sim.peak <= b);
        t[q] = res.sim.time;
        rk_schedule_free(&s);
        ck_assert(t[q] == t[0]);
    }
    rk_chain_free(&ch);
}
END_TEST

/* rockmate's default (the grid solved around the options rk-Rotor uses) on
 * the built-in GPT-like chain at budgets from tight to keep-all: identical
 * schedules for 1 and 3 threads, never slower than the built-in options
 * alone, fewer ILPs than the whole grid, and at the keep-all peak no
 * recomputation (what the whole grid gives there too). */
START_TEST(solver_pattern_search) {
    rk_chain ch;
    rk_sim_result ska = example_keep_all(&ch);
    rk_solve_params sp = grid_params(8, 1);
    sp.grid_work = 0; /* no work box: the whole search */
    int feasible = 0;
    static const int tenths[] = {3, 4, 5, 6, 8, 10};
    for (int k = 0; k < 6; k++) {
        int q = tenths[k];
        int64_t b = ska.peak * q / 10;
        rk_solve_result r1, r3, rb, rf;
        rk_schedule s1, s3, sb, sf;
        rk_checkmate_stats st1, stf;
        sp.cm.threads = 1;
        sp.full_grid = 0;
        rk_status a1 = solve_at(&ch, &sp, b, &r1, &s1, &st1);
        sp.cm.threads = 3;
        rk_status a3 = solve_at(&ch, &sp, b, &r3, &s3, NULL);
        ck_assert_int_eq(a1, a3);
        sp.full_grid = 1;
        rk_status af = solve_at(&ch, &sp, b, &rf, &sf, &stf);
        sp.checkmate_options = 0;
        rk_status ab = solve_at(&ch, &sp, b, &rb, &sb, NULL);
        sp.checkmate_options = 1;
        if (a1 == RK_OK) {
            feasible++;
            ck_assert(r1.sim.peak <= b);
            ck_assert(r1.sim.time == r3.sim.time && r1.sim.peak == r3.sim.peak && s1.n_ops == s3.n_ops);
            ck_assert(memcmp(s1.ops, s3.ops, (size_t)s1.n_ops * sizeof *s1.ops) == 0);
            if (ab == RK_OK) ck_assert(r1.sim.time <= rb.sim.time * (1 + 1e-12));
            ck_assert(st1.n_ilps <= stf.n_ilps);
            if (q == 10) ck_assert(af == RK_OK && r1.sim.time <= rf.sim.time * (1 + 1e-12));
            rk_schedule_free(&s1);
            rk_schedule_free(&s3);
        } else {
            ck_assert(ab != RK_OK);
        }
        if (af == RK_OK) rk_schedule_free(&sf);
        if (ab == RK_OK) rk_schedule_free(&sb);
    }
    ck_assert(feasible >= 3);
    rk_chain_free(&ch);
}
END_TEST

/* One solver over several budgets: the points solved for one budget are
 * kept for the next (the ILP count never falls, a budget asked again after
 * others is never slower), and a budget asked twice in a row solves nothing
 * new and gives the same schedule. */
START_TEST(solver_reuse_across_budgets) {
    rk_chain ch;
    rk_error err;
    rk_sim_result ska = example_keep_all(&ch);
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    sp.cm = params(8, 8, 2);
    sp.grid_time_box = 0;
    rk_solver *sv = NULL;
    ck_assert_msg(rk_solver_new(&ch, &sp, &sv, &err) == RK_OK, "%s", err.msg);
    static const int tenths[] = {7, 9, 6, 7, 7};
    int last = 0;
    double t_first = -1, t_prev = -1;
    for (int q = 0; q < 5; q++) {
        int64_t b = ska.peak * tenths[q] / 10;
        rk_schedule s;
        rk_solve_result res;
        rk_status r = rk_solver_solve(sv, b, &s, &res, &err);
        ck_assert_msg(r == RK_OK, "budget %lld: %s", (long long)b, err.msg);
        int n = rk_solver_get_info(sv)->cm.n_ilps;
        ck_assert(n >= last);
        if (q == 0) t_first = res.sim.time;
        /* more options (a superset): never slower */
        if (q == 3) ck_assert(res.sim.time <= t_first * (1 + 1e-12));
        /* asked again: nothing new to solve, the same schedule */
        if (q == 4) {
            ck_assert_int_eq(n, last);
            ck_assert(res.sim.time == t_prev);
        }
        last = n;
        t_prev = res.sim.time;
        rk_schedule_free(&s);
    }
    rk_solver_free(sv);
    rk_chain_free(&ch);
}
END_TEST

/* A time box that is over at once: no grid ILP starts (they count as
 * skipped), and the budget is still solved, with the built-in options, by a
 * schedule that replays within it. */
START_TEST(time_box_over) {
    rk_chain ch;
    rk_error err;
    example_keep_all(&ch);
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    ck_assert(sp.grid_time_box <= 0); /* off by default: not deterministic */
    sp.cm = params(8, 8, 2);
    sp.grid_time_box = 1e-9;
    rk_solve_result res;
    rk_schedule s;
    rk_checkmate_stats st;
    /* below free-asap's peak (which, when it fits, is returned without the
     * grid: it runs every node once) */
    rk_schedule fa;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &fa, &err), RK_OK);
    rk_sim_result sfa;
    ck_assert_int_eq(rk_simulate(&ch, &fa, &sfa, &err), RK_OK);
    rk_schedule_free(&fa);
    int64_t b = sfa.peak - 1;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &res, &s, &st), RK_OK);
    ck_assert(res.sim.peak <= b);
    ck_assert_int_eq(st.n_ilps, 0);
    ck_assert(st.n_skipped > 0);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

/* The work box (simplex iterations x rows for the grids' ILPs of one budget), reached on
 * the built-in GPT-like chain: the search stops early (fewer ILPs than
 * without it) and the schedule, the ILPs and their nodes are the same for
 * 1 and 3 threads, budget after budget of one solver. */
START_TEST(work_box_deterministic) {
    rk_chain ch;
    rk_error err;
    rk_sim_result ska = example_keep_all(&ch);
    rk_solve_params sp = grid_params(10, 1); /* coarse rounds of every other line */
    ck_assert(sp.grid_work > 0);               /* on by default */
    sp.grid_work = 0;
    int64_t b = ska.peak * 6 / 10;
    rk_solve_result r0;
    rk_schedule s0;
    rk_checkmate_stats st0;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &r0, &s0, &st0), RK_OK);
    rk_schedule_free(&s0);
    /* a box well below what the whole search takes */
    sp.grid_work = st0.work / 4 > 1 ? st0.work / 4 : 1;
    ck_assert(st0.work > sp.grid_work);
    rk_solver *sv[2] = {NULL, NULL};
    static const int thr[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        sp.cm.threads = thr[k];
        ck_assert_msg(rk_solver_new(&ch, &sp, &sv[k], &err) == RK_OK, "%s", err.msg);
    }
    static const int tenths[] = {6, 5, 8};
    for (int q = 0; q < 3; q++) {
        int64_t bq = ska.peak * tenths[q] / 10;
        rk_solve_result res[2];
        rk_schedule sch[2];
        rk_status a[2];
        for (int k = 0; k < 2; k++) a[k] = rk_solver_solve(sv[k], bq, &sch[k], &res[k], &err);
        ck_assert_int_eq(a[0], a[1]);
        const rk_checkmate_stats *i1 = &rk_solver_get_info(sv[0])->cm, *i3 = &rk_solver_get_info(sv[1])->cm;
        ck_assert_int_eq(i1->n_ilps, i3->n_ilps);
        ck_assert_int_eq(i1->nodes, i3->nodes);
        ck_assert_int_eq(i1->iterations, i3->iterations);
        ck_assert_int_eq(i1->work, i3->work);
        ck_assert_int_eq(i1->n_timeout, i3->n_timeout);
        ck_assert_int_eq(rk_solver_get_info(sv[0])->n_options, rk_solver_get_info(sv[1])->n_options);
        if (q == 0) {
            ck_assert_int_eq(a[0], RK_OK);
            /* the box was reached: the search stopped before the whole one
             * (in work: with the two min-peak options, the boxed search's
             * smaller rounds can count more, smaller ILPs) */
            ck_assert_msg(i1->work < st0.work, "work %ld of the whole search's %ld (box %ld)", i1->work, st0.work,
                          sp.grid_work);
        }
        if (a[0] == RK_OK) {
            ck_assert(res[0].sim.peak <= bq);
            ck_assert(res[0].sim.time == res[1].sim.time && res[0].sim.peak == res[1].sim.peak);
            ck_assert_int_eq(sch[0].n_ops, sch[1].n_ops);
            ck_assert(memcmp(sch[0].ops, sch[1].ops, (size_t)sch[0].n_ops * sizeof *sch[0].ops) == 0);
            for (int k = 0; k < 2; k++) rk_schedule_free(&sch[k]);
        }
    }
    for (int k = 0; k < 2; k++) rk_solver_free(sv[k]);
    rk_chain_free(&ch);
}
END_TEST

/* The work box once it is nearly used: a round none of whose points fits
 * what is left starts no ILP (before, each grid kept one point whatever it
 * cost: a U-Net's or a DenseNet's large block then ran one more 3-10 s ILP
 * past the box).  The box set to the work of the first round (what a box of
 * 1 lets run: the coarse round always runs) plus 1: the search stops with
 * exactly that work, where without a box it goes on. */
START_TEST(work_box_no_point_past_it) {
    rk_chain ch;
    rk_sim_result ska = example_keep_all(&ch);
    rk_solve_params sp = grid_params(10, 1);
    int64_t b = ska.peak * 6 / 10;
    rk_solve_result r;
    rk_schedule s;
    rk_checkmate_stats all, first, boxed;
    sp.grid_work = 0;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &r, &s, &all), RK_OK);
    rk_schedule_free(&s);
    sp.grid_work = 1;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &r, &s, &first), RK_OK);
    rk_schedule_free(&s);
    ck_assert_msg(all.work > first.work, "the whole search (%ld) does more than its first round (%ld)", all.work,
                  first.work);
    sp.grid_work = first.work + 1;
    ck_assert_int_eq(solve_at(&ch, &sp, b, &r, &s, &boxed), RK_OK);
    ck_assert(r.sim.peak <= b);
    rk_schedule_free(&s);
    ck_assert_msg(boxed.work == first.work && boxed.n_ilps == first.n_ilps,
                  "box %ld: work %ld in %d ILPs, the first round's %ld in %d", sp.grid_work, boxed.work, boxed.n_ilps,
                  first.work, first.n_ilps);
    rk_chain_free(&ch);
}
END_TEST

/* The min-peak ILPs of a grid solved in part get the grid ILPs' node cap,
 * scaled by their rows as theirs is (rk_solve_params.grid_node_cap,
 * grid_node_rows).  On the traced U-Net (tests/data/chains/unet96.rkg), the
 * middle block's min-peak ILPs (about 12 000 rows) branch when let (here at
 * most 3 nodes each, no scaling); under the default cap (10 nodes x 2000 /
 * rows) they stop at their root: every min-peak ILP of a small block takes
 * at most 10 nodes, of the large one at most 1. */
START_TEST(min_peak_node_cap) {
    const char *dir = getenv("RKMATE_TESTDATA");
    ck_assert_msg(dir != NULL, "RKMATE_TESTDATA is not set");
    char path[4096];
    snprintf(path, sizeof path, "%s/chains/unet96.rkg", dir);
    rk_chain ch;
    rk_error err;
    ck_assert_msg(rk_chain_read(path, &ch, &err) == RK_OK, "%s", err.msg);
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    sp.cm.threads = 2;
    long nodes[2];
    int ilps[2];
    for (int k = 0; k < 2; k++) {
        rk_solve_params q = sp;
        if (k == 0) { /* let them branch a little: 3 nodes each, whatever their rows */
            q.grid_node_cap = 0;
            q.grid_node_rows = 0;
            q.cm.node_limit = 3;
        }
        rk_solver *sv = NULL;
        ck_assert_msg(rk_solver_new(&ch, &q, &sv, &err) == RK_OK, "%s", err.msg);
        const rk_checkmate_stats *st = &rk_solver_get_info(sv)->cm;
        ck_assert_int_eq(st->n_ilps, 0); /* only the min-peak ILPs have run */
        nodes[k] = st->nodes;
        ilps[k] = st->n_work_ilps;
        rk_solver_free(sv);
    }
    ck_assert_int_eq(ilps[0], ilps[1]);
    ck_assert_msg(nodes[1] < nodes[0], "capped: %ld nodes, let branch: %ld (%d grids)", nodes[1], nodes[0], ilps[0]);
    rk_chain_free(&ch);
}
END_TEST

/* The least need of a block's options when rk-Rotor runs its forward again
 * before its backward, beside the output's gradient: max(fwd_peak + output
 * gradient, bwd_peak). */
static int64_t fwd_need(const rk_graph *g, const rk_option *opts, int n) {
    int64_t best = INT64_MAX, og = g->d[g->output_grad].size;
    for (int k = 0; k < n; k++) {
        rk_option o;
        rk_error err;
        ck_assert(rk_option_copy(&o, &opts[k]) == RK_OK);
        ck_assert_msg(rk_option_evaluate(g, &o, &err) == RK_OK, "%s", err.msg);
        int64_t v = o.fwd_peak + og > o.bwd_peak ? o.fwd_peak + og : o.bwd_peak;
        if (v < best) best = v;
        rk_option_free(&o);
    }
    return best;
}

/* The second min-peak ILP (its forward stages beside the output's gradient)
 * gives an option whose need there is never above the plain min-peak
 * option's, and below it on some random blocks; both are valid options (the
 * grid's seeds, before any point is solved). */
START_TEST(fwd_min_peak_option) {
    int lower = 0;
    for (unsigned seed = 1; seed <= 30; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_msg(cmt_random_block(seed, 7, &g, &err) == RK_OK, "%s", err.msg);
        int64_t need[2];
        int nopt[2];
        for (int off = 0; off < 2; off++) {
            rk_checkmate_params p = params(4, 4, 1);
            p.no_fwd_min_peak = off;
            rk_checkmate_grid *gr = NULL;
            ck_assert_msg(rk_checkmate_grid_new(&g, &p, &gr, &err) == RK_OK, "%s", err.msg);
            rk_option *o = NULL;
            int n = 0;
            ck_assert_msg(rk_checkmate_grid_options(gr, &o, &n, &err) == RK_OK, "%s", err.msg);
            ck_assert_int_ge(n, 1);
            need[off] = fwd_need(&g, o, n);
            nopt[off] = n;
            for (int k = 0; k < n; k++) rk_option_free(&o[k]);
            free(o);
            rk_checkmate_grid_free(gr);
        }
        ck_assert_int_le(need[0], need[1]);
        ck_assert_int_ge(nopt[0], nopt[1]);
        lower += need[0] < need[1];
        rk_graph_free(&g);
    }
    ck_assert_int_gt(lower, 0);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("checkmate_grid_part");
    TCase *tc = tcase_create("parts");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, parts_keep_optima);
    tcase_add_test(tc, too_large_block_segmented);
    tcase_add_test(tc, fwd_min_peak_option);
    tcase_add_test(tc, size_limits);
    suite_add_tcase(s, tc);
    tc = tcase_create("pattern_search");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, solver_pattern_search);
    suite_add_tcase(s, tc);
    tc = tcase_create("reuse");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, solver_reuse_across_budgets);
    tcase_add_test(tc, work_box_deterministic);
    tcase_add_test(tc, work_box_no_point_past_it);
    tcase_add_test(tc, min_peak_node_cap);
    tcase_add_test(tc, time_box_over);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
