/* bb_cuts.c — owns cutting planes for branch-and-bound, separated in rounds
 * at the root:
 *  - c-MIR (Marchand & Wolsey): a model row aggregated with up to five tight
 *    rows to eliminate continuous columns inside their bounds, simple and
 *    variable upper bounds substituted, mixed-integer rounding with the best
 *    of a few divisors;
 *  - Gomory mixed-integer cuts: the optimal basis of the root LP (model rows
 *    plus cuts so far) is factored here with the LU of lu.h, each fractional
 *    basic integer column's tableau row is read by a BTRAN, and the GMI cut
 *    over the nonbasic columns and slacks shifted to their global bounds is
 *    written back in the structural columns;
 *  - lifted knapsack covers from the model rows over binaries (bb_cover.c);
 *  - {0,1/2}-Chvatal-Gomory cuts from a few integer rows (bb_zerohalf.c),
 *    in what c-MIR and covers left of the round's share.
 * Cuts go to the simplex with spx_add_rows; safeguards on
 * fractionality, dynamism, density, violation and efficacy; up to
 * CUT_PER_ROUND cuts a round (all fractional rows: few cuts a round stall
 * far below the bound many cuts reach); after each round the cuts that have
 * been slack for CUT_MAX_AGE rounds leave the LP (spx_remove_rows),
 * so rounds can go on without the LP growing; rounds stop when the bound
 * stalls, and after CUT_MAX_ROUNDS they go on (up to CUT_MAX_ROUNDS_PROGRESS)
 * only with an incumbent and while each round lifts the bound by
 * CUT_PROGRESS_QUOT of the first round's gain and CUT_PROGRESS_GAP of the
 * gap to the cutoff (SCIP stops on stalling rounds too; on n16_B78 they lift
 * the root 247.4 -> 252.1; without an incumbent they made n16_B68's
 * infeasibility proof take 12,511 nodes instead of 5,547, without the gap
 * share they cost the rk-Checkmate grid 4 % CPU: docs/milp.md); at the end
 * only the binding cuts stay (dense inactive rows slow every node). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"
#include "lu.h"

#define CUT_MAX_ROUNDS 5   /* rk-Checkmate grid: 50 -> 5 made it ~1.5x faster */
#define CUT_MAX_ROUNDS_PROGRESS 20 /* rounds at most, those past CUT_MAX_ROUNDS on progress */
#define CUT_PROGRESS_QUOT 0.1 /* a round past CUT_MAX_ROUNDS must gain this share of round 0's gain */
#define CUT_PROGRESS_GAP 0.005 /* and this share of the gap between the bound and the cutoff */
#define CUT_PER_ROUND 500
#define CUT_MAX_AGE 2       /* rounds a slack cut stays in the LP */
#define CUT_MIN_F0 0.005
#define CUT_MAX_DYN 1e7
#define CUT_MAX_DENSITY 0.25

typedef struct {
    int n, m0;             /* structural columns, model rows */
    int nc, cap_c;         /* cut rows */
    long nnz, cap_nnz;
    long *start;           /* nc + 1 */
    int *idx;
    double *val;
    double *lb, *ub;
    int *age;              /* rounds the cut has been slack in a row */
} bb_cutpool;

static void bb_cutpool_free(bb_cutpool *p) {
    free(p->start);
    free(p->idx);
    free(p->val);
    free(p->lb);
    free(p->ub);
    free(p->age);
}

static int bb_cutpool_add(bb_cutpool *p, int k, const int *idx, const double *val, double lb, double ub) {
    if (p->nc + 1 >= p->cap_c) {
        int nc = p->cap_c ? 2 * p->cap_c : 64;
        long *ns = realloc(p->start, (size_t)(nc + 1) * sizeof *ns);
        if (!ns) return -1;
        p->start = ns;
        double *nl = realloc(p->lb, (size_t)nc * sizeof *nl);
        if (!nl) return -1;
        p->lb = nl;
        double *nu = realloc(p->ub, (size_t)nc * sizeof *nu);
        if (!nu) return -1;
        p->ub = nu;
        int *na = realloc(p->age, (size_t)nc * sizeof *na);
        if (!na) return -1;
        p->age = na;
        if (p->cap_c == 0) p->start[0] = 0;
        p->cap_c = nc;
    }
    if (p->nnz + k > p->cap_nnz) {
        long nc = p->cap_nnz ? 2 * p->cap_nnz : 1024;
        while (nc < p->nnz + k) nc *= 2;
        int *ni = realloc(p->idx, (size_t)nc * sizeof *ni);
        if (!ni) return -1;
        p->idx = ni;
        double *nv = realloc(p->val, (size_t)nc * sizeof *nv);
        if (!nv) return -1;
        p->val = nv;
        p->cap_nnz = nc;
    }
    memcpy(p->idx + p->nnz, idx, (size_t)k * sizeof *idx);
    memcpy(p->val + p->nnz, val, (size_t)k * sizeof *val);
    p->nnz += k;
    p->lb[p->nc] = lb;
    p->ub[p->nc] = ub;
    p->age[p->nc] = 0;
    p->nc++;
    p->start[p->nc] = p->nnz;
    return 0;
}

/* Work space of one separation round. */
typedef struct {
    int n, m;               /* m = model rows + cuts */
    /* column-wise matrix of [A; cuts] */
    long *cs;
    int *ci;
    double *cv;
    /* row-wise access for substituting slacks */
    double *rlb, *rub;
    signed char *row_int;   /* slack is integer */
} bb_cutlp;

static void bb_cutlp_free(bb_cutlp *L) {
    free(L->cs);
    free(L->ci);
    free(L->cv);
    free(L->rlb);
    free(L->rub);
    free(L->row_int);
}

