/* test_mps.c — Check tests of the MPS reader and writer (src/ilp/mps.c):
 * every rule of the format (fixed and free fields, RANGES signs, every
 * BOUNDS type, MARKER integers, OBJSENSE, objective constant, gzip), write →
 * read round trips that must be identical (built problems, every netlib and
 * MIPLIB file of tests/data), and the malformed files of tests/data/mps_bad
 * rejected with the right line number (EXPECTED.tsv lists them). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ilp_testlib.h"
#include "lp_internal.h"
#include "rk_milp.h"

#define INF INFINITY

/* a temporary path unique to this process */
static void tmp_path(char *buf, size_t n, const char *tag) {
    const char *t = getenv("TMPDIR");
    snprintf(buf, n, "%s/rk_test_mps_%ld_%s", t ? t : "/tmp", (long)getpid(), tag);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static rk_lp *read_text(const char *text) {
    char path[512];
    tmp_path(path, sizeof path, "in.mps");
    write_text(path, text);
    rk_lp *lp = NULL;
    rk_error err;
    rk_status st = rk_mps_read(path, &lp, &err);
    ck_assert_msg(st == RK_OK, "reading: %s", err.msg);
    unlink(path);
    return lp;
}

static int same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Exact equality of two problems: names, bounds, objective, integrality,
 * sense, constant and every matrix entry. */
static void assert_same_lp(const rk_lp *a, const rk_lp *b) {
    ck_assert_int_eq(a->n, b->n);
    ck_assert_int_eq(a->m, b->m);
    ck_assert_int_eq(a->maximize, b->maximize);
    ck_assert(same_double(a->obj_const, b->obj_const));
    for (int j = 0; j < a->n; j++) {
        ck_assert_str_eq(a->col_name[j], b->col_name[j]);
        ck_assert_msg(same_double(a->obj[j], b->obj[j]), "obj of %s", a->col_name[j]);
        ck_assert_msg(same_double(a->col_lb[j], b->col_lb[j]), "lb of %s: %.17g vs %.17g", a->col_name[j],
                      a->col_lb[j], b->col_lb[j]);
        ck_assert_msg(same_double(a->col_ub[j], b->col_ub[j]), "ub of %s: %.17g vs %.17g", a->col_name[j],
                      a->col_ub[j], b->col_ub[j]);
        ck_assert_int_eq(a->is_int[j] != 0, b->is_int[j] != 0);
    }
    for (int i = 0; i < a->m; i++) {
        ck_assert_str_eq(a->row_name[i], b->row_name[i]);
        ck_assert_msg(same_double(a->row_lb[i], b->row_lb[i]), "row lb of %s", a->row_name[i]);
        ck_assert_msg(same_double(a->row_ub[i], b->row_ub[i]), "row ub of %s", a->row_name[i]);
    }
    lp_csc A, B;
    ck_assert_int_eq(lp_matrix(a, &A), 0);
    ck_assert_int_eq(lp_matrix(b, &B), 0);
    ck_assert_int_eq((int)A.nnz, (int)B.nnz);
    for (int j = 0; j <= a->n; j++) ck_assert_int_eq((int)A.start[j], (int)B.start[j]);
    for (long p = 0; p < A.nnz; p++) {
        ck_assert_int_eq(A.index[p], B.index[p]);
        ck_assert(A.value[p] == B.value[p]);
    }
}

static void round_trip(const rk_lp *lp) {
    char path[512];
    tmp_path(path, sizeof path, "rt.mps");
    rk_error err;
    ck_assert_msg(rk_mps_write(path, lp, &err) == RK_OK, "write: %s", err.msg);
    rk_lp *back = NULL;
    ck_assert_msg(rk_mps_read(path, &back, &err) == RK_OK, "read back: %s", err.msg);
    assert_same_lp(lp, back);
    rk_lp_free(back);
    unlink(path);
}

static int col_of(const rk_lp *lp, const char *name) {
    for (int j = 0; j < lp->n; j++)
        if (strcmp(lp->col_name[j], name) == 0) return j;
    ck_abort_msg("no column %s", name);
    return -1;
}

static int row_of(const rk_lp *lp, const char *name) {
    for (int i = 0; i < lp->m; i++)
        if (strcmp(lp->row_name[i], name) == 0) return i;
    ck_abort_msg("no row %s", name);
    return -1;
}

static double coef(const rk_lp *lp, const char *row, const char *col) {
    lp_csc A;
    ck_assert_int_eq(lp_matrix(lp, &A), 0);
    int i = row_of(lp, row), j = col_of(lp, col);
    for (long p = A.start[j]; p < A.start[j + 1]; p++)
        if (A.index[p] == i) return A.value[p];
    return 0;
}

/* ------------------------------------------------------------ reader */

START_TEST(test_free_format_rules) {
    rk_lp *lp = read_text("* a comment\n"
                          "NAME  rules\n"
                          "OBJSENSE\n"
                          "    MAX\n"
                          "ROWS\n"
                          " N  obj\n"
                          " E  e1\n"
                          " E  e2\n"
                          " E  e3\n"
                          " L  l1\n"
                          " G  g1\n"
                          " N  free\n"
                          "COLUMNS\n"
                          "    x  obj  1  e1  1\n"
                          "    x  e2  2  e3  3\n"
                          "    x  l1  4  g1  5\n"
                          "    x  free  6\n"
                          "    MARKER  'MARKER'  'INTORG'\n"
                          "    i1  obj  2  l1  1\n"
                          "    i2  obj  3  g1  1\n"
                          "    MARKER  'MARKER'  'INTEND'\n"
                          "    up  obj  1\n"
                          "    upneg  obj  1\n"
                          "    loneg  obj  1\n"
                          "    fx  obj  1\n"
                          "    fr  obj  1\n"
                          "    mi  obj  1\n"
                          "    pl  obj  1\n"
                          "    bv  obj  1\n"
                          "    li  obj  1\n"
                          "    ui  obj  1\n"
                          "    upneglo  obj  1\n"
                          "RHS\n"
                          "    RHS  obj  -7.5  e1  10\n"
                          "    RHS  e2  20  e3  30\n"
                          "    RHS  l1  40  g1  50\n"
                          "RANGES\n"
                          "    RNG  e1  4  e2  -4\n"
                          "    RNG  l1  -3  g1  -2\n"
                          "BOUNDS\n"
                          " UP BND up 4\n"
                          " UP BND upneg -2\n"
                          " LO BND loneg -3\n"
                          " FX BND fx 2.5\n"
                          " FR BND fr\n"
                          " MI BND mi\n"
                          " UP BND pl 3\n"
                          " PL BND pl\n"
                          " BV BND bv\n"
                          " LI BND li -4\n"
                          " UI BND ui 9\n"
                          " LO BND upneglo 0\n"
                          " UP BND upneglo -1\n"
                          " UP BND i2 1e30\n"
                          "ENDATA\n");
    ck_assert_int_eq(lp->maximize, 1);
    ck_assert_double_eq(lp->obj_const, 7.5); /* minus the RHS of the objective */
    ck_assert_int_eq(lp->m, 6);              /* the objective is not a row; further N rows are kept free */
    int i;
    i = row_of(lp, "e1"); ck_assert_double_eq(lp->row_lb[i], 10); ck_assert_double_eq(lp->row_ub[i], 14);
    i = row_of(lp, "e2"); ck_assert_double_eq(lp->row_lb[i], 16); ck_assert_double_eq(lp->row_ub[i], 20);
    i = row_of(lp, "e3"); ck_assert_double_eq(lp->row_lb[i], 30); ck_assert_double_eq(lp->row_ub[i], 30);
    i = row_of(lp, "l1"); ck_assert_double_eq(lp->row_lb[i], 37); ck_assert_double_eq(lp->row_ub[i], 40);
    i = row_of(lp, "g1"); ck_assert_double_eq(lp->row_lb[i], 50); ck_assert_double_eq(lp->row_ub[i], 52);
    i = row_of(lp, "free"); ck_assert(lp->row_lb[i] == -INF && lp->row_ub[i] == INF);
    ck_assert_double_eq(coef(lp, "e3", "x"), 3);
    ck_assert_double_eq(coef(lp, "free", "x"), 6);
    int j;
    j = col_of(lp, "x"); ck_assert_double_eq(lp->obj[j], 1); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == INF);
    ck_assert(!lp->is_int[j]);
    j = col_of(lp, "i1"); ck_assert(lp->is_int[j]); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == 1);
    j = col_of(lp, "i2"); ck_assert(lp->is_int[j]); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == INF);
    j = col_of(lp, "up"); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == 4);
    j = col_of(lp, "upneg"); ck_assert(lp->col_lb[j] == -INF && lp->col_ub[j] == -2);
    j = col_of(lp, "loneg"); ck_assert(lp->col_lb[j] == -3 && lp->col_ub[j] == INF);
    j = col_of(lp, "fx"); ck_assert(lp->col_lb[j] == 2.5 && lp->col_ub[j] == 2.5);
    j = col_of(lp, "fr"); ck_assert(lp->col_lb[j] == -INF && lp->col_ub[j] == INF);
    j = col_of(lp, "mi"); ck_assert(lp->col_lb[j] == -INF && lp->col_ub[j] == INF);
    j = col_of(lp, "pl"); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == INF);
    j = col_of(lp, "bv"); ck_assert(lp->is_int[j]); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == 1);
    j = col_of(lp, "li"); ck_assert(lp->is_int[j]); ck_assert(lp->col_lb[j] == -4 && lp->col_ub[j] == INF);
    j = col_of(lp, "ui"); ck_assert(lp->is_int[j]); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == 9);
    j = col_of(lp, "upneglo"); ck_assert(lp->col_lb[j] == 0 && lp->col_ub[j] == -1); /* lower bound was set */
    round_trip(lp);
    rk_lp_free(lp);
}
END_TEST

