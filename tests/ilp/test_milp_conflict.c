/* test_milp_conflict.c — Check tests of conflict analysis in the MILP search
 * (src/ilp/bb_conflict.c): on MIPLIB instances whose trees learn conflict
 * rows (dual proofs of infeasible and cut-off node LPs) and prune nodes by
 * them, the search still reaches the optimum with the optimal solution as
 * debug solution (every learned row and every pruning or tightening by the
 * pool checked, no violation), with the same nodes and iterations on 1 and
 * 2 threads; a wrong conflict row planted in the pool is caught, when added
 * and when only its propagation is checked.  Both instances also learn
 * no-goods from nodes whose bound propagation fails (over the fixings the
 * node started with), checked the same way. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp_testlib.h"
#include "rk_milp.h"

/* The "conflicts: L learned, R in the pool, P nodes pruned, T bounds
 * tightened, F learned from propagation" line of a verbose solve. */
typedef struct {
    long learned, pruned, tightened, from_prop;
    int seen;
} conflict_log;

static void on_log(void *user, rk_log_level level, const char *line) {
    (void)level;
    conflict_log *cl = user;
    const char *s = strstr(line, "conflicts: ");
    int rows;
    if (s && sscanf(s, "conflicts: %ld learned, %d in the pool, %ld nodes pruned, %ld bounds tightened, %ld learned",
                    &cl->learned, &rows, &cl->pruned, &cl->tightened, &cl->from_prop) == 5)
        cl->seen = 1;
}

static rk_lp *read_miplib(const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%s.mps.gz", name);
    return ilp_read_data_mps("miplib3", file);
}

/* Solve name with its optimal solution as debug solution: optimal, no
 * violation, conflicts learned (from LPs and from propagation) and used. */
static void check_instance(const char *name, double opt) {
    rk_lp *lp = read_miplib(name);
    double *x = ilp_read_data_solution(lp, "miplib3/solutions", name);
    long nodes[2] = {0, 0}, iters[2] = {0, 0};
    for (int t = 0; t < 2; t++) {
        conflict_log cl;
        memset(&cl, 0, sizeof cl);
        rk_milp_params p;
        rk_milp_params_default(&p);
        p.time_limit = 120;
        p.threads = t + 1;
        p.verbose = 1;
        p.log.fn = on_log;
        p.log.user = &cl;
        p.debug_solution = x;
        rk_milp_result r;
        rk_error err;
        err.msg[0] = 0;
        rk_status st = rk_milp_solve(lp, &p, &r, &err);
        ck_assert_msg(st == RK_OK, "%s: %s", name, err.msg);
        ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s: %s", name, rk_milp_status_name(r.status));
        ck_assert_msg(fabs(r.objective - opt) <= 1e-6 * fmax(1.0, fabs(opt)), "%s: %.10g vs %.10g", name, r.objective,
                      opt);
        ck_assert_msg(cl.seen && cl.learned > 0, "%s: no conflict learned", name);
        ck_assert_msg(cl.pruned + cl.tightened > 0, "%s: the conflicts pruned and tightened nothing", name);
        ck_assert_msg(cl.from_prop > 0, "%s: no conflict learned from a failed propagation", name);
        nodes[t] = r.nodes;
        iters[t] = r.iterations;
        rk_milp_result_free(&r);
    }
    ck_assert_msg(nodes[0] == nodes[1] && iters[0] == iters[1], "%s: 1 thread %ld nodes %ld iterations, 2 threads %ld %ld",
                  name, nodes[0], iters[0], nodes[1], iters[1]);
    free(x);
    rk_lp_free(lp);
}

START_TEST(test_conflict_lseu) { check_instance("lseu", 1120); }
END_TEST

START_TEST(test_conflict_mod008) { check_instance("mod008", 307); }
END_TEST

/* A planted wrong conflict row is caught, naming the step. */
static void check_planted(int fault, const char *expect) {
    rk_lp *lp = read_miplib("lseu");
    double *x = ilp_read_data_solution(lp, "miplib3/solutions", "lseu");
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.debug_solution = x;
    p.debug_fault = fault;
    rk_milp_result r;
    rk_error err;
    err.msg[0] = 0;
    rk_status st = rk_milp_solve(lp, &p, &r, &err);
    ck_assert_msg(st == RK_EFAIL, "fault %d: status %d (%s), expected a failure", fault, (int)st, err.msg);
    ck_assert_int_eq(r.status, RK_MILP_ERROR);
    ck_assert_msg(strstr(err.msg, "debug solution cut off by") && strstr(err.msg, expect), "fault %d: %s", fault,
                  err.msg);
    rk_milp_result_free(&r);
    free(x);
    rk_lp_free(lp);
}

START_TEST(test_conflict_planted) {
    check_planted(3, "conflict analysis (planted fault)");
    check_planted(4, "conflict propagation");
}
END_TEST

int main(void) {
    Suite *s = suite_create("milp_conflict");
    TCase *t = tcase_create("conflict");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_conflict_lseu);
    tcase_add_test(t, test_conflict_mod008);
    tcase_add_test(t, test_conflict_planted);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
