/* dp_fixtures.c — random and hand-built chains and the exhaustive plan
 * search for the dp tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_fixtures.h"

uint64_t fx_next(fx_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
int fx_int(fx_rng *r, int lo, int hi) { return lo + (int)(fx_next(r) % (uint64_t)(hi - lo + 1)); }
double fx_unif(fx_rng *r) { return (double)(fx_next(r) >> 11) / 9007199254740992.0; }

rk_status fx_random_class(rk_graph *g, fx_rng *r, int64_t act, int64_t unit) {
    rk_op_spec ops[4];
    char names[4][8];
    int n = fx_int(r, 2, 4);
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "op%d", i);
        rk_op_spec *o = &ops[i];
        o->name = names[i];
        o->in[0] = i - 1;
        o->n_in = 1;
        if (i > 0 && fx_int(r, 0, 2) == 0) { /* skip edge from the block input */
            o->in[1] = -1;
            o->n_in = 2;
        }
        o->out_size = i == n - 1 ? act : unit * fx_int(r, 1, 6);
        o->phantom_size = fx_int(r, 0, 1) ? unit * fx_int(r, 1, 3) : 0;
        o->fwd_time = 1 + fx_int(r, 0, 90) / 10.0;
        o->bwd_time = 1 + fx_int(r, 0, 90) / 10.0;
        o->fwd_overhead = unit * fx_int(r, -2, 3);
        o->bwd_overhead = unit * fx_int(r, -2, 3);
        o->bwd_needs_input = (unsigned)fx_int(r, 0, 3);
        o->bwd_needs_output = fx_int(r, 0, 2) == 0;
    }
    rk_error err;
    return rk_graph_from_specs(g, act, 1, ops, n, &err);
}

rk_status fx_random_chain(rk_chain *ch, fx_rng *r, int L, int n_classes, int64_t act, int64_t unit) {
    rk_chain_init(ch);
    rk_status st;
    for (int k = 0; k < n_classes; k++) {
        rk_graph g;
        if ((st = fx_random_class(&g, r, act, unit))) return st;
        if (rk_chain_add_class(ch, &g) < 0) return RK_ENOMEM;
    }
    for (int b = 0; b < L; b++) {
        char nm[32];
        snprintf(nm, sizeof nm, "b%d", b);
        if (rk_chain_add_block(ch, nm, fx_int(r, 0, n_classes - 1)) < 0) return RK_ENOMEM;
    }
    rk_error err;
    return rk_chain_validate(ch, "random chain", &err);
}

rk_status fx_hand_chain(rk_chain *ch, int L, int64_t A, int64_t H) {
    rk_op_spec ops[2] = {
        {"h", 1, {-1}, H, 0, 1, 2, 0, 0, 1, 0},
        {"y", 1, {0}, A, 0, 1, 2, 0, 0, 1, 0},
    };
    rk_chain_init(ch);
    rk_graph g;
    rk_error err;
    rk_status st = rk_graph_from_specs(&g, A, 1, ops, 2, &err);
    if (st) return st;
    if (rk_chain_add_class(ch, &g) < 0) return RK_ENOMEM;
    for (int b = 0; b < L; b++) {
        char nm[32];
        snprintf(nm, sizeof nm, "h%d", b);
        if (rk_chain_add_block(ch, nm, 0) < 0) return RK_ENOMEM;
    }
    return rk_chain_validate(ch, "hand chain", &err);
}

rk_status fx_build_and_simulate(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c,
                                const rk_dp_plan *p, rk_schedule *s, rk_sim_result *res, rk_error *err) {
    rk_schedule_init(s);
    rk_status st = rk_dp_plan_build(ch, o, c, p, s, err);
    if (st) return st;
    return rk_simulate(ch, s, res, err);
}

/* ------------------------------------------------------------ exhaustive */

typedef struct {
    const rk_chain *ch;
    const rk_dp_options *o;
    const rk_dp_costs *c;
    int64_t budget;
    rk_dp_plan plan;
    int *ps, *pt; /* pending subproblems */
    int np;
    fx_exhaustive *out;
    rk_status st;
} ex_ctx;

static void ex_leaf(ex_ctx *x) {
    rk_schedule s;
    rk_sim_result res;
    rk_error err;
    rk_dp_eval ev;
    x->out->n_plans++;
    rk_status st = fx_build_and_simulate(x->ch, x->o, x->c, &x->plan, &s, &res, &err);
    if (!st) st = rk_dp_plan_evaluate(x->c, &x->plan, &ev, &err);
    rk_schedule_free(&s);
    if (st) {
        fprintf(stderr, "exhaustive: plan failed: %s\n", err.msg);
        x->st = st;
        return;
    }
    if (ev.peak != res.peak || fabs(ev.time - res.time) > 1e-9 * (1 + res.time)) x->out->mismatches++;
    if (res.peak < x->out->min_peak) x->out->min_peak = res.peak;
    if (res.peak <= x->budget) {
        x->out->n_fit++;
        if (res.time < x->out->best_time) x->out->best_time = res.time;
    }
}

static void ex_rec(ex_ctx *x) {
    if (x->st) return;
    if (x->np == 0) {
        ex_leaf(x);
        return;
    }
    int s = x->ps[--x->np], t = x->pt[x->np];
    int nopt = x->c->classes[x->c->block_class[s]].n_options;
    for (int o = 1; o < nopt; o++) {
        rk_dp_plan_set(&x->plan, s, t, o);
        if (t > s + 1) {
            x->ps[x->np] = s + 1, x->pt[x->np++] = t;
            ex_rec(x);
            x->np--;
        } else {
            ex_rec(x);
        }
    }
    for (int i = s + 1; i < t; i++) {
        rk_dp_plan_set(&x->plan, s, t, -(i - s));
        x->ps[x->np] = i, x->pt[x->np++] = t;
        x->ps[x->np] = s, x->pt[x->np++] = i;
        ex_rec(x);
        x->np -= 2;
    }
    rk_dp_plan_set(&x->plan, s, t, 0);
    x->ps[x->np] = s, x->pt[x->np++] = t;
}

rk_status fx_exhaustive_search(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c, int64_t budget,
                               fx_exhaustive *out) {
    int L = ch->n_blocks;
    ex_ctx x = {.ch = ch, .o = o, .c = c, .budget = budget, .out = out};
    out->best_time = INFINITY;
    out->n_plans = out->n_fit = out->mismatches = 0;
    out->min_peak = INT64_MAX;
    if (rk_dp_plan_init(&x.plan, L)) return RK_ENOMEM;
    x.ps = malloc((size_t)(2 * L + 4) * sizeof(int));
    x.pt = malloc((size_t)(2 * L + 4) * sizeof(int));
    if (!x.ps || !x.pt) return RK_ENOMEM;
    x.ps[0] = 0, x.pt[0] = L, x.np = 1;
    ex_rec(&x);
    free(x.ps);
    free(x.pt);
    rk_dp_plan_free(&x.plan);
    return x.st;
}
