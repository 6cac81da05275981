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

rk_lp *bb_strengthen_rows(const rk_lp *lp, int *n_changed) {
    *n_changed = 0;
    rk_lp_csc A;
    if (rk_lp_matrix(lp, &A)) return NULL;
    int n = lp->n, m = lp->m;
    long nnz = A.nnz;
    long *rs = calloc((size_t)m + 1, sizeof *rs);
    int *ri = malloc((size_t)(nnz ? nnz : 1) * sizeof *ri);
    double *rv = malloc((size_t)(nnz ? nnz : 1) * sizeof *rv);
    long *pos = malloc((size_t)(m ? m : 1) * sizeof *pos);
    rk_lp *out = rk_lp_new();
    int ok = rs && ri && rv && pos && out;
    if (ok) {
        for (long p = 0; p < nnz; p++) rs[A.index[p] + 1]++;
        for (int i = 0; i < m; i++) rs[i + 1] += rs[i];
        memcpy(pos, rs, (size_t)m * sizeof *pos);
        for (int j = 0; j < n; j++)
            for (long p = A.start[j]; p < A.start[j + 1]; p++) {
                long q = pos[A.index[p]]++;
                ri[q] = j;
                rv[q] = A.value[p];
            }
    }
    for (int j = 0; ok && j < n; j++)
        ok = rk_lp_add_col(out, lp->col_name[j], lp->obj[j], lp->col_lb[j], lp->col_ub[j], lp->is_int[j]) == j;
    for (int i = 0; ok && i < m; i++) {
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        double g = bb_row_gcd(lp, rs, ri, rv, i);
        if (g > 0) {
            double nlb = isfinite(lb) ? ceil(lb / g - 1e-9) : lb;
            double nub = isfinite(ub) ? floor(ub / g + 1e-9) : ub;
            if (g != 1 || nlb != lb || nub != ub) (*n_changed)++;
            lb = nlb;
            ub = nub;
            if (g != 1)
                for (long p = rs[i]; p < rs[i + 1]; p++) rv[p] /= g; /* exact: g divides every coefficient */
        }
        ok = rk_lp_add_row(out, lp->row_name[i], lb, ub) == i;
        if (ok) ok = rk_lp_add_row_coefs(out, i, (int)(rs[i + 1] - rs[i]), ri + rs[i], rv + rs[i]) == RK_OK;
    }
    if (ok) {
        rk_lp_set_maximize(out, lp->maximize);
        rk_lp_set_obj_const(out, lp->obj_const);
    }
    free(rs);
    free(ri);
    free(rv);
    free(pos);
    if (!ok) {
        rk_lp_free(out);
        return NULL;
    }
    return out;
}
