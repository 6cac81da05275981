/* bb_heur.c — owns incumbents of branch-and-bound: the feasibility check of
 * a candidate solution (bounds and every row), its clean-up by an unscaled
 * LP when it misses a row, accepting a better one, and the primal
 * heuristics that find them early (but fix-and-propagate: bb_fixprop.c):
 * simple rounding (using the rows' locks),
 * LP diving (fix the least fractional variable in its cheaper direction,
 * propagate, re-solve, backing up once, repeat), RINS (a sub-MILP where the
 * columns on which the node LP and the incumbent agree are fixed) and RENS
 * (one around the node LP point when there is no incumbent). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

int bb_check_solution(const bb_ctx *c, double *x, double *z) {
    const rk_lp *lp = c->lp;
    for (int j = 0; j < c->n; j++) {
        if (!isfinite(x[j])) return 0;
        if (c->is_int[j]) {
            double r = floor(x[j] + 0.5);
            if (fabs(x[j] - r) > BB_INT_TOL) return 0;
            x[j] = r;
        }
        double lb = lp->col_lb[j], ub = lp->col_ub[j];
        if (x[j] < lb) {
            if (x[j] < lb - BB_FEAS_TOL * fmax(1.0, fabs(lb))) return 0;
            x[j] = lb;
        }
        if (x[j] > ub) {
            if (x[j] > ub + BB_FEAS_TOL * fmax(1.0, fabs(ub))) return 0;
            x[j] = ub;
        }
    }
    double *ax = c->tmp_x;
    for (int i = 0; i < c->m; i++) ax[i] = 0;
    for (int j = 0; j < c->n; j++) {
        if (x[j] == 0) continue;
        for (long p = c->A.start[j]; p < c->A.start[j + 1]; p++) ax[c->A.index[p]] += c->A.value[p] * x[j];
    }
    for (int i = 0; i < c->m; i++) {
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        if (ax[i] < lb - BB_FEAS_TOL * fmax(1.0, fabs(lb)) || ax[i] > ub + BB_FEAS_TOL * fmax(1.0, fabs(ub))) return 0;
    }
    double v = c->obj_const;
    for (int j = 0; j < c->n; j++) v += c->obj[j] * x[j];
    *z = v;
    return 1;
}

/* The LP of the model rows (no cuts: they are implied) within lb..ub solved
 * without scaling, so that its tolerances hold in the problem's units (the
 * scaled LP's 1e-7 can become 6e-6 once unscaled: qnet1).  When optimal,
 * its point goes to out and its value (min form) to *z (may be NULL).
 * Returns the LP's status (RK_LP_ERROR when it could not be set up). */
static rk_lp_status bb_solve_unscaled(bb_ctx *c, const double *lb, const double *ub, double *out, double *z) {
    rk_lp *sub = bb_model_copy(c, lb, ub);
    rk_error e;
    spx *s = sub ? spx_new_unscaled(sub, &e) : NULL;
    rk_lp_status st = RK_LP_ERROR;
    if (s) {
        spx_opts o;
        spx_opts_default(&o);
        if (bb_time_limit(c) > 0) o.time_limit = fmax(bb_time_limit(c) - bb_elapsed(c), 1e-3);
        st = spx_solve(s, &o);
        if (st == RK_LP_OPTIMAL) {
            spx_get_x(s, out);
            if (z) *z = c->sense * spx_objective(s);
        }
        c->lp_iter_base += spx_iterations(s);
        spx_free(s);
    }
    rk_lp_free(sub);
    return st;
}

int bb_node_lp_unscaled(bb_ctx *c, double *z, double *x) {
    rk_lp_status st = bb_solve_unscaled(c, c->llb, c->lub, x, z);
    if (st == RK_LP_INFEASIBLE) return 0;
    if (st != RK_LP_OPTIMAL) return -1;
    bb_offer_solution(c, x, "node LP without scaling");
    return 1;
}

/* Largest violation of a row, relative to max(1, |side|), by the point
 * whose row activities bb_check_solution left in c->tmp_x. */
