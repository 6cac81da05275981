/* example.c — block graphs from compact op descriptions, and the built-in
 * GPT-like example chain used by `rkmate demo` and the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

rk_status rk_graph_from_specs(rk_graph *g, int64_t input_size, int input_has_grad, const rk_op_spec *ops, int n,
                              rk_error *err) {
    rk_graph_init(g);
    if (n < 1) return rk_fail(err, RK_EINPUT, "a block needs at least one op");
    char nm[256];
    int x = rk_graph_add_data(g, "input", RK_D_DATA, input_size);
    int xg = input_has_grad ? rk_graph_add_data(g, "input.grad", RK_D_GRAD, input_size) : -1;
    int *data = malloc((size_t)n * sizeof(int)), *grad = malloc((size_t)n * sizeof(int));
    int *ph = malloc((size_t)n * sizeof(int)), *fwd = malloc((size_t)n * sizeof(int));
    rk_status r = RK_OK;
    if (!data || !grad || !ph || !fwd || x < 0) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const rk_op_spec *o = &ops[i];
        for (int k = 0; k < o->n_in; k++)
            if (o->in[k] < -1 || o->in[k] >= i) {
                r = rk_fail(err, RK_EINPUT, "op %d ('%s'): input %d refers to op %d; expected -1 or an earlier op", i,
                            o->name, k, o->in[k]);
                goto done;
            }
        snprintf(nm, sizeof nm, "fwd_%s", o->name);
        fwd[i] = rk_graph_add_compute(g, nm, RK_C_FWD, o->fwd_time, o->fwd_overhead);
        data[i] = rk_graph_add_data(g, o->name, RK_D_DATA, o->out_size);
        snprintf(nm, sizeof nm, "%s.grad", o->name);
        grad[i] = rk_graph_add_data(g, nm, RK_D_GRAD, o->out_size);
        ph[i] = -1;
        if (o->phantom_size > 0) {
            snprintf(nm, sizeof nm, "%s.phantom", o->name);
            ph[i] = rk_graph_add_data(g, nm, RK_D_PHANTOM, o->phantom_size);
        }
        rk_graph_add_out(g, fwd[i], data[i]);
        if (ph[i] >= 0) rk_graph_add_out(g, fwd[i], ph[i]);
        for (int k = 0; k < o->n_in; k++) {
            int d = o->in[k] < 0 ? x : data[o->in[k]];
            int dup = 0;
            for (int u = 0; u < g->c[fwd[i]].n_uses; u++) dup |= g->c[fwd[i]].uses[u].data == d;
            if (!dup) rk_graph_add_use(g, fwd[i], d, o->in[k] < 0 ? RK_EDGE_GLOBAL : RK_EDGE_REAL);
        }
    }
    int loss = rk_graph_add_compute(g, "loss", RK_C_LOSS, 0, 0);
    rk_graph_add_use(g, loss, data[n - 1], RK_EDGE_REAL);
    rk_graph_add_out(g, loss, grad[n - 1]);
    for (int i = n - 1; i >= 0; i--) {
        const rk_op_spec *o = &ops[i];
        snprintf(nm, sizeof nm, "bwd_%s", o->name);
        int b = rk_graph_add_compute(g, nm, RK_C_BWD, o->bwd_time, o->bwd_overhead);
        rk_graph_add_use(g, b, grad[i], RK_EDGE_REAL);
        if (o->bwd_needs_output) rk_graph_add_use(g, b, data[i], RK_EDGE_REAL);
        if (ph[i] >= 0) rk_graph_add_use(g, b, ph[i], RK_EDGE_REAL);
        for (int k = 0; k < o->n_in; k++) {
            int d = o->in[k] < 0 ? x : data[o->in[k]];
            int dg = o->in[k] < 0 ? xg : grad[o->in[k]];
            int seen = 0;
            for (int u = 0; u < g->c[b].n_uses; u++)
                if (g->c[b].uses[u].data == d) {
                    seen = 1;
                    if ((o->bwd_needs_input >> k) & 1) g->c[b].uses[u].kind = o->in[k] < 0 ? RK_EDGE_GLOBAL : RK_EDGE_REAL;
                }
            if (!seen)
                rk_graph_add_use(g, b, d,
                                 ((o->bwd_needs_input >> k) & 1) ? (o->in[k] < 0 ? RK_EDGE_GLOBAL : RK_EDGE_REAL)
                                                                 : RK_EDGE_FAKE);
            int dupo = 0;
            for (int u = 0; u < g->c[b].n_outs; u++) dupo |= g->c[b].outs[u] == dg;
            if (dg >= 0 && !dupo) rk_graph_add_out(g, b, dg);
        }
    }
    rk_graph_add_input(g, x, xg);
    rk_graph_set_output(g, data[n - 1], grad[n - 1], loss);
    /* grads of ops nobody differentiates through (e.g. unused outputs) would
     * have no producer: give such ops' grads to the loss?  No: every op but
     * the last feeds a later op by construction checks below. */
    for (int i = 0; i < n - 1; i++) {
        int used = 0;
        for (int j = i + 1; j < n && !used; j++)
            for (int k = 0; k < ops[j].n_in; k++) used |= ops[j].in[k] == i;
        if (!used) {
            r = rk_fail(err, RK_EINPUT, "op %d ('%s') is not used by a later op; only the last op is the output", i,
                        ops[i].name);
            goto done;
        }
    }
    r = rk_graph_finalize(g, "block", err);
done:
    free(data);
    free(grad);
    free(ph);
    free(fwd);
    if (r) rk_graph_free(g);
    return r;
}

/* Times: a crude CPU model, 1 us per 2.5 MFLOP; memory-bound ops 1 us per
 * 4 MB touched. */