static int bb_cutlp_build(const bb_ctx *c, const bb_cutpool *P, bb_cutlp *L) {
    int n = c->n, m = c->m + P->nc;
    memset(L, 0, sizeof *L);
    L->n = n;
    L->m = m;
    long nnz = c->A.nnz + P->nnz;
    L->cs = calloc((size_t)n + 1, sizeof *L->cs);
    L->ci = malloc((size_t)(nnz ? nnz : 1) * sizeof *L->ci);
    L->cv = malloc((size_t)(nnz ? nnz : 1) * sizeof *L->cv);
    L->rlb = malloc((size_t)(m ? m : 1) * sizeof *L->rlb);
    L->rub = malloc((size_t)(m ? m : 1) * sizeof *L->rub);
    L->row_int = calloc((size_t)(m ? m : 1), 1);
    if (!L->cs || !L->ci || !L->cv || !L->rlb || !L->rub || !L->row_int) return -1;
    for (int j = 0; j < n; j++) L->cs[j + 1] = c->A.start[j + 1] - c->A.start[j];
    for (long p = 0; p < P->nnz; p++) L->cs[P->idx[p] + 1]++;
    for (int j = 0; j < n; j++) L->cs[j + 1] += L->cs[j];
    long *fill = malloc((n > 0 ? (size_t)n : 1) * sizeof *fill);
    if (!fill) return -1;
    for (int j = 0; j < n; j++) {
        fill[j] = L->cs[j];
        for (long p = c->A.start[j]; p < c->A.start[j + 1]; p++) {
            L->ci[fill[j]] = c->A.index[p];
            L->cv[fill[j]] = c->A.value[p];
            fill[j]++;
        }
    }
    for (int k = 0; k < P->nc; k++)
        for (long p = P->start[k]; p < P->start[k + 1]; p++) {
            int j = P->idx[p];
            L->ci[fill[j]] = c->m + k;
            L->cv[fill[j]] = P->val[p];
            fill[j]++;
        }
    free(fill);
    for (int i = 0; i < c->m; i++) {
        L->rlb[i] = c->row_lb[i];
        L->rub[i] = c->row_ub[i];
        int integral = 1;
        for (long p = c->row_start[i]; p < c->row_start[i + 1] && integral; p++)
            if (!c->is_int[c->row_idx[p]] || c->row_val[p] != floor(c->row_val[p])) integral = 0;
        L->row_int[i] = (signed char)integral;
    }
    for (int k = 0; k < P->nc; k++) {
        L->rlb[c->m + k] = P->lb[k];
        L->rub[c->m + k] = P->ub[k];
    }
    return 0;
}

/* The cuts of R (of one family) go to the simplex and, when it takes them,
 * to the pool P.  Returns the number added (0 when the simplex refuses
 * them, or a cut cuts off the debug solution). */
static int bb_cuts_to_lp(bb_ctx *c, bb_cutpool *P, const bb_cutpool *R, const char *family) {
    if (R->nc == 0) return 0;
    if (c->dbg_x) {
        for (int k = 0; k < R->nc && !c->dbg_failed; k++)
            bb_debug_cut(c, family, (int)(R->start[k + 1] - R->start[k]), R->idx + R->start[k],
                         R->val + R->start[k], R->lb[k], R->ub[k]);
        if (c->dbg_failed) return 0;
    }
    int *st32 = malloc((size_t)(R->nc + 1) * sizeof *st32);
    if (!st32) return 0;
    int added = 0;
    for (int k = 0; k <= R->nc; k++) st32[k] = (int)R->start[k];
    if (spx_add_rows(c->lps, R->nc, R->lb, R->ub, st32, R->idx, R->val) == RK_OK) {
        for (int k = 0; k < R->nc; k++)
            bb_cutpool_add(P, (int)(R->start[k + 1] - R->start[k]), R->idx + R->start[k], R->val + R->start[k],
                           R->lb[k], R->ub[k]);
        added = R->nc;
    }
    free(st32);
    return added;
}

static double bb_frac(double v) { return v - floor(v); }

/* v += f * (row i of [A; cuts]: a model row, or cut i - m of the pool);
 * the columns v gets for the first time are marked and listed */
static void bb_cutlp_axpy(const bb_ctx *c, const bb_cutpool *P, int i, double f, double *v, char *mark, int *list,
                          int *len) {
    const int *ix;
    const double *vx;
    long n;
    if (i < c->m) {
        ix = c->row_idx + c->row_start[i];
        vx = c->row_val + c->row_start[i];
        n = c->row_start[i + 1] - c->row_start[i];
    } else {
        int k = i - c->m;
        ix = P->idx + P->start[k];
        vx = P->val + P->start[k];
        n = P->start[k + 1] - P->start[k];
    }
    for (long q = 0; q < n; q++) {
        int j = ix[q];
        if (!mark[j]) { mark[j] = 1; list[(*len)++] = j; }
        v[j] += f * vx[q];
    }
}

/* Sort list[0..len), the distinct indices < n whose mark is set: by a pass
 * over the marks when the list is dense, else by sorting it. */
static void bb_sort_marked(int *list, int len, const char *mark, int n) {
    if ((long)len * 16 < n) {
        sort_ints(list, len);
        return;
    }
    int k = 0;
    for (int j = 0; j < n; j++)
        if (mark[j]) list[k++] = j;
}

/* Separate GMI cuts from the current optimal basis; adds them to the pool
 * and to the simplex.  Returns the number added, or -1 on failure. */
