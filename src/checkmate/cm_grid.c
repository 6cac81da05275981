/* cm_grid.c — the (M_peak, M_save) budget grid of a block class: budgets
 * solved loose → tight (a budget waits for every looser one it reads: all,
 * but only its own line for the M_save = output line), a
 * budget answered without an ILP when a looser budget's proven optimum fits
 * it or a looser budget is infeasible, the looser optima as the known bound
 * and the cheapest looser schedule that fits as the incumbent; budgets whose
 * looser budgets are all finished in parallel (OpenMP threads taking ready
 * budgets, no barrier); options deduplicated and sorted. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_internal.h"

typedef enum { B_TODO = 0, B_OPT, B_TL, B_INF, B_UNKNOWN } bstate;

typedef struct {
    int i, j;             /* grid indices */
    int64_t p, s;         /* budgets */
    int level;
    bstate state;
    int owner;            /* budget whose solution this is (itself if solved) */
    /* solution (owner only) */
    double *x;
    rk_option opt;
    double obj, bound;
    int64_t peak, saved;  /* of the schedule (full replay peak) */
    int ilp;              /* an ILP was solved here */
    long nodes, iters;    /* its B&B nodes and simplex iterations */
    rk_milp_pseudocosts pc; /* where the ILP's search ended (ilp only) */
    int cols, rows;
    double time_s;
    rk_status st;
    rk_error err;
    char done;            /* solved (or answered), in this call or an earlier one */
    char skipped;         /* its ILP was not started: the deadline had passed */
} budget;

static int fits(const budget *sol, const budget *b) { return sol->peak <= b->p && sol->saved <= b->s; }
static int looser(const budget *a, const budget *b) { return a != b && a->p >= b->p && a->s >= b->s; }

/* Budgets b waits for and reads: the looser ones (bounds, reuse), and for
 * incumbents also the grid neighbours of a lower level within CM_NEAR lines
 * that are tighter in M_save (and so looser in M_peak), whose schedules often
 * fit.  Only that side: neighbours on both sides chain the budgets across
 * the grid in zigzags, and the longest chain of dependent ILPs, not the
 * total work, set the wall time on 2 threads (34.8 s of ILPs on the longest
 * chain with both sides, 23.5 s without any neighbour, in one measured run). */
#define CM_NEAR 3
#define CM_PC_PRIOR 3 /* observations a neighbour's pseudocost counts for */
static int near(const budget *o, const budget *b) { return abs(o->i - b->i) <= CM_NEAR && abs(o->j - b->j) <= CM_NEAR; }
/* The looser budgets b reads (and so waits for): all of them, except on
 * the M_save = output line (j = 0), which reads only its own line.  Nothing
 * but the output is saved there, so the looser optima of the other lines
 * (more saved) almost never fit it and their bounds are below its own
 * line's; not waiting for them takes the line, the hardest budgets of the
 * grid, off the other lines' chains (seed 0 of the GPT2 bench: the longest
 * chain of dependent ILPs went through the whole line after every other
 * line's budgets, 8.9 s of 18.9 s summed). */
static int reads_looser(const budget *o, const budget *b) {
    if (!looser(o, b)) return 0;
    return b->j > 0 || o->j == 0;
}
static int depends(const budget *o, const budget *b) {
    if (reads_looser(o, b)) return 1;
    return o != b && o->level < b->level && near(o, b) && o->j < b->j;
}

/* Pseudocosts for b's ILP: the sums of those of the solved neighbours b
 * depends on (same columns, nearly the same problem), so that the search
 * ranks its branching candidates well from the first node; their average
 * counts as at most CM_PC_PRIOR observations, a prior that strong branching
 * still confirms (counting every observation made every column reliable at
 * once, and the searches much longer).  pc->n = 0 when there are none (or
 * out of memory: they are advice only). */
static void neighbour_pseudocosts(const budget *B, int nb, const budget *b, rk_milp_pseudocosts *pc) {
    memset(pc, 0, sizeof *pc);
    for (int k = 0; k < nb; k++) {
        const budget *o = &B[k];
        if (!o->ilp || o->pc.n != b->cols || !depends(o, b) || !near(o, b)) continue;
        if (pc->n == 0) {
            int fail = 0;
            for (int d = 0; d < 2; d++) {
                pc->sum[d] = calloc((size_t)b->cols, sizeof *pc->sum[d]);
                pc->cnt[d] = calloc((size_t)b->cols, sizeof *pc->cnt[d]);
                if (!pc->sum[d] || !pc->cnt[d]) fail = 1;
            }
            pc->n = b->cols;
            if (fail) {
                rk_milp_pseudocosts_free(pc);
                return;
            }
        }
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < pc->n; j++) {
                pc->sum[d][j] += o->pc.sum[d][j];
                pc->cnt[d][j] += o->pc.cnt[d][j];
            }
    }
    for (int d = 0; d < 2 && pc->n; d++)
        for (int j = 0; j < pc->n; j++)
            if (pc->cnt[d][j] > CM_PC_PRIOR) {
                pc->sum[d][j] *= (double)CM_PC_PRIOR / pc->cnt[d][j];
                pc->cnt[d][j] = CM_PC_PRIOR;
            }
}

