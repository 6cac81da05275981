/* simulate.c — the simulator: replays a schedule on a block graph or on a
 * whole chain, refuses invalid schedules with the op index, node and rule
 * broken, and computes peak memory and time (the judge of every solver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

/* A view that maps (block, local node) to graphs and global data ids, so one
 * replay core serves both a single block graph and a whole chain. */
typedef struct {
    const rk_chain *ch;        /* NULL for a single graph */
    const rk_graph *g;         /* the single graph */
    const rk_chain_index *ix;  /* chain index, or NULL */
    const int *n_prod;         /* global producer counts per data id */
} sim_view;

typedef struct {
    char *present;
    int *contrib;
    char *ran;
    int64_t live, peak;
    int peak_op;
    double time, time_at_peak;
    int n_runs, n_forgets;
    int64_t *op_step, *op_live; /* NULL, or one entry per op (rk_simulate_ops) */
} sim_state;

static const rk_graph *view_graph(const sim_view *v, int block) {
    return v->ch ? &v->ch->classes[v->ch->blocks[block].cls] : v->g;
}
static int view_data(const sim_view *v, int block, int d) {
    return v->ix ? v->ix->d_map[v->ix->d_base[block] + d] : d;
}
static int view_compute(const sim_view *v, int block, int c) { return v->ix ? v->ix->c_base[block] + c : c; }
static const char *view_block_name(const sim_view *v, int block, char *buf, size_t n) {
    if (v->ch) snprintf(buf, n, "block %d ('%s') ", block, v->ch->blocks[block].name);
    else buf[0] = 0;
    return buf;
}

static rk_status replay_ops(const sim_view *v, sim_state *st, const rk_op *ops, int n_ops, int op_base,
                            const char *where, rk_error *err) {
    char bn[300];
    int L = v->ch ? v->ch->n_blocks : 1;
    for (int i = 0; i < n_ops; i++) {
        const rk_op *o = &ops[i];
        int opi = op_base + i;
        int block = v->ch ? o->block : 0;
        if (o->kind == RK_OP_MARK) {
            if (st->op_step) st->op_step[opi] = st->live;
            if (st->op_live) st->op_live[opi] = st->live;
            continue;
        }
        if (block < 0 || block >= L)
            return rk_fail(err, RK_EINPUT, "%s: op %d refers to block %d; the chain has %d blocks", where, opi,
                           o->block, L);
        const rk_graph *g = view_graph(v, block);
        if (o->kind == RK_OP_RUN) {
            if (o->node < 0 || o->node >= g->n_c)
                return rk_fail(err, RK_EINPUT, "%s: op %d runs compute node #%d of %s; it has %d", where, opi, o->node,
                               view_block_name(v, block, bn, sizeof bn), g->n_c);
            const rk_cnode *c = &g->c[o->node];
            int gc = view_compute(v, block, o->node);
            if (v->ix && !v->ix->c_present[gc])
                return rk_fail(err, RK_EINPUT,
                               "%s: op %d runs the loss node '%s' of %s; only the last block's loss exists in a chain",
                               where, opi, c->name, view_block_name(v, block, bn, sizeof bn));
            if (c->kind != RK_C_FWD && st->ran[gc])
                return rk_fail(err, RK_EINPUT, "%s: op %d runs %s node '%s' of %sa second time; it runs exactly once",
                               where, opi, rk_ckind_name(c->kind), c->name, view_block_name(v, block, bn, sizeof bn));
            for (int k = 0; k < c->n_uses; k++) {
                if (c->uses[k].kind == RK_EDGE_FAKE) continue;
                int ld = c->uses[k].data;
                int gd = view_data(v, block, ld);
                if (!st->present[gd])
                    return rk_fail(err, RK_EINPUT, "%s: op %d runs '%s' of %sbut its input '%s' is not in memory",
                                   where, opi, c->name, view_block_name(v, block, bn, sizeof bn), g->d[ld].name);
                if (g->d[ld].kind == RK_D_GRAD && st->contrib[gd] < v->n_prod[gd])
                    return rk_fail(err, RK_EINPUT,
                                   "%s: op %d runs '%s' of %sbut its input grad '%s' is incomplete (%d of %d contributions)",
                                   where, opi, c->name, view_block_name(v, block, bn, sizeof bn), g->d[ld].name,
                                   st->contrib[gd], v->n_prod[gd]);
            }
            int64_t fresh = 0;
            for (int k = 0; k < c->n_outs; k++) {
                int gd = view_data(v, block, c->outs[k]);
                if (!st->present[gd]) fresh += g->d[c->outs[k]].size;
            }
            int64_t step = st->live + fresh + rk_cnode_step_overhead(g, o->node);
            st->time += c->time;
            if (step > st->peak) {
                st->peak = step;
                st->peak_op = opi;
                st->time_at_peak = st->time;
            }
            for (int k = 0; k < c->n_outs; k++) {
                int ld = c->outs[k];
                int gd = view_data(v, block, ld);
                if (!st->present[gd]) {
                    st->present[gd] = 1;
                    st->live += g->d[ld].size;
                    st->contrib[gd] = 1;
                } else if (g->d[ld].kind == RK_D_GRAD) {
                    st->contrib[gd]++;
                }
            }
            st->ran[gc] = 1;
            st->n_runs++;
            if (st->op_step) st->op_step[opi] = step;
            if (st->op_live) st->op_live[opi] = st->live;
        } else if (o->kind == RK_OP_FORGET) {
            if (o->node < 0 || o->node >= g->n_d)
                return rk_fail(err, RK_EINPUT, "%s: op %d forgets data node #%d of %s; it has %d", where, opi, o->node,
                               view_block_name(v, block, bn, sizeof bn), g->n_d);
            const rk_dnode *d = &g->d[o->node];
            int gd = view_data(v, block, o->node);
            if (!st->present[gd])
                return rk_fail(err, RK_EINPUT, "%s: op %d forgets '%s' of %swhich is not in memory", where, opi,
                               d->name, view_block_name(v, block, bn, sizeof bn));
            if (d->kind == RK_D_GRAD && st->contrib[gd] < v->n_prod[gd])
                return rk_fail(err, RK_EINPUT,
                               "%s: op %d forgets grad '%s' of %sbefore all its contributions (%d of %d) were added",
                               where, opi, d->name, view_block_name(v, block, bn, sizeof bn), st->contrib[gd],
                               v->n_prod[gd]);
            if (st->op_step) st->op_step[opi] = st->live; /* before: what is held as it goes */
            st->present[gd] = 0;
            st->live -= d->size;
            st->n_forgets++;
            if (st->op_live) st->op_live[opi] = st->live;
        } else {
            return rk_fail(err, RK_EINPUT, "%s: op %d has an unknown kind", where, opi);
        }
    }
    return RK_OK;
}