static int bb_gmi_round(bb_ctx *c, bb_cutpool *P, int max_cuts) {
    int n = c->n;
    bb_cutlp L;
    if (bb_cutlp_build(c, P, &L)) { bb_cutlp_free(&L); return -1; }
    int m = L.m;
    if (m != spx_num_rows(c->lps) || m == 0) { bb_cutlp_free(&L); return -1; }
    spx_basis B = {0};
    if (spx_get_basis(c->lps, &B) != RK_OK) { bb_cutlp_free(&L); return -1; }
    double *act = malloc((size_t)m * sizeof *act);
    int *head = malloc((size_t)m * sizeof *head);       /* position -> variable (j < n, or n + i) */
    long *bs = malloc((size_t)(m + 1) * sizeof *bs);
    long cap = 0;
    for (int j = 0; j < n; j++) if (B.col[j] == 0) cap += L.cs[j + 1] - L.cs[j];
    cap += m;
    int *bi = malloc((size_t)cap * sizeof *bi);
    double *bv = malloc((size_t)cap * sizeof *bv);
    int *bad_pos = malloc((size_t)m * sizeof *bad_pos), *bad_row = malloc((size_t)m * sizeof *bad_row);
    double *y = malloc((size_t)m * sizeof *y);
    double *abar = malloc((size_t)(n + m) * sizeof *abar);
    double *cut = calloc((size_t)n, sizeof *cut);
    /* the nonzeros of y, abar and cut (the tableau row is sparse: only
     * they are scanned and cleared) */
    int *ylist = malloc((size_t)m * sizeof *ylist), *alist = malloc((size_t)n * sizeof *alist);
    int *clist = malloc((size_t)n * sizeof *clist);
    char *amark = calloc((size_t)n, 1), *cmark = calloc((size_t)n, 1);
    int alen = 0, clen = 0;
    int *cut_idx = malloc((size_t)n * sizeof *cut_idx);
    double *cut_val = malloc((size_t)n * sizeof *cut_val);
    int *cand = malloc((size_t)m * sizeof *cand);
    double *cand_score = malloc((size_t)m * sizeof *cand_score);
    lu_factors *lu = lu_new();
    int added = -1;
    int nb = 0;
    if (!act || !head || !bs || !bi || !bv || !bad_pos || !bad_row || !y || !abar || !cut || !cut_idx || !cut_val ||
        !cand || !cand_score || !lu || !ylist || !alist || !clist || !amark || !cmark)
        goto done;
    memset(abar, 0, (size_t)n * sizeof *abar);
    spx_get_row_activity(c->lps, act);
    /* the nonbasic columns must sit at the global bounds the cuts are
     * derived from (else the tableau row is not the point's) */
    for (int j = 0; j < n; j++) {
        int st = B.col[j];
        if (st != 1 && st != 2) continue;
        double bnd = st == 1 ? c->glb[j] : c->gub[j];
        if (!(fabs(c->x[j] - bnd) <= 1e-9 * fmax(1.0, fabs(bnd)))) goto done;
    }
    /* basis matrix: structural columns of [A; cuts], slack of row i = -e_i */
    long w = 0;
    bs[0] = 0;
    for (int j = 0; j < n + m; j++) {
        int basic = j < n ? B.col[j] == 0 : B.row[j - n] == 0;
        if (!basic) continue;
        if (nb == m) goto done;
        head[nb] = j;
        if (j < n) {
            for (long p = L.cs[j]; p < L.cs[j + 1]; p++) { bi[w] = L.ci[p]; bv[w] = L.cv[p]; w++; }
        } else {
            bi[w] = j - n;
            bv[w] = -1.0;
            w++;
        }
        nb++;
        bs[nb] = w;
    }
    if (nb != m) goto done;
    if (lu_factor(lu, m, bs, bi, bv, bad_pos, bad_row) != 0) goto done;
    /* candidates: basic integer columns with a fractional value, most
     * fractional first */
    int ncand = 0;
    for (int p = 0; p < m; p++) {
        int j = head[p];
        if (j >= n || !c->is_int[j]) continue;
        double f = bb_frac(c->x[j]);
        if (f < CUT_MIN_F0 || f > 1 - CUT_MIN_F0) continue;
        cand[ncand] = p;
        cand_score[ncand] = fmin(f, 1 - f);
        ncand++;
    }
    /* sort by score descending (insertion sort; ties by position) */
    for (int a = 1; a < ncand; a++) {
        int cp = cand[a];
        double cs = cand_score[a];
        int b = a;
        while (b > 0 && (cand_score[b - 1] < cs)) {
            cand[b] = cand[b - 1];
            cand_score[b] = cand_score[b - 1];
            b--;
        }
        cand[b] = cp;
        cand_score[b] = cs;
    }
    if (ncand > max_cuts) ncand = max_cuts;
    /* collected cuts of this round */
    bb_cutpool R = {0};
    R.n = n;
    int rj_ok = 0, rj_dyn = 0, rj_dens = 0, rj_viol = 0;
    for (int k = 0; k < ncand; k++) {
        int p = cand[k];
        int jb = head[p];
        double beta = c->x[jb];
        double f0 = bb_frac(beta);
        for (int t = 0; t < alen; t++) { abar[alist[t]] = 0.0; amark[alist[t]] = 0; }
        for (int t = 0; t < clen; t++) { cut[clist[t]] = 0.0; cmark[clist[t]] = 0; }
        alen = clen = 0;
        for (int i = 0; i < m; i++) y[i] = 0;
        y[p] = 1.0;
        lu_btran_unit(lu, y, p); /* row p of B^-1, indexed by row */
        int ny = 0;
        for (int i = 0; i < m; i++) {
            ylist[ny] = i;
            ny += y[i] != 0.0;
        }
        /* tableau row of the structurals, y' [A; cuts], scattered row-wise
         * from the nonzeros of y (sparse: far fewer than the columns) */
        for (int t = 0; t < ny; t++) bb_cutlp_axpy(c, P, ylist[t], y[ylist[t]], abar, amark, alist, &alen);
        bb_sort_marked(alist, alen, amark, n);
        /* tableau entries of nonbasic variables (the structurals of abar's
         * list, then the slacks of y's, in variable order), cut coefficients
         * in x space */
        double rhs = 1.0; /* sum g_k t_k >= 1 */
        int ok = 1;
        for (int t = 0; t < alen + ny && ok; t++) {
            int j = t < alen ? alist[t] : n + ylist[t - alen];
            int st = j < n ? B.col[j] : B.row[j - n];
            if (st == 0) continue;
            double alpha;
            double lo, hi;
            int integral;
            if (j < n) {
                alpha = abar[j];
                lo = c->glb[j];
                hi = c->gub[j];
                integral = c->is_int[j];
            } else {
                int i = j - n;
                alpha = -y[i];
                lo = L.rlb[i];
                hi = L.rub[i];
                integral = L.row_int[i] && (lo == -INFINITY || lo == floor(lo)) && (hi == INFINITY || hi == floor(hi));
            }
            if (fabs(alpha) < 1e-11) continue;
            if (lo == hi) continue; /* fixed: t = 0 */
            if (st == 3) { ok = 0; break; }
            int at_upper = st == 2;
            double bnd = at_upper ? hi : lo;
            if (!isfinite(bnd)) { ok = 0; break; }
            double ab = at_upper ? -alpha : alpha;
            double g;
            if (integral) {
                double fk = bb_frac(ab);
                if (fk < 1e-9 || fk > 1 - 1e-9) continue; /* (almost) integral: coefficient 0 */
                g = fk <= f0 ? fk / f0 : (1 - fk) / (1 - f0);
            } else {
                g = ab >= 0 ? ab / f0 : -ab / (1 - f0);
            }
            if (g == 0) continue;
            /* g * t, t = x - lo (lower) or hi - x (upper), x = column or slack */
            double sgn = at_upper ? -1.0 : 1.0;
            rhs += sgn * g * bnd; /* move the constant to the right side */
            if (j < n) {
                if (!cmark[j]) { cmark[j] = 1; clist[clen++] = j; }
                cut[j] += sgn * g;
            } else {
                /* slack s_i = row i . x */
                bb_cutlp_axpy(c, P, j - n, sgn * g, cut, cmark, clist, &clen);
            }
        }
        if (!ok) { rj_ok++; continue; }
        /* clean: drop tiny coefficients using bounds, check dynamism */
        bb_sort_marked(clist, clen, cmark, n);
        double amax = 0;
        for (int t = 0; t < clen; t++) amax = fmax(amax, fabs(cut[clist[t]]));
        if (amax < 1e-9) continue;
        int cnt = 0;
        double amin = INFINITY;
        for (int t = 0; t < clen && ok; t++) {
            int j = clist[t];
            double a = cut[j];
            if (a == 0) continue;
            if (fabs(a) < 1e-9 * amax) {
                /* cut is sum a x >= rhs: drop a x using a x <= a*ub (a>0) or a*lb */
                double b = a > 0 ? c->gub[j] : c->glb[j];
                if (!isfinite(b)) { ok = 0; break; }
                rhs -= a * b;
                continue;
            }
            amin = fmin(amin, fabs(a));
            cut_idx[cnt] = j;
            cut_val[cnt] = a;
            cnt++;
        }
        if (!ok || cnt == 0 || amax / amin > CUT_MAX_DYN) { rj_dyn++; continue; }
        if (cnt > CUT_MAX_DENSITY * n + 10) { rj_dens++; continue; } /* dense cuts slow every LU */
        /* violation at the current point */
        double lhs = 0, norm = 0;
        for (int q = 0; q < cnt; q++) {
            lhs += cut_val[q] * c->x[cut_idx[q]];
            norm += cut_val[q] * cut_val[q];
        }
        norm = sqrt(norm);
        double viol = rhs - lhs;
        if (viol <= 1e-6 * fmax(1.0, fabs(rhs)) || viol / norm < 1e-5) { rj_viol++; continue; }
        /* scale to max |coef| = 1 and relax the side a little for safety */
        double s = 1.0 / amax;
        for (int q = 0; q < cnt; q++) cut_val[q] *= s;
        rhs *= s;
        rhs -= 1e-9 * fmax(1.0, fabs(rhs));
        if (bb_cutpool_add(&R, cnt, cut_idx, cut_val, rhs, INFINITY)) break;
    }
    if (c->par->verbose > 2)
        rk_log_printf(&c->par->log, RK_LOG_DETAIL, "milp: GMI: %d candidates, rejected for bounds %d, dynamism %d, density %d, violation %d",
                ncand, rj_ok, rj_dyn, rj_dens, rj_viol);
    added = bb_cuts_to_lp(c, P, &R, "Gomory mixed-integer cut");
    bb_cutpool_free(&R);
done:
    spx_basis_free(&B);
    free(act);
    free(head);
    free(bs);
    free(bi);
    free(bv);
    free(bad_pos);
    free(bad_row);
    free(y);
    free(abar);
    free(cut);
    free(ylist);
    free(alist);
    free(clist);
    free(amark);
    free(cmark);
    free(cut_idx);
    free(cut_val);
    free(cand);
    free(cand_score);
    if (lu) lu_free(lu);
    bb_cutlp_free(&L);
    return added;
}


