/* graph.c — the CD-graph of one block: builder, validation (finalize) with
 * precise messages, derived producer/user lists and the topological order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

void rk_graph_init(rk_graph *g) {
    memset(g, 0, sizeof *g);
    g->output = g->output_grad = g->loss = -1;
}

static void free_derived(rk_graph *g) {
    for (int i = 0; i < g->n_d; i++) {
        free(g->d[i].producers);
        free(g->d[i].users);
        g->d[i].producers = g->d[i].users = NULL;
        g->d[i].n_producers = g->d[i].n_users = 0;
    }
    free(g->topo);
    g->topo = NULL;
    g->finalized = 0;
}

void rk_graph_free(rk_graph *g) {
    if (!g) return;
    free_derived(g);
    for (int i = 0; i < g->n_c; i++) {
        free(g->c[i].name);
        free(g->c[i].target);
        free(g->c[i].uses);
        free(g->c[i].outs);
    }
    for (int i = 0; i < g->n_d; i++) {
        free(g->d[i].name);
        free(g->d[i].target);
    }
    free(g->c);
    free(g->d);
    free(g->inputs);
    free(g->input_grads);
    rk_graph_init(g);
}

static char *dupstr(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (r) memcpy(r, s, n);
    return r;
}

int rk_graph_add_data(rk_graph *g, const char *name, rk_dkind kind, int64_t size) {
    if (g->n_d == g->cap_d) {
        int cap = g->cap_d ? 2 * g->cap_d : 16;
        rk_dnode *d = realloc(g->d, (size_t)cap * sizeof *d);
        if (!d) return -1;
        g->d = d;
        g->cap_d = cap;
    }
    rk_dnode *d = &g->d[g->n_d];
    memset(d, 0, sizeof *d);
    d->name = dupstr(name ? name : "");
    if (!d->name) return -1;
    d->kind = kind;
    d->size = size;
    g->finalized = 0;
    return g->n_d++;
}

int rk_graph_add_compute(rk_graph *g, const char *name, rk_ckind kind, double time, int64_t overhead) {
    if (g->n_c == g->cap_c) {
        int cap = g->cap_c ? 2 * g->cap_c : 16;
        rk_cnode *c = realloc(g->c, (size_t)cap * sizeof *c);
        if (!c) return -1;
        g->c = c;
        g->cap_c = cap;
    }
    rk_cnode *c = &g->c[g->n_c];
    memset(c, 0, sizeof *c);
    c->name = dupstr(name ? name : "");
    if (!c->name) return -1;
    c->kind = kind;
    c->time = time;
    c->overhead = overhead;
    if (kind == RK_C_LOSS && g->loss < 0) g->loss = g->n_c;
    g->finalized = 0;
    return g->n_c++;
}

int64_t rk_cnode_step_overhead(const rk_graph *g, int c) {
    const rk_cnode *n = &g->c[c];
    if (n->overhead >= 0) return n->overhead;
    int64_t sole = 0;
    for (int k = 0; k < n->n_outs; k++) {
        int d = n->outs[k], seen = 0;
        for (int q = 0; q < k; q++) seen |= n->outs[q] == d;
        if (!seen && g->d[d].kind == RK_D_GRAD && g->d[d].n_producers == 1) sole += g->d[d].size;
    }
    return n->overhead > -sole ? n->overhead : -sole;
}

rk_status rk_graph_add_use(rk_graph *g, int c, int d, rk_edge_kind kind) {
    if (c < 0 || c >= g->n_c) return RK_EINPUT;
    rk_cnode *n = &g->c[c];
    rk_use *u = realloc(n->uses, (size_t)(n->n_uses + 1) * sizeof *u);
    if (!u) return RK_ENOMEM;
    n->uses = u;
    u[n->n_uses].data = d;
    u[n->n_uses].kind = kind;
    n->n_uses++;
    g->finalized = 0;
    return RK_OK;
}

rk_status rk_graph_add_out(rk_graph *g, int c, int d) {
    if (c < 0 || c >= g->n_c) return RK_EINPUT;
    rk_cnode *n = &g->c[c];
    int *o = realloc(n->outs, (size_t)(n->n_outs + 1) * sizeof *o);
    if (!o) return RK_ENOMEM;
    n->outs = o;
    o[n->n_outs++] = d;
    g->finalized = 0;
    return RK_OK;
}

rk_status rk_graph_set_target(rk_graph *g, int is_compute, int idx, const char *target) {
    char **slot;
    if (is_compute) {
        if (idx < 0 || idx >= g->n_c) return RK_EINPUT;
        slot = &g->c[idx].target;
    } else {
        if (idx < 0 || idx >= g->n_d) return RK_EINPUT;
        slot = &g->d[idx].target;
    }
    free(*slot);
    *slot = dupstr(target);
    return (target && !*slot) ? RK_ENOMEM : RK_OK;
}

rk_status rk_graph_add_input(rk_graph *g, int d, int grad) {
    int *a = realloc(g->inputs, (size_t)(g->n_inputs + 1) * sizeof *a);
    if (!a) return RK_ENOMEM;
    g->inputs = a;
    int *b = realloc(g->input_grads, (size_t)(g->n_inputs + 1) * sizeof *b);
    if (!b) return RK_ENOMEM;
    g->input_grads = b;
    a[g->n_inputs] = d;
    b[g->n_inputs] = grad;
    g->n_inputs++;
    g->finalized = 0;
    return RK_OK;
}

void rk_graph_set_output(rk_graph *g, int output, int output_grad, int loss) {
    g->output = output;
    g->output_grad = output_grad;
    g->loss = loss;
    g->finalized = 0;
}

int rk_graph_find_compute(const rk_graph *g, const char *name) {
    for (int i = 0; i < g->n_c; i++)
        if (!strcmp(g->c[i].name, name)) return i;
    return -1;
}

int rk_graph_find_data(const rk_graph *g, const char *name) {
    for (int i = 0; i < g->n_d; i++)
        if (!strcmp(g->d[i].name, name)) return i;
    return -1;
}

/* Sorted name index to detect duplicates in O(n log n). */
typedef struct { const char *name; int idx; } name_ref;
static int cmp_name_ref(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx - y->idx);
}