static int cmp_opt(const void *x, const void *y) {
    const rk_option *a = *(rk_option *const *)x, *b = *(rk_option *const *)y;
#define CMPF(f)                                                                                                        \
    if (a->f != b->f) return a->f < b->f ? -1 : 1
    CMPF(saved);
    CMPF(fwd_peak);
    CMPF(bwd_peak);
    CMPF(fwd_time);
    CMPF(bwd_time);
#undef CMPF
    return 0;
}

static void solve_one(const rk_checkmate_model *m, const rk_checkmate_params *p, budget *B, int nb, int bi) {
    budget *b = &B[bi];
    const char *prefix = p->export_prefix ? p->export_prefix : "block";
    /* budgets not solved yet (a grid solved in part, rk_checkmate_grid_solve)
     * are B_TODO with no owner and no schedule: they are read as absent */
    /* looser budgets: infeasible → infeasible; proven optimum that fits → reuse */
    double kb = -INFINITY;
    for (int k = 0; k < nb; k++) {
        budget *o = &B[k];
        if (!reads_looser(o, b)) continue;
        if (o->state == B_INF) {
            b->state = B_INF;
            b->owner = -1;
            return;
        }
    }
    for (int k = 0; k < nb; k++) {
        budget *o = &B[k];
        if (!reads_looser(o, b)) continue;
        if (o->state == B_OPT && fits(&B[o->owner], b)) {
            b->state = B_OPT;
            b->owner = o->owner;
            return;
        }
        if (o->state == B_OPT && B[o->owner].obj > kb) kb = B[o->owner].obj;
        if (o->state == B_TL && B[o->owner].bound > kb) kb = B[o->owner].bound;
    }
    /* incumbent: the cheapest schedule that fits, of a budget b depends on
     * (all finished) or the min-peak seed (level -1) */
    const budget *inc = NULL;
    for (int k = 0; k < nb; k++) {
        budget *o = &B[k];
        if (!(o->level < 0 || depends(o, b)) || o->owner != k || !o->x) continue;
        if (!fits(o, b)) continue;
        if (!inc || o->obj < inc->obj) inc = o;
    }
    /* a schedule that fits and costs no more than a lower bound is optimal */
    if (inc && isfinite(kb) && inc->obj <= kb + 1e-9 * fmax(1, fabs(kb))) {
        b->state = B_OPT;
        b->owner = (int)(inc - B);
        return;
    }
    if (p->deadline > 0 && cm_now() >= p->deadline) {
        b->skipped = 1; /* left unsolved: a later call may solve it */
        return;
    }
    if (cm_model_no_ilp(m, p)) {
        b->state = B_UNKNOWN; /* too large for an ILP: no schedule here */
        b->owner = -1;
        return;
    }
    rk_lp *lp = NULL;
    b->st = rk_checkmate_model_lp(m, b->p, b->s, &lp, &b->err);
    if (b->st == RK_EINFEASIBLE) {
        b->st = RK_OK;
        b->state = B_INF;
        b->owner = -1;
        return;
    }
    if (b->st) return;
    b->ilp = 1;
    b->cols = rk_lp_num_cols(lp);
    b->rows = rk_lp_num_rows(lp);
    char name[300];
    snprintf(name, sizeof name, "%s_p%02d_s%02d", prefix, b->i, b->j);
    b->st = cm_export(p, name, lp, &b->err);
    if (b->st) {
        rk_lp_free(lp);
        return;
    }
    rk_milp_pseudocosts pc;
    neighbour_pseudocosts(B, nb, b, &pc);
    rk_milp_params mp;
    cm_milp_params(p, &mp);
    cm_scale_node_limit(p, b->rows, &mp);
    mp.pseudocosts = pc.n ? &pc : NULL;
    /* light strong branching (docs/ilp.md, sixth round): a column is
     * strong-branched until it has one observation each way, at most 4
     * columns a node, 40 dual iterations a child; the neighbours'
     * pseudocosts rank the candidates.  (Pure pseudocost branching: ~9 %
     * more solve time; the default reliability branching: ~30 % more.) */
    mp.sb_reliability = 1;
    mp.sb_max_candidates = 4;
    mp.sb_max_iterations = 40;
    mp.incumbent = inc ? inc->x : NULL;
    mp.known_bound = isfinite(kb) ? kb - cm_obj_offset(m) : kb;
    rk_milp_result res;
    double t0 = cm_now();
    b->st = cm_solve(p, name, lp, &mp, &res, &b->err);
    b->time_s = cm_now() - t0;
    if (!b->st) {
        b->nodes = res.nodes;
        b->iters = res.iterations;
    }
    rk_lp_free(lp);
    rk_milp_pseudocosts_free(&pc);
    if (b->st) {
        rk_milp_result_free(&res);
        return;
    }
    if (res.has_solution && (res.status == RK_MILP_OPTIMAL || res.status == RK_MILP_TIME_LIMIT)) {
        cm_lean_schedule(m, b->p, b->s, res.x);
        b->st = rk_checkmate_model_decode_option(m, res.x, b->p, b->s, &b->opt, &b->obj, &b->err);
        if (!b->st) {
            /* the schedule's own peak: the whole sequence, loss step included */
            rk_op *ops = NULL;
            int n = 0;
            double o2, t2;
            b->st = cm_decode_replay(m, res.x, &ops, &n, &o2, &b->peak, &t2, &b->err);
            free(ops);
        }
        if (b->st) {
            rk_milp_result_free(&res);
            return;
        }
        b->saved = b->opt.saved;
        b->x = res.x;
        res.x = NULL;
        b->pc = res.pseudocosts;
        memset(&res.pseudocosts, 0, sizeof res.pseudocosts);
        b->owner = (int)(b - B);
        if (res.status == RK_MILP_OPTIMAL) {
            b->state = B_OPT;
            b->bound = b->obj;
        } else {
            b->state = B_TL;
            b->bound = res.bound + cm_obj_offset(m);
        }
        if (b->state == B_OPT && kb > b->obj + 1e-6 * fmax(1, fabs(b->obj))) {
            b->st = rk_fail(&b->err, RK_EFAIL,
                            "BUG: rk-Checkmate: budget (%lld, %lld) has optimum %.17g below the optimum %.17g of a "
                            "looser budget",
                            (long long)b->p, (long long)b->s, b->obj, kb);
        }
    } else if (res.status == RK_MILP_INFEASIBLE) {
        b->state = B_INF;
        b->owner = -1;
    } else if (res.status == RK_MILP_TIME_LIMIT) {
        b->state = B_UNKNOWN;
        b->owner = -1;
    } else {
        b->st = rk_fail(&b->err, RK_EFAIL, "rk-Checkmate: the MILP solver returned '%s' on %s",
                        rk_milp_status_name(res.status), name);
    }
    if (p->verbose)
        rk_log_printf(&p->log, RK_LOG_INFO,
                "rk-Checkmate: %s: %d cols %d rows: %s obj %.6g (looser optimum %.6g, incumbent %.6g) (%ld nodes, %ld "
                "iterations, %.3f s)",
                name, b->cols, b->rows,
                b->state == B_OPT ? "optimal" : b->state == B_INF ? "infeasible" : b->state == B_TL ? "time limit" : "unknown",
                b->obj, kb, inc ? inc->obj : INFINITY, res.nodes, res.iterations, b->time_s);
    rk_milp_result_free(&res);
}


