/* cm_testlib.c — random blocks and the exhaustive schedule search used by the
 * rk-Checkmate tests (see cm_testlib.h). */
#include "cm_testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- random */

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}
static int rint_(unsigned *s, int lo, int hi) { return lo + (int)(rnd(s) % (unsigned)(hi - lo + 1)); }

rk_status cmt_random_block(unsigned seed, int max_fwd, rk_graph *g, rk_error *err) {
    unsigned s = seed * 2654435761u + 7;
    rnd(&s);
    rk_graph_init(g);
    int F = rint_(&s, 1, max_fwd);
    int x = rk_graph_add_data(g, "x", RK_D_DATA, rint_(&s, 1, 8));
    int req[64] = {0};       /* requires grad, per data */
    int dlist[64], nd = 0;   /* forward data usable as inputs */
    int fin[8][2], nfin[8];  /* forward inputs (real) */
    int fout[8][2], nfout[8];
    int fph[8];
    req[x] = rint_(&s, 0, 9) < 8;
    dlist[nd++] = x;
    char name[64];
    for (int f = 0; f < F; f++) {
        snprintf(name, sizeof name, "f%d", f);
        int c = rk_graph_add_compute(g, name, RK_C_FWD, rint_(&s, 1, 9), rint_(&s, 0, 4) == 0 ? rint_(&s, -3, 0) : rint_(&s, 0, 6));
        nfin[f] = 0;
        /* first input: the latest data (keeps a chain), maybe a second one */
        int a = f == 0 ? x : dlist[nd - 1 - (rint_(&s, 0, 2) == 0 && nd > 1 ? 1 : 0)];
        fin[f][nfin[f]++] = a;
        if (nd > 1 && rint_(&s, 0, 2) == 0) {
            int b = dlist[rint_(&s, 0, nd - 1)];
            if (b != a) fin[f][nfin[f]++] = b;
        }
        int rq = 0;
        for (int i = 0; i < nfin[f]; i++) {
            rk_graph_add_use(g, c, fin[f][i], RK_EDGE_REAL);
            rq |= req[fin[f][i]];
        }
        /* sometimes a fake use of another data */
        if (nd > 1 && rint_(&s, 0, 4) == 0) {
            int b = dlist[rint_(&s, 0, nd - 1)];
            int dup = 0;
            for (int i = 0; i < nfin[f]; i++) dup |= fin[f][i] == b;
            if (!dup) rk_graph_add_use(g, c, b, RK_EDGE_FAKE);
        }
        nfout[f] = 0;
        int no = rint_(&s, 0, 3) == 0 ? 2 : 1;
        for (int o = 0; o < no; o++) {
            snprintf(name, sizeof name, "d%d_%d", f, o);
            int d = rk_graph_add_data(g, name, RK_D_DATA, rint_(&s, 1, 10));
            rk_graph_add_out(g, c, d);
            req[d] = rq;
            fout[f][nfout[f]++] = d;
            dlist[nd++] = d;
        }
        fph[f] = -1;
        if (rq && rint_(&s, 0, 2) == 0) {
            snprintf(name, sizeof name, "ph%d", f);
            fph[f] = rk_graph_add_data(g, name, RK_D_PHANTOM, rint_(&s, 1, 12));
            rk_graph_add_out(g, c, fph[f]);
        }
    }
    int out = fout[F - 1][0];
    /* reach: data on a real path to the output */
    int reach[64] = {0};
    reach[out] = 1;
    for (int f = F - 1; f >= 0; f--) {
        int r = 0;
        for (int o = 0; o < nfout[f]; o++) r |= reach[fout[f][o]];
        if (r)
            for (int i = 0; i < nfin[f]; i++) reach[fin[f][i]] = 1;
    }
    int grad[64];
    for (int d = 0; d < 64; d++) grad[d] = -1;
    int og = rk_graph_add_data(g, "out.grad", RK_D_GRAD, g->d[out].size);
    grad[out] = og;
    for (int d = 0; d < g->n_d; d++) {
        if (d == out || d == og || g->d[d].kind != RK_D_DATA) continue;
        if (req[d] && reach[d]) {
            snprintf(name, sizeof name, "%s.grad", g->d[d].name);
            grad[d] = rk_graph_add_data(g, name, RK_D_GRAD, g->d[d].size);
        }
    }
    int loss = rk_graph_add_compute(g, "loss", RK_C_LOSS, rint_(&s, 0, 3), rint_(&s, 0, 2));
    rk_graph_add_use(g, loss, out, RK_EDGE_REAL);
    rk_graph_add_out(g, loss, og);
    for (int f = F - 1; f >= 0; f--) {
        int has_og = 0, has_ig = 0;
        for (int o = 0; o < nfout[f]; o++) has_og |= grad[fout[f][o]] >= 0;
        for (int i = 0; i < nfin[f]; i++) has_ig |= grad[fin[f][i]] >= 0;
        if (!has_og || !has_ig) continue;
        snprintf(name, sizeof name, "b%d", f);
        int c = rk_graph_add_compute(g, name, RK_C_BWD, rint_(&s, 1, 12), rint_(&s, 0, 6));
        for (int o = 0; o < nfout[f]; o++)
            if (grad[fout[f][o]] >= 0) rk_graph_add_use(g, c, grad[fout[f][o]], RK_EDGE_REAL);
        if (fph[f] >= 0) rk_graph_add_use(g, c, fph[f], RK_EDGE_REAL);
        else
            for (int i = 0; i < nfin[f]; i++) rk_graph_add_use(g, c, fin[f][i], RK_EDGE_REAL);
        if (rint_(&s, 0, 3) == 0) rk_graph_add_use(g, c, fout[f][0], RK_EDGE_REAL);
        for (int i = 0; i < nfin[f]; i++)
            if (grad[fin[f][i]] >= 0) rk_graph_add_out(g, c, grad[fin[f][i]]);
    }
    rk_graph_add_input(g, x, grad[x]);
    rk_graph_set_output(g, out, og, loss);
    return rk_graph_finalize(g, "random block", err);
}

