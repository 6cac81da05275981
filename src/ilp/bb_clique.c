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
 * their entries at its nonzeros.  A row side that its cliques imply (in the
 * LP too: the freeing row is the sum of its two cliques) is dropped, so the
 * LP grows by less (n16: 1,440 cliques, 630 sides dropped).  As cuts (the
 * violated ones at the root, kept for the tree) they did not prove n16_B61
 * in 90 s: the cliques not violated at the root matter in the tree. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define CLQ_MAX_ROW 1000 /* longer rows are not looked at (sorting cost) */

typedef struct {
    int col;
    int neg;     /* literal 1 - x */
    int cnt;     /* cliques holding it (differences along the sorted order) */
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

/* The maximal cliques of one side of a row (dir 0: <= ub, 1: >= lb; len
 * entries idx/val) in the column bounds cl..cu: each goes to emit(u, lit,
 * len) as sorted literals (col * 2 + complemented); emit returns 0 to go
 * on, -1 to fail.  it / lit: room for len entries.  Returns 1 when the side
 * is implied by its cliques and the bounds (every column a binary or fixed,
 * each literal in at least as many of the cliques as its weight, and no
 * more cliques than the slack: sum w l <= sum over the cliques of their
 * sums <= their number <= slack), 0 when not, -1 when emit failed. */
static int clq_row(int len, const int *idx, const double *val, double lb, double ub, int dir, const double *cl,
                   const double *cu, const signed char *is_int, clq_item *it, int *lit,
                   int (*emit)(void *u, const int *lit, int len), void *u) {
    if (len < 2 || len > CLQ_MAX_ROW) return 0;
    double s = dir == 0 ? 1.0 : -1.0, b = dir == 0 ? ub : -lb;
    if (!isfinite(b)) return 0;
    double minact = 0;
    int k = 0, usable = 1, others = 0;
    for (int p = 0; p < len && usable; p++) {
        int j = idx[p];
        double a = s * val[p], lo = cl[j], hi = cu[j];
        if (a == 0) continue;
        if (lo == hi) {
            minact += a * lo;
        } else if (is_int[j] && lo == 0 && hi == 1) {
            it[k].col = j;
            it[k].neg = a < 0;
            it[k].w = fabs(a);
            it[k].cnt = 0;
            if (a < 0) minact += a;
            k++;
        } else {
            double v = a > 0 ? lo : hi;
            others = 1;
            if (!isfinite(v)) usable = 0;
            else minact += a * v;
        }
    }
    if (!usable || k < 2) return 0;
    double slack = b - minact;
    double tol = 1e-6 * fmax(1.0, fabs(b) + fabs(minact));
    if (slack < 0) return 0; /* infeasible: the search proves it */
    qsort(it, (size_t)k, sizeof *it, clq_by_weight);
    /* literals alone past the slack are fixings (left to the search's
     * propagation): start after them */
    int first = 0;
    while (first < k && it[first].w > slack + tol) first++;
    if (k - first < 2 || it[first].w + it[first + 1].w <= slack + tol) return 0;
    /* R: the last literal conflicting with p (falls as p does); the heavier
     * ones conflicting with p: first..min(R, p - 1).  cnt: how many
     * cliques hold each literal (as differences along the prefix) */
    int R = k - 1, q = 0;
    for (int p = first + 1; p < k; p++) {
        while (R >= first && it[R].w + it[p].w <= slack + tol) R--;
        if (R < first) break; /* lighter literals conflict with none */
        int r = R < p - 1 ? R : p - 1;
        if (p + 1 < k && it[p + 1].w + it[p].w > slack + tol) continue; /* not maximal */
        int n = 0;
        for (int t = first; t <= r; t++) lit[n++] = it[t].col * 2 + it[t].neg;
        lit[n++] = it[p].col * 2 + it[p].neg;
        it[first].cnt++;
        if (r + 1 < k) it[r + 1].cnt--;
        it[p].cnt++;
        if (p + 1 < k) it[p + 1].cnt--;
        q++;
        sort_ints(lit, n);
        if (emit(u, lit, n)) return -1;
    }
    if (others || first > 0 || q > slack + 1e-9 * fmax(1.0, fabs(b))) return 0;
    int run = 0;
    for (int t = 0; t < k; t++) {
        run += it[t].cnt;
        if (run < it[t].w - 1e-9) return 0;
    }
    return 1;
}

/* The new rows of bb_add_cliques: cliques not seen yet (S), their
 * literals and source rows. */
typedef struct {
    clq_set S;
    int *lit;
    long *start;
    int *src;
    int n, cap_rows;
    long nz, cap_nz;
    int row;   /* the row being read */
    int dropped; /* row sides implied by their cliques */
} clq_acc;

static int clq_new_row(void *u, const int *lit, int len) {
    clq_acc *A = u;
    int had = clq_set_insert(&A->S, lit, len);
    if (had) return had < 0 ? -1 : 0;
    if (A->n + 1 > A->cap_rows) {
        int nc = A->cap_rows ? 2 * A->cap_rows : 256;
        long *ns = realloc(A->start, (size_t)(nc + 1) * sizeof *ns);
        if (!ns) return -1;
        A->start = ns;
        int *nsrc = realloc(A->src, (size_t)nc * sizeof *nsrc);
        if (!nsrc) return -1;
        A->src = nsrc;
        A->cap_rows = nc;
    }
    if (A->nz + len > A->cap_nz) {
        long nc = A->cap_nz ? 2 * A->cap_nz : 1024;
        while (nc < A->nz + len) nc *= 2;
        int *nl = realloc(A->lit, (size_t)nc * sizeof *nl);
        if (!nl) return -1;
        A->lit = nl;
        A->cap_nz = nc;
    }
    if (A->n == 0) A->start[0] = 0;
    memcpy(A->lit + A->nz, lit, (size_t)len * sizeof *lit);
    A->nz += len;
    A->src[A->n] = A->row;
    A->start[++A->n] = A->nz;
    return 0;
}

int bb_add_cliques(const rk_lp *lp, rk_lp **out, int *dropped) {
    *out = NULL;
    if (dropped) *dropped = 0;
    int n = lp->n, m = lp->m;
    long *rs;
    int *ri;
    double *rv;
    if (lp_rowwise(lp, &rs, &ri, &rv)) return -1;
    long nnz = rs[m];
    clq_item *it = malloc((size_t)(n ? n : 1) * sizeof *it);
    int *lit = malloc((size_t)(n ? n : 1) * sizeof *lit);
    clq_acc A;
    memset(&A, 0, sizeof A);
    int ok = it && lit && clq_set_init(&A.S, m + 64) == 0;
    /* set-packing rows: their cliques are there already (and such a row,
     * its own clique, is never dropped) */
    char *is_clq = calloc((size_t)(m ? m : 1), 1);
    ok = ok && is_clq;
    for (int i = 0; ok && i < m; i++) {
        int len = clq_row_as_clique(lp, rs, ri, rv, i, lit);
        is_clq[i] = len > 0;
        if (len > 0 && clq_set_insert(&A.S, lit, len) < 0) ok = 0;
    }
    /* the sides implied by their cliques are dropped (rlb/rub infinite) */
    double *rlb = malloc((size_t)(m ? m : 1) * sizeof *rlb), *rub = malloc((size_t)(m ? m : 1) * sizeof *rub);
    ok = ok && rlb && rub;
    for (int i = 0; ok && i < m; i++) {
        rlb[i] = lp->row_lb[i];
        rub[i] = lp->row_ub[i];
    }
    for (int i = 0; ok && i < m && A.n < m && A.nz < nnz; i++) {
        A.row = i;
        for (int dir = 0; ok && dir < 2; dir++) {
            int r = clq_row((int)(rs[i + 1] - rs[i]), ri + rs[i], rv + rs[i], lp->row_lb[i], lp->row_ub[i], dir,
                            lp->col_lb, lp->col_ub, lp->is_int, it, lit, clq_new_row, &A);
            if (r < 0) ok = 0;
            if (r == 1 && !is_clq[i]) {
                if (dir == 0) rub[i] = INFINITY;
                else rlb[i] = -INFINITY;
                A.dropped++;
            }
        }
    }
    rk_lp *cp = NULL;
    if (ok && A.n > 0) {
        /* the problem's rows, then the cliques: sum l <= 1 written as
         * sum_{pos} x - sum_{neg} x <= 1 - #neg */
        int mk = 0; /* the rows kept */
        for (int i = 0; i < m; i++) mk += rlb[i] > -INFINITY || rub[i] < INFINITY;
        int mt = mk + A.n;
        long *ts = malloc((size_t)(mt + 1) * sizeof *ts);
        int *ti = malloc((size_t)(nnz + A.nz + 1) * sizeof *ti);
        double *tv = malloc((size_t)(nnz + A.nz + 1) * sizeof *tv);
        double *tlb = malloc((size_t)mt * sizeof *tlb), *tub = malloc((size_t)mt * sizeof *tub);
        int *src = malloc((size_t)mt * sizeof *src);
        ok = ts && ti && tv && tlb && tub && src;
        if (ok) {
            long nz = 0;
            int w = 0;
            ts[0] = 0;
            for (int i = 0; i < m; i++) {
                if (rlb[i] == -INFINITY && rub[i] == INFINITY) continue;
                memcpy(ti + nz, ri + rs[i], (size_t)(rs[i + 1] - rs[i]) * sizeof *ti);
                memcpy(tv + nz, rv + rs[i], (size_t)(rs[i + 1] - rs[i]) * sizeof *tv);
                nz += rs[i + 1] - rs[i];
                tlb[w] = rlb[i];
                tub[w] = rub[i];
                src[w] = i;
                ts[++w] = nz;
            }
            for (int q = 0; q < A.n; q++) {
                int i = mk + q, neg = 0;
                for (long p = A.start[q]; p < A.start[q + 1]; p++) {
                    ti[nz + p] = A.lit[p] / 2;
                    tv[nz + p] = A.lit[p] % 2 ? -1.0 : 1.0;
                    neg += A.lit[p] % 2;
                }
                ts[i + 1] = nz + A.start[q + 1];
                tlb[i] = -INFINITY;
                tub[i] = 1.0 - neg;
                src[i] = A.src[q];
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
    int added = A.n;
    if (dropped) *dropped = A.dropped;
    free(rlb);
    free(rub);
    free(is_clq);
    clq_set_free(&A.S);
    free(A.lit);
    free(A.start);
    free(A.src);
    free(it);
    free(lit);
    free(rs);
    free(ri);
    free(rv);
    if (!ok) {
        rk_lp_free(cp);
        return -1;
    }
    *out = cp;
    return cp ? added : 0;
}
