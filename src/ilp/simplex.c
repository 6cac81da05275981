/* simplex.c — the LP engine of src/ilp (see simplex.h): a scaled working
 * copy of the LP in the bounded form  A x + s = 0  (one logical s_i per row,
 * bounds -row_ub <= s_i <= -row_lb), a basis factored by lu.c, and
 *  - a bounded dual simplex with dual steepest-edge pricing, a bound-flipping
 *    Harris ratio test and cost perturbation / shifting against stalling;
 *  - a dual phase 1 on the auxiliary box problem (Fourer / Koberstein);
 *  - a bounded primal simplex (composite phase 1/2, Devex pricing, Harris
 *    ratio test), used to clean up after perturbation and for warm starts
 *    that are primal but not dual feasible.
 * Everything lives in the spx object (reentrant). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "lp_internal.h"
#include "lu.h"
#include "simplex.h"

#define VS_BASIC 0
#define VS_LB 1
#define VS_UB 2
#define VS_FREE 3

#define PTOL 1e-7     /* primal feasibility (scaled) */
#define DTOL 1e-7     /* dual feasibility (scaled) */
#define PIVTOL 1e-7   /* smallest pivot in ratio tests */

/* iterations (plus the row count) without progress after which the primal
 * simplex is stalled (primal_loop) */
#define PRIMAL_STALL 5000

enum { LOOP_OPTIMAL, LOOP_INFEASIBLE, LOOP_UNBOUNDED, LOOP_ITER, LOOP_TIME, LOOP_CUTOFF, LOOP_ERROR, LOOP_RESTART };

struct spx {
    int n, m;
    /* scaled matrix, column-wise (structurals) and row-wise */
    long *Acs;
    int *Aci;
    double *Acv;
    long *Ars;
    int *Arj;
    double *Arv;
    double *cs, *rs;          /* column / row scale: x = cs x', row' = rs row */
    double *c;                /* true scaled costs (N) */
    int *cnz, ncnz;           /* the columns with a nonzero cost (structurals only) */
    double *cw;               /* working costs (perturbed / shifted) */
    double *lb, *ub;          /* scaled bounds (N) */
    double *olb, *oub, *oc;   /* original column bounds and costs (n) */
    double sense, c0;
    /* basis */
    int *head;                /* m */
    int *bpos;                /* N */
    signed char *vst;         /* N */
    double *x, *d;            /* N */
    double *y;                /* m */
    double *dse;              /* m */
    double *dvx;              /* N, primal devex weights */
    lu_factors *lu;
    int lu_ok;
    int need_refactor;
    /* work */
    double *rho, *alpha, *tau, *tmp, *arow;
    double *pinf;             /* m: squared primal infeasibility of each basic position (dual loop) */
    int *rlist, rlen;         /* the nonzero positions of rho (dual loop) */
    int *qlist, qlen;         /* the nonzero positions of alpha (dual loop) */
    int *alist, alen;         /* nonbasic j with arow[j] set (arow is 0 elsewhere) */
    char *amark;
    int *cand, *bad_pos, *bad_row;
    long iters;
    int perturbed;            /* cost perturbation active (no cutoff) */
    int shifted;              /* small cost shifts from the ratio test */
    unsigned long long rng;
    int solved_once;
    int x_valid, d_valid;     /* x / d match the basis and bounds (after an optimal solve) */
    int trial;                /* this solve keeps the DSE weights as they are */
    int n_incr;               /* in-place x updates since the last solve */
    double t0, time_limit;
    long iter_limit_abs;
    int verbose;
    const rk_log *log;
    rk_lp_status last;
    double *ray;              /* m: the row of B^-1 that proved the last solve infeasible (spx_farkas) */
    int ray_m, ray_ok;
};

/* ----------------------------------------------------------- utilities */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rnd01(spx *s) {
    s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(s->rng >> 11) * (1.0 / 9007199254740992.0);
}

static double pow2_round(double v) {
    if (!(v > 0) || !isfinite(v)) return 1.0;
    int e;
    frexp(v, &e);
    return ldexp(1.0, e - 1);
}

static inline int N_of(const spx *s) { return s->n + s->m; }

static double nb_value(const spx *s, int j) {
    switch (s->vst[j]) {
    case VS_LB: return s->lb[j];
    case VS_UB: return s->ub[j];
    default: return 0.0;
    }
}

/* make the nonbasic status of j consistent with its bounds */
static void fix_status(spx *s, int j) {
    if (s->vst[j] == VS_BASIC) return;
    double l = s->lb[j], u = s->ub[j];
    int st = s->vst[j];
    if (st == VS_LB && !isfinite(l)) st = isfinite(u) ? VS_UB : VS_FREE;
    else if (st == VS_UB && !isfinite(u)) st = isfinite(l) ? VS_LB : VS_FREE;
    else if (st == VS_FREE) st = isfinite(l) ? VS_LB : (isfinite(u) ? VS_UB : VS_FREE);
    if (st == VS_UB && l == u) st = VS_LB;
    s->vst[j] = (signed char)st;
    s->x[j] = nb_value(s, j);
}

/* y . a_j */
static double col_dot(const spx *s, int j, const double *y) {
    if (j >= s->n) return y[j - s->n];
    double t = 0.0;
    for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) t += s->Acv[p] * y[s->Aci[p]];
    return t;
}

/* v += mult * a_j */
static void col_axpy(const spx *s, int j, double mult, double *v) {
    if (j >= s->n) { v[j - s->n] += mult; return; }
    for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) v[s->Aci[p]] += mult * s->Acv[p];
}

/* ------------------------------------------------------------ factor */

static int refactor(spx *s) {
    int m = s->m, n = s->n;
    for (int attempt = 0; attempt < 4; attempt++) {
        long nnz = 0;
        for (int p = 0; p < m; p++) {
            int j = s->head[p];
            nnz += j < n ? s->Acs[j + 1] - s->Acs[j] : 1;
        }
        long *bs = malloc((size_t)(m + 1) * sizeof *bs);
        int *bi = malloc((size_t)(nnz ? nnz : 1) * sizeof *bi);
        double *bv = malloc((size_t)(nnz ? nnz : 1) * sizeof *bv);
        if (!bs || !bi || !bv) { free(bs); free(bi); free(bv); return -1; }
        long w = 0;
        for (int p = 0; p < m; p++) {
            bs[p] = w;
            int j = s->head[p];
            if (j < n) {
                for (long q = s->Acs[j]; q < s->Acs[j + 1]; q++) { bi[w] = s->Aci[q]; bv[w] = s->Acv[q]; w++; }
            } else {
                bi[w] = j - n; bv[w] = 1.0; w++;
            }
        }
        bs[m] = w;
        int r = lu_factor(s->lu, m, bs, bi, bv, s->bad_pos, s->bad_row);
        free(bs); free(bi); free(bv);
        if (r < 0) return -1;
        if (r == 0) { s->lu_ok = 1; s->need_refactor = 0; return 0; }
        /* replace dependent columns by logicals of unpivoted rows */
        for (int t = 0; t < r; t++) {
            int p = s->bad_pos[t], row = s->bad_row[t];
            int jo = s->head[p], jn = n + row;
            s->bpos[jo] = -1;
            s->vst[jo] = VS_LB;
            fix_status(s, jo);
            s->head[p] = jn;
            s->bpos[jn] = p;
            s->vst[jn] = VS_BASIC;
            s->dse[p] = 1.0;
        }
        if (s->verbose) rk_log_printf(s->log, RK_LOG_WARNING, "simplex: singular basis, %d columns replaced", r);
    }
    return -1;
}

static void compute_primal(spx *s) {
    int m = s->m, N = N_of(s);
    double *t = s->tmp;
    for (int i = 0; i < m; i++) t[i] = 0.0;
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        s->x[j] = nb_value(s, j);
        if (s->x[j] != 0.0) col_axpy(s, j, -s->x[j], t);
    }
    lu_ftran(s->lu, t);
    for (int p = 0; p < m; p++) s->x[s->head[p]] = t[p];
}

static void compute_duals(spx *s) {
    int m = s->m, N = N_of(s);
    for (int p = 0; p < m; p++) s->y[p] = s->cw[s->head[p]];
    lu_btran(s->lu, s->y);
    for (int j = 0; j < N; j++) s->d[j] = s->vst[j] == VS_BASIC ? 0.0 : s->cw[j] - col_dot(s, j, s->y);
}

/* pivot row: arow[j] = rho . a_j for the nonbasic j, listed in alist;
 * arow is zero elsewhere */
