/* test_checkmate.c — rk-Checkmate: hand-built blocks with hand-worked optima,
 * random blocks against an exhaustive search, decoding checked by the
 * simulator, the budget grid (determinism across thread counts, MPS export)
 * and whole-graph Checkmate on a small chain. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_internal.h"
#include "cm_testlib.h"
#include "rk_checkmate.h"
#include "rk_solve.h"

#define INF INFINITY

static rk_checkmate_params params(void) {
    rk_checkmate_params p;
    rk_checkmate_params_default(&p);
    p.time_limit = 60;
    return p;
}

/* Solve one budget; returns the time or INFINITY; the option (if given) is
 * filled on success. */
static double solve(const rk_graph *g, int64_t mp, int64_t ms, rk_option *keep) {
    rk_checkmate_params p = params();
    rk_option o;
    rk_error err;
    double obj = NAN;
    int optimal = 0;
    rk_status r = rk_checkmate_solve_budget(g, mp, ms, &p, &o, &obj, &optimal, NULL, &err);
    if (r == RK_EINFEASIBLE) return INF;
    ck_assert_msg(r == RK_OK, "solve_budget(%lld, %lld): %s", (long long)mp, (long long)ms, err.msg);
    ck_assert_int_eq(optimal, 1);
    /* the decoded option passes the simulator (checked inside) and fits */
    ck_assert(o.fwd_peak <= mp && o.bwd_peak <= mp);
    if (ms >= 0) ck_assert(o.saved <= ms);
    if (keep) *keep = o;
    else rk_option_free(&o);
    return obj;
}

static void build(rk_graph *g) {
    rk_error err;
    rk_status r = rk_graph_finalize(g, "test block", &err);
    ck_assert_msg(r == RK_OK, "%s", err.msg);
}

/* x -> f1 -> a -> f2 -> b -> f3 -> y; backward b3(yg, b) -> bg, b2(bg, a) -> ag,
 * b1(ag, x) -> xg. */
static void chain3(rk_graph *g, int64_t xs, int64_t ys) {
    rk_graph_init(g);
    int x = rk_graph_add_data(g, "x", RK_D_DATA, xs);
    int a = rk_graph_add_data(g, "a", RK_D_DATA, 4);
    int b = rk_graph_add_data(g, "b", RK_D_DATA, 4);
    int y = rk_graph_add_data(g, "y", RK_D_DATA, ys);
    int yg = rk_graph_add_data(g, "y.grad", RK_D_GRAD, ys);
    int bg = rk_graph_add_data(g, "b.grad", RK_D_GRAD, 4);
    int ag = rk_graph_add_data(g, "a.grad", RK_D_GRAD, 4);
    int xg = rk_graph_add_data(g, "x.grad", RK_D_GRAD, xs);
    int f1 = rk_graph_add_compute(g, "f1", RK_C_FWD, 1, 0);
    int f2 = rk_graph_add_compute(g, "f2", RK_C_FWD, 2, 0);
    int f3 = rk_graph_add_compute(g, "f3", RK_C_FWD, 3, 0);
    int l = rk_graph_add_compute(g, "loss", RK_C_LOSS, 0, 0);
    int b3 = rk_graph_add_compute(g, "b3", RK_C_BWD, 1, 0);
    int b2 = rk_graph_add_compute(g, "b2", RK_C_BWD, 1, 0);
    int b1 = rk_graph_add_compute(g, "b1", RK_C_BWD, 1, 0);
    rk_graph_add_use(g, f1, x, RK_EDGE_REAL);
    rk_graph_add_out(g, f1, a);
    rk_graph_add_use(g, f2, a, RK_EDGE_REAL);
    rk_graph_add_out(g, f2, b);
    rk_graph_add_use(g, f3, b, RK_EDGE_REAL);
    rk_graph_add_out(g, f3, y);
    rk_graph_add_use(g, l, y, RK_EDGE_REAL);
    rk_graph_add_out(g, l, yg);
    rk_graph_add_use(g, b3, yg, RK_EDGE_REAL);
    rk_graph_add_use(g, b3, b, RK_EDGE_REAL);
    rk_graph_add_out(g, b3, bg);
    rk_graph_add_use(g, b2, bg, RK_EDGE_REAL);
    rk_graph_add_use(g, b2, a, RK_EDGE_REAL);
    rk_graph_add_out(g, b2, ag);
    rk_graph_add_use(g, b1, ag, RK_EDGE_REAL);
    rk_graph_add_use(g, b1, x, RK_EDGE_REAL);
    rk_graph_add_out(g, b1, xg);
    rk_graph_add_input(g, x, xg);
    rk_graph_set_output(g, y, yg, l);
    build(g);
}

START_TEST(hand_chain3) {
    /* Keep-all: peak 15 at b3 (x1 a4 b4 yg2 + bg4), time 1+2+3+0+3 = 9.
     * M_peak 13: a may not be present at b3 -> forget a in the forward,
     * recompute f1 (1) before b2: 10.  b2 needs x1 bg4 a4 + ag4 = 13, so 12
     * is infeasible.  M_save 4 keeps b (10); M_save 3 keeps nothing: f1, f2
     * before b3 and f1 again before b2 (a cannot stay through b3): 13. */
    rk_graph g;
    chain3(&g, 1, 2);
    ck_assert_double_eq(solve(&g, 15, -1, NULL), 9);
    ck_assert_double_eq(solve(&g, 13, -1, NULL), 10);
    ck_assert_double_eq(solve(&g, 13, 4, NULL), 10);
    ck_assert_double_eq(solve(&g, 13, 3, NULL), 13);
    ck_assert(isinf(solve(&g, 12, -1, NULL)));
    for (int64_t mp = 12; mp <= 16; mp++)
        for (int64_t ms = 0; ms <= 10; ms += 2) ck_assert_double_eq(solve(&g, mp, ms, NULL), cmt_brute_force(&g, mp, ms));
    rk_graph_free(&g);
}
END_TEST

