/* lp_solve.c — the LP-only path of rk_milp_solve (lp_solve_relaxation,
 * declared in simplex.h): presolve, simplex on the reduced LP, postsolve,
 * objective recomputed on the original LP.  Integrality is ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lp_internal.h"
#include "presolve.h"
#include "simplex.h"

static double lp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static rk_milp_status map_status(rk_lp_status s) {
    switch (s) {
    case RK_LP_OPTIMAL: return RK_MILP_OPTIMAL;
    case RK_LP_INFEASIBLE: return RK_MILP_INFEASIBLE;
    case RK_LP_UNBOUNDED: return RK_MILP_UNBOUNDED;
    case RK_LP_ITER_LIMIT:
    case RK_LP_TIME_LIMIT: return RK_MILP_TIME_LIMIT;
    default: return RK_MILP_ERROR;
    }
}

/* Solve lp itself (no presolve); x (n values) filled when optimal. */
static rk_lp_status solve_plain(const rk_lp *lp, const rk_milp_params *p, double t_left, double *x,
                                long *iters, rk_error *err) {
    spx *s = spx_new(lp, err);
    if (!s) return RK_LP_ERROR;
    spx_opts o;
    spx_opts_default(&o);
    o.verbose = p->verbose;
    o.log = &p->log;
    o.time_limit = t_left;
    rk_lp_status st = spx_solve(s, &o);
    *iters += spx_iterations(s);
    if (st == RK_LP_OPTIMAL) spx_get_x(s, x);
    spx_free(s);
    return st;
}

rk_status lp_solve_relaxation(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res,
                                 rk_error *err) {
    double t0 = lp_now();
    int n = lp->n;
    double sense = lp->maximize ? -1.0 : 1.0;
    memset(res, 0, sizeof *res);
    res->n = n;
    res->status = RK_MILP_ERROR;
    res->objective = sense * INFINITY;
    res->bound = sense * -INFINITY;
    res->x = calloc((size_t)(n ? n : 1), sizeof *res->x);
    if (!res->x) return rk_fail(err, RK_ENOMEM, "lp: out of memory");

    presolve_info *pre = NULL;
    rk_lp *red = NULL;
    pre_status ps;
    rk_status rs = presolve_run(lp, &pre, &red, &ps, err);
    if (rs != RK_OK) return rs;
    rk_lp_status st;
    long iters = 0;
    double tl = p->time_limit > 0 ? p->time_limit : 0;
    if (ps == RK_PRE_INFEASIBLE) {
        st = RK_LP_INFEASIBLE;
    } else {
        if (p->verbose)
            rk_log_printf(&p->log, RK_LOG_INFO, "presolve: removed %d of %d rows, %d of %d columns",
                    presolve_removed_rows(pre), lp->m, presolve_removed_cols(pre), n);
        double *xr = calloc((size_t)(red->n ? red->n : 1), sizeof *xr);
        if (!xr) {
            presolve_free(pre);
            rk_lp_free(red);
            return rk_fail(err, RK_ENOMEM, "lp: out of memory");
        }
        st = solve_plain(red, p, tl, xr, &iters, err);
        if (st == RK_LP_OPTIMAL) presolve_postsolve(pre, xr, res->x);
        free(xr);
        if (st == RK_LP_ERROR) {
            /* numerical trouble on the reduced LP: try the original one */
            double left = tl > 0 ? tl - (lp_now() - t0) : 0;
            if (tl <= 0 || left > 0) st = solve_plain(lp, p, tl > 0 ? left : 0, res->x, &iters, err);
        }
    }
    presolve_free(pre);
    rk_lp_free(red);
    res->status = map_status(st);
    res->iterations = iters;
    if (st == RK_LP_OPTIMAL) {
        double o = lp->obj_const;
        for (int j = 0; j < n; j++) o += lp->obj[j] * res->x[j];
        res->objective = o;
        res->bound = o;
        res->has_solution = 1;
    } else if (st == RK_LP_INFEASIBLE) {
        res->objective = sense * INFINITY;
        res->bound = sense * INFINITY;
    } else if (st == RK_LP_UNBOUNDED) {
        res->objective = -sense * INFINITY;
        res->bound = -sense * INFINITY;
    }
    res->time_s = lp_now() - t0;
    if (st == RK_LP_ERROR) rk_fail(err, RK_EFAIL, "lp: simplex failed (numerical difficulties)");
    return RK_OK;
}
