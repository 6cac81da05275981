/* lu.c — sparse LU of the simplex basis: right-looking elimination with
 * Markowitz pivot choice (column singletons, row singletons, then a limited
 * Markowitz search with a relative threshold), L kept as column etas, U kept
 * both row- and column-wise; basis changes appended as product-form etas.
 * See lu.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lp_internal.h"
#include "lu.h"

#define LU_THRESH 0.1     /* relative pivot threshold */
#define LU_ABSTOL 1e-11   /* smallest acceptable pivot */
#define LU_SEARCH 4       /* columns examined by the Markowitz search */
#define ETA_MAX 100       /* updates before a refactorization is advised */

struct lu_factors {
    int m, cap_m;
    /* active submatrix during factorization */
    int *rlen, *rcap, **rcol;
    double **rval;
    int *clen, *ccap, **crow;     /* column patterns (may hold done rows) */
    int *ccnt;                    /* active entries per column */
    int *rhead, *rnext, *rprev;   /* row buckets by count */
    int *chead, *cnext, *cprev;   /* column buckets by count */
    int *rdone, *cdone;
    int *stamp, *pmark;
    double *rwork;
    /* factors */
    int npiv;
    int *prow, *pcol;
    double *diag;
    long *Lstart, Lcap;
    int *Lnz, nLnz;               /* pivots with a nonempty L column */
    int *Lidx;
    double *Lval;
    long *Ustart, Ucap;
    int *Uidx;
    double *Uval;
    long *UCstart;
    int *UCidx;
    double *UCval;
    double *work, *work2;
    /* hypersparse FTRAN: hw and hmark are all zero between calls */
    int *rrank;                   /* row -> pivot */
    double *hw;
    char *hmark;
    int *hlist, *hstack, *hpost;
    int *blist;                   /* lu_btran_unit's nonzero positions */
    long *hptr;
    double hdens, hdens_b;        /* running mean of the reach density */
    unsigned hskip, hskip_b;
    int *crank;                   /* position -> pivot */
    /* eta file */
    int neta, eta_cap_n;
    unsigned long generation;     /* factorizations done */
    int *eta_p;
    double *eta_piv;
    long *eta_start, eta_cap, eta_nnz;
    int *eta_idx;
    double *eta_val;
    /* the eta file by row, for BTRAN of sparse vectors: er_head[i] is the
     * newest entry q with eta_idx[q] == i, er_next[q] the next older one,
     * eta_of[q] its eta; ep_head[i] / ep_next[e] the same for the etas'
     * pivot positions; emark marks the etas a BTRAN must apply */
    long *er_head, *er_next;
    int *eta_of, *ep_head, *ep_next;
    unsigned char *emark;
    long lu_nnz;
};

lu_factors *lu_new(void) { return calloc(1, sizeof(lu_factors)); }

static void free_active(lu_factors *lu) {
    for (int i = 0; i < lu->cap_m; i++) {
        if (lu->rcol) free(lu->rcol[i]);
        if (lu->rval) free(lu->rval[i]);
        if (lu->crow) free(lu->crow[i]);
    }
}

void lu_free(lu_factors *lu) {
    if (!lu) return;
    free_active(lu);
    free(lu->rlen); free(lu->rcap); free(lu->rcol); free(lu->rval);
    free(lu->clen); free(lu->ccap); free(lu->crow); free(lu->ccnt);
    free(lu->rhead); free(lu->rnext); free(lu->rprev);
    free(lu->chead); free(lu->cnext); free(lu->cprev);
    free(lu->rdone); free(lu->cdone); free(lu->stamp); free(lu->pmark); free(lu->rwork);
    free(lu->prow); free(lu->pcol); free(lu->diag);
    free(lu->Lstart); free(lu->Lidx); free(lu->Lval); free(lu->Lnz);
    free(lu->Ustart); free(lu->Uidx); free(lu->Uval);
    free(lu->UCstart); free(lu->UCidx); free(lu->UCval);
    free(lu->work); free(lu->work2);
    free(lu->rrank); free(lu->crank); free(lu->hw); free(lu->hmark); free(lu->hlist); free(lu->blist); free(lu->hstack); free(lu->hpost); free(lu->hptr);
    free(lu->eta_p); free(lu->eta_piv); free(lu->eta_start); free(lu->eta_idx); free(lu->eta_val);
    free(lu->er_head); free(lu->er_next); free(lu->eta_of); free(lu->ep_head); free(lu->ep_next); free(lu->emark);
    free(lu);
}

#define REALLOC(p, n) do { void *q_ = realloc((p), (size_t)(n) * sizeof(*(p))); if (!q_) return -1; (p) = q_; } while (0)

