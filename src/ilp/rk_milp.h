/* rk_milp.h — public API of rkmate's own LP/MILP solver: problem builder,
 * MPS reader/writer, simplex and branch-and-bound.  Generic: nothing here
 * knows about rematerialization (that is rk_checkmate.h).
 *
 * It stands on the base layer only (rk_base.h: rk_status, rk_error, rk_log),
 * not on the graph model. */
#ifndef RK_MILP_H
#define RK_MILP_H

#include <stdint.h>
#include "rk_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ problem */

/* min (or max) c'x + c0  s.t.  row_lb <= A x <= row_ub,  col_lb <= x <= col_ub,
 * x_j integer for integer columns.  Infinite bounds are +-INFINITY. */
typedef struct rk_lp rk_lp;

RK_API rk_lp *rk_lp_new(void);
RK_API void rk_lp_free(rk_lp *lp);
/* Append a column/row; returns its index, or -1 on allocation failure.
 * name may be NULL (a name is generated: C%d / R%d). */
RK_API int rk_lp_add_col(rk_lp *lp, const char *name, double obj, double lb, double ub, int is_integer);
RK_API int rk_lp_add_row(rk_lp *lp, const char *name, double lb, double ub);
/* Set A[row][col] = v (adds or overwrites). */
RK_API rk_status rk_lp_set_coef(rk_lp *lp, int row, int col, double v);
/* Bulk: add n coefficients to one row (columns distinct, not yet set). */
RK_API rk_status rk_lp_add_row_coefs(rk_lp *lp, int row, int n, const int *cols, const double *vals);
RK_API void rk_lp_set_maximize(rk_lp *lp, int maximize);
RK_API void rk_lp_set_obj_const(rk_lp *lp, double c0);
RK_API int rk_lp_num_cols(const rk_lp *lp);
RK_API int rk_lp_num_rows(const rk_lp *lp);
RK_API int rk_lp_num_integers(const rk_lp *lp);
RK_API const char *rk_lp_col_name(const rk_lp *lp, int j);
RK_API const char *rk_lp_row_name(const rk_lp *lp, int i);
/* Change data of an existing column / row (indices must be in range). */
RK_API void rk_lp_set_col_bounds(rk_lp *lp, int j, double lb, double ub);
RK_API void rk_lp_set_col_obj(rk_lp *lp, int j, double obj);
RK_API void rk_lp_set_col_integer(rk_lp *lp, int j, int is_integer);
RK_API void rk_lp_set_row_bounds(rk_lp *lp, int i, double lb, double ub);
/* Read back problem data. */
RK_API void rk_lp_get_col_bounds(const rk_lp *lp, int j, double *lb, double *ub);
RK_API void rk_lp_get_row_bounds(const rk_lp *lp, int i, double *lb, double *ub);
RK_API double rk_lp_get_col_obj(const rk_lp *lp, int j);
RK_API int rk_lp_is_integer(const rk_lp *lp, int j);
RK_API int rk_lp_get_maximize(const rk_lp *lp);
RK_API double rk_lp_get_obj_const(const rk_lp *lp);

/* ------------------------------------------------------------ MPS I/O */

/* Fixed or free MPS, gzip read transparently.  Errors name the file, the
 * line number and what was expected. */
RK_API rk_status rk_mps_read(const char *path, rk_lp **out, rk_error *err);
/* Free MPS, written atomically (temp file + rename). */
RK_API rk_status rk_mps_write(const char *path, const rk_lp *lp, rk_error *err);

/* -------------------------------------------------------------- solve */

typedef enum {
    RK_MILP_OPTIMAL = 0,
    RK_MILP_INFEASIBLE,
    RK_MILP_UNBOUNDED,
    RK_MILP_TIME_LIMIT,   /* also node limit, or a node whose integral LP point
                           * failed the feasibility check: best solution + proven bound */
    RK_MILP_ERROR
} rk_milp_status;

/* Pseudocosts of the integer columns: the average objective gain per unit
 * of change when a column is branched down / up (sum of observations and
 * their count, per column).  A solve can start from the pseudocosts of an
 * earlier solve of a problem with the same columns (e.g. a neighbouring
 * budget): columns observed often enough are then branched on without
 * strong branching. */
typedef struct {
    int n;
    double *sum[2];       /* [0] down, [1] up; n values each */
    int *cnt[2];
} rk_milp_pseudocosts;

RK_API void rk_milp_pseudocosts_free(rk_milp_pseudocosts *pc);

