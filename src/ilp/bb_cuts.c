/* bb_cuts.c — owns cutting planes for branch-and-bound: rounds of cuts
 * separated at the root and added to the simplex with rk_simplex_add_rows. */
#include <math.h>
#include <stdlib.h>

#include "bb_internal.h"

int bb_root_cuts(bb_ctx *c) {
    (void)c;
    return 0;
}