static int ensure_m(lu_factors *lu, int m) {
    if (m < 1) m = 1;
    if (m <= lu->cap_m) return 0;
    int old = lu->cap_m;
    int cap = m;
    REALLOC(lu->rlen, cap); REALLOC(lu->rcap, cap); REALLOC(lu->rcol, cap); REALLOC(lu->rval, cap);
    REALLOC(lu->clen, cap); REALLOC(lu->ccap, cap); REALLOC(lu->crow, cap); REALLOC(lu->ccnt, cap);
    REALLOC(lu->rhead, cap + 2); REALLOC(lu->rnext, cap); REALLOC(lu->rprev, cap);
    REALLOC(lu->chead, cap + 2); REALLOC(lu->cnext, cap); REALLOC(lu->cprev, cap);
    REALLOC(lu->rdone, cap); REALLOC(lu->cdone, cap); REALLOC(lu->stamp, cap); REALLOC(lu->pmark, cap); REALLOC(lu->rwork, cap);
    REALLOC(lu->prow, cap); REALLOC(lu->pcol, cap); REALLOC(lu->diag, cap);
    REALLOC(lu->Lstart, cap + 1); REALLOC(lu->Lnz, cap); REALLOC(lu->Ustart, cap + 1); REALLOC(lu->UCstart, cap + 1);
    REALLOC(lu->work, cap); REALLOC(lu->work2, cap);
    REALLOC(lu->rrank, cap); REALLOC(lu->crank, cap); REALLOC(lu->hw, cap); REALLOC(lu->hmark, cap);
    REALLOC(lu->er_head, cap); REALLOC(lu->ep_head, cap);
    REALLOC(lu->hlist, cap); REALLOC(lu->blist, cap + 1); REALLOC(lu->hstack, cap); REALLOC(lu->hpost, cap); REALLOC(lu->hptr, cap);
    memset(lu->hw, 0, (size_t)cap * sizeof *lu->hw);
    memset(lu->hmark, 0, (size_t)cap);
    for (int i = old; i < cap; i++) {
        lu->rcol[i] = NULL; lu->rval[i] = NULL; lu->crow[i] = NULL;
        lu->rcap[i] = 0; lu->ccap[i] = 0;
    }
    lu->cap_m = cap;
    return 0;
}

static int row_push(lu_factors *lu, int i, int c, double v) {
    if (lu->rlen[i] == lu->rcap[i]) {
        int cap = lu->rcap[i] ? 2 * lu->rcap[i] : 4;
        REALLOC(lu->rcol[i], cap);
        REALLOC(lu->rval[i], cap);
        lu->rcap[i] = cap;
    }
    lu->rcol[i][lu->rlen[i]] = c;
    lu->rval[i][lu->rlen[i]] = v;
    lu->rlen[i]++;
    return 0;
}

static int col_push(lu_factors *lu, int c, int i) {
    if (lu->clen[c] == lu->ccap[c]) {
        int cap = lu->ccap[c] ? 2 * lu->ccap[c] : 4;
        REALLOC(lu->crow[c], cap);
        lu->ccap[c] = cap;
    }
    lu->crow[c][lu->clen[c]++] = i;
    return 0;
}

static int row_find(const lu_factors *lu, int i, int c) {
    const int *cc = lu->rcol[i];
    int n = lu->rlen[i];
    for (int t = 0; t < n; t++)
        if (cc[t] == c) return t;
    return -1;
}

/* buckets */
static void bk_insert(int *head, int *next, int *prev, int x, int cnt) {
    prev[x] = -1;
    next[x] = head[cnt];
    if (head[cnt] >= 0) prev[head[cnt]] = x;
    head[cnt] = x;
}
static void bk_remove(int *head, int *next, int *prev, int x, int cnt) {
    if (prev[x] >= 0) next[prev[x]] = next[x]; else head[cnt] = next[x];
    if (next[x] >= 0) prev[next[x]] = prev[x];
}

static int push_L(lu_factors *lu, long *nL, int i, double l) {
    if (*nL == lu->Lcap) {
        long cap = lu->Lcap ? 2 * lu->Lcap : 1024;
        REALLOC(lu->Lidx, cap); REALLOC(lu->Lval, cap);
        lu->Lcap = cap;
    }
    lu->Lidx[*nL] = i;
    lu->Lval[*nL] = l;
    (*nL)++;
    return 0;
}
static int push_U(lu_factors *lu, long *nU, int j, double v) {
    if (*nU == lu->Ucap) {
        long cap = lu->Ucap ? 2 * lu->Ucap : 1024;
        REALLOC(lu->Uidx, cap); REALLOC(lu->Uval, cap);
        lu->Ucap = cap;
    }
    lu->Uidx[*nU] = j;
    lu->Uval[*nU] = v;
    (*nU)++;
    return 0;
}