static rk_status check_unique(const char *where, const char *what, int n, const char *(*get)(const rk_graph *, int),
                              const rk_graph *g, rk_error *err) {
    if (n == 0) return RK_OK;
    name_ref *r = malloc((size_t)n * sizeof *r);
    if (!r) return rk_fail(err, RK_ENOMEM, "%s: out of memory", where);
    for (int i = 0; i < n; i++) {
        r[i].name = get(g, i);
        r[i].idx = i;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_name_ref);
    rk_status st = RK_OK;
    for (int i = 0; i < n; i++) {
        if (!r[i].name[0]) {
            st = rk_fail(err, RK_EINPUT, "%s: %s node #%d has an empty name", where, what, r[i].idx);
            break;
        }
        if (i > 0 && !strcmp(r[i].name, r[i - 1].name)) {
            st = rk_fail(err, RK_EINPUT, "%s: duplicate %s node name '%s' (nodes #%d and #%d)", where, what,
                         r[i].name, r[i - 1].idx, r[i].idx);
            break;
        }
    }
    free(r);
    return st;
}
static const char *cname(const rk_graph *g, int i) { return g->c[i].name; }
static const char *dname(const rk_graph *g, int i) { return g->d[i].name; }

static rk_status append_int(int **arr, int *n, int v) {
    int *a = realloc(*arr, (size_t)(*n + 1) * sizeof **arr);
    if (!a) return RK_ENOMEM;
    *arr = a;
    a[(*n)++] = v;
    return RK_OK;
}

/* Kahn's algorithm restricted to compute nodes with kind mask; ties by
 * smallest index.  Dependencies: c2 depends on c1 when c2 uses (any edge
 * kind) a data produced by c1.  Writes into topo from *pos. */
