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
/* The solution file <test data>/dir/name.sol (rkmate milp -o format) for lp,
 * read into a new array (free it); the test fails if it cannot be. */
double *ilp_read_data_solution(const rk_lp *lp, const char *dir, const char *name);
/* The MIPLIB instances of <test data>/miplib3/OPTIMA.tsv (name, optimum):
 * at most max of them into names / opt; returns how many (0 when the file
 * cannot be read). */
#define ILP_NAME_MAX 64
int ilp_load_optima(char (*names)[ILP_NAME_MAX], double *opt, int max);
#endif
