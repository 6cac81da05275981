/* dp_chain.c — the chain view of rk-Rotor: per-block option costs in the
 * DP's own arrays (dp_chain) and the least memory of every subproblem
 * (dp_need_table), used by the table (rotor.c) and the plans (rotor_build.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

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
        /* a_t is held through Opt(s, t) only when block t-1 does not rebuild it */
        d->G[t] = t < L ? (p->out_rebuilt ? 0 : d->act[t]) + d->dgr[t] : 0;
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
    for (int i = 0; i < 2 * W * W; i++) need[i] = DP_NEED_INF;
    for (int len = 1; len <= L; len++)
        for (int s = 0; s + len <= L; s++)
            for (int f = 0; f < 2; f++) {
                int t = s + len;
                int64_t *nf = need + (size_t)f * W * W;
                int nopt = dp_cls(d, s)->n_options;
                int64_t best = DP_NEED_INF;
                if (len == 1) {
                    for (int o = 1; o < nopt; o++) {
                        int64_t v = dp_base_need(d, s, o, u, f);
                        if (v < best) best = v;
                    }
                } else {
                    for (int o = 1; o < nopt; o++) {
                        int64_t sub = need[(size_t)dp_case1_sub_flag(d, s, o) * W * W + (s + 1) * W + t];
                        if (sub >= DP_NEED_INF) continue;
                        int64_t v = dp_max(dp_case1_thr(d, s, t, o, u, f), dp_case1_shift(d, s, o, u, f) + sub);
                        if (v < best) best = v;
                    }
                    int64_t chain = 0, sh2 = dp_ceil(d->act[s], u);
                    for (int i = s + 1; i < t; i++) {
                        chain = dp_chain_step(d, s, i - 1, chain);
                        int64_t a = need[(size_t)dp_right_drop(d, i) * W * W + i * W + t], b = nf[s * W + i];
                        if (a >= DP_NEED_INF || b >= DP_NEED_INF) continue;
                        int64_t v = dp_max(dp_max(dp_ceil(chain + d->G[t], u), sh2 + a), b);
                        if (v < best) best = v;
                    }
                }
                nf[s * W + t] = best;
            }
    return RK_OK;
}
