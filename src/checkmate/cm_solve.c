/* cm_solve.c — solving one rk-Checkmate ILP: parameters, the solver hook
 * (rk_milp_solve unless the caller installs another), MPS export, one budget
 * → one checked block option, and the M_peak range of a graph. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cm_internal.h"

double rk_checkmate_clock(void) { return cm_now(); }

void rk_checkmate_params_default(rk_checkmate_params *p) {
    memset(p, 0, sizeof *p);
    p->grid_peak = 20;
    p->grid_save = 20;
    p->time_limit = 10;
    p->gap = 1e-6;
    p->threads = 0;
    p->milp_threads = 1;
    p->max_model_cols = 2000000;
}

rk_status cm_solve(const rk_checkmate_params *p, const char *tag, const rk_lp *lp, const rk_milp_params *mp,
                   rk_milp_result *res, rk_error *err) {
    memset(res, 0, sizeof *res);
    if (p && p->solve) return p->solve(p->solve_ctx, tag, lp, mp, res, err);
    return rk_milp_solve(lp, mp, res, err);
}

rk_status cm_export(const rk_checkmate_params *p, const char *name, const rk_lp *lp, rk_error *err) {
    if (!p || !p->export_dir) return RK_OK;
    if (mkdir(p->export_dir, 0777) != 0 && errno != EEXIST)
        return rk_fail(err, RK_EINPUT, "rk-Checkmate: cannot create export folder '%s': %s", p->export_dir,
                       strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.mps", p->export_dir, name);
    return rk_mps_write(path, lp, err);
}

void cm_milp_params(const rk_checkmate_params *p, rk_milp_params *mp) {
    rk_milp_params_default(mp);
    mp->time_limit = p->time_limit;
    if (p->deadline > 0) {
        /* what is left before the deadline (at least a little: an ILP
         * started just before it still gets its root LP a chance) */
        double left = p->deadline - cm_now();
        if (left < 0.05) left = 0.05;
        if (mp->time_limit <= 0 || left < mp->time_limit) mp->time_limit = left;
    }
    mp->node_limit = p->node_limit;
    mp->gap = p->gap > 0 ? p->gap : 1e-6;
    mp->threads = p->milp_threads > 0 ? p->milp_threads : 1;
    mp->verbose = p->verbose > 1;
    mp->log = p->log;
    mp->seed = p->seed;
}

void cm_scale_node_limit(const rk_checkmate_params *p, int rows, rk_milp_params *mp) {
    if (mp->node_limit > 0 && p->node_limit_rows > 0 && rows > p->node_limit_rows) {
        /* larger LPs: fewer nodes, in proportion (at least 1) */
        long nl = (long)((double)mp->node_limit * p->node_limit_rows / rows);
        mp->node_limit = nl > 0 ? nl : 1;
    }
}

rk_status cm_export_and_solve(const rk_checkmate_params *p, const char *name, const rk_lp *lp, rk_milp_result *res,
                              rk_error *err) {
    memset(res, 0, sizeof *res);
    rk_status r = cm_export(p, name, lp, err);
    if (r) return r;
    rk_milp_params mp;
    cm_milp_params(p, &mp);
    cm_scale_node_limit(p, rk_lp_num_rows(lp), &mp);
    return cm_solve(p, name, lp, &mp, res, err);
}

rk_status rk_checkmate_solve_budget(const rk_graph *g, int64_t m_peak, int64_t m_save, const rk_checkmate_params *p,
                                    rk_option *opt, double *objective, int *optimal, double *gap, rk_error *err) {
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    memset(opt, 0, sizeof *opt);
    rk_checkmate_model *m = NULL;
    rk_status r = rk_checkmate_model_build(g, &m, err);
    if (r) return r;
    rk_lp *lp = NULL;
    r = rk_checkmate_model_lp(m, m_peak, m_save, &lp, err);
    if (r) {
        rk_checkmate_model_free(m);
        return r;
    }
    char name[256];
    snprintf(name, sizeof name, "%s", p->export_prefix ? p->export_prefix : "block");
    rk_milp_result res;
    r = cm_export_and_solve(p, name, lp, &res, err);
    if (!r) {
        if (res.has_solution && (res.status == RK_MILP_OPTIMAL || res.status == RK_MILP_TIME_LIMIT)) {
            double obj;
            cm_lean_schedule(m, m_peak, m_save, res.x);
            r = rk_checkmate_model_decode_option(m, res.x, m_peak, m_save, opt, &obj, err);
            if (!r) {
                if (objective) *objective = obj;
                if (optimal) *optimal = res.status == RK_MILP_OPTIMAL;
                if (gap) *gap = res.status == RK_MILP_OPTIMAL ? 0 : fmax(0, (obj - res.bound - cm_obj_offset(m)) / fmax(1e-12, fabs(obj)));
            }
        } else if (res.status == RK_MILP_INFEASIBLE) {
            r = rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: no schedule with peak <= %lld and saved <= %lld",
                        (long long)m_peak, (long long)m_save);
        } else if (res.status == RK_MILP_TIME_LIMIT) {
            r = rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: no schedule found within the time limit (%g s)",
                        p->time_limit);
        } else {
            r = rk_fail(err, RK_EFAIL, "rk-Checkmate: the MILP solver returned '%s'", rk_milp_status_name(res.status));
        }
    }
    rk_milp_result_free(&res);
    rk_lp_free(lp);
    rk_checkmate_model_free(m);
    return r;
}

