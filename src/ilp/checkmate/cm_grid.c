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
    rk_milp_pseudocosts pc; /* where the ILP's search ended (ilp only) */
    int cols, rows;
    double time_s;
    rk_status st;
    rk_error err;
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

rk_status rk_checkmate_block_options(const rk_graph *g, const rk_checkmate_params *p, rk_option **opts, int *n,
                                     rk_checkmate_stats *st, rk_error *err) {
    double w0 = cm_now();
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    *opts = NULL;
    *n = 0;
    rk_checkmate_stats local;
    memset(&local, 0, sizeof local);
    int P = p->grid_peak > 0 ? p->grid_peak : 20, S = p->grid_save > 0 ? p->grid_save : 20;
    int64_t minp, maxp;
    rk_checkmate_model *m = NULL;
    rk_status r = rk_checkmate_model_build(g, &m, err);
    if (r) return r;
    double *xmin = NULL;
    r = cm_peak_range(g, m, p, &minp, &maxp, &xmin, err);
    if (r) {
        rk_checkmate_model_free(m);
        return r;
    }
    local.min_peak = minp;
    local.max_peak = maxp;
    int64_t out = g->d[g->output].size;
    budget *B = calloc((size_t)P * (size_t)S + 1, sizeof *B);
    rk_option **list = NULL;
    if (!B) {
        free(xmin);
        rk_checkmate_model_free(m);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    int nb = 0;
    for (int i = 0; i < P; i++) {
        int64_t pk = P == 1 ? maxp : minp + (int64_t)((double)(maxp - minp) * i / (P - 1));
        for (int j = 0; j < S; j++) {
            int64_t sv = S == 1 ? pk : out + (int64_t)((double)(pk - out) * j / (S - 1));
            if (sv < 0) sv = 0;
            /* skip duplicates of an existing budget */
            int dup = 0;
            for (int k = 0; k < nb && !dup; k++) dup = B[k].p == pk && B[k].s == sv;
            if (dup) continue;
            B[nb].i = i;
            B[nb].j = j;
            B[nb].p = pk;
            B[nb].s = sv;
            B[nb].owner = -1;
            nb++;
        }
    }
    /* order by (p desc, s desc): every looser budget comes first */
    int *ord = malloc((size_t)nb * sizeof(int));
    if (!ord) {
        free(xmin);
        free(B);
        rk_checkmate_model_free(m);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
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
    }
    /* the min-peak schedule seeds the incumbents (level -1, never reused as
     * an optimum, not an option) */
    int nall = nb;
    if (xmin) {
        budget *sd = &B[nb];
        sd->level = -1;
        sd->state = B_UNKNOWN;
        sd->owner = nb;
        sd->i = sd->j = -1;
        rk_op *ops = NULL;
        int nops = 0;
        double t2;
        r = cm_decode_replay(m, xmin, &ops, &nops, &sd->obj, &sd->peak, &t2, err);
        free(ops);
        if (!r) r = rk_checkmate_model_decode_option(m, xmin, sd->peak, -1, &sd->opt, &sd->obj, err);
        if (r) {
            free(xmin);
            free(ord);
            free(B);
            rk_checkmate_model_free(m);
            return r;
        }
        sd->saved = sd->opt.saved;
        sd->p = sd->peak;
        sd->s = sd->saved;
        sd->x = xmin;
        nall = nb + 1;
    }
    int nt = p->threads > 0 ? p->threads : omp_get_max_threads();
    /* A budget starts once every budget it depends on is finished (it reads
     * only those and the seed, so its result does not depend on the timing);
     * ready budgets go in (level, p desc, s desc) order.  No barrier between
     * levels: a thread never waits for budgets its next one does not need. */
    int *ndep = calloc((size_t)nb + 1, sizeof *ndep), *rank = malloc((size_t)nb * sizeof *rank);
    char *started = calloc((size_t)nb + 1, 1);
    if (!ndep || !rank || !started) {
        free(ndep);
        free(rank);
        free(started);
        free(ord);
        free(B);
        rk_checkmate_model_free(m);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int a = 0; a < nb; a++) rank[ord[a]] = a;
    for (int a = 0; a < nb; a++)
        for (int c = 0; c < nb; c++)
            if (depends(&B[c], &B[a])) ndep[a]++;
    int n_done = 0, failed = 0;
    omp_lock_t sched; /* this grid's own lock: no global named critical */
    omp_init_lock(&sched);
#pragma omp parallel num_threads(nt)
    for (;;) {
        int pick = -1, finish = 0;
        omp_set_lock(&sched);
        if (n_done == nb || failed) {
            finish = 1;
        } else {
            for (int a = 0; a < nb; a++) {
                if (started[a] || ndep[a] > 0) continue;
                if (pick < 0 || B[a].level < B[pick].level || (B[a].level == B[pick].level && rank[a] < rank[pick]))
                    pick = a;
            }
            if (pick >= 0) started[pick] = 1;
        }
        omp_unset_lock(&sched);
        if (finish) break;
        if (pick < 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
            continue;
        }
        solve_one(m, p, B, nall, pick);
        omp_set_lock(&sched);
        n_done++;
        if (B[pick].st) failed = 1;
        for (int a = 0; a < nb; a++)
            if (depends(&B[pick], &B[a])) ndep[a]--;
        omp_unset_lock(&sched);
    }
    omp_destroy_lock(&sched);
    for (int a = 0; a < nb && !r; a++)
        if (B[ord[a]].st) {
            *err = B[ord[a]].err;
            r = B[ord[a]].st;
        }
    free(ndep);
    free(rank);
    free(started);
    free(ord);
    /* stats and options */
    int nsol = 0;
    if (!r) {
        list = malloc((size_t)(nb + 1) * sizeof *list);
        if (!list) r = rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int a = 0; a < nb && !r; a++) {
        budget *b = &B[a];
        local.n_budgets++;
        if (b->ilp) {
            local.n_ilps++;
            local.sum_cols += b->cols;
            local.sum_rows += b->rows;
            if (b->cols > local.max_cols) local.max_cols = b->cols;
            if (b->rows > local.max_rows) local.max_rows = b->rows;
            local.solve_time_s += b->time_s;
        }
        if (b->state == B_INF) local.n_infeasible++;
        if (b->state == B_TL || (b->ilp && b->state == B_UNKNOWN)) local.n_timeout++;
        if (!b->ilp && b->state == B_OPT) local.n_reused++;
        if (b->owner == a && b->x) list[nsol++] = &b->opt;
    }
    rk_option *res = NULL;
    int nres = 0;
    if (!r) {
        qsort(list, (size_t)nsol, sizeof *list, cmp_opt);
        res = calloc((size_t)nsol + 1, sizeof *res);
        if (!res) r = rk_fail(err, RK_ENOMEM, "out of memory");
        for (int a = 0; a < nsol && !r; a++) {
            if (nres > 0 && cmp_opt(&list[a], &list[a - 1]) == 0) continue;
            if (rk_option_copy(&res[nres], list[a])) r = rk_fail(err, RK_ENOMEM, "out of memory");
            else nres++;
        }
        if (r) {
            for (int a = 0; a < nres; a++) rk_option_free(&res[a]);
            free(res);
            res = NULL;
            nres = 0;
        }
    }
    free(list);
    for (int a = 0; a < nall; a++) {
        free(B[a].x);
        rk_milp_pseudocosts_free(&B[a].pc);
        rk_option_free(&B[a].opt);
    }
    free(B);
    rk_checkmate_model_free(m);
    if (r) return r;
    local.n_options = nres;
    local.wall_s = cm_now() - w0;
    if (st) *st = local;
    *opts = res;
    *n = nres;
    return RK_OK;
}

rk_status rk_checkmate_chain_options(const rk_chain *ch, const rk_checkmate_params *p, rk_option ***class_opts,
                                     int **class_n, rk_checkmate_stats *st, rk_error *err) {
    double w0 = cm_now();
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    int nc = ch->n_classes;
    rk_option **co = calloc((size_t)nc + 1, sizeof *co);
    int *cn = calloc((size_t)nc + 1, sizeof *cn);
    if (!co || !cn) {
        free(co);
        free(cn);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    rk_checkmate_stats tot;
    memset(&tot, 0, sizeof tot);
    rk_status r = RK_OK;
    for (int c = 0; c < nc && !r; c++) {
        int used = 0;
        for (int k = 0; k < ch->n_blocks && !used; k++) used = ch->blocks[k].cls == c;
        if (!used) continue;
        rk_checkmate_params pc = *p;
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s_c%d", p->export_prefix ? p->export_prefix : "class", c);
        pc.export_prefix = prefix;
        rk_checkmate_stats s1;
        r = rk_checkmate_block_options(&ch->classes[c], &pc, &co[c], &cn[c], &s1, err);
        if (r) {
            char buf[sizeof err->msg];
            snprintf(buf, sizeof buf, "class %d: %.900s", c, err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", buf);
            break;
        }
        tot.n_budgets += s1.n_budgets;
        tot.n_ilps += s1.n_ilps;
        tot.n_reused += s1.n_reused;
        tot.n_infeasible += s1.n_infeasible;
        tot.n_timeout += s1.n_timeout;
        tot.n_options += s1.n_options;
        if (s1.max_cols > tot.max_cols) tot.max_cols = s1.max_cols;
        if (s1.max_rows > tot.max_rows) tot.max_rows = s1.max_rows;
        tot.sum_cols += s1.sum_cols;
        tot.sum_rows += s1.sum_rows;
        tot.solve_time_s += s1.solve_time_s;
        if (c == 0 || s1.min_peak < tot.min_peak) tot.min_peak = s1.min_peak;
        if (s1.max_peak > tot.max_peak) tot.max_peak = s1.max_peak;
    }
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
