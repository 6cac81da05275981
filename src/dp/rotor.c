/* rotor.c — rk-Rotor's table: Opt(s, t, m) over memory slots, filled by
 * increasing length with OpenMP (all (s, m) cells of one length in
 * parallel), the least-memory table that bounds each row, rk-Rotor-Build
 * (the plan of the optimum) and the smallest feasible budget. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* ------------------------------------------------------------ chain view */

rk_status dp_chain_init(dp_chain *d, const rk_dp_costs *c, rk_error *err) {
    memset(d, 0, sizeof *d);
    int L = c->n_blocks;
    d->L = L;
    d->c = c;
    d->act = calloc((size_t)L + 1, sizeof *d->act);
    d->dgr = calloc((size_t)L + 1, sizeof *d->dgr);
    d->G = calloc((size_t)L + 1, sizeof *d->G);
    if (!d->act || !d->dgr || !d->G) {
        dp_chain_free(d);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    d->act[0] = c->classes[c->block_class[0]].input_size;
    for (int t = 1; t <= L; t++) {
        const rk_dp_class_cost *p = &c->classes[c->block_class[t - 1]];
        d->act[t] = p->output_size;
        d->dgr[t] = t < L ? p->output_grad_size : 0;
        d->G[t] = t < L ? d->act[t] + d->dgr[t] : 0;
    }
    return RK_OK;
}

void dp_chain_free(dp_chain *d) {
    free(d->act);
    free(d->dgr);
    free(d->G);
    memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------ need table */

rk_status dp_need_table(const dp_chain *d, int64_t u, int64_t *need, rk_error *err) {
    (void)err;
    int L = d->L, W = L + 1;
    for (int i = 0; i < W * W; i++) need[i] = DP_NEED_INF;
    for (int len = 1; len <= L; len++)
        for (int s = 0; s + len <= L; s++) {
            int t = s + len;
            int nopt = dp_cls(d, s)->n_options;
            int64_t best = DP_NEED_INF;
            if (len == 1) {
                for (int o = 1; o < nopt; o++) {
                    int64_t v = dp_base_need(d, s, o, u);
                    if (v < best) best = v;
                }
            } else {
                int64_t sub = need[(s + 1) * W + t];
                if (sub < DP_NEED_INF)
                    for (int o = 1; o < nopt; o++) {
                        int64_t v = dp_max(dp_case1_thr(d, s, t, o, u), dp_case1_shift(d, s, o, u) + sub);
                        if (v < best) best = v;
                    }
                int64_t chain = 0, sh2 = dp_ceil(d->act[s], u);
                for (int i = s + 1; i < t; i++) {
                    chain = dp_chain_step(d, s, i - 1, chain);
                    int64_t a = need[i * W + t], b = need[s * W + i];
                    if (a >= DP_NEED_INF || b >= DP_NEED_INF) continue;
                    int64_t v = dp_max(dp_max(dp_ceil(chain + d->G[t], u), sh2 + a), b);
                    if (v < best) best = v;
                }
            }
            need[s * W + t] = best;
        }
    return RK_OK;
}

/* ------------------------------------------------------------ the table */

struct rk_dp_table {
    dp_chain d;
    int L, M;
    int64_t unit, budget;
    int64_t *need;      /* (L+1)^2, slots */
    size_t *off;        /* (L+1)^2: first cell of row (s, t) = m of need */
    size_t n_cells;
    double *opt;        /* n_cells */
    int16_t *dec;       /* n_cells: > 0 option (case 1 / base), < 0 -(i - s) */
};

void rk_dp_params_default(rk_dp_params *p) {
    p->slots = 500;
    p->threads = 0;
    p->fallback = 1;
}

void rk_dp_table_free(rk_dp_table *t) {
    if (!t) return;
    dp_chain_free(&t->d);
    free(t->need);
    free(t->off);
    free(t->opt);
    free(t->dec);
    free(t);
}

static inline int64_t tb_need(const rk_dp_table *t, int s, int e) { return t->need[s * (t->L + 1) + e]; }
static inline double *tb_row(const rk_dp_table *t, int s, int e) { return t->opt + t->off[s * (t->L + 1) + e]; }
static inline int16_t *tb_drow(const rk_dp_table *t, int s, int e) { return t->dec + t->off[s * (t->L + 1) + e]; }

int rk_dp_table_feasible(const rk_dp_table *t) { return tb_need(t, 0, t->L) <= t->M; }
size_t rk_dp_table_bytes(const rk_dp_table *t) {
    size_t W = (size_t)t->L + 1;
    return sizeof *t + t->n_cells * (sizeof(double) + sizeof(int16_t)) + W * W * (sizeof(int64_t) + sizeof(size_t)) +
           3 * W * sizeof(int64_t);
}
int64_t rk_dp_table_unit(const rk_dp_table *t) { return t->unit; }
int rk_dp_table_slots(const rk_dp_table *t) { return t->M; }

double rk_dp_table_opt(const rk_dp_table *t, int s, int e, int m) {
    if (s < 0 || e > t->L || s >= e || m < 0 || m > t->M) return INFINITY;
    int64_t n = tb_need(t, s, e);
    if (m < n) return INFINITY;
    return tb_row(t, s, e)[m - n];
}
int rk_dp_table_decision(const rk_dp_table *t, int s, int e, int m) {
    if (s < 0 || e > t->L || s >= e || m < 0 || m > t->M) return 0;
    int64_t n = tb_need(t, s, e);
    if (m < n) return 0;
    return tb_drow(t, s, e)[m - n];
}
double rk_dp_table_time(const rk_dp_table *t) { return rk_dp_table_opt(t, 0, t->L, t->M); }

/* One task: cells m in [m0, m1) of row (s, e) (the whole row in practice,
 * so each threshold is computed once per row).  Candidates are visited in a
 * fixed order (options 1.., then checkpoints s+1..e-1) and replace the
 * current best only when strictly faster: the result does not depend on the
 * thread that computes it. */
static void fill_cells(const rk_dp_table *tb, int s, int e, int m0, int m1, int32_t *dsc) {
    const dp_chain *d = &tb->d;
    int64_t u = tb->unit, lo = tb_need(tb, s, e);
    if (lo > tb->M) return;
    if (m0 < lo) m0 = (int)lo;
    if (m0 >= m1) return;
    double *best = tb_row(tb, s, e) + (m0 - lo); /* best[k] = cell m0 + k */
    int16_t *dec = tb_drow(tb, s, e) + (m0 - lo);
    int n = m1 - m0;
    for (int k = 0; k < n; k++) {
        best[k] = INFINITY;
        dsc[k] = 0;
    }
    int nopt = dp_cls(d, s)->n_options;
    if (e == s + 1) {
        for (int o = 1; o < nopt; o++) {
            int64_t a = dp_base_need(d, s, o, u);
            if (a < m0) a = m0;
            double c = dp_base_time(d, s, o);
            for (int k = (int)(a - m0); k < n; k++)
                if (c < best[k]) {
                    best[k] = c;
                    dsc[k] = o;
                }
        }
    } else {
        int64_t n1 = tb_need(tb, s + 1, e);
        if (n1 <= tb->M) {
            const double *sub = tb_row(tb, s + 1, e);
            for (int o = 1; o < nopt; o++) {
                int64_t sh = dp_case1_shift(d, s, o, u);
                int64_t a = dp_max(dp_case1_thr(d, s, e, o, u), sh + n1);
                if (a < m0) a = m0;
                if (a >= m1) continue;
                const rk_dp_option_cost *x = dp_opt(d, s, o);
                double c = x->fwd_time + x->bwd_time;
                int k0 = (int)(a - m0);
                double *bk = best + k0;
                int32_t *dk = dsc + k0;
                const double *src = sub + (a - sh - n1); /* Opt(s+1, e, m - sh), m = a.. */
                int cnt = m1 - (int)a;
#pragma omp simd
                for (int k = 0; k < cnt; k++) {
                    double v = c + src[k];
                    int lt = isless(v, bk[k]);
                    bk[k] = lt ? v : bk[k];
                    dk[k] = lt ? o : dk[k];
                }
            }
        }
        int64_t chain = 0, sh2 = dp_ceil(d->act[s], u);
        double pre = 0;
        for (int i = s + 1; i < e; i++) {
            chain = dp_chain_step(d, s, i - 1, chain);
            pre += dp_opt(d, i - 1, 0)->fwd_time;
            int64_t na = tb_need(tb, i, e), nb = tb_need(tb, s, i);
            if (na > tb->M || nb > tb->M) continue;
            int64_t a = dp_max(dp_max(dp_ceil(chain + d->G[e], u), sh2 + na), nb);
            if (a < m0) a = m0;
            if (a >= m1) continue;
            int k0 = (int)(a - m0);
            double *bk = best + k0;
            int32_t *dk = dsc + k0;
            const double *ra = tb_row(tb, i, e) + (a - sh2 - na); /* Opt(i, e, m - sh2) */
            const double *rb = tb_row(tb, s, i) + (a - nb);       /* Opt(s, i, m) */
            int code = -(i - s);
            double c = pre;
            int cnt = m1 - (int)a;
#pragma omp simd
            for (int k = 0; k < cnt; k++) {
                double v = c + ra[k] + rb[k];
                int lt = isless(v, bk[k]);
                bk[k] = lt ? v : bk[k];
                dk[k] = lt ? code : dk[k];
            }
        }
    }
    for (int k = 0; k < n; k++) dec[k] = (int16_t)dsc[k];
}

rk_status rk_dp_table_fill(const rk_dp_costs *c, int64_t budget, const rk_dp_params *p, rk_dp_table **out,
                           rk_error *err) {
    *out = NULL;
    rk_dp_params defp;
    if (!p) {
        rk_dp_params_default(&defp);
        p = &defp;
    }
    rk_status r = rk_dp_costs_check(c, err);
    if (r) return r;
    if (budget < 0) return rk_fail(err, RK_EINPUT, "budget %lld is negative", (long long)budget);
    if (p->slots < 1) return rk_fail(err, RK_EINPUT, "slots must be >= 1, got %d", p->slots);
    int L = c->n_blocks;
    if (L > 32000) return rk_fail(err, RK_EINPUT, "chains of more than 32000 blocks are not supported (%d)", L);
    for (int k = 0; k < c->n_classes; k++)
        if (c->classes[k].n_options > 32000)
            return rk_fail(err, RK_EINPUT, "class %d has %d options; at most 32000", k, c->classes[k].n_options);
    rk_dp_table *t = calloc(1, sizeof *t);
    if (!t) return rk_fail(err, RK_ENOMEM, "out of memory");
    if ((r = dp_chain_init(&t->d, c, err))) {
        free(t);
        return r;
    }
    t->L = L;
    t->budget = budget;
    int64_t S = p->slots;
    t->unit = budget > S ? budget / S + (budget % S != 0) : 1;
    t->M = (int)(budget / t->unit);
    size_t W = (size_t)L + 1;
    t->need = malloc(W * W * sizeof *t->need);
    t->off = calloc(W * W, sizeof *t->off);
    if (!t->need || !t->off) {
        rk_dp_table_free(t);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    dp_need_table(&t->d, t->unit, t->need, err);
    int feasible = tb_need(t, 0, L) <= t->M;
    /* rows hold m in [need, M] only; nothing to fill when infeasible */
    size_t n = 0;
    if (feasible)
        for (int s = 0; s < L; s++)
            for (int e = s + 1; e <= L; e++) {
                t->off[s * W + e] = n;
                int64_t nd = t->need[s * W + e];
                if (nd <= t->M) n += (size_t)(t->M - nd + 1);
            }
    t->n_cells = n;
    if (n) {
        t->opt = malloc(n * sizeof *t->opt);
        t->dec = malloc(n * sizeof *t->dec);
        if (!t->opt || !t->dec) {
            rk_dp_table_free(t);
            return rk_fail(err, RK_ENOMEM, "out of memory for the DP table (%zu cells, %zu bytes)", n,
                           n * (sizeof(double) + sizeof(int16_t)));
        }
    }
    if (feasible) {
        int nt = p->threads > 0 ? p->threads : omp_get_max_threads();
        size_t row = (size_t)t->M + 1;
        int32_t *scratch = malloc((size_t)nt * row * sizeof *scratch);
        if (!scratch) {
            rk_dp_table_free(t);
            return rk_fail(err, RK_ENOMEM, "out of memory");
        }
#pragma omp parallel num_threads(nt)
        {
            int32_t *dsc = scratch + (size_t)omp_get_thread_num() * row;
            for (int len = 1; len <= L; len++) {
                /* every row (s, s+len) depends only on shorter rows */
#pragma omp for schedule(dynamic, 1)
                for (int s = 0; s <= L - len; s++) fill_cells(t, s, s + len, 0, t->M + 1, dsc);
            }
        }
        free(scratch);
    }
    *out = t;
    return RK_OK;
}

/* rk-Rotor-Build: follow the decisions from (0, L, M). */
rk_status rk_dp_table_plan(const rk_dp_table *t, rk_dp_plan *p, rk_error *err) {
    int L = t->L;
    rk_status r = rk_dp_plan_init(p, L);
    if (r) return rk_fail(err, r, "out of memory");
    if (!rk_dp_table_feasible(t)) return rk_fail(err, RK_EINFEASIBLE, "no schedule fits the budget");
    /* every (s, t) appears at most once in a plan: a stack of L+1 triples is enough
     * for the pending pairs (at most one per distinct start)... use 2L+2 to be safe */
    int cap = 2 * L + 2, top = 0;
    int *st = malloc((size_t)cap * 3 * sizeof *st);
    if (!st) return rk_fail(err, RK_ENOMEM, "out of memory");
    st[0] = 0, st[1] = L, st[2] = t->M, top = 1;
    while (top > 0) {
        top--;
        int s = st[3 * top], e = st[3 * top + 1], m = st[3 * top + 2];
        int code = rk_dp_table_decision(t, s, e, m);
        if (code == 0) {
            free(st);
            return rk_fail(err, RK_EFAIL, "internal: DP cell (%d, %d, %d) is infeasible on the optimal path", s, e, m);
        }
        rk_dp_plan_set(p, s, e, code);
        int64_t u = t->unit;
        if (top + 2 > cap) {
            cap *= 2;
            int *ns = realloc(st, (size_t)cap * 3 * sizeof *st);
            if (!ns) {
                free(st);
                return rk_fail(err, RK_ENOMEM, "out of memory");
            }
            st = ns;
        }
        if (code > 0) {
            if (e > s + 1) {
                st[3 * top] = s + 1, st[3 * top + 1] = e;
                st[3 * top + 2] = m - (int)dp_case1_shift(&t->d, s, code, u);
                top++;
            }
        } else {
            int i = s - code;
            st[3 * top] = i, st[3 * top + 1] = e, st[3 * top + 2] = m - (int)dp_ceil(t->d.act[s], u);
            top++;
            st[3 * top] = s, st[3 * top + 1] = i, st[3 * top + 2] = m;
            top++;
        }
    }
    free(st);
    return RK_OK;
}

/* ------------------------------------------------------------ least memory */

int64_t rk_dp_min_memory(const rk_dp_costs *c) {
    dp_chain d;
    rk_error err;
    if (dp_chain_init(&d, c, &err)) return -1;
    size_t W = (size_t)c->n_blocks + 1;
    int64_t *need = malloc(W * W * sizeof *need);
    int64_t v = -1;
    if (need) {
        dp_need_table(&d, 1, need, &err);
        v = need[c->n_blocks];
        if (v >= DP_NEED_INF) v = -1;
    }
    free(need);
    dp_chain_free(&d);
    return v;
}

/* Is the table with `slots` slots feasible at budget B? */
static int feasible_at(const dp_chain *d, int64_t *need, int64_t B, int64_t S) {
    int64_t u = B > S ? B / S + (B % S != 0) : 1;
    int64_t M = B / u;
    rk_error err;
    dp_need_table(d, u, need, &err);
    return need[d->L] <= M;
}

rk_status rk_dp_min_budget(const rk_dp_costs *c, int slots, int64_t *out, rk_error *err) {
    rk_status r = rk_dp_costs_check(c, err);
    if (r) return r;
    if (slots < 1) return rk_fail(err, RK_EINPUT, "slots must be >= 1, got %d", slots);
    dp_chain d;
    if ((r = dp_chain_init(&d, c, err))) return r;
    size_t W = (size_t)c->n_blocks + 1;
    int64_t *need = malloc(W * W * sizeof *need);
    if (!need) {
        dp_chain_free(&d);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    dp_need_table(&d, 1, need, err);
    int64_t b0 = need[c->n_blocks];
    if (b0 >= DP_NEED_INF) {
        r = rk_fail(err, RK_EINFEASIBLE, "no schedule exists at any budget");
        goto done;
    }
    if (feasible_at(&d, need, b0, slots)) {
        *out = b0;
        goto done;
    }
    /* rounding needs a little more: grow, then bisect (lo infeasible, hi feasible) */
    int64_t inc = b0 / slots > 0 ? b0 / slots : 1, lo = b0, hi;
    for (;;) {
        hi = b0 + inc;
        if (feasible_at(&d, need, hi, slots)) break;
        lo = hi;
        if (inc > INT64_MAX / 8) {
            r = rk_fail(err, RK_EFAIL, "internal: no feasible budget found");
            goto done;
        }
        inc *= 2;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (feasible_at(&d, need, mid, slots)) hi = mid;
        else lo = mid;
    }
    *out = hi;
done:
    free(need);
    dp_chain_free(&d);
    return r;
}