START_TEST(hand_diamond) {
    /* x -> f1 -> a; a -> f2 -> b; a -> f3 -> c; (b, c) -> f4 -> y.  a.grad has
     * two producers (accumulation).  Keep-all: peak 14 at b4, time 12.
     * M_peak 13: a absent at b4, f1 (5) recomputed before b3: 17; 12:
     * infeasible (b3 needs x1 a4 cg2 bg2 + ag4).  M_save 4 at 14: save a,
     * recompute f2, f3 (2): 14.  M_save 3: save b (or c), recompute f1, f3: 18. */
    rk_graph g;
    rk_graph_init(&g);
    int x = rk_graph_add_data(&g, "x", RK_D_DATA, 1);
    int a = rk_graph_add_data(&g, "a", RK_D_DATA, 4);
    int b = rk_graph_add_data(&g, "b", RK_D_DATA, 2);
    int c = rk_graph_add_data(&g, "c", RK_D_DATA, 2);
    int y = rk_graph_add_data(&g, "y", RK_D_DATA, 1);
    int yg = rk_graph_add_data(&g, "y.grad", RK_D_GRAD, 1);
    int bg = rk_graph_add_data(&g, "b.grad", RK_D_GRAD, 2);
    int cg = rk_graph_add_data(&g, "c.grad", RK_D_GRAD, 2);
    int ag = rk_graph_add_data(&g, "a.grad", RK_D_GRAD, 4);
    int xg = rk_graph_add_data(&g, "x.grad", RK_D_GRAD, 1);
    int f1 = rk_graph_add_compute(&g, "f1", RK_C_FWD, 5, 0);
    int f2 = rk_graph_add_compute(&g, "f2", RK_C_FWD, 1, 0);
    int f3 = rk_graph_add_compute(&g, "f3", RK_C_FWD, 1, 0);
    int f4 = rk_graph_add_compute(&g, "f4", RK_C_FWD, 1, 0);
    int l = rk_graph_add_compute(&g, "loss", RK_C_LOSS, 0, 0);
    int b4 = rk_graph_add_compute(&g, "b4", RK_C_BWD, 1, 0);
    int b3 = rk_graph_add_compute(&g, "b3", RK_C_BWD, 1, 0);
    int b2 = rk_graph_add_compute(&g, "b2", RK_C_BWD, 1, 0);
    int b1 = rk_graph_add_compute(&g, "b1", RK_C_BWD, 1, 0);
    rk_graph_add_use(&g, f1, x, RK_EDGE_REAL);
    rk_graph_add_out(&g, f1, a);
    rk_graph_add_use(&g, f2, a, RK_EDGE_REAL);
    rk_graph_add_out(&g, f2, b);
    rk_graph_add_use(&g, f3, a, RK_EDGE_REAL);
    rk_graph_add_out(&g, f3, c);
    rk_graph_add_use(&g, f4, b, RK_EDGE_REAL);
    rk_graph_add_use(&g, f4, c, RK_EDGE_REAL);
    rk_graph_add_out(&g, f4, y);
    rk_graph_add_use(&g, l, y, RK_EDGE_REAL);
    rk_graph_add_out(&g, l, yg);
    rk_graph_add_use(&g, b4, yg, RK_EDGE_REAL);
    rk_graph_add_use(&g, b4, b, RK_EDGE_REAL);
    rk_graph_add_use(&g, b4, c, RK_EDGE_REAL);
    rk_graph_add_out(&g, b4, bg);
    rk_graph_add_out(&g, b4, cg);
    rk_graph_add_use(&g, b3, cg, RK_EDGE_REAL);
    rk_graph_add_use(&g, b3, a, RK_EDGE_REAL);
    rk_graph_add_out(&g, b3, ag);
    rk_graph_add_use(&g, b2, bg, RK_EDGE_REAL);
    rk_graph_add_use(&g, b2, a, RK_EDGE_REAL);
    rk_graph_add_out(&g, b2, ag);
    rk_graph_add_use(&g, b1, ag, RK_EDGE_REAL);
    rk_graph_add_use(&g, b1, x, RK_EDGE_REAL);
    rk_graph_add_out(&g, b1, xg);
    rk_graph_add_input(&g, x, xg);
    rk_graph_set_output(&g, y, yg, l);
    build(&g);
    ck_assert_double_eq(solve(&g, 14, -1, NULL), 12);
    ck_assert_double_eq(solve(&g, 13, -1, NULL), 17);
    ck_assert(isinf(solve(&g, 12, -1, NULL)));
    ck_assert_double_eq(solve(&g, 14, 4, NULL), 14);
    ck_assert_double_eq(solve(&g, 14, 3, NULL), 18);
    rk_graph_free(&g);
}
END_TEST

START_TEST(hand_two_outputs) {
    /* f1 produces p and q (10 each); f2 uses q, f3 (overhead 5) uses p and
     * f2's output.  Forgetting q alone after f2 (before f3) keeps the peak at
     * 22 (f2: x1 p10 q10 u1) with no recomputation; deleting p and q together
     * would need 28.  21 is infeasible. */
    rk_graph g;
    rk_graph_init(&g);
    int x = rk_graph_add_data(&g, "x", RK_D_DATA, 1);
    int p = rk_graph_add_data(&g, "p", RK_D_DATA, 10);
    int q = rk_graph_add_data(&g, "q", RK_D_DATA, 10);
    int u = rk_graph_add_data(&g, "u", RK_D_DATA, 1);
    int y = rk_graph_add_data(&g, "y", RK_D_DATA, 1);
    int yg = rk_graph_add_data(&g, "y.grad", RK_D_GRAD, 1);
    int f1 = rk_graph_add_compute(&g, "f1", RK_C_FWD, 4, 0);
    int f2 = rk_graph_add_compute(&g, "f2", RK_C_FWD, 1, 0);
    int f3 = rk_graph_add_compute(&g, "f3", RK_C_FWD, 1, 5);
    int l = rk_graph_add_compute(&g, "loss", RK_C_LOSS, 1, 0);
    rk_graph_add_use(&g, f1, x, RK_EDGE_REAL);
    rk_graph_add_out(&g, f1, p);
    rk_graph_add_out(&g, f1, q);
    rk_graph_add_use(&g, f2, q, RK_EDGE_REAL);
    rk_graph_add_out(&g, f2, u);
    rk_graph_add_use(&g, f3, p, RK_EDGE_REAL);
    rk_graph_add_use(&g, f3, u, RK_EDGE_REAL);
    rk_graph_add_out(&g, f3, y);
    rk_graph_add_use(&g, l, y, RK_EDGE_REAL);
    rk_graph_add_out(&g, l, yg);
    rk_graph_add_input(&g, x, -1);
    rk_graph_set_output(&g, y, yg, l);
    build(&g);
    rk_option o;
    ck_assert_double_eq(solve(&g, 22, -1, &o), 7);
    /* q is forgotten before f3 runs, p is still present then */
    int fq = -1, rf3 = -1;
    for (int i = 0; i < o.n_fwd; i++) {
        if (o.fwd[i].kind == RK_OP_FORGET && o.fwd[i].node == q) fq = i;
        if (o.fwd[i].kind == RK_OP_RUN && o.fwd[i].node == f3) rf3 = i;
    }
    ck_assert(fq >= 0 && rf3 > fq);
    ck_assert_int_eq(o.fwd_peak, 22);
    rk_option_free(&o);
    ck_assert(isinf(solve(&g, 21, -1, NULL)));
    rk_graph_free(&g);
}
END_TEST

START_TEST(hand_overhead) {
    /* f3's temporary overhead (10) dominates: keeping a (5) through f3 needs
     * x1 a5 b1 + 10 + c1 = 18; below that a is forgotten and f1 (3) is
     * recomputed before f4: 9.  The least peak is 13 (x1 b1 + 10 + c1). */
    rk_graph g;
    rk_graph_init(&g);
    int x = rk_graph_add_data(&g, "x", RK_D_DATA, 1);
    int a = rk_graph_add_data(&g, "a", RK_D_DATA, 5);
    int b = rk_graph_add_data(&g, "b", RK_D_DATA, 1);
    int c = rk_graph_add_data(&g, "c", RK_D_DATA, 1);
    int y = rk_graph_add_data(&g, "y", RK_D_DATA, 1);
    int yg = rk_graph_add_data(&g, "y.grad", RK_D_GRAD, 1);
    int f1 = rk_graph_add_compute(&g, "f1", RK_C_FWD, 3, 0);
    int f2 = rk_graph_add_compute(&g, "f2", RK_C_FWD, 1, 0);
    int f3 = rk_graph_add_compute(&g, "f3", RK_C_FWD, 1, 10);
    int f4 = rk_graph_add_compute(&g, "f4", RK_C_FWD, 1, 0);
    int l = rk_graph_add_compute(&g, "loss", RK_C_LOSS, 0, 0);
    rk_graph_add_use(&g, f1, x, RK_EDGE_REAL);
    rk_graph_add_out(&g, f1, a);
    rk_graph_add_use(&g, f2, a, RK_EDGE_REAL);
    rk_graph_add_out(&g, f2, b);
    rk_graph_add_use(&g, f3, b, RK_EDGE_REAL);
    rk_graph_add_out(&g, f3, c);
    rk_graph_add_use(&g, f4, a, RK_EDGE_REAL);
    rk_graph_add_use(&g, f4, c, RK_EDGE_REAL);
    rk_graph_add_out(&g, f4, y);
    rk_graph_add_use(&g, l, y, RK_EDGE_REAL);
    rk_graph_add_out(&g, l, yg);
    rk_graph_add_input(&g, x, -1);
    rk_graph_set_output(&g, y, yg, l);
    build(&g);
    ck_assert_double_eq(solve(&g, 18, -1, NULL), 6);
    ck_assert_double_eq(solve(&g, 17, -1, NULL), 9);
    ck_assert_double_eq(solve(&g, 13, -1, NULL), 9);
    ck_assert(isinf(solve(&g, 12, -1, NULL)));
    rk_checkmate_params p = params();
    int64_t lo, hi;
    rk_error err;
    ck_assert_int_eq(rk_checkmate_peak_range(&g, &p, &lo, &hi, &err), RK_OK);
    ck_assert_int_eq(lo, 13);
    ck_assert_int_eq(hi, 18);
    rk_graph_free(&g);
}
END_TEST