/* ------------------------------------------------ the grid, solved lazily */

struct rk_checkmate_grid {
    const rk_graph *g;
    rk_checkmate_params p;   /* export_prefix points to prefix[] */
    char prefix[256];
    rk_checkmate_model *m;
    int P, S;
    int nb, nall;            /* budgets; + the seeds: the min-peak ones (from B[nb])
                                when there are, then the greedy ones */
    int first_greedy;        /* index of the first greedy seed (seeds' options are options) */
    budget *B;
    int *at;                 /* at[i * S + j]: the budget of grid point (i, j) (duplicates share one) */
    int *rank;               /* position in the (M_peak desc, M_save desc) order */
    int64_t min_peak, max_peak;
    double setup_s;          /* model, peak range (min-peak ILP) */
    double wall_s;           /* setup and every rk_checkmate_grid_solve */
    int n_skipped;           /* ILPs not started: past p.deadline */
    long setup_nodes, setup_iters; /* of the min-peak ILP */
};

void rk_checkmate_grid_free(rk_checkmate_grid *gr) {
    if (!gr) return;
    if (gr->B)
        for (int a = 0; a < gr->nall; a++) {
            free(gr->B[a].x);
            rk_milp_pseudocosts_free(&gr->B[a].pc);
            rk_option_free(&gr->B[a].opt);
        }
    free(gr->B);
    free(gr->at);
    free(gr->rank);
    rk_checkmate_model_free(gr->m);
    free(gr);
}

/* Seed budget sd with schedule x (malloc'ed, taken): its replayed peak,
 * option and cost (checked against the model by the decoding). */
static rk_status seed_from(const rk_checkmate_model *m, budget *sd, double *x, rk_error *err) {
    sd->level = -1;
    sd->state = B_UNKNOWN;
    sd->i = sd->j = -1;
    sd->done = 1;
    sd->x = x;
    rk_op *ops = NULL;
    int nops = 0;
    double t2;
    rk_status r = cm_decode_replay(m, x, &ops, &nops, &sd->obj, &sd->peak, &t2, err);
    free(ops);
    if (!r) r = rk_checkmate_model_decode_option(m, x, sd->peak, -1, &sd->opt, &sd->obj, err);
    if (r) return r;
    sd->saved = sd->opt.saved;
    sd->p = sd->peak;
    sd->s = sd->saved;
    return RK_OK;
}

/* The greedy rematerialization (cm_greedy) at the M_peak of every
 * p.greedy_step-th line from the loosest and of the tightest: cheap
 * schedules with their true cost, incumbents for every point they fit
 * (level -1) and options.  A line where the greedy finds nothing that fits
 * gives none; schedules found twice are kept once.  The greedy runs once
 * (*runs, made here when the caller has none), picked at each line's M_peak. */
