/* option_segments.c — segmented block options: checkpointing inside one
 * block graph, for blocks too large for rk-Checkmate's model (a GRU
 * encoder-decoder with attention is one block of thousands of nodes: no
 * 1-separator inside it).
 *
 * The forward nodes, in topological order, are cut into k segments of
 * about equal bytes.  The forward runs every node once and keeps the
 * inputs, the output, the last segment's results and (unless lean) what a
 * later segment's forward reads.  The backward takes the segments from the
 * last to the first: it runs again the forward nodes (of the segment, or
 * of earlier ones when lean) that make what the segment's backward nodes
 * read and the forward did not keep (a node whose kept data a later
 * segment read runs again for its autograd graph, its data recomputed in
 * place), then the segment's backward nodes.  Every data is forgotten
 * right after the op after which it is not needed: its next touch is a
 * re-production (or there is none).  The result is checked and measured by
 * rk_option_evaluate; k = 1 (not lean) is the asap option. */
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

typedef struct {
    int pos;  /* index in the run sequence */
    char use; /* a real (or global) use */
    char prod;
} event;

typedef struct {
    const rk_graph *g;
    int *seq, n_seq, n_fwd_seq; /* the runs: forward part, then backward part */
    int *ev_start, *ev_n;        /* per data: its events, in sequence order */
    event *ev;
} plan;

static void plan_free(plan *p) {
    free(p->seq);
    free(p->ev_start);
    free(p->ev_n);
    free(p->ev);
}

/* The events of every data over p->seq (CSR by data). */
static rk_status plan_events(plan *p) {
    const rk_graph *g = p->g;
    p->ev_start = calloc((size_t)g->n_d + 1, sizeof(int));
    p->ev_n = calloc((size_t)g->n_d + 1, sizeof(int));
    if (!p->ev_start || !p->ev_n) return RK_ENOMEM;
    long total = 0;
    for (int i = 0; i < p->n_seq; i++) {
        const rk_cnode *c = &g->c[p->seq[i]];
        total += c->n_uses + c->n_outs;
    }
    p->ev = malloc((size_t)(total + 1) * sizeof(event));
    if (!p->ev) return RK_ENOMEM;
    for (int i = 0; i < p->n_seq; i++) { /* counts (a node touching a data twice: one event) */
        const rk_cnode *c = &g->c[p->seq[i]];
        for (int k = 0; k < c->n_uses; k++) p->ev_n[c->uses[k].data]++;
        for (int k = 0; k < c->n_outs; k++) p->ev_n[c->outs[k]]++;
    }
    int acc = 0;
    for (int d = 0; d < g->n_d; d++) {
        p->ev_start[d] = acc;
        acc += p->ev_n[d];
        p->ev_n[d] = 0;
    }
    for (int i = 0; i < p->n_seq; i++) {
        const rk_cnode *c = &g->c[p->seq[i]];
        for (int pass = 0; pass < 2; pass++) {
            int n = pass ? c->n_outs : c->n_uses;
            for (int k = 0; k < n; k++) {
                int d = pass ? c->outs[k] : c->uses[k].data;
                if (!pass && c->uses[k].kind == RK_EDGE_FAKE) continue;
                event *e = p->ev_n[d] > 0 ? &p->ev[p->ev_start[d] + p->ev_n[d] - 1] : NULL;
                if (!e || e->pos != i) {
                    e = &p->ev[p->ev_start[d] + p->ev_n[d]++];
                    e->pos = i;
                    e->use = e->prod = 0;
                }
                if (pass) e->prod = 1;
                else e->use = 1;
            }
        }
    }
    return RK_OK;
}

/* Is data d needed after sequence position i: its next event is a use, or
 * an accumulation into a gradient still being added up? */
static int needed_after(const plan *p, int d, int i) {
    const event *e = p->ev + p->ev_start[d];
    int n = p->ev_n[d];
    int lo = 0, hi = n; /* first event with pos > i */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (e[mid].pos <= i) lo = mid + 1;
        else hi = mid;
    }
    if (lo == n) return 0;
    return e[lo].use || p->g->d[d].kind == RK_D_GRAD;
}

typedef struct {
    rk_op *ops;
    int n, cap;
} op_list;