/* One fixed-MPS line: fields start at columns 2, 5, 15, 25, 40, 50. */
static void fixed_line(char *out, size_t cap, const char *f1, const char *f2, const char *f3, const char *f4,
                       const char *f5, const char *f6) {
    char line[128];
    memset(line, ' ', sizeof line);
    const char *f[6] = {f1, f2, f3, f4, f5, f6};
    const int at[6] = {1, 4, 14, 24, 39, 49};
    int end = 0;
    for (int k = 0; k < 6; k++) {
        if (!f[k]) continue;
        size_t l = strlen(f[k]);
        memcpy(line + at[k], f[k], l);
        end = at[k] + (int)l;
    }
    line[end] = 0;
    strncat(out, line, cap - strlen(out) - 2);
    strcat(out, "\n");
}

START_TEST(test_fixed_format_names_with_spaces) {
    /* fixed MPS: fields at columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61 */
    char text[4096] = "NAME          FIXED\nROWS\n N  COST\n L  LIM 1\n G  MY ROW\nCOLUMNS\n";
    size_t cap = sizeof text;
    fixed_line(text, cap, NULL, "X ONE", "COST", "1.", "LIM 1", "1.");
    fixed_line(text, cap, NULL, "X ONE", "MY ROW", "2.", NULL, NULL);
    fixed_line(text, cap, NULL, "Y", "COST", "2.", "MY ROW", "1.");
    strcat(text, "RHS\n");
    fixed_line(text, cap, NULL, NULL, "LIM 1", "4.", "MY ROW", "1.");
    strcat(text, "BOUNDS\n");
    fixed_line(text, cap, "UP", "BND 1", "X ONE", "3.", NULL, NULL);
    strcat(text, "ENDATA\n");
    rk_lp *lp = read_text(text);
    ck_assert_int_eq(lp->n, 2);
    ck_assert_int_eq(lp->m, 2);
    ck_assert_double_eq(coef(lp, "MY ROW", "X ONE"), 2);
    ck_assert_double_eq(coef(lp, "MY ROW", "Y"), 1);
    int i = row_of(lp, "LIM 1");
    ck_assert_double_eq(lp->row_ub[i], 4);
    i = row_of(lp, "MY ROW");
    ck_assert_double_eq(lp->row_lb[i], 1);
    int j = col_of(lp, "X ONE");
    ck_assert_double_eq(lp->col_ub[j], 3);
    /* such names cannot be written in free MPS: a clear error, no file */
    char path[512];
    tmp_path(path, sizeof path, "spaces.mps");
    unlink(path);
    rk_error err;
    ck_assert_int_eq(rk_mps_write(path, lp, &err), RK_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "spaces"));
    ck_assert_int_ne(access(path, F_OK), 0);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_objsense_same_line_and_min) {
    rk_lp *lp = read_text("NAME t\nOBJSENSE MAXIMIZE\nROWS\n N o\nCOLUMNS\n x o 1\nENDATA\n");
    ck_assert_int_eq(lp->maximize, 1);
    rk_lp_free(lp);
    lp = read_text("NAME t\nOBJSENSE\n    MIN\nROWS\n N o\nCOLUMNS\n x o 1\nENDATA\n");
    ck_assert_int_eq(lp->maximize, 0);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_missing_file) {
    rk_lp *lp = NULL;
    rk_error err;
    ck_assert_int_eq(rk_mps_read("/nonexistent/dir/x.mps", &lp, &err), RK_EINPUT);
    ck_assert_ptr_null(lp);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/dir/x.mps"));
}
END_TEST