int lu_factor(lu_factors *lu, int m, const long *start, const int *idx, const double *val,
                 int *bad_pos, int *bad_row) {
    if (ensure_m(lu, m)) return -1;
    lu->m = m;
    lu->generation++;
    lu->neta = 0;
    lu->eta_nnz = 0;
    lu->npiv = 0;
    for (int i = 0; i < m; i++) {
        lu->rlen[i] = 0; lu->clen[i] = 0;
        lu->rdone[i] = 0; lu->cdone[i] = 0;
        lu->stamp[i] = -1; lu->pmark[i] = 0; lu->rwork[i] = 0.0;
        lu->er_head[i] = -1; lu->ep_head[i] = -1;
    }
    /* Pre-pass: columns with a single entry (slacks, mostly) are pivoted
     * first without entering the active matrix; their rows' entries in the
     * other columns become their U rows. */
    int k = 0;
    long nL = 0, nU = 0;
    for (int c = 0; c < m; c++) {
        if (start[c + 1] - start[c] != 1) continue;
        int i = idx[start[c]];
        double v = val[start[c]];
        if (lu->rdone[i] || !(fabs(v) > LU_ABSTOL)) continue;
        lu->prow[k] = i;
        lu->pcol[k] = c;
        lu->diag[k] = v;
        lu->rdone[i] = 1;
        lu->cdone[c] = 1;
        lu->stamp[i] = k;
        k++;
    }
    int npre = k;
    for (int t = 0; t <= npre; t++) lu->Ustart[t] = 0;
    for (int c = 0; c < m; c++) {
        if (lu->cdone[c]) continue;
        for (long p = start[c]; p < start[c + 1]; p++)
            if (val[p] != 0.0 && lu->rdone[idx[p]]) lu->Ustart[lu->stamp[idx[p]] + 1]++;
    }
    for (int t = 0; t < npre; t++) lu->Ustart[t + 1] += lu->Ustart[t];
    nU = lu->Ustart[npre];
    if (nU > lu->Ucap) {
        long cap = lu->Ucap ? 2 * lu->Ucap : 1024;
        while (cap < nU) cap *= 2;
        REALLOC(lu->Uidx, cap); REALLOC(lu->Uval, cap);
        lu->Ucap = cap;
    }
    for (int t = 0; t < npre; t++) { lu->Lstart[t] = lu->Ustart[t]; } /* cursors */
    for (int c = 0; c < m; c++) {
        if (lu->cdone[c]) continue;
        for (long p = start[c]; p < start[c + 1]; p++) {
            if (val[p] == 0.0) continue;
            int i = idx[p];
            if (lu->rdone[i]) {
                long d = lu->Lstart[lu->stamp[i]]++;
                lu->Uidx[d] = c;
                lu->Uval[d] = val[p];
            } else if (row_push(lu, i, c, val[p]) || col_push(lu, c, i)) {
                return -1;
            }
        }
    }
    for (int t = 0; t < npre; t++) { lu->Lstart[t] = 0; lu->stamp[lu->prow[t]] = -1; }
    for (int kk = 0; kk <= m + 1; kk++) { lu->rhead[kk] = -1; lu->chead[kk] = -1; }
    for (int i = m - 1; i >= 0; i--)
        if (!lu->rdone[i]) bk_insert(lu->rhead, lu->rnext, lu->rprev, i, lu->rlen[i]);
    for (int c = m - 1; c >= 0; c--) {
        lu->ccnt[c] = lu->clen[c];
        if (!lu->cdone[c]) bk_insert(lu->chead, lu->cnext, lu->cprev, c, lu->ccnt[c]);
    }

    int nbad = 0;
    int ncols_left = m - npre;
    while (ncols_left > 0) {
        int pr = -1, pc = -1;
        /* empty columns are singular */
        if (lu->chead[0] >= 0) {
            int c = lu->chead[0];
            bk_remove(lu->chead, lu->cnext, lu->cprev, c, 0);
            lu->cdone[c] = 1;
            bad_pos[nbad++] = c;
            ncols_left--;
            continue;
        }
        /* column singleton */
        for (int c = lu->chead[1]; c >= 0 && pc < 0; c = lu->cnext[c]) {
            int i = -1;
            for (int t = 0; t < lu->clen[c]; t++)
                if (!lu->rdone[lu->crow[c][t]]) { i = lu->crow[c][t]; break; }
            int t = row_find(lu, i, c);
            if (fabs(lu->rval[i][t]) > LU_ABSTOL) { pr = i; pc = c; }
        }
        /* row singleton */
        if (pc < 0)
            for (int i = lu->rhead[1]; i >= 0 && pc < 0; i = lu->rnext[i])
                if (fabs(lu->rval[i][0]) > LU_ABSTOL) { pr = i; pc = lu->rcol[i][0]; }
        /* Markowitz search */
        if (pc < 0) {
            double best = INFINITY, bestv = 0.0;
            int examined = 0;
            int singular_col = -1;
            for (int cnt = 1; cnt <= m && examined < LU_SEARCH && singular_col < 0; cnt++) {
                for (int c = lu->chead[cnt]; c >= 0; c = lu->cnext[c]) {
                    double cmax = 0.0;
                    for (int t = 0; t < lu->clen[c]; t++) {
                        int i = lu->crow[c][t];
                        if (lu->rdone[i]) continue;
                        double v = fabs(lu->rval[i][row_find(lu, i, c)]);
                        if (v > cmax) cmax = v;
                    }
                    if (cmax <= LU_ABSTOL) { singular_col = c; break; }
                    for (int t = 0; t < lu->clen[c]; t++) {
                        int i = lu->crow[c][t];
                        if (lu->rdone[i]) continue;
                        double v = fabs(lu->rval[i][row_find(lu, i, c)]);
                        if (v < LU_THRESH * cmax || v <= LU_ABSTOL) continue;
                        double cost = (double)(lu->rlen[i] - 1) * (double)(cnt - 1);
                        if (cost < best || (cost == best && v > bestv)) {
                            best = cost; bestv = v; pr = i; pc = c;
                        }
                    }
                    if (++examined >= LU_SEARCH) break;
                }
            }
            if (singular_col >= 0) {
                int c = singular_col;
                bk_remove(lu->chead, lu->cnext, lu->cprev, c, lu->ccnt[c]);
                for (int t = 0; t < lu->clen[c]; t++) {
                    int i = lu->crow[c][t];
                    if (lu->rdone[i]) continue;
                    int q = row_find(lu, i, c);
                    bk_remove(lu->rhead, lu->rnext, lu->rprev, i, lu->rlen[i]);
                    lu->rcol[i][q] = lu->rcol[i][lu->rlen[i] - 1];
                    lu->rval[i][q] = lu->rval[i][lu->rlen[i] - 1];
                    lu->rlen[i]--;
                    bk_insert(lu->rhead, lu->rnext, lu->rprev, i, lu->rlen[i]);
                }
                lu->clen[c] = 0;
                lu->ccnt[c] = 0;
                lu->cdone[c] = 1;
                bad_pos[nbad++] = c;
                ncols_left--;
                continue;
            }
            if (pc < 0) {
                /* nothing acceptable (all remaining columns tiny): fail them all */
                for (int c = 0; c < m; c++)
                    if (!lu->cdone[c]) { lu->cdone[c] = 1; bad_pos[nbad++] = c; }
                break;
            }
        }
        /* eliminate with pivot (pr, pc) */
        int r = pr, c = pc;
        int tp = row_find(lu, r, c);
        double piv = lu->rval[r][tp];
        lu->prow[k] = r;
        lu->pcol[k] = c;
        lu->diag[k] = piv;
        lu->Lstart[k] = nL;
        lu->Ustart[k] = nU;
        bk_remove(lu->rhead, lu->rnext, lu->rprev, r, lu->rlen[r]);
        bk_remove(lu->chead, lu->cnext, lu->cprev, c, lu->ccnt[c]);
        lu->rdone[r] = 1;
        lu->cdone[c] = 1;
        /* U row and scatter of the pivot row; unlink r from its columns */
        for (int t = 0; t < lu->rlen[r]; t++) {
            int j = lu->rcol[r][t];
            if (j == c) continue;
            double v = lu->rval[r][t];
            if (push_U(lu, &nU, j, v)) return -1;
            lu->rwork[j] = v;
            lu->pmark[j] = 1;
            bk_remove(lu->chead, lu->cnext, lu->cprev, j, lu->ccnt[j]);
            lu->ccnt[j]--;
        }
        /* eliminate column c from the other rows */
        for (int t = 0; t < lu->clen[c]; t++) {
            int i = lu->crow[c][t];
            if (lu->rdone[i]) continue;
            int q = row_find(lu, i, c);
            double l = lu->rval[i][q] / piv;
            if (push_L(lu, &nL, i, l)) return -1;
            bk_remove(lu->rhead, lu->rnext, lu->rprev, i, lu->rlen[i]);
            lu->rcol[i][q] = lu->rcol[i][lu->rlen[i] - 1];
            lu->rval[i][q] = lu->rval[i][lu->rlen[i] - 1];
            lu->rlen[i]--;
            int len0 = lu->rlen[i];
            for (int s = 0; s < len0; s++) {
                int j = lu->rcol[i][s];
                if (lu->pmark[j]) {
                    lu->rval[i][s] -= l * lu->rwork[j];
                    lu->stamp[j] = i;
                }
            }
            for (int s = 0; s < lu->rlen[r]; s++) {
                int j = lu->rcol[r][s];
                if (j == c || lu->stamp[j] == i) continue;
                if (row_push(lu, i, j, -l * lu->rval[r][s])) return -1;
                if (col_push(lu, j, i)) return -1;
                lu->ccnt[j]++;
            }
            bk_insert(lu->rhead, lu->rnext, lu->rprev, i, lu->rlen[i]);
        }
        /* clear scatter, re-bucket the touched columns */
        for (int t = 0; t < lu->rlen[r]; t++) {
            int j = lu->rcol[r][t];
            if (j == c) continue;
            lu->rwork[j] = 0.0;
            lu->pmark[j] = 0;
            lu->stamp[j] = -1;
            bk_insert(lu->chead, lu->cnext, lu->cprev, j, lu->ccnt[j]);
        }
        lu->clen[c] = 0;
        lu->ccnt[c] = 0;
        lu->rlen[r] = 0;
        k++;
        ncols_left--;
    }
    lu->npiv = k;
    lu->Lstart[k] = nL;
    lu->Ustart[k] = nU;
    if (nbad > 0) {
        int nr = 0;
        for (int i = 0; i < m; i++)
            if (!lu->rdone[i]) bad_row[nr++] = i;
        return nbad;
    }
    /* Renumber everything in pivot order: L and U indices become pivot
     * indices, so the triangular solves run over a contiguous work vector
     * (gather, solve, scatter). */
    int *rowrank = lu->stamp, *colrank = lu->pmark;
    for (int kk = 0; kk < m; kk++) {
        rowrank[lu->prow[kk]] = kk;
        colrank[lu->pcol[kk]] = kk;
    }
    for (int i = 0; i < m; i++) { lu->rrank[i] = rowrank[i]; lu->crank[i] = colrank[i]; }
    for (long p = 0; p < nL; p++) lu->Lidx[p] = rowrank[lu->Lidx[p]];
    for (long p = 0; p < nU; p++) lu->Uidx[p] = colrank[lu->Uidx[p]];
    /* column-wise copy of U by pivot: column k holds (pivot l < k, value) */
    long *cs = lu->UCstart;
    for (int j = 0; j <= m; j++) cs[j] = 0;
    for (long p = 0; p < nU; p++) cs[lu->Uidx[p] + 1]++;
    for (int j = 0; j < m; j++) cs[j + 1] += cs[j];
    {
        void *q1 = realloc(lu->UCidx, (size_t)(nU ? nU : 1) * sizeof(int));
        if (!q1) return -1;
        lu->UCidx = q1;
        void *q2 = realloc(lu->UCval, (size_t)(nU ? nU : 1) * sizeof(double));
        if (!q2) return -1;
        lu->UCval = q2;
    }
    int *fill = lu->rdone; /* reuse as counters */
    for (int j = 0; j < m; j++) fill[j] = 0;
    for (int kk = 0; kk < k; kk++)
        for (long p = lu->Ustart[kk]; p < lu->Ustart[kk + 1]; p++) {
            int j = lu->Uidx[p];
            long d = cs[j] + fill[j]++;
            lu->UCidx[d] = kk;
            lu->UCval[d] = lu->Uval[p];
        }
    for (int j = 0; j < m; j++) { lu->stamp[j] = -1; lu->pmark[j] = 0; }
    lu->nLnz = 0;
    for (int kk = 0; kk < k; kk++)
        if (lu->Lstart[kk + 1] > lu->Lstart[kk]) lu->Lnz[lu->nLnz++] = kk;
    lu->lu_nnz = nL + nU + m;
    return 0;
}