static void compute_row(spx *s, const double *rho) {
    int n = s->n, m = s->m;
    double *ar = s->arow;
    for (int k = 0; k < s->alen; k++) ar[s->alist[k]] = 0.0;
    s->alen = 0;
    const int *rl = s->rlist;
    int nz = s->rlen;
    if ((double)nz < 0.1 * m) {
        for (int t = 0; t < nz; t++) {
            int i = rl[t];
            double r = rho[i];
            for (long p = s->Ars[i]; p < s->Ars[i + 1]; p++) {
                int j = s->Arj[p];
                if (s->vst[j] == VS_BASIC) continue;
                if (!s->amark[j]) { s->amark[j] = 1; s->alist[s->alen++] = j; }
                ar[j] += r * s->Arv[p];
            }
        }
        for (int k = 0; k < s->alen; k++) s->amark[s->alist[k]] = 0;
    } else {
        for (int j = 0; j < n; j++) {
            if (s->vst[j] == VS_BASIC) continue;
            double v = col_dot(s, j, rho);
            if (v != 0.0) { ar[j] = v; s->alist[s->alen++] = j; }
        }
    }
    for (int t = 0; t < nz; t++) {
        int i = rl[t];
        if (s->vst[n + i] != VS_BASIC) { ar[n + i] = rho[i]; s->alist[s->alen++] = n + i; }
    }
}

/* v[0..8) are all (signed) zeros, told from their bits alone: the passes
 * over the simplex's work vectors, mostly zeros, skip such groups */
static inline int zero8(const double *v) {
    uint64_t b[8], any = 0;
    memcpy(b, v, sizeof b);
    for (int q = 0; q < 8; q++) any |= b[q];
    return !(any & 0x7fffffffffffffffull);
}

/* the nonzero positions of v (size m) in increasing order -> list; returns
 * their count */
static int nonzero_list(const double *v, int m, int *list) {
    int k = 0, i = 0;
    for (; i + 8 <= m; i += 8) {
        if (zero8(v + i)) continue;
        for (int q = i; q < i + 8; q++) {
            list[k] = q;
            k += v[q] != 0.0;
        }
    }
    for (; i < m; i++) {
        list[k] = i;
        k += v[i] != 0.0;
    }
    return k;
}

/* squared infeasibility of the basic variable at position p (0 within PTOL) */
static inline double basic_infeasibility(const spx *s, int p) {
    int j = s->head[p];
    double v = s->x[j], inf;
    if (v < s->lb[j] - PTOL) inf = s->lb[j] - v;
    else if (v > s->ub[j] + PTOL) inf = v - s->ub[j];
    else return 0.0;
    return inf * inf;
}

static void all_basic_infeasibilities(spx *s) {
    for (int p = 0; p < s->m; p++) s->pinf[p] = basic_infeasibility(s, p);
}

static double objective_internal(const spx *s, const double *cost) {
    double o = 0.0;
    if (cost == s->c) { /* the true costs: only the columns that have one */
        for (int k = 0; k < s->ncnz; k++) o += cost[s->cnz[k]] * s->x[s->cnz[k]];
        return o;
    }
    int N = N_of(s);
    for (int j = 0; j < N; j++)
        if (cost[j] != 0.0) o += cost[j] * s->x[j];
    return o;
}

static int limits_hit(spx *s) {
    if (s->iter_limit_abs > 0 && s->iters >= s->iter_limit_abs) return LOOP_ITER;
    if (s->time_limit > 0 && (s->iters & 15) == 0 && now_s() - s->t0 > s->time_limit) return LOOP_TIME;
    return -1;
}

/* dual feasibility of nonbasic j under working costs */
static int dual_infeasible(const spx *s, int j, double tol) {
    double dj = s->d[j];
    if (s->lb[j] == s->ub[j]) return 0;
    switch (s->vst[j]) {
    case VS_LB: return dj < -tol;
    case VS_UB: return dj > tol;
    case VS_FREE: return fabs(dj) > tol;
    default: return 0;
    }
}

/* put boxed nonbasic variables at the bound their reduced cost asks for;
 * returns the number of flips */
static int flip_to_dual_feasible(spx *s) {
    int N = N_of(s), k = 0;
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        if (!isfinite(s->lb[j]) || !isfinite(s->ub[j]) || s->lb[j] == s->ub[j]) continue;
        if (s->vst[j] == VS_LB && s->d[j] < -DTOL) { s->vst[j] = VS_UB; k++; }
        else if (s->vst[j] == VS_UB && s->d[j] > DTOL) { s->vst[j] = VS_LB; k++; }
        else if (s->vst[j] == VS_FREE) { s->vst[j] = s->d[j] >= 0 ? VS_LB : VS_UB; k++; }
        s->x[j] = nb_value(s, j);
    }
    return k;
}

static int count_dual_infeasible(const spx *s) {
    int N = N_of(s), k = 0;
    for (int j = 0; j < N; j++)
        if (s->vst[j] != VS_BASIC && dual_infeasible(s, j, DTOL)) k++;
    return k;
}

/* sum of the basic variables' bound violations beyond PTOL (the phase-1
 * objective primal_loop's stall guard follows) */
static double sum_primal_infeasibility(const spx *s) {
    double w = 0.0;
    for (int p = 0; p < s->m; p++) {
        int j = s->head[p];
        if (s->x[j] < s->lb[j] - PTOL) w += s->lb[j] - s->x[j];
        else if (s->x[j] > s->ub[j] + PTOL) w += s->x[j] - s->ub[j];
    }
    return w;
}

static double max_primal_infeasibility(const spx *s) {
    double w = 0.0;
    for (int p = 0; p < s->m; p++) {
        int j = s->head[p];
        double v = s->x[j];
        if (v < s->lb[j] - w) w = s->lb[j] - v;
        if (v > s->ub[j] + w) w = v - s->ub[j];
    }
    return w;
}

/* cost perturbation of the nonbasic structurals in the direction that keeps
 * them dual feasible */
static void perturb_costs(spx *s) {
    int n = s->n;
    for (int j = 0; j < n; j++) {
        if (s->vst[j] == VS_BASIC || s->lb[j] == s->ub[j]) continue;
        double xi = (1e-7 + 5e-7 * fabs(s->c[j])) * (1.0 + rnd01(s));
        if (s->vst[j] == VS_LB) { s->cw[j] += xi; s->d[j] += xi; }
        else if (s->vst[j] == VS_UB) { s->cw[j] -= xi; s->d[j] -= xi; }
    }
    s->perturbed = 1;
}

static void remove_perturbation(spx *s) {
    memcpy(s->cw, s->c, (size_t)N_of(s) * sizeof *s->cw);
    s->perturbed = 0;
    s->shifted = 0;
}

/* -------------------------------------------------------- dual simplex */

/* list/nz: the nonzero positions of s->alpha, or NULL (lu.c scans alpha) */
static void basis_change(spx *s, int r, int q, int leave_status, const int *list, int nz) {
    int jr = s->head[r];
    s->head[r] = q;
    s->bpos[q] = r;
    s->vst[q] = VS_BASIC;
    s->bpos[jr] = -1;
    s->vst[jr] = (signed char)leave_status;
    if (s->lb[jr] == s->ub[jr]) s->vst[jr] = VS_LB;
    int rc = lu_update(s->lu, r, s->alpha, list, nz);
    if (rc != 0) s->need_refactor = 1;
}

/* Keep the row rho of B^-1 whose basic variable cannot reach its bound: its
 * combination of the rows is the Farkas proof read by spx_farkas_row. */
static void save_ray(spx *s, const double *rho) {
    if (s->ray_m < s->m) {
        double *r = realloc(s->ray, (size_t)s->m * sizeof *r);
        if (!r) return;
        s->ray = r;
        s->ray_m = s->m;
    }
    memcpy(s->ray, rho, (size_t)s->m * sizeof *rho);
    s->ray_ok = 1;
}

