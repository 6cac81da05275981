/* highs_solve.h — HiGHS (PyPI's highspy, through tools/bench/highs_run.py
 * under a given Python) on an MPS file, as the second peer of the benchmark
 * (never linked: run as a program). */
#ifndef HIGHS_SOLVE_H
#define HIGHS_SOLVE_H
#include "rk_milp.h"

/* Fills res->status, res->objective / has_solution and *secs (HiGHS's own
 * read + solve time).  RK_EFAIL with err filled when the run fails. */
rk_status highs_solve_file(const char *python, const char *mps, double time_limit, rk_milp_result *res, double *secs,
                           rk_error *err);
#endif
