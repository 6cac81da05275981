/* peak_explain.c — `--explain` of `rkmate simulate` and `rkmate solve`: what
 * is in memory at a schedule's peak.  Replays the schedule (already checked by
 * rk_simulate) up to its peak op and sorts every data node present then into
 * what the running compute node reads, what it makes, what it only names for
 * its shape, and what the schedule holds across it, with bytes, plus the
 * node's own temporary (its measured overhead). */
#include <stdlib.h>
#include <string.h>

#include "peak_explain.h"
#include "solve_cli.h"

enum { ROLE_NONE = 0, ROLE_READ, ROLE_MADE, ROLE_SHAPE, ROLE_HELD };
static const char *const role_name[] = {"", "read", "made", "shape-only", "held"};

typedef struct {
    int gd, role;
} live_item;

static int by_role_then_bytes(const void *a, const void *b, void *ctx) {
    const live_item *x = a, *y = b;
    const int64_t *size = ctx;
    if (x->role != y->role) return x->role - y->role;
    if (size[x->gd] != size[y->gd]) return size[x->gd] < size[y->gd] ? 1 : -1;
    return x->gd - y->gd;
}

/* qsort has no context argument in C11: a small insertion sort (a few
 * hundred items at most are live at once). */
static void sort_items(live_item *v, int n, const int64_t *size) {
    for (int i = 1; i < n; i++) {
        live_item t = v[i];
        int j = i - 1;
        while (j >= 0 && by_role_then_bytes(&v[j], &t, (void *)size) > 0) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = t;
    }
}

/* Where a data node comes from, in words: a block's input or output (a
 * boundary the chain cuts at), or a node inside it. */
static const char *place_of(const rk_chain *ch, const rk_chain_index *ix, int gd) {
    int k = ix->d_block[gd], l = ix->d_local[gd];
    const rk_graph *g = &ch->classes[ch->blocks[k].cls];
    if (k == 0)
        for (int i = 0; i < g->n_inputs; i++)
            if (g->inputs[i] == l) return "model input";
    if (l == g->output || l == g->output_grad) return k == ch->n_blocks - 1 ? "model output" : "block boundary";
    return "inside the block";
}

/* What is in memory at the peak: every data node present, with its role. */
typedef struct {
    rk_sim_result sr;
    rk_chain_index ix;
    const rk_cnode *c; /* the node running at the peak, or NULL */
    int blk;
    live_item *items;
    int n;
    int64_t sum[5], over, model_input_held;
} peak_state;

static void peak_state_free(peak_state *p) {
    free(p->items);
    rk_chain_index_free(&p->ix);
    memset(p, 0, sizeof *p);
}

static rk_status collect(const rk_chain *ch, const rk_schedule *s, peak_state *p, rk_error *err) {
    memset(p, 0, sizeof *p);
    rk_sim_result sr;
    rk_status r = rk_simulate(ch, s, &sr, err);
    if (r) return r;
    p->sr = sr;
    if ((r = rk_chain_index_build(ch, &p->ix, err))) return r;
    rk_chain_index ix = p->ix;
    char *present = calloc((size_t)ix.n_d + 1, 1);
    char *role = calloc((size_t)ix.n_d + 1, 1);
    live_item *items = malloc((size_t)(ix.n_d + 1) * sizeof *items);
    p->items = items;
    if (!present || !role || !items) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    const rk_graph *g0 = &ch->classes[ch->blocks[0].cls];
    for (int i = 0; i < g0->n_inputs; i++) present[ix.d_map[ix.d_base[0] + g0->inputs[i]]] = 1;
    for (int i = 0; i < sr.peak_op && i < s->n_ops; i++) {
        const rk_op *o = &s->ops[i];
        if (o->kind == RK_OP_MARK) continue;
        const rk_graph *g = &ch->classes[ch->blocks[o->block].cls];
        if (o->kind == RK_OP_RUN)
            for (int q = 0; q < g->c[o->node].n_outs; q++) present[ix.d_map[ix.d_base[o->block] + g->c[o->node].outs[q]]] = 1;
        else present[ix.d_map[ix.d_base[o->block] + o->node]] = 0;
    }
    const rk_cnode *c = NULL;
    int blk = -1;
    if (sr.peak_op >= 0 && sr.peak_op < s->n_ops && s->ops[sr.peak_op].kind == RK_OP_RUN) {
        blk = s->ops[sr.peak_op].block;
        const rk_graph *g = &ch->classes[ch->blocks[blk].cls];
        c = &g->c[s->ops[sr.peak_op].node];
        for (int q = 0; q < c->n_uses; q++) {
            int gd = ix.d_map[ix.d_base[blk] + c->uses[q].data];
            if (c->uses[q].kind != RK_EDGE_FAKE) role[gd] = ROLE_READ;
            else if (!role[gd]) role[gd] = ROLE_SHAPE;
        }
        for (int q = 0; q < c->n_outs; q++) {
            int gd = ix.d_map[ix.d_base[blk] + c->outs[q]];
            if (!present[gd] || !role[gd]) role[gd] = ROLE_MADE;
            present[gd] = 1;
        }
    }
    int n = 0;
    int64_t sum[5] = {0};
    for (int gd = 0; gd < ix.n_d; gd++)
        if (present[gd]) {
            int ro = role[gd] ? role[gd] : ROLE_HELD;
            items[n].gd = gd;
            items[n].role = ro;
            sum[ro] += ix.d_size[gd];
            n++;
        }
    sort_items(items, n, ix.d_size);
    p->c = c;
    p->blk = blk;
    p->n = n;
    memcpy(p->sum, sum, sizeof sum);
    /* the node's temporary: what the peak holds beyond the data present
     * (negative when its outputs are written in the place of inputs) */
    p->over = 0;
    if (c) {
        p->over = sr.peak;
        for (int ro = 0; ro < 5; ro++) p->over -= sum[ro];
    }
    for (int i = 0; i < n; i++)
        if (items[i].role == ROLE_HELD && !strcmp(place_of(ch, &ix, items[i].gd), "model input"))
            p->model_input_held += ix.d_size[items[i].gd];
done:
    free(present);
    free(role);
    if (r) peak_state_free(p);
    return r;
}