static double bb_row_violation(const bb_ctx *c) {
    const double *ax = c->tmp_x;
    double worst = 0;
    for (int i = 0; i < c->m; i++) {
        double lb = c->lp->row_lb[i], ub = c->lp->row_ub[i];
        if (ax[i] < lb) worst = fmax(worst, (lb - ax[i]) / fmax(1.0, fabs(lb)));
        if (ax[i] > ub) worst = fmax(worst, (ax[i] - ub) / fmax(1.0, fabs(ub)));
    }
    return worst;
}

/* A candidate that passes the check but misses a row by more than
 * BB_CLEAN_TOL is replaced by the unscaled LP's point with its integer
 * columns fixed (the continuous ones re-optimized, exactly enough that its
 * objective is the true one: an equality met to 1e-5 had let an incumbent
 * sit 1.7e-6 below the optimum).  Call right after bb_check_solution(y)
 * passed (its activities are read).  Returns 1 when y was replaced. */
static int bb_clean_candidate(bb_ctx *c, double *y, double *z) {
    if (c->n_int == c->n || bb_row_violation(c) <= BB_CLEAN_TOL) return 0;
    int n = c->n;
    double *lb = malloc((size_t)n * sizeof *lb), *ub = malloc((size_t)n * sizeof *ub);
    double *w = malloc((size_t)n * sizeof *w);
    int done = 0;
    if (lb && ub && w) {
        for (int j = 0; j < n; j++) {
            lb[j] = c->is_int[j] ? y[j] : c->lp->col_lb[j];
            ub[j] = c->is_int[j] ? y[j] : c->lp->col_ub[j];
        }
        double zw;
        if (bb_solve_unscaled(c, lb, ub, w, NULL) == RK_LP_OPTIMAL && bb_check_solution(c, w, &zw)) {
            memcpy(y, w, (size_t)n * sizeof *y);
            *z = zw;
            done = 1;
        }
    }
    free(lb);
    free(ub);
    free(w);
    return done;
}

int bb_offer_solution(bb_ctx *c, const double *x, const char *source) {
    double *y = malloc((size_t)(c->n ? c->n : 1) * sizeof *y);
    if (!y) return 0;
    memcpy(y, x, (size_t)c->n * sizeof *y);
    double z;
    int ok = bb_check_solution(c, y, &z);
    if (ok) bb_clean_candidate(c, y, &z);
    if (!ok || (c->has_inc && z >= c->inc_z - 1e-9 * fmax(1.0, fabs(c->inc_z)))) {
        free(y);
        return 0;
    }
    memcpy(c->inc_x, y, (size_t)c->n * sizeof *y);
    free(y);
    c->has_inc = 1;
    c->inc_z = z;
    if (c->par->verbose)
        rk_log_printf(&c->par->log, RK_LOG_INFO, "milp: incumbent %.10g (%s) after %ld nodes, %.2f s", c->sense * z, source, c->nodes,
                bb_elapsed(c));
    return 1;
}

/* An LP solution whose integer columns are integral may still miss a row
 * by a little once they are rounded: fix the integer columns at their
 * rounded values, re-solve for the continuous ones, and offer that (if that
 * point still misses a row or bound, the same LP without scaling).  The
 * simplex is left with the node's bounds and basis. */