/* Sparse triangular solve with U seen through (start, idx, val): the
 * nonzeros of w at pivots list[0..nz) reach, by depth-first search over
 * k -> idx[start[k]..start[k+1]), the pivots the solve touches (marked in
 * lu->hmark, listed in post-order in lu->hpost); then w is solved in reverse
 * post-order.  Returns the number of pivots in lu->hpost. */
static int u_solve_sparse(lu_factors *lu, const long *start, const int *idx, const double *val, const int *list, int nz) {
    double *w = lu->hw;
    char *mk = lu->hmark;
    int npost = 0;
    int *st = lu->hstack, *post = lu->hpost;
    long *ptr = lu->hptr;
    for (int t = 0; t < nz; t++) {
        int k0 = list[t];
        if (mk[k0]) continue;
        int top = 0;
        st[top] = k0;
        ptr[top] = start[k0];
        mk[k0] = 1;
        top++;
        while (top > 0) {
            int k = st[top - 1];
            if (ptr[top - 1] < start[k + 1]) {
                int l = idx[ptr[top - 1]++];
                if (!mk[l]) {
                    mk[l] = 1;
                    st[top] = l;
                    ptr[top] = start[l];
                    top++;
                }
            } else {
                post[npost++] = k;
                top--;
            }
        }
    }
    for (int t = npost - 1; t >= 0; t--) {
        int k = post[t];
        double v = w[k];
        if (v == 0.0) continue;
        if (fabs(v) < 1e-14) { w[k] = 0.0; continue; }
        v /= lu->diag[k];
        w[k] = v;
        for (long p = start[k]; p < start[k + 1]; p++) w[idx[p]] -= val[p] * v;
    }
    return npost;
}