static int push(op_list *l, rk_op_kind kind, int node) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        rk_op *t = realloc(l->ops, (size_t)cap * sizeof *t);
        if (!t) return RK_ENOMEM;
        l->ops = t;
        l->cap = cap;
    }
    l->ops[l->n].kind = kind;
    l->ops[l->n].block = 0;
    l->ops[l->n].node = node;
    l->ops[l->n].option = -1;
    l->n++;
    return RK_OK;
}

/* Emit p->seq with every forget as early as possible: after op i, each
 * data it touched that is not needed later goes (inputs never; the output
 * not before the forward's end; input grads never in the backward).  At the
 * backward's start the output and the output grad are checked too. */
static rk_status emit(const plan *p, rk_option *o) {
    const rk_graph *g = p->g;
    char *present = calloc((size_t)g->n_d + 1, 1);
    char *keep = calloc((size_t)g->n_d + 1, 1);
    op_list f = {0}, b = {0};
    rk_status r = RK_OK;
    if (!present || !keep) {
        r = RK_ENOMEM;
        goto done;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        present[g->inputs[k]] = 1;
        keep[g->inputs[k]] = 1;
    }
    keep[g->output] = 1;
    for (int i = 0; i < p->n_seq && !r; i++) {
        op_list *l = i < p->n_fwd_seq ? &f : &b;
        if (i == p->n_fwd_seq) { /* the backward starts: after the loss */
            keep[g->output] = 0;
            for (int k = 0; k < g->n_inputs; k++)
                if (g->input_grads[k] >= 0) keep[g->input_grads[k]] = 1;
            present[g->output_grad] = 1;
            int gs[2] = {g->output, g->output_grad};
            for (int k = 0; k < 2 && !r; k++)
                if (present[gs[k]] && !keep[gs[k]] && !needed_after(p, gs[k], i - 1)) {
                    r = push(l, RK_OP_FORGET, gs[k]);
                    present[gs[k]] = 0;
                }
        }
        const rk_cnode *c = &g->c[p->seq[i]];
        if (!r) r = push(l, RK_OP_RUN, p->seq[i]);
        for (int k = 0; k < c->n_outs; k++) present[c->outs[k]] = 1;
        for (int pass = 0; pass < 2 && !r; pass++) {
            int n = pass ? c->n_outs : c->n_uses;
            for (int k = 0; k < n && !r; k++) {
                int d = pass ? c->outs[k] : c->uses[k].data;
                if (!present[d] || keep[d] || needed_after(p, d, i)) continue;
                r = push(l, RK_OP_FORGET, d);
                present[d] = 0;
            }
        }
    }
    if (r) goto done;
    o->fwd = f.ops;
    o->n_fwd = f.n;
    o->bwd = b.ops;
    o->n_bwd = b.n;
    f.ops = b.ops = NULL;
done:
    free(f.ops);
    free(b.ops);
    free(present);
    free(keep);
    return r;
}

