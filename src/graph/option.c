/* option.c — block options (a block's forward and backward op lists):
 * evaluation by replay against the option contract, and the built-in
 * options keep-all, none (keep only the output) and asap. */
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

void rk_option_free(rk_option *o) {
    if (!o) return;
    free(o->fwd);
    free(o->bwd);
    memset(o, 0, sizeof *o);
}

rk_status rk_option_copy(rk_option *dst, const rk_option *src) {
    *dst = *src;
    dst->fwd = dst->bwd = NULL;
    if (src->n_fwd) {
        dst->fwd = malloc((size_t)src->n_fwd * sizeof(rk_op));
        if (!dst->fwd) return RK_ENOMEM;
        memcpy(dst->fwd, src->fwd, (size_t)src->n_fwd * sizeof(rk_op));
    }
    if (src->n_bwd) {
        dst->bwd = malloc((size_t)src->n_bwd * sizeof(rk_op));
        if (!dst->bwd) {
            free(dst->fwd);
            dst->fwd = NULL;
            return RK_ENOMEM;
        }
        memcpy(dst->bwd, src->bwd, (size_t)src->n_bwd * sizeof(rk_op));
    }
    return RK_OK;
}

static int is_input(const rk_graph *g, int d) {
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == d) return 1;
    return 0;
}
static int is_input_grad(const rk_graph *g, int d) {
    for (int k = 0; k < g->n_inputs; k++)
        if (g->input_grads[k] == d) return 1;
    return 0;
}

rk_status rk_option_evaluate(const rk_graph *g, rk_option *o, rk_error *err) {
    rk_block_state st;
    if (rk_block_state_init(&st, g)) return rk_fail(err, RK_ENOMEM, "out of memory");
    rk_status r = RK_OK;
    int64_t in_size = st.live;
    for (int i = 0; i < o->n_fwd; i++)
        if (o->fwd[i].kind == RK_OP_RUN && (o->fwd[i].node < 0 || o->fwd[i].node >= g->n_c ||
                                            g->c[o->fwd[i].node].kind != RK_C_FWD)) {
            r = rk_fail(err, RK_EINPUT, "option forward: op %d runs a node that is not a forward node", i);
            goto done;
        }
    r = rk_block_replay(g, &st, o->fwd, o->n_fwd, "option forward", err);
    if (r) goto done;
    for (int k = 0; k < g->n_inputs; k++)
        if (!st.present[g->inputs[k]]) {
            r = rk_fail(err, RK_EINPUT, "option forward: forgets the block input '%s'", g->d[g->inputs[k]].name);
            goto done;
        }
    if (!st.present[g->output]) {
        r = rk_fail(err, RK_EINPUT, "option forward: does not leave the block output '%s' in memory",
                    g->d[g->output].name);
        goto done;
    }
    o->input_size = in_size;
    o->output_size = g->d[g->output].size;
    o->fwd_time = st.time;
    o->fwd_peak = st.peak;
    o->saved = st.live - in_size - o->output_size;
    o->bwd_time = 0;
    o->bwd_peak = 0;
    if (o->n_bwd > 0) {
        rk_op loss = {RK_OP_RUN, 0, g->loss, -1};
        r = rk_block_replay(g, &st, &loss, 1, "option loss", err);
        if (r) goto done;
        rk_block_state_reset_peak(&st);
        double t0 = st.time;
        r = rk_block_replay(g, &st, o->bwd, o->n_bwd, "option backward", err);
        if (r) goto done;
        r = rk_block_check_complete(g, &st, "option backward", err);
        if (r) goto done;
        for (int d = 0; d < g->n_d; d++) {
            int want = is_input(g, d) || is_input_grad(g, d);
            if (st.present[d] && !want) {
                r = rk_fail(err, RK_EINPUT, "option backward: leaves '%s' in memory; it must end with only the inputs and their grads",
                            g->d[d].name);
                goto done;
            }
            if (!st.present[d] && want) {
                r = rk_fail(err, RK_EINPUT, "option backward: '%s' is not in memory at the end", g->d[d].name);
                goto done;
            }
        }
        o->bwd_time = st.time - t0;
        o->bwd_peak = st.peak;
    }
done:
    rk_block_state_free(&st);
    return r;
}

/* Emit `seq` (compute indices) as run ops, forgetting every data right after
 * the op after which it is not needed: no later use (real/global edge) and
 * no later accumulation before a re-production.  Data in `keep` are never
 * forgotten.  `present` is the state before the sequence (updated). */