static int dual_loop(spx *s, double cutoff, int allow_perturb, int x_fresh0) {
    int m = s->m;
    int fresh = 0, x_fresh = x_fresh0, degenerate_run = 0;
    all_basic_infeasibilities(s);
    for (;;) {
        if (s->need_refactor || !s->lu_ok) {
            if (refactor(s)) return LOOP_ERROR;
            compute_primal(s);
            compute_duals(s);
            if (count_dual_infeasible(s) > 0) {
                flip_to_dual_feasible(s);
                compute_primal(s);
                if (count_dual_infeasible(s) > 0) return LOOP_RESTART;
            }
            all_basic_infeasibilities(s);
            fresh = 1;
            x_fresh = 1;
        }
        int lim = limits_hit(s);
        if (lim >= 0) return lim;
        if (isfinite(cutoff) && !s->perturbed) {
            double o = objective_internal(s, s->c) + s->sense * s->c0;
            if (o > cutoff + 1e-9 * fmax(1.0, fabs(cutoff))) return LOOP_CUTOFF;
        }
        /* CHUZR: dual steepest edge */
        int r = -1;
        double best = 0.0;
        const double *pinf = s->pinf;
        for (int p0 = 0; p0 < m; p0 += 8) {
            int p1 = p0 + 8 < m ? p0 + 8 : m;
            if (p1 - p0 == 8 && zero8(pinf + p0)) continue; /* 8 feasible rows */
            for (int p = p0; p < p1; p++) {
                if (pinf[p] == 0.0) continue;
                double sc = pinf[p] / s->dse[p];
                if (sc > best) { best = sc; r = p; }
            }
        }
        if (r < 0) {
            if (!x_fresh) { compute_primal(s); all_basic_infeasibilities(s); x_fresh = 1; continue; }
            return LOOP_OPTIMAL;
        }
        int jr = s->head[r];
        int to_lower = s->x[jr] < s->lb[jr];
        double bound = to_lower ? s->lb[jr] : s->ub[jr];
        double sgn = to_lower ? -1.0 : 1.0;
        /* pivot row */
        double *rho = s->rho;
        for (int i = 0; i < m; i++) rho[i] = 0.0;
        rho[r] = 1.0;
        lu_btran_unit(s->lu, rho, r);
        s->rlen = nonzero_list(rho, m, s->rlist);
        compute_row(s, rho);
        /* exact DSE weight of row r */
        double wr = 0.0;
        for (int t = 0; t < s->rlen; t++) wr += rho[s->rlist[t]] * rho[s->rlist[t]];
        s->dse[r] = wr;
        /* candidates */
        int nc = 0;
        double amax = 0.0;
        for (int k = 0; k < s->alen; k++) {
            int j = s->alist[k];
            if (s->lb[j] == s->ub[j]) continue;
            double a = sgn * s->arow[j];
            if (fabs(a) > amax) amax = fabs(a);
        }
        double ptol_rel = PIVTOL * fmax(1.0, amax) * 1e-2 > PIVTOL ? PIVTOL * fmax(1.0, amax) * 1e-2 : PIVTOL;
        int q = -1;
        int nflip = 0;
        int *flips = s->bad_row; /* reuse as a list */
        int left = 0;
        double slope = 0.0;
        /* second pass with a tiny pivot tolerance before concluding
         * infeasibility (tiny pivots on columns with huge ranges) */
        int tiny_pass = 0;
        for (int pass = 0; pass < 2 && q < 0; pass++) {
            if (pass == 1) {
                if (!fresh) break;
                ptol_rel = 1e-9;
                tiny_pass = 1;
            }
            nc = 0;
            nflip = 0;
            for (int k = 0; k < s->alen; k++) {
                int j = s->alist[k];
                int st = s->vst[j];
                if (st == VS_BASIC || s->lb[j] == s->ub[j]) continue;
                double a = sgn * s->arow[j];
                if (st == VS_LB) { if (a <= ptol_rel) continue; }
                else if (st == VS_UB) { if (a >= -ptol_rel) continue; }
                else { if (fabs(a) <= ptol_rel) continue; }
                s->cand[nc++] = j;
            }
            slope = fabs(s->x[jr] - bound);
            left = nc;
            while (left > 0) {
                double tmax = INFINITY;
                for (int k = 0; k < left; k++) {
                    int j = s->cand[k];
                    double a = sgn * s->arow[j];
                    double h = a > 0 ? (s->d[j] + DTOL) / a : (s->d[j] - DTOL) / a;
                    if (h < tmax) tmax = h;
                }
                /* block: candidates with ratio <= tmax */
                double bmax = 0.0, red = 0.0;
                int bq = -1;
                for (int k = 0; k < left; k++) {
                    int j = s->cand[k];
                    double a = sgn * s->arow[j];
                    double rt = s->d[j] / a;
                    if (rt > tmax) continue;
                    if (fabs(a) > bmax) { bmax = fabs(a); bq = j; }
                    double range = s->ub[j] - s->lb[j];
                    red += fabs(a) * range;
                }
                if (bq < 0) break;
                if (isfinite(red) && slope - red > PTOL) {
                    /* pass the whole block: flip its members */
                    int w = 0;
                    for (int k = 0; k < left; k++) {
                        int j = s->cand[k];
                        double a = sgn * s->arow[j];
                        if (s->d[j] / a <= tmax) flips[nflip++] = j;
                        else s->cand[w++] = j;
                    }
                    left = w;
                    slope -= red;
                    continue;
                }
                q = bq;
                break;
            }
        }
        if (q < 0) {
            if (!fresh) { s->need_refactor = 1; continue; }
            save_ray(s, rho);
            return LOOP_INFEASIBLE;
        }
        /* FTRAN entering column */
        double *alpha = s->alpha, *tau = s->tau;
        for (int i = 0; i < m; i++) alpha[i] = 0.0;
        col_axpy(s, q, 1.0, alpha);
        int qrow = q - s->n;
        const int *qrows = q < s->n ? s->Aci + s->Acs[q] : &qrow;
        int nqrows = q < s->n ? (int)(s->Acs[q + 1] - s->Acs[q]) : 1;
        if (s->trial) {
            lu_ftran_known(s->lu, alpha, qrows, nqrows);
        } else {
            memcpy(tau, rho, (size_t)m * sizeof *tau); /* DSE: tau = B^-1 rho */
            lu_ftran2_known(s->lu, alpha, qrows, nqrows, tau, s->rlist, s->rlen);
        }
        s->qlen = nonzero_list(alpha, m, s->qlist);
        double arq = alpha[r];
        if (fabs(arq - s->arow[q]) > 1e-7 * fmax(1.0, fabs(arq)) || fabs(arq) < 1e-11) {
            if (tiny_pass) { save_ray(s, rho); return LOOP_INFEASIBLE; } /* the tiny pivot is noise */
            if (!fresh) { s->need_refactor = 1; continue; }
            if (fabs(arq) < 1e-11) return LOOP_ERROR;
        }
        fresh = 0;
        x_fresh = 0;
        /* dual step (with cost shifting when d_q has the wrong sign) */
        double aq = sgn * s->arow[q];
        double thd = s->d[q] / aq;
        if (thd < 0) {
            s->cw[q] -= s->d[q];
            s->d[q] = 0.0;
            s->shifted = 1;
            thd = 0.0;
        }
        if (thd == 0.0) degenerate_run++; else degenerate_run = 0;
        double t = sgn * thd;
        if (t != 0.0)
            for (int k = 0; k < s->alen; k++) s->d[s->alist[k]] -= t * s->arow[s->alist[k]];
        /* bound flips */
        if (nflip > 0) {
            double *tt = s->tmp;
            for (int i = 0; i < m; i++) tt[i] = 0.0;
            for (int k = 0; k < nflip; k++) {
                int j = flips[k];
                double old = s->x[j];
                s->vst[j] = s->vst[j] == VS_LB ? VS_UB : VS_LB;
                s->x[j] = nb_value(s, j);
                col_axpy(s, j, s->x[j] - old, tt);
            }
            lu_ftran(s->lu, tt);
            for (int p = 0; p < m; p++)
                if (tt[p] != 0.0) { s->x[s->head[p]] -= tt[p]; s->pinf[p] = basic_infeasibility(s, p); }
        }
        /* primal step */
        double thp = (s->x[jr] - bound) / arq;
        const int *ql = s->qlist;
        int qn = s->qlen;
        for (int t = 0; t < qn; t++) {
            int p = ql[t];
            s->x[s->head[p]] -= thp * alpha[p];
            s->pinf[p] = basic_infeasibility(s, p);
        }
        s->x[q] += thp;
        s->x[jr] = bound;
        /* DSE weights */
        for (int t = 0; t < qn && !s->trial; t++) {
            int p = ql[t];
            if (p == r) continue;
            double ratio = alpha[p] / arq;
            double w = s->dse[p] - 2.0 * ratio * tau[p] + ratio * ratio * wr;
            double lo = 1e-6 + ratio * ratio;
            s->dse[p] = w > lo ? w : lo;
        }
        s->dse[r] = fmax(wr / (arq * arq), 1e-6);
        s->d[jr] = -t;
        s->d[q] = 0.0;
        basis_change(s, r, q, to_lower ? VS_LB : VS_UB, s->qlist, s->qlen);
        s->pinf[r] = basic_infeasibility(s, r);
        s->iters++;
        if (allow_perturb && !s->perturbed && degenerate_run > 30) perturb_costs(s);
        if (s->verbose && s->iters % 1000 == 0)
            rk_log_printf(s->log, RK_LOG_DETAIL, "dual %ld obj %.10g", s->iters, objective_internal(s, s->c));
    }
}

/* ------------------------------------------------------ primal simplex */