static double flop_us(double flops) { return flops / 2.5e6; }
static double mem_us(double bytes) { return bytes / 4e6; }

rk_status rk_chain_example(rk_chain *ch, int layers, int batch, int seq, int width, rk_error *err) {
    rk_chain_init(ch);
    if (layers < 1 || batch < 1 || seq < 1 || width < 1)
        return rk_fail(err, RK_EINPUT, "example chain: layers, batch, seq and width must be >= 1");
    double tok = (double)batch * seq;
    int64_t act = (int64_t)(tok * width * 4), hid = 4 * act;
    int64_t att = (int64_t)((double)batch * 4 * seq * seq * 4); /* 4 heads of seq x seq scores */
    double mm = 2.0 * tok * width * width;
    rk_status r;
    rk_graph g;
    /* class 0: embedding (input: token ids, no grad) */
    rk_op_spec emb[] = {
        {"tok_emb", 1, {-1}, act, 0, mem_us(act), mem_us(act), 0, 0, 1, 0},
        {"pos_add", 1, {0}, act, 0, mem_us(2 * act), mem_us(act), 0, 0, 0, 0},
        {"drop", 1, {1}, act, act / 4, mem_us(2 * act), mem_us(2 * act), 0, 0, 0, 0},
    };
    if ((r = rk_graph_from_specs(&g, (int64_t)(tok * 8), 0, emb, 3, err))) goto fail;
    if (rk_chain_add_class(ch, &g) < 0) goto oom;
    /* class 1: attention block */
    rk_op_spec attn[] = {
        {"ln1", 1, {-1}, act, (int64_t)(tok * 8), mem_us(2 * act), mem_us(3 * act), 0, 0, 1, 0},
        {"qkv", 1, {0}, 3 * act, 0, flop_us(3 * mm), flop_us(6 * mm), 0, 0, 1, 0},
        {"scores", 1, {1}, att, 0, flop_us(2.0 * tok * seq * width), flop_us(4.0 * tok * seq * width), 0, 0, 1, 0},
        {"softmax", 1, {2}, att, 0, mem_us(2.0 * att), mem_us(3.0 * att), 0, 0, 0, 1},
        {"attn_drop", 1, {3}, att, att / 4, mem_us(2.0 * att), mem_us(2.0 * att), 0, 0, 0, 0},
        {"context", 2, {4, 1}, act, 0, flop_us(2.0 * tok * seq * width), flop_us(4.0 * tok * seq * width), 0, 0, 3, 0},
        {"proj", 1, {5}, act, 0, flop_us(mm), flop_us(2 * mm), 0, 0, 1, 0},
        {"res1", 2, {6, -1}, act, 0, mem_us(3 * act), mem_us(act), 0, 0, 0, 0},
    };
    if ((r = rk_graph_from_specs(&g, act, 1, attn, 8, err))) goto fail;
    if (rk_chain_add_class(ch, &g) < 0) goto oom;
    /* class 2: MLP block */
    rk_op_spec mlp[] = {
        {"ln2", 1, {-1}, act, (int64_t)(tok * 8), mem_us(2 * act), mem_us(3 * act), 0, 0, 1, 0},
        {"fc1", 1, {0}, hid, 0, flop_us(4 * mm), flop_us(8 * mm), 0, 0, 1, 0},
        {"gelu", 1, {1}, hid, 0, mem_us(2 * hid), mem_us(3 * hid), hid / 2, hid / 2, 1, 0},
        {"fc2", 1, {2}, act, 0, flop_us(4 * mm), flop_us(8 * mm), 0, 0, 1, 0},
        {"mlp_drop", 1, {3}, act, act / 4, mem_us(2 * act), mem_us(2 * act), 0, 0, 0, 0},
        {"res2", 2, {4, -1}, act, 0, mem_us(3 * act), mem_us(act), 0, 0, 0, 0},
    };
    if ((r = rk_graph_from_specs(&g, act, 1, mlp, 6, err))) goto fail;
    if (rk_chain_add_class(ch, &g) < 0) goto oom;
    /* class 3: head (final layer norm + logits over a small vocabulary) */
    int64_t logits = (int64_t)(tok * 1024 * 4);
    rk_op_spec head[] = {
        {"ln_f", 1, {-1}, act, (int64_t)(tok * 8), mem_us(2 * act), mem_us(3 * act), 0, 0, 1, 0},
        {"lm_head", 1, {0}, logits, 0, flop_us(2.0 * tok * width * 1024), flop_us(4.0 * tok * width * 1024), 0, 0, 1, 0},
    };
    if ((r = rk_graph_from_specs(&g, act, 1, head, 2, err))) goto fail;
    if (rk_chain_add_class(ch, &g) < 0) goto oom;
    char nm[64];
    if (rk_chain_add_block(ch, "embedding", 0) < 0) goto oom;
    for (int l = 0; l < layers; l++) {
        snprintf(nm, sizeof nm, "layer%d.attn", l);
        if (rk_chain_add_block(ch, nm, 1) < 0) goto oom;
        snprintf(nm, sizeof nm, "layer%d.mlp", l);
        if (rk_chain_add_block(ch, nm, 2) < 0) goto oom;
    }
    if (rk_chain_add_block(ch, "head", 3) < 0) goto oom;
    char model[128];
    snprintf(model, sizeof model, "built-in example: GPT-like, %d layers, batch %d, seq %d, width %d", layers, batch,
             seq, width);
    ch->model = strdup(model);
    ch->device = strdup("model");
    return rk_chain_validate(ch, "example chain", err);
oom:
    r = rk_fail(err, RK_ENOMEM, "out of memory");
fail:
    rk_chain_free(ch);
    return r;
}
