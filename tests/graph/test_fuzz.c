/* test_fuzz.c — every reader of user input (.rkg, .rks, Checkmate JSON,
 * MPS) on thousands of deterministically mutated files: each read either
 * succeeds or fails with RK_EINPUT and a message naming the file; never a
 * crash (run it under tools/test --sanitize for memory errors). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "rk_milp.h"

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* One mutation: truncate, flip a byte, delete a span, duplicate a span, or
 * replace a digit run with a wild number. */
static char *mutate(const char *src) {
    size_t n = strlen(src);
    char *s = malloc(2 * n + 64);
    memcpy(s, src, n + 1);
    int kind = (int)(rnd() % 6);
    size_t p = n ? rnd() % n : 0;
    switch (kind) {
    case 0: s[p] = 0; break;
    case 1: s[p] = (char)(rnd() % 95 + 32); break;
    case 2: {
        size_t len = rnd() % 16;
        if (p + len > n) len = n - p;
        memmove(s + p, s + p + len, n - p - len + 1);
        break;
    }
    case 3: {
        size_t len = rnd() % 24;
        if (p + len > n) len = n - p;
        memmove(s + p + len, s + p, n - p + 1);
        break;
    }
    case 4: {
        static const char *wild[] = {"-1", "1e308", "NaN", "99999999999999999999", "\"x\"", "null", "[]", "{}", "0"};
        const char *w = wild[rnd() % 9];
        size_t q = p;
        while (q < n && !(s[q] >= '0' && s[q] <= '9')) q++;
        if (q >= n) break;
        size_t e = q;
        while (e < n && s[e] >= '0' && s[e] <= '9') e++;
        size_t wl = strlen(w);
        memmove(s + q + wl, s + e, n - e + 1);
        memcpy(s + q, w, wl);
        break;
    }
    default: {
        /* swap two names: find two quotes */
        size_t q = p;
        while (q < n && s[q] != '"') q++;
        if (q + 2 < n) s[q + 1] = (char)('a' + rnd() % 26);
        break;
    }
    }
    return s;
}

static void check_reader_result(rk_status st, const rk_error *err, const char *path, int i) {
    ck_assert_msg(st == RK_OK || st == RK_EINPUT, "mutation %d: status %d (%s)", i, st, err->msg);
    if (st == RK_EINPUT) ck_assert_msg(strstr(err->msg, path) != NULL, "mutation %d: no file in '%s'", i, err->msg);
}

START_TEST(fuzz_chain_and_schedule) {
    rng_state = 12345;
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 1, 1, 8, 8, &err), RK_OK);
    char cpath[] = "/tmp/rkmate_fz_XXXXXX";
    int fd = mkstemp(cpath);
    close(fd);
    ck_assert_int_eq(rk_chain_write(cpath, &ch, &err), RK_OK);
    char *chain_text = fx_read_file(cpath);
    rk_schedule s;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    ck_assert_int_eq(rk_schedule_write(cpath, &ch, &s, &err), RK_OK);
    char *sched_text = fx_read_file(cpath);
    rk_schedule_free(&s);
    for (int i = 0; i < 1500; i++) {
        char *m = mutate(chain_text);
        const char *p = fx_write_temp(6, m);
        rk_chain c2;
        rk_status st = rk_chain_read(p, &c2, &err);
        check_reader_result(st, &err, p, i);
        if (st == RK_OK) {
            /* whatever was accepted must be usable */
            rk_schedule b;
            if (rk_schedule_free_asap(&c2, &b, &err) == RK_OK) {
                rk_sim_result r;
                ck_assert_int_eq(rk_simulate(&c2, &b, &r, &err), RK_OK);
                rk_schedule_free(&b);
            }
            rk_chain_free(&c2);
        }
        unlink(p);
        free(m);
        m = mutate(sched_text);
        p = fx_write_temp(6, m);
        st = rk_schedule_read(p, &ch, &s, &err);
        check_reader_result(st, &err, p, i);
        if (st == RK_OK) {
            rk_sim_result r;
            st = rk_simulate(&ch, &s, &r, &err);
            ck_assert(st == RK_OK || st == RK_EINPUT);
            rk_schedule_free(&s);
        }
        unlink(p);
        free(m);
    }
    free(chain_text);
    free(sched_text);
    unlink(cpath);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(fuzz_checkmate_import) {
    rng_state = 777;
    const char *text =
        "{\"nodes\": [{\"id\": 0, \"name\": \"a\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        " {\"id\": 1, \"name\": \"l\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 1},\n"
        " {\"id\": 2, \"name\": \"ga\", \"backward\": true, \"cost_cpu\": 2, \"cost_ram\": 10}],\n"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}, {\"source\": 0, \"target\": 2}]}\n";
    for (int i = 0; i < 1500; i++) {
        char *m = mutate(text);
        const char *p = fx_write_temp(7, m);
        rk_chain c;
        rk_error err;
        rk_status st = rk_import_checkmate(p, &c, &err);
        check_reader_result(st, &err, p, i);
        if (st == RK_OK) rk_chain_free(&c);
        unlink(p);
        free(m);
    }
}
END_TEST

START_TEST(fuzz_mps) {
    rng_state = 4242;
    const char *text = "NAME          TESTLP\n"
                       "ROWS\n"
                       " N  COST\n"
                       " L  LIM1\n"
                       " G  LIM2\n"
                       " E  MYEQN\n"
                       "COLUMNS\n"
                       "    MARKER                 'MARKER'                 'INTORG'\n"
                       "    XONE      COST         1.0   LIM1         1.0\n"
                       "    XONE      LIM2         1.0\n"
                       "    MARKER                 'MARKER'                 'INTEND'\n"
                       "    YTWO      COST         2.0   LIM1         1.0\n"
                       "    YTWO      MYEQN       -1.0\n"
                       "    ZTHREE    COST        -1.0   MYEQN        1.0\n"
                       "RHS\n"
                       "    RHS       LIM1         4.0   LIM2         1.0\n"
                       "    RHS       MYEQN        7.0\n"
                       "RANGES\n"
                       "    RNG       LIM1         2.5\n"
                       "BOUNDS\n"
                       " UP BND       XONE         4.0\n"
                       " LO BND       YTWO        -1.0\n"
                       " UP BND       YTWO         1.0\n"
                       "ENDATA\n";
    for (int i = 0; i < 1500; i++) {
        char *m = mutate(text);
        const char *p = fx_write_temp(7, m);
        rk_lp *lp = NULL;
        rk_error err;
        rk_status st = rk_mps_read(p, &lp, &err);
        check_reader_result(st, &err, p, i);
        if (st == RK_OK) {
            rk_milp_params prm;
            rk_milp_params_default(&prm);
            prm.time_limit = 5;
            rk_milp_result r;
            rk_milp_solve(lp, &prm, &r, &err);
            rk_milp_result_free(&r);
            rk_lp_free(lp);
        }
        unlink(p);
        free(m);
    }
}
END_TEST

int main(void) {
    Suite *su = suite_create("fuzz");
    TCase *t = tcase_create("readers");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, fuzz_chain_and_schedule);
    tcase_add_test(t, fuzz_checkmate_import);
    tcase_add_test(t, fuzz_mps);
    suite_add_tcase(su, t);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