/* x -> f1 -> (y, ph 8); loss; b1(yg, ph) -> xg.  Keep-all saves ph (8):
 * peak 11, time 2+0+3 = 5.  With M_save < 8 the phantom is recomputed by f1
 * in the backward (its output y comes back too): 7, same peak 11.  Any
 * schedule needs 11 at b1 (x1 yg1 ph8 + xg1). */
static void phantom_block(rk_graph *g, int64_t xs) {
    rk_graph_init(g);
    int x = rk_graph_add_data(g, "x", RK_D_DATA, xs);
    int y = rk_graph_add_data(g, "y", RK_D_DATA, xs);
    int ph = rk_graph_add_data(g, "ph", RK_D_PHANTOM, 8);
    int yg = rk_graph_add_data(g, "y.grad", RK_D_GRAD, xs);
    int xg = rk_graph_add_data(g, "x.grad", RK_D_GRAD, xs);
    int f1 = rk_graph_add_compute(g, "f1", RK_C_FWD, 2, 0);
    int l = rk_graph_add_compute(g, "loss", RK_C_LOSS, 0, 0);
    int b1 = rk_graph_add_compute(g, "b1", RK_C_BWD, 3, 0);
    rk_graph_add_use(g, f1, x, RK_EDGE_REAL);
    rk_graph_add_out(g, f1, y);
    rk_graph_add_out(g, f1, ph);
    rk_graph_add_use(g, l, y, RK_EDGE_REAL);
    rk_graph_add_out(g, l, yg);
    rk_graph_add_use(g, b1, yg, RK_EDGE_REAL);
    rk_graph_add_use(g, b1, ph, RK_EDGE_REAL);
    rk_graph_add_out(g, b1, xg);
    rk_graph_add_input(g, x, xg);
    rk_graph_set_output(g, y, yg, l);
    build(g);
}

START_TEST(hand_phantom) {
    rk_graph g;
    phantom_block(&g, 1);
    rk_option o;
    ck_assert_double_eq(solve(&g, 11, 8, &o), 5);
    ck_assert_int_eq(o.saved, 8);
    rk_option_free(&o);
    ck_assert_double_eq(solve(&g, 11, 7, &o), 7);
    ck_assert_int_eq(o.saved, 0);
    ck_assert_double_eq(o.bwd_time, 5);
    rk_option_free(&o);
    ck_assert(isinf(solve(&g, 10, -1, NULL)));
    rk_graph_free(&g);
}
END_TEST

/* ≥ 200 random blocks: ILP optimum == exhaustive search, at budgets across
 * the range (the decoded schedules are checked by the simulator inside). */
START_TEST(random_vs_brute_force) {
    int compared = 0, blocks = 0, with_twins = 0;
    for (unsigned seed = 0; seed < 240; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_msg(cmt_random_block(seed, 4, &g, &err) == RK_OK, "seed %u: %s", seed, err.msg);
        rk_option ka;
        ck_assert_int_eq(rk_option_keep_all(&g, &ka, &err), RK_OK);
        int64_t maxp = ka.fwd_peak > ka.bwd_peak ? ka.fwd_peak : ka.bwd_peak;
        int64_t sv = ka.saved;
        rk_option_free(&ka);
        int any = 0;
        for (int q = 0; q < 4; q++) {
            int64_t mp = maxp * (4 + q) / 7 + (q == 3 ? 2 : 0);
            int64_t ms = q == 0 ? -1 : q == 1 ? sv / 2 : q == 2 ? sv / 4 : sv;
            double bfv = cmt_brute_force(&g, mp, ms);
            if (bfv < 0) continue; /* too large to enumerate */
            double v = solve(&g, mp, ms, NULL);
            ck_assert_msg(v == bfv || fabs(v - bfv) <= 1e-9 * fabs(bfv),
                          "seed %u budget (%lld, %lld): ILP %.17g, exhaustive %.17g", seed, (long long)mp, (long long)ms,
                          v, bfv);
            compared++;
            any = 1;
        }
        blocks += any;
        if (any) {
            /* count the blocks whose model has twin rows (docs/ilp.md): the
             * comparison above then checks that they keep the optimum */
            rk_checkmate_model *m = NULL;
            ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
            with_twins += m->n_fam[strchr(CM_FAMILIES, 'w') - CM_FAMILIES] > 0;
            rk_checkmate_model_free(m);
        }
        rk_graph_free(&g);
    }
    ck_assert_int_ge(blocks, 200);
    ck_assert_int_ge(compared, 800);
    ck_assert_int_ge(with_twins, 10);
}
END_TEST

static int same_options(const rk_option *a, int na, const rk_option *b, int nb) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++) {
        if (a[i].n_fwd != b[i].n_fwd || a[i].n_bwd != b[i].n_bwd || a[i].saved != b[i].saved ||
            a[i].fwd_peak != b[i].fwd_peak || a[i].bwd_peak != b[i].bwd_peak || a[i].fwd_time != b[i].fwd_time ||
            a[i].bwd_time != b[i].bwd_time)
            return 0;
        if (memcmp(a[i].fwd, b[i].fwd, (size_t)a[i].n_fwd * sizeof(rk_op)) ||
            memcmp(a[i].bwd, b[i].bwd, (size_t)a[i].n_bwd * sizeof(rk_op)))
            return 0;
    }
    return 1;
}

