/* peak_explain.h — what is in memory at a schedule's peak (`--explain` of
 * `rkmate simulate` and `rkmate solve`). */
#ifndef RK_PEAK_EXPLAIN_H
#define RK_PEAK_EXPLAIN_H

#include <stdio.h>

#include "rk_graph.h"

/* Replays the schedule (refusing an invalid one, as rk_simulate does) and
 * writes, for the op where its peak happens: the compute node it runs, the
 * data nodes in memory then, each with its bytes, its role (read by the node,
 * made by it, named for a shape only, held across it by the schedule) and its
 * place (model input, block boundary, inside a block), and the node's own
 * temporary.  Text lines, or one JSON object (no newline) with json. */
rk_status peak_explain(FILE *f, const rk_chain *ch, const rk_schedule *s, int json, rk_error *err);

/* The same in numbers: the peak, the node running then (NULL if none), what
 * it reads and makes (own), its temporary, and what the schedule holds
 * across it (held, of which the model inputs: model_input_held). */
typedef struct {
    int64_t peak, own, temporary, held, model_input_held;
    int block;
    const char *node; /* points into the chain */
    rk_ckind kind;
} peak_parts;
rk_status peak_summary(const rk_chain *ch, const rk_schedule *s, peak_parts *out, rk_error *err);

#endif