/* ------------------------------------------------------------ block */

rk_status rk_block_state_init(rk_block_state *st, const rk_graph *g) {
    memset(st, 0, sizeof *st);
    st->present = calloc((size_t)g->n_d + 1, 1);
    st->contrib = calloc((size_t)g->n_d + 1, sizeof(int));
    st->ran_once = calloc((size_t)g->n_c + 1, 1);
    if (!st->present || !st->contrib || !st->ran_once) {
        rk_block_state_free(st);
        return RK_ENOMEM;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        int d = g->inputs[k];
        if (!st->present[d]) {
            st->present[d] = 1;
            st->live += g->d[d].size;
        }
    }
    st->peak = st->live;
    st->peak_op = -1;
    return RK_OK;
}

void rk_block_state_free(rk_block_state *st) {
    if (!st) return;
    free(st->present);
    free(st->contrib);
    free(st->ran_once);
    memset(st, 0, sizeof *st);
}

void rk_block_state_reset_peak(rk_block_state *st) {
    st->peak = st->live;
    st->peak_op = -1;
}

static int *graph_producer_counts(const rk_graph *g) {
    int *n = malloc((size_t)(g->n_d + 1) * sizeof *n);
    if (!n) return NULL;
    for (int d = 0; d < g->n_d; d++) n[d] = g->d[d].n_producers;
    return n;
}

rk_status rk_block_replay(const rk_graph *g, rk_block_state *bst, const rk_op *ops, int n_ops, const char *where,
                          rk_error *err) {
    if (!g->finalized) return rk_fail(err, RK_EFAIL, "%s: graph not finalized", where ? where : "replay");
    int *np = graph_producer_counts(g);
    if (!np) return rk_fail(err, RK_ENOMEM, "out of memory");
    sim_view v = {.ch = NULL, .g = g, .ix = NULL, .n_prod = np};
    sim_state st = {.present = bst->present, .contrib = bst->contrib, .ran = bst->ran_once, .live = bst->live,
                    .peak = bst->peak, .peak_op = bst->peak_op, .time = bst->time};
    rk_status r = replay_ops(&v, &st, ops, n_ops, bst->n_ops_done, where ? where : "replay", err);
    free(np);
    bst->live = st.live;
    bst->peak = st.peak;
    bst->peak_op = st.peak_op;
    bst->time = st.time;
    bst->n_ops_done += n_ops;
    return r;
}