START_TEST(grid_options) {
    for (unsigned seed = 1000; seed < 1012; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 5, &g, &err), RK_OK);
        rk_checkmate_params p = params();
        p.grid_peak = 6;
        p.grid_save = 5;
        rk_option *o1 = NULL, *o2 = NULL;
        int n1 = 0, n2 = 0;
        rk_checkmate_stats s1, s2;
        p.threads = 1;
        ck_assert_msg(rk_checkmate_block_options(&g, &p, &o1, &n1, &s1, &err) == RK_OK, "%s", err.msg);
        p.threads = 3;
        ck_assert_msg(rk_checkmate_block_options(&g, &p, &o2, &n2, &s2, &err) == RK_OK, "%s", err.msg);
        ck_assert(n1 >= 1);
        ck_assert(same_options(o1, n1, o2, n2));
        ck_assert_int_eq(s1.n_ilps, s2.n_ilps);
        ck_assert(s1.n_ilps + s1.n_reused <= s1.n_budgets);
        /* every option: valid, within the keep-all peak, the cheapest at its
         * own budget (exhaustive search), sorted and unique */
        for (int i = 0; i < n1; i++) {
            rk_option c;
            ck_assert_int_eq(rk_option_copy(&c, &o1[i]), RK_OK);
            ck_assert_msg(rk_option_evaluate(&g, &c, &err) == RK_OK, "%s", err.msg);
            ck_assert(c.saved == o1[i].saved && c.fwd_peak == o1[i].fwd_peak && c.bwd_time == o1[i].bwd_time);
            rk_option_free(&c);
            ck_assert(o1[i].fwd_peak <= s1.max_peak && o1[i].bwd_peak <= s1.max_peak);
            if (i > 0) ck_assert(o1[i - 1].saved <= o1[i].saved);
        }
        /* at every grid budget the cheapest option that fits is the
         * exhaustive optimum at that budget */
        for (int i = 0; i < p.grid_peak; i++) {
            int64_t pk = s1.min_peak + (int64_t)((double)(s1.max_peak - s1.min_peak) * i / (p.grid_peak - 1));
            for (int j = 0; j < p.grid_save; j++) {
                int64_t out = g.d[g.output].size;
                int64_t sv = out + (int64_t)((double)(pk - out) * j / (p.grid_save - 1));
                double best = INF;
                for (int k = 0; k < n1; k++) {
                    const rk_option *o = &o1[k];
                    int64_t lo = o->input_size + o->saved + o->output_size +
                                 (g.c[g.loss].overhead > 0 ? g.c[g.loss].overhead : 0) + g.d[g.output_grad].size;
                    int64_t full = o->fwd_peak > o->bwd_peak ? o->fwd_peak : o->bwd_peak;
                    if (lo > full) full = lo;
                    double t = o->fwd_time + g.c[g.loss].time + o->bwd_time;
                    if (full <= pk && o->saved <= sv && t < best) best = t;
                }
                double bfv = cmt_brute_force(&g, pk, sv);
                if (bfv < 0) continue;
                ck_assert_msg(best == bfv || fabs(best - bfv) <= 1e-9 * bfv,
                              "seed %u budget (%lld, %lld): options give %g, exhaustive %g", seed, (long long)pk,
                              (long long)sv, best, bfv);
            }
        }
        for (int i = 0; i < n1; i++) {
            rk_option_free(&o1[i]);
            rk_option_free(&o2[i]);
        }
        free(o1);
        free(o2);
        rk_graph_free(&g);
    }
}
END_TEST

START_TEST(export_mps) {
    char dir[] = "/tmp/rkcm_exportXXXXXX";
    ck_assert(mkdtemp(dir) != NULL);
    rk_graph g;
    chain3(&g, 1, 2);
    rk_checkmate_params p = params();
    p.grid_peak = 3;
    p.grid_save = 3;
    p.export_dir = dir;
    p.export_prefix = "chain3";
    rk_option *o = NULL;
    int n = 0;
    rk_checkmate_stats st;
    rk_error err;
    ck_assert_msg(rk_checkmate_block_options(&g, &p, &o, &n, &st, &err) == RK_OK, "%s", err.msg);
    ck_assert(st.n_ilps >= 1);
    /* the min-peak ILP and every grid ILP solved are there and read back */
    char path[512];
    snprintf(path, sizeof path, "%s/chain3_minpeak.mps", dir);
    rk_lp *lp = NULL;
    ck_assert_msg(rk_mps_read(path, &lp, &err) == RK_OK, "%s", err.msg);
    rk_lp_free(lp);
    int files = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            snprintf(path, sizeof path, "%s/chain3_p%02d_s%02d.mps", dir, i, j);
            if (access(path, F_OK) == 0) {
                ck_assert_msg(rk_mps_read(path, &lp, &err) == RK_OK, "%s", err.msg);
                rk_lp_free(lp);
                files++;
                unlink(path);
            }
        }
    ck_assert_int_eq(files, st.n_ilps);
    snprintf(path, sizeof path, "%s/chain3_minpeak.mps", dir);
    unlink(path);
    rmdir(dir);
    for (int i = 0; i < n; i++) rk_option_free(&o[i]);
    free(o);
    rk_graph_free(&g);
}
END_TEST

