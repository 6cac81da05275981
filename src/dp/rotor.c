/* rotor.c — rk-Rotor's table: Opt(s, t, m) over memory slots (a layer per
 * flag f: a_s freed right after the subproblem, docs/rk-rotor.md), filled by
 * increasing length with OpenMP (the rows (s, s+len) of one length, each
 * with all its m cells, in parallel; a row waits only for its two direct
 * sub-rows, so no barrier between lengths), the least-memory table that
 * bounds each row from below, rk-Rotor-Build (the plan of the optimum) and
 * the smallest feasible budget.  The chain view it works on is dp_chain.c. */
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* ------------------------------------------------------------ the table */

/* Row (s, t) holds the cells m in [need(s,t), hi(s,t)]: below need the
 * subproblem is infeasible; from sat(s,t) on -- the requirement of the
 * fastest plan, case 1 with each block's fastest option -- Opt is constant
 * (no plan is faster, and that one fits), so hi = min(M, sat) and a read
 * beyond hi returns the cell hi. */
struct rk_dp_table {
    dp_chain d;
    int L, M;
    int64_t unit, budget;
    int64_t *need;      /* (L+1)^2, slots */
    int64_t *hi;        /* (L+1)^2, slots: last stored cell */
    size_t *off;        /* (L+1)^2: index of the cell need(s, t) */
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
    free(t->hi);
    free(t->off);
    free(t->opt);
    free(t->dec);
    free(t);
}

/* Row (s, e) with flag f (a_s freed right after the subproblem: the block's
 * backward drops its input, dp_bwd_peak): two layers of (L+1)^2. */
static inline size_t tb_ix(const rk_dp_table *t, int s, int e, int f) {
    size_t W = (size_t)t->L + 1;
    return (size_t)f * W * W + (size_t)s * W + (size_t)e;
}
static inline int64_t tb_need(const rk_dp_table *t, int s, int e, int f) { return t->need[tb_ix(t, s, e, f)]; }
static inline int64_t tb_hi(const rk_dp_table *t, int s, int e, int f) { return t->hi[tb_ix(t, s, e, f)]; }
static inline double *tb_row(const rk_dp_table *t, int s, int e, int f) { return t->opt + t->off[tb_ix(t, s, e, f)]; }
static inline int16_t *tb_drow(const rk_dp_table *t, int s, int e, int f) { return t->dec + t->off[tb_ix(t, s, e, f)]; }

int rk_dp_table_feasible(const rk_dp_table *t) { return tb_need(t, 0, t->L, 0) <= t->M; }
size_t rk_dp_table_bytes(const rk_dp_table *t) {
    size_t W = (size_t)t->L + 1;
    return sizeof *t + t->n_cells * (sizeof(double) + sizeof(int16_t)) +
           2 * W * W * (2 * sizeof(int64_t) + sizeof(size_t)) + 3 * W * sizeof(int64_t);
}
int64_t rk_dp_table_unit(const rk_dp_table *t) { return t->unit; }
int rk_dp_table_slots(const rk_dp_table *t) { return t->M; }

/* The stored cell that answers (s, e, m) with flag f, or -1 when infeasible. */
static inline long tb_cell(const rk_dp_table *t, int s, int e, int m, int f) {
    if (!t->opt || s < 0 || e > t->L || s >= e || m < 0 || m > t->M) return -1; /* infeasible: no cells */
    int64_t n = tb_need(t, s, e, f), h = tb_hi(t, s, e, f);
    if (m < n) return -1;
    if (m > h) m = (int)h;
    return (long)(t->off[tb_ix(t, s, e, f)] + (size_t)(m - n));
}
double rk_dp_table_opt(const rk_dp_table *t, int s, int e, int m) {
    long c = tb_cell(t, s, e, m, 0);
    return c < 0 ? INFINITY : t->opt[c];
}
int rk_dp_table_decision(const rk_dp_table *t, int s, int e, int m) {
    long c = tb_cell(t, s, e, m, 0);
    return c < 0 ? 0 : t->dec[c];
}
double rk_dp_table_time(const rk_dp_table *t) { return rk_dp_table_opt(t, 0, t->L, t->M); }

/* best[k] = min(best[k], c + x[k] + y[k]) with x, y either arrays or
 * constants (a row read beyond its last stored cell); ties keep the earlier
 * candidate (strict <). */
