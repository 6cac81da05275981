/* test_lp.c — Check tests of the LP engine of src/ilp: the rk_lp builder,
 * the simplex (hand-built LPs, infeasible / unbounded detection, warm
 * starts after bound changes, cutoff, added rows, basis round trip) and the
 * LP-only solve with presolve on every netlib LP of tests/data/netlib
 * (objective within 1e-6 relative of OPTIMA.tsv, solution feasible row by
 * row within 1e-6). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp_internal.h"
#include "ilp_testlib.h"
#include "rk_milp.h"
#include "simplex.h"

#define INF INFINITY

/* ------------------------------------------------------------ helpers */

static double rel_err(double a, double b) { return fabs(a - b) / fmax(1.0, fabs(b)); }

static rk_milp_result solve_lp_only(const rk_lp *lp) {
    rk_milp_params p;
    memset(&p, 0, sizeof p);
    p.lp_only = 1;
    p.gap = 1e-6;
    p.known_bound = -INF;
    rk_milp_result r;
    rk_error err;
    ck_assert_int_eq(lp_solve_relaxation(lp, &p, &r, &err), RK_OK);
    return r;
}

/* engine solve from scratch; returns status, fills *obj */
static rk_lp_status solve_engine(const rk_lp *lp, double *obj) {
    rk_error err;
    spx *s = spx_new(lp, &err);
    ck_assert_ptr_nonnull(s);
    rk_lp_status st = spx_solve(s, NULL);
    if (obj) *obj = spx_objective(s);
    if (st == RK_LP_OPTIMAL) {
        double *x = malloc(((size_t)lp->n + 1) * sizeof *x);
        spx_get_x(s, x);
        ck_assert_double_le(ilp_max_violation(lp, x, 0), 1e-6);
        free(x);
    }
    spx_free(s);
    return st;
}

static rk_lp *read_netlib(const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%.64s.mps.gz", name);
    return ilp_read_data_mps("netlib", file);
}

/* ------------------------------------------------------------ builder */

START_TEST(test_builder) {
    rk_lp *lp = rk_lp_new();
    ck_assert_int_eq(rk_lp_add_col(lp, "x", 1.0, 0.0, 4.0, 0), 0);
    ck_assert_int_eq(rk_lp_add_col(lp, NULL, 2.0, -INF, INF, 1), 1);
    ck_assert_int_eq(rk_lp_add_row(lp, "r", 1.0, INF), 0);
    ck_assert_int_eq(rk_lp_add_row(lp, NULL, -INF, 3.0), 1);
    ck_assert_str_eq(rk_lp_col_name(lp, 0), "x");
    ck_assert_str_eq(rk_lp_col_name(lp, 1), "C1");
    ck_assert_str_eq(rk_lp_row_name(lp, 1), "R1");
    ck_assert_ptr_null(rk_lp_col_name(lp, 2));
    ck_assert_int_eq(rk_lp_num_cols(lp), 2);
    ck_assert_int_eq(rk_lp_num_rows(lp), 2);
    ck_assert_int_eq(rk_lp_num_integers(lp), 1);
    ck_assert_int_eq(rk_lp_set_coef(lp, 0, 0, 5.0), RK_OK);
    ck_assert_int_eq(rk_lp_set_coef(lp, 0, 0, 7.0), RK_OK); /* overwrite */
    int cols[2] = {0, 1};
    double vals[2] = {1.5, -2.0};
    ck_assert_int_eq(rk_lp_add_row_coefs(lp, 1, 2, cols, vals), RK_OK);
    ck_assert_int_eq(rk_lp_set_coef(lp, 1, 1, 0.0), RK_OK); /* removes */
    ck_assert_int_eq(rk_lp_set_coef(lp, 5, 0, 1.0), RK_EINPUT);
    ck_assert_int_eq(rk_lp_add_row_coefs(lp, 0, 1, (int[]){9}, vals), RK_EINPUT);
    lp_csc A;
    ck_assert_int_eq(lp_matrix(lp, &A), 0);
    ck_assert_int_eq((int)A.nnz, 2);
    const int *ix;
    const double *v;
    ck_assert_int_eq(lp_col(lp, 0, &ix, &v), 2);
    ck_assert_int_eq(ix[0], 0);
    ck_assert_double_eq(v[0], 7.0);
    ck_assert_int_eq(ix[1], 1);
    ck_assert_double_eq(v[1], 1.5);
    ck_assert_int_eq(lp_col(lp, 1, &ix, &v), 0);
    rk_lp_set_col_bounds(lp, 1, -1, 1);
    double lo, hi;
    rk_lp_get_col_bounds(lp, 1, &lo, &hi);
    ck_assert_double_eq(lo, -1);
    ck_assert_double_eq(hi, 1);
    rk_lp_free(lp);
}
END_TEST