rk_status peak_explain(FILE *f, const rk_chain *ch, const rk_schedule *s, int json, rk_error *err) {
    peak_state p;
    rk_status r = collect(ch, s, &p, err);
    if (r) return r;
    rk_sim_result sr = p.sr;
    rk_chain_index ix = p.ix;
    const rk_cnode *c = p.c;
    int blk = p.blk, n = p.n;
    live_item *items = p.items;
    int64_t *sum = p.sum;
    int64_t over = p.over;
    if (json) {
        fprintf(f, "{\"peak\": %lld, \"peak_op\": %d, ", (long long)sr.peak, sr.peak_op);
        if (c) {
            fprintf(f, "\"block\": %d, \"node\": ", blk);
            solve_cli_json_str(f, c->name);
            fprintf(f, ", \"phase\": \"%s\", ", rk_ckind_name(c->kind));
        }
        fprintf(f, "\"read\": %lld, \"made\": %lld, \"shape_only\": %lld, \"held\": %lld, \"temporary\": %lld, \"live\": [",
                (long long)sum[ROLE_READ], (long long)sum[ROLE_MADE], (long long)sum[ROLE_SHAPE],
                (long long)sum[ROLE_HELD], (long long)over);
        for (int i = 0; i < n; i++) {
            int gd = items[i].gd, k = ix.d_block[gd];
            const rk_dnode *d = &ch->classes[ch->blocks[k].cls].d[ix.d_local[gd]];
            fprintf(f, "%s{\"block\": %d, \"name\": ", i ? ", " : "", k);
            solve_cli_json_str(f, d->name);
            fprintf(f, ", \"kind\": \"%s\", \"bytes\": %lld, \"role\": \"%s\", \"place\": \"%s\"}", rk_dkind_name(d->kind),
                    (long long)ix.d_size[gd], role_name[items[i].role], place_of(ch, &ix, gd));
        }
        fprintf(f, "]}");
    } else {
        char b[32];
        fprintf(f, "peak %lld bytes (%s) at op %d", (long long)sr.peak, rk_format_bytes(sr.peak, b, sizeof b), sr.peak_op);
        if (c) fprintf(f, ": %s node %s of block %d (%s)", rk_ckind_name(c->kind), c->name, blk, ch->blocks[blk].name);
        fprintf(f, "\n");
        static const char *const what[] = {"", "read by the node", "made by the node", "named for a shape only",
                                           "held across it by the schedule"};
        for (int ro = ROLE_READ; ro <= ROLE_HELD; ro++) {
            if (!sum[ro]) continue;
            fprintf(f, "  %-32s %12lld bytes (%s)\n", what[ro], (long long)sum[ro], rk_format_bytes(sum[ro], b, sizeof b));
            for (int i = 0; i < n; i++) {
                if (items[i].role != ro) continue;
                int gd = items[i].gd, k = ix.d_block[gd];
                const rk_dnode *d = &ch->classes[ch->blocks[k].cls].d[ix.d_local[gd]];
                fprintf(f, "    %-8s block %3d %-28s %12lld  %s\n", rk_dkind_name(d->kind), k, d->name,
                        (long long)ix.d_size[gd], place_of(ch, &ix, gd));
            }
        }
        if (over) fprintf(f, "  %-32s %12lld bytes (%s)\n", "the node's temporary", (long long)over,
                          rk_format_bytes(over, b, sizeof b));
    }
    peak_state_free(&p);
    return RK_OK;
}

rk_status peak_summary(const rk_chain *ch, const rk_schedule *s, peak_parts *out, rk_error *err) {
    peak_state p;
    rk_status r = collect(ch, s, &p, err);
    if (r) return r;
    memset(out, 0, sizeof *out);
    out->peak = p.sr.peak;
    out->block = p.blk;
    out->node = p.c ? p.c->name : NULL;
    out->kind = p.c ? p.c->kind : RK_C_FWD;
    out->own = p.sum[ROLE_READ] + p.sum[ROLE_MADE];
    out->temporary = p.over;
    out->held = p.sum[ROLE_HELD] + p.sum[ROLE_SHAPE];
    out->model_input_held = p.model_input_held;
    peak_state_free(&p);
    return RK_OK;
}