static int topo_phase(const rk_graph *g, const char *in_phase, int *indeg, int *topo, int *pos) {
    /* simple O(n^2) selection of the smallest ready index: blocks are small */
    int n = 0;
    for (int i = 0; i < g->n_c; i++) n += in_phase[i];
    char *done = calloc((size_t)g->n_c, 1);
    if (!done) return -1;
    int placed = 0;
    while (placed < n) {
        int pick = -1;
        for (int i = 0; i < g->n_c; i++)
            if (in_phase[i] && !done[i] && indeg[i] == 0) {
                pick = i;
                break;
            }
        if (pick < 0) break;
        done[pick] = 1;
        topo[(*pos)++] = pick;
        placed++;
        const rk_cnode *c = &g->c[pick];
        for (int k = 0; k < c->n_outs; k++) {
            const rk_dnode *d = &g->d[c->outs[k]];
            for (int u = 0; u < d->n_users; u++) indeg[d->users[u]]--;
        }
    }
    free(done);
    return placed == n ? 0 : 1;
}

rk_status rk_graph_finalize(rk_graph *g, const char *where, rk_error *err) {
    free_derived(g);
    if (!where) where = "graph";
    rk_status st;
    if ((st = check_unique(where, "compute", g->n_c, cname, g, err))) return st;
    if ((st = check_unique(where, "data", g->n_d, dname, g, err))) return st;
    for (int i = 0; i < g->n_d; i++) {
        const rk_dnode *d = &g->d[i];
        if (d->kind < RK_D_DATA || d->kind > RK_D_PHANTOM)
            return rk_fail(err, RK_EINPUT, "%s: data node '%s' has an invalid kind", where, d->name);
        if (d->size < 0)
            return rk_fail(err, RK_EINPUT, "%s: data node '%s' has a negative size (%lld); expected bytes >= 0", where,
                           d->name, (long long)d->size);
    }
    int n_loss = 0;
    for (int i = 0; i < g->n_c; i++) {
        rk_cnode *c = &g->c[i];
        if (c->kind < RK_C_FWD || c->kind > RK_C_LOSS)
            return rk_fail(err, RK_EINPUT, "%s: compute node '%s' has an invalid kind", where, c->name);
        if (!isfinite(c->time) || c->time < 0)
            return rk_fail(err, RK_EINPUT, "%s: compute node '%s' has time %g; expected a finite number >= 0", where,
                           c->name, c->time);
        if (c->kind == RK_C_LOSS) n_loss++;
        for (int k = 0; k < c->n_uses; k++) {
            int d = c->uses[k].data;
            if (d < 0 || d >= g->n_d)
                return rk_fail(err, RK_EINPUT, "%s: compute node '%s' uses an unknown data node (#%d)", where, c->name, d);
            if (c->uses[k].kind < RK_EDGE_REAL || c->uses[k].kind > RK_EDGE_GLOBAL)
                return rk_fail(err, RK_EINPUT, "%s: compute node '%s' has a use edge of invalid kind", where, c->name);
            for (int k2 = 0; k2 < k; k2++)
                if (c->uses[k2].data == d)
                    return rk_fail(err, RK_EINPUT, "%s: compute node '%s' uses data '%s' twice", where, c->name,
                                   g->d[d].name);
            const rk_dnode *dn = &g->d[d];
            if (c->kind == RK_C_FWD && dn->kind != RK_D_DATA)
                return rk_fail(err, RK_EINPUT, "%s: forward node '%s' uses %s node '%s'; forward nodes use data nodes only",
                               where, c->name, rk_dkind_name(dn->kind), dn->name);
        }
        for (int k = 0; k < c->n_outs; k++) {
            int d = c->outs[k];
            if (d < 0 || d >= g->n_d)
                return rk_fail(err, RK_EINPUT, "%s: compute node '%s' produces an unknown data node (#%d)", where,
                               c->name, d);
            for (int k2 = 0; k2 < k; k2++)
                if (c->outs[k2] == d)
                    return rk_fail(err, RK_EINPUT, "%s: compute node '%s' produces data '%s' twice", where, c->name,
                                   g->d[d].name);
            for (int u = 0; u < c->n_uses; u++)
                if (c->uses[u].data == d)
                    return rk_fail(err, RK_EINPUT, "%s: compute node '%s' both uses and produces '%s' (a cycle)", where,
                                   c->name, g->d[d].name);
            const rk_dnode *dn = &g->d[d];
            if (c->kind == RK_C_FWD && dn->kind == RK_D_GRAD)
                return rk_fail(err, RK_EINPUT, "%s: forward node '%s' produces grad node '%s'", where, c->name, dn->name);
            if (c->kind != RK_C_FWD && dn->kind != RK_D_GRAD)
                return rk_fail(err, RK_EINPUT, "%s: %s node '%s' produces %s node '%s'; only grads are produced there",
                               where, rk_ckind_name(c->kind), c->name, rk_dkind_name(dn->kind), dn->name);
        }
    }
    if (n_loss != 1)
        return rk_fail(err, RK_EINPUT, "%s: expected exactly one loss node, found %d", where, n_loss);
    int loss = -1;
    for (int i = 0; i < g->n_c; i++)
        if (g->c[i].kind == RK_C_LOSS) loss = i;
    if (g->loss != loss) g->loss = loss;
    if (g->output < 0 || g->output >= g->n_d)
        return rk_fail(err, RK_EINPUT, "%s: the block output is missing or not a data node", where);
    if (g->d[g->output].kind != RK_D_DATA)
        return rk_fail(err, RK_EINPUT, "%s: the block output '%s' must be a data node (kind data)", where,
                       g->d[g->output].name);
    if (g->output_grad < 0 || g->output_grad >= g->n_d || g->d[g->output_grad].kind != RK_D_GRAD)
        return rk_fail(err, RK_EINPUT, "%s: the block output grad is missing or not a grad node", where);
    {
        const rk_cnode *L = &g->c[loss];
        int uses_out = 0;
        for (int k = 0; k < L->n_uses; k++) {
            if (L->uses[k].data == g->output && L->uses[k].kind != RK_EDGE_FAKE) uses_out = 1;
            if (g->d[L->uses[k].data].kind != RK_D_DATA)
                return rk_fail(err, RK_EINPUT, "%s: the loss node '%s' may use data nodes only", where, L->name);
        }
        if (!uses_out)
            return rk_fail(err, RK_EINPUT, "%s: the loss node '%s' must use the block output '%s'", where, L->name,
                           g->d[g->output].name);
        if (L->n_outs != 1 || L->outs[0] != g->output_grad)
            return rk_fail(err, RK_EINPUT, "%s: the loss node '%s' must produce exactly the output grad '%s'", where,
                           L->name, g->d[g->output_grad].name);
    }
    /* derived producers / users */
    for (int i = 0; i < g->n_c; i++) {
        const rk_cnode *c = &g->c[i];
        for (int k = 0; k < c->n_outs; k++) {
            rk_dnode *d = &g->d[c->outs[k]];
            if (append_int(&d->producers, &d->n_producers, i)) goto oom;
        }
        for (int k = 0; k < c->n_uses; k++) {
            rk_dnode *d = &g->d[c->uses[k].data];
            if (append_int(&d->users, &d->n_users, i)) goto oom;
        }
    }
    /* inputs */
    char *is_input = calloc((size_t)g->n_d + 1, 1);
    if (!is_input) goto oom;
    for (int k = 0; k < g->n_inputs; k++) {
        int d = g->inputs[k];
        if (d < 0 || d >= g->n_d) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: input #%d is not a data node", where, k);
        }
        if (is_input[d]) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: data '%s' is declared as an input twice", where, g->d[d].name);
        }
        is_input[d] = 1;
        if (g->d[d].kind != RK_D_DATA || g->d[d].n_producers) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: input '%s' must be a data node with no producer", where, g->d[d].name);
        }
        int gr = g->input_grads[k];
        if (gr >= g->n_d || gr < -1 || (gr >= 0 && g->d[gr].kind != RK_D_GRAD)) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: the grad of input '%s' is not a grad node", where, g->d[d].name);
        }
        if (gr >= 0 && g->d[gr].n_producers == 0) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: the grad '%s' of input '%s' has no producer", where, g->d[gr].name,
                           g->d[d].name);
        }
    }
    for (int i = 0; i < g->n_d; i++) {
        const rk_dnode *d = &g->d[i];
        if (!is_input[i] && d->n_producers == 0) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: data node '%s' has no producer and is not a block input", where, d->name);
        }
        if (d->kind == RK_D_DATA && d->n_producers > 1) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: data node '%s' has %d producers; a data node has one (grads may have several)",
                           where, d->name, d->n_producers);
        }
        if (d->kind == RK_D_PHANTOM && (d->n_producers != 1 || g->c[d->producers[0]].kind != RK_C_FWD)) {
            free(is_input);
            return rk_fail(err, RK_EINPUT, "%s: phantom node '%s' must have exactly one forward producer", where, d->name);
        }
    }
    free(is_input);
    /* topological order: forward nodes, loss, backward nodes */
    g->topo = malloc((size_t)(g->n_c > 0 ? g->n_c : 1) * sizeof *g->topo);
    int *indeg = calloc((size_t)g->n_c + 1, sizeof *indeg);
    char *phase = malloc((size_t)g->n_c + 1);
    if (!g->topo || !indeg || !phase) {
        free(indeg);
        free(phase);
        goto oom;
    }
    for (int i = 0; i < g->n_c; i++) {
        const rk_cnode *c = &g->c[i];
        for (int k = 0; k < c->n_uses; k++) indeg[i] += g->d[c->uses[k].data].n_producers;
    }
    int pos = 0, bad = 0;
    for (int ph = 0; ph < 3 && !bad; ph++) {
        rk_ckind want = ph == 0 ? RK_C_FWD : ph == 1 ? RK_C_LOSS : RK_C_BWD;
        for (int i = 0; i < g->n_c; i++) phase[i] = g->c[i].kind == want;
        bad = topo_phase(g, phase, indeg, g->topo, &pos);
        if (bad < 0) {
            free(indeg);
            free(phase);
            goto oom;
        }
    }
    if (bad) {
        /* name one node left on a cycle or waiting on a later phase */
        int who = -1;
        char *placed = calloc((size_t)g->n_c + 1, 1);
        for (int i = 0; i < pos && placed; i++) placed[g->topo[i]] = 1;
        for (int i = 0; i < g->n_c && placed; i++)
            if (!placed[i]) {
                who = i;
                break;
            }
        free(placed);
        free(indeg);
        free(phase);
        free(g->topo);
        g->topo = NULL;
        if (who >= 0)
            return rk_fail(err, RK_EINPUT,
                           "%s: the graph has a cycle (or a %s node depends on a later phase) through compute node '%s'",
                           where, rk_ckind_name(g->c[who].kind), g->c[who].name);
        return rk_fail(err, RK_EINPUT, "%s: the graph has a cycle", where);
    }
    free(indeg);
    free(phase);
    g->finalized = 1;
    return RK_OK;
