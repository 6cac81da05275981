/* cm_chain.c — whole-graph Checkmate: a chain flattened into one CD-graph
 * (the global numbering of rk_chain_index), the rk-Checkmate ILP on it under
 * one peak budget, and the mapping of its schedule back to chain-level ops
 * checked by rk_simulate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

void rk_checkmate_flat_free(rk_checkmate_flat *f) {
    if (!f) return;
    rk_graph_free(&f->g);
    free(f->c_block);
    free(f->c_local);
    free(f->d_block);
    free(f->d_local);
    memset(f, 0, sizeof *f);
}

static rk_status add_block_compute(rk_checkmate_flat *f, const rk_chain *ch, const rk_chain_index *ix, int k, int c,
                                   int *cap, rk_error *err) {
    const rk_graph *g = &ch->classes[ch->blocks[k].cls];
    const rk_cnode *cn = &g->c[c];
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", ch->blocks[k].name, cn->name);
    int fc = rk_graph_add_compute(&f->g, name, cn->kind, cn->time, cn->overhead);
    if (fc < 0) return rk_fail(err, RK_ENOMEM, "out of memory");
    if (fc >= *cap) {
        int nc = 2 * fc + 16;
        int *a = realloc(f->c_block, (size_t)nc * sizeof(int)), *b;
        if (!a) return rk_fail(err, RK_ENOMEM, "out of memory");
        f->c_block = a;
        b = realloc(f->c_local, (size_t)nc * sizeof(int));
        if (!b) return rk_fail(err, RK_ENOMEM, "out of memory");
        f->c_local = b;
        *cap = nc;
    }
    f->c_block[fc] = k;
    f->c_local[fc] = c;
    if (cn->target) rk_graph_set_target(&f->g, 1, fc, cn->target);
    for (int u = 0; u < cn->n_uses; u++)
        if (rk_graph_add_use(&f->g, fc, ix->d_map[ix->d_base[k] + cn->uses[u].data], cn->uses[u].kind))
            return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int o = 0; o < cn->n_outs; o++)
        if (rk_graph_add_out(&f->g, fc, ix->d_map[ix->d_base[k] + cn->outs[o]]))
            return rk_fail(err, RK_ENOMEM, "out of memory");
    return RK_OK;
}

rk_status rk_checkmate_flatten(const rk_chain *ch, rk_checkmate_flat *f, rk_error *err) {
    memset(f, 0, sizeof *f);
    rk_graph_init(&f->g);
    rk_chain_index ix;
    rk_status r = rk_chain_index_build(ch, &ix, err);
    if (r) return r;
    int L = ch->n_blocks;
    f->d_block = malloc((size_t)(ix.n_d + 1) * sizeof(int));
    f->d_local = malloc((size_t)(ix.n_d + 1) * sizeof(int));
    int cap = 0;
    if (!f->d_block || !f->d_local) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    char name[1024];
    for (int d = 0; d < ix.n_d; d++) {
        const rk_graph *g = &ch->classes[ch->blocks[ix.d_block[d]].cls];
        const rk_dnode *dn = &g->d[ix.d_local[d]];
        snprintf(name, sizeof name, "%s/%s", ch->blocks[ix.d_block[d]].name, dn->name);
        int fd = rk_graph_add_data(&f->g, name, dn->kind, dn->size);
        if (fd != d) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto done;
        }
        if (dn->target) rk_graph_set_target(&f->g, 0, fd, dn->target);
        f->d_block[d] = ix.d_block[d];
        f->d_local[d] = ix.d_local[d];
    }
    /* forward nodes block by block, the last loss, backward nodes in reverse */
    for (int k = 0; k < L && !r; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int i = 0; i < g->n_c && !r; i++)
            if (g->c[g->topo[i]].kind == RK_C_FWD) r = add_block_compute(f, ch, &ix, k, g->topo[i], &cap, err);
    }
    const rk_graph *gl = &ch->classes[ch->blocks[L - 1].cls];
    int loss = f->g.n_c;
    if (!r) r = add_block_compute(f, ch, &ix, L - 1, gl->loss, &cap, err);
    for (int k = L - 1; k >= 0 && !r; k--) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int i = 0; i < g->n_c && !r; i++)
            if (g->c[g->topo[i]].kind == RK_C_BWD) r = add_block_compute(f, ch, &ix, k, g->topo[i], &cap, err);
    }
    if (r) goto done;
    const rk_graph *g0 = &ch->classes[ch->blocks[0].cls];
    for (int i = 0; i < g0->n_inputs && !r; i++) {
        int ig = g0->input_grads[i];
        if (rk_graph_add_input(&f->g, ix.d_map[ix.d_base[0] + g0->inputs[i]], ig >= 0 ? ix.d_map[ix.d_base[0] + ig] : -1))
            r = rk_fail(err, RK_ENOMEM, "out of memory");
    }
    if (r) goto done;
    rk_graph_set_output(&f->g, ix.d_map[ix.d_base[L - 1] + gl->output], ix.d_map[ix.d_base[L - 1] + gl->output_grad],
                        loss);
    r = rk_graph_finalize(&f->g, "flattened chain", err);
