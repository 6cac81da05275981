/* bb_aggr.c — owns the aggregation presolve of a MILP before
 * branch-and-bound works on it: columns tied by a row `a x_j - a x_k = 0`
 * (both integer or both continuous) are one column in the working problem
 * (the smallest index stands for its class: bounds intersected, costs
 * added), the rows are rewritten over the classes, rows left empty are
 * dropped (the tying rows among them), and of rows with identical
 * coefficients one is kept with the intersection of their bounds.  The
 * working problem has exactly the solutions of the original, one for one
 * (x_j = x of j's class), with the same objective; it is smaller, and its LP
 * relaxation is the original's.  bb.c maps incumbents and pseudocosts in and
 * solutions and pseudocosts out (bb_aggr_expand). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

static int aggr_find(int *par, int j) {
    while (par[j] != j) {
        par[j] = par[par[j]];
        j = par[j];
    }
    return j;
}

/* Row i (row-wise rs/ri/rv) ties its two columns: x_j - x_k = 0. */
static int aggr_row_ties(const rk_lp *lp, const long *rs, const int *ri, const double *rv, int i) {
    if (rs[i + 1] - rs[i] != 2 || lp->row_lb[i] != 0 || lp->row_ub[i] != 0) return 0;
    int j = ri[rs[i]], k = ri[rs[i] + 1];
    return rv[rs[i]] == -rv[rs[i] + 1] && lp->is_int[j] == lp->is_int[k];
}

static uint64_t aggr_row_hash(const int *col, const double *val, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int q = 0; q < n; q++) {
        uint64_t b;
        memcpy(&b, &val[q], sizeof b);
        h = (h ^ (uint64_t)(unsigned)col[q]) * 1099511628211ull;
        h = (h ^ b) * 1099511628211ull;
    }
    return h ? h : 1;
}

