/* test_milp_clique.c — Check tests of the clique rows (src/ilp/bb_clique.c):
 * pairs of binaries that one row forbids together become set-packing rows
 * that tighten the root LP (a knapsack, Checkmate's freeing row); a
 * set-packing row already there is not added again; on a tight remat MILP
 * and a MIPLIB instance the rows are added and checked by the
 * debug-solution mode against the optimal solution (no violation, same
 * nodes and iterations on 1 and 2 threads). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp_testlib.h"
#include "rk_milp.h"

typedef struct {
    int cliques;    /* "milp: N clique rows added, D row sides they imply dropped" */
    int dropped;
    double root_lp; /* "... root LP V, ..." (as printed: the problem's sense) */
} clq_log;

static void on_log(void *user, rk_log_level level, const char *line) {
    (void)level;
    clq_log *L = user;
    const char *s = strstr(line, "milp: ");
    int k;
    int d;
    if (s && strstr(s, "clique rows added") && sscanf(s, "milp: %d clique rows added, %d", &k, &d) == 2) {
        L->cliques = k;
        L->dropped = d;
    }
    const char *r = strstr(line, "root LP ");
    if (r) L->root_lp = strtod(r + 8, NULL);
}

static rk_milp_result solve_logged(const rk_lp *lp, rk_milp_params *p, clq_log *L) {
    L->cliques = L->dropped = 0;
    L->root_lp = NAN;
    p->verbose = 2;
    p->log.fn = on_log;
    p->log.user = L;
    rk_milp_result r;
    rk_error err;
    err.msg[0] = 0;
    rk_status st = rk_milp_solve(lp, p, &r, &err);
    ck_assert_msg(st == RK_OK, "%s", err.msg);
    return r;
}

/* max sum a_j x_j over binaries with one row of coefficients a and side ub */
static rk_lp *one_row(int k, const double *obj, const double *a, double lb, double ub) {
    rk_lp *lp = rk_lp_new();
    int idx[8];
    for (int j = 0; j < k; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        idx[j] = rk_lp_add_col(lp, name, obj[j], 0, 1, 1);
    }
    int r = rk_lp_add_row(lp, "r", lb, ub);
    rk_lp_add_row_coefs(lp, r, k, idx, a);
    rk_lp_set_maximize(lp, 1);
    return lp;
}

/* 5x + 4y + 3z <= 6: every pair passes 6, so x + y + z <= 1; the LP
 * (x = 1, y = 1/4: 6) becomes the integer optimum 5 before any cut. */
START_TEST(test_clique_knapsack) {
    rk_lp *lp = one_row(3, (double[]){5, 4, 3}, (double[]){5, 4, 3}, -INFINITY, 6);
    rk_milp_params p;
    rk_milp_params_default(&p);
    clq_log L;
    rk_milp_result r = solve_logged(lp, &p, &L);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s", rk_milp_status_name(r.status));
    ck_assert(fabs(r.objective - 5) < 1e-9);
    ck_assert_int_eq(L.cliques, 1);
    ck_assert_int_eq(L.dropped, 0); /* the clique does not imply 5x + 4y + 3z <= 6 */
    ck_assert_msg(fabs(L.root_lp - 5) < 1e-6, "root LP %g", L.root_lp);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* Checkmate's freeing row -R + S + 2F <= 1 (F: free after R's op; S: kept
 * for the next stage): F <= R and F + S <= 1 as cliques (R complemented),
 * whose sum is the row (dropped);
 * max 3F - 2R + S has LP optimum 1.5 (F = 1/2, R = 0, S = 0) without them
 * and 1 (the integer optimum: F = R = 1, or S = 1) with them. */
START_TEST(test_clique_freeing_row) {
    /* columns R, S, F */
    rk_lp *lp = one_row(3, (double[]){-2, 1, 3}, (double[]){-1, 1, 2}, -INFINITY, 1);
    rk_milp_params p;
    rk_milp_params_default(&p);
    clq_log L;
    rk_milp_result r = solve_logged(lp, &p, &L);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s", rk_milp_status_name(r.status));
    ck_assert(fabs(r.objective - 1) < 1e-9);
    ck_assert_int_eq(L.cliques, 2);
    ck_assert_int_eq(L.dropped, 1); /* the row is the sum of its two cliques */
    ck_assert_msg(fabs(L.root_lp - 1) < 1e-6, "root LP %g", L.root_lp);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* A set-packing row is its own clique: nothing added, the row kept (the
 * optimum stays 1); a row with slack
 * for every pair (x + y + z <= 2) has none. */
START_TEST(test_clique_none) {
    rk_lp *lp = one_row(3, (double[]){1, 1, 1}, (double[]){1, 1, 1}, -INFINITY, 1);
    rk_milp_params p;
    rk_milp_params_default(&p);
    clq_log L;
    rk_milp_result r = solve_logged(lp, &p, &L);
    ck_assert(r.status == RK_MILP_OPTIMAL && fabs(r.objective - 1) < 1e-9);
    ck_assert_int_eq(L.cliques, 0);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
    lp = one_row(3, (double[]){1, 1, 1}, (double[]){1, 1, 1}, -INFINITY, 2);
    r = solve_logged(lp, &p, &L);
    ck_assert(r.status == RK_MILP_OPTIMAL && fabs(r.objective - 2) < 1e-9);
    ck_assert_int_eq(L.cliques, 0);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* n16_B92 (optimum 240) with its optimal schedule as the debug solution:
 * the clique rows from the freeing rows are added and checked (a presolve
 * stage), no later step cuts the schedule off; identical on 1 and 2
 * threads. */
START_TEST(test_clique_remat_debug) {
    clq_log L[2] = {{0, 0, NAN}, {0, 0, NAN}};
    ilp_check_remat_debug(&(ilp_remat_debug){.name = "remat_n16_B92", .optimum = 240, .node_limit = 20,
                                             .compare_threads = 1, .verbose = 2, .log_fn = on_log,
                                             .log_user = {&L[0], &L[1]}});
    for (int t = 0; t < 2; t++) ck_assert_msg(L[t].cliques > 100, "%d threads: %d clique rows", t + 1, L[t].cliques);
}
END_TEST

/* misc03 (optimum 3360) solved with its optimal solution as the debug
 * solution, clique rows added. */
START_TEST(test_clique_miplib_debug) {
    rk_lp *lp = ilp_read_data_mps("miplib3", "misc03.mps.gz");
    double *x = ilp_read_data_solution(lp, "miplib3/solutions", "misc03");
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.time_limit = 120;
    p.debug_solution = x;
    clq_log L;
    rk_milp_result r = solve_logged(lp, &p, &L);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "misc03: %s", rk_milp_status_name(r.status));
    ck_assert_msg(fabs(r.objective - 3360) < 1e-6, "misc03: %.10g", r.objective);
    ck_assert_int_gt(L.cliques, 0);
    rk_milp_result_free(&r);
    free(x);
    rk_lp_free(lp);
}
END_TEST

int main(void) {
    Suite *s = suite_create("milp_clique");
    TCase *tc = tcase_create("clique");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_clique_knapsack);
    tcase_add_test(tc, test_clique_freeing_row);
    tcase_add_test(tc, test_clique_none);
    tcase_add_test(tc, test_clique_remat_debug);
    tcase_add_test(tc, test_clique_miplib_debug);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