/* The sparse solves' right-hand side: when x has at most m / 20 + 1
 * nonzeros (one pass, stopping early otherwise), move x[i] to lu->hw at
 * rank[i] (x[i] becomes 0) and list those ranks in lu->hlist; returns the
 * count, or -1 (x untouched) when x is too dense, or when the solve's
 * results (running density *dens) have been dense lately, except every
 * 16th call (*skip counts them) to notice when they become sparse again. */
static int sparse_gather(lu_factors *lu, double *x, const int *rank, double dens, unsigned *skip, const int *known,
                         int nknown) {
    if (dens > 0.15 && (++*skip & 15) != 0) return -1;
    int m = lu->m, lim = m / 20 + 1, nz = 0;
    int *list = lu->hlist;
    if (known && nknown >= 0) {
        /* the caller listed x's nonzeros (increasing, possibly with zeros) */
        for (int t = 0; t < nknown; t++)
            if (x[known[t]] != 0.0 && (nz == 0 || list[nz - 1] != known[t])) {
                if (nz == lim) return -1;
                list[nz++] = known[t];
            }
    } else {
        for (int i = 0; i < m; i++)
            if (x[i] != 0.0) {
                if (nz == lim) return -1;
                list[nz++] = i;
            }
    }
    for (int t = 0; t < nz; t++) {
        int i = list[t], k = rank[i];
        lu->hw[k] = x[i];
        x[i] = 0.0;
        list[t] = k;
    }
    return nz;
}

