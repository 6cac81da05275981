/* dp_fixtures.h — chains for the dp tests: random block classes built with
 * the rk_graph builder (a few forward ops with data, phantoms, skip edges to
 * the block input, backward nodes and grads, negative overheads), the
 * hand-worked homogeneous class, and an exhaustive search over the plans of
 * rk-Rotor's family judged by the simulator. */
#ifndef RK_DP_FIXTURES_H
#define RK_DP_FIXTURES_H
#include <stdint.h>

#include "rk_dp.h"

typedef struct {
    uint64_t s;
} fx_rng;
uint64_t fx_next(fx_rng *r);
int fx_int(fx_rng *r, int lo, int hi); /* uniform in [lo, hi] */
double fx_unif(fx_rng *r);

/* A random block class: 2..4 forward ops; sizes are multiples of `unit`
 * (1 for arbitrary sizes) in [1, 6] units, the output `act` bytes; some
 * phantoms, some skip edges from the block input, overheads in
 * [-2, 3] units, times in [1, 10]. */
rk_status fx_random_class(rk_graph *g, fx_rng *r, int64_t act, int64_t unit);
/* A random chain of L blocks over n_classes random classes (sizes multiples
 * of unit; every boundary activation is `act` bytes). */
rk_status fx_random_chain(rk_chain *ch, fx_rng *r, int L, int n_classes, int64_t act, int64_t unit);

/* The hand-worked class: x(A) -> h(H) -> y(A); fwd times 1, 1; bwd times
 * 2, 2; no overheads; bwd_y needs h, bwd_h needs x.  Homogeneous chain of L
 * such blocks. */
rk_status fx_hand_chain(rk_chain *ch, int L, int64_t A, int64_t H);

/* Exhaustive search over every plan of the family for (0, L): each plan is
 * built, replayed by rk_simulate and checked against its exact evaluation
 * (peak and time); returns the least simulated time among the plans whose
 * simulated peak is <= budget (INFINITY if none), the number of plans, and
 * the number of evaluation mismatches (must be 0). */
typedef struct {
    double best_time;
    long n_plans, n_fit, mismatches;
    int64_t min_peak;
} fx_exhaustive;
rk_status fx_exhaustive_search(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c, int64_t budget,
                               fx_exhaustive *out);

/* Build a plan's schedule and simulate it: peak/time out. */
rk_status fx_build_and_simulate(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c,
                                const rk_dp_plan *p, rk_schedule *s, rk_sim_result *res, rk_error *err);
#endif
