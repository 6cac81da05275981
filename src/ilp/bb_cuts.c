/* bb_cuts.c — owns cutting planes for branch-and-bound: rounds of Gomory
 * mixed-integer (GMI) cuts at the root.  The optimal basis of the root LP
 * (rows of the model plus cuts so far) is factored here with the LU of
 * lu.h, each fractional basic integer column's tableau row is read from a
 * BTRAN, and the GMI cut is built over the nonbasic columns and row slacks
 * shifted to their (global) bounds, then written back in the space of the
 * structural columns and added with rk_simplex_add_rows.  Safeguards:
 * fractionality, dynamism, violation and efficacy thresholds; rounds stop
 * when the bound stalls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"
#include "lu.h"
#include <stdio.h>

#define CUT_MAX_ROUNDS 25
#define CUT_MIN_F0 0.005
#define CUT_MAX_DYN 1e7

typedef struct {
    int n, m0;             /* structural columns, model rows */
    int nc, cap_c;         /* cut rows */
    long nnz, cap_nnz;
    long *start;           /* nc + 1 */
    int *idx;
    double *val;
    double *lb, *ub;
} bb_cutpool;

static void bb_cutpool_free(bb_cutpool *p) {
    free(p->start);
    free(p->idx);
    free(p->val);
    free(p->lb);
    free(p->ub);
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
    long *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
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

static double bb_frac(double v) { return v - floor(v); }

/* Separate GMI cuts from the current optimal basis; adds them to the pool
 * and to the simplex.  Returns the number added, or -1 on failure. */
static int bb_gmi_round(bb_ctx *c, bb_cutpool *P, int max_cuts) {
    int n = c->n;
    bb_cutlp L;
    if (bb_cutlp_build(c, P, &L)) { bb_cutlp_free(&L); return -1; }
    int m = L.m;
    if (m != rk_simplex_num_rows(c->lps) || m == 0) { bb_cutlp_free(&L); return -1; }
    rk_basis B = {0};
    if (rk_simplex_get_basis(c->lps, &B) != RK_OK) { bb_cutlp_free(&L); return -1; }
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
    int *cut_idx = malloc((size_t)n * sizeof *cut_idx);
    double *cut_val = malloc((size_t)n * sizeof *cut_val);
    int *cand = malloc((size_t)m * sizeof *cand);
    double *cand_score = malloc((size_t)m * sizeof *cand_score);
    rk_lu *lu = rk_lu_new();
    int added = -1;
    int nb = 0;
    if (!act || !head || !bs || !bi || !bv || !bad_pos || !bad_row || !y || !abar || !cut || !cut_idx || !cut_val ||
        !cand || !cand_score || !lu)
        goto done;
    rk_simplex_get_row_activity(c->lps, act);
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
    if (rk_lu_factor(lu, m, bs, bi, bv, bad_pos, bad_row) != 0) goto done;
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
    for (int k = 0; k < ncand; k++) {
        int p = cand[k];
        int jb = head[p];
        double beta = c->x[jb];
        double f0 = bb_frac(beta);
        for (int i = 0; i < m; i++) y[i] = 0;
        y[p] = 1.0;
        rk_lu_btran(lu, y); /* row p of B^-1, indexed by row */
        /* tableau entries of nonbasic variables, cut coefficients in x space */
        memset(cut, 0, (size_t)n * sizeof *cut);
        double rhs = 1.0; /* sum g_k t_k >= 1 */
        int ok = 1;
        for (int j = 0; j < n + m && ok; j++) {
            int st = j < n ? B.col[j] : B.row[j - n];
            if (st == 0) continue;
            double alpha;
            double lo, hi;
            int integral;
            if (j < n) {
                alpha = 0;
                for (long q = L.cs[j]; q < L.cs[j + 1]; q++) alpha += y[L.ci[q]] * L.cv[q];
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
                cut[j] += sgn * g;
            } else {
                int i = j - n;
                /* slack s_i = row i . x */
                if (i < c->m) {
                    for (long q = c->row_start[i]; q < c->row_start[i + 1]; q++)
                        cut[c->row_idx[q]] += sgn * g * c->row_val[q];
                } else {
                    int kk = i - c->m;
                    for (long q = P->start[kk]; q < P->start[kk + 1]; q++) cut[P->idx[q]] += sgn * g * P->val[q];
                }
            }
        }
        if (!ok) continue;
        /* clean: drop tiny coefficients using bounds, check dynamism */
        double amax = 0;
        for (int j = 0; j < n; j++) amax = fmax(amax, fabs(cut[j]));
        if (amax < 1e-9) continue;
        int cnt = 0;
        double amin = INFINITY;
        for (int j = 0; j < n && ok; j++) {
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
        if (!ok || cnt == 0 || amax / amin > CUT_MAX_DYN) continue;
        /* violation at the current point */
        double lhs = 0, norm = 0;
        for (int q = 0; q < cnt; q++) {
            lhs += cut_val[q] * c->x[cut_idx[q]];
            norm += cut_val[q] * cut_val[q];
        }
        norm = sqrt(norm);
        double viol = rhs - lhs;
        if (viol <= 1e-6 * fmax(1.0, fabs(rhs)) || viol / norm < 1e-5) continue;
        /* scale to max |coef| = 1 and relax the side a little for safety */
        double s = 1.0 / amax;
        for (int q = 0; q < cnt; q++) cut_val[q] *= s;
        rhs *= s;
        rhs -= 1e-9 * fmax(1.0, fabs(rhs));
        {
            const char *dbg = getenv("BB_DEBUG_SOL");
            if (dbg) {
                FILE *f = fopen(dbg, "r");
                double *sx = calloc((size_t)n, sizeof *sx);
                char nm[256];
                double v;
                int jj = 0;
                while (f && jj < n && fscanf(f, "%255s %lf", nm, &v) == 2) sx[jj++] = v;
                if (f) fclose(f);
                double l2 = 0;
                for (int q = 0; q < cnt; q++) l2 += cut_val[q] * sx[cut_idx[q]];
                if (l2 < rhs - 1e-6) fprintf(stderr, "BAD CUT from row %d (var %d, f0 %g): lhs %g < rhs %g\n", p, jb, f0, l2, rhs);
                free(sx);
            }
        }
        if (bb_cutpool_add(&R, cnt, cut_idx, cut_val, rhs, INFINITY)) break;
    }
    added = 0;
    if (R.nc > 0) {
        int *st32 = malloc((size_t)(R.nc + 1) * sizeof *st32);
        if (st32) {
            for (int k = 0; k <= R.nc; k++) st32[k] = (int)R.start[k];
            if (rk_simplex_add_rows(c->lps, R.nc, R.lb, R.ub, st32, R.idx, R.val) == RK_OK) {
                for (int k = 0; k < R.nc; k++)
                    bb_cutpool_add(P, (int)(R.start[k + 1] - R.start[k]), R.idx + R.start[k], R.val + R.start[k],
                                   R.lb[k], R.ub[k]);
                added = R.nc;
            }
            free(st32);
        }
    }
    bb_cutpool_free(&R);
done:
    rk_basis_free(&B);
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
    free(cut_idx);
    free(cut_val);
    free(cand);
    free(cand_score);
    if (lu) rk_lu_free(lu);
    bb_cutlp_free(&L);
    return added;
}

int bb_root_cuts(bb_ctx *c) {
    if (getenv("BB_NOCUTS")) return 0;
    bb_cutpool P = {0};
    P.n = c->n;
    P.m0 = c->m;
    int total = 0;
    double z0 = c->z;
    double last = c->z;
    int max_total = 4 * c->m + 100;
    int stall = 0;
    for (int round = 0; round < CUT_MAX_ROUNDS && total < max_total; round++) {
        if (bb_time_up(c)) break;
        int per = max_total - total;
        if (per > 200) per = 200;
        int k = bb_gmi_round(c, &P, per);
        if (k <= 0) break;
        total += k;
        c->mm = rk_simplex_num_rows(c->lps);
        rk_lp_status st = bb_solve_lp(c, 0, 0);
        if (st != RK_LP_OPTIMAL) {
            /* should not happen (cuts are valid): give up cutting and
             * report through the node loop, which re-solves */
            break;
        }
        bb_read_lp(c);
        double gain = c->z - last;
        last = c->z;
        if (gain < 1e-4 * fmax(1.0, fabs(c->z)) + 1e-6 * fabs(c->z - z0)) {
            if (++stall >= 2) break;
        } else {
            stall = 0;
        }
    }
    c->mm = rk_simplex_num_rows(c->lps);
    if (c->par->verbose && total)
        fprintf(stderr, "milp: %d GMI cuts at the root, bound %.10g -> %.10g\n", total, c->sense * z0,
                c->sense * c->z);
    bb_cutpool_free(&P);
    return total;
}