/* ------------------------------------------------------- hand-built LPs */

/* max 3x + 2y  s.t. x + y <= 4, x + 3y <= 6, x <= 3, x,y >= 0 -> 11 at (3,1) */
static rk_lp *lp_small_max(void) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", 3, 0, 3, 0);
    rk_lp_add_col(lp, "y", 2, 0, INF, 0);
    rk_lp_add_row(lp, "c1", -INF, 4);
    rk_lp_add_row(lp, "c2", -INF, 6);
    rk_lp_add_row_coefs(lp, 0, 2, (int[]){0, 1}, (double[]){1, 1});
    rk_lp_add_row_coefs(lp, 1, 2, (int[]){0, 1}, (double[]){1, 3});
    rk_lp_set_maximize(lp, 1);
    rk_lp_set_obj_const(lp, 10);
    return lp;
}

START_TEST(test_small_max) {
    rk_lp *lp = lp_small_max();
    double obj;
    ck_assert_int_eq(solve_engine(lp, &obj), RK_LP_OPTIMAL);
    ck_assert_double_eq_tol(obj, 21.0, 1e-9);
    rk_milp_result r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(r.objective, 21.0, 1e-9);
    ck_assert_double_eq_tol(r.x[0], 3.0, 1e-9);
    ck_assert_double_eq_tol(r.x[1], 1.0, 1e-9);
    free(r.x);
    rk_lp_free(lp);
}
END_TEST

/* equalities, ranges, free and negative variables:
 * min x1 - x2 + 2 x3
 *  x1 + x2 + x3 = 10; -5 <= x1 - x2 <= 5 (range); x2 - x3 >= -2;
 *  x1 free, x2 in [-3, 8], x3 >= -1
 * optimum: x1 - x2 = -5, then minimize 2 x3 with x1 + x2 + x3 = 10 ...
 * computed independently: x = (1.5, 6.5, 2)?  We only check against the
 * engine without presolve vs with presolve and feasibility, plus the value
 * from a hand derivation below. */
