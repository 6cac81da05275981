/* simplex_internal.h — what the simplex engine's files (simplex*.c) share
 * and nothing else includes: the spx object itself, the variable statuses,
 * tolerances and loop results, the small inline helpers of the iteration
 * loops, and the functions one of those files defines for the others:
 *   simplex_ops.c    factorization, primal / dual values, pivot row,
 *                    perturbation, basis change, array (re)allocation;
 *   simplex_dual.c   the dual simplex loop and dual phase 1;
 *   simplex_primal.c the primal simplex loop and the feasibility-first path;
 *   simplex.c        create / free / bounds / spx_solve / results;
 *   simplex_basis.c  bases in and out, cut rows added / removed, snapshots. */
#ifndef RK_SIMPLEX_INTERNAL_H
#define RK_SIMPLEX_INTERNAL_H

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
 * simplex is stalled (sx_primal_loop) */
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

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double rnd01(spx *s) {
    s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(s->rng >> 11) * (1.0 / 9007199254740992.0);
}

static inline double pow2_round(double v) {
    if (!(v > 0) || !isfinite(v)) return 1.0;
    int e;
    frexp(v, &e);
    return ldexp(1.0, e - 1);
}

static inline int N_of(const spx *s) { return s->n + s->m; }

static inline double nb_value(const spx *s, int j) {
    switch (s->vst[j]) {
    case VS_LB: return s->lb[j];
    case VS_UB: return s->ub[j];
    default: return 0.0;
    }
}

/* make the nonbasic status of j consistent with its bounds */
static inline void fix_status(spx *s, int j) {
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
static inline double col_dot(const spx *s, int j, const double *y) {
    if (j >= s->n) return y[j - s->n];
    double t = 0.0;
    for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) t += s->Acv[p] * y[s->Aci[p]];
    return t;
}

/* v += mult * a_j */
static inline void col_axpy(const spx *s, int j, double mult, double *v) {
    if (j >= s->n) { v[j - s->n] += mult; return; }
    for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) v[s->Aci[p]] += mult * s->Acv[p];
}

/* v[0..8) are all (signed) zeros, told from their bits alone: the passes
 * over the simplex's work vectors, mostly zeros, skip such groups */
static inline int zero8(const double *v) {
    uint64_t b[8], any = 0;
    memcpy(b, v, sizeof b);
    for (int q = 0; q < 8; q++) any |= b[q];
    return !(any & 0x7fffffffffffffffull);
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

static inline int limits_hit(spx *s) {
    if (s->iter_limit_abs > 0 && s->iters >= s->iter_limit_abs) return LOOP_ITER;
    if (s->time_limit > 0 && (s->iters & 15) == 0 && now_s() - s->t0 > s->time_limit) return LOOP_TIME;
    return -1;
}

/* dual feasibility of nonbasic j under working costs */
static inline int dual_infeasible(const spx *s, int j, double tol) {
    double dj = s->d[j];
    if (s->lb[j] == s->ub[j]) return 0;
    switch (s->vst[j]) {
    case VS_LB: return dj < -tol;
    case VS_UB: return dj > tol;
    case VS_FREE: return fabs(dj) > tol;
    default: return 0;
    }
}

/* ---------------------------------------------------- simplex_ops.c */

int sx_refactor(spx *s);
void sx_compute_primal(spx *s);
void sx_compute_duals(spx *s);
/* pivot row: arow[j] = rho . a_j for the nonbasic j, listed in alist;
 * arow is zero elsewhere */
void sx_compute_row(spx *s, const double *rho);
/* the nonzero positions of v (size m) in increasing order -> list; returns
 * their count */
int sx_nonzero_list(const double *v, int m, int *list);
void sx_all_basic_infeasibilities(spx *s);
double sx_objective_internal(const spx *s, const double *cost);
/* put boxed nonbasic variables at the bound their reduced cost asks for;
 * returns the number of flips */
int sx_flip_to_dual_feasible(spx *s);
int sx_count_dual_infeasible(const spx *s);
/* cost perturbation of the nonbasic structurals in the direction that keeps
 * them dual feasible */
void sx_perturb_costs(spx *s);
void sx_remove_perturbation(spx *s);
/* list/nz: the nonzero positions of s->alpha, or NULL (lu.c scans alpha) */
void sx_basis_change(spx *s, int r, int q, int leave_status, const int *list, int nz);
int sx_alloc_arrays(spx *s, int n, int m);
int sx_build_rowwise(spx *s);

/* --------------------------------------------------- simplex_dual.c */

int sx_dual_loop(spx *s, double cutoff, int allow_perturb, int x_fresh0);
/* Solve the auxiliary problem where every bound is replaced by a box:
 * 1 when the final basis is dual feasible for the true bounds, 0 when not
 * (the LP is dual infeasible), <0 on limits/error (negated LOOP_ code - 1) */
int sx_dual_phase1(spx *s);

/* ------------------------------------------------- simplex_primal.c */

int sx_primal_loop(spx *s);
/* The LP is dual infeasible: a feasible point first, then the primal simplex */
int sx_feasibility_then_primal(spx *s);

#endif