START_TEST(whole_chain) {
    /* three phantom blocks in a chain; flattened, the ILP equals the
     * exhaustive search on the flattened graph and the schedule passes
     * rk_simulate (checked inside rk_checkmate_chain_schedule). */
    rk_chain ch;
    rk_chain_init(&ch);
    rk_graph g;
    phantom_block(&g, 1);
    int c0 = rk_chain_add_class(&ch, &g);
    rk_chain_add_block(&ch, "h0", c0);
    rk_chain_add_block(&ch, "h1", c0);
    rk_chain_add_block(&ch, "h2", c0);
    rk_error err;
    ck_assert_msg(rk_chain_validate(&ch, "chain", &err) == RK_OK, "%s", err.msg);
    rk_checkmate_flat f;
    ck_assert_msg(rk_checkmate_flatten(&ch, &f, &err) == RK_OK, "%s", err.msg);
    ck_assert_int_eq(f.g.n_c, 7);
    rk_checkmate_params p = params();
    int found = 0;
    for (int64_t b = 10; b <= 30; b++) {
        rk_schedule s;
        rk_schedule_init(&s);
        double gap = -1;
        rk_status r = rk_checkmate_chain_schedule(&ch, b, &p, &s, &gap, &err);
        double bfv = cmt_brute_force(&f.g, b, -1);
        if (r == RK_EINFEASIBLE) {
            ck_assert_msg(isinf(bfv), "budget %lld: ILP infeasible, exhaustive %g", (long long)b, bfv);
        } else {
            ck_assert_msg(r == RK_OK, "%s", err.msg);
            ck_assert_double_eq(gap, 0);
            ck_assert(s.predicted_peak <= b);
            ck_assert_msg(fabs(s.predicted_time - bfv) < 1e-9, "budget %lld: %g vs %g", (long long)b, s.predicted_time,
                          bfv);
            found++;
        }
        rk_schedule_free(&s);
    }
    ck_assert(found > 0);
    rk_checkmate_flat_free(&f);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(chain_options_wrapper) {
    rk_chain ch;
    rk_chain_init(&ch);
    rk_graph g;
    chain3(&g, 2, 2);
    int c0 = rk_chain_add_class(&ch, &g);
    rk_chain_add_block(&ch, "b0", c0);
    rk_chain_add_block(&ch, "b1", c0);
    rk_error err;
    ck_assert_msg(rk_chain_validate(&ch, "chain", &err) == RK_OK, "%s", err.msg);
    rk_checkmate_params p = params();
    p.grid_peak = 4;
    p.grid_save = 4;
    rk_option **co = NULL;
    int *cn = NULL;
    rk_checkmate_stats st;
    ck_assert_msg(rk_checkmate_chain_options(&ch, &p, &co, &cn, &st, &err) == RK_OK, "%s", err.msg);
    ck_assert(cn[0] >= 2);
    ck_assert_int_eq(st.n_options, cn[0]);
    rk_checkmate_chain_options_free(ch.n_classes, co, cn);
    rk_chain_free(&ch);
}
END_TEST


/* Solve lp (optimal or NULL); *x malloc'ed. */
static int solve_x(const rk_lp *lp, double **x) {
    rk_milp_params mp;
    rk_milp_params_default(&mp);
    mp.threads = 1;
    rk_milp_result res;
    rk_error err;
    ck_assert_int_eq(rk_milp_solve(lp, &mp, &res, &err), RK_OK);
    int ok = res.status == RK_MILP_OPTIMAL && res.has_solution;
    *x = ok ? res.x : NULL;
    if (ok) res.x = NULL;
    rk_milp_result_free(&res);
    return ok;
}

/* Time, whole-sequence peak and saved memory of a model solution. */
static void measure(const rk_checkmate_model *m, const double *x, int64_t mp, int64_t ms, double *t, int64_t *peak,
                    int64_t *saved) {
    rk_op *ops = NULL;
    int n = 0;
    double obj, sim;
    rk_error err;
    ck_assert_msg(cm_decode_replay(m, x, &ops, &n, &obj, peak, &sim, &err) == RK_OK, "%s", err.msg);
    free(ops);
    rk_option o;
    ck_assert_msg(rk_checkmate_model_decode_option(m, x, mp, ms, &o, t, &err) == RK_OK, "%s", err.msg);
    *saved = o.saved;
    rk_option_free(&o);
}

/* cm_lean_schedule: from the fattest schedule with the optimum's runs (the
 * memory rows' sum maximised, runs fixed) it comes back to the leanest one:
 * same time, peak and saved no higher, and the same peak and saved as the
 * leaned optimum (the least memory for given runs is unique). */
START_TEST(lean_schedule) {
    int compared = 0, leaner = 0;
    for (unsigned seed = 0; seed < 200; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 4, &g, &err), RK_OK);
        rk_option ka;
        ck_assert_int_eq(rk_option_keep_all(&g, &ka, &err), RK_OK);
        int64_t mp = (ka.fwd_peak > ka.bwd_peak ? ka.fwd_peak : ka.bwd_peak) * 6 / 7;
        int64_t ms = seed % 2 ? ka.saved : -1;
        rk_option_free(&ka);
        rk_checkmate_model *m = NULL;
        ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
        rk_lp *lp = NULL;
        double *xo = NULL, *xf = NULL;
        if (rk_checkmate_model_lp(m, mp, ms, &lp, &err) == RK_OK && solve_x(lp, &xo)) {
            /* the fattest schedule with the same runs */
            int n = rk_checkmate_model_num_cols(m);
            double *w = calloc((size_t)n, sizeof *w);
            for (int i = 0; i < m->n_rows; i++) {
                const cm_row *rw = &m->rows[i];
                if (rw->kind == CM_RHS_FIXED) continue;
                for (int q = 0; q < rw->e.n; q++) w[m->tcol[rw->e.start + q]] += m->tval[rw->e.start + q];
            }
            for (int j = 0; j < n; j++) {
                rk_lp_set_col_obj(lp, j, -w[j]);
                if (m->cols[j].kind == CM_COL_R) rk_lp_set_col_bounds(lp, j, xo[j] > 0.5, xo[j] > 0.5);
            }
            free(w);
            ck_assert(solve_x(lp, &xf));
            double to, tf, tl, tol2;
            int64_t po, pf, pl, pol, so, sf, sl, sol;
            measure(m, xo, mp, ms, &to, &po, &so);
            measure(m, xf, mp, ms, &tf, &pf, &sf);
            ck_assert(tf == to);
            cm_lean_schedule(m, mp, ms, xf);
            cm_lean_schedule(m, mp, ms, xo);
            measure(m, xf, mp, ms, &tl, &pl, &sl);
            measure(m, xo, mp, ms, &tol2, &pol, &sol);
            ck_assert(tl == to && tol2 == to);
            ck_assert(pl <= pf && sl <= sf && pol <= po && sol <= so);
            ck_assert_msg(pl == pol && sl == sol, "seed %u: lean(fat) %lld/%lld, lean(opt) %lld/%lld", seed,
                          (long long)pl, (long long)sl, (long long)pol, (long long)sol);
            compared++;
            leaner += pl < pf || sl < sf;
        }
        free(xo);
        free(xf);
        rk_lp_free(lp);
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
    }
    ck_assert_int_ge(compared, 80);
    ck_assert_msg(leaner >= 20, "only %d of %d fat schedules were leaner", leaner, compared);
}
END_TEST

/* Recomputation counts: every N column is the number of R columns of its
 * node at 1, and the decoded schedule runs that node once more than that;
 * also after cm_lean_schedule (whose rounding once turned counts of 2 or
 * more into 1, so that the grid's handed-on incumbents were infeasible). */
START_TEST(recompute_counts) {
    int with_n = 0, recomputed_twice = 0;
    for (unsigned seed = 0; seed < 240; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed / 2, 4, &g, &err), RK_OK);
        rk_option ka;
        ck_assert_int_eq(rk_option_keep_all(&g, &ka, &err), RK_OK);
        int64_t mp = (ka.fwd_peak > ka.bwd_peak ? ka.fwd_peak : ka.bwd_peak) * 5 / 7;
        int64_t ms = seed % 2 ? ka.saved / 4 : -1;
        rk_option_free(&ka);
        rk_checkmate_model *m = NULL;
        ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
        rk_lp *lp = NULL;
        double *x = NULL;
        for (int lean = 0; lean < 2 && rk_checkmate_model_lp(m, mp, ms, &lp, &err) == RK_OK && (x || solve_x(lp, &x));
             lean++) {
            if (lean) cm_lean_schedule(m, mp, ms, x);
            rk_op *ops = NULL;
            int nops = 0;
            double obj;
            ck_assert_int_eq(rk_checkmate_model_decode_ops(m, x, &ops, &nops, &obj, &err), RK_OK);
            for (int j = 0; j < m->n_cols; j++) {
                if (m->cols[j].kind != CM_COL_N) continue;
                int k = m->cols[j].a, ones = 0, runs = 0, ncols = 0;
                for (int i = 0; i < m->n_cols; i++)
                    if (m->cols[i].kind == CM_COL_R && m->cols[i].a == k) {
                        ncols++;
                        ones += x[i] > 0.5;
                    }
                for (int i = 0; i < nops; i++) runs += ops[i].kind == RK_OP_RUN && ops[i].node == g.topo[k];
                ck_assert_int_ge(ncols, 2);
                ck_assert_double_eq(m->cols[j].ub, ncols);
                ck_assert_int_eq((int)lround(x[j]), ones);
                ck_assert_int_eq(runs, 1 + ones);
                with_n++;
                recomputed_twice += ones > 1;
            }
            free(ops);
            rk_lp_free(lp);
            lp = NULL;
        }
        free(x);
        rk_lp_free(lp);
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
    }
    ck_assert_int_ge(with_n, 50);
    ck_assert_int_ge(recomputed_twice, 5);
}
END_TEST

/* ------------------------------------------- incumbents (cm_heur.c) */

/* Ops of a whole option: fwd, the loss, bwd. */
static rk_op *option_ops(const rk_graph *g, const rk_option *o, int *n) {
    rk_op *ops = malloc((size_t)(o->n_fwd + o->n_bwd + 1) * sizeof *ops);
    memcpy(ops, o->fwd, (size_t)o->n_fwd * sizeof *ops);
    ops[o->n_fwd] = (rk_op){RK_OP_RUN, 0, g->loss, -1};
    memcpy(ops + o->n_fwd + 1, o->bwd, (size_t)o->n_bwd * sizeof *ops);
    *n = o->n_fwd + o->n_bwd + 1;
    return ops;
}

