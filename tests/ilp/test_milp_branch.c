/* test_milp_branch.c — Check tests of the branching of the MILP search
 * (src/ilp/bb_branch.c): strong-branching children are propagated before
 * their LP, and on MIPLIB instances whose children propagation refutes the
 * search still reaches the optimum with the optimal solution as debug
 * solution (every propagation of a child that holds it checked), with the
 * same nodes and iterations on 1 and 2 threads; a wrong bound planted in a
 * child's propagation is caught and named. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp_testlib.h"
#include "rk_milp.h"

/* The "strong branching: C children, R refuted by propagation" line of a
 * verbose solve. */
typedef struct {
    long children, refuted;
    int seen;
} sb_log;

static void on_log(void *user, rk_log_level level, const char *line) {
    (void)level;
    sb_log *sl = user;
    const char *s = strstr(line, "strong branching: ");
    if (s && sscanf(s, "strong branching: %ld children, %ld refuted by propagation", &sl->children, &sl->refuted) == 2)
        sl->seen = 1;
}

static rk_lp *read_miplib(const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%s.mps.gz", name);
    return ilp_read_data_mps("miplib3", file);
}

static double *read_solution(const rk_lp *lp, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/miplib3/solutions/%s.sol", ilp_testdata(), name);
    double *x = NULL;
    rk_error err;
    err.msg[0] = 0;
    ck_assert_msg(rk_milp_read_solution(path, lp, &x, &err) == RK_OK, "%s", err.msg);
    return x;
}

/* Solve name with its optimal solution as debug solution on 1 and 2
 * threads: optimal, no violation, children refuted by propagation, the same
 * search. */
static void check_instance(const char *name, double opt) {
    rk_lp *lp = read_miplib(name);
    double *x = read_solution(lp, name);
    long nodes[2] = {0, 0}, iters[2] = {0, 0};
    for (int t = 0; t < 2; t++) {
        sb_log sl;
        memset(&sl, 0, sizeof sl);
        rk_milp_params p;
        rk_milp_params_default(&p);
        p.time_limit = 120;
        p.threads = t + 1;
        p.verbose = 1;
        p.log.fn = on_log;
        p.log.user = &sl;
        p.debug_solution = x;
        rk_milp_result r;
        rk_error err;
        err.msg[0] = 0;
        rk_status st = rk_milp_solve(lp, &p, &r, &err);
        ck_assert_msg(st == RK_OK, "%s: %s", name, err.msg);
        ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s: %s", name, rk_milp_status_name(r.status));
        ck_assert_msg(fabs(r.objective - opt) <= 1e-6 * fmax(1.0, fabs(opt)), "%s: %.10g vs %.10g", name, r.objective,
                      opt);
        ck_assert_msg(sl.seen && sl.children > 0, "%s: no strong branching", name);
        ck_assert_msg(sl.refuted > 0, "%s: propagation refuted no strong-branching child (%ld children)", name,
                      sl.children);
        nodes[t] = r.nodes;
        iters[t] = r.iterations;
        rk_milp_result_free(&r);
    }
    ck_assert_msg(nodes[0] == nodes[1] && iters[0] == iters[1], "%s: 1 thread %ld nodes %ld iterations, 2 threads %ld %ld",
                  name, nodes[0], iters[0], nodes[1], iters[1]);
    free(x);
    rk_lp_free(lp);
}

START_TEST(test_branch_mod008) { check_instance("mod008", 307); }
END_TEST

START_TEST(test_branch_misc03) { check_instance("misc03", 3360); }
END_TEST

/* A wrong bound planted in the propagation of the first strong-branching
 * child that holds the debug solution is caught, naming the step; without
 * the debug solution the fault does nothing. */
START_TEST(test_branch_planted_fault) {
    rk_lp *lp = read_miplib("misc03");
    double *x = read_solution(lp, "misc03");
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.debug_solution = x;
    p.debug_fault = 5;
    rk_milp_result r;
    rk_error err;
    err.msg[0] = 0;
    rk_status st = rk_milp_solve(lp, &p, &r, &err);
    ck_assert_msg(st == RK_EFAIL, "status %d (%s), expected a failure", (int)st, err.msg);
    ck_assert_int_eq(r.status, RK_MILP_ERROR);
    ck_assert_msg(strstr(err.msg, "debug solution cut off by") != NULL, "message: %s", err.msg);
    ck_assert_msg(strstr(err.msg, "strong-branching propagation (planted fault)") != NULL, "message: %s", err.msg);
    rk_milp_result_free(&r);
    p.debug_solution = NULL;
    ck_assert_int_eq(rk_milp_solve(lp, &p, &r, &err), RK_OK);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    rk_milp_result_free(&r);
    free(x);
    rk_lp_free(lp);
}
END_TEST

int main(void) {
    Suite *s = suite_create("milp_branch");
    TCase *t = tcase_create("branch");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_branch_mod008);
    tcase_add_test(t, test_branch_misc03);
    tcase_add_test(t, test_branch_planted_fault);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
