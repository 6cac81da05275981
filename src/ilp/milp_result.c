/* milp_result.c — the small parts of rk_milp.h around a solve: parameter
 * defaults, freeing results and pseudocosts, status names.  Below the search
 * (bb.c) and its heuristics (bb_heur.c), which both use them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

void rk_milp_params_default(rk_milp_params *p) {
    memset(p, 0, sizeof *p);
    p->gap = 1e-6;
    p->known_bound = -INFINITY;
}

void rk_milp_pseudocosts_free(rk_milp_pseudocosts *pc) {
    if (!pc) return;
    for (int d = 0; d < 2; d++) {
        free(pc->sum[d]);
        free(pc->cnt[d]);
        pc->sum[d] = NULL;
        pc->cnt[d] = NULL;
    }
    pc->n = 0;
}

void rk_milp_result_free(rk_milp_result *res) {
    if (!res) return;
    free(res->x);
    res->x = NULL;
    rk_milp_pseudocosts_free(&res->pseudocosts);
}

const char *rk_milp_status_name(rk_milp_status s) {
    switch (s) {
    case RK_MILP_OPTIMAL: return "optimal";
    case RK_MILP_INFEASIBLE: return "infeasible";
    case RK_MILP_UNBOUNDED: return "unbounded";
    case RK_MILP_TIME_LIMIT: return "time_limit";
    case RK_MILP_ERROR: return "error";
    }
    return "error";
}