static rk_status greedy_seeds(rk_checkmate_grid *gr, cm_greedy_runs **runs, rk_error *err) {
    int step = gr->p.greedy_step, P = gr->P, S = gr->S;
    if (!*runs) {
        rk_status r = cm_greedy_runs_new(gr->m, runs, err);
        if (r) return r;
    }
    for (int k = 0; k <= P / step + 1; k++) {
        int i = k <= P / step ? P - 1 - k * step : 0;
        if (i < 0) continue;
        if (k == P / step + 1 && (P - 1) % step == 0) break; /* the tightest line was one of them */
        int64_t pk = gr->B[gr->at[i * S]].p;
        double *x = malloc(((size_t)rk_checkmate_model_num_cols(gr->m) + 1) * sizeof *x);
        if (!x) return rk_fail(err, RK_ENOMEM, "out of memory");
        int64_t peak;
        double t;
        rk_error e2;
        rk_status r = cm_greedy_pick(*runs, pk, x, &peak, &t, &e2);
        if (r == RK_EINFEASIBLE) {
            free(x);
            continue;
        }
        if (r) {
            free(x);
            *err = e2;
            return r;
        }
        budget *sd = &gr->B[gr->nall];
        r = seed_from(gr->m, sd, x, err);
        if (r) {
            sd->x = NULL;
            free(x);
            rk_option_free(&sd->opt);
            return r;
        }
        sd->owner = gr->nall;
        int dup = 0;
        for (int a = gr->first_greedy; a < gr->nall && !dup; a++) {
            const rk_option *o1 = &gr->B[a].opt, *o2 = &sd->opt;
            dup = cmp_opt(&o1, &o2) == 0;
        }
        if (dup) {
            free(sd->x);
            rk_option_free(&sd->opt);
            memset(sd, 0, sizeof *sd);
            continue;
        }
        gr->nall++;
    }
    return RK_OK;
}

/* rk_checkmate_grid_new; *too_large = 1 when it fails because g's model is
 * too large (cm_model_build). */
static rk_status grid_new(const rk_graph *g, const rk_checkmate_params *p, rk_checkmate_grid **out, int *too_large,
                          rk_error *err) {
    double w0 = cm_now();
    *out = NULL;
    *too_large = 0;
    rk_checkmate_grid *gr = calloc(1, sizeof *gr);
    if (!gr) return rk_fail(err, RK_ENOMEM, "out of memory");
    if (p) gr->p = *p;
    else rk_checkmate_params_default(&gr->p);
    snprintf(gr->prefix, sizeof gr->prefix, "%s", gr->p.export_prefix ? gr->p.export_prefix : "block");
    gr->p.export_prefix = gr->prefix;
    gr->g = g;
    int P = gr->p.grid_peak > 0 ? gr->p.grid_peak : 20, S = gr->p.grid_save > 0 ? gr->p.grid_save : 20;
    gr->P = P;
    gr->S = S;
    cm_greedy_runs *runs = NULL; /* the greedy's runs, for the min peak and the seeds */
    /* a model that gets no ILP (ilp_max_cols) is made without its rows (its
     * memory rows alone are steps x data terms); one past max_model_cols is
     * not made */
    rk_status r = cm_model_build(g, gr->p.ilp_max_cols, gr->p.max_model_cols, &gr->m, too_large, err);
    if (r) goto fail;
    int n_greedy = gr->p.greedy_step > 0 ? P / gr->p.greedy_step + 2 : 0;
    if (n_greedy > 0 && cm_model_no_ilp(gr->m, &gr->p)) {
        r = cm_greedy_runs_new(gr->m, &runs, err); /* the min peak is the greedy's too */
        if (r) goto fail;
    }
    double *xmin = NULL, *xfwd = NULL;
    r = cm_peak_range_work(g, gr->m, &gr->p, &gr->min_peak, &gr->max_peak, &xmin,
                           gr->p.no_fwd_min_peak ? NULL : &xfwd, &gr->setup_nodes,
                           &gr->setup_iters, runs, err);
    if (r) goto fail;
    int64_t minp = gr->min_peak, maxp = gr->max_peak, out_size = g->d[g->output].size;
    budget *B = gr->B = calloc((size_t)P * (size_t)S + 2 + (size_t)n_greedy, sizeof *B);
    gr->at = malloc((size_t)P * (size_t)S * sizeof *gr->at);
    gr->rank = malloc(((size_t)P * (size_t)S + 1) * sizeof *gr->rank);
    int *ord = malloc(((size_t)P * (size_t)S + 1) * sizeof *ord);
    if (!B || !gr->at || !gr->rank || !ord) {
        free(xmin);
        free(xfwd);
        free(ord);
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto fail;
    }
    int nb = 0;
    for (int i = 0; i < P; i++) {
        int64_t pk = P == 1 ? maxp : minp + (int64_t)((double)(maxp - minp) * i / (P - 1));
        for (int j = 0; j < S; j++) {
            int64_t sv = S == 1 ? pk : out_size + (int64_t)((double)(pk - out_size) * j / (S - 1));
            if (sv < 0) sv = 0;
            /* a duplicate of an existing budget is that budget */
            int dup = -1;
            for (int k = 0; k < nb && dup < 0; k++)
                if (B[k].p == pk && B[k].s == sv) dup = k;
            if (dup >= 0) {
                gr->at[i * S + j] = dup;
                continue;
            }
            gr->at[i * S + j] = nb;
            B[nb].i = i;
            B[nb].j = j;
            B[nb].p = pk;
            B[nb].s = sv;
            B[nb].owner = -1;
            nb++;
        }
    }
    gr->nb = gr->nall = nb;
    /* order by (p desc, s desc): every looser budget comes first */
    for (int a = 0; a < nb; a++) ord[a] = a;
    for (int a = 1; a < nb; a++) {
        int v = ord[a], c = a - 1;
        while (c >= 0 && (B[ord[c]].p < B[v].p || (B[ord[c]].p == B[v].p && B[ord[c]].s < B[v].s))) {
            ord[c + 1] = ord[c];
            c--;
        }
        ord[c + 1] = v;
    }
    for (int a = 0; a < nb; a++) {
        budget *b = &B[ord[a]];
        int lev = 0;
        for (int c = 0; c < a; c++)
            if (looser(&B[ord[c]], b) && B[ord[c]].level + 1 > lev) lev = B[ord[c]].level + 1;
        b->level = lev;
        gr->rank[ord[a]] = a;
    }
    free(ord);
    /* the min-peak schedules (the least peak, and the least with the
     * output's gradient beside the forward) seed the incumbents (level -1,
     * never reused as an optimum) and are options (rk_checkmate_grid_options) */
    double *xs[2] = {xmin, xfwd};
    for (int q = 0; q < 2; q++) {
        if (!xs[q]) continue;
        budget *sd = &B[gr->nall];
        sd->level = -1;
        sd->state = B_UNKNOWN;
        sd->owner = gr->nall;
        sd->i = sd->j = -1;
        sd->done = 1;
        rk_op *ops = NULL;
        int nops = 0;
        double t2;
        sd->x = xs[q];
        xs[q] = NULL;
        gr->nall++;
        r = cm_decode_replay(gr->m, sd->x, &ops, &nops, &sd->obj, &sd->peak, &t2, err);
        free(ops);
        if (!r) r = rk_checkmate_model_decode_option(gr->m, sd->x, sd->peak, -1, &sd->opt, &sd->obj, err);
        if (r) {
            free(xs[1]);
            goto fail;
        }
        sd->saved = sd->opt.saved;
        sd->p = sd->peak;
        sd->s = sd->saved;
    }
    gr->first_greedy = gr->nall;
    if (n_greedy > 0) {
        r = greedy_seeds(gr, &runs, err);
        if (r) goto fail;
    }
    cm_greedy_runs_free(runs);
    gr->setup_s = gr->wall_s = cm_now() - w0;
    *out = gr;
    return RK_OK;
fail:
    cm_greedy_runs_free(runs);
    rk_checkmate_grid_free(gr);
    return r;
}