/* every file of tests/data/mps_bad/EXPECTED.tsv: RK_EINPUT, the message names
 * the file and the line, and says what was wrong */
START_TEST(test_malformed_files) {
    char list[1024];
    snprintf(list, sizeof list, "%s/mps_bad/EXPECTED.tsv", ilp_testdata());
    FILE *f = fopen(list, "r");
    ck_assert_msg(f != NULL, "cannot open %s", list);
    char line[1024];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\r\n")] = 0;
        char *name = strtok(line, "\t");
        char *ln = strtok(NULL, "\t");
        char *text = strtok(NULL, "\t");
        ck_assert(name && ln && text);
        char path[1024];
        snprintf(path, sizeof path, "%s/mps_bad/%s", ilp_testdata(), name);
        rk_lp *lp = NULL;
        rk_error err;
        err.msg[0] = 0;
        rk_status st = rk_mps_read(path, &lp, &err);
        ck_assert_msg(st == RK_EINPUT, "%s: accepted (status %d)", name, st);
        ck_assert_ptr_null(lp);
        char want[64];
        snprintf(want, sizeof want, ": line %s:", ln);
        ck_assert_msg(strstr(err.msg, path) != NULL, "%s: message does not name the file: %s", name, err.msg);
        ck_assert_msg(strstr(err.msg, want) != NULL, "%s: expected line %s in: %s", name, ln, err.msg);
        ck_assert_msg(strstr(err.msg, text) != NULL, "%s: expected '%s' in: %s", name, text, err.msg);
        count++;
    }
    fclose(f);
    ck_assert_int_ge(count, 10);
}
END_TEST

