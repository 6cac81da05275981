/* bb_prop.c — owns domain propagation for branch-and-bound: bound
 * tightening of integer columns from the minimum / maximum activity of each
 * row (binaries and general integers alike; continuous columns too while
 * bb_ctx.prop_continuous is set, as the randomized rounding does), and infeasibility detection
 * when a row cannot be satisfied within the current bounds.  Once there is
 * an incumbent, the objective is one more row, `objective <= cutoff` (only
 * solutions better than the incumbent are of interest): a column whose
 * cost alone would pass the cutoff is fixed, which the other rows then
 * propagate. */
#include <math.h>

#include "bb_internal.h"

#define BB_PROP_TOL 1e-9

/* Queue the rows of column j (but row skip) that are not queued yet, in
 * out[*n_out..], at most cap in all. */
static void bb_queue_col_rows(bb_ctx *c, int j, int skip, int *out, int *n_out, int cap) {
    const int *ri = c->A.index + c->A.start[j];
    long cnt = c->A.start[j + 1] - c->A.start[j];
    for (long k = 0; k < cnt; k++) {
        int r = ri[k];
        if (r != skip && !c->prop_inq[r] && *n_out < cap) {
            c->prop_inq[r] = 1;
            out[(*n_out)++] = r;
        }
    }
}

/* Record on the trail a bound change of j made by row (-2: the objective
 * row) from its side (0: upper, 1: lower). */
static void bb_trail_push(bb_ctx *c, int j, int row, int side) {
    if (!c->tr_on) return;
    if (c->tr_n >= c->n) { c->tr_overflow = 1; return; }
    c->tr_col[c->tr_n] = j;
    c->tr_row[c->tr_n] = row;
    c->tr_side[c->tr_n++] = (signed char)side;
}

