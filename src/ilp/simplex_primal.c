/* simplex_primal.c — the bounded primal simplex of the LP engine
 * (composite phase 1/2, Devex pricing, Harris ratio test), used to clean up
 * after perturbation and for warm starts that are primal but not dual
 * feasible, and the feasibility-first path for dual infeasible LPs. */
#include "simplex_internal.h"

/* sum of the basic variables' bound violations beyond PTOL (the phase-1
 * objective sx_primal_loop's stall guard follows) */
static double sum_primal_infeasibility(const spx *s) {
    double w = 0.0;
    for (int p = 0; p < s->m; p++) {
        int j = s->head[p];
        if (s->x[j] < s->lb[j] - PTOL) w += s->lb[j] - s->x[j];
        else if (s->x[j] > s->ub[j] + PTOL) w += s->x[j] - s->ub[j];
    }
    return w;
}

int sx_primal_loop(spx *s) {
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
            if (sx_refactor(s)) return LOOP_ERROR;
            sx_compute_primal(s);
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
            double cur = infeas ? sum_primal_infeasibility(s) : sx_objective_internal(s, s->cw);
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
            sx_compute_duals(s);
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
                if (phase == 2) { sx_compute_primal(s); sx_compute_duals(s); x_fresh = 1; }
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
        s->rlen = sx_nonzero_list(rho, m, s->rlist); /* sx_compute_row reads rho's nonzeros from the list */
        sx_compute_row(s, rho);
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
        sx_basis_change(s, r, q, leave_st, NULL, 0);
        s->iters++;
        if (s->verbose && s->iters % 1000 == 0)
            rk_log_printf(s->log, RK_LOG_DETAIL, "primal %ld phase %d obj %.10g", s->iters, phase, sx_objective_internal(s, s->c));
    }
}

/* The LP is dual infeasible (so unbounded or infeasible): find a feasible
 * point with the dual simplex on zero (randomly perturbed) costs, where
 * every basis is dual feasible, then run the primal simplex with the true
 * costs from there. */
int sx_feasibility_then_primal(spx *s) {
    int N = N_of(s);
    memset(s->cw, 0, (size_t)N * sizeof *s->cw);
    for (int j = 0; j < N; j++) s->d[j] = 0.0;
    sx_perturb_costs(s);
    int rc = sx_dual_loop(s, INFINITY, 0, 1);
    sx_remove_perturbation(s);
    if (rc == LOOP_RESTART || rc == LOOP_ERROR) {
        /* numerical trouble: composite primal phase 1/2 instead */
        if (!s->lu_ok && sx_refactor(s)) return LOOP_ERROR;
        sx_compute_primal(s);
        sx_compute_duals(s);
        return sx_primal_loop(s);
    }
    if (rc != LOOP_OPTIMAL) return rc;
    sx_compute_duals(s);
    return sx_primal_loop(s);
}