/* ------------------------------------------------------------ c-MIR
 * Complemented mixed-integer rounding on a model row, aggregated with up to
 * CMIR_MAX_AGG tight rows to eliminate continuous columns strictly inside
 * their bounds (Marchand & Wolsey).  The aggregated row sum a x + slack
 * terms <= b is brought to nonnegative variables by bound substitution
 * (integers towards the closer bound), continuous parts with a positive
 * coefficient are dropped, and the MIR of the row divided by delta (each
 * integer coefficient of a column away from its bound, then halved) is
 * kept when violated enough. */

#define CMIR_MAX_AGG 5
#define CMIR_MIN_F0 0.05  /* fractionality of the divided right-hand side */
#define CMIR_MAX_F0 0.95

typedef struct {
    int row;      /* model row */
    int side;     /* +1: a x + s = ub; -1: a x - s = lb; 0: equality (no slack) */
    double coef;  /* coefficient of the slack s >= 0 in the aggregated row */
} bb_slack;

typedef struct {
    double *a;    /* n: aggregated coefficients */
    int *nz;      /* columns with a nonzero (may hold zeros after cancellation) */
    char *in_nz;
    int nnz;
    double b;
    bb_slack sl[CMIR_MAX_AGG + 1];
    int nsl;
    char *used;   /* rows used (m) */
} bb_agg;

static void bb_agg_add_row(const bb_ctx *c, bb_agg *g, int i, int side, double lam) {
    for (long p = c->row_start[i]; p < c->row_start[i + 1]; p++) {
        int j = c->row_idx[p];
        if (!g->in_nz[j]) {
            g->in_nz[j] = 1;
            g->nz[g->nnz++] = j;
            g->a[j] = 0;
        }
        g->a[j] += lam * c->row_val[p];
    }
    double rhs = side >= 0 ? c->row_ub[i] : c->row_lb[i];
    if (side == 0) rhs = c->row_ub[i];
    g->b += lam * rhs;
    g->sl[g->nsl].row = i;
    g->sl[g->nsl].side = side;
    g->sl[g->nsl].coef = side == 0 ? 0 : (side > 0 ? lam : -lam);
    g->nsl++;
    g->used[i] = 1;
}

static void bb_agg_clear(bb_agg *g) {
    for (int k = 0; k < g->nnz; k++) {
        g->in_nz[g->nz[k]] = 0;
        g->a[g->nz[k]] = 0;
    }
    for (int k = 0; k < g->nsl; k++) g->used[g->sl[k].row] = 0;
    g->nnz = 0;
    g->nsl = 0;
    g->b = 0;
}

/* Scratch of the c-MIR separation: dense arrays over the columns with a
 * list of the touched ones, and the variable upper bounds x_j <= u * y_k
 * found among the model rows (two entries: continuous j, integer k). */
typedef struct {
    double *w, *sx, *h;
    int *list;
    char *mark;
    int nl;
    int *vub_y;
    double *vub_u;
} bb_mirws;

static void bb_mir_touch(bb_mirws *W, int j) {
    if (!W->mark[j]) {
        W->mark[j] = 1;
        W->list[W->nl++] = j;
    }
}

static void bb_mir_reset(bb_mirws *W) {
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        W->mark[j] = 0;
        W->w[j] = W->sx[j] = W->h[j] = 0;
    }
    W->nl = 0;
}

