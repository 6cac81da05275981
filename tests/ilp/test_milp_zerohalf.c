/* test_milp_zerohalf.c — Check tests of the {0,1/2}-Chvatal-Gomory cuts
 * (src/ilp/bb_zerohalf.c): on odd cycles of pairwise conflicts the root LP
 * (all halves) is cut to the integer optimum by the cycle's {0,1/2} cut; on
 * a tight rk-Checkmate remat MILP and a MIPLIB instance the cuts are found
 * and every one is checked by the debug-solution mode against the optimal
 * solution (no violation, same nodes and iterations on 1 and 2 threads). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp_testlib.h"
#include "rk_milp.h"

/* The count of the "milp: N {0,1/2} cuts at the root" line. */
static void on_log(void *user, rk_log_level level, const char *line) {
    (void)level;
    int *zh = user;
    const char *s = strstr(line, "milp: ");
    int k;
    if (s && strstr(s, "{0,1/2} cuts at the root") && sscanf(s, "milp: %d", &k) == 1) *zh = k;
}

static rk_milp_result solve_logged(const rk_lp *lp, rk_milp_params *p, int *zh) {
    *zh = 0;
    p->verbose = 1;
    p->log.fn = on_log;
    p->log.user = zh;
    rk_milp_result r;
    rk_error err;
    err.msg[0] = 0;
    rk_status st = rk_milp_solve(lp, p, &r, &err);
    ck_assert_msg(st == RK_OK, "%s", err.msg);
    return r;
}

/* max sum x over an odd cycle of k binaries (k = 3, 5: the separator sums
 * up to 6 rows) with x_i + x_{i+1} <= 1: the LP
 * takes every x at 1/2 (k/2), the optimum is (k-1)/2; the cycle's {0,1/2}
 * cut sum x <= (k-1)/2 closes the gap at the root. */
START_TEST(test_zerohalf_odd_cycle) {
    for (int k = 3; k <= 5; k += 2) {
        rk_lp *lp = rk_lp_new();
        for (int i = 0; i < k; i++) {
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            rk_lp_add_col(lp, name, 1, 0, 1, 1);
        }
        for (int i = 0; i < k; i++) {
            char name[16];
            snprintf(name, sizeof name, "e%d", i);
            int r = rk_lp_add_row(lp, name, -INFINITY, 1);
            rk_lp_add_row_coefs(lp, r, 2, (int[]){i, (i + 1) % k}, (double[]){1, 1});
        }
        rk_lp_set_maximize(lp, 1);
        rk_milp_params p;
        rk_milp_params_default(&p);
        int zh;
        rk_milp_result r = solve_logged(lp, &p, &zh);
        ck_assert_msg(r.status == RK_MILP_OPTIMAL, "k=%d: %s", k, rk_milp_status_name(r.status));
        ck_assert_msg(fabs(r.objective - (k - 1) / 2) < 1e-9, "k=%d: %g", k, r.objective);
        ck_assert_msg(zh > 0, "k=%d: no {0,1/2} cut", k);
        ck_assert_msg(r.nodes <= 1, "k=%d: %ld nodes (the cut closes the root)", k, (long)r.nodes);
        rk_milp_result_free(&r);
        rk_lp_free(lp);
    }
}
END_TEST

/* n16_B92 (optimum 240) with its optimal schedule as the debug solution:
 * the root's {0,1/2} cuts (from the precedence and freeing rows) are all
 * checked, none cuts the schedule off; identical on 1 and 2 threads. */
START_TEST(test_zerohalf_remat_debug) {
    int zh[2] = {0, 0};
    ilp_check_remat_debug(&(ilp_remat_debug){.name = "remat_n16_B92", .optimum = 240, .node_limit = 20,
                                             .compare_threads = 1, .verbose = 1, .log_fn = on_log,
                                             .log_user = {&zh[0], &zh[1]}});
    for (int t = 0; t < 2; t++) ck_assert_msg(zh[t] > 0, "%d threads: no {0,1/2} cut at the root", t + 1);
}
END_TEST

/* A MIPLIB instance solved to its optimum with the optimal solution as the
 * debug solution, {0,1/2} cuts found at the root. */
START_TEST(test_zerohalf_miplib_debug) {
    const char *name = "p0201";
    const double opt = 7615;
    char file[64];
    snprintf(file, sizeof file, "%s.mps.gz", name);
    rk_lp *lp = ilp_read_data_mps("miplib3", file);
    double *x = ilp_read_data_solution(lp, "miplib3/solutions", name);
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.time_limit = 120;
    p.debug_solution = x;
    int zh;
    rk_milp_result r = solve_logged(lp, &p, &zh);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s: %s", name, rk_milp_status_name(r.status));
    ck_assert_msg(fabs(r.objective - opt) <= 1e-6 * fmax(1.0, fabs(opt)), "%s: %.10g", name, r.objective);
    ck_assert_msg(zh > 0, "%s: no {0,1/2} cut", name);
    rk_milp_result_free(&r);
    free(x);
    rk_lp_free(lp);
}
END_TEST

int main(void) {
    Suite *s = suite_create("milp_zerohalf");
    TCase *tc = tcase_create("zerohalf");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_zerohalf_odd_cycle);
    tcase_add_test(tc, test_zerohalf_remat_debug);
    tcase_add_test(tc, test_zerohalf_miplib_debug);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
