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
/* chain_costs.c: the option's bwd ops as a block runs them (*ops malloc'ed):
 * in_mode 0 the input kept, 1 forgotten after its last real use
 * (dp_bwd_drop_input: RK_EFAIL when the class cannot), 2 absent from the
 * start (in_unread); out_absent: the output is absent (out_unread), so the
 * ops that forget it are left out. */
rk_status dp_bwd_ops(const rk_graph *g, const rk_option *opt, int in_mode, int out_absent, rk_op **ops, int *n,
                     rk_error *err);

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
/* Whether block s's backward with option o runs without its input: drop =
 * 1 when the caller frees a_s right after it (the subproblem's flag); it
 * then goes after its last real use when that lowers the peak
 * (bwd_peak_drop), or is absent from the start (in_unread).  noout: the
 * output is absent (dp_case1_sub_flag). */
static inline int dp_bwd_drops(const dp_chain *d, int s, int o, int drop, int noout) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    if (!drop) return 0;
    if (x->in_unread) return 1;
    int64_t p = noout ? x->bwd_peak_noout : x->bwd_peak, q = noout ? x->bwd_peak_drop_noout : x->bwd_peak_drop;
    return q > 0 && q < p;
}
/* Block s's backward peak with option o (absolute, for the block alone). */
static inline int64_t dp_bwd_peak(const dp_chain *d, int s, int o, int drop, int noout) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    if (dp_bwd_drops(d, s, o, drop, noout)) return noout ? x->bwd_peak_drop_noout : x->bwd_peak_drop;
    return noout ? x->bwd_peak_noout : x->bwd_peak;
}
/* Case 1 (t > s+1) with flag f: block s's input goes right after its forward
 * when the caller frees it right after the subproblem anyway and the
 * backward reads its shape only. */
static inline int dp_early_drop(const dp_chain *d, int s, int o, int f) { return f && dp_opt(d, s, o)->in_unread; }
/* Case 1's flag for Opt(s+1, t): block s's backward with option o does not
 * read its output a_{s+1}, so a_{s+1} goes right after Opt(s+1, t) (its
 * last op, block s+1's backward, may drop it) and block s's backward runs
 * without it. */
static inline int dp_case1_sub_flag(const dp_chain *d, int s, int o) {
    return dp_opt(d, s, o)->out_unread && dp_cls(d, s)->out_rebuilt;
}
/* The flag of Opt(i, t) when case 2 checkpoints at i: a_i is freed right
 * after it when block i-1 rebuilds its output. */
static inline int dp_right_drop(const dp_chain *d, int i) { return dp_cls(d, i - 1)->out_rebuilt; }
/* Base case (s, s+1) with option o: the least m (in units u). */
static inline int64_t dp_base_need(const dp_chain *d, int s, int o, int64_t u, int drop) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    int t = s + 1;
    int64_t f = t < d->L ? dp_ceil(dp_base_fwd(d, s, o), u) : dp_max(dp_ceil(x->fwd_peak, u), dp_ceil(x->loss_peak, u));
    return dp_max(f, dp_ceil(dp_bwd_peak(d, s, o, drop, 0), u));
}
static inline double dp_base_time(const dp_chain *d, int s, int o) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return s + 1 == d->L ? x->fwd_time + x->loss_time + x->bwd_time : x->fwd_time + x->bwd_time;
}
/* Case 1 at (s, t), t > s+1: own thresholds (fwd with G_t, bwd) and the
 * shift a_s + saved of the subproblem (s+1, t) (saved alone when a_s goes
 * right after the forward: dp_early_drop). */
static inline int64_t dp_case1_thr(const dp_chain *d, int s, int t, int o, int64_t u, int drop) {
    const rk_dp_option_cost *x = dp_opt(d, s, o);
    return dp_max(dp_ceil(x->fwd_peak + d->G[t], u),
                  dp_ceil(dp_bwd_peak(d, s, o, drop, dp_case1_sub_flag(d, s, o)), u));
}
static inline int64_t dp_case1_shift(const dp_chain *d, int s, int o, int64_t u, int drop) {
    return dp_ceil((dp_early_drop(d, s, o, drop) ? 0 : d->act[s]) + dp_opt(d, s, o)->saved, u);
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