int bb_polish_solution(bb_ctx *c, const double *x) {
    int n = c->n;
    if (c->n_int == n) return 0; /* nothing continuous to repair */
    spx_basis saved = {0};
    double *flb = malloc((size_t)n * sizeof *flb), *fub = malloc((size_t)n * sizeof *fub);
    double *y = malloc((size_t)n * sizeof *y);
    double *keep_x = malloc((size_t)n * sizeof *keep_x), *keep_d = malloc((size_t)n * sizeof *keep_d);
    int ok = 0;
    if (!flb || !fub || !y || !keep_x || !keep_d || spx_get_basis(c->lps, &saved) != RK_OK) goto out;
    memcpy(keep_x, c->x, (size_t)n * sizeof *keep_x);
    memcpy(keep_d, c->d, (size_t)n * sizeof *keep_d);
    double keep_z = c->z;
    memcpy(flb, c->llb, (size_t)n * sizeof *flb);
    memcpy(fub, c->lub, (size_t)n * sizeof *fub);
    for (int j = 0; j < n; j++)
        if (c->is_int[j]) {
            double r = floor(x[j] + 0.5);
            if (r < flb[j]) r = flb[j];
            if (r > fub[j]) r = fub[j];
            flb[j] = fub[j] = r;
        }
    bb_apply_bounds(c, flb, fub);
    if (bb_solve_lp(c, 0, 0) == RK_LP_OPTIMAL) {
        spx_get_x(c->lps, y);
        ok = bb_offer_solution(c, y, "polished");
        double zy;
        if (!ok && !bb_check_solution(c, y, &zy) && bb_solve_unscaled(c, flb, fub, y, NULL) == RK_LP_OPTIMAL)
            ok = bb_offer_solution(c, y, "polished without scaling");
    }
    bb_apply_bounds(c, c->llb, c->lub);
    spx_set_basis(c->lps, &saved);
    memcpy(c->x, keep_x, (size_t)n * sizeof *keep_x);
    memcpy(c->d, keep_d, (size_t)n * sizeof *keep_d);
    c->z = keep_z;
out:
    spx_basis_free(&saved);
    free(flb);
    free(fub);
    free(y);
    free(keep_x);
    free(keep_d);
    return ok;
}

int bb_locks(const bb_ctx *c, int j, int dir) {
    int k = 0;
    for (long p = c->A.start[j]; p < c->A.start[j + 1]; p++) {
        int i = c->A.index[p];
        double a = c->A.value[p];
        int up_hurts_ub = (a > 0) == (dir == 1);
        if (up_hurts_ub ? c->row_ub[i] != INFINITY : c->row_lb[i] != -INFINITY) k++;
    }
    return k;
}

void bb_heur_rounding(bb_ctx *c) {
    double *y = malloc((size_t)(c->n ? c->n : 1) * sizeof *y);
    if (!y) return;
    memcpy(y, c->x, (size_t)c->n * sizeof *y);
    for (int j = 0; j < c->n; j++) {
        if (!c->is_int[j]) continue;
        double f = y[j] - floor(y[j]);
        if (f <= BB_INT_TOL || f >= 1 - BB_INT_TOL) continue;
        if (bb_locks(c, j, 0) == 0) y[j] = floor(y[j]);
        else if (bb_locks(c, j, 1) == 0) y[j] = ceil(y[j]);
        else { free(y); return; }
    }
    bb_offer_solution(c, y, "rounding");
    free(y);
}

int bb_dive_within_quota(long dive_its, long node_its, int m, int n) {
    return (double)dive_its <= BB_DIVE_QUOT * (double)node_its + 2000.0 + (double)m + (double)n;
}

/* Dive from the current node LP.  Leaves the simplex with the node's bounds
 * and basis restored (the caller re-solves).  Below the root, a dive starts
 * only while the dives so far are within their share of the search's own
 * LP iterations (bb_dive_within_quota): on n16_B68 (infeasible, no
 * incumbent: a dive every 20 nodes) they took 21 % of the time. */
