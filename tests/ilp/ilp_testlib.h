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

/* A remat MILP <test data>/remat/NAME.mps.gz solved for node_limit nodes
 * with its optimal schedule (remat/NAME.sol, objective `optimum`) as the
 * debug solution: once with the default threads, or with compare_threads on
 * 1 and then on 2 threads.  The test fails when a step cuts the schedule off
 * (the solve fails, naming it), the bound passes the optimum, an incumbent
 * beats it, need_incumbent and there is none, or the two thread counts give
 * other nodes or iterations.  The solver logs at `verbose` through log_fn
 * (NULL: no logger) with log_user[t] for run t, which the caller then reads. */
typedef struct {
    const char *name;
    double optimum;
    long node_limit;
    int compare_threads;
    int need_incumbent;
    int verbose;
    rk_log_fn log_fn;
    void *log_user[2];
} ilp_remat_debug;
void ilp_check_remat_debug(const ilp_remat_debug *d);
#endif