static rk_status emit_asap(const rk_graph *g, const int *seq, int n, char *present, const char *keep, rk_op **ops,
                           int *n_ops) {
    int cap = n * 4 + g->n_d + 8, cnt = 0;
    rk_op *out = malloc((size_t)cap * sizeof *out);
    if (!out) return RK_ENOMEM;
#define PUSH(K, N)                                                                                                     \
    do {                                                                                                               \
        if (cnt == cap) {                                                                                              \
            cap *= 2;                                                                                                  \
            rk_op *t_ = realloc(out, (size_t)cap * sizeof *out);                                                       \
            if (!t_) {                                                                                                 \
                free(out);                                                                                             \
                return RK_ENOMEM;                                                                                      \
            }                                                                                                          \
            out = t_;                                                                                                  \
        }                                                                                                              \
        out[cnt].kind = (K);                                                                                           \
        out[cnt].block = 0;                                                                                            \
        out[cnt].node = (N);                                                                                           \
        out[cnt].option = -1;                                                                                          \
        cnt++;                                                                                                         \
    } while (0)
    for (int i = -1; i < n; i++) {
        if (i >= 0) {
            const rk_cnode *c = &g->c[seq[i]];
            PUSH(RK_OP_RUN, seq[i]);
            for (int k = 0; k < c->n_outs; k++) present[c->outs[k]] = 1;
        }
        for (int d = 0; d < g->n_d; d++) {
            if (!present[d] || keep[d]) continue;
            int needed = 0;
            for (int j = i + 1; j < n && !needed; j++) {
                const rk_cnode *c = &g->c[seq[j]];
                int uses = 0, prods = 0;
                for (int k = 0; k < c->n_uses; k++)
                    if (c->uses[k].data == d && c->uses[k].kind != RK_EDGE_FAKE) uses = 1;
                for (int k = 0; k < c->n_outs; k++)
                    if (c->outs[k] == d) prods = 1;
                if (uses) needed = 1;
                else if (prods) {
                    if (g->d[d].kind == RK_D_GRAD) needed = 1; /* accumulation into it */
                    else break;                                 /* recomputed later: free now */
                }
            }
            if (!needed) {
                PUSH(RK_OP_FORGET, d);
                present[d] = 0;
            }
        }
    }
#undef PUSH
    *ops = out;
    *n_ops = cnt;
    return RK_OK;
}

typedef enum { OPT_KEEP_ALL, OPT_NONE, OPT_ASAP } builtin_kind;

static rk_status build_builtin(const rk_graph *g, rk_option *o, builtin_kind kind, rk_error *err) {
    memset(o, 0, sizeof *o);
    if (!g->finalized) return rk_fail(err, RK_EFAIL, "graph not finalized");
    int nf = 0, nb = 0;
    int *fseq = malloc((size_t)(g->n_c + 1) * sizeof(int));
    int *bseq = malloc((size_t)(g->n_c + 1) * sizeof(int));
    char *present = calloc((size_t)g->n_d + 1, 1);
    char *keep = calloc((size_t)g->n_d + 1, 1);
    rk_status r = RK_OK;
    if (!fseq || !bseq || !present || !keep) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->n_c; i++) {
        int c = g->topo[i];
        if (g->c[c].kind == RK_C_FWD) fseq[nf++] = c;
        else if (g->c[c].kind == RK_C_BWD) bseq[nb++] = c;
    }
    for (int k = 0; k < g->n_inputs; k++) present[g->inputs[k]] = 1;
    /* forward keep set */
    for (int k = 0; k < g->n_inputs; k++) keep[g->inputs[k]] = 1;
    keep[g->output] = 1;
    if (kind == OPT_KEEP_ALL) {
        memset(keep, 1, (size_t)g->n_d);
    } else if (kind == OPT_ASAP) {
        for (int i = 0; i < nb; i++) {
            const rk_cnode *c = &g->c[bseq[i]];
            for (int k = 0; k < c->n_uses; k++)
                if (c->uses[k].kind != RK_EDGE_FAKE && g->d[c->uses[k].data].kind != RK_D_GRAD) keep[c->uses[k].data] = 1;
        }
    }
    if ((r = emit_asap(g, fseq, nf, present, keep, &o->fwd, &o->n_fwd))) {
        r = rk_fail(err, r, "out of memory");
        goto done;
    }
    if (kind != OPT_NONE) {
        present[g->output_grad] = 1;
        memset(keep, 0, (size_t)g->n_d);
        for (int k = 0; k < g->n_inputs; k++) {
            keep[g->inputs[k]] = 1;
            if (g->input_grads[k] >= 0) keep[g->input_grads[k]] = 1;
        }
        if ((r = emit_asap(g, bseq, nb, present, keep, &o->bwd, &o->n_bwd))) {
            r = rk_fail(err, r, "out of memory");
            goto done;
        }
    }
    r = rk_option_evaluate(g, o, err);
done:
    free(fseq);
    free(bseq);
    free(present);
    free(keep);
    if (r) rk_option_free(o);
    return r;
}

rk_status rk_option_keep_all(const rk_graph *g, rk_option *o, rk_error *err) { return build_builtin(g, o, OPT_KEEP_ALL, err); }
rk_status rk_option_none(const rk_graph *g, rk_option *o, rk_error *err) { return build_builtin(g, o, OPT_NONE, err); }
rk_status rk_option_asap(const rk_graph *g, rk_option *o, rk_error *err) { return build_builtin(g, o, OPT_ASAP, err); }
