/* solve.c — the solver pipeline on a chain: options, DP or baseline, plan
 * reconstruction, replay by the simulator and the checks on it. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_solve.h"

struct rk_solver {
    const rk_chain *ch;
    rk_solve_params p;
    rk_dp_options opts;
    rk_dp_costs costs;
    int have_costs;
    rk_solver_info info;
    /* checkmate: the schedules returned at earlier budgets (each fits every
     * budget >= its peak), and the greedy's least peak (computed once) */
    int n_known, cap_known;
    rk_schedule *known;
    int64_t greedy_min_peak; /* 0: not computed yet, -1: none */
    /* rockmate with the grid solved in part: each used class's grid (NULL
     * for the others, and when the grid is solved whole) */
    rk_checkmate_grid **grids;
    double box_start; /* rk_checkmate_clock() at rk_solver_new */
    int n_solved;     /* rk_solver_solve calls so far */
    int64_t free_asap_peak;  /* 0: not computed yet */
    /* rockmate: the used classes that get no rk-Checkmate options (too
     * large for its model): they get segmented options instead */
    char *segmented;
};

/* The segmented options of every class flagged in s->segmented, into o. */
static rk_status add_segmented(rk_solver *s, rk_dp_options *o, int log, rk_error *err) {
    if (!s->segmented) return RK_OK;
    for (int c = 0; c < s->ch->n_classes; c++) {
        if (!s->segmented[c]) continue;
        int n = 0;
        rk_status r = rk_dp_options_add_segments(s->ch, o, c, &n, err);
        if (r) return r;
        if (log)
            rk_log_printf(&s->p.cm.log, RK_LOG_INFO,
                          "rockmate: class %d: %d segmented options (checkpointing inside the block: no "
                          "rk-Checkmate options)", c, n);
    }
    return RK_OK;
}

static const char *algo_names[] = {"rockmate", "rotor", "sqrt", "none", "recompute-all", "checkmate"};

const char *rk_solve_algo_name(rk_solve_algo a) {
    return (a >= 0 && a <= RK_SOLVE_CHECKMATE) ? algo_names[a] : "?";
}

int rk_solve_algo_parse(const char *name) {
    for (int i = 0; i <= RK_SOLVE_CHECKMATE; i++)
        if (!strcmp(name, algo_names[i])) return i;
    if (!strcmp(name, "keep-all")) return RK_SOLVE_NONE;
    return -1;
}

void rk_solve_params_default(rk_solve_params *p) {
    memset(p, 0, sizeof *p);
    p->algo = RK_SOLVE_ROCKMATE;
    rk_dp_params_default(&p->dp);
    rk_checkmate_params_default(&p->cm);
    p->checkmate_options = 1;
    p->grid_work = 250000;
    p->grid_node_cap = 10;
    p->grid_greedy = 1;
    p->grid_node_rows = 2000;
    p->grid_ilp_max_cols = 20000;
    p->grid_time_box = 0;
    p->whole_graph_time = 4;
    p->whole_graph_max_nodes = 400;
    p->whole_graph_greedy_max_nodes = 1000;
    p->whole_graph_beside_plan = 1;
}

static rk_dp_algo dp_algo_of(rk_solve_algo a) {
    switch (a) {
    case RK_SOLVE_ROCKMATE: return RK_DP_ROCKMATE;
    case RK_SOLVE_ROTOR: return RK_DP_ROTOR;
    case RK_SOLVE_SQRT: return RK_DP_SQRT;
    case RK_SOLVE_NONE: return RK_DP_KEEP_ALL;
    case RK_SOLVE_RECOMPUTE_ALL: return RK_DP_RECOMPUTE_ALL;
    default: return RK_DP_KEEP_ALL;
    }
}

/* info.cm: the grids' counters so far. */
static rk_status grid_stats(rk_solver *s, rk_error *err) {
    (void)err;
    memset(&s->info.cm, 0, sizeof s->info.cm);
    int first = 1;
    double wall = 0;
    for (int c = 0; c < s->ch->n_classes; c++) {
        if (!s->grids[c]) continue;
        rk_checkmate_stats s1;
        rk_checkmate_grid_stats(s->grids[c], &s1);
        rk_checkmate_stats_add(&s->info.cm, &s1, first);
        first = 0;
        wall += s1.wall_s;
    }
    s->info.cm.wall_s = wall;
    return RK_OK;
}

/* The DP's options and costs again: the built-in options and every grid's
 * options so far. */
static rk_status rebuild_options(rk_solver *s, rk_error *err) {
    const rk_chain *ch = s->ch;
    rk_dp_options o;
    rk_status r = rk_dp_options_default(ch, &o, err);
    if (!r) r = add_segmented(s, &o, 0, err);
    if (r) {
        rk_dp_options_free(&o);
        return r;
    }
    for (int c = 0; c < ch->n_classes && !r; c++) {
        if (!s->grids[c]) continue;
        rk_option *co = NULL;
        int cn = 0;
        r = rk_checkmate_grid_options(s->grids[c], &co, &cn, err);
        for (int i = 0; i < cn && !r; i++) r = rk_dp_options_add(&o, c, &co[i], err);
        for (int i = 0; i < cn; i++) rk_option_free(&co[i]);
        free(co);
    }
    rk_dp_costs cst;
    if (!r) r = rk_dp_costs_build(ch, &o, &cst, err);
    if (r) {
        rk_dp_options_free(&o);
        return r;
    }
    if (s->have_costs) rk_dp_costs_free(&s->costs);
    rk_dp_options_free(&s->opts);
    s->opts = o;
    s->costs = cst;
    s->have_costs = 1;
    s->info.n_options = 0;
    for (int c = 0; c < s->opts.n_classes; c++) s->info.n_options += s->opts.classes[c].n_options;
    return grid_stats(s, err);
}

