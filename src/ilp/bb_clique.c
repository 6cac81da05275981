/* bb_clique.c — owns the clique rows added before branch-and-bound works on
 * a problem: conflicts between pairs of binaries read off single rows (as
 * SCIP's knapsack constraints extract cliques), written as set-packing rows
 * in the working copy.
 *
 * One side of a row, s * a x <= b, is written over literals: a binary with
 * s a_j > 0 is the literal x_j, one with s a_j < 0 the literal 1 - x_j, both
 * with weight w_j = |a_j|; fixed columns go to the side and every other
 * column (finite bounds only) sits at its least contribution.  Then
 * sum w_j l_j <= slack, where slack = b - (the least activity of the row).
 * Two literals with w_j + w_k > slack cannot both be 1.  Sorted by weight
 * (largest first), the literals conflicting with literal p and heavier than
 * it are a prefix 0..r(p), and they conflict with each other, so
 * {0..r(p)} + {p} is a clique: sum over it of l <= 1.  Only the maximal ones
 * are kept (p's successor does not conflict with p).
 *
 * A row such as Checkmate's freeing condition `-R + S + 2 FREE <= 1` holds
 * the same integer points as `FREE <= R` and `FREE + S <= 1`, but its LP
 * relaxation allows FREE = 1/2 with R = 0: the clique rows close that gap
 * (the remat MILPs: root LP 232.9 -> 257.7 on n16_B61).  Integer solutions
 * are unchanged (each clique row is implied by its row and the bounds); the
 * debug-solution mode checks them as a presolve stage (bb.c).  Cliques that
 * are already a row of the problem (a sub-MIP's copy, a set-packing row) are
 * not added twice; the rows added are capped at the problem's row count and
 * their entries at its nonzeros. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define CLQ_MAX_ROW 1000 /* longer rows are not looked at (sorting cost) */

typedef struct {
    int col;
    int neg;     /* literal 1 - x */
    double w;
} clq_item;

static int clq_by_weight(const void *x, const void *y) {
    const clq_item *p = x, *q = y;
    if (p->w != q->w) return p->w > q->w ? -1 : 1;
    return p->col - q->col;
}

