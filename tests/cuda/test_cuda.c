/* test_cuda.c — the CUDA runtime pieces on a real GPU; exits 77 (meson's
 * skip) when no GPU is present. */
#include <check.h>
#include <stdlib.h>

#include "rk_cuda.h"

START_TEST(compare_kernel) {
    enum { N = 100003 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++) a[i] = b[i] = 0.5 * i;
    b[17] += 1.0;
    b[N - 1] -= 0.25;
    rk_cuda_compare_result r;
    char msg[256];
    ck_assert_msg(rk_cuda_compare_host(a, b, N, 8, &r, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(r.n_different, 2);
    ck_assert(r.max_abs_diff == 1.0);
    float *fa = malloc(N * sizeof *fa), *fb = malloc(N * sizeof *fb);
    for (int i = 0; i < N; i++) fa[i] = fb[i] = (float)i;
    ck_assert_int_eq(rk_cuda_compare_host(fa, fb, N, 4, &r, msg, sizeof msg), 0);
    ck_assert_int_eq(r.n_different, 0);
    free(a);
    free(b);
    free(fa);
    free(fb);
}
END_TEST

START_TEST(memory_and_timer) {
    int64_t used, total;
    char msg[256];
    ck_assert_msg(rk_cuda_memory(&used, &total, msg, sizeof msg) == 0, "%s", msg);
    ck_assert(total > 0 && used >= 0 && used <= total);
    rk_cuda_timer *t = rk_cuda_timer_new();
    ck_assert(t != NULL);
    double us = -1;
    ck_assert_int_eq(rk_cuda_timer_start(t), 0);
    ck_assert_int_eq(rk_cuda_timer_stop(t, &us), 0);
    ck_assert(us >= 0);
    rk_cuda_timer_free(t);
    rk_cuda_device d;
    ck_assert_int_eq(rk_cuda_device_info(0, &d, msg, sizeof msg), 0);
    ck_assert(d.major >= 7);
}
END_TEST

int main(void) {
    if (rk_cuda_device_count() == 0) return 77;
    Suite *s = suite_create("cuda");
    TCase *t = tcase_create("core");
    tcase_add_test(t, compare_kernel);
    tcase_add_test(t, memory_and_timer);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
