/* bb_rows.c — owns the strengthening of integer rows before branch-and-bound
 * works on a problem: a row whose columns are all integer and whose
 * coefficients are all integers has an integral activity, a multiple of the
 * coefficients' greatest common divisor g.  The working copy divides such a
 * row by g and rounds its bounds inwards (ub -> floor(ub / g), lb -> ceil(lb
 * / g)).  The integer solutions are exactly the same; the LP relaxation is
 * tighter (a knapsack row with budget M + 0.5 and byte-sized coefficients
 * becomes floor(M / g)), and the row's slack is an integer of unit step, which
 * the Gomory cuts exploit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define BB_ROW_INT_MAX 9.0e15 /* coefficients above this are not exact integers in a double */

static uint64_t bb_gcd(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* g > 0 when row i (given row-wise) is an integer row, else 0. */
static double bb_row_gcd(const rk_lp *lp, const long *rs, const int *ri, const double *rv, int i) {
    uint64_t g = 0;
    if (rs[i + 1] == rs[i]) return 0;
    for (long p = rs[i]; p < rs[i + 1]; p++) {
        double a = fabs(rv[p]);
        if (!lp->is_int[ri[p]] || a != floor(a) || a > BB_ROW_INT_MAX || a < 1) return 0;
        g = bb_gcd(g, (uint64_t)a);
    }
    return (double)g;
}

int bb_strengthen_rows(const rk_lp *lp, rk_lp **out) {
    *out = NULL;
    rk_lp_csc A;
    if (rk_lp_matrix(lp, &A)) return -1;
    int n = lp->n, m = lp->m;
    long nnz = A.nnz;
    long *rs = malloc(((size_t)m + 1) * sizeof *rs);
    int *ri = malloc((size_t)(nnz ? nnz : 1) * sizeof *ri);
    double *rv = malloc((size_t)(nnz ? nnz : 1) * sizeof *rv);
    double *g = malloc((size_t)(m ? m : 1) * sizeof *g);
    int changed = 0, ok = rs && ri && rv && g && !rk_csc_rowwise(n, m, A.start, A.index, A.value, rs, ri, rv);
    /* the rows that change; no copy when there is none (a sub-MIP of a
     * strengthened problem, or a problem without integer rows) */
    for (int i = 0; ok && i < m; i++) {
        g[i] = bb_row_gcd(lp, rs, ri, rv, i);
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        if (g[i] > 0 && (g[i] != 1 || (isfinite(lb) && lb != ceil(lb - 1e-9)) || (isfinite(ub) && ub != floor(ub + 1e-9))))
            changed++;
        else
            g[i] = 0;
    }
    rk_lp *cp = ok && changed ? rk_lp_new() : NULL;
    if (ok && changed) ok = cp != NULL;
    for (int j = 0; ok && changed && j < n; j++)
        ok = rk_lp_add_col(cp, lp->col_name[j], lp->obj[j], lp->col_lb[j], lp->col_ub[j], lp->is_int[j]) == j;
    for (int i = 0; ok && changed && i < m; i++) {
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        if (g[i] > 0) {
            if (isfinite(lb)) lb = ceil(lb / g[i] - 1e-9);
            if (isfinite(ub)) ub = floor(ub / g[i] + 1e-9);
            for (long p = rs[i]; p < rs[i + 1]; p++) rv[p] /= g[i]; /* exact: g divides every coefficient */
        }
        ok = rk_lp_add_row(cp, lp->row_name[i], lb, ub) == i;
        if (ok) ok = rk_lp_add_row_coefs(cp, i, (int)(rs[i + 1] - rs[i]), ri + rs[i], rv + rs[i]) == RK_OK;
    }
    if (ok && changed) {
        rk_lp_set_maximize(cp, lp->maximize);
        rk_lp_set_obj_const(cp, lp->obj_const);
    }
    free(rs);
    free(ri);
    free(rv);
    free(g);
    if (!ok) {
        rk_lp_free(cp);
        return -1;
    }
    *out = cp;
    return changed;
}