/* a clique as sorted signed literals: col * 2 + neg */
static uint64_t clq_hash(const int *lit, int len) {
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < len; k++) {
        h ^= (uint64_t)(unsigned)lit[k];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

/* Open-addressing set of cliques (literal lists in a pool). */
typedef struct {
    uint64_t *key;
    long *at;          /* offset of the literals in lits; -1 empty */
    int *len;
    long cap;
    int *lits;
    long nl, cap_l;
} clq_set;

static int clq_set_init(clq_set *s, long cap) {
    memset(s, 0, sizeof *s);
    s->cap = 16;
    while (s->cap < 2 * cap) s->cap *= 2;
    s->key = calloc((size_t)s->cap, sizeof *s->key);
    s->at = malloc((size_t)s->cap * sizeof *s->at);
    s->len = calloc((size_t)s->cap, sizeof *s->len);
    if (!s->key || !s->at || !s->len) return -1;
    for (long k = 0; k < s->cap; k++) s->at[k] = -1;
    return 0;
}

static void clq_set_free(clq_set *s) {
    free(s->key);
    free(s->at);
    free(s->len);
    free(s->lits);
}

/* 1 when present, 0 when inserted, -1 out of memory (table full counts as
 * present: nothing more is added) */
static int clq_set_insert(clq_set *s, const int *lit, int len) {
    uint64_t h = clq_hash(lit, len);
    long mask = s->cap - 1, k = (long)(h & (uint64_t)mask);
    for (long probe = 0; probe < s->cap; probe++, k = (k + 1) & mask) {
        if (s->at[k] < 0) {
            if (s->nl + len > s->cap_l) {
                long nc = s->cap_l ? 2 * s->cap_l : 1024;
                while (nc < s->nl + len) nc *= 2;
                int *nlits = realloc(s->lits, (size_t)nc * sizeof *nlits);
                if (!nlits) return -1;
                s->lits = nlits;
                s->cap_l = nc;
            }
            memcpy(s->lits + s->nl, lit, (size_t)len * sizeof *lit);
            s->key[k] = h;
            s->at[k] = s->nl;
            s->len[k] = len;
            s->nl += len;
            return 0;
        }
        if (s->key[k] == h && s->len[k] == len && memcmp(s->lits + s->at[k], lit, (size_t)len * sizeof *lit) == 0)
            return 1;
    }
    return 1;
}

/* The literals of row i (row-wise rs/ri/rv) when it is a set-packing row
 * (binaries, coefficients +-1, one side `sum l <= 1`), sorted, in lit;
 * returns their number, 0 when it is not one. */
static int clq_row_as_clique(const rk_lp *lp, const long *rs, const int *ri, const double *rv, int i, int *lit) {
    int len = (int)(rs[i + 1] - rs[i]);
    if (len < 2) return 0;
    for (int dir = 0; dir < 2; dir++) {
        double s = dir == 0 ? 1.0 : -1.0, b = dir == 0 ? lp->row_ub[i] : -lp->row_lb[i];
        if (!isfinite(b)) continue;
        int neg = 0, ok = 1;
        for (long p = rs[i]; p < rs[i + 1] && ok; p++) {
            int j = ri[p];
            double a = s * rv[p];
            if (!lp->is_int[j] || lp->col_lb[j] != 0 || lp->col_ub[j] != 1 || fabs(a) != 1) ok = 0;
            else if (a < 0) neg++;
            lit[p - rs[i]] = j * 2 + (a < 0);
        }
        if (ok && b == 1 - neg) {
            sort_ints(lit, len);
            return len;
        }
    }
    return 0;
}

int bb_add_cliques(const rk_lp *lp, rk_lp **out) {
    *out = NULL;
    int n = lp->n, m = lp->m;
    long *rs;
    int *ri;
    double *rv;
    if (lp_rowwise(lp, &rs, &ri, &rv)) return -1;
    long nnz = rs[m];
    clq_item *it = malloc((size_t)(n ? n : 1) * sizeof *it);
    int *lit = malloc((size_t)(n ? n : 1) * sizeof *lit);
    /* the new rows: literal lists */
    long cap_new = 0, n_new_nz = 0;
    int n_new = 0, cap_rows = 0;
    int *new_lit = NULL;
    long *new_start = NULL;
    int *new_src = NULL;
    clq_set S;
    memset(&S, 0, sizeof S);
    int ok = it && lit && clq_set_init(&S, m + 64) == 0;
    for (int i = 0; ok && i < m; i++) {
        int len = clq_row_as_clique(lp, rs, ri, rv, i, lit);
        if (len > 0 && clq_set_insert(&S, lit, len) < 0) ok = 0;
    }
    for (int i = 0; ok && i < m && n_new < m && n_new_nz < nnz; i++) {
        long b0 = rs[i], e0 = rs[i + 1];
        if (e0 - b0 < 2 || e0 - b0 > CLQ_MAX_ROW) continue;
        for (int dir = 0; ok && dir < 2; dir++) {
            double s = dir == 0 ? 1.0 : -1.0, b = dir == 0 ? lp->row_ub[i] : -lp->row_lb[i];
            if (!isfinite(b)) continue;
            double minact = 0;
            int k = 0, usable = 1;
            for (long p = b0; p < e0 && usable; p++) {
                int j = ri[p];
                double a = s * rv[p], lo = lp->col_lb[j], hi = lp->col_ub[j];
                if (a == 0) continue;
                if (lo == hi) {
                    minact += a * lo;
                } else if (lp->is_int[j] && lo == 0 && hi == 1) {
                    it[k].col = j;
                    it[k].neg = a < 0;
                    it[k].w = fabs(a);
                    if (a < 0) minact += a;
                    k++;
                } else {
                    double v = a > 0 ? lo : hi;
                    if (!isfinite(v)) usable = 0;
                    else minact += a * v;
                }
            }
            if (!usable || k < 2) continue;
            double slack = b - minact;
            double tol = 1e-6 * fmax(1.0, fabs(b) + fabs(minact));
            if (slack < 0) continue; /* infeasible: the search proves it */
            qsort(it, (size_t)k, sizeof *it, clq_by_weight);
            /* literals alone past the slack are fixings (left to the
             * search's propagation): start after them */
            int first = 0;
            while (first < k && it[first].w > slack + tol) first++;
            if (k - first < 2 || it[first].w + it[first + 1].w <= slack + tol) continue;
            /* R: the last literal conflicting with p (falls as p does);
             * the heavier ones conflicting with p: first..min(R, p - 1) */
            int R = k - 1;
            for (int p = first + 1; p < k && ok; p++) {
                while (R >= first && it[R].w + it[p].w <= slack + tol) R--;
                if (R < first) break; /* lighter literals conflict with none */
                int r = R < p - 1 ? R : p - 1;
                if (p + 1 < k && it[p + 1].w + it[p].w > slack + tol) continue; /* not maximal */
                int len = 0;
                for (int q = first; q <= r; q++) lit[len++] = it[q].col * 2 + it[q].neg;
                lit[len++] = it[p].col * 2 + it[p].neg;
                sort_ints(lit, len);
                int had = clq_set_insert(&S, lit, len);
                if (had < 0) { ok = 0; break; }
                if (had) continue;
                if (n_new + 1 > cap_rows) {
                    int nc = cap_rows ? 2 * cap_rows : 256;
                    long *ns = realloc(new_start, (size_t)(nc + 1) * sizeof *ns);
                    if (ns) new_start = ns;
                    int *nsrc = realloc(new_src, (size_t)nc * sizeof *nsrc);
                    if (nsrc) new_src = nsrc;
                    if (!ns || !nsrc) { ok = 0; break; }
                    cap_rows = nc;
                }
                if (n_new_nz + len > cap_new) {
                    long nc = cap_new ? 2 * cap_new : 1024;
                    while (nc < n_new_nz + len) nc *= 2;
                    int *nl = realloc(new_lit, (size_t)nc * sizeof *nl);
                    if (!nl) { ok = 0; break; }
                    new_lit = nl;
                    cap_new = nc;
                }
                if (n_new == 0) new_start[0] = 0;
                memcpy(new_lit + n_new_nz, lit, (size_t)len * sizeof *lit);
                n_new_nz += len;
                new_src[n_new] = i;
                new_start[++n_new] = n_new_nz;
            }
        }
    }
    rk_lp *cp = NULL;
    if (ok && n_new > 0) {
        /* the problem's rows, then the cliques: sum l <= 1 written as
         * sum_{pos} x - sum_{neg} x <= 1 - #neg */
        int mt = m + n_new;
        long *ts = malloc((size_t)(mt + 1) * sizeof *ts);
        int *ti = malloc((size_t)(nnz + n_new_nz + 1) * sizeof *ti);
        double *tv = malloc((size_t)(nnz + n_new_nz + 1) * sizeof *tv);
        double *tlb = malloc((size_t)mt * sizeof *tlb), *tub = malloc((size_t)mt * sizeof *tub);
        int *src = malloc((size_t)mt * sizeof *src);
        ok = ts && ti && tv && tlb && tub && src;
        if (ok) {
            memcpy(ts, rs, (size_t)(m + 1) * sizeof *ts);
            memcpy(ti, ri, (size_t)nnz * sizeof *ti);
            memcpy(tv, rv, (size_t)nnz * sizeof *tv);
            for (int i = 0; i < m; i++) {
                tlb[i] = lp->row_lb[i];
                tub[i] = lp->row_ub[i];
                src[i] = i;
            }
            for (int q = 0; q < n_new; q++) {
                int i = m + q, neg = 0;
                for (long p = new_start[q]; p < new_start[q + 1]; p++) {
                    long at = nnz + p;
                    ti[at] = new_lit[p] / 2;
                    tv[at] = new_lit[p] % 2 ? -1.0 : 1.0;
                    neg += new_lit[p] % 2;
                }
                ts[i + 1] = nnz + new_start[q + 1];
                tlb[i] = -INFINITY;
                tub[i] = 1.0 - neg;
                src[i] = new_src[q];
            }
            cp = lp_assemble(lp, n, NULL, lp->obj, lp->col_lb, lp->col_ub, mt, src, tlb, tub, ts, ti, tv);
            ok = cp != NULL;
        }
        free(ts);
        free(ti);
        free(tv);
        free(tlb);
        free(tub);
        free(src);
    }
    clq_set_free(&S);
    free(it);
    free(lit);
    free(new_lit);
    free(new_start);
    free(new_src);
    free(rs);
    free(ri);
    free(rv);
    if (!ok) {
        rk_lp_free(cp);
        return -1;
    }
    *out = cp;
    return cp ? n_new : 0;
}
