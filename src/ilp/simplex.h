/* simplex.h — internal LP engine of src/ilp: bounded dual and primal simplex
 * on a scaled working copy of an rk_lp, with a sparse LU of the basis.
 * Used by the LP-only solve (lp_solve.c) and by branch-and-bound (bb.c).
 *
 * Reentrant: every spx owns all its state; several may be solved at
 * once from different threads (the source rk_lp is only read). */
#ifndef RK_SIMPLEX_H
#define RK_SIMPLEX_H

#include "rk_milp.h"

typedef struct spx spx; /* working copy of the LP (scaled), basis, LU */

typedef enum {
    RK_LP_OPTIMAL,
    RK_LP_INFEASIBLE,
    RK_LP_UNBOUNDED,
    RK_LP_ITER_LIMIT,
    RK_LP_TIME_LIMIT,
    RK_LP_CUTOFF,
    RK_LP_ERROR
} rk_lp_status;

typedef struct {
    long iter_limit;    /* <= 0: none */
    double time_limit;  /* seconds, <= 0: none */
    /* The dual simplex stops with RK_LP_CUTOFF once the minimization-form
     * objective (objective incl. constant for a minimize problem, minus
     * that for a maximize problem) provably exceeds cutoff; +INFINITY =
     * none.  Not checked while the anti-degeneracy cost perturbation is
     * active (the solve then just continues to optimality). */
    double cutoff;
    /* Trial solves whose state is thrown away (strong branching): the dual
     * steepest-edge weights are not updated (saves one FTRAN an iteration). */
    int trial;
    int verbose;        /* log lines through `log` */
    const rk_log *log;  /* NULL: stderr (rk_log_printf) */
} spx_opts;

void spx_opts_default(spx_opts *o);

/* Copy lp into a new engine (minimization internally; a maximize problem is
 * negated).  Starts from the slack basis.  NULL with err filled on failure. */
spx *spx_new(const rk_lp *lp, rk_error *err);
/* The same without scaling: its tolerances hold in the problem's own units
 * (slower and less stable on badly scaled problems; for cleaning up a point
 * whose unscaled values miss a bound or row by more than 1e-6). */
spx *spx_new_unscaled(const rk_lp *lp, rk_error *err);
void spx_free(spx *s);
/* Seed of the cost perturbation's random numbers (0: the default sequence).
 * Another seed gives other, equally valid pivots. */
void spx_set_seed(spx *s, unsigned long long seed);
int spx_num_cols(const spx *s);
int spx_num_rows(const spx *s);

/* Column bounds in original index and units (the basis is kept: the next
 * solve is a warm start; after an optimal solve, a few changes of nonbasic
 * columns update the primal values in place, so the next solve starts
 * without recomputing them). */
void spx_set_col_bounds(spx *s, int j, double lb, double ub);
void spx_get_col_bounds(const spx *s, int j, double *lb, double *ub);

/* Tolerances (on the scaled problem): primal and dual feasibility 1e-7,
 * pivots 1e-7; the basis is refactored every 100 updates at most.
 *
 * Solve from the current basis: dual simplex when the basis is dual feasible
 * (e.g. after bound changes), primal simplex when it is primal feasible,
 * otherwise a dual phase 1 first.  The first solve starts from the slack
 * basis.  o may be NULL (defaults). */
rk_lp_status spx_solve(spx *s, const spx_opts *o);

/* Results of the last solve, in the original sense, units and indices. */
double spx_objective(const spx *s);            /* incl. constant */
void spx_get_x(const spx *s, double *x);        /* n values */
void spx_get_reduced_costs(const spx *s, double *d); /* n values */
void spx_get_row_activity(const spx *s, double *ax);  /* m values */
/* Row duals y (original sense): d = c - A'y.  m values. */
void spx_get_duals(const spx *s, double *y);

/* After a solve that ended RK_LP_INFEASIBLE in the dual simplex: the
 * combination of the rows (cuts included) that proves it, a x (n values,
 * original units) with lo <= a x <= hi implied by the rows' sides (each
 * -inf/+inf when a row used lacks that side).  Returns -1 when the last
 * solve left no such proof.  Computed in floating point: the caller checks
 * that a x stays outside [lo, hi] within the column bounds before using it. */
int spx_farkas_row(const spx *s, double *a, double *lo, double *hi);

/* After a solve that ended RK_LP_CUTOFF: with y the duals of the final
 * basis, a = c - y'A (n values, original units, minimization form: negated
 * for a maximize problem) and lo <= y'A x implied by the rows' sides (-inf
 * when a row used lacks the side), so every x in the rows has objective
 * (min form, without the constant) at least a x + lo.  -1 when unavailable.
 * Floating point: the caller checks what it proves. */
int spx_cutoff_row(const spx *s, double *a, double *lo);

/* Basis status per column / row: 0 basic, 1 at lower, 2 at upper,
 * 3 free nonbasic (at zero).  A row's status refers to its activity
 * (1: at row lower bound, 2: at row upper bound). */
typedef struct {
    int n, m;
    signed char *col, *row;
} spx_basis;

rk_status spx_get_basis(const spx *s, spx_basis *b); /* allocates */
/* Install a basis (must have m basic entries; otherwise RK_EINPUT).  When
 * it differs from the current one in few columns it is reached by LU
 * updates (no refactorization); the next solve is a warm start from it. */
rk_status spx_set_basis(spx *s, const spx_basis *b);
void spx_basis_free(spx_basis *b);

long spx_iterations(const spx *s); /* total over all solves */

/* A snapshot of the engine's basis, bounds, solution and factors, to come
 * back to cheaply after trial solves (strong branching): restoring drops the
 * LU updates made since (no refactorization, no FTRAN) unless the basis was
 * refactored meanwhile.  Only for the spx it was taken from, with the
 * same rows. */
typedef struct spx_state spx_state;
spx_state *spx_state_save(const spx *s, spx_state *reuse); /* NULL: out of memory */
void spx_state_restore(spx *s, const spx_state *st);
void spx_state_free(spx_state *st);

/* Append nrows rows (cuts) lb <= sum val*x[idx] <= ub, in CSR form:
 * row k has entries start[k] .. start[k+1]-1 of idx/val (original column
 * indices and units).  The new rows enter the basis (their slacks are
 * basic), so the basis stays dual feasible. */
rk_status spx_add_rows(spx *s, int nrows, const double *lb, const double *ub,
                              const int *start, const int *idx, const double *val);

/* Remove the rows with drop[i] != 0 (m flags); each must have its logical
 * basic (a slack cut), so the basis of the others stays a basis and the
 * solution does not change.  The other rows keep their order (renumbered);
 * the next solve refactors.  RK_EINPUT when a dropped row's logical is
 * nonbasic. */
rk_status spx_remove_rows(spx *s, const char *drop);

/* The LP-only path of rk_milp_solve: presolve, simplex, postsolve.  Fills
 * res (res->x allocated, n values; res->nodes = 0, res->bound = objective
 * when optimal). */
rk_status lp_solve_relaxation(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res,
                                 rk_error *err);

#endif