/* Work on row i: returns 1 if infeasible. Tightened columns' rows are queued. */
static int bb_propagate_row(bb_ctx *c, int i, double *lb, double *ub, int *out, int *n_out, int cap) {
    double rlb = c->row_lb[i], rub = c->row_ub[i];
    long b = c->row_start[i], e = c->row_start[i + 1];
    c->prop_work += e - b;
    double minact = 0, maxact = 0, maxmove = 0;
    int ninf_min = 0, ninf_max = 0;
    for (long p = b; p < e; p++) {
        int j = c->row_idx[p];
        double a = c->row_val[p];
        double mv = fabs(a) * (ub[j] - lb[j]); /* the most j moves the activity */
        if (mv > maxmove) maxmove = mv;
        if (a > 0) {
            if (lb[j] == -INFINITY) ninf_min++; else minact += a * lb[j];
            if (ub[j] == INFINITY) ninf_max++; else maxact += a * ub[j];
        } else {
            if (ub[j] == INFINITY) ninf_min++; else minact += a * ub[j];
            if (lb[j] == -INFINITY) ninf_max++; else maxact += a * lb[j];
        }
    }
    double tol_u = 1e-6 * fmax(1.0, fabs(rub)), tol_l = 1e-6 * fmax(1.0, fabs(rlb));
    if ((ninf_min == 0 && rub != INFINITY && minact > rub + tol_u) ||
        (ninf_max == 0 && rlb != -INFINITY && maxact < rlb - tol_l)) {
        c->tr_fail_row = i;
        c->tr_fail_side = ninf_min == 0 && rub != INFINITY && minact > rub + tol_u ? 0 : 1;
        if (c->dbg_prop)
            bb_debug_fail(c, "propagation", "row %s found infeasible (activity range [%.17g, %.17g], sides [%g, %g])",
                          rk_lp_row_name(c->lp, i), minact, maxact, rlb, rub);
        return 1;
    }
    int can_u = rub != INFINITY && ninf_min <= 1;
    int can_l = rlb != -INFINITY && ninf_max <= 1;
    /* no column can move the activity past a side with more room than that
     * (and a margin well above the rounding tolerances below) */
    if (can_u && ninf_min == 0 && rub - minact > maxmove + 1e-3 * fmax(1.0, fabs(rub))) can_u = 0;
    if (can_l && ninf_max == 0 && maxact - rlb > maxmove + 1e-3 * fmax(1.0, fabs(rlb))) can_l = 0;
    if (!can_u && !can_l) return 0;
    for (long p = b; p < e; p++) {
        int j = c->row_idx[p];
        int is_int = c->is_int[j];
        if (!is_int && !c->prop_continuous) continue;
        double a = c->row_val[p];
        double nlb = lb[j], nub = ub[j];
        if (can_u) {
            /* residual minimum activity without j */
            double contrib = a > 0 ? lb[j] : ub[j];
            double res;
            if (!isfinite(contrib)) { if (ninf_min != 1) goto lower; res = minact; }
            else { if (ninf_min != 0) goto lower; res = minact - a * contrib; }
            double v = (rub - res) / a;
            if (a > 0) { double t = is_int ? floor(v + 1e-6) : v; if (t < nub) nub = t; }
            else { double t = is_int ? ceil(v - 1e-6) : v; if (t > nlb) nlb = t; }
        }
    lower:
        if (can_l) {
            double contrib = a > 0 ? ub[j] : lb[j];
            double res;
            if (!isfinite(contrib)) { if (ninf_max != 1) goto apply; res = maxact; }
            else { if (ninf_max != 0) goto apply; res = maxact - a * contrib; }
            double v = (rlb - res) / a;
            if (a > 0) { double t = is_int ? ceil(v - 1e-6) : v; if (t > nlb) nlb = t; }
            else { double t = is_int ? floor(v + 1e-6) : v; if (t < nub) nub = t; }
        }
    apply:;
        /* an integer bound moves by whole steps; a continuous one only when it
         * moves by more than a relative 1e-3 (no long tails of tiny steps) */
        double step_l = is_int ? 0.5 : 1e-3 * fmax(1.0, fabs(nlb));
        double step_u = is_int ? 0.5 : 1e-3 * fmax(1.0, fabs(nub));
        if (nlb > lb[j] + step_l || nub < ub[j] - step_u) {
            if (!(nlb > lb[j] + step_l)) nlb = lb[j];
            if (!(nub < ub[j] - step_u)) nub = ub[j];
            if (c->dbg_prop) bb_debug_bound(c, "propagation", i, j, nlb, nub);
            if (nlb > nub + (is_int ? 0.5 : 1e-6 * fmax(1.0, fabs(nub)))) {
                /* the side of the row whose bound on j crosses j's other
                 * bound: the upper side bounds j from above when a > 0 */
                c->tr_fail_row = i;
                c->tr_fail_side = nub < lb[j] ? (a > 0 ? 0 : 1) : (a > 0 ? 1 : 0);
                return 1;
            }
            if (nlb > nub) nlb = nub; /* integral bounds: cannot happen */
            /* which side made it: a raised lower bound comes from the upper
             * side when a < 0, a lowered upper bound when a > 0 */
            if (is_int) bb_trail_push(c, j, i, nlb > lb[j] ? (a < 0 ? 0 : 1) : (a > 0 ? 0 : 1));
            /* the activities change: update them for the rest of the row */
            if (nlb > lb[j]) {
                if (a > 0) { if (lb[j] == -INFINITY) { ninf_min--; minact += a * nlb; } else minact += a * (nlb - lb[j]); }
                else { if (lb[j] == -INFINITY) { ninf_max--; maxact += a * nlb; } else maxact += a * (nlb - lb[j]); }
                lb[j] = nlb;
            }
            if (nub < ub[j]) {
                if (a > 0) { if (ub[j] == INFINITY) { ninf_max--; maxact += a * nub; } else maxact += a * (nub - ub[j]); }
                else { if (ub[j] == INFINITY) { ninf_min--; minact += a * nub; } else minact += a * (nub - ub[j]); }
                ub[j] = nub;
            }
            can_u = rub != INFINITY && ninf_min <= 1;
            can_l = rlb != -INFINITY && ninf_max <= 1;
            if (c->obj[j] != 0) c->prop_obj_dirty = 1;
            bb_queue_col_rows(c, j, i, out, n_out, cap); /* the other rows of j */
        }
    }
    return 0;
}


/* The objective row: sum obj_j x_j + obj_const <= cutoff.  Returns 1 if
 * infeasible; tightened columns' rows are queued in out (as for a row). */