/* ------------------------------------------------------------ writer */

START_TEST(test_round_trip_built) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "a", 0.1, -INF, INF, 0);
    rk_lp_add_col(lp, "b", -1.0 / 3.0, -2.5, 7.25, 1);
    rk_lp_add_col(lp, "c", 0, 0, 1, 1);
    rk_lp_add_col(lp, "d", 1e-300, -INF, -3, 0);
    rk_lp_add_col(lp, "e", 2, 0, INF, 1);
    rk_lp_add_col(lp, "f", 3, 4, 4, 0);
    rk_lp_add_col(lp, "g", 0, 0, -1, 0); /* empty domain: still written as is */
    rk_lp_add_col(lp, "h", 0, 0, INF, 0); /* no entries at all */
    rk_lp_add_row(lp, "r_eq", 1.0 / 7.0, 1.0 / 7.0);
    rk_lp_add_row(lp, "r_le", -INF, 3);
    rk_lp_add_row(lp, "r_ge", -2, INF);
    rk_lp_add_row(lp, "r_rng", 0.1, 0.7);       /* 0.1 + 0.6 != 0.7 in binary */
    rk_lp_add_row(lp, "r_rng2", -1e10, 3.3e-7);
    rk_lp_add_row(lp, "r_free", -INF, INF);
    int cols[5] = {0, 1, 2, 3, 4};
    double vals[5] = {1.0 / 3.0, -2e-12, 3e12, M_PI, -1};
    for (int i = 0; i < 6; i++) ck_assert_int_eq(rk_lp_add_row_coefs(lp, i, 5 - (i % 3), cols, vals), RK_OK);
    rk_lp_add_col(lp, "k", 0, 0, 1, 0);
    rk_lp_set_coef(lp, 3, 8, 0.5);
    rk_lp_set_obj_const(lp, -12.125);
    rk_lp_set_maximize(lp, 1);
    round_trip(lp);
    rk_lp_set_maximize(lp, 0);
    rk_lp_set_obj_const(lp, 0);
    round_trip(lp);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_round_trip_builder_names) {
    /* generated names (C0, R0, ...) and an empty problem */
    rk_lp *lp = rk_lp_new();
    round_trip(lp);
    rk_lp_add_col(lp, NULL, 1, 0, 10, 1);
    rk_lp_add_row(lp, NULL, 1, INF);
    rk_lp_set_coef(lp, 0, 0, 2);
    round_trip(lp);
    rk_lp_free(lp);
}
END_TEST

