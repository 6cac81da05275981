/* test_milp_cutloop.c — Check tests of when the root cut loop (src/ilp/
 * bb_cuts.c) ends: past its first five rounds it goes on only while a round
 * lifts the bound by a tenth of the first round's gain.  On remat n16_B78
 * (the debug solution: its optimal schedule, 1 and 2 threads) the rounds go
 * past five while they gain and stop at the first round that does not; on
 * n16_B92 every round is read off the same log and held to the same rule. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilp_testlib.h"
#include "rk_milp.h"

#define MAX_ROUNDS 64

/* The root LP value and the bound after each "milp: cut round R: ...,
 * bound Z, ..." line. */
typedef struct {
    double root;
    double bound[MAX_ROUNDS];
    int rounds;
} cut_log;

static void on_log(void *user, rk_log_level level, const char *line) {
    (void)level;
    cut_log *L = user;
    const char *s = strstr(line, "milp: ");
    if (!s) return;
    const char *r = strstr(s, "root LP ");
    if (r && strstr(s, "rows,")) sscanf(r, "root LP %lf", &L->root);
    int k;
    const char *b = strstr(s, ", bound ");
    if (sscanf(s, "milp: cut round %d:", &k) == 1 && b && k == L->rounds && k < MAX_ROUNDS) {
        sscanf(b, ", bound %lf", &L->bound[k]);
        L->rounds++;
    }
}

/* The rule on a log: every round from the fifth on that was followed by
 * another gained at least a tenth of round 0's gain; returns the gain ratio
 * of the last round (to round 0's). */
static double check_rule(const cut_log *L, const char *name) {
    ck_assert_msg(L->rounds >= 1, "%s: no cut round logged", name);
    double g0 = L->bound[0] - L->root;
    ck_assert_msg(g0 > 0, "%s: the first round gained %g", name, g0);
    for (int k = 4; k + 1 < L->rounds; k++) {
        double g = L->bound[k] - L->bound[k - 1];
        ck_assert_msg(g >= 0.1 * g0, "%s: round %d gained %g (first round %g) and the loop went on", name, k, g, g0);
    }
    double gl = L->rounds > 1 ? L->bound[L->rounds - 1] - L->bound[L->rounds - 2] : g0;
    return gl / g0;
}

/* n16_B78: more than five rounds (they lift the bound), fewer than the
 * loop's cap, and the last one gained under a tenth of the first's; the
 * debug solution survives every round; 1 and 2 threads alike. */
START_TEST(test_cutloop_b78) {
    cut_log L[2];
    memset(L, 0, sizeof L);
    ilp_check_remat_debug(&(ilp_remat_debug){.name = "remat_n16_B78", .optimum = 381, .node_limit = 1,
                                             .compare_threads = 1, .verbose = 2, .log_fn = on_log,
                                             .log_user = {&L[0], &L[1]}});
    for (int t = 0; t < 2; t++) {
        ck_assert_msg(L[t].rounds > 5, "%d threads: %d rounds (the bound still rose after five)", t + 1, L[t].rounds);
        ck_assert_msg(L[t].rounds < 20, "%d threads: %d rounds (the loop's cap, not its progress rule)", t + 1,
                      L[t].rounds);
        double q = check_rule(&L[t], "n16_B78");
        ck_assert_msg(q < 0.1, "n16_B78: the last round gained %g of the first's and the loop stopped", q);
        ck_assert_msg(L[t].bound[L[t].rounds - 1] > L[t].bound[4], "%d threads: no gain past round 5", t + 1);
    }
    ck_assert_int_eq(L[0].rounds, L[1].rounds);
}
END_TEST

/* n16_B92: the same rule holds on its rounds, the debug solution too. */
START_TEST(test_cutloop_b92) {
    cut_log L;
    memset(&L, 0, sizeof L);
    ilp_check_remat_debug(&(ilp_remat_debug){.name = "remat_n16_B92", .optimum = 240, .node_limit = 1,
                                             .verbose = 2, .log_fn = on_log, .log_user = {&L, &L}});
    check_rule(&L, "n16_B92");
}
END_TEST

int main(void) {
    Suite *s = suite_create("milp_cutloop");
    TCase *tc = tcase_create("cutloop");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cutloop_b78);
    tcase_add_test(tc, test_cutloop_b92);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