int bb_aggregate(const rk_lp *lp, rk_lp **out, int **map_out) {
    *out = NULL;
    *map_out = NULL;
    int n = lp->n, m = lp->m;
    long *rs;
    int *ri;
    double *rv;
    if (lp_rowwise(lp, &rs, &ri, &rv)) return -1;
    long nnz = rs[m];
    int *par = malloc((size_t)(n ? n : 1) * sizeof *par), *map = malloc((size_t)(n ? n : 1) * sizeof *map);
    int fail = !par || !map;
    int n_tied = 0;
    for (int j = 0; !fail && j < n; j++) par[j] = j;
    for (int i = 0; !fail && i < m; i++) {
        if (!aggr_row_ties(lp, rs, ri, rv, i)) continue;
        int a = aggr_find(par, ri[rs[i]]), b = aggr_find(par, ri[rs[i] + 1]);
        if (a == b) continue;
        if (a < b) par[b] = a;
        else par[a] = b;
        n_tied++;
    }
    /* classes: the representative (smallest index) gets the next column */
    int n_red = 0;
    double *lb = NULL, *ub = NULL, *obj = NULL;
    if (!fail && n_tied) {
        lb = malloc((size_t)n * sizeof *lb);
        ub = malloc((size_t)n * sizeof *ub);
        obj = calloc((size_t)n, sizeof *obj);
        fail = !lb || !ub || !obj;
    }
    for (int j = 0; !fail && n_tied && j < n; j++) {
        int r = aggr_find(par, j);
        if (r == j) {
            map[j] = n_red;
            lb[n_red] = lp->col_lb[j];
            ub[n_red] = lp->col_ub[j];
            n_red++;
        }
        int c = map[r]; /* r <= j: already numbered */
        lb[c] = fmax(lb[c], lp->col_lb[j]);
        ub[c] = fmin(ub[c], lp->col_ub[j]);
        obj[c] += lp->obj[j];
        map[j] = c;
    }
    /* empty bound intervals: leave the problem as it is (the search proves
     * it infeasible) */
    for (int c = 0; !fail && n_tied && c < n_red; c++)
        if (lb[c] > ub[c]) n_tied = 0;
    if (fail || !n_tied) {
        free(rs);
        free(ri);
        free(rv);
        free(par);
        free(map);
        free(lb);
        free(ub);
        free(obj);
        return fail ? -1 : 0;
    }
    /* rows over the classes: coefficients merged, empty rows dropped,
     * identical rows merged (hash table of the kept rows) */
    double *acc = calloc((size_t)n_red, sizeof *acc);
    int *cols = malloc((size_t)n_red * sizeof *cols);
    long *ks = malloc(((size_t)m + 1) * sizeof *ks);
    int *kc = malloc((size_t)(nnz ? nnz : 1) * sizeof *kc);
    double *kv = malloc((size_t)(nnz ? nnz : 1) * sizeof *kv), *klb = malloc((size_t)(m ? m : 1) * sizeof *klb),
           *kub = malloc((size_t)(m ? m : 1) * sizeof *kub);
    int *korig = malloc((size_t)(m ? m : 1) * sizeof *korig);
    int hcap = 16;
    while (hcap < 2 * m) hcap *= 2;
    int *htab = malloc((size_t)hcap * sizeof *htab);
    uint64_t *khash = malloc((size_t)(m ? m : 1) * sizeof *khash);
    fail = !acc || !cols || !ks || !kc || !kv || !klb || !kub || !korig || !htab || !khash;
    int nk = 0, infeasible = 0;
    if (!fail) {
        ks[0] = 0;
        for (int h = 0; h < hcap; h++) htab[h] = -1;
    }
    for (int i = 0; !fail && !infeasible && i < m; i++) {
        int nc = 0;
        for (long p = rs[i]; p < rs[i + 1]; p++) {
            int c = map[ri[p]];
            if (acc[c] == 0) cols[nc++] = c;
            acc[c] += rv[p];
            if (acc[c] == 0) acc[c] = 0x1p-1074; /* keep it listed; cleared below */
        }
        sort_ints(cols, nc);
        long at = ks[nk];
        for (int q = 0; q < nc; q++) {
            double v = acc[cols[q]];
            acc[cols[q]] = 0;
            if (fabs(v) <= 1e-12) continue; /* cancelled (a tying row) */
            kc[at] = cols[q];
            kv[at] = v;
            at++;
        }
        int len = (int)(at - ks[nk]);
        double rl = lp->row_lb[i], ru = lp->row_ub[i];
        if (len == 0) {
            if (rl > 1e-9 || ru < -1e-9) infeasible = 1;
            continue;
        }
        uint64_t h = aggr_row_hash(kc + ks[nk], kv + ks[nk], len);
        int slot = (int)(h & (uint64_t)(hcap - 1)), dup = -1;
        for (; htab[slot] >= 0; slot = (slot + 1) & (hcap - 1)) {
            int o = htab[slot];
            if (khash[o] == h && ks[o + 1] - ks[o] == len &&
                !memcmp(kc + ks[o], kc + ks[nk], (size_t)len * sizeof *kc) &&
                !memcmp(kv + ks[o], kv + ks[nk], (size_t)len * sizeof *kv)) {
                dup = o;
                break;
            }
        }
        if (dup >= 0) {
            klb[dup] = fmax(klb[dup], rl);
            kub[dup] = fmin(kub[dup], ru);
            if (klb[dup] > kub[dup] + 1e-9 * (1 + fabs(kub[dup]))) infeasible = 1;
            continue;
        }
        htab[slot] = nk;
        khash[nk] = h;
        klb[nk] = rl;
        kub[nk] = ru;
        korig[nk] = i;
        ks[++nk] = at;
    }
    rk_lp *cp = NULL;
    if (!fail && !infeasible) {
        /* the representatives, in column order, are the classes 0, 1, ... */
        int *rep = cols; /* n_red entries, free again */
        for (int j = 0; j < n; j++)
            if (aggr_find(par, j) == j) rep[map[j]] = j;
        cp = lp_assemble(lp, n_red, rep, obj, lb, ub, nk, korig, klb, kub, ks, kc, kv);
        fail = !cp;
    }
    free(rs);
    free(ri);
    free(rv);
    free(par);
    free(lb);
    free(ub);
    free(obj);
    free(acc);
    free(cols);
    free(ks);
    free(kc);
    free(kv);
    free(klb);
    free(kub);
    free(korig);
    free(htab);
    free(khash);
    if (fail || infeasible) {
        rk_lp_free(cp);
        free(map);
        return fail ? -1 : 0;
    }
    *out = cp;
    *map_out = map;
    return (n - n_red) + (m - nk);
}