static void bb_find_vubs(const bb_ctx *c, bb_mirws *W) {
    for (int j = 0; j < c->n; j++) W->vub_y[j] = -1;
    for (int i = 0; i < c->m; i++) {
        if (c->row_start[i + 1] - c->row_start[i] != 2) continue;
        long p = c->row_start[i];
        int j = c->row_idx[p], k = c->row_idx[p + 1];
        double a = c->row_val[p], b = c->row_val[p + 1];
        if (c->is_int[j]) { int t = j; j = k; k = t; double tv = a; a = b; b = tv; }
        if (c->is_int[j] || !c->is_int[k]) continue;
        /* a x_j + b y_k <= ub  with a > 0, ub = 0: x_j <= (-b / a) y_k */
        if (a > 0 && c->row_ub[i] == 0 && b < 0 && c->glb[k] >= 0 && c->glb[j] >= 0) {
            if (W->vub_y[j] < 0) { W->vub_y[j] = k; W->vub_u[j] = -b / a; }
        } else if (a < 0 && c->row_lb[i] == 0 && b > 0 && c->glb[k] >= 0 && c->glb[j] >= 0) {
            /* a x + b y >= 0, a < 0: x <= (b / -a) y */
            if (W->vub_y[j] < 0) { W->vub_y[j] = k; W->vub_u[j] = b / -a; }
        }
    }
}

/* Try the MIR of the aggregated row; on success fills the cut (x space,
 * sum h x <= R) into idx/val/cnt/R and returns its efficacy, else 0. */
/* MIR coefficient of integer column j, whose aggregated coefficient is a,
 * for the divisor d and fractionality f0: j is complemented towards its
 * nearer bound (*use_ub: its upper bound, x' = ub - x). */
static double bb_mir_coef(const bb_ctx *c, int j, double a, double d, double f0, int *use_ub) {
    double lb = c->glb[j], ub = c->gub[j], x = c->x[j];
    *use_ub = lb == -INFINITY ? 1 : ub == INFINITY ? 0 : ub - x < x - lb;
    double ap = (*use_ub ? -a : a) / d, fj = ap - floor(ap);
    return floor(ap) + (fj > f0 ? (fj - f0) / (1 - f0) : 0);
}

static double bb_cmir_try(const bb_ctx *c, const double *act, const bb_agg *g, bb_mirws *W, int *idx, double *val,
                          int *cnt, double *R) {
    int n = c->n;
    double beta = g->b, s0 = 0;
    bb_mir_reset(W);
    /* continuous columns: substitute the closest simple or variable bound */
    for (int k = 0; k < g->nnz; k++) {
        int j = g->nz[k];
        double a = g->a[j];
        if (fabs(a) < 1e-12) continue;
        if (c->is_int[j]) {
            bb_mir_touch(W, j);
            W->w[j] += a;
            continue;
        }
        double lb = c->glb[j], ub = c->gub[j], x = c->x[j];
        double dl = lb == -INFINITY ? INFINITY : x - lb;
        double du = ub == INFINITY ? INFINITY : ub - x;
        double dv = INFINITY;
        int y = W->vub_y[j];
        if (y >= 0) dv = W->vub_u[j] * c->x[y] - x;
        if (dl == INFINITY && du == INFINITY && dv == INFINITY) { bb_mir_reset(W); return 0; }
        bb_mir_touch(W, j);
        if (dv <= dl && dv <= du) {
            /* x = u y - t, t >= 0 */
            double u = W->vub_u[j];
            bb_mir_touch(W, y);
            W->w[y] += a * u;
            if (a > 0) { W->sx[y] += a * u; W->sx[j] -= a; }
        } else if (dl <= du) {
            /* x = lb + t */
            beta -= a * lb;
            if (a < 0) { W->sx[j] += -a; s0 += a * lb; }
        } else {
            /* x = ub - t */
            beta -= a * ub;
            if (a > 0) { W->sx[j] -= a; s0 += a * ub; }
        }
    }
    /* slacks with a negative coefficient join the continuous part */
    for (int k = 0; k < g->nsl; k++) {
        if (g->sl[k].side == 0 || g->sl[k].coef >= 0) continue;
        int i = g->sl[k].row;
        double q = -g->sl[k].coef;
        /* s = ub - a x (side +1) or a x - lb (side -1) */
        double sg = g->sl[k].side > 0 ? -1.0 : 1.0;
        for (long p = c->row_start[i]; p < c->row_start[i + 1]; p++) {
            int j = c->row_idx[p];
            bb_mir_touch(W, j);
            W->sx[j] += q * sg * c->row_val[p];
        }
        s0 += g->sl[k].side > 0 ? q * c->row_ub[i] : -q * c->row_lb[i];
    }
    (void)act;
    double S = s0;
    for (int k = 0; k < W->nl; k++) S += W->sx[W->list[k]] * c->x[W->list[k]];
    if (S < 0) S = 0;
    /* integer columns: complement towards the closer bound */
    double deltas[16];
    int nd = 0;
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        double a = W->w[j];
        if (!c->is_int[j] || fabs(a) < 1e-12) continue;
        double lb = c->glb[j], ub = c->gub[j], x = c->x[j];
        if (lb == -INFINITY && ub == INFINITY) return 0;
        int use_ub = lb == -INFINITY ? 1 : ub == INFINITY ? 0 : ub - x < x - lb;
        beta -= a * (use_ub ? ub : lb);
        double xp = use_ub ? ub - x : x - lb;
        if (xp > 1e-6 && nd < 16) {
            double d = fabs(a);
            int dup = 0;
            for (int q = 0; q < nd; q++) dup |= fabs(deltas[q] - d) < 1e-9 * d;
            if (!dup && d > 1e-6) deltas[nd++] = d;
        }
    }
    if (nd == 0) return 0;
    double best_eff = 0, best_d = 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: each candidate divisor; pass 1: the best one halved up to
         * three times (when none worked, the largest candidate: a flow set
         * x_j <= u y_j over small demands has beta / u below CMIR_MIN_F0) */
        int tries = pass == 0 ? nd : 3;
        double base = best_d;
        if (pass == 1 && base == 0)
            for (int q = 0; q < nd; q++) base = fmax(base, deltas[q]);
        for (int t = 0; t < tries; t++) {
            double d = pass == 0 ? deltas[t] : base / (double)(2 << t);
            double bb = beta / d;
            double f0 = bb - floor(bb);
            if (f0 < CMIR_MIN_F0 || f0 > CMIR_MAX_F0) continue;
            double lhs = 0, norm = 0;
            for (int k = 0; k < W->nl; k++) {
                int j = W->list[k];
                double a = W->w[j];
                if (!c->is_int[j] || fabs(a) < 1e-12) continue;
                int use_ub;
                double G = bb_mir_coef(c, j, a, d, f0, &use_ub);
                double xp = use_ub ? c->gub[j] - c->x[j] : c->x[j] - c->glb[j];
                lhs += G * xp;
                norm += G * G;
            }
            double sc = 1.0 / (d * (1 - f0));
            lhs -= S * sc;
            double viol = lhs - floor(bb);
            if (viol <= 1e-6) continue;
            double eff = viol / sqrt(norm + sc * sc);
            if (eff > best_eff) {
                best_eff = eff;
                best_d = d;
            }
        }
    }
    if (best_eff < 1e-4) return 0;
    /* the cut in x space: sum G x' - sc * S <= floor(beta / d) */
    double d = best_d, bb = beta / d, f0 = bb - floor(bb), sc = 1.0 / (d * (1 - f0));
    double rhs = floor(bb);
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        W->h[j] = -sc * W->sx[j];
    }
    rhs += sc * s0;
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        double a = W->w[j];
        if (!c->is_int[j] || fabs(a) < 1e-12) continue;
        int use_ub;
        double G = bb_mir_coef(c, j, a, d, f0, &use_ub);
        if (use_ub) { W->h[j] -= G; rhs -= G * c->gub[j]; }
        else { W->h[j] += G; rhs += G * c->glb[j]; }
    }
    int m_cnt = 0;
    double amax = 0, amin = INFINITY;
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        double hj = W->h[j];
        if (hj == 0) continue;
        if (fabs(hj) < 1e-11) {
            double bnd = hj > 0 ? c->glb[j] : c->gub[j];
            if (!isfinite(bnd)) return 0;
            rhs -= hj * bnd;
            continue;
        }
        idx[m_cnt] = j;
        val[m_cnt] = hj;
        amax = fmax(amax, fabs(hj));
        amin = fmin(amin, fabs(hj));
        m_cnt++;
    }
    if (m_cnt == 0 || amax / amin > CUT_MAX_DYN) return 0;
    if (m_cnt > CUT_MAX_DENSITY * n + 10) return 0;
    double lhs = 0, norm = 0;
    for (int q = 0; q < m_cnt; q++) {
        lhs += val[q] * c->x[idx[q]];
        norm += val[q] * val[q];
    }
    double viol = lhs - rhs;
    if (viol <= 1e-6 * fmax(1.0, fabs(rhs))) return 0;
    *cnt = m_cnt;
    *R = rhs;
    return viol / sqrt(norm);
}