/* -------------------------------------------------------- brute force */

typedef struct {
    uint64_t *key;
    double *val;
    size_t cap, n;
} memo;

static int memo_get(memo *m, uint64_t k, double *v) {
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
    while (m->key[h] != 0) {
        if (m->key[h] == k) {
            *v = m->val[h];
            return 1;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return 0;
}
static int memo_put(memo *m, uint64_t k, double v) {
    if (2 * (m->n + 1) > m->cap) {
        if (m->cap >= (1u << 23)) return -1;
        memo nm = {calloc(2 * m->cap, sizeof(uint64_t)), calloc(2 * m->cap, sizeof(double)), 2 * m->cap, 0};
        if (!nm.key || !nm.val) {
            free(nm.key);
            free(nm.val);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) memo_put(&nm, m->key[i], m->val[i]);
        free(m->key);
        free(m->val);
        *m = nm;
    }
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
    while (m->key[h] != 0 && m->key[h] != k) h = (h + 1) & (m->cap - 1);
    if (m->key[h] == 0) m->n++;
    m->key[h] = k;
    m->val[h] = v;
    return 0;
}

typedef struct {
    const rk_graph *g;
    int T, D;
    int64_t mp, ms;
    int bit[128];          /* data -> bit (-1: input) */
    int64_t size[64];
    int64_t in_size;
    uint64_t final_mask;
    uint64_t use_mask[128]; /* per position: real uses (non-input) */
    uint64_t out_mask[128];
    int64_t oh[128];
    double time[128];
    int kind[128];
    int t_loss, out_bit;
    int last_prod_pos[64];  /* grads: position of last producer, else -1 */
    uint64_t grad_mask;
    memo m;
    int overflow;
} bf;

static int64_t live_of(const bf *b, uint64_t p) {
    int64_t l = b->in_size;
    while (p) {
        int i = __builtin_ctzll(p);
        l += b->size[i];
        p &= p - 1;
    }
    return l;
}

static double bf_solve(bf *b, int t, int k, uint64_t present);

static double bf_after_run(bf *b, int t, int k, uint64_t present) {
    int nt = k < t ? t : t + 1, nk = k < t ? k + 1 : 0;
    /* forgettable: present, complete grads only */
    uint64_t forg = present;
    for (int i = 0; i < b->D; i++)
        if ((forg >> i & 1) && (b->grad_mask >> i & 1) &&
            (b->last_prod_pos[i] > t || (b->last_prod_pos[i] == t && k < t))) forg &= ~(1ull << i);
    double best = INFINITY;
    /* every subset of forg */
    uint64_t sub = forg;
    for (;;) {
        double v = bf_solve(b, nt, nk, present & ~sub);
        if (v < best) best = v;
        if (sub == 0) break;
        sub = (sub - 1) & forg;
    }
    return best;
}

static double bf_solve(bf *b, int t, int k, uint64_t present) {
    if (b->overflow) return INFINITY;
    if (t == b->T) return present == b->final_mask ? 0 : INFINITY;
    uint64_t key = ((uint64_t)(t * 128 + k + 1) << 48) ^ present;
    key |= 1ull << 63;
    double v;
    if (memo_get(&b->m, key, &v)) return v;
    double best = INFINITY;
    int can_run = k == t || (b->kind[k] == RK_C_FWD && k < t);
    if (k < t) {
        int nt = t, nk = k + 1;
        best = bf_solve(b, nt, nk, present);
    }
    if (can_run && (present & b->use_mask[k]) == b->use_mask[k]) {
        int64_t live = live_of(b, present);
        uint64_t fresh = b->out_mask[k] & ~present;
        int64_t mem = live + (b->oh[k] > 0 ? b->oh[k] : 0) + live_of(b, fresh) - b->in_size;
        int ok = mem <= b->mp;
        if (k == b->t_loss && b->ms >= 0 && live - b->in_size - b->size[b->out_bit] > b->ms) ok = 0;
        if (ok) {
            double w = bf_after_run(b, t, k, present | b->out_mask[k]);
            if (w + b->time[k] < best) best = w + b->time[k];
        }
    }
    if (memo_put(&b->m, key, best)) b->overflow = 1;
    return best;
}

static void bf_print(bf *b, int t, int k, uint64_t present, double target) {
    while (t < b->T) {
        double v;
        if (k < t) {
            v = bf_solve(b, t, k + 1, present);
            if (v == target) { k++; continue; }
        }
        /* run k */
        uint64_t np = present | b->out_mask[k];
        int nt = k < t ? t : t + 1, nk = k < t ? k + 1 : 0;
        double rem = target - b->time[k];
        fprintf(stderr, "  RUN %s (stage %d) live %lld\n", b->g->c[b->g->topo[k]].name, t, (long long)live_of(b, present));
        uint64_t forg = np, found = 0;
        for (int i = 0; i < b->D; i++)
            if ((forg >> i & 1) && (b->grad_mask >> i & 1) &&
            (b->last_prod_pos[i] > t || (b->last_prod_pos[i] == t && k < t))) forg &= ~(1ull << i);
        uint64_t sub = forg;
        for (;;) {
            if (bf_solve(b, nt, nk, np & ~sub) == rem) { found = 1; break; }
            if (sub == 0) break;
            sub = (sub - 1) & forg;
        }
        if (!found) { fprintf(stderr, "  ??\n"); return; }
        for (int d = 0; d < b->g->n_d; d++)
            if (b->bit[d] >= 0 && (sub >> b->bit[d] & 1)) fprintf(stderr, "  FORGET %s\n", b->g->d[d].name);
        present = np & ~sub; t = nt; k = nk; target = rem;
    }
}

int cmt_brute_verbose = 0;

double cmt_brute_force(const rk_graph *g, int64_t m_peak, int64_t m_save) {
    bf *b = calloc(1, sizeof *b);
    if (!b) return -1;
    b->g = g;
    b->T = g->n_c;
    b->mp = m_peak;
    b->ms = m_save;
    if (g->n_c > 127 || g->n_d > 127) {
        free(b);
        return -1;
    }
    int nb = 0;
    for (int d = 0; d < g->n_d; d++) {
        int in = 0;
        for (int i = 0; i < g->n_inputs; i++) in |= g->inputs[i] == d;
        if (in) {
            b->bit[d] = -1;
            b->in_size += g->d[d].size;
            continue;
        }
        if (nb >= 62) {
            free(b);
            return -1;
        }
        b->bit[d] = nb;
        b->size[nb] = g->d[d].size;
        b->last_prod_pos[nb] = -1;
        if (g->d[d].kind == RK_D_GRAD) b->grad_mask |= 1ull << nb;
        nb++;
    }
    b->D = nb;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->input_grads[i] >= 0) b->final_mask |= 1ull << b->bit[g->input_grads[i]];
    int pos[128];
    for (int t = 0; t < g->n_c; t++) pos[g->topo[t]] = t;
    for (int t = 0; t < g->n_c; t++) {
        const rk_cnode *c = &g->c[g->topo[t]];
        b->kind[t] = c->kind;
        b->oh[t] = c->overhead;
        b->time[t] = c->time;
        for (int u = 0; u < c->n_uses; u++)
            if (c->uses[u].kind != RK_EDGE_FAKE && b->bit[c->uses[u].data] >= 0)
                b->use_mask[t] |= 1ull << b->bit[c->uses[u].data];
        for (int o = 0; o < c->n_outs; o++) {
            int bi = b->bit[c->outs[o]];
            b->out_mask[t] |= 1ull << bi;
            if ((b->grad_mask >> bi & 1) && t > b->last_prod_pos[bi]) b->last_prod_pos[bi] = t;
        }
    }
    b->t_loss = pos[g->loss];
    b->out_bit = b->bit[g->output];
    b->m.cap = 1u << 12;
    b->m.key = calloc(b->m.cap, sizeof(uint64_t));
    b->m.val = calloc(b->m.cap, sizeof(double));
    double r = -1;
    if (b->m.key && b->m.val) {
        r = bf_solve(b, 0, 0, 0);
        if (b->overflow) r = -1;
        else if (cmt_brute_verbose && isfinite(r)) bf_print(b, 0, 0, 0, r);
    }
    free(b->m.key);
    free(b->m.val);
    free(b);
    return r;
}