static int primal_loop(spx *s) {
    int m = s->m, n = s->n, N = n + m;
    int fresh = 0, x_fresh = 0;
    int phase = 0; /* 1 or 2; 0 unknown */
    for (int j = 0; j < N; j++) s->dvx[j] = 1.0;
    /* stall guard: the working objective (phase 1: the sum of the basic
     * infeasibilities; phase 2: the objective under the working costs) must
     * improve within PRIMAL_STALL + m iterations.  It did not when two equal
     * columns of a badly conditioned basis (infeasibilities of 1e10) were
     * swapped back and forth on reduced costs at the noise level (n16_B78,
     * a node LP after 11,100 nodes: 900 s until the time limit).  Refactor
     * once; stalled again, give up (LOOP_ERROR: the search re-solves the
     * node from the slack basis). */
    double prog_best = 0.0;
    long prog_it = s->iters;
    int prog_phase = 0, stalls = 0;
    for (;;) {
        if (s->need_refactor || !s->lu_ok) {
            if (refactor(s)) return LOOP_ERROR;
            compute_primal(s);
            fresh = 1;
            phase = 0;
        }
        int lim = limits_hit(s);
        if (lim >= 0) return lim;
        /* phase */
        int infeas = 0;
        for (int p = 0; p < m; p++) {
            int j = s->head[p];
            if (s->x[j] < s->lb[j] - PTOL || s->x[j] > s->ub[j] + PTOL) { infeas = 1; break; }
        }
        if ((infeas ? 1 : 2) != prog_phase || (s->iters & 127) == 0) {
            /* progress, measured every 128 iterations and at a phase change */
            double cur = infeas ? sum_primal_infeasibility(s) : objective_internal(s, s->cw);
            if ((infeas ? 1 : 2) != prog_phase || cur < prog_best - 1e-9 * (1.0 + fabs(prog_best))) {
                prog_phase = infeas ? 1 : 2;
                prog_best = cur;
                prog_it = s->iters;
            } else if (s->iters - prog_it > PRIMAL_STALL + m) {
                if (stalls++ > 0) return LOOP_ERROR;
                s->need_refactor = 1;
                prog_phase = 0;
                continue;
            }
        }
        if (infeas) {
            double *yy = s->y;
            for (int p = 0; p < m; p++) {
                int j = s->head[p];
                yy[p] = s->x[j] < s->lb[j] - PTOL ? -1.0 : (s->x[j] > s->ub[j] + PTOL ? 1.0 : 0.0);
            }
            lu_btran(s->lu, yy);
            for (int j = 0; j < N; j++) s->d[j] = s->vst[j] == VS_BASIC ? 0.0 : -col_dot(s, j, yy);
            phase = 1;
        } else if (phase != 2) {
            compute_duals(s);
            phase = 2;
        }
        /* pricing (Devex) */
        int q = -1;
        double best = 0.0;
        for (int j = 0; j < N; j++) {
            if (s->vst[j] == VS_BASIC) continue;
            if (!dual_infeasible(s, j, DTOL)) continue;
            double sc = s->d[j] * s->d[j] / s->dvx[j];
            if (sc > best) { best = sc; q = j; }
        }
        if (q < 0) {
            if (!fresh && !(phase == 2 && x_fresh)) {
                if (phase == 2) { compute_primal(s); compute_duals(s); x_fresh = 1; }
                else s->need_refactor = 1;
                continue;
            }
            return phase == 1 ? LOOP_INFEASIBLE : LOOP_OPTIMAL;
        }
        x_fresh = 0;
        double dir = s->d[q] < 0 ? 1.0 : -1.0;
        double *alpha = s->alpha;
        for (int i = 0; i < m; i++) alpha[i] = 0.0;
        col_axpy(s, q, 1.0, alpha);
        lu_ftran(s->lu, alpha);
        /* Harris ratio test: x_B(t) = x_B - dir t alpha */
        double tmax = s->ub[q] - s->lb[q]; /* bound flip of q (inf if not boxed) */
        for (int p = 0; p < m; p++) {
            double a = dir * alpha[p];
            if (fabs(a) < PIVTOL) continue;
            int j = s->head[p];
            double v = s->x[j], h;
            if (a > 0) { /* decreasing */
                if (v > s->ub[j] + PTOL) h = (v - s->ub[j] + PTOL) / a;
                else if (v >= s->lb[j] - PTOL) h = (v - s->lb[j] + PTOL) / a;
                else continue;
            } else {
                if (v < s->lb[j] - PTOL) h = (v - s->lb[j] - PTOL) / a;
                else if (v <= s->ub[j] + PTOL) h = (v - s->ub[j] - PTOL) / a;
                else continue;
            }
            if (h < tmax) tmax = h;
        }
        int r = -1;
        double bmax = 0.0, theta = 0.0;
        int leave_st = VS_LB;
        for (int p = 0; p < m; p++) {
            double a = dir * alpha[p];
            if (fabs(a) < PIVTOL) continue;
            int j = s->head[p];
            double v = s->x[j], rt, bnd;
            int st;
            if (a > 0) {
                if (v > s->ub[j] + PTOL) { bnd = s->ub[j]; st = VS_UB; }
                else if (v >= s->lb[j] - PTOL) { bnd = s->lb[j]; st = VS_LB; }
                else continue;
            } else {
                if (v < s->lb[j] - PTOL) { bnd = s->lb[j]; st = VS_LB; }
                else if (v <= s->ub[j] + PTOL) { bnd = s->ub[j]; st = VS_UB; }
                else continue;
            }
            if (!isfinite(bnd)) continue;
            rt = (v - bnd) / a;
            if (rt <= tmax && fabs(a) > bmax) {
                bmax = fabs(a); r = p; theta = rt; leave_st = st;
            }
        }
        if (r < 0) {
            if (isfinite(tmax) && tmax == s->ub[q] - s->lb[q]) {
                /* bound flip of q */
                double step = dir * tmax;
                s->vst[q] = s->vst[q] == VS_LB ? VS_UB : VS_LB;
                s->x[q] = nb_value(s, q);
                for (int p = 0; p < m; p++)
                    if (alpha[p] != 0.0) s->x[s->head[p]] -= step * alpha[p];
                s->iters++;
                if (phase == 2) { /* duals unchanged */ }
                continue;
            }
            if (!fresh) { s->need_refactor = 1; continue; }
            if (phase == 2) return LOOP_UNBOUNDED;
            return LOOP_ERROR;
        }
        if (theta < 0) theta = 0;
        fresh = 0;
        int jr = s->head[r];
        double arq = alpha[r];
        /* pivot row for duals and devex */
        double *rho = s->rho;
        for (int i = 0; i < m; i++) rho[i] = 0.0;
        rho[r] = 1.0;
        lu_btran(s->lu, rho);
        s->rlen = nonzero_list(rho, m, s->rlist); /* compute_row reads rho's nonzeros from the list */
        compute_row(s, rho);
        /* primal update */
        double step = dir * theta;
        for (int p = 0; p < m; p++)
            if (alpha[p] != 0.0) s->x[s->head[p]] -= step * alpha[p];
        s->x[q] += step;
        s->x[jr] = leave_st == VS_LB ? s->lb[jr] : s->ub[jr];
        /* duals (phase 2) */
        if (phase == 2) {
            double thd = s->d[q] / arq;
            for (int k = 0; k < s->alen; k++) s->d[s->alist[k]] -= thd * s->arow[s->alist[k]];
            s->d[jr] = -thd;
            s->d[q] = 0.0;
        }
        /* devex */
        double wq = s->dvx[q];
        for (int k = 0; k < s->alen; k++) {
            int j = s->alist[k];
            if (s->vst[j] == VS_BASIC || s->arow[j] == 0.0) continue;
            double ratio = s->arow[j] / arq;
            double w = ratio * ratio * wq;
            if (w > s->dvx[j]) s->dvx[j] = w;
        }
        s->dvx[jr] = fmax(wq / (arq * arq), 1.0);
        basis_change(s, r, q, leave_st, NULL, 0);
        s->iters++;
        if (s->verbose && s->iters % 1000 == 0)
            rk_log_printf(s->log, RK_LOG_DETAIL, "primal %ld phase %d obj %.10g", s->iters, phase, objective_internal(s, s->c));
    }
}

/* ----------------------------------------------------- dual phase 1 */

/* Solve the auxiliary problem where every bound is replaced by a box
 * ([0,0] for boxed/fixed, [0,1] lower-only, [-1,0] upper-only, [-1000,1000]
 * free).  Returns 1 when the final basis is dual feasible for the true
 * bounds, 0 when not (the LP is dual infeasible), <0 on limits/error
 * (negated LOOP_ code - 1). */