rk_status rk_checkmate_grid_new(const rk_graph *g, const rk_checkmate_params *p, rk_checkmate_grid **out,
                                rk_error *err) {
    int too_large;
    return grid_new(g, p, out, &too_large, err);
}

void rk_checkmate_grid_size(const rk_checkmate_grid *gr, int *grid_peak, int *grid_save) {
    *grid_peak = gr->P;
    *grid_save = gr->S;
}

void rk_checkmate_grid_set_deadline(rk_checkmate_grid *gr, double deadline) { gr->p.deadline = deadline; }

int rk_checkmate_grid_solved(const rk_checkmate_grid *gr, int i, int j) {
    if (i < 0 || j < 0 || i >= gr->P || j >= gr->S) return 0;
    return gr->B[gr->at[i * gr->S + j]].done;
}

typedef struct {
    rk_checkmate_grid *gr;
    int b;       /* budget index */
    int ndep;    /* unfinished tasks it waits for */
    char started;
} grid_task;

rk_status rk_checkmate_grid_solve(rk_checkmate_grid *const *grids, int n_grids, char *const *want, rk_error *err) {
    double w0 = cm_now();
    /* the tasks: wanted budgets not solved yet, every grid in one pool */
    int nt = 0;
    for (int q = 0; q < n_grids; q++) nt += grids[q]->nb;
    grid_task *T = calloc((size_t)nt + 1, sizeof *T);
    if (!T) return rk_fail(err, RK_ENOMEM, "out of memory");
    nt = 0;
    for (int q = 0; q < n_grids; q++) {
        rk_checkmate_grid *gr = grids[q];
        for (int a = 0; a < gr->nb; a++) {
            int w = !want || !want[q];
            for (int k = 0; !w && k < gr->P * gr->S; k++) w = want[q][k] && gr->at[k] == a;
            if (!w || gr->B[a].done) continue;
            T[nt].gr = gr;
            T[nt].b = a;
            nt++;
        }
    }
    /* dependencies within a grid (a budget reads only the budgets it depends
     * on, which are finished before it starts: the results do not depend on
     * the timing, nor on the number of threads) */
    for (int a = 0; a < nt; a++)
        for (int c = 0; c < nt; c++)
            if (T[c].gr == T[a].gr && depends(&T[c].gr->B[T[c].b], &T[a].gr->B[T[a].b])) T[a].ndep++;
    int threads = n_grids > 0 && grids[0]->p.threads > 0 ? grids[0]->p.threads : omp_get_max_threads();
    int n_done = 0, failed = 0;
    /* ready budgets go in (level, grid, M_peak desc, M_save desc) order; no
     * barrier between levels: a thread never waits for budgets its next one
     * does not need */
    omp_lock_t sched; /* this call's own lock: no global named critical */
    omp_init_lock(&sched);
#pragma omp parallel num_threads(threads)
    for (;;) {
        int pick = -1, finish = 0;
        omp_set_lock(&sched);
        if (n_done == nt || failed) {
            finish = 1;
        } else {
            for (int a = 0; a < nt; a++) {
                if (T[a].started || T[a].ndep > 0) continue;
                if (pick < 0) {
                    pick = a;
                    continue;
                }
                const budget *x = &T[a].gr->B[T[a].b], *y = &T[pick].gr->B[T[pick].b];
                if (x->level < y->level || (x->level == y->level && a < pick)) pick = a;
            }
            if (pick >= 0) T[pick].started = 1;
        }
        omp_unset_lock(&sched);
        if (finish) break;
        if (pick < 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
            continue;
        }
        rk_checkmate_grid *gr = T[pick].gr;
        budget *pb = &gr->B[T[pick].b];
        pb->skipped = 0;
        solve_one(gr->m, &gr->p, gr->B, gr->nall, T[pick].b);
        pb->done = !pb->skipped;
        if (pb->skipped) gr->n_skipped++;
        omp_set_lock(&sched);
        n_done++;
        if (gr->B[T[pick].b].st) failed = 1;
        for (int a = 0; a < nt; a++)
            if (T[a].gr == gr && depends(&gr->B[T[pick].b], &gr->B[T[a].b])) T[a].ndep--;
        omp_unset_lock(&sched);
    }
    omp_destroy_lock(&sched);
    rk_status r = RK_OK;
    for (int a = 0; a < nt && !r; a++) {
        budget *b = &T[a].gr->B[T[a].b];
        if (b->st) {
            *err = b->err;
            r = b->st;
        }
    }
    free(T);
    double dt = cm_now() - w0;
    for (int q = 0; q < n_grids; q++) grids[q]->wall_s += dt;
    return r;
}