/* The options rk-Rotor uses at `budget` (at the smallest budget it can
 * reach when none fits): used[c][o] = 1 for option o of class c. */
static rk_status dp_used_options(rk_solver *s, int64_t budget, char **used, rk_error *err) {
    rk_dp_plan plan;
    rk_dp_result dres;
    memset(&plan, 0, sizeof plan);
    rk_status r = rk_dp_solve(&s->costs, RK_DP_ROCKMATE, budget, &s->p.dp, &plan, &dres, err);
    if (!r && !dres.feasible) {
        int64_t mb = -1;
        rk_dp_plan_free(&plan);
        memset(&plan, 0, sizeof plan);
        r = rk_dp_algo_min_budget(&s->costs, RK_DP_ROCKMATE, &s->p.dp, &mb, err);
        if (!r && mb > 0) r = rk_dp_solve(&s->costs, RK_DP_ROCKMATE, mb, &s->p.dp, &plan, &dres, err);
        else dres.feasible = 0;
    }
    rk_schedule sch;
    rk_schedule_init(&sch);
    if (!r && dres.feasible) r = rk_dp_plan_build(s->ch, &s->opts, &s->costs, &plan, &sch, err);
    rk_dp_plan_free(&plan);
    for (int i = 0; i < sch.n_ops && !r; i++) {
        const rk_op *op = &sch.ops[i];
        if (op->kind != RK_OP_MARK || op->option <= 0) continue;
        int c = s->ch->blocks[op->block].cls;
        if (op->option < s->opts.classes[c].n_options) used[c][op->option] = 1;
    }
    rk_schedule_free(&sch);
    return r;
}

/* The node limit of every ILP of a grid solved in part: grid_node_cap, or
 * the ILPs' own cm.node_limit when that is smaller (<= 0: none). */
static long grid_node_limit(const rk_solve_params *p) {
    long lim = p->grid_node_cap > 0 ? p->grid_node_cap : 0;
    if (p->cm.node_limit > 0 && (lim <= 0 || p->cm.node_limit < lim)) lim = p->cm.node_limit;
    return lim;
}

/* The work box within a round: when the round's points, at the average
 * work of an ILP of their grid so far (its min-peak ILP included), would
 * take more than `left`, each grid keeps that share of its points (rounded
 * down: none when one point would take more than that share), the loosest.
 * *none_left: no grid keeps a point.  Work and counts come from the ILPs'
 * simplex iterations, never from the clock: the same points for any number
 * of threads. */
static rk_status trim_round(rk_checkmate_grid **live, int nl, char **wl, long left, int *none_left, rk_error *err) {
    double est = 0;
    int P = 0, S = 0, total = 0;
    for (int q = 0; q < nl; q++) {
        rk_checkmate_stats st;
        rk_checkmate_grid_stats(live[q], &st);
        rk_checkmate_grid_size(live[q], &P, &S);
        int n = 0;
        for (int k = 0; k < P * S; k++) n += wl[q][k] != 0;
        total += n;
        if (st.n_work_ilps > 0) est += (double)n * (double)st.work / st.n_work_ilps;
    }
    *none_left = total == 0;
    if (est <= (double)left) return RK_OK;
    double share = left > 0 ? (double)left / est : 0;
    *none_left = 1;
    for (int q = 0; q < nl; q++) {
        rk_checkmate_stats st;
        rk_checkmate_grid_stats(live[q], &st);
        rk_checkmate_grid_size(live[q], &P, &S);
        int n = 0;
        for (int k = 0; k < P * S; k++) n += wl[q][k] != 0;
        int keep = st.n_work_ilps == 0 || st.work == 0 ? n /* tiny ILPs: no trim */ : (int)floor(n * share);
        if (keep < n && rk_checkmate_grid_want_trim(live[q], wl[q], keep) < 0)
            return rk_fail(err, RK_ENOMEM, "out of memory");
        if (keep > 0 && n > 0) *none_left = 0;
    }
    return RK_OK;
}

/* The grid solved in part, for `budget` (docs/ilp.md): a coarse grid of
 * every class first (every CM_COARSE-th line, both corners), then a pattern
 * search on the grid lines around the options rk-Rotor uses at this budget
 * (at its smallest reachable budget when none fits): the unsolved points at
 * offsets {-h, 0, h}^2 of each used option's points (for a built-in option,
 * of the grid point of its peak and saved size) are solved and the DP is
 * run again; when that adds nothing, h is halved, down to 1.  Points solved
 * for earlier budgets are kept.  The work box (grid_work, in B&B nodes)
 * is checked between rounds and split evenly over a round's points as
 * their node limit: no timing enters (unless the optional wall-clock box
 * grid_time_box or an ILP's time limit is reached), so the points solved,
 * and the options, are the same for any number of threads. */
