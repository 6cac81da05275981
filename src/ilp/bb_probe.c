/* bb_probe.c — owns probing at the root of branch-and-bound: each binary
 * column is tentatively fixed to 0 and to 1 and the consequences are
 * propagated (rows, and with an incumbent the objective cutoff, plus the
 * root LP's reduced-cost bound on the columns the propagation moved).  A side
 * that is infeasible fixes the column to the other value; a column that both
 * sides fix to the same value is fixed; both sides infeasible means no
 * solution better than the incumbent exists.  Fixings are global: valid for
 * every solution better than the incumbent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

/* Work limit of the whole root probing, in row entries visited by the
 * propagation (times the matrix's non-zeros): a count, not a clock, so that
 * the search is the same on a loaded and an idle machine. */
#define PROBE_MAX_WORK 1500

/* Lower bound on the objective of any solution within (lb, ub), from the
 * root LP (value c->z, point c->x, reduced costs c->d): z + sum over the
 * columns whose bounds exclude x_k of |d_k| times the distance. */
static double bb_probe_rc_bound(const bb_ctx *c, const double *lb, const double *ub) {
    double z = c->z;
    for (int k = 0; k < c->n; k++) {
        double d = c->d[k];
        if (d > 1e-9 && lb[k] > c->x[k]) z += d * (lb[k] - c->x[k]);
        else if (d < -1e-9 && ub[k] < c->x[k]) z += -d * (c->x[k] - ub[k]);
    }
    return z;
}

/* Fix column j to v in (lb, ub) and propagate; 1 if that side is empty. */
static int bb_probe_side(bb_ctx *c, int j, double v, double *lb, double *ub, int use_rc) {
    memcpy(lb, c->glb, (size_t)c->n * sizeof *lb);
    memcpy(ub, c->gub, (size_t)c->n * sizeof *ub);
    lb[j] = ub[j] = v;
    if (bb_propagate(c, lb, ub, j)) return 1;
    if (use_rc && bb_probe_rc_bound(c, lb, ub) >= bb_cutoff(c)) {
        if (c->dbg_x && bb_debug_in(c, lb, ub))
            bb_debug_fail(c, "probing", "the root LP's reduced-cost bound %.17g on column %s = %g passes the cutoff",
                          c->sense * bb_probe_rc_bound(c, lb, ub), rk_lp_col_name(c->lp, j), v);
        return 1;
    }
    return 0;
}

int bb_probe_root(bb_ctx *c, int use_rc) {
    int n = c->n;
    double *lb0 = malloc((size_t)n * sizeof *lb0), *ub0 = malloc((size_t)n * sizeof *ub0);
    double *lb1 = malloc((size_t)n * sizeof *lb1), *ub1 = malloc((size_t)n * sizeof *ub1);
    int *order = malloc((size_t)n * sizeof *order);
    int fixed = 0;
    if (!lb0 || !ub0 || !lb1 || !ub1 || !order) goto done;
    use_rc = use_rc && c->has_inc;
    /* fractional columns of the root LP first, then the others */
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < n; j++) {
            if (!c->is_int[j] || c->glb[j] != 0 || c->gub[j] != 1) continue;
            double f = c->x[j] - floor(c->x[j]);
            int frac = f > BB_INT_TOL && f < 1 - BB_INT_TOL;
            if (frac == (pass == 0)) order[k++] = j;
        }
    long w0 = c->prop_work, wmax = PROBE_MAX_WORK * (c->A.nnz + 1);
    for (int q = 0; q < k; q++) {
        if (c->prop_work - w0 > wmax || bb_time_up(c)) break;
        int j = order[q];
        if (c->glb[j] == c->gub[j]) continue;
        int was_in = c->dbg_x ? bb_debug_in(c, c->glb, c->gub) : 0;
        int inf0 = bb_probe_side(c, j, 0, lb0, ub0, use_rc);
        int inf1 = bb_probe_side(c, j, 1, lb1, ub1, use_rc);
        if (inf0 && inf1) {
            bb_debug_prune(c, was_in, "probing (both sides of a column)", INFINITY);
            fixed = -1;
            break;
        }
        if (inf0 || inf1) {
            double v = inf0 ? 1 : 0;
            c->glb[j] = c->gub[j] = v;
            bb_debug_domain(c, was_in, c->glb, c->gub, "probing (one side infeasible)");
            fixed++;
            if (bb_propagate(c, c->glb, c->gub, j)) {
                fixed = -1;
                break;
            }
            continue;
        }
        /* what both sides imply holds */
        int changed = 0;
        for (int i = 0; i < n; i++) {
            /* (comparisons, not fmin/fmax: this loop runs n times a probe,
             * and bounds are never NaN) */
            double l = lb0[i] < lb1[i] ? lb0[i] : lb1[i], u = ub0[i] > ub1[i] ? ub0[i] : ub1[i];
            if (l <= c->glb[i] && u >= c->gub[i]) continue;
            if (l > c->glb[i]) c->glb[i] = l;
            if (u < c->gub[i]) c->gub[i] = u;
            changed = 1;
            if (c->glb[i] == c->gub[i]) fixed++;
        }
        if (changed) bb_debug_domain(c, was_in, c->glb, c->gub, "probing (implied by both sides)");
        if (changed && bb_propagate(c, c->glb, c->gub, -1)) {
            fixed = -1;
            break;
        }
    }
done:
    free(lb0);
    free(ub0);
    free(lb1);
    free(ub1);
    free(order);
    return fixed;
}