/* Peak and time of ops replayed on g. */
static void replay(const rk_graph *g, const rk_op *ops, int n, int64_t *peak, double *time) {
    rk_block_state st;
    rk_error err;
    ck_assert_int_eq(rk_block_state_init(&st, g), RK_OK);
    ck_assert_msg(rk_block_replay(g, &st, ops, n, "test", &err) == RK_OK, "%s", err.msg);
    *peak = st.peak;
    *time = st.time;
    rk_block_state_free(&st);
}

/* Encode ops, check the vector against every row at the ops' own peak, and
 * return the encoded schedule's peak and time. */
static void encode_check(const rk_checkmate_model *m, const rk_op *ops, int n, int64_t budget, int64_t *peak,
                         double *time, unsigned seed) {
    rk_error err;
    double *x = malloc((size_t)m->n_cols * sizeof *x + 8);
    ck_assert_msg(cm_encode_ops(m, ops, n, x, &err) == RK_OK, "seed %u: %s", seed, err.msg);
    double amount = 0;
    int v = cm_row_violation(m, x, budget, -1, &amount);
    ck_assert_msg(v < 0, "seed %u: encoded schedule violates row %d by %g", seed, v, amount);
    rk_op *o2 = NULL;
    int n2 = 0;
    double obj;
    ck_assert_msg(cm_decode_replay(m, x, &o2, &n2, &obj, peak, time, &err) == RK_OK, "seed %u: %s", seed, err.msg);
    ck_assert(fabs(obj - *time) <= 1e-9 * fmax(1, *time));
    free(o2);
    free(x);
}

/* Any schedule of the model encodes as a column vector that satisfies every
 * row: the built-in options (keep-all, asap), and ILP optima, whose encoding
 * has exactly the peak of cm_lean_schedule's (the least memory for the same
 * runs, found by an ILP there and by the encoder's rule here) and the same
 * time. */
START_TEST(encode_schedules) {
    int optima = 0, recomputing = 0;
    for (unsigned seed = 0; seed < 160; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 4, &g, &err), RK_OK);
        rk_checkmate_model *m = NULL;
        ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
        int64_t maxp = 0;
        for (int kind = 0; kind < 2; kind++) {
            rk_option o;
            ck_assert_int_eq(kind ? rk_option_asap(&g, &o, &err) : rk_option_keep_all(&g, &o, &err), RK_OK);
            int n;
            rk_op *ops = option_ops(&g, &o, &n);
            int64_t pk, pe;
            double t, te;
            replay(&g, ops, n, &pk, &t);
            if (!kind) maxp = pk;
            encode_check(m, ops, n, pk, &pe, &te, seed);
            ck_assert_msg(pe <= pk, "seed %u: encoded peak %lld above the schedule's %lld", seed, (long long)pe,
                          (long long)pk);
            ck_assert(fabs(te - t) <= 1e-9 * fmax(1, t));
            free(ops);
            rk_option_free(&o);
        }
        /* optima at tighter budgets */
        for (int frac = 6; frac >= 4; frac--) {
        int64_t mp = maxp * frac / 7;
        rk_lp *lp = NULL;
        double *xo = NULL;
        if (rk_checkmate_model_lp(m, mp, -1, &lp, &err) == RK_OK && solve_x(lp, &xo)) {
            rk_op *ops = NULL;
            int n = 0;
            double obj, t;
            int64_t pk;
            ck_assert_int_eq(cm_decode_replay(m, xo, &ops, &n, &obj, &pk, &t, &err), RK_OK);
            int64_t pe;
            double te;
            encode_check(m, ops, n, mp, &pe, &te, seed);
            cm_lean_schedule(m, mp, -1, xo);
            int64_t pl;
            double tl;
            free(ops);
            ck_assert_int_eq(cm_decode_replay(m, xo, &ops, &n, &obj, &pl, &tl, &err), RK_OK);
            free(ops);
            ck_assert_msg(pe == pl && te == tl, "seed %u: encoded peak %lld time %g, lean %lld %g", seed, (long long)pe,
                          te, (long long)pl, tl);
            optima++;
            double base = 0;
            for (int c = 0; c < g.n_c; c++) base += g.c[c].time;
            recomputing += t > base + 1e-9;
        }
        free(xo);
        rk_lp_free(lp);
        }
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
    }
    ck_assert_msg(optima >= 120 && recomputing >= 20, "%d optima, %d of them recomputing", optima, recomputing);
}
END_TEST

/* The encoder maps runs to stages: a repeated run in a stage is one step, a
 * run the model has no column for is dropped, and first runs out of the
 * model's topological order are refused. */
START_TEST(encode_stages) {
    rk_graph g;
    chain3(&g, 2, 4);
    rk_checkmate_model *m = NULL;
    rk_error err;
    ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
    int f1 = rk_graph_find_compute(&g, "f1"), f2 = rk_graph_find_compute(&g, "f2"), f3 = rk_graph_find_compute(&g, "f3");
    int b3 = rk_graph_find_compute(&g, "b3"), b2 = rk_graph_find_compute(&g, "b2"), b1 = rk_graph_find_compute(&g, "b1");
    int a = rk_graph_find_data(&g, "a"), b = rk_graph_find_data(&g, "b");
    double *x = malloc((size_t)m->n_cols * sizeof *x);
    /* f1 f2 f3 loss, forget a and b, b3 needs b: f1 f2 (again f1: the same
     * step), b3, then f1 once more for b2 in the stage of b2, b1 */
#define RUN(c) {RK_OP_RUN, 0, c, -1}
#define FGT(d) {RK_OP_FORGET, 0, d, -1}
    rk_op ops[] = {RUN(f1), RUN(f2), RUN(f3), RUN(g.loss), FGT(a), FGT(b), RUN(f1), RUN(f2), RUN(f1), RUN(b3),
                   RUN(f1), RUN(b2), RUN(b1)};
    int n = (int)(sizeof ops / sizeof ops[0]);
    ck_assert_msg(cm_encode_ops(m, ops, n, x, &err) == RK_OK, "%s", err.msg);
    ck_assert_int_lt(cm_row_violation(m, x, 1000, -1, NULL), 0);
    rk_op *o2 = NULL;
    int n2 = 0;
    double obj, t;
    int64_t pk;
    ck_assert_int_eq(cm_decode_replay(m, x, &o2, &n2, &obj, &pk, &t, &err), RK_OK);
    /* every node once (1+2+3+0+1+1+1 = 9) + f1 and f2 before b3 + f1 before b2 */
    ck_assert_double_eq(t, 9 + 1 + 2 + 1);
    free(o2);
    /* f2 for the first time before f1: not in the model's order */
    rk_op bad[] = {RUN(f2), RUN(f1), RUN(f3), RUN(g.loss), RUN(b3), RUN(b2), RUN(b1)};
    ck_assert_int_eq(cm_encode_ops(m, bad, 7, x, &err), RK_EINPUT);
    /* never runs b1 */
    ck_assert_int_eq(cm_encode_ops(m, bad + 0, 0, x, &err), RK_EINPUT);
    (void)f3;
    (void)b2;
#undef RUN
#undef FGT
    free(x);
    rk_checkmate_model_free(m);
    rk_graph_free(&g);
}
END_TEST

/* The greedy rematerialization: its least peak and every schedule it returns
 * for a budget are schedules of the model (every row holds), fit, and cost
 * no less than the exhaustive optimum at that budget. */
