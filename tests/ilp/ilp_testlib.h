/* ilp_testlib.h — checks shared by the LP and MILP tests. */
#ifndef RK_ILP_TESTLIB_H
#define RK_ILP_TESTLIB_H
#include "rk_milp.h"

/* Largest violation by x of lp's rows and column bounds (and, when
 * with_integrality, of integrality), each relative to max(1, |bound|). */
double ilp_max_violation(const rk_lp *lp, const double *x, int with_integrality);
#endif