static rk_status refine_grids(rk_solver *s, int64_t budget, rk_error *err) {
    const rk_chain *ch = s->ch;
    int nc = ch->n_classes, nl = 0, P = 0, S = 0;
    rk_checkmate_grid **live = calloc((size_t)nc + 1, sizeof *live);
    char **want = calloc((size_t)nc + 1, sizeof *want), **wl = calloc((size_t)nc + 1, sizeof *wl);
    char **used = calloc((size_t)nc + 1, sizeof *used);
    rk_status r = (live && want && wl && used) ? RK_OK : rk_fail(err, RK_ENOMEM, "out of memory");
    for (int c = 0; c < nc && !r; c++) {
        if (!s->grids[c]) continue;
        rk_checkmate_grid_size(s->grids[c], &P, &S);
        want[c] = calloc((size_t)P * (size_t)S, 1);
        if (!want[c]) r = rk_fail(err, RK_ENOMEM, "out of memory");
        live[nl] = s->grids[c];
        wl[nl++] = want[c];
    }
    /* the time box: from rk_solver_new for the first budget (its min-peak
     * ILPs count), from now for later ones */
    double deadline = 0;
    if (s->p.grid_time_box > 0)
        deadline = (s->n_solved == 0 ? s->box_start : rk_checkmate_clock()) + s->p.grid_time_box;
    for (int c = 0; c < nc; c++)
        if (s->grids[c]) rk_checkmate_grid_set_deadline(s->grids[c], deadline);
    int coarse = (P < S ? P : S) / 5;
    if (coarse < 1) coarse = 1;
    int n = 0;
    for (int c = 0; c < nc && !r; c++)
        if (s->grids[c]) n += rk_checkmate_grid_want_coarse(s->grids[c], coarse, want[c]);
    int h = coarse / 2 > 0 ? coarse / 2 : 1;
    /* the work box: from 0 for the first budget (its min-peak ILPs count),
     * from the work done so far for later ones, which get a quarter of it
     * (they start from every point solved so far; a caller probing many
     * budgets, e.g. a bisection for the smallest one that fits, would
     * otherwise pay the whole box at each) */
    long box = s->p.grid_work, work0 = 0;
    if (!r) r = grid_stats(s, err);
    if (!r && s->n_solved > 0) {
        work0 = s->info.cm.work;
        if (box > 0) box = box / 4 > 0 ? box / 4 : 1;
        /* and all budgets together at most 1.5 times the box: past it, later
         * budgets use the options found so far */
        if (box > 0 && work0 >= s->p.grid_work + s->p.grid_work / 2) n = 0;
    }
    if (n == 0 && s->n_solved > 0 && box > 0 && work0 >= s->p.grid_work + s->p.grid_work / 2) {
        if (s->p.cm.verbose)
            rk_log_printf(&s->p.cm.log, RK_LOG_INFO,
                          "rockmate: budget %lld: the solver's work (%ld) has reached 1.5 times the box; no new grid "
                          "point", (long long)budget, work0);
        goto out;
    }
    for (int round = 0; !r; round++) {
        long work = s->info.cm.work - work0;
        if (box > 0 && work >= box && s->have_costs && round > 0) {
            if (s->p.cm.verbose)
                rk_log_printf(&s->p.cm.log, RK_LOG_INFO,
                              "rockmate: budget %lld: the grid's work box (%ld) is used up (%ld); the search stops "
                              "with the options found", (long long)budget, box, work);
            break;
        }
        if (deadline > 0 && rk_checkmate_clock() >= deadline && s->have_costs && round > 0) {
            if (s->p.cm.verbose)
                rk_log_printf(&s->p.cm.log, RK_LOG_INFO,
                              "rockmate: budget %lld: the grid's time box (%g s) is over; the search stops with the "
                              "options found", (long long)budget, s->p.grid_time_box);
            break;
        }
        if (n > 0) {
            if (box > 0) {
                int none_left = 0;
                r = trim_round(live, nl, wl, box - work, &none_left, err);
                if (!r && none_left && round > 0 && s->have_costs) {
                    /* not one point of the round fits what is left of the box */
                    if (s->p.cm.verbose)
                        rk_log_printf(&s->p.cm.log, RK_LOG_INFO,
                                      "rockmate: budget %lld: what is left of the grid's work box (%ld) is less than "
                                      "one more point would take; the search stops with the options found",
                                      (long long)budget, box - work);
                    break;
                }
            }
            if (!r) r = rk_checkmate_grid_solve(live, nl, wl, err);
            for (int c = 0; c < nc && want[c]; c++) memset(want[c], 0, (size_t)P * (size_t)S);
            if (!r) r = rebuild_options(s, err);
        } else if (round > 0 && s->have_costs) {
            if (h == 1) break;
            h /= 2;
        }
        if (!r && !s->have_costs) r = rebuild_options(s, err);
        if (r) break;
        for (int c = 0; c < nc && !r; c++) {
            free(used[c]);
            used[c] = calloc((size_t)s->opts.classes[c].n_options + 1, 1);
            if (!used[c]) r = rk_fail(err, RK_ENOMEM, "out of memory");
        }
        if (!r) r = dp_used_options(s, budget, used, err);
        n = 0;
        for (int c = 0; c < nc && !r; c++) {
            if (!s->grids[c]) continue;
            for (int o = 0; o < s->opts.classes[c].n_options; o++) {
                if (!used[c][o]) continue;
                const rk_option *op = &s->opts.classes[c].options[o];
                int k = rk_checkmate_grid_want_near(s->grids[c], op, h, want[c]);
                /* a built-in option (no grid point found it): around the
                 * grid point of its own peak and saved size */
                if (k < 0)
                    k = rk_checkmate_grid_want_budget(s->grids[c], op->fwd_peak > op->bwd_peak ? op->fwd_peak : op->bwd_peak,
                                                      op->saved, h, want[c]);
                n += k;
            }
        }
        if (s->p.cm.verbose)
            rk_log_printf(&s->p.cm.log, RK_LOG_INFO, "rockmate: budget %lld: grid round %d, step %d: %d more points",
                          (long long)budget, round, h, n);
    }
out:
    for (int c = 0; c < nc; c++) {
        if (want) free(want[c]);
        if (used) free(used[c]);
    }
    free(want);
    free(wl);
    free(used);
    free(live);
    return r;
}