START_TEST(greedy_schedules) {
    int checked = 0, below_free_asap = 0;
    for (unsigned seed = 0; seed < 120; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 4, &g, &err), RK_OK);
        rk_checkmate_model *m = NULL;
        ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
        double *x = malloc((size_t)m->n_cols * sizeof *x + 8);
        int64_t lp, pk;
        double t;
        ck_assert_msg(cm_greedy(m, 0, x, &lp, &t, &err) == RK_OK, "seed %u: %s", seed, err.msg);
        ck_assert_int_lt(cm_row_violation(m, x, lp, -1, NULL), 0);
        rk_option as;
        ck_assert_int_eq(rk_option_asap(&g, &as, &err), RK_OK);
        int n;
        rk_op *ops = option_ops(&g, &as, &n);
        int64_t pa;
        double ta;
        replay(&g, ops, n, &pa, &ta);
        free(ops);
        rk_option_free(&as);
        ck_assert(lp <= pa);
        below_free_asap += lp < pa;
        for (int q = 0; q < 3; q++) {
            int64_t b = lp + (pa - lp) * q / 2;
            rk_status r = cm_greedy(m, b, x, &pk, &t, &err);
            ck_assert_msg(r == RK_OK, "seed %u budget %lld (least peak %lld): %s", seed, (long long)b, (long long)lp,
                          err.msg);
            ck_assert(pk <= b);
            ck_assert_int_lt(cm_row_violation(m, x, b, -1, NULL), 0);
            double bf = cmt_brute_force(&g, b, -1);
            if (bf < 0) continue;
            ck_assert_msg(t >= bf - 1e-9, "seed %u: greedy %g below the optimum %g", seed, t, bf);
            /* the local search keeps it within the budget, no dearer */
            double t0 = t;
            ck_assert_int_ge(cm_improve(m, b, x, 1000), 0);
            ck_assert_int_lt(cm_row_violation(m, x, b, -1, NULL), 0);
            rk_op *o2 = NULL;
            int n2 = 0;
            double obj;
            ck_assert_int_eq(cm_decode_replay(m, x, &o2, &n2, &obj, &pk, &t, &err), RK_OK);
            free(o2);
            ck_assert(pk <= b && t <= t0 && t >= bf - 1e-9);
            checked++;
        }
        free(x);
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
    }
    ck_assert_int_ge(checked, 150);
    ck_assert_int_ge(below_free_asap, 10);
}
END_TEST

/* The greedy for many budgets (cm_greedy_runs, the grid's seeds): a pick at
 * any budget, in any order of budgets, gives what cm_greedy gives there —
 * the same schedule (every column), peak, time and status, infeasible
 * budgets included. */
START_TEST(greedy_runs_pick) {
    int compared = 0, evicted = 0;
    for (unsigned seed = 0; seed < 80; seed++) {
        rk_graph g;
        rk_error err;
        ck_assert_int_eq(cmt_random_block(seed, 4 + (int)(seed % 4), &g, &err), RK_OK);
        rk_checkmate_model *m = NULL;
        ck_assert_int_eq(rk_checkmate_model_build(&g, &m, &err), RK_OK);
        size_t nx = (size_t)m->n_cols + 1;
        double *x1 = calloc(nx, sizeof *x1), *x2 = calloc(nx, sizeof *x2);
        int64_t lp, hp;
        double t;
        ck_assert_int_eq(cm_greedy(m, 0, x1, &lp, &t, &err), RK_OK);
        rk_option ka;
        ck_assert_int_eq(rk_option_keep_all(&g, &ka, &err), RK_OK);
        int n;
        rk_op *ops = option_ops(&g, &ka, &n);
        replay(&g, ops, n, &hp, &t);
        free(ops);
        rk_option_free(&ka);
        /* budgets from below the least peak to keep-all's, loosest first (as
         * the grid), then again in another order on a fresh object */
        int64_t b[10];
        int nb = 0;
        b[nb++] = 0;
        for (int k = 8; k >= 0; k--) b[nb++] = lp - lp / 20 + (hp - lp + lp / 20) * k / 8;
        for (int pass = 0; pass < 2; pass++) {
            cm_greedy_runs *runs = NULL;
            ck_assert_int_eq(cm_greedy_runs_new(m, &runs, &err), RK_OK);
            for (int i = 0; i < nb; i++) {
                int64_t bud = pass == 0 ? b[i] : b[(i * 7 + 3) % nb];
                int64_t p1 = -1, p2 = -1;
                double t1 = -1, t2 = -1;
                rk_error e1, e2;
                memset(x1, 0, nx * sizeof *x1);
                memset(x2, 0, nx * sizeof *x2);
                rk_status r1 = cm_greedy(m, bud, x1, &p1, &t1, &e1);
                rk_status r2 = cm_greedy_pick(runs, bud, x2, &p2, &t2, &e2);
                ck_assert_msg(r1 == r2, "seed %u budget %lld: cm_greedy %d (%s), pick %d (%s)", seed, (long long)bud,
                              r1, e1.msg, r2, e2.msg);
                if (r1) continue;
                ck_assert_msg(p1 == p2 && t1 == t2, "seed %u budget %lld: peak %lld/%lld time %g/%g", seed,
                              (long long)bud, (long long)p1, (long long)p2, t1, t2);
                ck_assert_msg(memcmp(x1, x2, (size_t)m->n_cols * sizeof *x1) == 0, "seed %u budget %lld: columns differ",
                              seed, (long long)bud);
                compared++;
                evicted += bud > 0 && p1 < hp;
            }
            cm_greedy_runs_free(runs);
        }
        free(x1);
        free(x2);
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
    }
    ck_assert_int_ge(compared, 600);
    ck_assert_int_ge(evicted, 100);
}
END_TEST

/* Whole-graph Checkmate never comes back empty-handed where a schedule is
 * known: with a node limit of 1 (the MILP barely starts), the seeds that fit
 * (keep-all, free-asap) give a schedule at least as cheap, within the
 * budget, with a finite gap to a bound below its time. */
START_TEST(chain_seeds) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 1, 2, 16, 16, &err), RK_OK);
    rk_schedule ka, fa;
    ck_assert_int_eq(rk_schedule_keep_all(&ch, &ka, &err), RK_OK);
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &fa, &err), RK_OK);
    rk_sim_result ska, sfa;
    ck_assert_int_eq(rk_simulate(&ch, &ka, &ska, &err), RK_OK);
    ck_assert_int_eq(rk_simulate(&ch, &fa, &sfa, &err), RK_OK);
    rk_checkmate_params p = params();
    p.node_limit = 1;
    rk_schedule seeds[2] = {ka, fa};
    int64_t budgets[] = {ska.peak, sfa.peak};
    for (int i = 0; i < 2; i++) {
        rk_schedule s;
        rk_schedule_init(&s);
        rk_checkmate_chain_info info;
        rk_status r = rk_checkmate_chain_solve(&ch, budgets[i], &p, seeds, 2, &s, &info, &err);
        ck_assert_msg(r == RK_OK, "%s", err.msg);
        rk_sim_result sr;
        ck_assert_int_eq(rk_simulate(&ch, &s, &sr, &err), RK_OK);
        ck_assert(sr.peak <= budgets[i] && sr.peak == s.predicted_peak && sr.time == s.predicted_time);
        ck_assert(sr.time <= sfa.time + 1e-9);
        ck_assert(isfinite(info.gap) && info.gap >= 0 && info.bound <= sr.time + 1e-9);
        ck_assert(fabs(info.gap - (sr.time - info.bound) / sr.time) < 1e-9 || info.optimal);
        ck_assert(info.n_seeds_encoded >= 1);
        rk_schedule_free(&s);
    }
    /* a seed that does not fit is not used */
    rk_schedule s;
    rk_schedule_init(&s);
    rk_checkmate_chain_info info;
    rk_status r = rk_checkmate_chain_solve(&ch, sfa.peak - 1, &p, &fa, 1, &s, &info, &err);
    ck_assert(r == RK_OK || r == RK_EINFEASIBLE);
    if (r == RK_OK) {
        rk_sim_result sr;
        ck_assert_int_eq(rk_simulate(&ch, &s, &sr, &err), RK_OK);
        ck_assert(sr.peak <= sfa.peak - 1);
        ck_assert(strcmp(info.source, "seed") != 0);
    }
    rk_schedule_free(&s);
    rk_schedule_free(&ka);
    rk_schedule_free(&fa);
    rk_chain_free(&ch);
}
END_TEST

