/* simplex.c — the LP engine of src/ilp (see simplex.h): a scaled working
 * copy of the LP in the bounded form  A x + s = 0  (one logical s_i per row,
 * bounds -row_ub <= s_i <= -row_lb), a basis factored by lu.c, solved by a
 * bounded dual simplex (simplex_dual.c) and a bounded primal simplex
 * (simplex_primal.c) on shared operations (simplex_ops.c).  This file owns
 * creating (scaling) and freeing an spx, column bounds, spx_solve's choice
 * of method and its verification, and reading results and proofs back in
 * the original units; simplex_basis.c owns bases, cut rows and snapshots.
 * Everything lives in the spx object (reentrant). */
#include "simplex_internal.h"

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

/* ------------------------------------------------------------- public */

void spx_opts_default(spx_opts *o) {
    o->iter_limit = 0;
    o->time_limit = 0;
    o->cutoff = INFINITY;
    o->trial = 0;
    o->verbose = 0;
    o->log = NULL;
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
        sx_alloc_arrays(s, n, m)) {
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
    if (sx_build_rowwise(s)) {
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
    sx_remove_perturbation(s);
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
            if (sx_refactor(s)) { rc = LOOP_ERROR; break; }
        /* after an optimal solve and bound changes, x and d are current:
         * no FTRAN / BTRAN / pricing pass before the first iteration */
        if (!(attempt == 0 && warm)) {
            sx_compute_primal(s);
            sx_compute_duals(s);
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
                nflip = sx_flip_to_dual_feasible(s);
                if (nflip) sx_compute_primal(s);
                if (cold && attempt == 0 && s->m > 0) sx_perturb_costs(s);
                rc = sx_dual_loop(s, o->cutoff, 1, 1);
            } else if (max_primal_infeasibility(s) <= PTOL) {
                rc = sx_primal_loop(s);
            } else {
                int p1 = sx_dual_phase1(s);
                if (p1 < 0) { rc = -1 - p1; if (rc == LOOP_ERROR) rc = LOOP_RESTART; }
                else if (p1 == 0) rc = sx_feasibility_then_primal(s);
                else rc = LOOP_RESTART;
            }
        }
        if (rc == LOOP_RESTART) continue;
        if (rc == LOOP_OPTIMAL || rc == LOOP_CUTOFF) {
            if (s->perturbed || s->shifted) {
                sx_remove_perturbation(s);
                sx_compute_duals(s);
                if (sx_count_dual_infeasible(s) > 0) {
                    rc = sx_primal_loop(s);
                    if (rc != LOOP_OPTIMAL) break;
                } else if (rc == LOOP_CUTOFF) {
                    break;
                }
            }
            if (rc == LOOP_CUTOFF) break;
            /* verify: the loops end with primal values recomputed from the
             * factors; recompute the duals too */
            sx_compute_duals(s);
            if (max_primal_infeasibility(s) <= 10 * PTOL && sx_count_dual_infeasible(s) == 0) break;
            if (s->verbose) rk_log_printf(s->log, RK_LOG_WARNING, "simplex: verification failed, continuing");
            s->need_refactor = 1;
            rc = LOOP_ERROR;
            continue;
        }
        break;
    }
    if (rc == LOOP_OPTIMAL) {
        sx_remove_perturbation(s);
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
