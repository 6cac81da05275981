/* presolve.h — LP presolve for the LP-only path (lp_solve.c): removes empty
 * rows, singleton rows (turned into column bounds), fixed and empty
 * columns, redundant and forcing rows; postsolve maps a primal solution of
 * the reduced LP back to the original columns.  Internal to src/ilp. */
#ifndef RK_PRESOLVE_H
#define RK_PRESOLVE_H

#include "rk_milp.h"

typedef struct presolve_info presolve_info;

typedef enum { RK_PRE_OK, RK_PRE_INFEASIBLE, RK_PRE_UNBOUNDED } pre_status;

/* Reduce lp.  On RK_OK, *pre and *reduced are set (reduced is a new LP over
 * the kept columns and rows, same sense and an adjusted constant) and
 * *ps says whether the reduction already proved infeasibility (then
 * *reduced is NULL).  Integrality is ignored (LP only). */
rk_status presolve_run(const rk_lp *lp, presolve_info **pre, rk_lp **reduced, pre_status *ps,
                          rk_error *err);
/* x_red: solution of the reduced LP; x: the n original values. */
void presolve_postsolve(const presolve_info *pre, const double *x_red, double *x);
int presolve_removed_rows(const presolve_info *pre);
int presolve_removed_cols(const presolve_info *pre);
void presolve_free(presolve_info *pre);

#endif