oom:
    free_derived(g);
    return rk_fail(err, RK_ENOMEM, "%s: out of memory", where);
}

rk_status rk_graph_copy(rk_graph *dst, const rk_graph *src) {
    rk_graph_init(dst);
    for (int i = 0; i < src->n_d; i++) {
        const rk_dnode *d = &src->d[i];
        if (rk_graph_add_data(dst, d->name, d->kind, d->size) < 0) goto oom;
        if (d->target && rk_graph_set_target(dst, 0, i, d->target)) goto oom;
    }
    for (int i = 0; i < src->n_c; i++) {
        const rk_cnode *c = &src->c[i];
        if (rk_graph_add_compute(dst, c->name, c->kind, c->time, c->overhead) < 0) goto oom;
        dst->c[i].grad_accum = c->grad_accum;
        if (c->target && rk_graph_set_target(dst, 1, i, c->target)) goto oom;
        for (int k = 0; k < c->n_uses; k++)
            if (rk_graph_add_use(dst, i, c->uses[k].data, c->uses[k].kind)) goto oom;
        for (int k = 0; k < c->n_outs; k++)
            if (rk_graph_add_out(dst, i, c->outs[k])) goto oom;
    }
    for (int k = 0; k < src->n_inputs; k++)
        if (rk_graph_add_input(dst, src->inputs[k], src->input_grads[k])) goto oom;
    rk_graph_set_output(dst, src->output, src->output_grad, src->loss);
    if (src->finalized) {
        rk_error e;
        if (rk_graph_finalize(dst, "copy", &e)) goto oom;
    }
    return RK_OK;
oom:
    rk_graph_free(dst);
    return RK_ENOMEM;
}