static inline void relax_vv(double *restrict b, int32_t *restrict d, const double *restrict x,
                            const double *restrict y, double c, int code, int n) {
#pragma omp simd
    for (int k = 0; k < n; k++) {
        double v = c + x[k] + y[k];
        int lt = isless(v, b[k]);
        b[k] = lt ? v : b[k];
        d[k] = lt ? code : d[k];
    }
}
static inline void relax_v(double *restrict b, int32_t *restrict d, const double *restrict x, double c, int code,
                           int n) {
#pragma omp simd
    for (int k = 0; k < n; k++) {
        double v = c + x[k];
        int lt = isless(v, b[k]);
        b[k] = lt ? v : b[k];
        d[k] = lt ? code : d[k];
    }
}
static inline void relax_c(double *restrict b, int32_t *restrict d, double v, int code, int n) {
#pragma omp simd
    for (int k = 0; k < n; k++) {
        int lt = isless(v, b[k]);
        b[k] = lt ? v : b[k];
        d[k] = lt ? code : d[k];
    }
}

/* One row (s, e): cells m in [need, hi].  Candidates are visited in a fixed
 * order (options 1.., then checkpoints s+1..e-1) and replace the current
 * best only when strictly faster, so the result does not depend on the
 * thread that computes the row.  Every index read is >= 0: a candidate's
 * range starts where its shifted reads reach the source row's need. */
static void fill_row(const rk_dp_table *tb, int s, int e, int f, int32_t *ds) {
    const dp_chain *d = &tb->d;
    int64_t u = tb->unit, lo = tb_need(tb, s, e, f), hi = tb_hi(tb, s, e, f);
    if (lo > tb->M) return;
    double *best = tb_row(tb, s, e, f); /* best[k] = cell lo + k */
    int16_t *dec = tb_drow(tb, s, e, f);
    int n = (int)(hi - lo + 1);
    for (int k = 0; k < n; k++) {
        best[k] = INFINITY;
        ds[k] = 0;
    }
    int nopt = dp_cls(d, s)->n_options;
    if (e == s + 1) {
        for (int o = 1; o < nopt; o++) {
            int64_t a = dp_max(dp_base_need(d, s, o, u, f), lo);
            if (a > hi) continue;
            relax_c(best + (a - lo), ds + (a - lo), dp_base_time(d, s, o), o, (int)(hi - a + 1));
        }
    } else {
        for (int o = 1; o < nopt; o++) {
            int g1 = dp_case1_sub_flag(d, s, o);
            int64_t n1 = tb_need(tb, s + 1, e, g1), h1 = tb_hi(tb, s + 1, e, g1);
            if (n1 > tb->M) continue;
            const double *sub = tb_row(tb, s + 1, e, g1);
            int64_t sh = dp_case1_shift(d, s, o, u, f);
            int64_t a = dp_max(dp_max(dp_case1_thr(d, s, e, o, u, f), sh + n1), lo);
            if (a > hi) continue;
            const rk_dp_option_cost *x = dp_opt(d, s, o);
            double c = x->fwd_time + x->bwd_time;
            int64_t p = dp_max(a - 1, dp_min(hi, h1 + sh)); /* last m reading sub directly */
            if (p >= a) relax_v(best + (a - lo), ds + (a - lo), sub + (a - sh - n1), c, o, (int)(p - a + 1));
            if (p < hi) relax_c(best + (p + 1 - lo), ds + (p + 1 - lo), c + sub[h1 - n1], o, (int)(hi - p));
        }
        int64_t chain = 0, sh2 = dp_ceil(d->act[s], u);
        double pre = 0;
        for (int i = s + 1; i < e; i++) {
            chain = dp_chain_step(d, s, i - 1, chain);
            pre += dp_opt(d, i - 1, 0)->fwd_time;
            int fi = dp_right_drop(d, i);
            int64_t na = tb_need(tb, i, e, fi), nb = tb_need(tb, s, i, f);
            if (na > tb->M || nb > tb->M) continue;
            int64_t ha = tb_hi(tb, i, e, fi), hb = tb_hi(tb, s, i, f);
            int64_t a = dp_max(dp_max(dp_max(dp_ceil(chain + d->G[e], u), sh2 + na), nb), lo);
            if (a > hi) continue;
            const double *ra = tb_row(tb, i, e, fi), *rb = tb_row(tb, s, i, f);
            int code = -(i - s);
            /* ra is read directly up to m = ha + sh2, rb up to m = hb */
            int64_t pa = dp_min(hi, ha + sh2), pb = dp_min(hi, hb);
            int64_t p1 = dp_min(pa, pb);
            if (p1 >= a)
                relax_vv(best + (a - lo), ds + (a - lo), ra + (a - sh2 - na), rb + (a - nb), pre, code,
                         (int)(p1 - a + 1));
            int64_t m = dp_max(a, p1 + 1);
            if (m <= hi) {
                int64_t p2 = dp_max(pa, pb);
                if (p2 >= m) {
                    if (pa > pb) /* rb constant */
                        relax_v(best + (m - lo), ds + (m - lo), ra + (m - sh2 - na), pre + rb[hb - nb], code,
                                (int)(p2 - m + 1));
                    else         /* ra constant */
                        relax_v(best + (m - lo), ds + (m - lo), rb + (m - nb), pre + ra[ha - na], code,
                                (int)(p2 - m + 1));
                    m = p2 + 1;
                }
                if (m <= hi) relax_c(best + (m - lo), ds + (m - lo), pre + ra[ha - na] + rb[hb - nb], code,
                                     (int)(hi - m + 1));
            }
        }
    }
    for (int k = 0; k < n; k++) dec[k] = (int16_t)ds[k];
}