static int dual_phase1(spx *s) {
    int N = N_of(s);
    double *slb = malloc((size_t)N * sizeof *slb), *sub = malloc((size_t)N * sizeof *sub);
    if (!slb || !sub) { free(slb); free(sub); return -1 - LOOP_ERROR; }
    memcpy(slb, s->lb, (size_t)N * sizeof *slb);
    memcpy(sub, s->ub, (size_t)N * sizeof *sub);
    for (int j = 0; j < N; j++) {
        int fl = isfinite(slb[j]), fu = isfinite(sub[j]);
        if (fl && fu) { s->lb[j] = 0; s->ub[j] = 0; }
        else if (fl) { s->lb[j] = 0; s->ub[j] = 1; }
        else if (fu) { s->lb[j] = -1; s->ub[j] = 0; }
        else { s->lb[j] = -1000; s->ub[j] = 1000; }
        if (s->vst[j] != VS_BASIC) s->vst[j] = s->d[j] >= 0 ? VS_LB : VS_UB;
        if (s->vst[j] == VS_UB && s->lb[j] == s->ub[j]) s->vst[j] = VS_LB;
    }
    compute_primal(s);
    int rc = dual_loop(s, INFINITY, 0, 1);
    memcpy(s->lb, slb, (size_t)N * sizeof *slb);
    memcpy(s->ub, sub, (size_t)N * sizeof *sub);
    free(slb);
    free(sub);
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        int fl = isfinite(s->lb[j]), fu = isfinite(s->ub[j]);
        if (fl && fu) s->vst[j] = s->d[j] >= 0 ? VS_LB : VS_UB;
        else if (fl) s->vst[j] = VS_LB;
        else if (fu) s->vst[j] = VS_UB;
        else s->vst[j] = VS_FREE;
        fix_status(s, j);
    }
    compute_primal(s);
    if (rc != LOOP_OPTIMAL && rc != LOOP_INFEASIBLE) return -1 - rc;
    return count_dual_infeasible(s) == 0 ? 1 : 0;
}

/* The LP is dual infeasible (so unbounded or infeasible): find a feasible
 * point with the dual simplex on zero (randomly perturbed) costs, where
 * every basis is dual feasible, then run the primal simplex with the true
 * costs from there. */
static int feasibility_then_primal(spx *s) {
    int N = N_of(s);
    memset(s->cw, 0, (size_t)N * sizeof *s->cw);
    for (int j = 0; j < N; j++) s->d[j] = 0.0;
    perturb_costs(s);
    int rc = dual_loop(s, INFINITY, 0, 1);
    remove_perturbation(s);
    if (rc == LOOP_RESTART || rc == LOOP_ERROR) {
        /* numerical trouble: composite primal phase 1/2 instead */
        if (!s->lu_ok && refactor(s)) return LOOP_ERROR;
        compute_primal(s);
        compute_duals(s);
        return primal_loop(s);
    }
    if (rc != LOOP_OPTIMAL) return rc;
    compute_duals(s);
    return primal_loop(s);
}

/* ------------------------------------------------------------- public */

void spx_opts_default(spx_opts *o) {
    o->iter_limit = 0;
    o->time_limit = 0;
    o->cutoff = INFINITY;
    o->trial = 0;
    o->verbose = 0;
    o->log = NULL;
}

static int alloc_arrays(spx *s, int n, int m) {
    int N = n + m;
    size_t Nz = (size_t)(N ? N : 1), mz = (size_t)(m ? m : 1);
#define AL(p, k) do { void *q_ = realloc((p), (k) * sizeof(*(p))); if (!q_) return -1; (p) = q_; } while (0)
    AL(s->c, Nz); AL(s->cnz, Nz); AL(s->cw, Nz); AL(s->lb, Nz); AL(s->ub, Nz);
    AL(s->bpos, Nz); AL(s->vst, Nz); AL(s->x, Nz); AL(s->d, Nz); AL(s->dvx, Nz); AL(s->arow, Nz);
    AL(s->cand, Nz); AL(s->alist, Nz); AL(s->amark, Nz);
    AL(s->head, mz); AL(s->y, mz); AL(s->dse, mz); AL(s->rho, mz); AL(s->alpha, mz); AL(s->tau, mz);
    AL(s->tmp, mz); AL(s->rs, mz); AL(s->pinf, mz); AL(s->rlist, mz); AL(s->qlist, mz);
    AL(s->bad_pos, Nz); AL(s->bad_row, Nz);
#undef AL
    return 0;
}

static int build_rowwise(spx *s) {
    int n = s->n, m = s->m;
    long nnz = s->Acs[n];
    free(s->Ars); free(s->Arj); free(s->Arv);
    s->Ars = calloc((size_t)m + 1, sizeof *s->Ars);
    s->Arj = malloc((size_t)(nnz ? nnz : 1) * sizeof *s->Arj);
    s->Arv = malloc((size_t)(nnz ? nnz : 1) * sizeof *s->Arv);
    if (!s->Ars || !s->Arj || !s->Arv) return -1;
    return csc_rowwise(n, m, s->Acs, s->Aci, s->Acv, s->Ars, s->Arj, s->Arv);
}

static void scale_matrix(spx *s) {
    int n = s->n, m = s->m;
    double *rmin = malloc((size_t)(m ? m : 1) * sizeof *rmin);
    double *rmax = malloc((size_t)(m ? m : 1) * sizeof *rmax);
    if (!rmin || !rmax) { free(rmin); free(rmax); return; }
    for (int i = 0; i < m; i++) s->rs[i] = 1.0;
    for (int j = 0; j < n; j++) s->cs[j] = 1.0;
    for (int pass = 0; pass < 6; pass++) {
        for (int i = 0; i < m; i++) { rmin[i] = INFINITY; rmax[i] = 0.0; }
        for (int j = 0; j < n; j++)
            for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) {
                double v = fabs(s->Acv[p]) * s->cs[j];
                int i = s->Aci[p];
                if (v < rmin[i]) rmin[i] = v;
                if (v > rmax[i]) rmax[i] = v;
            }
        for (int i = 0; i < m; i++) s->rs[i] = rmax[i] > 0 ? 1.0 / sqrt(rmin[i] * rmax[i]) : 1.0;
        for (int j = 0; j < n; j++) {
            double lo = INFINITY, hi = 0.0;
            for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) {
                double v = fabs(s->Acv[p]) * s->rs[s->Aci[p]];
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
            s->cs[j] = hi > 0 ? 1.0 / sqrt(lo * hi) : 1.0;
        }
    }
    /* equilibrate columns: max |a| = 1 */
    for (int j = 0; j < n; j++) {
        double hi = 0.0;
        for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) hi = fmax(hi, fabs(s->Acv[p]) * s->rs[s->Aci[p]]);
        if (hi > 0) s->cs[j] = 1.0 / hi;
    }
    for (int i = 0; i < m; i++) s->rs[i] = pow2_round(s->rs[i]);
    for (int j = 0; j < n; j++) s->cs[j] = pow2_round(s->cs[j]);
    for (int j = 0; j < n; j++)
        for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) s->Acv[p] *= s->rs[s->Aci[p]] * s->cs[j];
    free(rmin);
    free(rmax);
}

static spx *simplex_create(const rk_lp *lp, int scaled, rk_error *err);

spx *spx_new(const rk_lp *lp, rk_error *err) { return simplex_create(lp, 1, err); }

spx *spx_new_unscaled(const rk_lp *lp, rk_error *err) { return simplex_create(lp, 0, err); }

static spx *simplex_create(const rk_lp *lp, int scaled, rk_error *err) {
    lp_csc A;
    if (lp_matrix(lp, &A)) { rk_fail(err, RK_ENOMEM, "simplex: out of memory"); return NULL; }
    spx *s = calloc(1, sizeof *s);
    if (!s) { rk_fail(err, RK_ENOMEM, "simplex: out of memory"); return NULL; }
    int n = lp->n, m = lp->m;
    s->n = n;
    s->m = m;
    s->rng = 0x9E3779B97F4A7C15ULL;
    s->lu = lu_new();
    s->Acs = malloc((size_t)(n + 1) * sizeof *s->Acs);
    s->Aci = malloc((size_t)(A.nnz ? A.nnz : 1) * sizeof *s->Aci);
    s->Acv = malloc((size_t)(A.nnz ? A.nnz : 1) * sizeof *s->Acv);
    s->cs = malloc((size_t)(n ? n : 1) * sizeof *s->cs);
    s->olb = malloc((size_t)(n ? n : 1) * sizeof *s->olb);
    s->oub = malloc((size_t)(n ? n : 1) * sizeof *s->oub);
    s->oc = malloc((size_t)(n ? n : 1) * sizeof *s->oc);
    if (!s->lu || !s->Acs || !s->Aci || !s->Acv || !s->cs || !s->olb || !s->oub || !s->oc ||
        alloc_arrays(s, n, m)) {
        spx_free(s);
        rk_fail(err, RK_ENOMEM, "simplex: out of memory");
        return NULL;
    }
    memset(s->arow, 0, (size_t)(n + m ? n + m : 1) * sizeof *s->arow);
    memset(s->amark, 0, (size_t)(n + m ? n + m : 1));
    memcpy(s->Acs, A.start, (size_t)(n + 1) * sizeof *s->Acs);
    memcpy(s->Aci, A.index, (size_t)A.nnz * sizeof *s->Aci);
    memcpy(s->Acv, A.value, (size_t)A.nnz * sizeof *s->Acv);
    if (scaled) {
        scale_matrix(s);
    } else {
        for (int i = 0; i < m; i++) s->rs[i] = 1.0;
        for (int j = 0; j < n; j++) s->cs[j] = 1.0;
    }
    if (build_rowwise(s)) {
        spx_free(s);
        rk_fail(err, RK_ENOMEM, "simplex: out of memory");
        return NULL;
    }
    s->sense = lp->maximize ? -1.0 : 1.0;
    s->c0 = lp->obj_const;
    for (int j = 0; j < n; j++) {
        s->oc[j] = lp->obj[j];
        s->olb[j] = lp->col_lb[j];
        s->oub[j] = lp->col_ub[j];
        s->c[j] = s->sense * lp->obj[j] * s->cs[j];
        if (s->c[j] != 0.0) s->cnz[s->ncnz++] = j;
        s->lb[j] = lp->col_lb[j] / s->cs[j];
        s->ub[j] = lp->col_ub[j] / s->cs[j];
        s->vst[j] = VS_LB;
        s->bpos[j] = -1;
    }
    for (int i = 0; i < m; i++) {
        int j = n + i;
        s->c[j] = 0.0;
        s->lb[j] = -lp->row_ub[i] * s->rs[i];
        s->ub[j] = -lp->row_lb[i] * s->rs[i];
        s->vst[j] = VS_BASIC;
        s->bpos[j] = i;
        s->head[i] = j;
        s->dse[i] = 1.0;
    }
    memcpy(s->cw, s->c, (size_t)(n + m) * sizeof *s->cw);
    for (int j = 0; j < n; j++) fix_status(s, j);
    for (int j = 0; j < n + m; j++) s->dvx[j] = 1.0;
    s->last = RK_LP_ERROR;
    return s;
}