/* s->segmented: the used classes without a grid (gs, the grids solved in
 * part) or without options (cn, the grids solved whole). */
static rk_status flag_segmented(rk_solver *s, const int *cn, rk_error *err) {
    const rk_chain *ch = s->ch;
    s->segmented = calloc((size_t)ch->n_classes + 1, 1);
    if (!s->segmented) return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int k = 0; k < ch->n_blocks; k++) {
        int c = ch->blocks[k].cls;
        s->segmented[c] = cn ? cn[c] == 0 : !s->grids || !s->grids[c];
    }
    return RK_OK;
}

rk_status rk_solver_new(const rk_chain *ch, const rk_solve_params *p, rk_solver **out, rk_error *err) {
    *out = NULL;
    rk_status r = rk_chain_validate(ch, "chain", err);
    if (r) return r;
    rk_solver *s = calloc(1, sizeof *s);
    if (!s) return rk_fail(err, RK_ENOMEM, "out of memory");
    s->ch = ch;
    s->p = *p;
    double t0 = omp_get_wtime();
    /* checkmate: the built-in options (none, keep-all, asap) only, for the
     * cheap rk-Rotor / sqrt(n) / recompute-all schedules that seed its MILP */
    if (p->algo == RK_SOLVE_ROCKMATE || p->algo == RK_SOLVE_CHECKMATE) r = rk_dp_options_default(ch, &s->opts, err);
    else r = rk_dp_options_rotor(ch, &s->opts, err);
    if (r) goto fail;
    if (p->algo == RK_SOLVE_ROCKMATE && p->checkmate_options && !p->full_grid) {
        /* the grids' points are solved by rk_solver_solve, as the budgets
         * ask for them (refine_grids) */
        rk_checkmate_params pc = p->cm;
        /* greedy schedules on the coarse grid's M_peak lines, and no ILP on
         * the largest blocks (docs/grid.md) */
        if (p->grid_greedy) {
            int step = (pc.grid_peak < pc.grid_save ? pc.grid_peak : pc.grid_save) / 5;
            pc.greedy_step = step > 0 ? step : 1;
        }
        if (p->grid_ilp_max_cols > 0) pc.ilp_max_cols = p->grid_ilp_max_cols;
        pc.node_limit_rows = p->grid_node_rows;
        /* every ILP of the grids, the min-peak ones included (scaled by
         * their rows): on a large block (U-Net's middle, DenseNet's first
         * dense block: 12 000 - 14 000 rows) the proof of the least peak took
         * 11 s of B&B after a root whose bound is already the optimum;
         * stopped, the grid's M_peak range starts at the best schedule found
         * instead (within 0.6 % and 5.4 % of the least peak there,
         * docs/grid.md) */
        pc.node_limit = grid_node_limit(p);
        s->box_start = rk_checkmate_clock();
        if (p->grid_time_box > 0) pc.deadline = s->box_start + p->grid_time_box;
        r = rk_checkmate_chain_grids(ch, &pc, &s->grids, err);
        if (r) goto fail;
        r = flag_segmented(s, NULL, err);
        if (r) goto fail;
        r = grid_stats(s, err);
        if (r) goto fail;
    } else if (p->algo == RK_SOLVE_ROCKMATE && p->checkmate_options) {
        rk_option **co = NULL;
        int *cn = NULL;
        r = rk_checkmate_chain_options(ch, &p->cm, &co, &cn, &s->info.cm, err);
        if (r) goto fail;
        r = flag_segmented(s, cn, err);
        if (r) {
            rk_checkmate_chain_options_free(ch->n_classes, co, cn);
            goto fail;
        }
        for (int c = 0; c < ch->n_classes && !r; c++)
            for (int i = 0; i < cn[c] && !r; i++) r = rk_dp_options_add(&s->opts, c, &co[c][i], err);
        rk_checkmate_chain_options_free(ch->n_classes, co, cn);
        if (r) goto fail;
    }
    r = add_segmented(s, &s->opts, 1, err);
    if (r) goto fail;
    r = rk_dp_costs_build(ch, &s->opts, &s->costs, err);
    if (r) goto fail;
    s->have_costs = 1;
    if (p->algo != RK_SOLVE_CHECKMATE)
        for (int c = 0; c < s->opts.n_classes; c++) s->info.n_options += s->opts.classes[c].n_options;
    s->info.options_time_s = omp_get_wtime() - t0;
    *out = s;
    return RK_OK;
fail:
    rk_solver_free(s);
    return r;
}

void rk_solver_free(rk_solver *s) {
    if (!s) return;
    for (int i = 0; i < s->n_known; i++) rk_schedule_free(&s->known[i]);
    free(s->known);
    if (s->have_costs) rk_dp_costs_free(&s->costs);
    rk_dp_options_free(&s->opts);
    rk_checkmate_chain_grids_free(s->ch->n_classes, s->grids);
    free(s->segmented);
    free(s);
}