/* Cuts of one round (c-MIR, covers) as rows a x <= rhs, kept until the
 * round's most efficacious go to the LP: the rows in a pool, their
 * efficacies beside. */
typedef struct {
    double eff;
    int row;     /* in rows */
} bb_found_cut;

typedef struct {
    bb_cutpool rows;
    bb_found_cut *cut;
    int cap;
} bb_found;

static int bb_found_cmp(const void *x, const void *y) {
    const bb_found_cut *a = x, *b = y;
    if (a->eff != b->eff) return a->eff > b->eff ? -1 : 1;
    return a->row - b->row;
}

static int bb_found_push(bb_found *F, int cnt, const int *idx, const double *val, double rhs, double eff) {
    int n = F->rows.nc;
    if (n == F->cap) {
        int nc = F->cap ? 2 * F->cap : 64;
        bb_found_cut *nf = realloc(F->cut, (size_t)nc * sizeof *nf);
        if (!nf) return -1;
        F->cut = nf;
        F->cap = nc;
    }
    if (bb_cutpool_add(&F->rows, cnt, idx, val, -INFINITY, rhs)) return -1;
    F->cut[n].eff = eff;
    F->cut[n].row = n;
    return 0;
}

static void bb_found_free(bb_found *F) {
    bb_cutpool_free(&F->rows);
    free(F->cut);
}

/* The max_cuts most efficacious cuts found, scaled to max |a| = 1 with the
 * side relaxed a little for safety, go to the simplex and the pool.  Returns
 * the number added (0 when the simplex refuses them). */
static int bb_found_add(bb_ctx *c, bb_cutpool *P, bb_found *F, int max_cuts, const char *family) {
    const bb_cutpool *R = &F->rows;
    if (R->nc == 0) return 0;
    qsort(F->cut, (size_t)R->nc, sizeof *F->cut, bb_found_cmp);
    int nf = R->nc < max_cuts ? R->nc : max_cuts;
    bb_cutpool S = {0};
    int *ci = malloc((size_t)(c->n ? c->n : 1) * sizeof *ci);
    double *cv = malloc((size_t)(c->n ? c->n : 1) * sizeof *cv);
    int ok = ci && cv;
    for (int k = 0; k < nf && ok; k++) {
        int r = F->cut[k].row;
        long at = R->start[r];
        int cnt = (int)(R->start[r + 1] - at);
        double s = 0;
        for (int q = 0; q < cnt; q++) s = fmax(s, fabs(R->val[at + q]));
        for (int q = 0; q < cnt; q++) {
            ci[q] = R->idx[at + q];
            cv[q] = R->val[at + q] / s;
        }
        double rhs = R->ub[r] / s;
        ok = bb_cutpool_add(&S, cnt, ci, cv, -INFINITY, rhs + 1e-9 * fmax(1.0, fabs(rhs))) == 0;
    }
    int added = ok ? bb_cuts_to_lp(c, P, &S, family) : 0;
    bb_cutpool_free(&S);
    free(ci);
    free(cv);
    return added;
}

/* A separator that looks at one model row at a time (bb_cover_cut,
 * bb_zerohalf_cut): work is `work_size` zeroed bytes, idx/val c->n entries. */
typedef int (*bb_row_separator)(const bb_ctx *c, int row, int dir, void *work, int *idx, double *val,
                                double *rhs, double *eff);

/* One round of a row separator over both sides of the model rows; cuts are
 * added to the pool and the simplex.  Returns the number added (-1 on failure). */