void spx_set_seed(spx *s, unsigned long long seed) {
    s->rng = 0x9E3779B97F4A7C15ULL ^ (seed * 0x100000001B3ULL);
}

void spx_free(spx *s) {
    if (!s) return;
    free(s->Acs); free(s->Aci); free(s->Acv);
    free(s->Ars); free(s->Arj); free(s->Arv);
    free(s->cs); free(s->rs); free(s->c); free(s->cnz); free(s->cw); free(s->lb); free(s->ub);
    free(s->olb); free(s->oub); free(s->oc);
    free(s->head); free(s->bpos); free(s->vst); free(s->x); free(s->d); free(s->y);
    free(s->dse); free(s->dvx);
    free(s->rho); free(s->alpha); free(s->tau); free(s->tmp); free(s->arow);
    free(s->pinf); free(s->rlist); free(s->qlist);
    free(s->cand); free(s->alist); free(s->amark); free(s->bad_pos); free(s->bad_row);
    lu_free(s->lu);
    free(s->ray);
    free(s);
}

int spx_num_cols(const spx *s) { return s->n; }
int spx_num_rows(const spx *s) { return s->m; }

#define MAX_INCR 4  /* in-place primal updates before a full recomputation is cheaper */

void spx_set_col_bounds(spx *s, int j, double lb, double ub) {
    s->olb[j] = lb;
    s->oub[j] = ub;
    s->lb[j] = lb / s->cs[j];
    s->ub[j] = ub / s->cs[j];
    if (s->vst[j] == VS_BASIC) return; /* x unchanged, only its feasibility */
    double old = s->x[j];
    fix_status(s, j);
    double delta = s->x[j] - old;
    if (delta == 0.0 || !s->x_valid) return;
    if (!isfinite(delta) || !s->lu_ok || s->need_refactor || s->n_incr >= MAX_INCR) {
        s->x_valid = 0;
        return;
    }
    /* B x_B = -N x_N: x_B -= B^-1 a_j delta */
    double *t = s->tmp;
    for (int i = 0; i < s->m; i++) t[i] = 0.0;
    col_axpy(s, j, delta, t);
    lu_ftran(s->lu, t);
    for (int p = 0; p < s->m; p++) s->x[s->head[p]] -= t[p];
    s->n_incr++;
}

void spx_get_col_bounds(const spx *s, int j, double *lb, double *ub) {
    if (lb) *lb = s->olb[j];
    if (ub) *ub = s->oub[j];
}

static rk_lp_status map_loop(int rc) {
    switch (rc) {
    case LOOP_OPTIMAL: return RK_LP_OPTIMAL;
    case LOOP_INFEASIBLE: return RK_LP_INFEASIBLE;
    case LOOP_UNBOUNDED: return RK_LP_UNBOUNDED;
    case LOOP_ITER: return RK_LP_ITER_LIMIT;
    case LOOP_TIME: return RK_LP_TIME_LIMIT;
    case LOOP_CUTOFF: return RK_LP_CUTOFF;
    default: return RK_LP_ERROR;
    }
}

rk_lp_status spx_solve(spx *s, const spx_opts *o) {
    spx_opts def;
    if (!o) { spx_opts_default(&def); o = &def; }
    s->ray_ok = 0;
    s->t0 = now_s();
    s->time_limit = o->time_limit;
    s->iter_limit_abs = o->iter_limit > 0 ? s->iters + o->iter_limit : 0;
    s->verbose = o->verbose;
    s->log = o->log;
    s->trial = o->trial;
    for (int j = 0; j < N_of(s); j++)
        if (s->lb[j] > s->ub[j] + PTOL * (1.0 + fabs(s->ub[j]))) {
            s->last = RK_LP_INFEASIBLE; /* crossing bounds */
            return s->last;
        }
    int cold = !s->solved_once;
    s->solved_once = 1;
    remove_perturbation(s);
    int N = N_of(s);
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        double old = s->x[j];
        fix_status(s, j);
        if (s->x[j] != old) s->x_valid = 0;
    }
    int warm = s->x_valid && s->d_valid && s->lu_ok && !s->need_refactor;
    int rc = LOOP_ERROR;
    for (int attempt = 0; attempt < 6; attempt++) {
        if (!s->lu_ok || s->need_refactor)
            if (refactor(s)) { rc = LOOP_ERROR; break; }
        /* after an optimal solve and bound changes, x and d are current:
         * no FTRAN / BTRAN / pricing pass before the first iteration */
        if (!(attempt == 0 && warm)) {
            compute_primal(s);
            compute_duals(s);
        }
        int nflip = 0;
        {
            /* would flipping make it dual feasible? */
            int bad = 0;
            for (int j = 0; j < N; j++) {
                if (s->vst[j] == VS_BASIC || !dual_infeasible(s, j, DTOL)) continue;
                if (isfinite(s->lb[j]) && isfinite(s->ub[j])) continue;
                bad++;
            }
            if (bad == 0) {
                nflip = flip_to_dual_feasible(s);
                if (nflip) compute_primal(s);
                if (cold && attempt == 0 && s->m > 0) perturb_costs(s);
                rc = dual_loop(s, o->cutoff, 1, 1);
            } else if (max_primal_infeasibility(s) <= PTOL) {
                rc = primal_loop(s);
            } else {
                int p1 = dual_phase1(s);
                if (p1 < 0) { rc = -1 - p1; if (rc == LOOP_ERROR) rc = LOOP_RESTART; }
                else if (p1 == 0) rc = feasibility_then_primal(s);
                else rc = LOOP_RESTART;
            }
        }
        if (rc == LOOP_RESTART) continue;
        if (rc == LOOP_OPTIMAL || rc == LOOP_CUTOFF) {
            if (s->perturbed || s->shifted) {
                remove_perturbation(s);
                compute_duals(s);
                if (count_dual_infeasible(s) > 0) {
                    rc = primal_loop(s);
                    if (rc != LOOP_OPTIMAL) break;
                } else if (rc == LOOP_CUTOFF) {
                    break;
                }
            }
            if (rc == LOOP_CUTOFF) break;
            /* verify: the loops end with primal values recomputed from the
             * factors; recompute the duals too */
            compute_duals(s);
            if (max_primal_infeasibility(s) <= 10 * PTOL && count_dual_infeasible(s) == 0) break;
            if (s->verbose) rk_log_printf(s->log, RK_LOG_WARNING, "simplex: verification failed, continuing");
            s->need_refactor = 1;
            rc = LOOP_ERROR;
            continue;
        }
        break;
    }
    if (rc == LOOP_OPTIMAL) {
        remove_perturbation(s);
    }
    /* an optimal solve ends with x and d recomputed from the factors */
    s->x_valid = s->d_valid = rc == LOOP_OPTIMAL && !s->perturbed && !s->shifted;
    s->n_incr = 0;
    s->last = map_loop(rc);
    return s->last;
}

double spx_objective(const spx *s) {
    double o = s->c0;
    for (int j = 0; j < s->n; j++) o += s->oc[j] * s->x[j] * s->cs[j];
    return o;
}

