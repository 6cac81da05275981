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

rk_status rk_checkmate_chain_schedule(const rk_chain *ch, int64_t budget, const rk_checkmate_params *p,
                                      rk_schedule *s, double *gap, rk_error *err) {
    rk_checkmate_params def;
    if (!p) {
        rk_checkmate_params_default(&def);
        p = &def;
    }
    rk_checkmate_flat f;
    rk_status r = rk_checkmate_flatten(ch, &f, err);
    if (r) return r;
    rk_checkmate_model *m = NULL;
    rk_lp *lp = NULL;
    rk_op *ops = NULL;
    int n = 0;
    rk_milp_result res;
    memset(&res, 0, sizeof res);
    r = rk_checkmate_model_build(&f.g, &m, err);
    if (!r) r = rk_checkmate_model_lp(m, budget, -1, &lp, err);
    char name[300];
    snprintf(name, sizeof name, "%s_whole", p->export_prefix ? p->export_prefix : "chain");
    if (!r) r = cm_export(p, name, lp, err);
    if (!r) {
        rk_milp_params mp;
        rk_milp_params_default(&mp);
        mp.time_limit = p->time_limit;
        mp.node_limit = p->node_limit;
        mp.gap = p->gap > 0 ? p->gap : 1e-6;
        mp.threads = p->milp_threads > 0 ? p->milp_threads : (p->threads > 0 ? p->threads : 0);
        mp.verbose = p->verbose > 0;
        r = cm_solve(p, name, lp, &mp, &res, err);
    }
    if (!r) {
        if (res.status == RK_MILP_INFEASIBLE)
            r = rk_fail(err, RK_EINFEASIBLE, "checkmate: no schedule of the chain fits in %lld bytes", (long long)budget);
        else if (!res.has_solution && res.status == RK_MILP_TIME_LIMIT)
            r = rk_fail(err, RK_EINFEASIBLE, "checkmate: no schedule found within the time limit (%g s)", p->time_limit);
        else if (!res.has_solution)
            r = rk_fail(err, RK_EFAIL, "checkmate: the MILP solver returned '%s'", rk_milp_status_name(res.status));
    }
    double obj = 0, t = 0;
    int64_t pk = 0;
    if (!r) r = cm_decode_replay(m, res.x, &ops, &n, &obj, &pk, &t, err);
    if (!r && pk > budget)
        r = rk_fail(err, RK_EFAIL, "BUG: checkmate: decoded schedule peaks at %lld > budget %lld", (long long)pk,
                    (long long)budget);
    rk_schedule tmp;
    rk_schedule_init(&tmp);
    if (!r) r = rk_checkmate_flat_to_schedule(&f, ops, n, &tmp, err);
    if (!r) {
        rk_sim_result sr;
        r = rk_simulate(ch, &tmp, &sr, err);
        if (r) {
            char buf[sizeof err->msg];
            snprintf(buf, sizeof buf, "BUG: checkmate: the chain schedule fails the simulator: %.900s", err->msg);
            r = rk_fail(err, RK_EFAIL, "%s", buf);
        } else if (sr.peak > budget || fabs(sr.time - obj) > 1e-9 * fmax(1, fabs(obj))) {
            r = rk_fail(err, RK_EFAIL,
                        "BUG: checkmate: simulated peak %lld (budget %lld), time %.17g (ILP objective %.17g)",
                        (long long)sr.peak, (long long)budget, sr.time, obj);
        } else {
            tmp.budget = budget;
            tmp.predicted_peak = sr.peak;
            tmp.predicted_time = sr.time;
            rk_schedule_set_algo(&tmp, "checkmate");
            if (gap)
                *gap = res.status == RK_MILP_OPTIMAL ? 0 : fmax(0, (obj - res.bound - cm_obj_offset(m)) / fmax(1e-12, fabs(obj)));
        }
    }
    if (!r) {
        rk_schedule_free(s);
        *s = tmp;
    } else {
        rk_schedule_free(&tmp);
    }
    free(ops);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
    rk_checkmate_model_free(m);
    rk_checkmate_flat_free(&f);
    return r;
}