rk_status rk_block_check_complete(const rk_graph *g, const rk_block_state *st, const char *where, rk_error *err) {
    for (int c = 0; c < g->n_c; c++)
        if (g->c[c].kind != RK_C_FWD && !st->ran_once[c])
            return rk_fail(err, RK_EINPUT, "%s: the schedule never runs %s node '%s'; the backward is incomplete",
                           where ? where : "replay", rk_ckind_name(g->c[c].kind), g->c[c].name);
    return RK_OK;
}

/* ------------------------------------------------------------ chain */

double rk_chain_baseline_time(const rk_chain *ch) {
    double t = 0;
    for (int k = 0; k < ch->n_blocks; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++)
            if (!(g->c[c].kind == RK_C_LOSS && k < ch->n_blocks - 1)) t += g->c[c].time;
    }
    return t;
}

rk_status rk_simulate(const rk_chain *ch, const rk_schedule *s, rk_sim_result *res, rk_error *err) {
    return rk_simulate_ops(ch, s, res, NULL, NULL, err);
}

rk_status rk_simulate_ops(const rk_chain *ch, const rk_schedule *s, rk_sim_result *res, int64_t *op_step,
                          int64_t *op_live, rk_error *err) {
    memset(res, 0, sizeof *res);
    rk_chain_index ix;
    rk_status r = rk_chain_index_build(ch, &ix, err);
    if (r) return r;
    int *np = calloc((size_t)ix.n_d + 1, sizeof *np);
    sim_state st = {0};
    st.op_step = op_step;
    st.op_live = op_live;
    st.present = calloc((size_t)ix.n_d + 1, 1);
    st.contrib = calloc((size_t)ix.n_d + 1, sizeof(int));
    st.ran = calloc((size_t)ix.n_c + 1, 1);
    if (!np || !st.present || !st.contrib || !st.ran) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < ch->n_blocks; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++) {
            if (!ix.c_present[ix.c_base[k] + c]) continue;
            for (int o = 0; o < g->c[c].n_outs; o++) np[ix.d_map[ix.d_base[k] + g->c[c].outs[o]]]++;
        }
    }
    const rk_graph *g0 = &ch->classes[ch->blocks[0].cls];
    for (int i = 0; i < g0->n_inputs; i++) {
        int gd = ix.d_map[ix.d_base[0] + g0->inputs[i]];
        if (!st.present[gd]) {
            st.present[gd] = 1;
            st.live += g0->d[g0->inputs[i]].size;
        }
    }
    st.peak = st.live;
    st.peak_op = -1;
    sim_view v = {.ch = ch, .g = NULL, .ix = &ix, .n_prod = np};
    r = replay_ops(&v, &st, s->ops, s->n_ops, 0, "schedule", err);
    if (r) goto done;
    for (int k = 0; k < ch->n_blocks && !r; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++) {
            int gc = ix.c_base[k] + c;
            if (ix.c_present[gc] && g->c[c].kind != RK_C_FWD && !st.ran[gc]) {
                r = rk_fail(err, RK_EINPUT,
                            "schedule: never runs %s node '%s' of block %d ('%s'); the backward is incomplete",
                            rk_ckind_name(g->c[c].kind), g->c[c].name, k, ch->blocks[k].name);
                break;
            }
        }
    }
    if (r) goto done;
    res->peak = st.peak;
    res->peak_op = st.peak_op;
    res->time = st.time;
    res->time_at_peak = st.time_at_peak;
    res->baseline_time = rk_chain_baseline_time(ch);
    res->overhead = res->baseline_time > 0 ? res->time / res->baseline_time - 1.0 : 0.0;
    res->final_live = st.live;
    res->n_runs = st.n_runs;
    res->n_forgets = st.n_forgets;
done:
    free(np);
    free(st.present);
    free(st.contrib);
    free(st.ran);
    rk_chain_index_free(&ix);
    return r;
}