/* Peak of a whole option (fwd, loss, bwd) replayed in one go. */
static rk_status option_full_peak(const rk_graph *g, const rk_option *o, int64_t *peak, rk_error *err) {
    rk_block_state st;
    if (rk_block_state_init(&st, g)) return rk_fail(err, RK_ENOMEM, "out of memory");
    rk_op loss = {RK_OP_RUN, 0, g->loss, -1};
    rk_status r = rk_block_replay(g, &st, o->fwd, o->n_fwd, "option", err);
    if (!r) r = rk_block_replay(g, &st, &loss, 1, "option", err);
    if (!r) r = rk_block_replay(g, &st, o->bwd, o->n_bwd, "option", err);
    *peak = st.peak;
    rk_block_state_free(&st);
    return r;
}

/* One min-peak ILP (M_peak a variable, minimised; fwd_extra as cm_model_lp's: the output's gradient
 * beside the forward stages, 0 for none): its replayed peak lowers *peak, and its solution, leaned
 * (the least saved memory for its runs: the seed fits more budgets), goes to *x when x is given. */
static rk_status min_peak_ilp(const rk_checkmate_params *p, const rk_checkmate_model *m, int64_t fwd_extra,
                              const char *suffix, long *nodes, long *iters, double **x, int64_t *peak,
                              rk_error *err) {
    rk_lp *lp = NULL;
    rk_status r = cm_model_lp(m, 0, -1, 1, fwd_extra, &lp, err);
    if (r) return r;
    char name[300];
    snprintf(name, sizeof name, "%s_%s", p->export_prefix ? p->export_prefix : "block", suffix);
    rk_milp_result res;
    r = cm_export_and_solve(p, name, lp, &res, err);
    if (!r && nodes) *nodes += res.nodes;
    if (!r && iters) *iters += res.iterations;
    if (!r && res.has_solution) {
        /* the last column is Mpeak; the others are the model's */
        rk_op *ops = NULL;
        int n = 0;
        double obj, t;
        int64_t pk;
        r = cm_decode_replay(m, res.x, &ops, &n, &obj, &pk, &t, err);
        free(ops);
        if (!r && pk < *peak) *peak = pk;
        if (!r && x) {
            cm_lean_schedule(m, pk, -1, res.x);
            *x = res.x;
            res.x = NULL;
        }
    }
    rk_milp_result_free(&res);
    rk_lp_free(lp);
    return r;
}

rk_status cm_peak_range(const rk_graph *g, const rk_checkmate_model *m, const rk_checkmate_params *p,
                        int64_t *min_peak, int64_t *max_peak, double **xmin, rk_error *err) {
    return cm_peak_range_work(g, m, p, min_peak, max_peak, xmin, NULL, NULL, NULL, NULL, err);
}