void bb_heur_dive(bb_ctx *c, int max_depth) {
    int n = c->n;
    if (c->nodes > 1 &&
        !bb_dive_within_quota(c->it_dive, spx_iterations(c->lps) - c->it_sb - c->it_dive, c->m, n))
        return;
    double *dlb = malloc((size_t)n * sizeof *dlb), *dub = malloc((size_t)n * sizeof *dub);
    double *plb = malloc((size_t)n * sizeof *plb), *pub = malloc((size_t)n * sizeof *pub);
    spx_basis saved = {0};
    if (!dlb || !dub || !plb || !pub || spx_get_basis(c->lps, &saved) != RK_OK) {
        free(dlb);
        free(dub);
        free(plb);
        free(pub);
        return;
    }
    memcpy(dlb, c->llb, (size_t)n * sizeof *dlb);
    memcpy(dub, c->lub, (size_t)n * sizeof *dub);
    long it0 = spx_iterations(c->lps);
    long budget = 2000 + 10L * (c->m + n);
    for (int depth = 0; depth < max_depth; depth++) {
        if (bb_time_up(c)) break;
        /* pick the least fractional integer column; direction by locks, then rounding */
        int best = -1, bdir = 0;
        double bscore = INFINITY;
        int nfrac = 0;
        for (int j = 0; j < n; j++) {
            if (!c->is_int[j]) continue;
            double f = c->x[j] - floor(c->x[j]);
            if (f <= BB_INT_TOL || f >= 1 - BB_INT_TOL) continue;
            nfrac++;
            int ld = bb_locks(c, j, 0), lu = bb_locks(c, j, 1);
            int dir;
            double fr;
            if (ld < lu) dir = 0;
            else if (lu < ld) dir = 1;
            else dir = f >= 0.5;
            fr = dir ? 1 - f : f;
            /* prefer small distance; binaries first */
            double score = fr + (dub[j] - dlb[j] > 1.5 ? 1.0 : 0.0);
            if (score < bscore) { bscore = score; best = j; bdir = dir; }
        }
        if (nfrac == 0) {
            if (!bb_offer_solution(c, c->x, "diving")) {
                /* repair the continuous part: the node bounds are the dive's */
                double *sl = c->llb, *su = c->lub;
                c->llb = dlb;
                c->lub = dub;
                double *xs = malloc((size_t)n * sizeof *xs);
                if (xs) {
                    memcpy(xs, c->x, (size_t)n * sizeof *xs);
                    bb_polish_solution(c, xs);
                    free(xs);
                }
                c->llb = sl;
                c->lub = su;
            }
            break;
        }
        if (best < 0) break;
        /* fix it; when that side is infeasible (propagation or LP), back up
         * once and take the other side */
        memcpy(plb, dlb, (size_t)n * sizeof *plb);
        memcpy(pub, dub, (size_t)n * sizeof *pub);
        double xb = c->x[best];
        int ok = 0;
        for (int side = 0; side < 2 && !ok; side++) {
            int dir = side ? !bdir : bdir;
            if (side) {
                memcpy(dlb, plb, (size_t)n * sizeof *dlb);
                memcpy(dub, pub, (size_t)n * sizeof *dub);
            }
            if (dir) dlb[best] = ceil(xb);
            else dub[best] = floor(xb);
            if (bb_propagate(c, dlb, dub, best)) continue;
            bb_apply_bounds(c, dlb, dub);
            long left = budget - (spx_iterations(c->lps) - it0);
            if (left <= 0) break;
            rk_lp_status st = bb_solve_lp(c, left, 1);
            if (st == RK_LP_OPTIMAL) ok = 1;
            else if (st != RK_LP_INFEASIBLE && st != RK_LP_CUTOFF) break;
        }
        if (!ok) break;
        bb_read_lp(c);
        if (c->has_inc && c->z >= bb_cutoff(c)) break;
    }
    c->it_dive += spx_iterations(c->lps) - it0;
    bb_apply_bounds(c, c->llb, c->lub);
    spx_set_basis(c->lps, &saved);
    spx_basis_free(&saved);
    free(dlb);
    free(dub);
    free(plb);
    free(pub);
}

/* The problem within lb..ub solved as a sub-MIP (no further sub-MIPs, this
 * search's pseudocosts and branching settings, a node limit); its solution
 * is offered.  Takes nothing from the caller's incumbent but a hint. */