START_TEST(test_mixed_bounds) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x1", 1, -INF, INF, 0);
    rk_lp_add_col(lp, "x2", -1, -3, 8, 0);
    rk_lp_add_col(lp, "x3", 2, -1, INF, 0);
    rk_lp_add_row(lp, "e", 10, 10);
    rk_lp_add_row(lp, "r", -5, 5);
    rk_lp_add_row(lp, "g", -2, INF);
    rk_lp_add_row_coefs(lp, 0, 3, (int[]){0, 1, 2}, (double[]){1, 1, 1});
    rk_lp_add_row_coefs(lp, 1, 2, (int[]){0, 1}, (double[]){1, -1});
    rk_lp_add_row_coefs(lp, 2, 2, (int[]){1, 2}, (double[]){1, -1});
    /* x1 - x2 >= -5 binds; objective = (x1 - x2) + 2 x3 with x3 as small
     * as possible: x3 = -1 needs x1 + x2 = 11, x1 - x2 = -5 -> x2 = 8,
     * x1 = 3; x2 - x3 = 9 >= -2 ok.  Objective -5 - 2 = -7. */
    double obj;
    ck_assert_int_eq(solve_engine(lp, &obj), RK_LP_OPTIMAL);
    ck_assert_double_eq_tol(obj, -7.0, 1e-9);
    rk_milp_result r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(r.objective, -7.0, 1e-9);
    ck_assert_double_le(ilp_max_violation(lp, r.x, 0), 1e-9);
    free(r.x);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_infeasible) {
    /* x + y >= 5, x + 2y <= 3 with x, y in [0, 2]: x + y <= 2 + 0.5... */
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", 1, 0, 2, 0);
    rk_lp_add_col(lp, "y", 1, 0, INF, 0);
    rk_lp_add_row(lp, "a", 5, INF);
    rk_lp_add_row(lp, "b", -INF, 3);
    rk_lp_add_row_coefs(lp, 0, 2, (int[]){0, 1}, (double[]){1, 1});
    rk_lp_add_row_coefs(lp, 1, 2, (int[]){0, 1}, (double[]){1, 2});
    ck_assert_int_eq(solve_engine(lp, NULL), RK_LP_INFEASIBLE);
    rk_milp_result r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_INFEASIBLE);
    ck_assert_int_eq(r.has_solution, 0);
    free(r.x);
    /* infeasible through a singleton row vs a bound (caught by presolve) */
    rk_lp_set_row_bounds(lp, 0, -INF, INF);
    int k = rk_lp_add_row(lp, "s", 3, INF);
    rk_lp_set_coef(lp, k, 0, 1.0);
    ck_assert_int_eq(solve_engine(lp, NULL), RK_LP_INFEASIBLE);
    r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_INFEASIBLE);
    free(r.x);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_unbounded) {
    /* min -x - y s.t. x - y <= 1, -x + y <= 1, x, y >= 0: unbounded along (1,1) */
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", -1, 0, INF, 0);
    rk_lp_add_col(lp, "y", -1, 0, INF, 0);
    rk_lp_add_row(lp, "a", -INF, 1);
    rk_lp_add_row(lp, "b", -INF, 1);
    rk_lp_add_row_coefs(lp, 0, 2, (int[]){0, 1}, (double[]){1, -1});
    rk_lp_add_row_coefs(lp, 1, 2, (int[]){0, 1}, (double[]){-1, 1});
    ck_assert_int_eq(solve_engine(lp, NULL), RK_LP_UNBOUNDED);
    rk_milp_result r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_UNBOUNDED);
    free(r.x);
    rk_lp_free(lp);
    /* a free column with a cost and no rows */
    lp = rk_lp_new();
    rk_lp_add_col(lp, "z", 1, -INF, INF, 0);
    rk_lp_add_col(lp, "w", 1, 0, 1, 0);
    rk_lp_add_row(lp, "a", 0, 1);
    rk_lp_set_coef(lp, 0, 1, 1.0);
    ck_assert_int_eq(solve_engine(lp, NULL), RK_LP_UNBOUNDED);
    r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_UNBOUNDED);
    free(r.x);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_empty_and_trivial) {
    rk_lp *lp = rk_lp_new();
    double obj;
    ck_assert_int_eq(solve_engine(lp, &obj), RK_LP_OPTIMAL);
    rk_lp_add_col(lp, "x", 2, 1, 5, 0);
    rk_lp_add_col(lp, "y", -1, 1, 5, 0);
    ck_assert_int_eq(solve_engine(lp, &obj), RK_LP_OPTIMAL);
    ck_assert_double_eq_tol(obj, 2 - 5, 1e-12);
    rk_milp_result r = solve_lp_only(lp);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(r.objective, -3, 1e-12);
    free(r.x);
    rk_lp_free(lp);
}
END_TEST

/* ----------------------------------------- warm starts (B&B usage) */