static int bb_propagate_objective(bb_ctx *c, double *lb, double *ub, int *out, int *n_out, int cap) {
    c->prop_obj_dirty = 0;
    double cut = bb_cutoff(c);
    if (!isfinite(cut)) return 0;
    double minact = c->obj_const;
    for (int k = 0; k < c->n_obj_cols; k++) {
        int j = c->obj_cols[k];
        double a = c->obj[j];
        double v = a > 0 ? lb[j] : ub[j];
        if (!isfinite(v)) return 0; /* unbounded below: nothing to say */
        minact += a * v;
    }
    double tol = 1e-6 * fmax(1.0, fabs(cut));
    if (minact > cut + tol) {
        c->tr_fail_row = -2;
        c->tr_fail_side = 0;
        if (c->dbg_prop)
            bb_debug_fail(c, "objective propagation", "least objective %.17g in the domain passes the cutoff %.17g",
                          c->sense * minact, c->sense * cut);
        return 1;
    }
    for (int k = 0; k < c->n_obj_cols; k++) {
        int j = c->obj_cols[k];
        double a = c->obj[j];
        if (!c->is_int[j] || lb[j] == ub[j]) continue;
        double room = (cut + tol - minact) / fabs(a); /* how far j may move from its cheap bound */
        if (a > 0) {
            double t = lb[j] + floor(room + 1e-9);
            if (t >= ub[j]) continue;
            if (c->dbg_prop) bb_debug_bound(c, "objective propagation", -1, j, lb[j], t);
            bb_trail_push(c, j, -2, 0);
            ub[j] = t;
        } else {
            double t = ub[j] - floor(room + 1e-9);
            if (t <= lb[j]) continue;
            if (c->dbg_prop) bb_debug_bound(c, "objective propagation", -1, j, t, ub[j]);
            bb_trail_push(c, j, -2, 0);
            lb[j] = t;
        }
        bb_queue_col_rows(c, j, -1, out, n_out, cap);
    }
    return 0;
}

/* The body of bb_propagate. */
static int bb_propagate_rows(bb_ctx *c, double *lb, double *ub, int changed_col) {
    int m = c->m;
    if (m == 0) return 0;
    /* ring queue of rows (each row at most once: prop_inq marks) */
    int *ring = c->prop_queue;
    int head = 0, count = 0;
    if (changed_col < 0) {
        for (int i = 0; i < m; i++) { ring[count++] = i; c->prop_inq[i] = 1; }
    } else {
        const int *ri = c->A.index + c->A.start[changed_col];
        long cnt = c->A.start[changed_col + 1] - c->A.start[changed_col];
        for (long k = 0; k < cnt; k++) { ring[count++] = ri[k]; c->prop_inq[ri[k]] = 1; }
    }
    long budget = 10L * m + 1000;
    int infeasible = 0;
    int use_obj = c->has_inc;
    /* rows queued by a step go to the end of the ring */
    int nq = 0;
    if (use_obj && bb_propagate_objective(c, lb, ub, c->tmp_i, &nq, m - count)) infeasible = 1;
    for (int k = 0; k < nq; k++) ring[(head + count + k) % m] = c->tmp_i[k];
    count += nq;
    while (count > 0 && !infeasible) {
        int i = ring[head];
        head = (head + 1) % m;
        count--;
        c->prop_inq[i] = 0;
        if (budget-- <= 0) continue; /* out of work budget: drain the queue */
        nq = 0;
        if (bb_propagate_row(c, i, lb, ub, c->tmp_i, &nq, m - count)) infeasible = 1;
        if (!infeasible && count + nq == 0 && use_obj && c->prop_obj_dirty && budget > 0 &&
            bb_propagate_objective(c, lb, ub, c->tmp_i, &nq, m - count))
            infeasible = 1;
        for (int k = 0; k < nq; k++) ring[(head + count + k) % m] = c->tmp_i[k];
        count += nq;
    }
    if (infeasible)
        for (int k = 0; k < count; k++) c->prop_inq[ring[(head + k) % m]] = 0;
    return infeasible;
}

int bb_propagate(bb_ctx *c, double *lb, double *ub, int changed_col) {
    /* the debug solution is tracked through every tightening while it lies
     * in the domain propagated */
    c->dbg_prop = c->dbg_x ? bb_debug_in(c, lb, ub) : 0;
    if (c->dbg_prop && c->par->debug_fault == 2 && c->nodes == 0) {
        /* planted fault (tests of the debug mode): a wrong tightening */
        int j = bb_debug_plant_column(c, lb);
        if (j >= 0) {
            ub[j] = c->dbg_x[j] - 1;
            bb_debug_bound(c, "propagation (planted fault)", -1, j, lb[j], ub[j]);
        }
    }
    c->tr_n = 0;
    c->tr_overflow = 0;
    c->tr_fail_row = -1;
    int r = bb_propagate_rows(c, lb, ub, changed_col);
    c->dbg_prop = 0;
    return r;
}