static void bb_sub_mip(bb_ctx *c, const double *lb, const double *ub, long node_limit, const char *name) {
    rk_lp *sub = bb_model_copy(c, lb, ub);
    if (!sub) return;
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.node_limit = node_limit;
    p.gap = c->par->gap;
    int ok = 1;
    if (bb_time_limit(c) > 0) {
        p.time_limit = bb_time_limit(c) - bb_elapsed(c);
        if (p.time_limit <= 0.01) ok = 0;
    }
    if (c->has_inc) p.incumbent = c->inc_x;
    /* the same columns: the sub-MIP starts from this search's pseudocosts
     * and branches the same way */
    rk_milp_pseudocosts pc = {.n = c->n, .sum = {c->pc_sum[0], c->pc_sum[1]}, .cnt = {c->pc_cnt[0], c->pc_cnt[1]}};
    p.pseudocosts = &pc;
    p.pseudocost_branching = c->par->pseudocost_branching;
    p.sb_reliability = c->par->sb_reliability;
    p.sb_max_candidates = c->par->sb_max_candidates;
    p.sb_max_iterations = c->par->sb_max_iterations;
    p.seed = c->par->seed;
    rk_milp_result r;
    rk_error e;
    if (ok && c->solve_sub_mip(sub, &p, &r, &e) == RK_OK) {
        c->lp_iter_base += r.iterations;
        if (r.has_solution && r.x) bb_offer_solution(c, r.x, name);
        rk_milp_result_free(&r);
    }
    rk_lp_free(sub);
}

void bb_heur_rins(bb_ctx *c) {
    int n = c->n, nfix = 0;
    for (int j = 0; j < n; j++)
        if (c->is_int[j] && fabs(c->x[j] - c->inc_x[j]) < 1e-6) nfix++;
    if (nfix < 0.3 * c->n_int || nfix == c->n_int) return;
    /* the integer columns where the LP agrees with the incumbent are fixed */
    double *lb = malloc((size_t)n * sizeof *lb), *ub = malloc((size_t)n * sizeof *ub);
    if (lb && ub) {
        for (int j = 0; j < n; j++) {
            lb[j] = c->glb[j];
            ub[j] = c->gub[j];
            if (c->is_int[j] && fabs(c->x[j] - c->inc_x[j]) < 1e-6) lb[j] = ub[j] = c->inc_x[j];
        }
        bb_sub_mip(c, lb, ub, 500, "RINS");
    }
    free(lb);
    free(ub);
}

/* RENS's neighbourhood: with all, the integer columns integral at x are
 * fixed; without, only those whose cost holds them at that value (cost > 0
 * at the lower bound, < 0 at the upper): the others may move to make room.
 * The fractional columns get their two nearest integers.  Returns the number
 * fixed. */
static int bb_rens_bounds(const bb_ctx *c, const double *x, int all, double *lb, double *ub) {
    int nfix = 0;
    for (int j = 0; j < c->n; j++) {
        lb[j] = c->glb[j];
        ub[j] = c->gub[j];
        if (!c->is_int[j]) continue;
        double r = floor(x[j] + 0.5);
        if (fabs(x[j] - r) < 1e-6) {
            if (all || (c->obj[j] > 0 && r <= lb[j]) || (c->obj[j] < 0 && r >= ub[j])) {
                lb[j] = ub[j] = r;
                nfix++;
            }
        } else {
            lb[j] = fmax(lb[j], floor(x[j]));
            ub[j] = fmin(ub[j], ceil(x[j]));
        }
    }
    return nfix;
}

void bb_heur_rens(bb_ctx *c, const double *x, long node_limit) {
    int n = c->n, nint = 0;
    for (int j = 0; j < n; j++)
        if (c->is_int[j] && fabs(x[j] - floor(x[j] + 0.5)) < 1e-6) nint++;
    if (nint < 0.5 * c->n_int || nint == c->n_int) return;
    double *lb = malloc((size_t)n * sizeof *lb), *ub = malloc((size_t)n * sizeof *ub);
    if (lb && ub) {
        bb_rens_bounds(c, x, 1, lb, ub);
        bb_sub_mip(c, lb, ub, node_limit, "RENS");
        /* all fixed is often infeasible (a schedule needs room to recompute
         * where the LP did not): once more with only the cost-held ones */
        if (!c->has_inc && bb_rens_bounds(c, x, 0, lb, ub) < nint) bb_sub_mip(c, lb, ub, node_limit, "RENS (costed fixings)");
    }
    free(lb);
    free(ub);
}
