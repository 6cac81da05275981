/* cm_testlib.h — test helpers for rk-Checkmate: small block builders, a
 * random block generator and an exhaustive search over the schedules of the
 * Checkmate stage model (the reference the ILP optimum is checked against). */
#ifndef CM_TESTLIB_H
#define CM_TESTLIB_H

#include <stdint.h>
#include "rk_graph.h"

/* Random block with 1..max_fwd forward nodes (seeded, deterministic). */
rk_status cmt_random_block(unsigned seed, int max_fwd, rk_graph *g, rk_error *err);

/* Exhaustive optimum over the schedules of the stage model: stage t runs any
 * subset of the forward nodes k < t in increasing order, then node t; after
 * every run any set of present data may be forgotten (inputs never, grads
 * only when complete).  Memory as the simulator (live + max(overhead, 0) +
 * fresh outputs <= m_peak at every run; at the loss live - inputs - output
 * <= m_save when m_save >= 0); at the end exactly inputs + input grads.
 * Returns the minimal time or INFINITY when no schedule fits; -1 when the
 * graph is too large (more than 62 non-input data or the memo overflows). */
double cmt_brute_force(const rk_graph *g, int64_t m_peak, int64_t m_save);

#endif