rk_status rk_checkmate_grid_options(const rk_checkmate_grid *gr, rk_option **opts, int *n, rk_error *err) {
    *opts = NULL;
    *n = 0;
    const rk_option **list = malloc(((size_t)gr->nall + 1) * sizeof *list);
    if (!list) return rk_fail(err, RK_ENOMEM, "out of memory");
    int nsol = 0;
    for (int a = 0; a < gr->nb; a++)
        if (gr->B[a].done && gr->B[a].owner == a && gr->B[a].x) list[nsol++] = &gr->B[a].opt;
    /* the min-peak seed (B[nb], when its ILP gave a schedule) and the greedy
     * seeds are options too: the least peak known for the block, whatever it
     * costs, is what rk-Rotor needs at the tightest budgets */
    for (int a = gr->nb; a < gr->nall; a++) list[nsol++] = &gr->B[a].opt;
    qsort(list, (size_t)nsol, sizeof *list, cmp_opt);
    rk_option *res = calloc((size_t)nsol + 1, sizeof *res);
    if (!res) {
        free(list);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    int nres = 0;
    for (int a = 0; a < nsol; a++) {
        if (nres > 0 && cmp_opt(&list[a], &list[a - 1]) == 0) continue;
        if (rk_option_copy(&res[nres], list[a])) {
            for (int k = 0; k < nres; k++) rk_option_free(&res[k]);
            free(res);
            free(list);
            return rk_fail(err, RK_ENOMEM, "out of memory");
        }
        nres++;
    }
    free(list);
    *opts = res;
    *n = nres;
    return RK_OK;
}

static int want_around(const rk_checkmate_grid *gr, int i0, int j0, int step, char *want) {
    int added = 0;
    for (int di = -1; di <= 1; di++)
        for (int dj = -1; dj <= 1; dj++) {
            int i = i0 + di * step, j = j0 + dj * step;
            if (i < 0 || j < 0 || i >= gr->P || j >= gr->S) continue;
            int q = i * gr->S + j;
            if (want[q] || gr->B[gr->at[q]].done) continue;
            want[q] = 1;
            added++;
        }
    return added;
}

int rk_checkmate_grid_want_budget(const rk_checkmate_grid *gr, int64_t peak, int64_t saved, int step, char *want) {
    /* the first M_peak line at or above peak, then on it the first M_save
     * column at or above saved (the last ones when none is) */
    int i0 = gr->P - 1, j0 = gr->S - 1;
    for (int i = 0; i < gr->P; i++)
        if (gr->B[gr->at[i * gr->S]].p >= peak) {
            i0 = i;
            break;
        }
    for (int j = 0; j < gr->S; j++)
        if (gr->B[gr->at[i0 * gr->S + j]].s >= saved) {
            j0 = j;
            break;
        }
    return want_around(gr, i0, j0, step, want);
}

int rk_checkmate_grid_want_near(const rk_checkmate_grid *gr, const rk_option *o, int step, char *want) {
    int added = 0, found = 0;
    for (int a = 0; a < gr->nb; a++) {
        const budget *b = &gr->B[a];
        if (!b->done || b->owner != a || !b->x) continue;
        const rk_option *bo = &b->opt;
        if (cmp_opt(&bo, &o) != 0) continue;
        found = 1;
        /* the neighbours of the point where this schedule was found (not of
         * the tighter points it answers: on small blocks one schedule
         * answers whole lines, and walking them h points a round is slow) */
        for (int k = 0; k < gr->P * gr->S; k++)
            if (gr->at[k] == a) added += want_around(gr, k / gr->S, k % gr->S, step, want);
    }
    return found ? added : -1;
}

int rk_checkmate_grid_want_trim(const rk_checkmate_grid *gr, char *want, int keep) {
    /* the wanted points' budgets, loosest first (rank order); a budget
     * wanted through several points counts once */
    int nq = gr->P * gr->S, kept = 0;
    char *seen = calloc((size_t)gr->nb + 1, 1);
    int *pts = malloc(((size_t)nq + 1) * sizeof *pts);
    if (!seen || !pts) {
        free(seen);
        free(pts);
        return -1;
    }
    int np = 0;
    for (int q = 0; q < nq; q++)
        if (want[q]) pts[np++] = q;
    /* insertion sort by the budget's rank (np is at most the grid's size) */
    for (int a = 1; a < np; a++) {
        int v = pts[a], c = a - 1;
        while (c >= 0 && gr->rank[gr->at[pts[c]]] > gr->rank[gr->at[v]]) {
            pts[c + 1] = pts[c];
            c--;
        }
        pts[c + 1] = v;
    }
    for (int a = 0; a < np; a++) {
        int bi = gr->at[pts[a]];
        if (!seen[bi]) {
            if (kept >= keep) {
                want[pts[a]] = 0;
                continue;
            }
            seen[bi] = 1;
            kept++;
        }
    }
    free(seen);
    free(pts);
    return kept;
}

int rk_checkmate_grid_want_coarse(const rk_checkmate_grid *gr, int step, char *want) {
    int added = 0;
    if (step < 1) step = 1;
    for (int i = 0; i < gr->P; i++)
        for (int j = 0; j < gr->S; j++) {
            int line = (gr->P - 1 - i) % step == 0 && (gr->S - 1 - j) % step == 0;
            int save_nothing = i == gr->P - 1 && j == 0; /* the least saved at the loosest peak */
            if (!line && !save_nothing) continue;
            int q = i * gr->S + j;
            if (want[q] || gr->B[gr->at[q]].done) continue;
            want[q] = 1;
            added++;
        }
    return added;
}

void rk_checkmate_grid_stats(const rk_checkmate_grid *gr, rk_checkmate_stats *st) {
    memset(st, 0, sizeof *st);
    st->min_peak = gr->min_peak;
    st->max_peak = gr->max_peak;
    for (int a = 0; a < gr->nb; a++) {
        const budget *b = &gr->B[a];
        if (!b->done) continue;
        st->n_budgets++;
        if (b->ilp) {
            st->n_ilps++;
            st->sum_cols += b->cols;
            st->sum_rows += b->rows;
            if (b->cols > st->max_cols) st->max_cols = b->cols;
            if (b->rows > st->max_rows) st->max_rows = b->rows;
            st->solve_time_s += b->time_s;
            st->nodes += b->nodes;
            st->iterations += b->iters;
            st->work += b->iters * (long)b->rows / 1000;
        }
        if (b->state == B_INF) st->n_infeasible++;
        if (b->state == B_TL || (b->ilp && b->state == B_UNKNOWN)) st->n_timeout++;
        if (!b->ilp && b->state == B_OPT) st->n_reused++;
        if (b->owner == a && b->x) {
            int dup = 0;
            for (int c = 0; c < a && !dup; c++) {
                const budget *o = &gr->B[c];
                const rk_option *x = &b->opt, *y = &o->opt;
                dup = o->done && o->owner == c && o->x && cmp_opt(&x, &y) == 0;
            }
            if (!dup) st->n_options++;
        }
    }
    st->n_skipped = gr->n_skipped;
    st->wall_s = gr->wall_s;
    st->nodes += gr->setup_nodes;
    st->iterations += gr->setup_iters;
    st->work += gr->setup_iters * (long)rk_checkmate_model_num_rows(gr->m) / 1000;
    st->n_work_ilps += gr->setup_iters > 0 || gr->setup_nodes > 0;
    st->n_work_ilps += st->n_ilps;
}

void rk_checkmate_stats_add(rk_checkmate_stats *tot, const rk_checkmate_stats *s1, int first) {
    tot->n_budgets += s1->n_budgets;
    tot->n_ilps += s1->n_ilps;
    tot->n_reused += s1->n_reused;
    tot->n_infeasible += s1->n_infeasible;
    tot->n_timeout += s1->n_timeout;
    tot->n_skipped += s1->n_skipped;
    tot->n_options += s1->n_options;
    if (s1->max_cols > tot->max_cols) tot->max_cols = s1->max_cols;
    if (s1->max_rows > tot->max_rows) tot->max_rows = s1->max_rows;
    tot->sum_cols += s1->sum_cols;
    tot->sum_rows += s1->sum_rows;
    tot->solve_time_s += s1->solve_time_s;
    tot->nodes += s1->nodes;
    tot->work += s1->work;
    tot->n_work_ilps += s1->n_work_ilps;
    tot->iterations += s1->iterations;
    if (first || s1->min_peak < tot->min_peak) tot->min_peak = s1->min_peak;
    if (s1->max_peak > tot->max_peak) tot->max_peak = s1->max_peak;
}

rk_status rk_checkmate_block_options(const rk_graph *g, const rk_checkmate_params *p, rk_option **opts, int *n,
                                     rk_checkmate_stats *st, rk_error *err) {
    *opts = NULL;
    *n = 0;
    rk_checkmate_grid *gr = NULL;
    rk_status r = rk_checkmate_grid_new(g, p, &gr, err);
    if (r) return r;
    r = rk_checkmate_grid_solve(&gr, 1, NULL, err);
    if (!r) r = rk_checkmate_grid_options(gr, opts, n, err);
    if (!r && st) rk_checkmate_grid_stats(gr, st);
    rk_checkmate_grid_free(gr);
    return r;
}

rk_status rk_checkmate_chain_grids(const rk_chain *ch, const rk_checkmate_params *p, rk_checkmate_grid ***grids,
                                   rk_error *err) {
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    int nc = ch->n_classes;
    rk_checkmate_grid **gs = calloc((size_t)nc + 1, sizeof *gs);
    char *used = calloc((size_t)nc + 1, 1);
    rk_status *rs = calloc((size_t)nc + 1, sizeof *rs);
    rk_error *es = calloc((size_t)nc + 1, sizeof *es);
    int *big = calloc((size_t)nc + 1, sizeof *big);
    if (!gs || !used || !rs || !es || !big) {
        free(gs);
        free(used);
        free(rs);
        free(es);
        free(big);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int k = 0; k < ch->n_blocks; k++) used[ch->blocks[k].cls] = 1;
    int threads = p->threads > 0 ? p->threads : omp_get_max_threads();
    /* the classes' min-peak ILPs are independent: one class a thread */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int c = 0; c < nc; c++) {
        if (!used[c]) continue;
        rk_checkmate_params pc = *p;
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s_c%d", p->export_prefix ? p->export_prefix : "class", c);
        pc.export_prefix = prefix;
        rs[c] = grid_new(&ch->classes[c], &pc, &gs[c], &big[c], &es[c]);
    }
    rk_status r = RK_OK;
    for (int c = 0; c < nc && !r; c++) {
        if (rs[c] && big[c]) {
            /* too large for rk-Checkmate: the class keeps the DP's built-in
             * options (the log line does not start with "rk-Checkmate:",
             * which a caller may count as an ILP) */
            rk_log_printf(&p->log, RK_LOG_WARNING, "rockmate: class %d: no rk-Checkmate options: %.900s", c,
                          es[c].msg);
            rs[c] = RK_OK;
            continue;
        }
        if (rs[c]) {
            r = rs[c];
            rk_fail(err, r, "class %d: %.900s", c, es[c].msg);
        }
    }
    free(used);
    free(rs);
    free(es);
    free(big);
    if (r) {
        rk_checkmate_chain_grids_free(nc, gs);
        return r;
    }
    *grids = gs;
    return RK_OK;
}