done:
    rk_chain_index_free(&ix);
    if (r) rk_checkmate_flat_free(f);
    return r;
}

rk_status rk_checkmate_flat_to_schedule(const rk_checkmate_flat *f, const rk_op *ops, int n_ops, rk_schedule *s,
                                        rk_error *err) {
    for (int i = 0; i < n_ops; i++) {
        rk_status r;
        if (ops[i].kind == RK_OP_RUN) r = rk_schedule_push(s, RK_OP_RUN, f->c_block[ops[i].node], f->c_local[ops[i].node], -1);
        else if (ops[i].kind == RK_OP_FORGET)
            r = rk_schedule_push(s, RK_OP_FORGET, f->d_block[ops[i].node], f->d_local[ops[i].node], -1);
        else continue;
        if (r) return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    return RK_OK;
}

/* Flattened compute node of (block, local) for every compute node of the
 * chain's blocks (-1: none, the loss nodes of all blocks but the last). */
static int *flat_compute_map(const rk_chain *ch, const rk_checkmate_flat *f, int **base_out) {
    int *base = malloc((size_t)(ch->n_blocks + 1) * sizeof(int));
    if (!base) return NULL;
    base[0] = 0;
    for (int k = 0; k < ch->n_blocks; k++) base[k + 1] = base[k] + ch->classes[ch->blocks[k].cls].n_c;
    int *map = malloc((size_t)(base[ch->n_blocks] + 1) * sizeof(int));
    if (!map) {
        free(base);
        return NULL;
    }
    for (int i = 0; i < base[ch->n_blocks]; i++) map[i] = -1;
    for (int c = 0; c < f->g.n_c; c++) map[base[f->c_block[c]] + f->c_local[c]] = c;
    *base_out = base;
    return map;
}

/* A chain schedule as ops of the flattened graph (runs only: the encoder
 * does not read forgets).  RK_EINPUT for a run of a node the flattened graph
 * does not have. */
static rk_status seed_flat_ops(const rk_chain *ch, const int *base, const int *map, const rk_schedule *sd, rk_op **out,
                               int *n_out, rk_error *err) {
    rk_op *ops = malloc((size_t)(sd->n_ops + 1) * sizeof *ops);
    if (!ops) return rk_fail(err, RK_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < sd->n_ops; i++) {
        const rk_op *o = &sd->ops[i];
        if (o->kind != RK_OP_RUN) continue;
        int c = o->block >= 0 && o->block < ch->n_blocks && o->node >= 0 &&
                        o->node < ch->classes[ch->blocks[o->block].cls].n_c
                    ? map[base[o->block] + o->node]
                    : -1;
        if (c < 0) {
            free(ops);
            return rk_fail(err, RK_EINPUT, "checkmate: seed op %d runs a node the flattened chain does not have", i);
        }
        ops[n].kind = RK_OP_RUN;
        ops[n].block = 0;
        ops[n].node = c;
        ops[n].option = -1;
        n++;
    }
    *out = ops;
    *n_out = n;
    return RK_OK;
}

/* Decode x (a schedule of the model of the flattened chain), map it to a
 * chain schedule and replay it. */
static rk_status x_to_chain(const rk_checkmate_model *m, const rk_checkmate_flat *f, const rk_chain *ch, const double *x,
                            rk_schedule *out, rk_sim_result *sr, double *obj, rk_error *err) {
    rk_op *ops = NULL;
    int n = 0;
    double t = 0;
    int64_t pk = 0;
    rk_status r = cm_decode_replay(m, x, &ops, &n, obj, &pk, &t, err);
    rk_schedule_init(out);
    if (!r) r = rk_checkmate_flat_to_schedule(f, ops, n, out, err);
    free(ops);
    if (!r) {
        r = rk_simulate(ch, out, sr, err);
        if (r) {
            char buf[sizeof err->msg];
            snprintf(buf, sizeof buf, "BUG: checkmate: the chain schedule fails the simulator: %.900s", err->msg);
            r = rk_fail(err, RK_EFAIL, "%s", buf);
        } else if (sr->peak != pk || fabs(sr->time - *obj) > 1e-9 * fmax(1, fabs(*obj))) {
            r = rk_fail(err, RK_EFAIL,
                        "BUG: checkmate: the chain replay (peak %lld, time %.17g) differs from the flattened graph's "
                        "(peak %lld, ILP time %.17g)",
                        (long long)sr->peak, sr->time, (long long)pk, *obj);
        }
    }
    if (r) rk_schedule_free(out);
    return r;
}

/* Replays of the incumbent's local search (cm_improve): a count, not a
 * time, so that the incumbent does not depend on the machine's speed. */
#define CM_IMPROVE_EVALS 3000

static double x_time(const rk_checkmate_model *m, const double *x) {
    double t = cm_obj_offset(m);
    for (int j = 0; j < m->n_cols; j++)
        if (m->cols[j].kind == CM_COL_R && x[j] > 0.5) t += m->g->c[m->g->topo[m->cols[j].a]].time;
    return t;
}

rk_status rk_checkmate_chain_solve(const rk_chain *ch, int64_t budget, const rk_checkmate_params *p,
                                   const rk_schedule *seeds, int n_seeds, rk_schedule *s,
                                   rk_checkmate_chain_info *info, rk_error *err) {
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    rk_checkmate_chain_info inf;
    memset(&inf, 0, sizeof inf);
    inf.gap = NAN;
    inf.bound = -INFINITY;
    inf.milp_status = -1;
    inf.incumbent_time = NAN;
    inf.source = "none";
    inf.incumbent_source = "none";
    inf.seed_index = -1;
    double t0 = cm_now();
    rk_checkmate_flat f;
    rk_status r = rk_checkmate_flatten(ch, &f, err);
    if (r) return r;
    rk_checkmate_model *m = NULL;
    rk_lp *lp = NULL;
    int *base = NULL, *map = NULL;
    double *xinc = NULL, *xtry = NULL;
    rk_milp_result res;
    memset(&res, 0, sizeof res);
    rk_schedule best;
    rk_schedule_init(&best);
    int have_best = 0;
    double best_time = INFINITY;
    rk_sim_result best_sr;
    memset(&best_sr, 0, sizeof best_sr);
    r = rk_checkmate_model_build(&f.g, &m, err);
    if (r) goto done;
    int nc = m->n_cols;
    xinc = malloc((size_t)(nc + 1) * sizeof *xinc);
    xtry = malloc((size_t)(nc + 1) * sizeof *xtry);
    map = flat_compute_map(ch, &f, &base);
    if (!xinc || !xtry || !map) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    /* 1. incumbents: the greedy rematerialization and the caller's seeds,
     * each replayed; the cheapest that fits is the MILP's incumbent, and a
     * seed that fits but is not a schedule of the model is kept aside */
    double inc_time = INFINITY;
    int64_t gpk = 0;
    double gt = 0;
    rk_error e2;
    if (cm_greedy(m, budget, xtry, &gpk, &gt, &e2) == RK_OK && cm_row_violation(m, xtry, budget, -1, NULL) < 0) {
        memcpy(xinc, xtry, (size_t)nc * sizeof *xinc);
        inc_time = x_time(m, xtry);
        inf.incumbent_source = "greedy";
    }
    for (int i = 0; i < n_seeds; i++) {
        rk_sim_result sr;
        if (rk_simulate(ch, &seeds[i], &sr, &e2) != RK_OK || sr.peak > budget) continue;
        if (sr.time < best_time) { /* a valid schedule that fits, model or not */
            rk_schedule_free(&best);
            rk_schedule_init(&best);
            r = rk_schedule_append(&best, &seeds[i]);
            if (r) {
                r = rk_fail(err, RK_ENOMEM, "out of memory");
                goto done;
            }
            best_time = sr.time;
            best_sr = sr;
            have_best = 1;
            inf.source = "seed";
            inf.seed_index = i;
        }
        rk_op *ops = NULL;
        int n = 0;
        if (seed_flat_ops(ch, base, map, &seeds[i], &ops, &n, &e2) != RK_OK) continue;
        rk_status re = cm_encode_ops(m, ops, n, xtry, &e2);
        free(ops);
        if (re != RK_OK) {
            if (p->verbose) rk_log_printf(&p->log, RK_LOG_WARNING, "checkmate: seed %d is not a schedule of the model: %s", i, e2.msg);
            continue;
        }
        inf.n_seeds_encoded++;
        int viol = cm_row_violation(m, xtry, budget, -1, NULL);
        double t = x_time(m, xtry);
        if (p->verbose)
            rk_log_printf(&p->log, RK_LOG_INFO, "checkmate: seed %d (time %.6g, peak %lld) encoded: time %.6g, %s", i, sr.time,
                    (long long)sr.peak, t, viol < 0 ? "fits" : "over the budget once encoded");
        if (viol < 0 && t < inc_time) {
            memcpy(xinc, xtry, (size_t)nc * sizeof *xinc);
            inc_time = t;
            inf.incumbent_source = "seed";
        }
    }
    if (isfinite(inc_time)) {
        /* fewer recomputations where the budget allows */
        int rm = cm_improve(m, budget, xinc, CM_IMPROVE_EVALS);
        if (rm > 0) inc_time = x_time(m, xinc);
        if (p->verbose) rk_log_printf(&p->log, RK_LOG_INFO, "checkmate: local search removed %d recomputations", rm);
        inf.incumbent_time = inc_time;
        rk_schedule xs;
        rk_sim_result sr;
        double obj;
        r = x_to_chain(m, &f, ch, xinc, &xs, &sr, &obj, err);
        if (r) goto done;
        if (sr.peak > budget) {
            rk_schedule_free(&xs);
            r = rk_fail(err, RK_EFAIL, "BUG: checkmate: the incumbent peaks at %lld > budget %lld", (long long)sr.peak,
                        (long long)budget);
            goto done;
        }
        if (sr.time < best_time) {
            rk_schedule_free(&best);
            best = xs;
            best_time = sr.time;
            best_sr = sr;
            have_best = 1;
            inf.source = inf.incumbent_source;
        } else {
            rk_schedule_free(&xs);
        }
    }
    if (p->verbose)
        rk_log_printf(&p->log, RK_LOG_INFO, "checkmate: incumbent %s (time %.6g), best known schedule %s (time %.6g), %.3f s",
                inf.incumbent_source, inc_time, inf.source, best_time, cm_now() - t0);
    if (p->greedy_only) { /* no MILP: the best of the greedy and the seeds */
        res.status = RK_MILP_TIME_LIMIT;
        inf.bound = cm_obj_offset(m); /* every node once */
        if (!have_best) {
            r = rk_fail(err, RK_EINFEASIBLE,
                        "checkmate: the greedy rematerialization finds no schedule within %lld bytes (no MILP)",
                        (long long)budget);
            goto done;
        }
        goto finish;
    }
    /* 2. the MILP, started from the incumbent */
    rk_status rl = rk_checkmate_model_lp(m, budget, -1, &lp, err);
    if (rl == RK_EINFEASIBLE) {
        /* a step needs more than the budget whatever the schedule of the
         * model; a seed that fits (cannot happen: the model's constant step
         * memory holds for every schedule) would still be returned */
        if (!have_best) {
            r = rl;
            goto done;
        }
        inf.bound = INFINITY;
        goto finish;
    }
    if (rl) {
        r = rl;
        goto done;
    }
    char name[300];
    snprintf(name, sizeof name, "%s_whole", p->export_prefix ? p->export_prefix : "chain");
    r = cm_export(p, name, lp, err);
    if (r) goto done;
    rk_milp_params mp;
    rk_milp_params_default(&mp);
    mp.time_limit = p->time_limit;
    if (p->time_limit > 0) /* the heuristics' time counts */
        mp.time_limit = fmax(0.1 * p->time_limit, p->time_limit - (cm_now() - t0));
    if (p->time_limit > 0 && p->time_limit_no_schedule > p->time_limit && !have_best)
        mp.time_limit_no_incumbent = p->time_limit_no_schedule - (cm_now() - t0);
    mp.node_limit = p->node_limit;
    mp.gap = p->gap > 0 ? p->gap : 1e-6;
    mp.threads = p->milp_threads > 0 ? p->milp_threads : (p->threads > 0 ? p->threads : 0);
    mp.verbose = p->verbose > 0;
    mp.log = p->log;
    mp.seed = p->seed;
    mp.incumbent = isfinite(inc_time) ? xinc : NULL;
    double tm = cm_now();
    r = cm_solve(p, name, lp, &mp, &res, err);
    inf.milp_time_s = cm_now() - tm;
    if (r) goto done;
    inf.milp_status = res.status;
    inf.nodes = res.nodes;
    if (res.status == RK_MILP_OPTIMAL || res.status == RK_MILP_TIME_LIMIT) {
        /* every node runs once whatever the schedule: the time of that is a
         * bound even when the MILP has none yet */
        inf.bound = cm_obj_offset(m);
        if (isfinite(res.bound) && res.bound > 0) inf.bound += res.bound;
    } else if (res.status == RK_MILP_INFEASIBLE) {
        inf.bound = INFINITY;
    }
    if (res.has_solution && (res.status == RK_MILP_OPTIMAL || res.status == RK_MILP_TIME_LIMIT)) {
        rk_schedule xs;
        rk_sim_result sr;
        double obj;
        r = x_to_chain(m, &f, ch, res.x, &xs, &sr, &obj, err);
        if (r) goto done;
        if (sr.peak > budget) {
            rk_schedule_free(&xs);
            r = rk_fail(err, RK_EFAIL, "BUG: checkmate: decoded schedule peaks at %lld > budget %lld", (long long)sr.peak,
                        (long long)budget);
            goto done;
        }
        if (sr.time <= best_time) {
            rk_schedule_free(&best);
            best = xs;
            best_time = sr.time;
            best_sr = sr;
            have_best = 1;
            inf.source = "milp";
            inf.seed_index = -1;
        } else {
            rk_schedule_free(&xs);
        }
    } else if (res.status != RK_MILP_INFEASIBLE && res.status != RK_MILP_TIME_LIMIT && !have_best) {
        r = rk_fail(err, RK_EFAIL, "checkmate: the MILP solver returned '%s'", rk_milp_status_name(res.status));
        goto done;
    }
finish:
    if (!have_best) {
        if (res.status == RK_MILP_INFEASIBLE)
            r = rk_fail(err, RK_EINFEASIBLE, "checkmate: no schedule of the chain fits in %lld bytes", (long long)budget);
        else
            r = rk_fail(err, RK_EINFEASIBLE,
                        "checkmate: no schedule found within the time limit (%g s) and no heuristic schedule fits in "
                        "%lld bytes",
                        fmax(p->time_limit, p->time_limit_no_schedule), (long long)budget);
        goto done;
    }
    inf.optimal = res.status == RK_MILP_OPTIMAL && best_time <= res.objective + cm_obj_offset(m) + 1e-9 * fmax(1, best_time);
    if (inf.optimal) inf.gap = 0;
    else if (isfinite(inf.bound)) inf.gap = fmax(0, (best_time - inf.bound) / fmax(1e-12, best_time));
    best.budget = budget;
    best.predicted_peak = best_sr.peak;
    best.predicted_time = best_sr.time;
    rk_schedule_set_algo(&best, "checkmate");
    rk_schedule_free(s);
    *s = best;
    rk_schedule_init(&best);
done:
    rk_schedule_free(&best);
    free(base);
    free(map);
    free(xinc);
    free(xtry);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
    rk_checkmate_model_free(m);
    rk_checkmate_flat_free(&f);
    inf.total_time_s = cm_now() - t0;
    if (info) *info = inf;
    return r;
}

rk_status rk_checkmate_chain_schedule(const rk_chain *ch, int64_t budget, const rk_checkmate_params *p,
                                      rk_schedule *s, double *gap, rk_error *err) {
    rk_checkmate_chain_info inf;
    rk_status r = rk_checkmate_chain_solve(ch, budget, p, NULL, 0, s, &inf, err);
    if (!r && gap) *gap = inf.gap;
    return r;
}

rk_status rk_checkmate_chain_greedy(const rk_chain *ch, int64_t budget, rk_schedule *s, rk_error *err) {
    rk_checkmate_flat f;
    rk_status r = rk_checkmate_flatten(ch, &f, err);
    if (r) return r;
    rk_checkmate_model *m = NULL;
    double *x = NULL;
    r = rk_checkmate_model_build(&f.g, &m, err);
    if (!r && !(x = malloc((size_t)(m->n_cols + 1) * sizeof *x))) r = rk_fail(err, RK_ENOMEM, "out of memory");
    int64_t pk;
    double t;
    if (!r) r = cm_greedy(m, budget, x, &pk, &t, err);
    if (!r) {
        rk_schedule xs;
        rk_sim_result sr;
        double obj;
        r = x_to_chain(m, &f, ch, x, &xs, &sr, &obj, err);
        if (!r) {
            xs.budget = budget > 0 ? budget : sr.peak;
            xs.predicted_peak = sr.peak;
            xs.predicted_time = sr.time;
            rk_schedule_set_algo(&xs, "checkmate-greedy");
            rk_schedule_free(s);
            *s = xs;
        }
    }
    free(x);
    rk_checkmate_model_free(m);
    rk_checkmate_flat_free(&f);
    return r;
}