/* The solve pipeline's checkmate: tight to loose budgets with a node limit
 * of 1, each budget seeded with the earlier results: once a budget has a
 * schedule every looser one has one, never dearer; min_budget is a budget
 * that succeeds, at or below free-asap's peak, and at or above the proven
 * lower bound. */
START_TEST(solver_checkmate_monotone) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 1, 2, 16, 16, &err), RK_OK);
    rk_solve_params sp;
    rk_solve_params_default(&sp);
    sp.algo = RK_SOLVE_CHECKMATE;
    sp.cm.node_limit = 1;
    sp.cm.time_limit = 60;
    sp.dp.threads = 1;
    rk_solver *sv = NULL;
    ck_assert_int_eq(rk_solver_new(&ch, &sp, &sv, &err), RK_OK);
    rk_schedule fa;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &fa, &err), RK_OK);
    rk_sim_result sfa;
    ck_assert_int_eq(rk_simulate(&ch, &fa, &sfa, &err), RK_OK);
    int64_t minb = 0, lb = 0;
    ck_assert_int_eq(rk_solver_min_budget(sv, &minb, &err), RK_OK);
    ck_assert_int_eq(rk_solver_min_budget_bound(sv, &lb, &err), RK_OK);
    ck_assert(lb > 0 && lb <= minb && minb <= sfa.peak);
    ck_assert_msg(minb < sfa.peak, "min_budget %lld: no schedule below free-asap's peak", (long long)minb);
    double last = INFINITY;
    int feasible = 0;
    for (int q = 0; q <= 4; q++) {
        int64_t b = q == 0 ? minb : minb + (sfa.peak - minb) * q / 4;
        rk_schedule s;
        rk_solve_result res;
        rk_status r = rk_solver_solve(sv, b, &s, &res, &err);
        ck_assert_msg(r == RK_OK, "budget %lld (min_budget %lld): %s", (long long)b, (long long)minb, err.msg);
        ck_assert(res.sim.peak <= b);
        ck_assert_msg(res.sim.time <= last + 1e-9, "budget %lld: %g dearer than a tighter budget's %g", (long long)b,
                      res.sim.time, last);
        ck_assert(isfinite(res.checkmate_gap) && res.checkmate_gap >= 0);
        last = res.sim.time;
        feasible++;
        rk_schedule_free(&s);
    }
    ck_assert_int_eq(feasible, 5);
    /* below the proven bound nothing fits */
    rk_schedule s;
    rk_solve_result res;
    ck_assert_int_eq(rk_solver_solve(sv, lb - 1, &s, &res, &err), RK_EINFEASIBLE);
    ck_assert(strstr(err.msg, "smallest budget with a known schedule") != NULL);
    rk_schedule_free(&fa);
    rk_solver_free(sv);
    rk_chain_free(&ch);
}
END_TEST

/* A MILP "solver" that stops at its time limit before finding anything (the
 * situation of a large graph at a tight budget). */
static rk_status no_solution_solver(void *ctx, const char *tag, const rk_lp *lp, const rk_milp_params *mp,
                                    rk_milp_result *res, rk_error *err) {
    (void)tag;
    (void)lp;
    (void)err;
    *(int *)ctx += mp->incumbent != NULL;
    memset(res, 0, sizeof *res);
    res->status = RK_MILP_TIME_LIMIT;
    res->bound = -INFINITY;
    return RK_OK;
}

/* When the MILP finds nothing in time, the best known schedule is returned:
 * the cheapest seed that fits (here free-asap: no recomputation, so nothing
 * is cheaper), with a gap against every node's time once, and the MILP was
 * handed an incumbent.  Below every seed's peak the greedy still answers. */
START_TEST(chain_time_limit_keeps_best) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 1, 2, 16, 16, &err), RK_OK);
    rk_schedule fa;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &fa, &err), RK_OK);
    rk_sim_result sfa;
    ck_assert_int_eq(rk_simulate(&ch, &fa, &sfa, &err), RK_OK);
    rk_checkmate_params p = params();
    int given = 0;
    p.solve = no_solution_solver;
    p.solve_ctx = &given;
    rk_schedule s;
    rk_schedule_init(&s);
    rk_checkmate_chain_info info;
    ck_assert_msg(rk_checkmate_chain_solve(&ch, sfa.peak, &p, &fa, 1, &s, &info, &err) == RK_OK, "%s", err.msg);
    ck_assert_int_eq(given, 1);
    ck_assert(s.predicted_peak <= sfa.peak && fabs(s.predicted_time - sfa.time) < 1e-9 * sfa.time);
    ck_assert(!info.optimal && info.gap == 0 && fabs(info.bound - rk_chain_baseline_time(&ch)) < 1e-9 * sfa.time);
    ck_assert_str_eq(info.source, "seed");
    ck_assert_int_eq(info.seed_index, 0);
    /* tighter than free-asap: only the greedy's schedule */
    rk_schedule gs;
    rk_schedule_init(&gs);
    ck_assert_int_eq(rk_checkmate_chain_greedy(&ch, 0, &gs, &err), RK_OK);
    ck_assert(gs.predicted_peak < sfa.peak);
    int64_t b = (gs.predicted_peak + sfa.peak) / 2;
    rk_schedule_free(&gs);
    rk_status r = rk_checkmate_chain_solve(&ch, b, &p, &fa, 1, &s, &info, &err);
    ck_assert_msg(r == RK_OK, "%s", err.msg);
    ck_assert_str_eq(info.source, "greedy");
    rk_sim_result sr;
    ck_assert_int_eq(rk_simulate(&ch, &s, &sr, &err), RK_OK);
    ck_assert(sr.peak <= b && sr.time > sfa.time && isfinite(info.gap) && info.gap > 0);
    ck_assert_int_eq(given, 2);
    rk_schedule_free(&s);
    rk_schedule_free(&fa);
    rk_chain_free(&ch);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("checkmate");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, lean_schedule);
    tcase_add_test(tc, recompute_counts);
    tcase_add_test(tc, hand_chain3);
    tcase_add_test(tc, hand_diamond);
    tcase_add_test(tc, hand_two_outputs);
    tcase_add_test(tc, hand_overhead);
    tcase_add_test(tc, hand_phantom);
    tcase_add_test(tc, random_vs_brute_force);
    tcase_add_test(tc, grid_options);
    tcase_add_test(tc, export_mps);
    tcase_add_test(tc, whole_chain);
    tcase_add_test(tc, chain_options_wrapper);
    tcase_add_test(tc, encode_schedules);
    tcase_add_test(tc, encode_stages);
    tcase_add_test(tc, greedy_schedules);
    tcase_add_test(tc, greedy_runs_pick);
    tcase_add_test(tc, chain_seeds);
    tcase_add_test(tc, solver_checkmate_monotone);
    tcase_add_test(tc, chain_time_limit_keeps_best);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