static int bb_row_separator_round(bb_ctx *c, bb_cutpool *P, int max_cuts, bb_row_separator sep,
                                  size_t work_size, const char *what) {
    void *work = calloc(1, work_size);
    int *idx = malloc((size_t)(c->n ? c->n : 1) * sizeof *idx);
    double *val = malloc((size_t)(c->n ? c->n : 1) * sizeof *val);
    bb_found F = {0};
    int added = -1;
    if (work && idx && val) {
        int ok = 1;
        for (int i = 0; i < c->m && ok; i++)
            for (int dir = 0; dir < 2 && ok; dir++) {
                double rhs, eff;
                int cnt = sep(c, i, dir, work, idx, val, &rhs, &eff);
                if (cnt > 0) ok = bb_found_push(&F, cnt, idx, val, rhs, eff) == 0;
            }
        if (ok) added = bb_found_add(c, P, &F, max_cuts, what);
    }
    bb_found_free(&F);
    free(work);
    free(idx);
    free(val);
    return added;
}

/* One round of c-MIR separation over the model rows; cuts are added to the
 * pool and the simplex.  Returns the number added (-1 on failure). */
static int bb_cmir_round(bb_ctx *c, bb_cutpool *P, int max_cuts) {
    int n = c->n, m = c->m;
    bb_agg g;
    memset(&g, 0, sizeof g);
    g.a = calloc((size_t)n, sizeof *g.a);
    g.nz = malloc((size_t)n * sizeof *g.nz);
    g.in_nz = calloc((size_t)n, 1);
    g.used = calloc((size_t)(m ? m : 1), 1);
    bb_mirws W;
    memset(&W, 0, sizeof W);
    W.w = calloc((size_t)n, sizeof *W.w);
    W.sx = calloc((size_t)n, sizeof *W.sx);
    W.h = calloc((size_t)n, sizeof *W.h);
    W.list = malloc((size_t)n * sizeof *W.list);
    W.mark = calloc((size_t)n, 1);
    W.vub_y = malloc((size_t)n * sizeof *W.vub_y);
    W.vub_u = malloc((size_t)n * sizeof *W.vub_u);
    int *idx = malloc((size_t)n * sizeof *idx);
    double *val = malloc((size_t)n * sizeof *val);
    double *act = malloc((size_t)(spx_num_rows(c->lps) + 1) * sizeof *act);
    bb_found F = {0};
    int added = -1;
    if (!g.a || !g.nz || !g.in_nz || !g.used || !W.w || !W.sx || !W.h || !W.list || !W.mark || !W.vub_y ||
        !W.vub_u || !idx || !val || !act)
        goto done;
    spx_get_row_activity(c->lps, act);
    bb_find_vubs(c, &W);
    for (int i0 = 0; i0 < m; i0++) {
        /* rows with an integer column, or a continuous one with a variable
         * upper bound (flow conservation over arcs x <= u y: the integers
         * come in by the substitution, as in a flow cover) */
        int has_int = 0;
        for (long p = c->row_start[i0]; p < c->row_start[i0 + 1] && !has_int; p++)
            has_int = c->is_int[c->row_idx[p]] || W.vub_y[c->row_idx[p]] >= 0;
        if (!has_int) continue;
        for (int dir = 0; dir < 2; dir++) {
            /* dir 0: <= ub form; dir 1: -(row) <= -lb */
            int eq = c->row_lb[i0] == c->row_ub[i0];
            if (dir == 0 && c->row_ub[i0] == INFINITY) continue;
            if (dir == 1 && c->row_lb[i0] == -INFINITY) continue;
            bb_agg_clear(&g);
            int side = eq ? 0 : (dir == 0 ? 1 : -1);
            bb_agg_add_row(c, &g, i0, side, dir == 0 ? 1.0 : -1.0);
            for (int agg = 0; agg <= CMIR_MAX_AGG; agg++) {
                int cnt = 0;
                double R = 0;
                double eff = bb_cmir_try(c, act, &g, &W, idx, val, &cnt, &R);
                if (eff > 0) {
                    if (bb_found_push(&F, cnt, idx, val, R, eff)) goto done;
                    break;
                }
                if (agg == CMIR_MAX_AGG) break;
                /* eliminate the continuous column farthest inside its bounds */
                int bj = -1;
                double bdist = 1e-6;
                for (int k = 0; k < g.nnz; k++) {
                    int j = g.nz[k];
                    if (c->is_int[j] || fabs(g.a[j]) < 1e-9) continue;
                    double dist = fmin(c->x[j] - c->glb[j], c->gub[j] - c->x[j]);
                    if (dist > bdist) { bdist = dist; bj = j; }
                }
                if (bj < 0) break;
                int bi = -1, bside = 0;
                double bcoef = 0;
                for (long p = c->A.start[bj]; p < c->A.start[bj + 1]; p++) {
                    int i = c->A.index[p];
                    if (g.used[i]) continue;
                    int sd;
                    if (c->row_lb[i] == c->row_ub[i]) sd = 0;
                    else if (c->row_ub[i] != INFINITY && fabs(act[i] - c->row_ub[i]) <= 1e-6 * fmax(1.0, fabs(c->row_ub[i]))) sd = 1;
                    else if (c->row_lb[i] != -INFINITY && fabs(act[i] - c->row_lb[i]) <= 1e-6 * fmax(1.0, fabs(c->row_lb[i]))) sd = -1;
                    else continue;
                    if (fabs(c->A.value[p]) > fabs(bcoef)) { bcoef = c->A.value[p]; bi = i; bside = sd; }
                }
                if (bi < 0 || g.nsl > CMIR_MAX_AGG) break;
                double lam = -g.a[bj] / bcoef;
                bb_agg_add_row(c, &g, bi, bside, lam);
                g.a[bj] = 0; /* exactly eliminated */
            }
        }
    }
    bb_agg_clear(&g);
    added = bb_found_add(c, P, &F, max_cuts, "c-MIR cut");
done:
    free(g.a);
    free(g.nz);
    free(g.in_nz);
    free(g.used);
    free(W.w);
    free(W.sx);
    free(W.h);
    free(W.list);
    free(W.mark);
    free(W.vub_y);
    free(W.vub_u);
    free(idx);
    free(val);
    free(act);
    bb_found_free(&F);
    return added;
}

/* Drop from the simplex the cuts that have been slack (basic logical) for
 * more than max_age rounds: inactive rows only slow the LPs (and, between
 * rounds, the next round's factorization).  Their logicals are basic, so the
 * basis of the other rows stays optimal (spx_remove_rows).  The pool
 * is compacted the same way, so it keeps describing the simplex's cut rows.
 * Returns the number of cuts dropped. */