void spx_get_x(const spx *s, double *x) {
    for (int j = 0; j < s->n; j++) x[j] = s->x[j] * s->cs[j];
}

void spx_get_reduced_costs(const spx *s, double *d) {
    for (int j = 0; j < s->n; j++) d[j] = s->vst[j] == VS_BASIC ? 0.0 : s->sense * s->d[j] / s->cs[j];
}

void spx_get_row_activity(const spx *s, double *ax) {
    for (int i = 0; i < s->m; i++) ax[i] = -s->x[s->n + i] / s->rs[i];
}

void spx_get_duals(const spx *s, double *y) {
    for (int i = 0; i < s->m; i++) y[i] = s->sense * s->y[i] * s->rs[i];
}

int spx_farkas_row(const spx *s, double *a, double *lo, double *hi) {
    if (!s->ray_ok || s->last != RK_LP_INFEASIBLE) return -1;
    /* rho (A' x' + s) = 0 with A'_ij = rs_i A_ij cs_j and s_i = -rs_i A_i x:
     * the multiplier of row i (original units) is rho_i rs_i */
    for (int j = 0; j < s->n; j++) a[j] = 0.0;
    double l = 0.0, h = 0.0;
    for (int i = 0; i < s->m; i++) {
        double w = s->ray[i];
        if (w == 0.0) continue;
        for (long p = s->Ars[i]; p < s->Ars[i + 1]; p++) a[s->Arj[p]] += w * s->Arv[p];
        /* row i's activity times rs_i lies in [-ub(s_i), -lb(s_i)] */
        double rl = -s->ub[s->n + i], rh = -s->lb[s->n + i];
        l += w > 0 ? w * rl : w * rh;
        h += w > 0 ? w * rh : w * rl;
    }
    for (int j = 0; j < s->n; j++) a[j] /= s->cs[j];
    *lo = isnan(l) ? -INFINITY : l;
    *hi = isnan(h) ? INFINITY : h;
    return 0;
}

int spx_cutoff_row(const spx *s, double *a, double *lo) {
    if (s->last != RK_LP_CUTOFF || !s->lu_ok || s->need_refactor) return -1;
    int m = s->m, n = s->n;
    double *y = malloc((size_t)(m ? m : 1) * sizeof *y);
    if (!y) return -1;
    /* y = B^-T c_B with the true costs: c x = (c - y A) x + y (A x) */
    for (int p = 0; p < m; p++) y[p] = s->head[p] < n ? s->c[s->head[p]] : 0.0;
    lu_btran(s->lu, y);
    double l = 0.0;
    for (int i = 0; i < m; i++) {
        if (y[i] == 0.0) continue;
        /* rs_i A_i x lies in [-ub(s_i), -lb(s_i)] */
        l += y[i] > 0 ? y[i] * -s->ub[n + i] : y[i] * -s->lb[n + i];
    }
    for (int j = 0; j < n; j++) a[j] = (s->c[j] - col_dot(s, j, y)) / s->cs[j];
    free(y);
    *lo = isnan(l) ? -INFINITY : l;
    return 0;
}

rk_status spx_get_basis(const spx *s, spx_basis *b) {
    b->n = s->n;
    b->m = s->m;
    b->col = malloc((size_t)(s->n ? s->n : 1));
    b->row = malloc((size_t)(s->m ? s->m : 1));
    if (!b->col || !b->row) { free(b->col); free(b->row); b->col = b->row = NULL; return RK_ENOMEM; }
    for (int j = 0; j < s->n; j++) b->col[j] = s->vst[j];
    for (int i = 0; i < s->m; i++) {
        int st = s->vst[s->n + i];
        b->row[i] = (signed char)(st == VS_LB ? 2 : st == VS_UB ? 1 : st);
    }
    return RK_OK;
}

rk_status spx_set_basis(spx *s, const spx_basis *b) {
    if (b->n != s->n || b->m != s->m) return RK_EINPUT;
    s->x_valid = s->d_valid = 0;
    int nb = 0;
    for (int j = 0; j < s->n; j++) nb += b->col[j] == 0;
    for (int i = 0; i < s->m; i++) nb += b->row[i] == 0;
    if (nb != s->m) return RK_EINPUT;
    /* Few basis changes: reach the new basis by LU updates instead of a
     * refactorization (B&B switches between nearby nodes all the time). */
    int N = s->n + s->m, nin = 0, nout = 0;
    int *ent = s->cand, *lpos = s->bad_pos;
    for (int j = 0; j < N; j++) {
        int tb = (j < s->n ? b->col[j] : b->row[j - s->n]) == 0;
        int cb = s->vst[j] == VS_BASIC;
        if (tb && !cb) ent[nin++] = j;
        else if (!tb && cb) lpos[nout++] = s->bpos[j];
    }
    int ok = nin == nout && (nin == 0 || (s->lu_ok && nin <= 50 && nin <= s->m / 4 + 1));
    for (int k = 0; k < nin && ok; k++) {
        int q = ent[k];
        double *alpha = s->alpha;
        for (int i = 0; i < s->m; i++) alpha[i] = 0.0;
        col_axpy(s, q, 1.0, alpha);
        lu_ftran(s->lu, alpha);
        double amax = 0.0, best = 0.0;
        int bt = -1;
        for (int i = 0; i < s->m; i++) {
            double v = fabs(alpha[i]);
            if (v > amax) amax = v;
        }
        for (int t = 0; t < nout; t++) {
            if (lpos[t] < 0) continue;
            double v = fabs(alpha[lpos[t]]);
            if (v > best) { best = v; bt = t; }
        }
        if (bt < 0 || best < 1e-9 || best < 1e-3 * amax) { ok = 0; break; }
        int p = lpos[bt], jo = s->head[p];
        lpos[bt] = -1;
        s->head[p] = q;
        s->bpos[q] = p;
        s->vst[q] = VS_BASIC;
        s->bpos[jo] = -1;
        s->vst[jo] = VS_LB;
        s->dse[p] = 1.0;
        int rc = lu_update(s->lu, p, alpha, NULL, 0);
        if (rc < 0) { s->lu_ok = 0; ok = 0; break; }
        if (rc > 0) s->need_refactor = 1;
    }
    if (ok) {
        for (int j = 0; j < N; j++) {
            int st = j < s->n ? b->col[j] : b->row[j - s->n];
            if (st == 0) continue;
            if (j >= s->n && st > 0 && st < 3) st = st == 1 ? VS_UB : VS_LB;
            if (st < 1 || st > 3) st = VS_LB;
            s->vst[j] = (signed char)st;
            fix_status(s, j);
        }
        s->solved_once = 1;
        return RK_OK;
    }
    int p = 0;
    for (int j = 0; j < s->n + s->m; j++) {
        int st = j < s->n ? b->col[j] : b->row[j - s->n];
        if (j >= s->n && st > 0 && st < 3) st = st == 1 ? VS_UB : VS_LB;
        if (st < 0 || st > 3) st = VS_LB;
        s->vst[j] = (signed char)st;
        if (st == VS_BASIC) {
            s->head[p] = j;
            s->bpos[j] = p;
            s->dse[p] = 1.0;
            p++;
        } else {
            s->bpos[j] = -1;
            fix_status(s, j);
        }
    }
    s->lu_ok = 0;
    s->solved_once = 1;
    return RK_OK;
}

void spx_basis_free(spx_basis *b) {
    if (!b) return;
    free(b->col);
    free(b->row);
    b->col = b->row = NULL;
}

long spx_iterations(const spx *s) { return s->iters; }