const rk_solver_info *rk_solver_get_info(const rk_solver *s) { return &s->info; }

void rk_solver_set_whole_graph_time(rk_solver *s, double seconds) { s->p.whole_graph_time = seconds; }

/* The DP algorithms whose schedules seed whole-graph Checkmate. */
static const rk_dp_algo cm_seed_algos[] = {RK_DP_ROCKMATE, RK_DP_SQRT, RK_DP_RECOMPUTE_ALL, RK_DP_KEEP_ALL};
#define N_CM_SEED_ALGOS ((int)(sizeof cm_seed_algos / sizeof cm_seed_algos[0]))

/* The schedule without recomputation that holds what autograd holds
 * (free-asap: each data freed after its last real use, across blocks) and
 * its simulated peak, computed once per solver. */
static rk_status free_asap_peak(rk_solver *s, int64_t *peak, rk_error *err) {
    if (s->free_asap_peak <= 0) {
        rk_schedule fa;
        rk_status r = rk_schedule_free_asap(s->ch, &fa, err);
        if (r) return r;
        rk_sim_result sr;
        r = rk_simulate(s->ch, &fa, &sr, err);
        rk_schedule_free(&fa);
        if (r) return r;
        s->free_asap_peak = sr.peak;
    }
    *peak = s->free_asap_peak;
    return RK_OK;
}

/* keep-all (none), rockmate and rotor take the free-asap schedule whenever it
 * fits: it runs every node once (the least time) and holds no more than
 * PyTorch's own step, where the DP's keep-everything plan keeps each block's
 * input until its backward. */
static int uses_free_asap(rk_solve_algo a) {
    return a == RK_SOLVE_NONE || a == RK_SOLVE_ROCKMATE || a == RK_SOLVE_ROTOR;
}

rk_status rk_solver_min_budget(rk_solver *s, int64_t *out, rk_error *err) {
    if (uses_free_asap(s->p.algo)) {
        int64_t fa;
        rk_status r = free_asap_peak(s, &fa, err);
        if (r) return r;
        if (s->p.algo == RK_SOLVE_NONE) {
            *out = fa;
            return RK_OK;
        }
        if ((r = rk_dp_algo_min_budget(&s->costs, dp_algo_of(s->p.algo), &s->p.dp, out, err))) return r;
        if (fa < *out) *out = fa;
        return RK_OK;
    }
    if (s->p.algo == RK_SOLVE_CHECKMATE) {
        /* the smallest peak of a schedule rkmate knows: free-asap, the DP
         * schedules that seed the MILP, the greedy rematerialization, and
         * the schedules returned at earlier budgets */
        int64_t best;
        rk_status r = free_asap_peak(s, &best, err);
        if (r) return r;
        for (int a = 0; a < N_CM_SEED_ALGOS; a++) {
            int64_t mb;
            rk_error e2;
            if (rk_dp_algo_min_budget(&s->costs, cm_seed_algos[a], &s->p.dp, &mb, &e2) == RK_OK && mb > 0 && mb < best)
                best = mb;
        }
        if (s->greedy_min_peak == 0) {
            rk_schedule g;
            rk_schedule_init(&g);
            rk_error e2;
            rk_sim_result sr;
            s->greedy_min_peak = -1;
            if (rk_checkmate_chain_greedy(s->ch, 0, &g, &e2) == RK_OK && rk_simulate(s->ch, &g, &sr, &e2) == RK_OK)
                s->greedy_min_peak = sr.peak;
            rk_schedule_free(&g);
        }
        if (s->greedy_min_peak > 0 && s->greedy_min_peak < best) best = s->greedy_min_peak;
        for (int i = 0; i < s->n_known; i++)
            if (s->known[i].predicted_peak > 0 && s->known[i].predicted_peak < best) best = s->known[i].predicted_peak;
        *out = best;
        return RK_OK;
    }
    return rk_dp_algo_min_budget(&s->costs, dp_algo_of(s->p.algo), &s->p.dp, out, err);
}