static int bb_purge_cuts(bb_ctx *c, bb_cutpool *P, int max_age) {
    int m = c->m;
    spx_basis B = {0};
    if (P->nc == 0 || spx_get_basis(c->lps, &B) != RK_OK) return 0;
    if (B.m != m + P->nc) { spx_basis_free(&B); return 0; }
    char *drop = calloc((size_t)B.m, 1);
    int keep = 0;
    for (int k = 0; k < P->nc; k++) {
        P->age[k] = B.row[m + k] != 0 ? 0 : P->age[k] + 1;
        if (P->age[k] <= max_age) keep++;
        else if (drop) drop[m + k] = 1;
    }
    spx_basis_free(&B);
    if (keep == P->nc || !drop || spx_remove_rows(c->lps, drop) != RK_OK) {
        free(drop);
        return 0;
    }
    free(drop);
    c->mm = spx_num_rows(c->lps);
    if (bb_solve_lp(c, 0, 0) == RK_LP_OPTIMAL) bb_read_lp(c);
    /* compact the pool to the rows kept */
    int w = 0;
    long nz = 0;
    for (int k = 0; k < P->nc; k++) {
        if (P->age[k] > max_age) continue;
        long a = P->start[k], b = P->start[k + 1];
        memmove(P->idx + nz, P->idx + a, (size_t)(b - a) * sizeof *P->idx);
        memmove(P->val + nz, P->val + a, (size_t)(b - a) * sizeof *P->val);
        P->lb[w] = P->lb[k];
        P->ub[w] = P->ub[k];
        P->age[w] = P->age[k];
        P->start[w] = nz;
        nz += b - a;
        w++;
    }
    int dropped = P->nc - w;
    P->nc = w;
    P->nnz = nz;
    P->start[w] = nz;
    return dropped;
}

int bb_root_cuts(bb_ctx *c) {
    bb_cutpool P = {0};
    P.n = c->n;
    P.m0 = c->m;
    int total = 0;
    double z0 = c->z;
    double last = c->z;
    int max_live = 2 * c->m + 50;   /* cut rows in the LP at any time */
    int per_round = CUT_PER_ROUND;
    int max_age = CUT_MAX_AGE;
    int stall = 0;
    int zh_total = 0;
    if (c->par->debug_fault == 1) {
        /* planted fault (tests of the debug mode): the wrong cut
         * x_j <= (its debug value) - 1 */
        int j = bb_debug_plant_column(c, c->glb);
        if (j >= 0) {
            bb_cutpool R = {0};
            double one = 1;
            if (bb_cutpool_add(&R, 1, &j, &one, -INFINITY, c->dbg_x[j] - 1) == 0)
                total += bb_cuts_to_lp(c, &P, &R, "planted cut");
            bb_cutpool_free(&R);
        }
    }
    double gain0 = 0;      /* the first round's gain */
    for (int round = 0; round < CUT_MAX_ROUNDS_PROGRESS && !c->dbg_failed; round++) {
        if (bb_time_up(c)) break;
        int per = max_live - P.nc;
        if (per > per_round) per = per_round;
        if (per <= 0) break;
        int k1 = bb_cmir_round(c, &P, per);
        if (k1 < 0) k1 = 0;
        int k3 = bb_row_separator_round(c, &P, per, bb_cover_cut, bb_cover_work_size(c->n), "lifted cover cut");
        if (k3 > 0) k1 += k3;
        /* {0,1/2} cuts (short rows) fill what c-MIR and covers left of
         * the round's share */
        int k4 = per - k1 > 0 ? bb_row_separator_round(c, &P, per - k1, bb_zerohalf_cut, bb_zerohalf_work_size(c->n), "{0,1/2} cut") : 0;
        if (k4 > 0) {
            k1 += k4;
            zh_total += k4;
        }
        int k = k1;
        {
            /* GMI reads the tableau of the simplex's basis at the point
             * c->x: both must be the root LP's optimum in the global bounds
             * (the heuristics before the cuts leave the simplex elsewhere;
             * a warm re-solve from an optimal basis costs no iteration) */
            c->mm = spx_num_rows(c->lps);
            bb_apply_bounds(c, c->glb, c->gub);
            if (bb_solve_lp(c, 0, 0) == RK_LP_OPTIMAL) {
                bb_read_lp(c);
                int k2 = bb_gmi_round(c, &P, per);
                if (k2 > 0) k += k2;
            }
        }
        if (k <= 0) break;
        total += k;
        c->mm = spx_num_rows(c->lps);
        rk_lp_status st = bb_solve_lp(c, 0, 0);
        if (st != RK_LP_OPTIMAL) {
            /* should not happen (cuts are valid): give up cutting and
             * report through the node loop, which re-solves */
            break;
        }
        bb_read_lp(c);
        /* drop the cuts that went slack: the next round factors a smaller
         * basis and the bound is carried by the binding ones */
        if (max_age >= 0) bb_purge_cuts(c, &P, max_age);
        c->mm = spx_num_rows(c->lps);
        double gain = c->z - last;
        last = c->z;
        if (c->par->verbose > 1)
            rk_log_printf(&c->par->log, RK_LOG_DETAIL, "milp: cut round %d: %d cuts (%d c-MIR), %d binding, bound %.10g, %.2f s", round, k, k1,
                    P.nc, c->sense * c->z, bb_elapsed(c));
        if (gain < 1e-4 * fmax(1.0, fabs(c->z)) + 1e-3 * fabs(c->z - z0)) {
            if (++stall >= 3) break;
        } else {
            stall = 0;
        }
        /* past the first rounds: go on, with an incumbent (whose cutoff the
         * lifted bound prunes against), while a round lifts the bound by a
         * share of what the first one did and of the gap left */
        if (round == 0) gain0 = gain;
        if (round + 1 >= CUT_MAX_ROUNDS &&
            (!c->has_inc || gain < CUT_PROGRESS_QUOT * gain0 || gain < CUT_PROGRESS_GAP * (bb_cutoff(c) - c->z)))
            break;
    }
    bb_purge_cuts(c, &P, 0);
    c->mm = spx_num_rows(c->lps);
    if (c->par->verbose && total)
        rk_log_printf(&c->par->log, RK_LOG_INFO, "milp: %d cuts (c-MIR, GMI) at the root, %d kept, bound %.10g -> %.10g, %.2f s", total,
                c->mm - c->m, c->sense * z0, c->sense * c->z, bb_elapsed(c));
    if (c->par->verbose && zh_total)
        rk_log_printf(&c->par->log, RK_LOG_INFO, "milp: %d {0,1/2} cuts at the root", zh_total);
    bb_cutpool_free(&P);
    return total;
}
