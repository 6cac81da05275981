/* simplex_dual.c — the bounded dual simplex of the LP engine: dual
 * steepest-edge pricing, a bound-flipping Harris ratio test, cost
 * perturbation / shifting against stalling (sx_dual_loop), and the dual
 * phase 1 on the auxiliary box problem (Fourer / Koberstein). */
#include "simplex_internal.h"

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

int sx_dual_loop(spx *s, double cutoff, int allow_perturb, int x_fresh0) {
    int m = s->m;
    int fresh = 0, x_fresh = x_fresh0, degenerate_run = 0;
    sx_all_basic_infeasibilities(s);
    for (;;) {
        if (s->need_refactor || !s->lu_ok) {
            if (sx_refactor(s)) return LOOP_ERROR;
            sx_compute_primal(s);
            sx_compute_duals(s);
            if (sx_count_dual_infeasible(s) > 0) {
                sx_flip_to_dual_feasible(s);
                sx_compute_primal(s);
                if (sx_count_dual_infeasible(s) > 0) return LOOP_RESTART;
            }
            sx_all_basic_infeasibilities(s);
            fresh = 1;
            x_fresh = 1;
        }
        int lim = limits_hit(s);
        if (lim >= 0) return lim;
        if (isfinite(cutoff) && !s->perturbed) {
            double o = sx_objective_internal(s, s->c) + s->sense * s->c0;
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
            if (!x_fresh) { sx_compute_primal(s); sx_all_basic_infeasibilities(s); x_fresh = 1; continue; }
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
        s->rlen = sx_nonzero_list(rho, m, s->rlist);
        sx_compute_row(s, rho);
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
        s->qlen = sx_nonzero_list(alpha, m, s->qlist);
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
        sx_basis_change(s, r, q, to_lower ? VS_LB : VS_UB, s->qlist, s->qlen);
        s->pinf[r] = basic_infeasibility(s, r);
        s->iters++;
        if (allow_perturb && !s->perturbed && degenerate_run > 30) sx_perturb_costs(s);
        if (s->verbose && s->iters % 1000 == 0)
            rk_log_printf(s->log, RK_LOG_DETAIL, "dual %ld obj %.10g", s->iters, sx_objective_internal(s, s->c));
    }
}

/* Solve the auxiliary problem where every bound is replaced by a box
 * ([0,0] for boxed/fixed, [0,1] lower-only, [-1,0] upper-only, [-1000,1000]
 * free).  Returns 1 when the final basis is dual feasible for the true
 * bounds, 0 when not (the LP is dual infeasible), <0 on limits/error
 * (negated LOOP_ code - 1). */
int sx_dual_phase1(spx *s) {
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
    sx_compute_primal(s);
    int rc = sx_dual_loop(s, INFINITY, 0, 1);
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
    sx_compute_primal(s);
    if (rc != LOOP_OPTIMAL && rc != LOOP_INFEASIBLE) return -1 - rc;
    return sx_count_dual_infeasible(s) == 0 ? 1 : 0;
}