rk_status rk_solver_min_budget_bound(rk_solver *s, int64_t *out, rk_error *err) {
    /* every node runs at least once, and when it runs its real uses, its
     * outputs and its (step) overhead are in memory at once */
    rk_chain_index ix;
    rk_status r = rk_chain_index_build(s->ch, &ix, err);
    if (r) return r;
    char *mark = calloc((size_t)ix.n_d + 1, 1);
    int *list = malloc((size_t)(ix.n_d + 1) * sizeof(int));
    if (!mark || !list) {
        free(mark);
        free(list);
        rk_chain_index_free(&ix);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    int64_t best = 0;
    int L = s->ch->n_blocks;
    for (int k = 0; k < L; k++) {
        const rk_graph *g = &s->ch->classes[s->ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++) {
            if (g->c[c].kind == RK_C_LOSS && k != L - 1) continue; /* absent at chain level */
            int64_t m = 0, outs = 0; /* real uses + outputs + the simulator's step overhead */
            int nl = 0;
            for (int q = 0; q < g->c[c].n_uses + g->c[c].n_outs; q++) {
                int local;
                if (q < g->c[c].n_uses) {
                    if (g->c[c].uses[q].kind == RK_EDGE_FAKE) continue;
                    local = g->c[c].uses[q].data;
                } else local = g->c[c].outs[q - g->c[c].n_uses];
                int d = ix.d_map[ix.d_base[k] + local];
                if (mark[d]) continue;
                mark[d] = 1;
                list[nl++] = d;
                if (q < g->c[c].n_uses) m += ix.d_size[d];
                else outs += ix.d_size[d];
            }
            for (int i = 0; i < nl; i++) mark[list[i]] = 0;
            m += outs + rk_cnode_step_overhead(g, c); /* >= m: it offsets only outputs */
            if (m > best) best = m;
        }
    }
    free(mark);
    free(list);
    rk_chain_index_free(&ix);
    *out = best;
    return RK_OK;
}

/* Checkmate at one budget: the seeds (the DP's schedules at this budget,
 * free-asap, the schedules returned at earlier budgets that fit) and the
 * MILP; the returned schedule is remembered for later budgets. */
static rk_status solve_checkmate(rk_solver *s, int64_t budget, const rk_checkmate_params *cm, rk_schedule *sched,
                                 rk_solve_result *res, rk_error *err) {
    int cap = N_CM_SEED_ALGOS + 1 + s->n_known, n = 0;
    rk_schedule *seeds = calloc((size_t)cap, sizeof *seeds);
    if (!seeds) return rk_fail(err, RK_ENOMEM, "out of memory");
    rk_status r = RK_OK;
    rk_error e2;
    for (int a = 0; a < N_CM_SEED_ALGOS; a++) {
        rk_dp_plan plan;
        rk_dp_result dres;
        memset(&plan, 0, sizeof plan);
        rk_schedule_init(&seeds[n]);
        if (rk_dp_solve(&s->costs, cm_seed_algos[a], budget, &s->p.dp, &plan, &dres, &e2) == RK_OK && dres.feasible &&
            rk_dp_plan_build(s->ch, &s->opts, &s->costs, &plan, &seeds[n], &e2) == RK_OK)
            n++;
        else
            rk_schedule_free(&seeds[n]);
        rk_dp_plan_free(&plan);
    }
    rk_schedule_init(&seeds[n]);
    if (rk_schedule_free_asap(s->ch, &seeds[n], &e2) == RK_OK) n++;
    for (int i = 0; i < s->n_known && !r; i++) {
        if (s->known[i].predicted_peak > budget) continue;
        rk_schedule_init(&seeds[n]);
        if (rk_schedule_append(&seeds[n], &s->known[i])) r = rk_fail(err, RK_ENOMEM, "out of memory");
        else n++;
    }
    rk_checkmate_chain_info info;
    if (!r) r = rk_checkmate_chain_solve(s->ch, budget, cm, seeds, n, sched, &info, err);
    for (int i = 0; i < n; i++) rk_schedule_free(&seeds[i]);
    free(seeds);
    if (r) return r;
    res->checkmate_gap = info.gap;
    res->checkmate_bound = info.bound;
    res->checkmate_optimal = info.optimal;
    res->checkmate_source = info.source;
    /* remember it (a copy) for later budgets */
    if (s->n_known == s->cap_known) {
        int nc = s->cap_known ? 2 * s->cap_known : 4;
        rk_schedule *k = realloc(s->known, (size_t)nc * sizeof *k);
        if (!k) return rk_fail(err, RK_ENOMEM, "out of memory");
        s->known = k;
        s->cap_known = nc;
    }
    rk_schedule_init(&s->known[s->n_known]);
    if (rk_schedule_append(&s->known[s->n_known], sched)) return rk_fail(err, RK_ENOMEM, "out of memory");
    s->known[s->n_known].predicted_peak = sched->predicted_peak;
    s->known[s->n_known].predicted_time = sched->predicted_time;
    s->n_known++;
    return RK_OK;
}

/* The chain's compute nodes, all blocks together; *most: the largest block's. */
static long chain_compute_nodes(const rk_chain *ch, long *most) {
    long n = 0;
    *most = 0;
    for (int b = 0; b < ch->n_blocks; b++) {
        long k = ch->classes[ch->blocks[b].cls].n_c;
        n += k;
        if (k > *most) *most = k;
    }
    return n;
}

/* Whether one block holds the chain: at least 9 in 10 of its compute nodes
 * (a scalar op after the loss, `loss / accum_steps` or `loss.sum()`, is a
 * block of its own; unseen14's mixup ResNet, one block of 211 nodes and one
 * of 2, went without the one-block treatment: +333 % at 50 % where
 * whole-graph Checkmate has +23 %). */
static int one_block_holds_chain(const rk_chain *ch) {
    long most, n = chain_compute_nodes(ch, &most);
    return n > 0 && 10 * most >= 9 * n;
}

/* Whether rockmate tries whole-graph Checkmate where no block plan fits,
 * and how: 1 with its MILP (the chain's compute nodes, all blocks together,
 * within whole_graph_max_nodes), 2 its greedy rematerialization only (a
 * chain one block holds, within whole_graph_greedy_max_nodes: its plan is
 * that block's greedy options), 0 not; and only at a budget no lower than the
 * proven floor (below it nothing fits). */
static int whole_graph_applies(rk_solver *s, int64_t budget) {
    if (s->p.algo != RK_SOLVE_ROCKMATE || !(s->p.whole_graph_time > 0)) return 0;
    long most, n = chain_compute_nodes(s->ch, &most);
    int mode = n <= s->p.whole_graph_max_nodes                                    ? 1
               : one_block_holds_chain(s->ch) && n <= s->p.whole_graph_greedy_max_nodes ? 2
                                                                                  : 0;
    if (!mode) return 0;
    int64_t lb;
    rk_error e2;
    return rk_solver_min_budget_bound(s, &lb, &e2) == RK_OK && budget >= lb ? mode : 0;
}

/* How much longer than whole_graph_time whole-graph Checkmate may search
 * while it has no schedule within the budget. */
#define WHOLE_GRAPH_NO_SCHEDULE_FACTOR 4

/* Rockmate's last resort at a budget below its block plans' floor:
 * whole-graph Checkmate within p.whole_graph_time.  RK_EINFEASIBLE when it
 * finds nothing. */
static rk_status solve_whole_graph(rk_solver *s, int64_t budget, int mode, long node_limit, double seconds,
                                   rk_schedule *sched, rk_solve_result *res, rk_error *err) {
    rk_checkmate_params cm = s->p.cm;
    cm.greedy_only = mode == 2;
    cm.time_limit = seconds;
    /* with no schedule yet, an answer late beats none: a one-block chain's
     * root LP alone can take longer than the limit (unseen12's Point
     * Transformer at 50 %: 5.5 s, its first schedule at 6 s) */
    cm.time_limit_no_schedule = WHOLE_GRAPH_NO_SCHEDULE_FACTOR * seconds;
    cm.deadline = 0;
    cm.node_limit = node_limit;
    rk_status r = solve_checkmate(s, budget, &cm, sched, res, err);
    if (r == RK_OK) res->whole_graph = 1;
    return r;
}

/* B&B nodes of whole-graph Checkmate beside the plan of a chain of several
 * blocks: its root (LP, cuts, heuristics seeded with the plan) only. */
#define WHOLE_GRAPH_BESIDE_PLAN_NODES 1
/* ... within this share of whole_graph_time (its cut rounds and sub-MIP
 * heuristics would fill all of it for little more) */
#define WHOLE_GRAPH_BESIDE_PLAN_SHARE 0.125

/* A one-block chain (or one a block holds: one_block_holds_chain): its
 * block plan comes from options solved at the grid's budgets (greedy ones
 * only for a block over grid_ilp_max_cols: unseen11's
 * wav2vec2, +820 % at 50 %), where whole-graph Checkmate solves that block
 * at the budget itself, seeded with the plan's schedule (+9.5 %, found by
 * the root's heuristics well within 4 s; the root alone takes over 100 s,
 * so a node limit would not bound it).  It gets whole_graph_time, as the
 * last resort does; its schedule replaces the plan's when cheaper.  Its
 * failures keep the plan.  A chain of several blocks within
 * whole_graph_max_nodes gets the root of that search only
 * (WHOLE_GRAPH_BESIDE_PLAN_NODES; whole_graph_time still bounds it): its
 * plan joins block options that cannot share a recomputation across a
 * boundary (a ten-block NeRF at 50 %: the plan +45.6 %, the whole graph's
 * root +21.1 % in 0.1 s; the zoo's U-Net +12.6 % -> +4.8 %), and a node
 * limit keeps the answer independent of the machine's speed where the
 * time limit is not reached.  (Mode 2, the greedy alone, only comes with a
 * chain one block holds: whole_graph_applies.) */
static rk_status whole_graph_beside_plan(rk_solver *s, int64_t budget, double plan_time, rk_schedule *sched,
                                         rk_solve_result *res, rk_error *err) {
    int held = one_block_holds_chain(s->ch);
    int mode = s->p.whole_graph_beside_plan ? whole_graph_applies(s, budget) : 0;
    if (!mode) return RK_OK;
    rk_schedule wg;
    rk_solve_result wres;
    rk_error e2;
    memset(&wres, 0, sizeof wres);
    rk_schedule_init(&wg);
    rk_status r = solve_whole_graph(s, budget, mode, held ? 0 : WHOLE_GRAPH_BESIDE_PLAN_NODES,
                                    held ? s->p.whole_graph_time : WHOLE_GRAPH_BESIDE_PLAN_SHARE * s->p.whole_graph_time,
                                    &wg, &wres, &e2);
    if (r == RK_ENOMEM) {
        rk_schedule_free(&wg);
        return rk_fail(err, r, "%s", e2.msg);
    }
    if (r != RK_OK || wg.predicted_time < 0 || !(wg.predicted_time < plan_time * (1 - 1e-9))) {
        rk_schedule_free(&wg);
        return RK_OK;
    }
    rk_schedule_free(sched);
    *sched = wg;
    res->whole_graph = 2;
    res->n_forwards = 0;
    res->checkmate_gap = wres.checkmate_gap;
    res->checkmate_bound = wres.checkmate_bound;
    res->checkmate_optimal = wres.checkmate_optimal;
    res->checkmate_source = wres.checkmate_source;
    return RK_OK;
}

rk_status rk_solver_solve(rk_solver *s, int64_t budget, rk_schedule *sched, rk_solve_result *res, rk_error *err) {
    memset(res, 0, sizeof *res);
    rk_schedule_init(sched);
    res->budget = budget;
    res->baseline_time = rk_chain_baseline_time(s->ch);
    double t0 = omp_get_wtime();
    rk_status r;
    if (budget <= 0) return rk_fail(err, RK_EINPUT, "the budget must be a positive number of bytes");
    if (s->p.algo == RK_SOLVE_CHECKMATE) {
        r = solve_checkmate(s, budget, &s->p.cm, sched, res, err);
        if (r == RK_EINFEASIBLE) {
            int64_t minb = -1, lb = -1;
            rk_error e2;
            char b1[32], b2[32], msg[sizeof err->msg];
            if (rk_solver_min_budget(s, &minb, &e2) != RK_OK || rk_solver_min_budget_bound(s, &lb, &e2) != RK_OK)
                return r;
            snprintf(msg, sizeof msg, "%.700s; the smallest budget with a known schedule is %lld bytes (%s), and no "
                     "schedule can fit in less than %lld bytes (%s, proven)", err->msg, (long long)minb,
                     rk_format_bytes(minb, b1, sizeof b1), (long long)lb, rk_format_bytes(lb, b2, sizeof b2));
            return rk_fail(err, RK_EINFEASIBLE, "%s", msg);
        }
        if (r) return r;
    } else if (uses_free_asap(s->p.algo) && (r = free_asap_peak(s, &res->predicted_peak, err)) == RK_OK &&
               (res->predicted_peak <= budget || s->p.algo == RK_SOLVE_NONE)) {
        if (res->predicted_peak > budget) {
            char b1[32], b2[32];
            return rk_fail(err, RK_EINFEASIBLE,
                           "no none schedule fits in %lld bytes (%s); the smallest budget that works is %lld bytes (%s)",
                           (long long)budget, rk_format_bytes(budget, b1, sizeof b1), (long long)res->predicted_peak,
                           rk_format_bytes(res->predicted_peak, b2, sizeof b2));
        }
        if ((r = rk_schedule_free_asap(s->ch, sched, err))) return r;
    } else {
        if (r) return r;
        if (s->grids) {
            double t1 = omp_get_wtime();
            r = refine_grids(s, budget, err);
            s->n_solved++;
            s->info.options_time_s += omp_get_wtime() - t1;
            if (r) return r;
        }
        rk_dp_plan plan;
        rk_dp_result dres;
        memset(&plan, 0, sizeof plan);
        r = rk_dp_solve(&s->costs, dp_algo_of(s->p.algo), budget, &s->p.dp, &plan, &dres, err);
        if (r) {
            rk_dp_plan_free(&plan);
            return r;
        }
        if (!dres.feasible) {
            rk_dp_plan_free(&plan);
            int mode = whole_graph_applies(s, budget);
            if (mode) {
                r = solve_whole_graph(s, budget, mode, 0, s->p.whole_graph_time, sched, res, err);
                if (r != RK_EINFEASIBLE) {
                    if (r) return r;
                    goto replay;
                }
                res->whole_graph_tried = mode;
                rk_schedule_free(sched);
                rk_schedule_init(sched);
            }
            int64_t minb = -1;
            rk_error e2;
            char b1[32], b2[32], wg[160] = "";
            if (res->whole_graph_tried == 2)
                snprintf(wg, sizeof wg, " by its block plans; whole-graph Checkmate's greedy rematerialization found "
                                        "no schedule either");
            else if (res->whole_graph_tried)
                snprintf(wg, sizeof wg, " by its block plans; whole-graph Checkmate found no schedule in %g s",
                         s->p.whole_graph_time);
            if (rk_dp_algo_min_budget(&s->costs, dp_algo_of(s->p.algo), &s->p.dp, &minb, &e2) == RK_OK)
                return rk_fail(err, RK_EINFEASIBLE,
                               "no %s schedule fits in %lld bytes (%s); the smallest budget that works is %lld bytes "
                               "(%s)%s",
                               rk_solve_algo_name(s->p.algo), (long long)budget, rk_format_bytes(budget, b1, sizeof b1),
                               (long long)minb, rk_format_bytes(minb, b2, sizeof b2), wg);
            return rk_fail(err, RK_EINFEASIBLE, "no %s schedule fits in %lld bytes%s", rk_solve_algo_name(s->p.algo),
                           (long long)budget, wg);
        }
        r = rk_dp_plan_build(s->ch, &s->opts, &s->costs, &plan, sched, err);
        rk_dp_plan_free(&plan);
        if (r) return r;
        res->n_forwards = dres.n_forwards;
        if ((r = whole_graph_beside_plan(s, budget, dres.predicted_time, sched, res, err))) return r;
    }
replay:
    rk_schedule_set_algo(sched, rk_solve_algo_name(s->p.algo));
    sched->budget = budget;
    r = rk_simulate(s->ch, sched, &res->sim, err);
    if (r) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule does not replay: %.900s", rk_solve_algo_name(s->p.algo), msg);
    }
    if (res->sim.peak > budget) {
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule's simulated peak %lld exceeds the budget %lld",
                       rk_solve_algo_name(s->p.algo), (long long)res->sim.peak, (long long)budget);
    }
    if (sched->predicted_time >= 0 &&
        fabs(sched->predicted_time - res->sim.time) > 1e-9 * fmax(1.0, fabs(res->sim.time)) + 1e-6) {
        double pt = sched->predicted_time;
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule's predicted time %.17g differs from its simulated time %.17g",
                       rk_solve_algo_name(s->p.algo), pt, res->sim.time);
    }
    if (sched->predicted_peak < 0) sched->predicted_peak = res->sim.peak;
    if (sched->predicted_time < 0) sched->predicted_time = res->sim.time;
    res->feasible = 1;
    res->predicted_peak = sched->predicted_peak;
    res->predicted_time = sched->predicted_time;
    res->overhead = res->baseline_time > 0 ? res->predicted_time / res->baseline_time - 1 : 0;
    res->solve_time_s = omp_get_wtime() - t0;
    return RK_OK;
}
