/* synthetic.c — random chain costs (no graphs) for the rk-Rotor bench and
 * the thread-determinism tests. */
#include <stdlib.h>
#include <string.h>

#include "rk_dp.h"

static uint64_t next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double unif(uint64_t *s) { return (double)(next(s) >> 11) / 9007199254740992.0; }

rk_status rk_dp_costs_random(rk_dp_costs *c, int n_blocks, int n_options, uint64_t seed) {
    if (n_blocks < 1 || n_options < 2) return RK_EINPUT;
    int *nopt = malloc((size_t)n_blocks * sizeof *nopt);
    if (!nopt) return RK_ENOMEM;
    for (int k = 0; k < n_blocks; k++) nopt[k] = n_options;
    rk_status r = rk_dp_costs_alloc(c, n_blocks, nopt, n_blocks);
    free(nopt);
    if (r) return r;
    uint64_t st = seed * 0x2545F4914F6CDD1DULL + 1;
    int64_t base = 1000000;
    int64_t act = (int64_t)(base * (0.5 + unif(&st)));
    for (int b = 0; b < n_blocks; b++) {
        rk_dp_class_cost *cc = &c->classes[b];
        c->block_class[b] = b;
        cc->keep_all = 1;
        cc->input_size = act;
        act = (int64_t)(base * (0.5 + unif(&st)));
        cc->output_size = act;
        cc->output_grad_size = act;
        int64_t io = cc->input_size + cc->output_size;
        int64_t inner = (int64_t)(base * (1.0 + 4.0 * unif(&st)));  /* everything keep-all saves */
        int64_t tmpf = (int64_t)(base * unif(&st)), tmpb = (int64_t)(base * unif(&st));
        double ft = 5.0 + 10.0 * unif(&st), bt = 2.0 * ft * (0.8 + 0.4 * unif(&st));
        for (int o = 0; o < n_options; o++) {
            rk_dp_option_cost *x = &cc->opt[o];
            memset(x, 0, sizeof *x);
            x->fwd_time = ft;
            if (o == 0) {
                x->fwd_peak = io + tmpf + inner / 4;
                x->fwd_peak_re = x->fwd_peak;
                continue;
            }
            /* o = 1 keeps everything; larger o keep less and recompute more */
            double keep = n_options > 2 ? 1.0 - (double)(o - 1) / (double)(n_options - 1) : 1.0;
            x->saved = (int64_t)(inner * keep);
            x->fwd_time = ft * (1.0 + 0.02 * unif(&st) * (1.0 - keep));
            x->bwd_time = bt + ft * (1.0 - keep) * (0.5 + 0.5 * unif(&st));
            x->fwd_peak = io + x->saved + tmpf;
            x->fwd_peak_re = x->fwd_peak;
            x->bwd_peak = io + x->saved + cc->output_grad_size + tmpb + (int64_t)((inner - x->saved) * 0.5);
            x->loss_peak = io + x->saved + cc->output_grad_size;
            x->loss_time = b == n_blocks - 1 ? 1.0 : 0.0;
        }
    }
    return RK_OK;
}