/* The sparse solves' result: w at the pivots lu->hpost[0..npost) goes to x
 * at perm[pivot], w and the marks are cleared (their zero invariant), and the
 * result's density enters the running mean *dens. */
static void sparse_scatter(lu_factors *lu, double *x, const int *perm, int npost, double *dens) {
    double *w = lu->hw;
    char *mk = lu->hmark;
    for (int t = 0; t < npost; t++) {
        int k = lu->hpost[t];
        x[perm[k]] = w[k];
        w[k] = 0.0;
        mk[k] = 0;
    }
    *dens = 0.9 * *dens + 0.1 * (double)npost / (double)lu->m;
}

/* FTRAN through L and U for a sparse right-hand side (Gilbert-Peierls:
 * depth-first search for the reach in U, solve in topological order).
 * Returns 0 if x is too dense for it (x untouched). */
static int ftran_lu_sparse(lu_factors *lu, double *x, const int *known, int nknown) {
    int nz = sparse_gather(lu, x, lu->rrank, lu->hdens, &lu->hskip, known, nknown);
    if (nz < 0) return 0;
    int *list = lu->hlist;
    double *w = lu->hw;
    char *mk = lu->hmark;
    for (int t = 0; t < nz; t++) mk[list[t]] = 1;
    /* L (the etas of L are few: loop over them) */
    for (int t = 0; t < lu->nLnz; t++) {
        int k = lu->Lnz[t];
        double v = w[k];
        if (v == 0.0) continue;
        for (long p = lu->Lstart[k]; p < lu->Lstart[k + 1]; p++) {
            int l = lu->Lidx[p];
            if (!mk[l]) { mk[l] = 1; list[nz++] = l; }
            w[l] -= lu->Lval[p] * v;
        }
    }
    /* U column-wise: reach of the nonzeros, solve, then scatter and restore
     * the zero invariant */
    for (int t = 0; t < nz; t++) mk[list[t]] = 0;
    int npost = u_solve_sparse(lu, lu->UCstart, lu->UCidx, lu->UCval, list, nz);
    sparse_scatter(lu, x, lu->pcol, npost, &lu->hdens);
    return 1;
}

static void ftran_etas(lu_factors *lu, double *x) {
    for (int e = 0; e < lu->neta; e++) {
        int p = lu->eta_p[e];
        double v = x[p];
        if (v == 0.0) continue;
        v /= lu->eta_piv[e];
        x[p] = v;
        for (long q = lu->eta_start[e]; q < lu->eta_start[e + 1]; q++) x[lu->eta_idx[q]] -= lu->eta_val[q] * v;
    }
}

void lu_ftran(lu_factors *lu, double *x) { lu_ftran_known(lu, x, NULL, -1); }

void lu_ftran_known(lu_factors *lu, double *x, const int *rows, int nrows) {
    int m = lu->m;
    if (ftran_lu_sparse(lu, x, rows, nrows)) {
        ftran_etas(lu, x);
        return;
    }
    double *w = lu->work;
    for (int k = 0; k < m; k++) w[k] = x[lu->prow[k]];
    /* L */
    for (int t = 0; t < lu->nLnz; t++) {
        int k = lu->Lnz[t];
        double v = w[k];
        if (v == 0.0) continue;
        for (long p = lu->Lstart[k]; p < lu->Lstart[k + 1]; p++) w[lu->Lidx[p]] -= lu->Lval[p] * v;
    }
    /* U */
    for (int k = m - 1; k >= 0; k--) {
        double v = w[k];
        if (v == 0.0) continue;
        if (fabs(v) < 1e-14) { w[k] = 0.0; continue; }
        v /= lu->diag[k];
        w[k] = v;
        for (long p = lu->UCstart[k]; p < lu->UCstart[k + 1]; p++) w[lu->UCidx[p]] -= lu->UCval[p] * v;
    }
    for (int k = 0; k < m; k++) x[lu->pcol[k]] = w[k];
    /* etas */
    for (int e = 0; e < lu->neta; e++) {
        int p = lu->eta_p[e];
        double v = x[p];
        if (v == 0.0) continue;
        v /= lu->eta_piv[e];
        x[p] = v;
        for (long q = lu->eta_start[e]; q < lu->eta_start[e + 1]; q++) x[lu->eta_idx[q]] -= lu->eta_val[q] * v;
    }
}

void lu_ftran2(lu_factors *lu, double *x, double *x2) { lu_ftran2_known(lu, x, NULL, -1, x2, NULL, -1); }

