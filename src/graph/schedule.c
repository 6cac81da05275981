/* schedule.c — schedules: growable lists of run / forget / marker ops with
 * the solver's predictions. */
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

void rk_schedule_init(rk_schedule *s) {
    memset(s, 0, sizeof *s);
    s->budget = -1;
    s->predicted_peak = -1;
    s->predicted_time = -1;
}

void rk_schedule_free(rk_schedule *s) {
    if (!s) return;
    free(s->ops);
    free(s->algo);
    rk_schedule_init(s);
}

rk_status rk_schedule_push(rk_schedule *s, rk_op_kind kind, int block, int node, int option) {
    if (s->n_ops == s->cap_ops) {
        int cap = s->cap_ops ? 2 * s->cap_ops : 64;
        rk_op *o = realloc(s->ops, (size_t)cap * sizeof *o);
        if (!o) return RK_ENOMEM;
        s->ops = o;
        s->cap_ops = cap;
    }
    rk_op *o = &s->ops[s->n_ops++];
    o->kind = kind;
    o->block = block;
    o->node = node;
    o->option = option;
    return RK_OK;
}

rk_status rk_schedule_append(rk_schedule *dst, const rk_schedule *src) {
    for (int i = 0; i < src->n_ops; i++) {
        const rk_op *o = &src->ops[i];
        if (rk_schedule_push(dst, o->kind, o->block, o->node, o->option)) return RK_ENOMEM;
    }
    return RK_OK;
}

void rk_schedule_set_algo(rk_schedule *s, const char *algo) {
    free(s->algo);
    s->algo = NULL;
    if (algo) {
        size_t n = strlen(algo) + 1;
        s->algo = malloc(n);
        if (s->algo) memcpy(s->algo, algo, n);
    }
}
