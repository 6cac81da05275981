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
    int n = lp->n, m = lp->m;
    long *rs;
    int *ri;
    double *rv;
    if (lp_rowwise(lp, &rs, &ri, &rv)) return -1;
    double *g = malloc((size_t)(m ? m : 1) * sizeof *g);
    int changed = 0, ok = g != NULL;
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
    double *rlb = NULL, *rub = NULL;
    if (ok && changed) {
        rlb = malloc((size_t)m * sizeof *rlb);
        rub = malloc((size_t)m * sizeof *rub);
        ok = rlb && rub;
    }
    for (int i = 0; ok && changed && i < m; i++) {
        rlb[i] = lp->row_lb[i];
        rub[i] = lp->row_ub[i];
        if (g[i] > 0) {
            if (isfinite(rlb[i])) rlb[i] = ceil(rlb[i] / g[i] - 1e-9);
            if (isfinite(rub[i])) rub[i] = floor(rub[i] / g[i] + 1e-9);
            for (long p = rs[i]; p < rs[i + 1]; p++) rv[p] /= g[i]; /* exact: g divides every coefficient */
        }
    }
    rk_lp *cp = NULL;
    if (ok && changed) {
        cp = lp_assemble(lp, n, NULL, lp->obj, lp->col_lb, lp->col_ub, m, NULL, rlb, rub, rs, ri, rv);
        ok = cp != NULL;
    }
    free(rlb);
    free(rub);
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