void lu_ftran2_known(lu_factors *lu, double *x, const int *rows, int nrows, double *x2, const int *rows2, int nrows2) {
    int m = lu->m;
    if (ftran_lu_sparse(lu, x, rows, nrows)) {
        ftran_etas(lu, x);
        lu_ftran_known(lu, x2, rows2, nrows2);
        return;
    }
    if (ftran_lu_sparse(lu, x2, rows2, nrows2)) {
        ftran_etas(lu, x2);
        lu_ftran(lu, x);
        return;
    }
    double *w = lu->work, *w2 = lu->work2;
    for (int k = 0; k < m; k++) {
        w[k] = x[lu->prow[k]];
        w2[k] = x2[lu->prow[k]];
    }
    for (int t = 0; t < lu->nLnz; t++) {
        int k = lu->Lnz[t];
        double v = w[k], v2 = w2[k];
        if (v == 0.0 && v2 == 0.0) continue;
        for (long p = lu->Lstart[k]; p < lu->Lstart[k + 1]; p++) {
            w[lu->Lidx[p]] -= lu->Lval[p] * v;
            w2[lu->Lidx[p]] -= lu->Lval[p] * v2;
        }
    }
    for (int k = m - 1; k >= 0; k--) {
        double v = w[k], v2 = w2[k];
        if (v == 0.0 && v2 == 0.0) continue;
        if (fabs(v) < 1e-14) v = 0.0;
        if (fabs(v2) < 1e-14) v2 = 0.0;
        v /= lu->diag[k];
        v2 /= lu->diag[k];
        w[k] = v;
        w2[k] = v2;
        for (long p = lu->UCstart[k]; p < lu->UCstart[k + 1]; p++) {
            w[lu->UCidx[p]] -= lu->UCval[p] * v;
            w2[lu->UCidx[p]] -= lu->UCval[p] * v2;
        }
    }
    for (int k = 0; k < m; k++) {
        x[lu->pcol[k]] = w[k];
        x2[lu->pcol[k]] = w2[k];
    }
    for (int e = 0; e < lu->neta; e++) {
        int p = lu->eta_p[e];
        double v = x[p], v2 = x2[p];
        if (v == 0.0 && v2 == 0.0) continue;
        v /= lu->eta_piv[e];
        v2 /= lu->eta_piv[e];
        x[p] = v;
        x2[p] = v2;
        for (long q = lu->eta_start[e]; q < lu->eta_start[e + 1]; q++) {
            x[lu->eta_idx[q]] -= lu->eta_val[q] * v;
            x2[lu->eta_idx[q]] -= lu->eta_val[q] * v2;
        }
    }
}

/* BTRAN through U' and L' for a sparse right-hand side (x indexed by
 * position on entry, by row on return).  Returns 0 if too dense. */
static void btran_lu_dense(lu_factors *lu, double *x);

static int btran_lu_sparse(lu_factors *lu, double *x, const int *known, int nknown) {
    int nz = sparse_gather(lu, x, lu->crank, lu->hdens_b, &lu->hskip_b, known, nknown);
    if (nz < 0) return 0;
    int *list = lu->hlist;
    double *w = lu->hw;
    char *mk = lu->hmark;
    /* U row-wise (the transposed solve) */
    int npost = u_solve_sparse(lu, lu->Ustart, lu->Uidx, lu->Uval, list, nz);
    int *post = lu->hpost;
    for (int t = lu->nLnz - 1; t >= 0; t--) {
        int k = lu->Lnz[t];
        double sum = 0.0;
        for (long p = lu->Lstart[k]; p < lu->Lstart[k + 1]; p++) sum += lu->Lval[p] * w[lu->Lidx[p]];
        if (sum == 0.0) continue;
        w[k] -= sum;
        if (!mk[k]) { mk[k] = 1; post[npost++] = k; }
    }
    sparse_scatter(lu, x, lu->prow, npost, &lu->hdens_b);
    return 1;
}

/* x := E_e^-T x: the transposed solve with eta e changes x at its pivot only */
static inline void btran_eta(const lu_factors *lu, double *x, int e) {
    int p = lu->eta_p[e];
    double s = x[p];
    for (long q = lu->eta_start[e]; q < lu->eta_start[e + 1]; q++) s -= lu->eta_val[q] * x[lu->eta_idx[q]];
    x[p] = s / lu->eta_piv[e];
}

void lu_btran(lu_factors *lu, double *x) {
    for (int e = lu->neta - 1; e >= 0; e--) btran_eta(lu, x, e);
    if (btran_lu_sparse(lu, x, NULL, -1)) return;
    btran_lu_dense(lu, x);
}

/* mark the etas older than `below` that hold position i (in their column or
 * as their pivot): a nonzero there makes them change x */
static void eta_mark_position(lu_factors *lu, int i, int below) {
    for (long q = lu->er_head[i]; q >= 0; q = lu->er_next[q])
        if (lu->eta_of[q] < below) lu->emark[lu->eta_of[q]] = 1;
    for (int e = lu->ep_head[i]; e >= 0; e = lu->ep_next[e])
        if (e < below) lu->emark[e] = 1;
}

