/* bb_debug.c — owns the debug-solution mode of branch-and-bound (as SCIP's
 * and HiGHS's): the caller hands in a known feasible solution
 * (rk_milp_params.debug_solution) and every step that removes part of the
 * search space is checked against it while it lies in that part: each cut
 * added, each bound tightened (propagation, probing, reduced-cost fixing,
 * strong branching), each presolve transformation (aggregation, integer-row
 * strengthening, coefficient tightening), each node LP value, each node pruned by bound or infeasibility, and the end of
 * the search.  The checks hold only while the debug solution is better than
 * the incumbent's cutoff: once a solution as good is known, cutting the
 * debug solution off is allowed.  The first violation stops the solve with a
 * message naming the component, the row or column and the amounts.  Off
 * (dbg_x NULL), every check is one pointer test. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

/* Feasibility tolerance of the debug solution (it usually comes from
 * another solver's output, printed with full precision). */
#define DBG_TOL 1e-6

static double dbg_tol(double v) { return DBG_TOL * fmax(1.0, fabs(v)); }

int bb_debug_lp_check(const rk_lp *lp, const double *x, char *msg, size_t cap) {
    for (int j = 0; j < lp->n; j++) {
        double v = x[j];
        if (!isfinite(v)) {
            snprintf(msg, cap, "column %s has the value %g", rk_lp_col_name(lp, j), v);
            return 1;
        }
        if (v < lp->col_lb[j] - dbg_tol(lp->col_lb[j]) || v > lp->col_ub[j] + dbg_tol(lp->col_ub[j])) {
            snprintf(msg, cap, "column %s = %.17g lies outside its bounds [%g, %g]", rk_lp_col_name(lp, j), v,
                     lp->col_lb[j], lp->col_ub[j]);
            return 1;
        }
        if (lp->is_int[j] && fabs(v - floor(v + 0.5)) > DBG_TOL) {
            snprintf(msg, cap, "integer column %s = %.17g is not integral", rk_lp_col_name(lp, j), v);
            return 1;
        }
    }
    lp_csc A;
    if (lp_matrix(lp, &A)) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    double *act = calloc((size_t)(lp->m ? lp->m : 1), sizeof *act);
    double *mag = calloc((size_t)(lp->m ? lp->m : 1), sizeof *mag);
    if (!act || !mag) {
        free(act);
        free(mag);
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    for (int j = 0; j < lp->n; j++)
        for (long p = A.start[j]; p < A.start[j + 1]; p++) {
            double t = A.value[p] * x[j];
            act[A.index[p]] += t;
            mag[A.index[p]] = fmax(mag[A.index[p]], fabs(t));
        }
    int bad = 0;
    for (int i = 0; i < lp->m && !bad; i++) {
        double lo = lp->row_lb[i], hi = lp->row_ub[i];
        double tol = DBG_TOL * fmax(1.0, mag[i]);
        if (act[i] < lo - fmax(tol, dbg_tol(lo)) || act[i] > hi + fmax(tol, dbg_tol(hi))) {
            snprintf(msg, cap, "row %s has activity %.17g outside [%g, %g]", rk_lp_row_name(lp, i), act[i], lo, hi);
            bad = 1;
        }
    }
    free(act);
    free(mag);
    return bad;
}

rk_status bb_debug_init(bb_ctx *c, const double *x) {
    c->dbg_x = NULL;
    c->dbg_failed = 0;
    if (!x) return RK_OK;
    int n = c->n;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return rk_fail(c->err, RK_ENOMEM, "debug solution: out of memory");
    for (int j = 0; j < n; j++) v[j] = c->is_int[j] ? floor(x[j] + 0.5) : x[j];
    char msg[400];
    int r = bb_debug_lp_check(c->lp, v, msg, sizeof msg);
    if (r != 0) {
        free(v);
        return rk_fail(c->err, r < 0 ? RK_ENOMEM : RK_EINPUT, "debug solution: %s", msg);
    }
    double z = c->obj_const;
    for (int j = 0; j < n; j++) z += c->obj[j] * v[j];
    c->dbg_x = v;
    c->dbg_z = z;
    if (c->obj_step > 0) {
        double k = (z - c->obj_const) / c->obj_step;
        if (fabs(k - floor(k + 0.5)) > 1e-6 * fmax(1.0, fabs(k))) {
            bb_debug_fail(c, "objective step", "the debug solution's objective %.17g is not the constant %g plus a "
                          "multiple of the step %g", c->sense * z, c->sense * c->obj_const, c->obj_step);
            return RK_EFAIL;
        }
    }
    if (c->q.floor > z + dbg_tol(z)) {
        bb_debug_fail(c, "known bound", "the known bound %.17g exceeds the debug solution's objective %.17g",
                      c->sense * c->q.floor, c->sense * z);
        return RK_EFAIL;
    }
    return RK_OK;
}

void bb_debug_free(bb_ctx *c) {
    free(c->dbg_x);
    c->dbg_x = NULL;
}

int bb_debug_active(const bb_ctx *c) {
    if (!c->dbg_x || c->dbg_failed) return 0;
    if (!c->has_inc) return 1;
    return c->dbg_z < bb_cutoff(c) - 1e-9 * fmax(1.0, fabs(c->dbg_z));
}

int bb_debug_in(const bb_ctx *c, const double *lb, const double *ub) {
    if (!bb_debug_active(c)) return 0;
    for (int j = 0; j < c->n; j++) {
        double v = c->dbg_x[j];
        if (v < lb[j] - dbg_tol(lb[j]) || v > ub[j] + dbg_tol(ub[j])) return 0;
    }
    return 1;
}

void bb_debug_fail(bb_ctx *c, const char *component, const char *fmt, ...) {
    if (c->dbg_failed) return;
    c->dbg_failed = 1;
    char detail[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    rk_fail(c->err, RK_EFAIL, "debug solution cut off by %s at node %ld: %s (debug objective %.17g)", component,
            c->nodes, detail, c->sense * c->dbg_z);
    if (c->par->verbose) rk_log_printf(&c->par->log, RK_LOG_INFO, "milp: %s", c->err->msg);
}

void bb_debug_domain(bb_ctx *c, int was_in, const double *lb, const double *ub, const char *component) {
    if (!was_in || !bb_debug_active(c)) return;
    for (int j = 0; j < c->n; j++) {
        double v = c->dbg_x[j];
        if (v < lb[j] - dbg_tol(lb[j]) || v > ub[j] + dbg_tol(ub[j])) {
            bb_debug_fail(c, component, "column %s bounds [%.17g, %.17g] exclude its debug value %.17g",
                          rk_lp_col_name(c->lp, j), lb[j], ub[j], v);
            return;
        }
    }
}

void bb_debug_bound(bb_ctx *c, const char *component, int row, int j, double lb, double ub) {
    double v = c->dbg_x[j];
    if (v >= lb - dbg_tol(lb) && v <= ub + dbg_tol(ub)) return;
    if (row >= 0)
        bb_debug_fail(c, component, "row %s tightens column %s to [%.17g, %.17g], excluding its debug value %.17g",
                      rk_lp_row_name(c->lp, row), rk_lp_col_name(c->lp, j), lb, ub, v);
    else
        bb_debug_fail(c, component, "column %s tightened to [%.17g, %.17g], excluding its debug value %.17g",
                      rk_lp_col_name(c->lp, j), lb, ub, v);
}

void bb_debug_cut(bb_ctx *c, const char *family, int k, const int *idx, const double *val, double lb, double ub) {
    if (!bb_debug_in(c, c->glb, c->gub)) return;
    double act = 0, mag = 0;
    for (int p = 0; p < k; p++) {
        double t = val[p] * c->dbg_x[idx[p]];
        act += t;
        mag = fmax(mag, fabs(t));
    }
    double tol = DBG_TOL * fmax(1.0, mag);
    if (act < lb - fmax(tol, dbg_tol(lb)) || act > ub + fmax(tol, dbg_tol(ub))) {
        char cut[160];
        int len = snprintf(cut, sizeof cut, "%d terms:", k);
        for (int p = 0; p < k && p < 4 && len < (int)sizeof cut - 40; p++)
            len += snprintf(cut + len, sizeof cut - (size_t)len, " %+.6g %s", val[p], rk_lp_col_name(c->lp, idx[p]));
        if (k > 4) snprintf(cut + len, sizeof cut - (size_t)len, " ...");
        bb_debug_fail(c, family, "cut (%s) in [%.17g, %.17g] has activity %.17g at the debug solution", cut, lb, ub,
                      act);
    }
}

void bb_debug_prune(bb_ctx *c, int was_in, const char *why, double bound) {
    if (!was_in || !bb_debug_active(c)) return;
    if (isfinite(bound))
        bb_debug_fail(c, why, "node pruned with bound %.17g (cutoff %.17g) while it holds the debug solution",
                      c->sense * bound, c->sense * bb_cutoff(c));
    else
        bb_debug_fail(c, why, "node pruned as infeasible while it holds the debug solution");
}

void bb_debug_lp_value(bb_ctx *c, int was_in, const char *what) {
    if (!was_in || !bb_debug_active(c)) return;
    if (c->z > c->dbg_z + dbg_tol(c->dbg_z))
        bb_debug_fail(c, what, "LP value %.17g is worse than the debug solution's objective, which the node holds",
                      c->sense * c->z);
}

int bb_debug_plant_column(const bb_ctx *c, const double *lb) {
    if (!c->dbg_x) return -1;
    for (int j = 0; j < c->n; j++)
        if (c->is_int[j] && c->dbg_x[j] > lb[j] + 0.5) return j;
    return -1;
}

rk_status bb_debug_presolve(const rk_lp *lp, const double *x, const rk_lp *agg, const int *map,
                            const rk_lp *const *stages, const char *const *names, int n_stages, double **out,
                            rk_error *err) {
    char msg[400];
    *out = NULL;
    int r = bb_debug_lp_check(lp, x, msg, sizeof msg);
    if (r) return rk_fail(err, r < 0 ? RK_ENOMEM : RK_EINPUT, "debug solution: %s", msg);
    const rk_lp *w = agg ? agg : lp; /* the later stages keep its columns */
    double *v = malloc((size_t)(w->n ? w->n : 1) * sizeof *v);
    int *from = agg ? malloc((size_t)(agg->n ? agg->n : 1) * sizeof *from) : NULL;
    if (!v || (agg && !from)) {
        free(v);
        free(from);
        return rk_fail(err, RK_ENOMEM, "debug solution: out of memory");
    }
    if (agg) {
        for (int k = 0; k < agg->n; k++) from[k] = -1;
        for (int j = 0; j < lp->n; j++) {
            double xj = lp->is_int[j] ? floor(x[j] + 0.5) : x[j];
            int k = map[j];
            if (from[k] < 0) {
                from[k] = j;
                v[k] = xj;
            } else if (fabs(v[k] - xj) > dbg_tol(xj)) {
                r = 1;
                snprintf(msg, sizeof msg, "columns %s and %s are tied into one, but their debug values are %.17g and %.17g",
                         rk_lp_col_name(lp, from[k]), rk_lp_col_name(lp, j), v[k], xj);
                break;
            }
        }
        if (!r) r = bb_debug_lp_check(agg, v, msg, sizeof msg);
        free(from);
        if (r) {
            free(v);
            return rk_fail(err, r < 0 ? RK_ENOMEM : RK_EFAIL, "debug solution cut off by the aggregation presolve: %s", msg);
        }
    } else {
        for (int j = 0; j < lp->n; j++) v[j] = lp->is_int[j] ? floor(x[j] + 0.5) : x[j];
    }
    for (int k = 0; k < n_stages; k++) {
        if (!stages[k]) continue;
        r = bb_debug_lp_check(stages[k], v, msg, sizeof msg);
        if (r) {
            free(v);
            return rk_fail(err, r < 0 ? RK_ENOMEM : RK_EFAIL, "debug solution cut off by %s: %s", names[k], msg);
        }
    }
    *out = v;
    return RK_OK;
}
