/* names.c — the names of the graph model's enum values (kinds of nodes and edges). */
#include "rk_graph.h"

const char *rk_ckind_name(rk_ckind k) {
    switch (k) {
    case RK_C_FWD: return "fwd";
    case RK_C_BWD: return "bwd";
    case RK_C_LOSS: return "loss";
    }
    return "?";
}

const char *rk_dkind_name(rk_dkind k) {
    switch (k) {
    case RK_D_DATA: return "data";
    case RK_D_GRAD: return "grad";
    case RK_D_PHANTOM: return "phantom";
    }
    return "?";
}

const char *rk_edge_kind_name(rk_edge_kind k) {
    switch (k) {
    case RK_EDGE_REAL: return "real";
    case RK_EDGE_FAKE: return "fake";
    case RK_EDGE_GLOBAL: return "global";
    }
    return "?";
}