void rk_checkmate_chain_grids_free(int n_classes, rk_checkmate_grid **grids) {
    if (!grids) return;
    for (int c = 0; c < n_classes; c++) rk_checkmate_grid_free(grids[c]);
    free(grids);
}

rk_status rk_checkmate_chain_options(const rk_chain *ch, const rk_checkmate_params *p, rk_option ***class_opts,
                                     int **class_n, rk_checkmate_stats *st, rk_error *err) {
    double w0 = cm_now();
    int nc = ch->n_classes;
    rk_checkmate_grid **gs = NULL;
    rk_status r = rk_checkmate_chain_grids(ch, p, &gs, err);
    if (r) return r;
    rk_option **co = calloc((size_t)nc + 1, sizeof *co);
    int *cn = calloc((size_t)nc + 1, sizeof *cn);
    rk_checkmate_grid **live = calloc((size_t)nc + 1, sizeof *live);
    if (!co || !cn || !live) {
        free(co);
        free(cn);
        free(live);
        rk_checkmate_chain_grids_free(nc, gs);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    int nl = 0;
    for (int c = 0; c < nc; c++)
        if (gs[c]) live[nl++] = gs[c];
    /* every class's whole grid, in one pool of threads */
    r = rk_checkmate_grid_solve(live, nl, NULL, err);
    free(live);
    rk_checkmate_stats tot;
    memset(&tot, 0, sizeof tot);
    int first = 1;
    for (int c = 0; c < nc && !r; c++) {
        if (!gs[c]) continue;
        r = rk_checkmate_grid_options(gs[c], &co[c], &cn[c], err);
        rk_checkmate_stats s1;
        rk_checkmate_grid_stats(gs[c], &s1);
        rk_checkmate_stats_add(&tot, &s1, first);
        first = 0;
    }
    rk_checkmate_chain_grids_free(nc, gs);
    if (r) {
        rk_checkmate_chain_options_free(nc, co, cn);
        return r;
    }
    tot.wall_s = cm_now() - w0;
    if (st) *st = tot;
    *class_opts = co;
    *class_n = cn;
    return RK_OK;
}

void rk_checkmate_chain_options_free(int n_classes, rk_option **class_opts, int *class_n) {
    if (class_opts) {
        for (int c = 0; c < n_classes; c++) {
            if (class_opts[c])
                for (int k = 0; k < (class_n ? class_n[c] : 0); k++) rk_option_free(&class_opts[c][k]);
            free(class_opts[c]);
        }
    }
    free(class_opts);
    free(class_n);
}
