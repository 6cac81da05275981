/* cbc_solve.h — an rk_checkmate_solve_fn that runs the external CBC binary on
 * an MPS file (benchmark and development only: the library never calls it). */
#ifndef CBC_SOLVE_H
#define CBC_SOLVE_H
#include "rk_checkmate.h"

typedef struct {
    const char *workdir;   /* where MPS and solution files go */
    int threads;           /* CBC threads (1) */
    double total_s;        /* accumulated wall time of the cbc runs */
    int runs;
} cbc_ctx;

rk_status cbc_solve(void *ctx, const char *tag, const rk_lp *lp, const rk_milp_params *mp, rk_milp_result *res,
                    rk_error *err);
/* Solve an existing MPS file with CBC; fills status/objective (objective recomputed needs lp) and the wall time. */
rk_status cbc_solve_file(const char *mps, const char *sol, int threads, double time_limit, const rk_lp *lp,
                         rk_milp_result *res, double *wall, rk_error *err);
#endif