static void round_trip_dir(const char *dir) {
    char list[1024];
    snprintf(list, sizeof list, "%s/%s/OPTIMA.tsv", ilp_testdata(), dir);
    FILE *f = fopen(list, "r");
    ck_assert_msg(f != NULL, "cannot open %s", list);
    char line[1024];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *name = strtok(line, "\t \n");
        if (!name) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s.mps.gz", ilp_testdata(), dir, name);
        rk_lp *lp = NULL;
        rk_error err;
        ck_assert_msg(rk_mps_read(path, &lp, &err) == RK_OK, "%s", err.msg);
        int spaces = 0;
        for (int i = 0; i < lp->m; i++) spaces |= strchr(lp->row_name[i], ' ') != NULL;
        for (int j = 0; j < lp->n; j++) spaces |= strchr(lp->col_name[j], ' ') != NULL;
        if (!spaces) round_trip(lp);
        rk_lp_free(lp);
        count++;
    }
    fclose(f);
    ck_assert_int_gt(count, 0);
}

START_TEST(test_round_trip_netlib) { round_trip_dir("netlib"); }
END_TEST

START_TEST(test_round_trip_miplib) { round_trip_dir("miplib3"); }
END_TEST

START_TEST(test_miplib_sizes) {
    /* spot checks against the MIPLIB 3 catalogue (rows without the objective) */
    struct { const char *name; int rows, cols, ints; } t[] = {
        {"p0033", 16, 33, 33}, {"flugpl", 18, 18, 11}, {"vpm1", 234, 378, 168}, {"dcmulti", 290, 548, 75},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/miplib3/%s.mps.gz", ilp_testdata(), t[k].name);
        rk_lp *lp = NULL;
        rk_error err;
        ck_assert_msg(rk_mps_read(path, &lp, &err) == RK_OK, "%s", err.msg);
        ck_assert_int_eq(lp->m, t[k].rows);
        ck_assert_int_eq(lp->n, t[k].cols);
        ck_assert_int_eq(rk_lp_num_integers(lp), t[k].ints);
        rk_lp_free(lp);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("mps");
    TCase *tc = tcase_create("mps");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_free_format_rules);
    tcase_add_test(tc, test_fixed_format_names_with_spaces);
    tcase_add_test(tc, test_objsense_same_line_and_min);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_malformed_files);
    tcase_add_test(tc, test_round_trip_built);
    tcase_add_test(tc, test_round_trip_builder_names);
    tcase_add_test(tc, test_round_trip_netlib);
    tcase_add_test(tc, test_round_trip_miplib);
    tcase_add_test(tc, test_miplib_sizes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
