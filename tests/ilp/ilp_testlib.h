/* ilp_testlib.h — shared by the LP, MPS and MILP tests. */
#ifndef RK_ILP_TESTLIB_H
#define RK_ILP_TESTLIB_H
#include "rk_milp.h"

/* Largest violation by x of lp's rows and column bounds (and, when
 * with_integrality, of integrality), each relative to max(1, |bound|). */
double ilp_max_violation(const rk_lp *lp, const double *x, int with_integrality);

/* The test data folder: $RKMATE_TESTDATA, else tests/data. */
const char *ilp_testdata(void);
/* The MPS file <test data>/dir/name, read; the test fails if it cannot be. */
rk_lp *ilp_read_data_mps(const char *dir, const char *name);
#endif