rk_status rk_option_segments(const rk_graph *g, int k, int lean, rk_option *o, rk_error *err) {
    memset(o, 0, sizeof *o);
    if (!g->finalized) return rk_fail(err, RK_EFAIL, "graph not finalized");
    if (k < 1) return rk_fail(err, RK_EINPUT, "segmented option: %d segments; expected at least 1", k);
    plan p = {.g = g};
    int nf = 0, nb = 0;
    int *fseq = malloc((size_t)(g->n_c + 1) * sizeof(int));
    int *bseq = malloc((size_t)(g->n_c + 1) * sizeof(int));
    int *seg = malloc((size_t)(g->n_c + 1) * sizeof(int));   /* per compute node */
    int *dseg = malloc((size_t)(g->n_d + 1) * sizeof(int));  /* per data: its producer's segment (-1) */
    char *later_read = calloc((size_t)g->n_d + 1, 1);       /* read by a later segment's forward */
    char *want = calloc((size_t)g->n_d + 1, 1);
    char *rerun = calloc((size_t)g->n_c + 1, 1);
    char *keep = calloc((size_t)g->n_d + 1, 1);   /* kept from the forward */
    rk_status r = RK_OK;
    if (!fseq || !bseq || !seg || !dseg || !later_read || !want || !rerun || !keep) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->n_c; i++) {
        int c = g->topo[i];
        if (g->c[c].kind == RK_C_FWD) fseq[nf++] = c;
        else if (g->c[c].kind == RK_C_BWD) bseq[nb++] = c;
    }
    if (k > nf) k = nf > 0 ? nf : 1;
    /* the forward, each segment's recomputation (at most every forward node) and the backward */
    p.seq = malloc(((size_t)nf * (size_t)(k + 1) + (size_t)nb + 1) * sizeof(int));
    if (!p.seq) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    /* segments of about equal bytes of forward results */
    int64_t total = 0, acc = 0;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < g->c[fseq[i]].n_outs; j++) total += g->d[g->c[fseq[i]].outs[j]].size;
    for (int d = 0; d < g->n_d; d++) dseg[d] = -1;
    for (int i = 0; i < nf; i++) {
        const rk_cnode *c = &g->c[fseq[i]];
        int s = total > 0 ? (int)((double)acc * k / (double)total) : (int)((long)i * k / nf);
        if (s >= k) s = k - 1;
        seg[fseq[i]] = s;
        for (int j = 0; j < c->n_outs; j++) {
            acc += g->d[c->outs[j]].size;
            dseg[c->outs[j]] = s;
        }
    }
    /* a backward node's segment: the latest among the forward results it
     * touches (its own data, by a real or a fake edge) */
    for (int i = 0; i < nb; i++) {
        const rk_cnode *c = &g->c[bseq[i]];
        int s = k - 1, best = -1;
        for (int j = 0; j < c->n_uses; j++) {
            int d = c->uses[j].data;
            if (g->d[d].kind != RK_D_GRAD && dseg[d] > best) best = dseg[d];
        }
        if (best >= 0) s = best;
        seg[bseq[i]] = s;
    }
    for (int i = 0; i < nf; i++) {
        const rk_cnode *c = &g->c[fseq[i]];
        for (int j = 0; j < c->n_uses; j++) {
            int d = c->uses[j].data;
            if (c->uses[j].kind != RK_EDGE_FAKE && dseg[d] >= 0 && dseg[d] < seg[fseq[i]]) later_read[d] = 1;
        }
    }
    later_read[g->output] = 1;
    /* kept from the forward, never made again: the inputs, the output, the
     * last segment's results and (unless lean) what a later segment reads */
    for (int d = 0; d < g->n_d; d++) keep[d] = (later_read[d] && !lean) || dseg[d] == k - 1;
    for (int i = 0; i < g->n_inputs; i++) keep[g->inputs[i]] = 1;
    keep[g->output] = 1;
    /* the runs: the forward, then per segment (last first) what its
     * backward nodes read that was not kept, made again (from what was
     * kept), and its backward nodes */
    for (int i = 0; i < nf; i++) p.seq[p.n_seq++] = fseq[i];
    p.n_fwd_seq = p.n_seq;
    for (int s = k - 1; s >= 0; s--) {
        memset(want, 0, (size_t)g->n_d);
        for (int i = 0; i < nb; i++) {
            const rk_cnode *c = &g->c[bseq[i]];
            if (seg[bseq[i]] != s) continue;
            for (int j = 0; j < c->n_uses; j++)
                if (c->uses[j].kind != RK_EDGE_FAKE) want[c->uses[j].data] = 1;
        }
        for (int i = nf - 1; i >= 0; i--) { /* reverse topological: a node, then what it reads */
            int cn = fseq[i];
            const rk_cnode *c = &g->c[cn];
            rerun[cn] = 0;
            if (seg[cn] > s) continue;
            int wanted = 0;
            for (int j = 0; j < c->n_outs; j++) {
                int d = c->outs[j];
                wanted = wanted || (want[d] && !keep[d]);
            }
            if (!wanted) continue;
            rerun[cn] = 1;
            for (int j = 0; j < c->n_uses; j++)
                if (c->uses[j].kind != RK_EDGE_FAKE) want[c->uses[j].data] = 1;
        }
        for (int i = 0; i < nf; i++)
            if (rerun[fseq[i]]) p.seq[p.n_seq++] = fseq[i];
        for (int i = 0; i < nb; i++)
            if (seg[bseq[i]] == s) p.seq[p.n_seq++] = bseq[i];
    }
    if (plan_events(&p)) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    if (emit(&p, o)) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    r = rk_option_evaluate(g, o, err);
done:
    plan_free(&p);
    free(fseq);
    free(bseq);
    free(seg);
    free(dseg);
    free(later_read);
    free(want);
    free(rerun);
    free(keep);
    if (r) rk_option_free(o);
    return r;
}
