/* simple_schedules.c — chain schedules without recomputation: keep-everything (the
 * maximum peak) and free-as-soon-as-possible (the minimum peak achievable
 * without recomputing anything). */
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

/* Run every forward node (blocks in order, topological order inside), the
 * last block's loss, then every backward node (blocks in reverse).  Each data
 * is forgotten right after the last op that needs it (uses it through a
 * real/global edge or contributes to it); with keep_fwd, nothing is
 * forgotten before the loss.  The first block's inputs and their grads stay. */
static rk_status schedule_no_recompute(const rk_chain *ch, rk_schedule *s, int keep_fwd, const char *algo,
                                       rk_error *err) {
    rk_schedule_init(s);
    rk_status r = rk_chain_validate(ch, "chain", err);
    if (r) return r;
    rk_chain_index ix;
    if ((r = rk_chain_index_build(ch, &ix, err))) return r;
    int L = ch->n_blocks;
    int n_seq = 0, cap = ix.n_c + 1;
    int *sb = malloc((size_t)cap * sizeof(int)), *sc = malloc((size_t)cap * sizeof(int));
    int *last = malloc((size_t)(ix.n_d + 1) * sizeof(int));
    char *keep = calloc((size_t)ix.n_d + 1, 1);
    int **forget_at = NULL;
    int *n_forget = NULL;
    if (!sb || !sc || !last || !keep) goto oom;
    for (int k = 0; k < L; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int i = 0; i < g->n_c; i++)
            if (g->c[g->topo[i]].kind == RK_C_FWD) {
                sb[n_seq] = k;
                sc[n_seq++] = g->topo[i];
            }
    }
    int loss_pos = n_seq;
    {
        const rk_graph *g = &ch->classes[ch->blocks[L - 1].cls];
        sb[n_seq] = L - 1;
        sc[n_seq++] = g->loss;
    }
    for (int k = L - 1; k >= 0; k--) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int i = 0; i < g->n_c; i++)
            if (g->c[g->topo[i]].kind == RK_C_BWD) {
                sb[n_seq] = k;
                sc[n_seq++] = g->topo[i];
            }
    }
    for (int d = 0; d < ix.n_d; d++) last[d] = -1;
    for (int p = 0; p < n_seq; p++) {
        const rk_graph *g = &ch->classes[ch->blocks[sb[p]].cls];
        const rk_cnode *c = &g->c[sc[p]];
        for (int k = 0; k < c->n_uses; k++)
            if (c->uses[k].kind != RK_EDGE_FAKE) last[ix.d_map[ix.d_base[sb[p]] + c->uses[k].data]] = p;
        for (int k = 0; k < c->n_outs; k++) {
            int gd = ix.d_map[ix.d_base[sb[p]] + c->outs[k]];
            if (last[gd] < p) last[gd] = p;
        }
    }
    const rk_graph *g0 = &ch->classes[ch->blocks[0].cls];
    for (int i = 0; i < g0->n_inputs; i++) {
        keep[ix.d_map[ix.d_base[0] + g0->inputs[i]]] = 1;
        if (g0->input_grads[i] >= 0) keep[ix.d_map[ix.d_base[0] + g0->input_grads[i]]] = 1;
    }
    forget_at = calloc((size_t)n_seq + 1, sizeof(int *));
    n_forget = calloc((size_t)n_seq + 1, sizeof(int));
    if (!forget_at || !n_forget) goto oom;
    for (int d = 0; d < ix.n_d; d++) {
        if (keep[d] || last[d] < 0) continue;
        int p = last[d];
        if (keep_fwd && p < loss_pos) p = loss_pos;
        int *a = realloc(forget_at[p], (size_t)(n_forget[p] + 1) * sizeof(int));
        if (!a) goto oom;
        forget_at[p] = a;
        a[n_forget[p]++] = d;
    }
    for (int p = 0; p < n_seq; p++) {
        if (rk_schedule_push(s, RK_OP_RUN, sb[p], sc[p], -1)) goto oom;
        for (int i = 0; i < n_forget[p]; i++) {
            int d = forget_at[p][i];
            if (rk_schedule_push(s, RK_OP_FORGET, ix.d_block[d], ix.d_local[d], -1)) goto oom;
        }
    }
    rk_schedule_set_algo(s, algo);
    for (int p = 0; p <= n_seq; p++) free(forget_at[p]);
    free(forget_at);
    free(n_forget);
    free(sb);
    free(sc);
    free(last);
    free(keep);
    rk_chain_index_free(&ix);
    rk_sim_result sim;
    r = rk_simulate(ch, s, &sim, err);
    if (r) {
        rk_schedule_free(s);
        return r == RK_EINPUT ? RK_EFAIL : r;
    }
    s->predicted_peak = sim.peak;
    s->predicted_time = sim.time;
    return RK_OK;
oom:
    if (forget_at)
        for (int p = 0; p <= n_seq; p++) free(forget_at[p]);
    free(forget_at);
    free(n_forget);
    free(sb);
    free(sc);
    free(last);
    free(keep);
    rk_chain_index_free(&ix);
    rk_schedule_free(s);
    return rk_fail(err, RK_ENOMEM, "out of memory building a baseline schedule");
}

rk_status rk_schedule_keep_all(const rk_chain *ch, rk_schedule *s, rk_error *err) {
    return schedule_no_recompute(ch, s, 1, "keep-all", err);
}

rk_status rk_schedule_free_asap(const rk_chain *ch, rk_schedule *s, rk_error *err) {
    return schedule_no_recompute(ch, s, 0, "free-asap", err);
}