rk_status cm_peak_range_work(const rk_graph *g, const rk_checkmate_model *m, const rk_checkmate_params *p,
                             int64_t *min_peak, int64_t *max_peak, double **xmin, double **xfwd, long *nodes,
                             long *iters, cm_greedy_runs *runs, rk_error *err) {
    if (xmin) *xmin = NULL;
    if (xfwd) *xfwd = NULL;
    rk_option ka, as;
    rk_status r = rk_option_keep_all(g, &ka, err);
    if (r) return r;
    int64_t kp = 0, ap = 0;
    r = option_full_peak(g, &ka, &kp, err);
    rk_option_free(&ka);
    if (r) return r;
    r = rk_option_asap(g, &as, err);
    if (r) return r;
    r = option_full_peak(g, &as, &ap, err);
    rk_option_free(&as);
    if (r) return r;
    *max_peak = kp;
    *min_peak = ap < kp ? ap : kp;
    /* min-peak ILP: M_peak a variable, minimised */
    /* past the deadline: the asap peak, no ILP */
    if (p->deadline > 0 && cm_now() >= p->deadline) return RK_OK;
    /* a model too large for the ILP: the greedy's least peak */
    if (cm_model_no_ilp(m, p)) {
        double *x = malloc(((size_t)m->n_cols + 1) * sizeof *x);
        if (!x) return rk_fail(err, RK_ENOMEM, "out of memory");
        int64_t pk;
        double t;
        r = runs ? cm_greedy_pick(runs, 0, x, &pk, &t, err) : cm_greedy(m, 0, x, &pk, &t, err);
        if (r == RK_OK && pk < *min_peak) *min_peak = pk;
        if (r == RK_OK && xmin) {
            *xmin = x;
            x = NULL;
        }
        free(x);
        return r;
    }
    r = min_peak_ilp(p, m, 0, "minpeak", nodes, iters, xmin, min_peak, err);
    if (r || !xfwd || g->d[g->output_grad].size <= 0) return r;
    if (p->deadline > 0 && cm_now() >= p->deadline) return RK_OK;
    /* the same with the output's gradient beside the forward stages */
    int64_t fwd_peak = INT64_MAX;
    return min_peak_ilp(p, m, g->d[g->output_grad].size, "minpeak_fwd", nodes, iters, xfwd, &fwd_peak, err);
}

rk_status rk_checkmate_peak_range(const rk_graph *g, const rk_checkmate_params *p, int64_t *min_peak,
                                  int64_t *max_peak, rk_error *err) {
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    rk_checkmate_model *m = NULL;
    rk_status r = rk_checkmate_model_build(g, &m, err);
    if (r) return r;
    r = cm_peak_range(g, m, p, min_peak, max_peak, NULL, err);
    rk_checkmate_model_free(m);
    return r;
}

/* The schedule with x's runs (R columns) that holds the least memory.  With
 * the runs fixed, keeping a data longer than its next use needs never lowers
 * the memory of any step (a run over a present output counts it as live
 * instead of fresh), so "forget right after the last use before the next
 * run of its producer" is the least at every step at once and minimises the
 * sum of the memory rows (every M_peak row and the M_save row): a small ILP
 * whose LP has the runs fixed, started from x.  Same runs, same time; peak
 * and saved memory can only fall, so the schedule fits at least the budgets x
 * fits.  x is replaced when the ILP proves a smaller sum; errors leave it. */
void cm_lean_schedule(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save, double *x) {
    rk_lp *lp = NULL;
    rk_error e;
    if (cm_model_lp(m, m_peak, m_save, 0, 0, &lp, &e) != RK_OK) return;
    int n = m->n_cols;
    double *w = calloc((size_t)(n ? n : 1), sizeof *w);
    if (!w) {
        rk_lp_free(lp);
        return;
    }
    /* sizes in MiB keep the objective's magnitude moderate (any positive
     * weight per row gives the same minimiser) */
    for (int i = 0; i < m->n_rows; i++) {
        const cm_row *rw = &m->rows[i];
        if (rw->kind != CM_RHS_PEAK && rw->kind != CM_RHS_SAVE) continue;
        for (int q = 0; q < rw->e.n; q++) w[m->tcol[rw->e.start + q]] += m->tval[rw->e.start + q] / 1048576.0;
    }
    for (int j = 0; j < n; j++) {
        rk_lp_set_col_obj(lp, j, w[j]);
        if (m->cols[j].kind == CM_COL_R) {
            double v = x[j] > 0.5 ? 1 : 0;
            rk_lp_set_col_bounds(lp, j, v, v);
        }
    }
    free(w);
    rk_milp_params mp;
    rk_milp_params_default(&mp);
    mp.threads = 1;
    mp.node_limit = 500;
    mp.gap = 1e-9;
    mp.incumbent = x;
    rk_milp_result res;
    if (rk_milp_solve(lp, &mp, &res, &e) == RK_OK && res.has_solution && res.status == RK_MILP_OPTIMAL) {
        memcpy(x, res.x, (size_t)n * sizeof *x);
        cm_fix_continuous(m, x);
    }
    rk_milp_result_free(&res);
    rk_lp_free(lp);
}