static unsigned long long lcg(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Tighten random column bounds around the optimum, re-solve warm (dual
 * simplex), compare with a cold solve of the modified LP. */
static void warm_bound_changes(const char *name, int rounds) {
    rk_lp *lp = read_netlib(name);
    rk_error err;
    spx *s = spx_new(lp, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    int n = lp->n;
    double *x = malloc((size_t)n * sizeof *x);
    unsigned long long seed = 12345;
    for (int r = 0; r < rounds; r++) {
        spx_get_x(s, x);
        /* branch-like change on up to 3 columns */
        for (int k = 0; k < 3; k++) {
            int j = (int)(lcg(&seed) % (unsigned long long)n);
            double lo, hi;
            spx_get_col_bounds(s, j, &lo, &hi);
            double v = x[j];
            if (lcg(&seed) & 1) hi = fmax(lo, floor(v) - (fabs(v - floor(v)) < 1e-9 ? 1 : 0));
            else lo = fmin(hi, ceil(v) + (fabs(v - ceil(v)) < 1e-9 ? 1 : 0));
            if (lo > hi) continue;
            spx_set_col_bounds(s, j, lo, hi);
            rk_lp_set_col_bounds(lp, j, lo, hi);
        }
        rk_lp_status ws = spx_solve(s, NULL);
        double cobj;
        rk_lp_status cst = solve_engine(lp, &cobj);
        ck_assert_msg(ws == cst, "%s round %d: warm %d cold %d", name, r, ws, cst);
        if (ws == RK_LP_OPTIMAL) {
            ck_assert_msg(rel_err(spx_objective(s), cobj) < 1e-7, "%s round %d: warm %.10g cold %.10g",
                          name, r, spx_objective(s), cobj);
            spx_get_x(s, x);
            ck_assert_double_le(ilp_max_violation(lp, x, 0), 1e-6);
        } else {
            break;
        }
    }
    free(x);
    spx_free(s);
    rk_lp_free(lp);
}

START_TEST(test_warm_start) {
    warm_bound_changes("afiro", 10);
    warm_bound_changes("sc105", 10);
    warm_bound_changes("adlittle", 10);
    warm_bound_changes("boeing2", 10);
    warm_bound_changes("stocfor1", 10);
}
END_TEST

START_TEST(test_basis_roundtrip_and_cutoff) {
    rk_lp *lp = read_netlib("share2b");
    rk_error err;
    spx *s = spx_new(lp, &err);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    double z = spx_objective(s);
    spx_basis b;
    ck_assert_int_eq(spx_get_basis(s, &b), RK_OK);
    /* a second engine started from that basis needs no iterations */
    spx *t = spx_new(lp, &err);
    ck_assert_int_eq(spx_set_basis(t, &b), RK_OK);
    ck_assert_int_eq(spx_solve(t, NULL), RK_LP_OPTIMAL);
    ck_assert_int_le(spx_iterations(t), 2);
    ck_assert_double_le(rel_err(spx_objective(t), z), 1e-9);
    /* a bad basis is refused */
    b.col[0] = b.col[0] == 0 ? 1 : 0;
    ck_assert_int_eq(spx_set_basis(t, &b), RK_EINPUT);
    spx_basis_free(&b);
    /* cutoff: fix a column away from its optimum; with a cutoff below the
     * new optimum the dual simplex stops early */
    double *x = malloc((size_t)lp->n * sizeof *x);
    spx_get_x(s, x);
    int j = 0;
    while (j < lp->n && fabs(x[j]) < 1e-6) j++;
    ck_assert_int_lt(j, lp->n);
    spx_set_col_bounds(s, j, 0, 0);
    spx_opts o;
    spx_opts_default(&o);
    rk_lp_status st = spx_solve(s, &o);
    ck_assert(st == RK_LP_OPTIMAL || st == RK_LP_INFEASIBLE);
    if (st == RK_LP_OPTIMAL) {
        double z2 = spx_objective(s);
        ck_assert_double_ge(z2, z - 1e-6 * fabs(z));
        if (z2 > z + 1e-3 * (1 + fabs(z))) {
            spx_set_col_bounds(s, j, lp->col_lb[j], lp->col_ub[j]);
            ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
            spx_set_col_bounds(s, j, 0, 0);
            o.cutoff = 0.5 * (z + z2);
            st = spx_solve(s, &o);
            ck_assert_int_eq(st, RK_LP_CUTOFF);
        }
    }
    free(x);
    spx_free(t);
    spx_free(s);
    rk_lp_free(lp);
}
END_TEST

/* sc50a solved by a fresh engine, and the row sum_j x_j (all columns, coefficient
 * 1) with its activity *act at the optimum: a row to cut the optimum with. */
static spx *sc50a_with_ones_row(rk_lp **lp, double **x, int **ci, double **cv, double *act) {
    rk_error err;
    *lp = read_netlib("sc50a");
    spx *s = spx_new(*lp, &err);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    int n = (*lp)->n;
    *x = malloc((size_t)n * sizeof **x);
    spx_get_x(s, *x);
    *ci = malloc((size_t)n * sizeof **ci);
    *cv = malloc((size_t)n * sizeof **cv);
    *act = 0;
    for (int j = 0; j < n; j++) { (*ci)[j] = j; (*cv)[j] = 1.0; *act += (*x)[j]; }
    return s;
}

START_TEST(test_add_rows) {
    rk_lp *lp = lp_small_max();
    rk_error err;
    spx *s = spx_new(lp, &err);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    ck_assert_double_eq_tol(spx_objective(s), 21.0, 1e-9);
    /* cut 2x + y <= 6 (cuts off (3,1)); new optimum where 2x + y = 6 meets
     * x + 3y = 6: (2.4, 1.2), 10 + 7.2 + 2.4 = 19.6 */
    double lb[1] = {-INF}, ub[1] = {6};
    int start[2] = {0, 2}, idx[2] = {0, 1};
    double val[2] = {2, 1};
    ck_assert_int_eq(spx_add_rows(s, 1, lb, ub, start, idx, val), RK_OK);
    ck_assert_int_eq(spx_num_rows(s), 3);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    ck_assert_double_eq_tol(spx_objective(s), 19.6, 1e-9);
    double ax[3];
    spx_get_row_activity(s, ax);
    ck_assert_double_le(ax[2], 6 + 1e-9);
    spx_free(s);
    rk_lp_free(lp);

    /* on a netlib LP: add a row that cuts the optimum, compare with a cold
     * solve of the LP with that row */
    double *x, *cv, act;
    int *ci;
    s = sc50a_with_ones_row(&lp, &x, &ci, &cv, &act);
    int n = lp->n;
    double clb[1] = {-INF}, cub[1] = {0.9 * act};
    int cst[2] = {0, n};
    ck_assert_int_eq(spx_add_rows(s, 1, clb, cub, cst, ci, cv), RK_OK);
    rk_lp_status st = spx_solve(s, NULL);
    int r = rk_lp_add_row(lp, "cut", -INF, 0.9 * act);
    rk_lp_add_row_coefs(lp, r, n, ci, cv);
    double cobj;
    rk_lp_status st2 = solve_engine(lp, &cobj);
    ck_assert_int_eq(st, st2);
    if (st == RK_LP_OPTIMAL) ck_assert_double_le(rel_err(spx_objective(s), cobj), 1e-7);
    free(x); free(ci); free(cv);
    spx_free(s);
    rk_lp_free(lp);
}
END_TEST


/* spx_remove_rows: slack rows leave without changing the optimum or
 * needing iterations; a binding row cannot be removed; the engine keeps
 * working (new rows, bound changes) afterwards, against cold solves. */
START_TEST(test_remove_rows) {
    rk_lp *lp;
    double *x, *cv, act;
    int *ci;
    spx *s = sc50a_with_ones_row(&lp, &x, &ci, &cv, &act);
    double z = spx_objective(s);
    int n = lp->n, m = lp->m;
    /* three rows: slack, binding (cuts the optimum), slack */
    int *cst = malloc(4 * sizeof *cst);
    int *ci3 = malloc((size_t)(3 * n) * sizeof *ci3);
    double *cv3 = malloc((size_t)(3 * n) * sizeof *cv3);
    for (int k = 0; k < 3; k++) {
        cst[k] = k * n;
        memcpy(ci3 + k * n, ci, (size_t)n * sizeof *ci);
        memcpy(cv3 + k * n, cv, (size_t)n * sizeof *cv);
    }
    cst[3] = 3 * n;
    double clb[3] = {-INF, -INF, -INF}, cub[3] = {2 * act + 1, 0.9 * act, 3 * act + 1};
    ck_assert_int_eq(spx_add_rows(s, 3, clb, cub, cst, ci3, cv3), RK_OK);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    double z3 = spx_objective(s);
    spx_basis b;
    ck_assert_int_eq(spx_get_basis(s, &b), RK_OK);
    ck_assert_int_eq(b.row[m], 0);     /* slack: logical basic */
    ck_assert_int_ne(b.row[m + 1], 0); /* binding */
    ck_assert_int_eq(b.row[m + 2], 0);
    spx_basis_free(&b);
    char *drop = calloc((size_t)(m + 3), 1);
    drop[m + 1] = 1;
    ck_assert_int_eq(spx_remove_rows(s, drop), RK_EINPUT); /* binding: refused, nothing changed */
    ck_assert_int_eq(spx_num_rows(s), m + 3);
    drop[m + 1] = 0;
    drop[m] = drop[m + 2] = 1;
    ck_assert_int_eq(spx_remove_rows(s, drop), RK_OK);
    ck_assert_int_eq(spx_num_rows(s), m + 1);
    long it0 = spx_iterations(s);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    ck_assert_int_eq(spx_iterations(s), it0);
    ck_assert_double_le(rel_err(spx_objective(s), z3), 1e-9);
    double ax[1024];
    ck_assert_int_le(m + 1, 1024);
    spx_get_row_activity(s, ax);
    ck_assert_double_le(ax[m], 0.9 * act + 1e-7 * fmax(1, act));
    /* still a working engine: a bound change and a new row, against a cold
     * solve of the same LP */
    spx_set_col_bounds(s, 0, 0, 0);
    double ub2[1] = {0.8 * act};
    int st2[2] = {0, n};
    ck_assert_int_eq(spx_add_rows(s, 1, clb, ub2, st2, ci, cv), RK_OK);
    rk_lp_status st = spx_solve(s, NULL);
    rk_lp_set_col_bounds(lp, 0, 0, 0);
    int r = rk_lp_add_row(lp, "cut1", -INF, 0.9 * act);
    rk_lp_add_row_coefs(lp, r, n, ci, cv);
    r = rk_lp_add_row(lp, "cut2", -INF, 0.8 * act);
    rk_lp_add_row_coefs(lp, r, n, ci, cv);
    double cobj;
    ck_assert_int_eq(st, solve_engine(lp, &cobj));
    if (st == RK_LP_OPTIMAL) ck_assert_double_le(rel_err(spx_objective(s), cobj), 1e-7);
    ck_assert(z3 >= z - 1e-9);
    free(drop); free(x); free(ci); free(cv); free(cst); free(ci3); free(cv3);
    spx_free(s);
    rk_lp_free(lp);
}
END_TEST

/* ------------------------------------------------------------ netlib */

typedef struct {
    char name[64];
    double opt;
} optimum;

static int read_optima(optimum *out, int max) {
    char path[1024];
    snprintf(path, sizeof path, "%s/netlib/OPTIMA.tsv", ilp_testdata());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[512];
    int k = 0;
    while (fgets(line, sizeof line, f) && k < max) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%63s %lf", out[k].name, &out[k].opt) == 2) k++;
    }
    fclose(f);
    return k;
}

/* OPTIMA.tsv gives the optimum as GLPK and CBC print it; for e226 (the only
 * netlib LP here with an objective-row RHS) they add the RHS value itself,
 * i.e. c'x - c0 where rk_mps_read stores c0 = -RHS.  c'x - c0 equals the
 * objective for every other instance (c0 = 0). */
static double as_optima(const rk_lp *lp, double objective) { return objective - 2.0 * lp->obj_const; }

START_TEST(test_netlib_lp_only) {
    optimum opt[64];
    int k = read_optima(opt, 64);
    ck_assert_int_ge(k, 30);
    for (int t = 0; t < k; t++) {
        rk_lp *lp = read_netlib(opt[t].name);
        rk_milp_result r = solve_lp_only(lp);
        ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s: status %d", opt[t].name, r.status);
        double e = rel_err(as_optima(lp, r.objective), opt[t].opt);
        ck_assert_msg(e <= 1e-6, "%s: objective %.12g, expected %.12g (rel. error %.2g)", opt[t].name,
                      as_optima(lp, r.objective), opt[t].opt, e);
        double v = ilp_max_violation(lp, r.x, 0);
        ck_assert_msg(v <= 1e-6, "%s: solution violates a row or bound by %.3g", opt[t].name, v);
        free(r.x);
        rk_lp_free(lp);
    }
}
END_TEST

START_TEST(test_netlib_engine) {
    /* the engine alone (no presolve), including maximize by negation */
    optimum opt[64];
    int k = read_optima(opt, 64);
    for (int t = 0; t < k; t++) {
        rk_lp *lp = read_netlib(opt[t].name);
        double obj;
        rk_lp_status st = solve_engine(lp, &obj);
        ck_assert_msg(st == RK_LP_OPTIMAL, "%s: status %d", opt[t].name, st);
        ck_assert_msg(rel_err(as_optima(lp, obj), opt[t].opt) <= 1e-6, "%s: %.12g vs %.12g", opt[t].name,
                      as_optima(lp, obj), opt[t].opt);
        if (t % 5 == 0) {
            /* same LP as a maximization of -c */
            for (int j = 0; j < lp->n; j++) lp->obj[j] = -lp->obj[j];
            lp->obj_const = -lp->obj_const;
            rk_lp_set_maximize(lp, 1);
            double obj2;
            ck_assert_int_eq(solve_engine(lp, &obj2), RK_LP_OPTIMAL);
            ck_assert_msg(rel_err(-obj2, obj) <= 1e-7, "%s max: %.12g vs %.12g", opt[t].name, -obj2, obj);
        }
        rk_lp_free(lp);
    }
}
END_TEST

START_TEST(test_limits_and_resume) {
    rk_lp *lp = read_netlib("degen2");
    rk_error err;
    spx *s = spx_new(lp, &err);
    spx_opts o;
    spx_opts_default(&o);
    o.iter_limit = 10;
    ck_assert_int_eq(spx_solve(s, &o), RK_LP_ITER_LIMIT);
    ck_assert_int_le(spx_iterations(s), 12);
    o.iter_limit = 0;
    o.time_limit = 1e-9;
    rk_lp_status st = spx_solve(s, &o);
    ck_assert(st == RK_LP_TIME_LIMIT || st == RK_LP_OPTIMAL);
    ck_assert_int_eq(spx_solve(s, NULL), RK_LP_OPTIMAL);
    ck_assert_double_le(rel_err(spx_objective(s), -1435.178), 1e-6);
    double *d = malloc((size_t)lp->n * sizeof *d);
    spx_get_reduced_costs(s, d);
    /* reduced costs of a minimization optimum: >= 0 at lower, <= 0 at upper */
    spx_basis b;
    ck_assert_int_eq(spx_get_basis(s, &b), RK_OK);
    for (int j = 0; j < lp->n; j++) {
        if (b.col[j] == 1 && lp->col_lb[j] < lp->col_ub[j]) ck_assert_double_ge(d[j], -1e-6);
        if (b.col[j] == 2 && lp->col_lb[j] < lp->col_ub[j]) ck_assert_double_le(d[j], 1e-6);
        if (b.col[j] == 0) ck_assert_double_eq(d[j], 0.0);
    }
    spx_basis_free(&b);
    free(d);
    spx_free(s);
    rk_lp_free(lp);
}
END_TEST

static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* sort_ints sorts like qsort: random lists with and without duplicates,
 * sorted and reversed ones, empty and long ones. */
START_TEST(test_sort_ints) {
    unsigned long long seed = 7;
    for (int trial = 0; trial < 3000; trial++) {
        long n = trial % 200;
        if (trial % 97 == 0) n = 5000 + trial;
        int *a = malloc((size_t)(n + 1) * sizeof *a), *b = malloc((size_t)(n + 1) * sizeof *b);
        ck_assert(a && b);
        int range = 1 + (trial % 50) * (trial % 3 ? 1000 : 1);
        for (long i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            a[i] = (int)((seed >> 33) % (unsigned)range) - range / 3;
            if (trial % 5 == 0) a[i] = (int)i;
            if (trial % 7 == 0) a[i] = (int)(n - i);
        }
        memcpy(b, a, (size_t)n * sizeof *a);
        qsort(b, (size_t)n, sizeof *b, int_cmp);
        sort_ints(a, n);
        ck_assert_msg(n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0, "trial %d (%ld entries)", trial, n);
        free(a);
        free(b);
    }
}
END_TEST

static Suite *lp_suite(void) {
    Suite *s = suite_create("lp");
    TCase *tc = tcase_create("builder");
    tcase_add_test(tc, test_builder);
    tcase_add_test(tc, test_sort_ints);
    suite_add_tcase(s, tc);
    tc = tcase_create("small");
    tcase_add_test(tc, test_small_max);
    tcase_add_test(tc, test_mixed_bounds);
    tcase_add_test(tc, test_infeasible);
    tcase_add_test(tc, test_unbounded);
    tcase_add_test(tc, test_empty_and_trivial);
    suite_add_tcase(s, tc);
    tc = tcase_create("warm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_warm_start);
    tcase_add_test(tc, test_basis_roundtrip_and_cutoff);
    tcase_add_test(tc, test_add_rows);
    tcase_add_test(tc, test_remove_rows);
    tcase_add_test(tc, test_limits_and_resume);
    suite_add_tcase(s, tc);
    tc = tcase_create("netlib");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_netlib_lp_only);
    tcase_add_test(tc, test_netlib_engine);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(lp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