typedef struct {
    int lp_only;          /* solve the LP relaxation only */
    double time_limit;    /* seconds, <= 0: none */
    /* Seconds (0, the default: time_limit holds): when above time_limit,
     * the search goes on past time_limit while it has no incumbent, up to
     * this, and stops at the first incumbent found after time_limit (a
     * caller that wants some answer rather than none in time_limit). */
    double time_limit_no_incumbent;
    double gap;           /* relative gap to stop at (default 1e-6) */
    long node_limit;      /* <= 0: none */
    int threads;          /* 0: OpenMP default; results identical for any */
    int verbose;          /* 1: progress lines, 2-3: more detail, through `log` */
    /* Where log lines go (rk_base.h): {NULL, NULL}, the default, prints them
     * on stderr; an embedding program routes or silences them here. */
    rk_log log;
    /* Optional incumbent handed in by the caller (n_cols values), e.g. the
     * schedule of a neighbouring budget.  Checked for feasibility; ignored
     * with a log line if infeasible.  May be NULL. */
    const double *incumbent;
    /* Optional known lower bound on the objective (minimization), e.g. the
     * optimum at a looser budget; -INFINITY if none. */
    double known_bound;
    /* Optional pseudocosts to start from (n must be the problem's column
     * count, else they are ignored); may be NULL. */
    const rk_milp_pseudocosts *pseudocosts;
    /* 0 (default): reliability branching, columns whose pseudocosts rest on
     * fewer than 4 observations are strong-branched.  1: pseudocost branching
     * only, no strong branching: slower from scratch, but fast when the
     * pseudocosts handed in come from solves of nearly the same problem (the
     * rk-Checkmate grid used it until the light strong branching below
     * proved ~9 % faster there). */
    int pseudocost_branching;
    /* Strong-branching effort of reliability branching (each 0: the
     * default): sb_reliability, the observations after which a column's
     * pseudocosts are trusted (default 4); sb_max_candidates, the columns
     * strong-branched at a node (default 10, 5 below depth 10; a value set
     * here holds at every depth); sb_max_iterations, the dual simplex
     * iterations per strong-branching child (default 20 + 2 x rows, at most
     * 500).  Light settings (1, 4, 40) suit solves that start from the
     * pseudocosts of nearly the same problem (the rk-Checkmate budget grid). */
    int sb_reliability, sb_max_candidates, sb_max_iterations;
    /* Seed of the LP engine's cost perturbation (0: default).  Another seed
     * gives another, equally valid search: the same optimum, other trees and
     * times (how much a time owes to the search's luck). */
    unsigned seed;
    /* Debug-solution mode (as SCIP's and HiGHS's; NULL, the default: off and
     * free).  A known feasible solution of this problem (n_cols values, e.g.
     * an optimum from another solver, rk_milp_read_solution).  It is checked
     * against the bounds and rows first (RK_EINPUT if it violates them by
     * more than 1e-6).  Then, while it lies in the part of the search space
     * being worked on and its objective beats the incumbent's cutoff, every
     * step that removes part of that space is checked against it: each cut
     * (c-MIR, cover, GMI), each bound tightened (propagation, probing,
     * reduced-cost fixing, strong branching, conflict rows and their
     * propagation), the aggregation and integer-row
     * strengthening presolve, each node pruned by bound or infeasibility,
     * each node LP value, and the end of the search.  The first step that
     * cuts it off stops the solve: RK_EFAIL, status RK_MILP_ERROR, and a
     * message naming the step, the row or column and the amounts. */
    const double *debug_solution;
    /* For the solver's own tests of that mode: 1 plants a wrong cut (x_j <=
     * its debug value - 1) in the first root cut round, 2 a wrong bound
     * change in the root propagation, 3 a wrong conflict row (x_j <= its
     * debug value - 1) where the first conflict is learned, 4 the same row
     * checked only by the propagation of the conflict pool; the mode must
     * catch each.  0 (the default) in any real use. */
    int debug_fault;
} rk_milp_params;

typedef struct {
    rk_milp_status status;
    int has_solution;
    double objective;     /* of the best solution (incl. constant) */
    double bound;         /* proven bound */
    long nodes;
    long iterations;      /* simplex iterations, all nodes */
    double time_s;
    int n;                /* number of columns */
    double *x;            /* best solution (n values) when has_solution */
    rk_milp_pseudocosts pseudocosts; /* at the end of the search (n = 0 when none) */
} rk_milp_result;

RK_API void rk_milp_params_default(rk_milp_params *p);
RK_API rk_status rk_milp_solve(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err);
RK_API void rk_milp_result_free(rk_milp_result *res);
RK_API const char *rk_milp_status_name(rk_milp_status s); /* "optimal", "infeasible", ... */

/* --------------------------------------------------------- solutions */

/* A solution file: one `name value` pair a line (what `rkmate milp -o`
 * writes); blank lines and lines starting with '#' are skipped, and so is
 * an `Objective v` / `objective v` line (unless a column has that name).  Columns not named are 0 (as in
 * SCIP's debug solutions).  *x: a new array of lp's n_cols values.  Errors
 * (RK_EINPUT) name the file, the line and what was expected: an unknown
 * column, a column given twice, a value that is not a finite number. */
RK_API rk_status rk_milp_read_solution(const char *path, const rk_lp *lp, double **x, rk_error *err);
/* Write x as `name value` lines, atomically. */
RK_API rk_status rk_milp_write_solution(const char *path, const rk_lp *lp, const double *x, rk_error *err);

#ifdef __cplusplus
}
#endif
#endif