rk_status spx_add_rows(spx *s, int nrows, const double *lb, const double *ub,
                              const int *start, const int *idx, const double *val) {
    s->x_valid = s->d_valid = 0;
    if (nrows <= 0) return RK_OK;
    int n = s->n, m0 = s->m, m1 = m0 + nrows;
    long add = start[nrows] - start[0];
    for (long p = start[0]; p < start[nrows]; p++)
        if (idx[p] < 0 || idx[p] >= n) return RK_EINPUT;
    /* save N-indexed data (logicals shift nothing: they are appended) */
    if (alloc_arrays(s, n, m1)) return RK_ENOMEM;
    for (int j = n + m0; j < n + m1; j++) { s->arow[j] = 0.0; s->amark[j] = 0; }
    /* new row scales */
    for (int k = 0; k < nrows; k++) {
        double hi = 0.0;
        for (int p = start[k]; p < start[k + 1]; p++) hi = fmax(hi, fabs(val[p] * s->cs[idx[p]]));
        s->rs[m0 + k] = hi > 0 ? pow2_round(1.0 / hi) : 1.0;
    }
    /* rebuild CSC with the new entries */
    long nnz0 = s->Acs[n];
    long *ns = calloc((size_t)n + 1, sizeof *ns);
    int *ni = malloc((size_t)(nnz0 + add + 1) * sizeof *ni);
    double *nv = malloc((size_t)(nnz0 + add + 1) * sizeof *nv);
    if (!ns || !ni || !nv) { free(ns); free(ni); free(nv); return RK_ENOMEM; }
    for (int j = 0; j < n; j++) ns[j + 1] = s->Acs[j + 1] - s->Acs[j];
    for (int k = 0; k < nrows; k++)
        for (int p = start[k]; p < start[k + 1]; p++) ns[idx[p] + 1]++;
    for (int j = 0; j < n; j++) ns[j + 1] += ns[j];
    long *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
    if (!fill) { free(ns); free(ni); free(nv); return RK_ENOMEM; }
    for (int j = 0; j < n; j++) {
        fill[j] = ns[j];
        for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) { ni[fill[j]] = s->Aci[p]; nv[fill[j]] = s->Acv[p]; fill[j]++; }
    }
    for (int k = 0; k < nrows; k++)
        for (int p = start[k]; p < start[k + 1]; p++) {
            int j = idx[p];
            if (val[p] == 0.0) continue;
            ni[fill[j]] = m0 + k;
            nv[fill[j]] = val[p] * s->cs[j] * s->rs[m0 + k];
            fill[j]++;
        }
    /* compact (zeros skipped leave holes) */
    long w = 0;
    for (int j = 0; j < n; j++) {
        long b = ns[j], e = fill[j];
        ns[j] = w;
        for (long p = b; p < e; p++) { ni[w] = ni[p]; nv[w] = nv[p]; w++; }
    }
    ns[n] = w;
    free(fill);
    free(s->Acs); free(s->Aci); free(s->Acv);
    s->Acs = ns; s->Aci = ni; s->Acv = nv;
    s->m = m1;
    if (build_rowwise(s)) return RK_ENOMEM;
    for (int k = 0; k < nrows; k++) {
        int i = m0 + k, j = n + i;
        s->c[j] = 0.0;
        s->cw[j] = 0.0;
        s->lb[j] = -ub[k] * s->rs[i];
        s->ub[j] = -lb[k] * s->rs[i];
        s->vst[j] = VS_BASIC;
        s->bpos[j] = i;
        s->head[i] = j;
        s->dse[i] = 1.0;
        s->dvx[j] = 1.0;
        s->x[j] = 0.0;
        s->d[j] = 0.0;
    }
    s->lu_ok = 0;
    return RK_OK;
}

rk_status spx_remove_rows(spx *s, const char *drop) {
    int n = s->n, m = s->m;
    int *map = malloc((size_t)(m ? m : 1) * sizeof *map); /* old row -> new row, -1 dropped */
    if (!map) return RK_ENOMEM;
    int m1 = 0;
    for (int i = 0; i < m; i++) {
        if (drop[i] && s->vst[n + i] != VS_BASIC) { free(map); return RK_EINPUT; }
        map[i] = drop[i] ? -1 : m1++;
    }
    if (m1 == m) { free(map); return RK_OK; }
    /* the pivot-row work list may name logicals that go */
    for (int k = 0; k < s->alen; k++) s->arow[s->alist[k]] = 0.0;
    s->alen = 0;
    memset(s->amark, 0, (size_t)(n + m));
    /* matrix: drop the entries of the dropped rows, renumber the others */
    long w = 0;
    for (int j = 0; j < n; j++) {
        long b = s->Acs[j], e = s->Acs[j + 1];
        s->Acs[j] = w;
        for (long p = b; p < e; p++) {
            int i = map[s->Aci[p]];
            if (i < 0) continue;
            s->Aci[w] = i;
            s->Acv[w] = s->Acv[p];
            w++;
        }
    }
    s->Acs[n] = w;
    /* logicals (N-indexed) and row-indexed data move down; the basis loses
     * the dropped rows' basic logicals, its other positions keep their order */
    int pos = 0;
    for (int k = 0; k < m; k++) {
        int j = s->head[k];
        int keep = j < n || map[j - n] >= 0;
        if (!keep) continue;
        s->head[pos] = j < n ? j : n + map[j - n];
        s->dse[pos] = s->dse[k];
        pos++;
    }
    for (int i = 0; i < m; i++) {
        int t = map[i];
        if (t < 0 || t == i) continue;
        int a = n + i, b = n + t;
        s->c[b] = s->c[a]; s->cw[b] = s->cw[a]; s->lb[b] = s->lb[a]; s->ub[b] = s->ub[a];
        s->vst[b] = s->vst[a]; s->x[b] = s->x[a]; s->d[b] = s->d[a]; s->dvx[b] = s->dvx[a];
        s->arow[b] = 0.0; s->amark[b] = 0;
        s->rs[t] = s->rs[i];
    }
    free(map);
    s->m = m1;
    for (int j = 0; j < n + m1; j++) s->bpos[j] = -1;
    for (int k = 0; k < m1; k++) s->bpos[s->head[k]] = k;
    if (build_rowwise(s)) return RK_ENOMEM;
    s->lu_ok = 0;
    s->x_valid = s->d_valid = 0;
    return RK_OK;
}

/* ------------------------------------------------------------ snapshot */

struct spx_state {
    int n, m;
    int *head, *bpos;
    signed char *vst;
    double *x, *d, *dse, *lb, *ub, *olb, *oub;
    unsigned long lu_gen;
    int neta, lu_ok, need_refactor, x_valid, d_valid;
    rk_lp_status last;
};

/* The arrays of a snapshot: engine -> state (to_state) or back. */
static void state_copy(spx *s, spx_state *st, int to_state) {
    int n = s->n, m = s->m;
    size_t N = (size_t)(n + m);
#define CP(a, b, k) (to_state ? memcpy((a), (b), (k) * sizeof *(a)) : memcpy((b), (a), (k) * sizeof *(a)))
    CP(st->head, s->head, (size_t)m);
    CP(st->bpos, s->bpos, N);
    CP(st->vst, s->vst, N);
    CP(st->x, s->x, N);
    CP(st->d, s->d, N);
    CP(st->dse, s->dse, (size_t)m);
    CP(st->lb, s->lb, N);
    CP(st->ub, s->ub, N);
    CP(st->olb, s->olb, (size_t)n);
    CP(st->oub, s->oub, (size_t)n);
#undef CP
}

void spx_state_free(spx_state *st) {
    if (!st) return;
    free(st->head); free(st->bpos); free(st->vst); free(st->x); free(st->d); free(st->dse);
    free(st->lb); free(st->ub); free(st->olb); free(st->oub);
    free(st);
}

spx_state *spx_state_save(const spx *s, spx_state *st) {
    int n = s->n, m = s->m, N = n + m;
    if (st && (st->n != n || st->m != m)) {
        spx_state_free(st);
        st = NULL;
    }
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return NULL;
        st->n = n;
        st->m = m;
        size_t mm = (size_t)(m ? m : 1), NN = (size_t)N, nn = (size_t)(n ? n : 1);
        st->head = malloc(mm * sizeof *st->head);
        st->bpos = malloc(NN * sizeof *st->bpos);
        st->vst = malloc(NN);
        st->x = malloc(NN * sizeof *st->x);
        st->d = malloc(NN * sizeof *st->d);
        st->dse = malloc(mm * sizeof *st->dse);
        st->lb = malloc(NN * sizeof *st->lb);
        st->ub = malloc(NN * sizeof *st->ub);
        st->olb = malloc(nn * sizeof *st->olb);
        st->oub = malloc(nn * sizeof *st->oub);
        if (!st->head || !st->bpos || !st->vst || !st->x || !st->d || !st->dse || !st->lb || !st->ub || !st->olb ||
            !st->oub) {
            spx_state_free(st);
            return NULL;
        }
    }
    state_copy((spx *)s, st, 1);
    st->lu_gen = lu_generation(s->lu);
    st->neta = lu_num_updates(s->lu);
    st->lu_ok = s->lu_ok;
    st->need_refactor = s->need_refactor;
    st->x_valid = s->x_valid;
    st->d_valid = s->d_valid;
    st->last = s->last;
    return st;
}

void spx_state_restore(spx *s, const spx_state *st) {
    int n = s->n, m = s->m;
    if (st->n != n || st->m != m) return;
    state_copy(s, (spx_state *)st, 0);
    remove_perturbation(s);
    s->last = st->last;
    s->n_incr = 0;
    if (st->lu_ok && s->lu_ok && lu_generation(s->lu) == st->lu_gen && lu_num_updates(s->lu) >= st->neta) {
        lu_truncate_updates(s->lu, st->neta);
        s->need_refactor = st->need_refactor;
        s->x_valid = st->x_valid;
        s->d_valid = st->d_valid;
    } else {
        /* refactored since: the factors are of another basis */
        s->lu_ok = 0;
        s->need_refactor = 1;
        s->x_valid = s->d_valid = 0;
    }
}