/* Wait for a row another thread is computing: spin briefly, then yield
 * (the machine may be busy with other work). */
static void wait_done(atomic_int *f) {
    for (int spin = 0; !atomic_load_explicit(f, memory_order_acquire); spin++)
        if (spin > 64) sched_yield();
}

/* sat(s, t) per flag: the requirement (slots) of case 1 all the way with
 * each block's fastest option (ties: the lower index). */
static void sat_table(const dp_chain *d, int64_t u, int64_t *sat) {
    int L = d->L, W = L + 1;
    for (int t = 1; t <= L; t++)
        for (int s = t - 1; s >= 0; s--) {
            int nopt = dp_cls(d, s)->n_options, best = 1;
            for (int o = 2; o < nopt; o++) {
                const rk_dp_option_cost *x = dp_opt(d, s, o), *y = dp_opt(d, s, best);
                if (x->fwd_time + x->bwd_time < y->fwd_time + y->bwd_time) best = o;
            }
            for (int f = 0; f < 2; f++) {
                int64_t *sf = sat + (size_t)f * W * W;
                if (t == s + 1) sf[s * W + t] = dp_base_need(d, s, best, u, f);
                else
                    sf[s * W + t] = dp_max(dp_case1_thr(d, s, t, best, u, f),
                                           dp_case1_shift(d, s, best, u, f) +
                                               sat[(size_t)dp_case1_sub_flag(d, s, best) * W * W + (s + 1) * W + t]);
            }
        }
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
    t->need = malloc(2 * W * W * sizeof *t->need);
    t->hi = malloc(2 * W * W * sizeof *t->hi);
    t->off = calloc(2 * W * W, sizeof *t->off);
    if (!t->need || !t->hi || !t->off) {
        rk_dp_table_free(t);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    dp_need_table(&t->d, t->unit, t->need, err);
    for (size_t i = 0; i < 2 * W * W; i++) t->hi[i] = 0;
    sat_table(&t->d, t->unit, t->hi);
    int feasible = tb_need(t, 0, L, 0) <= t->M;
    /* nothing to fill when infeasible */
    size_t n = 0;
    if (feasible)
        for (int s = 0; s < L; s++)
            for (int e = s + 1; e <= L; e++)
                for (int f = 0; f < 2; f++) {
                size_t ix = tb_ix(t, s, e, f);
                t->off[ix] = n;
                int64_t nd = t->need[ix];
                if (t->hi[ix] > t->M) t->hi[ix] = t->M;
                if (t->hi[ix] < nd) t->hi[ix] = nd; /* sat >= need always; kept safe */
                if (nd <= t->M) n += (size_t)(t->hi[ix] - nd + 1);
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
        size_t row = (size_t)t->M + 1, ntask = (size_t)L * (L + 1) / 2;
        int32_t *scratch = malloc((size_t)nt * row * sizeof *scratch);
        int *task_s = malloc(ntask * sizeof *task_s), *task_e = malloc(ntask * sizeof *task_e);
        atomic_int *done = malloc(W * W * sizeof *done);
        if (!scratch || !task_s || !task_e || !done) {
            free(scratch), free(task_s), free(task_e), free(done);
            rk_dp_table_free(t);
            return rk_fail(err, RK_ENOMEM, "out of memory");
        }
        /* Rows by increasing length (the paper's order); a row waits only for
         * (s, e-1) and (s+1, e), which are done after every shorter
         * sub-interval of [s, e]: no barrier between lengths. */
        size_t k = 0;
        for (int len = 1; len <= L; len++)
            for (int s0 = 0; s0 + len <= L; s0++) task_s[k] = s0, task_e[k++] = s0 + len;
        for (size_t i = 0; i < W * W; i++) atomic_init(&done[i], 0);
        atomic_size_t next;
        atomic_init(&next, 0);
#pragma omp parallel num_threads(nt)
        {
            int32_t *dsc = scratch + (size_t)omp_get_thread_num() * row;
            for (;;) {
                size_t j = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
                if (j >= ntask) break;
                int s0 = task_s[j], e0 = task_e[j];
                if (e0 > s0 + 1) {
                    wait_done(&done[s0 * W + e0 - 1]);
                    wait_done(&done[(s0 + 1) * W + e0]);
                }
                fill_row(t, s0, e0, 0, dsc);
                fill_row(t, s0, e0, 1, dsc);
                atomic_store_explicit(&done[s0 * W + e0], 1, memory_order_release);
            }
        }
        free(task_s);
        free(task_e);
        free(done);
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
    if (!rk_dp_table_feasible(t)) {
        rk_dp_plan_free(p);
        return rk_fail(err, RK_EINFEASIBLE, "no schedule fits the budget");
    }
    /* pending subproblems (s, t, m); the stack grows as needed */
    int cap = 2 * L + 2, top = 0;
    int *st = malloc((size_t)cap * 4 * sizeof *st);
    if (!st) {
        rk_dp_plan_free(p);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    st[0] = 0, st[1] = L, st[2] = t->M, st[3] = 0, top = 1;
    while (top > 0) {
        top--;
        int s = st[4 * top], e = st[4 * top + 1], m = st[4 * top + 2], f = st[4 * top + 3];
        if (m > tb_hi(t, s, e, f)) m = (int)tb_hi(t, s, e, f); /* the same cell answers */
        long cell = tb_cell(t, s, e, m, f);
        int code = cell < 0 ? 0 : t->dec[cell];
        if (code == 0) {
            free(st);
            rk_dp_plan_free(p);
            return rk_fail(err, RK_EFAIL, "internal: DP cell (%d, %d, %d) is infeasible on the optimal path", s, e, m);
        }
        rk_dp_plan_set(p, s, e, code);
        int64_t u = t->unit;
        if (top + 2 > cap) {
            cap *= 2;
            int *ns = realloc(st, (size_t)cap * 4 * sizeof *st);
            if (!ns) {
                free(st);
                rk_dp_plan_free(p);
                return rk_fail(err, RK_ENOMEM, "out of memory");
            }
            st = ns;
        }
        if (code > 0) {
            if (e > s + 1) {
                st[4 * top] = s + 1, st[4 * top + 1] = e;
                st[4 * top + 2] = m - (int)dp_case1_shift(&t->d, s, code, u, f);
                st[4 * top + 3] = dp_case1_sub_flag(&t->d, s, code);
                top++;
            }
        } else {
            int i = s - code;
            st[4 * top] = i, st[4 * top + 1] = e, st[4 * top + 2] = m - (int)dp_ceil(t->d.act[s], u);
            st[4 * top + 3] = dp_right_drop(&t->d, i);
            top++;
            st[4 * top] = s, st[4 * top + 1] = i, st[4 * top + 2] = m, st[4 * top + 3] = f;
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
    int64_t *need = malloc(2 * W * W * sizeof *need);
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
    int64_t *need = malloc(2 * W * W * sizeof *need);
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
