/* test_static.c — built as a fully static binary (-static): the solver core
 * links statically with Check, jansson, zlib and libgomp, and runs. */
#include <check.h>
#include <stdlib.h>

#include "rk_graph.h"

START_TEST(static_core_runs) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 2, 1, 32, 64, &err), RK_OK);
    rk_schedule s;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, s.predicted_peak);
    int threads = 0;
#pragma omp parallel reduction(+ : threads)
    threads += 1;
    ck_assert_int_ge(threads, 1);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

int main(void) {
    Suite *s = suite_create("static");
    TCase *t = tcase_create("core");
    tcase_add_test(t, static_core_runs);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
