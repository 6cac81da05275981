/* presolve.h — LP presolve for the LP-only path (lp_solve.c): removes empty
 * rows, singleton rows (turned into column bounds), fixed and empty
 * columns, redundant and forcing rows; postsolve maps a primal solution of
 * the reduced LP back to the original columns.  Internal to src/ilp. */
#ifndef RK_PRESOLVE_H
#define RK_PRESOLVE_H

#include "rk_milp.h"

typedef struct rk_presolve rk_presolve;

typedef enum { RK_PRE_OK, RK_PRE_INFEASIBLE, RK_PRE_UNBOUNDED } rk_pre_status;

/* Reduce lp.  On RK_OK, *pre and *reduced are set (reduced is a new LP over
 * the kept columns and rows, same sense and an adjusted constant) and
 * *ps says whether the reduction already proved infeasibility (then
 * *reduced is NULL).  Integrality is ignored (LP only). */
rk_status rk_presolve_run(const rk_lp *lp, rk_presolve **pre, rk_lp **reduced, rk_pre_status *ps,
                          rk_error *err);
/* x_red: solution of the reduced LP; x: the n original values. */
void rk_presolve_postsolve(const rk_presolve *pre, const double *x_red, double *x);
int rk_presolve_removed_rows(const rk_presolve *pre);
int rk_presolve_removed_cols(const rk_presolve *pre);
void rk_presolve_free(rk_presolve *pre);

#endif
