/* bb_lp.c — the search's LP relaxation and clock, as HiGHS's
 * HighsLpRelaxation: the cutoff a node must beat, bounds handed to the LP
 * engine, solving the node LP (warm, with the cutoff, or as a trial) and
 * reading its value, point and reduced costs, and a copy of the model under
 * given bounds (for sub-MIPs).  Every part of the search (bb.c and the bb_*.c
 * files it calls) calls down into this file; it calls only the LP engine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bb_internal.h"

double bb_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bb_elapsed(const bb_ctx *c) { return bb_now() - c->t0; }

double bb_time_limit(const bb_ctx *c) {
    double t = c->par->time_limit;
    if (t > 0 && !c->has_inc && c->par->time_limit_no_incumbent > t) t = c->par->time_limit_no_incumbent;
    return t;
}

int bb_time_up(const bb_ctx *c) {
    double t = bb_time_limit(c);
    return t > 0 && bb_elapsed(c) >= t;
}

/* Nodes with a bound at or above this cannot improve the incumbent by more
 * than the requested gap. */
double bb_cutoff(const bb_ctx *c) {
    if (!c->has_inc) return INFINITY;
    double g = c->par->gap > 0 ? c->par->gap : 0;
    double tol = fmax(g * fmax(fabs(c->inc_z), 1.0), 1e-9 * fmax(fabs(c->inc_z), 1.0));
    double cut = c->inc_z - tol;
    if (c->obj_step > 0) {
        /* every solution value is a multiple of the step (+ constant): a node
         * helps only if it may hold a value one step below the incumbent.
         * inc_z, node bounds (bb_node_bound) and this cutoff all include the
         * constant; the rounding works on value - obj_const, so a constant
         * that is not a multiple of the step is handled, and the simplex
         * cutoff (bb_solve_lp) must get this value unchanged. */
        double d = c->obj_step;
        double k = (ceil((c->inc_z - c->obj_const) / d - 1e-6) - 1 + 1e-6) * d + c->obj_const;
        if (k < cut) cut = k;
    }
    return cut;
}

void bb_apply_bounds(bb_ctx *c, const double *lb, const double *ub) {
    for (int j = 0; j < c->n; j++) {
        if (lb[j] != c->slb[j] || ub[j] != c->sub[j]) {
            spx_set_col_bounds(c->lps, j, lb[j], ub[j]);
            c->slb[j] = lb[j];
            c->sub[j] = ub[j];
        }
    }
}

rk_lp_status bb_solve_lp(bb_ctx *c, long iter_limit, int with_cutoff) {
    spx_opts o;
    spx_opts_default(&o);
    o.iter_limit = iter_limit;
    if (bb_time_limit(c) > 0) {
        double left = bb_time_limit(c) - bb_elapsed(c);
        o.time_limit = left > 1e-3 ? left : 1e-3;
    }
    o.cutoff = INFINITY;
    /* the simplex compares the min-form objective *including* the constant
     * (simplex.h), the same scale as inc_z and bb_cutoff: pass it unchanged.
     * (Subtracting obj_const here cut off nodes that could still improve on
     * the incumbent whenever c0 > 0, e.g. an MPS objective-row RHS.) */
    if ((with_cutoff & BB_LP_CUTOFF) && c->has_inc) o.cutoff = bb_cutoff(c);
    o.trial = (with_cutoff & BB_LP_TRIAL) != 0;
    return spx_solve(c->lps, &o);
}

void bb_read_lp(bb_ctx *c) {
    c->z = c->sense * spx_objective(c->lps);
    spx_get_x(c->lps, c->x);
    spx_get_reduced_costs(c->lps, c->d);
    if (c->sense < 0)
        for (int j = 0; j < c->n; j++) c->d[j] = -c->d[j];
}

rk_lp *bb_model_copy(const bb_ctx *c, const double *lb, const double *ub) {
    const rk_lp *lp = c->lp;
    return lp_assemble(lp, c->n, NULL, lp->obj, lb, ub, c->m, NULL, lp->row_lb, lp->row_ub, c->row_start, c->row_idx,
                          c->row_val);
}