void lu_btran_unit(lu_factors *lu, double *x, int r) {
    int m = lu->m, lim = m / 20 + 1;
    int *pos = lu->blist, np = 1;
    pos[0] = r;
    /* an eta whose column and pivot position meet no nonzero of x leaves x
     * as it is: only the marked ones are applied */
    if (lu->neta > 0) {
        memset(lu->emark, 0, (size_t)lu->neta);
        eta_mark_position(lu, r, lu->neta);
    }
    for (int e = lu->neta - 1; e >= 0; e--) {
        if (!lu->emark[e]) continue;
        int p = lu->eta_p[e];
        double was = x[p];
        btran_eta(lu, x, e);
        if (was == 0.0 && x[p] != 0.0) {
            if (np <= lim) pos[np++] = p;
            eta_mark_position(lu, p, e);
        }
    }
    if (np <= lim) {
        sort_ints(pos, np);
        int k = 0;
        for (int t = 0; t < np; t++)
            if (k == 0 || pos[t] != pos[k - 1]) pos[k++] = pos[t];
        np = k;
        if (btran_lu_sparse(lu, x, pos, np)) return;
    } else if (btran_lu_sparse(lu, x, NULL, -1)) {
        return;
    }
    btran_lu_dense(lu, x);
}

static void btran_lu_dense(lu_factors *lu, double *x) {
    int m = lu->m;
    double *w = lu->work;
    for (int k = 0; k < m; k++) w[k] = x[lu->pcol[k]];
    /* U' */
    for (int k = 0; k < m; k++) {
        double v = w[k];
        if (v == 0.0) continue;
        if (fabs(v) < 1e-14) { w[k] = 0.0; continue; }
        v /= lu->diag[k];
        w[k] = v;
        for (long p = lu->Ustart[k]; p < lu->Ustart[k + 1]; p++) w[lu->Uidx[p]] -= lu->Uval[p] * v;
    }
    /* L' */
    for (int t = lu->nLnz - 1; t >= 0; t--) {
        int k = lu->Lnz[t];
        double s = 0.0;
        for (long p = lu->Lstart[k]; p < lu->Lstart[k + 1]; p++) s += lu->Lval[p] * w[lu->Lidx[p]];
        w[k] -= s;
    }
    for (int k = 0; k < m; k++) x[lu->prow[k]] = w[k];
}

int lu_update(lu_factors *lu, int p, const double *alpha, const int *list, int nz) {
    int m = lu->m;
    if (lu->neta == lu->eta_cap_n) {
        int cap = lu->eta_cap_n ? 2 * lu->eta_cap_n : 64;
        REALLOC(lu->eta_p, cap); REALLOC(lu->eta_piv, cap); REALLOC(lu->eta_start, cap + 1);
        REALLOC(lu->ep_next, cap); REALLOC(lu->emark, cap);
        lu->eta_cap_n = cap;
        if (lu->neta == 0) lu->eta_start[0] = 0;
    }
    if (lu->neta == 0) { lu->eta_start[0] = 0; lu->eta_nnz = 0; }
    long need = lu->eta_nnz + m;
    if (need > lu->eta_cap) {
        long cap = lu->eta_cap ? 2 * lu->eta_cap : 4096;
        while (cap < need) cap *= 2;
        REALLOC(lu->eta_idx, cap); REALLOC(lu->eta_val, cap);
        REALLOC(lu->er_next, cap); REALLOC(lu->eta_of, cap);
        lu->eta_cap = cap;
    }
    long w = lu->eta_nnz;
    if (list) {
        for (int t = 0; t < nz; t++) {
            int i = list[t];
            if (i != p && alpha[i] != 0.0) { lu->eta_idx[w] = i; lu->eta_val[w] = alpha[i]; w++; }
        }
    } else {
        for (int i = 0; i < m; i++)
            if (i != p && alpha[i] != 0.0) { lu->eta_idx[w] = i; lu->eta_val[w] = alpha[i]; w++; }
    }
    int e = lu->neta;
    lu->eta_p[e] = p;
    lu->eta_piv[e] = alpha[p];
    for (long q = lu->eta_nnz; q < w; q++) {
        int i = lu->eta_idx[q];
        lu->er_next[q] = lu->er_head[i];
        lu->er_head[i] = q;
        lu->eta_of[q] = e;
    }
    lu->ep_next[e] = lu->ep_head[p];
    lu->ep_head[p] = e;
    lu->eta_start[e + 1] = w;
    lu->eta_nnz = w;
    lu->neta++;
    if (lu->neta >= ETA_MAX || lu->eta_nnz > lu->lu_nnz + 2 * (long)m) return 1;
    return 0;
}

int lu_num_updates(const lu_factors *lu) { return lu->neta; }

unsigned long lu_generation(const lu_factors *lu) { return lu->generation; }

void lu_truncate_updates(lu_factors *lu, int k) {
    if (k < 0 || k >= lu->neta) return;
    /* the dropped etas are the newest: their entries head the row lists */
    for (int e = lu->neta - 1; e >= k; e--) {
        for (long q = lu->eta_start[e]; q < lu->eta_start[e + 1]; q++) lu->er_head[lu->eta_idx[q]] = lu->er_next[q];
        lu->ep_head[lu->eta_p[e]] = lu->ep_next[e];
    }
    lu->neta = k;
    lu->eta_nnz = k > 0 ? lu->eta_start[k] : 0;
}
