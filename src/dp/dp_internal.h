/* dp_internal.h — what the dp module's files share: the chain's boundary
 * sizes and the subproblem thresholds of rk-Rotor, written once so that the
 * need table, the table fill and the exact plan evaluation agree. */
#ifndef RK_DP_INTERNAL_H
#define RK_DP_INTERNAL_H

#include <stdint.h>

#include "rk_dp.h"

#define DP_NEED_INF (INT64_MAX / 4)

typedef struct {
    int L;
    const rk_dp_costs *c;
    int64_t *act;   /* L+1: a_t bytes (a_0 = the chain inputs) */
    int64_t *dgr;   /* L+1: d_t bytes for 1 <= t < L; 0 at 0 and L */
    int64_t *G;     /* L+1: a_t + d_t for t < L (d_t alone when block t-1's
                       backward does not read its output a_t: then a_t is freed
                       after the backward of block t and rebuilt by block t-1's
                       forward); 0 at L */
} dp_chain;

/* chain_costs.c: an option's bwd ops forgetting the block's input after its
 * last real use (NULL when the class cannot). */
rk_status dp_bwd_drop_input(const rk_graph *g, const rk_option *opt, rk_op **ops, int *n, rk_error *err);

rk_status dp_chain_init(dp_chain *d, const rk_dp_costs *c, rk_error *err);
void dp_chain_free(dp_chain *d);

static inline const rk_dp_class_cost *dp_cls(const dp_chain *d, int s) {
    return &d->c->classes[d->c->block_class[s]];
}
static inline const rk_dp_option_cost *dp_opt(const dp_chain *d, int s, int o) {
    return &dp_cls(d, s)->opt[o];
}
static inline int64_t dp_ceil(int64_t x, int64_t u) {
    if (x <= 0) return 0;
    return x / u + (x % u != 0);
}
static inline int64_t dp_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t dp_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* The forward of the base case (s, s+1), s+1 < L, in bytes: the output a_t
 * is already in memory unless the block's backward does not read it. */
static inline int64_t dp_base_fwd(const dp_chain *d, int s, int o) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return (dp_cls(d, s)->out_rebuilt ? x->fwd_peak : x->fwd_peak_re) + d->dgr[s + 1];
}
/* Block s's backward with option o; drop = 1 when the caller frees a_s
 * right after it (the subproblem's flag): its input goes after its last real
 * use (bwd_peak_drop; 0 = not measured: bwd_peak). */
static inline int64_t dp_bwd_peak(const dp_chain *d, int s, int o, int drop) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return drop && x->bwd_peak_drop > 0 && x->bwd_peak_drop < x->bwd_peak ? x->bwd_peak_drop : x->bwd_peak;
}
/* The flag of Opt(i, t) when case 2 checkpoints at i: a_i is freed right
 * after it when block i-1 rebuilds its output. */
static inline int dp_right_drop(const dp_chain *d, int i) { return dp_cls(d, i - 1)->out_rebuilt; }
/* Base case (s, s+1) with option o: the least m (in units u). */
static inline int64_t dp_base_need(const dp_chain *d, int s, int o, int64_t u, int drop) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    int t = s + 1;
    int64_t f = t < d->L ? dp_ceil(dp_base_fwd(d, s, o), u) : dp_max(dp_ceil(x->fwd_peak, u), dp_ceil(x->loss_peak, u));
    return dp_max(f, dp_ceil(dp_bwd_peak(d, s, o, drop), u));
}
static inline double dp_base_time(const dp_chain *d, int s, int o) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return s + 1 == d->L ? x->fwd_time + x->loss_time + x->bwd_time : x->fwd_time + x->bwd_time;
}
/* Case 1 at (s, t), t > s+1: own thresholds (fwd with G_t, bwd) and the
 * shift a_s + saved of the subproblem (s+1, t). */
static inline int64_t dp_case1_thr(const dp_chain *d, int s, int t, int o, int64_t u, int drop) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return dp_max(dp_ceil(x->fwd_peak + d->G[t], u), dp_ceil(dp_bwd_peak(d, s, o, drop), u));
}
static inline int64_t dp_case1_shift(const dp_chain *d, int s, int o, int64_t u) {
    return dp_ceil(d->act[s] + dp_opt(d, s, o)->saved, u);
}
/* Case 2: the forward chain F0_s .. F0_{i-1} keeps a_s (when j > s) and G_t;
 * `chain` is max(fwd_peak0(s), a_s + fwd_peak0(j), s < j < i) in bytes. */
static inline int64_t dp_chain_step(const dp_chain *d, int s, int j, int64_t chain) {
    int64_t v = dp_opt(d, j, 0)->fwd_peak + (j > s ? d->act[s] : 0);
    return j == s ? v : dp_max(chain, v);
}

/* need[f*(L+1)^2 + s*(L+1)+t] = least m (units u) for which Opt(s, t, m)
 * with flag f (a_s freed right after: dp_bwd_peak) is finite, DP_NEED_INF
 * if none.  Array of 2 (L+1)^2. */
rk_status dp_need_table(const dp_chain *d, int64_t u, int64_t *need, rk_error *err);

#endif
