/* lp_internal.h — internal layout of rk_lp (the problem builder of
 * rk_milp.h) for the modules of src/ilp: MPS reader/writer, simplex,
 * presolve, branch-and-bound.  Not installed.
 *
 * Columns and rows are stored as arrays; coefficients are kept as triplets in
 * insertion order (rk_lp_set_coef overwrites: the last value set for a
 * (row, col) pair wins, a zero removes the entry) and compressed column-wise
 * on demand by lp_matrix(). */
#ifndef RK_LP_INTERNAL_H
#define RK_LP_INTERNAL_H

#include <omp.h>
#include "rk_milp.h"

/* Column-wise (CSC) view of the constraint matrix: column j has its entries
 * at positions start[j] .. start[j+1]-1 of index[] (row indices, increasing)
 * and value[] (nonzero). */
typedef struct {
    int n, m;
    long nnz;
    const long *start;     /* n + 1 */
    const int *index;      /* nnz */
    const double *value;   /* nnz */
} lp_csc;

struct rk_lp {
    int n, m;              /* columns, rows */
    int cap_n, cap_m;
    /* columns */
    double *obj, *col_lb, *col_ub;
    signed char *is_int;
    char **col_name;
    /* rows */
    double *row_lb, *row_ub;
    char **row_name;
    int maximize;
    double obj_const;
    /* triplets in insertion order */
    long nt, cap_t;
    int *t_row, *t_col;
    double *t_val;
    /* compressed cache (built by lp_matrix, dropped by any change) */
    int csc_valid;
    long *csc_start;
    int *csc_index;
    double *csc_value;
    long csc_nnz;
    omp_lock_t csc_lock;   /* this problem's own lock for building the cache */
};

/* The column-wise matrix.  Builds the cache on first use after a change;
 * safe to call from several threads at once on an lp nobody modifies
 * (the build is serialised).  Returns 0 on success, -1 on allocation
 * failure.  The view stays valid until the lp is modified or freed. */
int lp_matrix(const rk_lp *lp, lp_csc *out);

/* Row-wise copy of the n-column, m-row matrix given column-wise (cs, ci,
 * cv): rs (m + 1 entries) and ri / rv (cs[n] entries, columns increasing in
 * each row), allocated by the caller.  Returns 0, or -1 when out of memory. */
int csc_rowwise(int n, int m, const long *cs, const int *ci, const double *cv, long *rs, int *ri, double *rv);

/* lp's matrix row-wise, in new arrays (*rs: m + 1 entries, *ri / *rv: the
 * non-zeros, columns increasing in each row; free them).  0, or -1 when out
 * of memory (nothing to free). */
int lp_rowwise(const rk_lp *lp, long **rs, int **ri, double **rv);

/* A new problem from arrays, named after lp's columns and rows: column k
 * is lp's column col_src[k] (NULL: k) with cost obj[k], bounds lb[k]..ub[k]
 * and that column's integrality; row i is lp's row row_src[i] (NULL: i) with
 * bounds rlb[i]..rub[i] and the coefficients rs[i]..rs[i+1]-1 of ri / rv
 * (columns of the new problem, distinct); lp's sense and objective constant.
 * NULL when out of memory. */
rk_lp *lp_assemble(const rk_lp *lp, int n, const int *col_src, const double *obj, const double *lb,
                      const double *ub, int m, const int *row_src, const double *rlb, const double *rub, const long *rs,
                      const int *ri, const double *rv);

/* Sort a[0..n) increasingly, in place (no comparator calls: the simplex and
 * the cut separators sort index lists all the time). */
void sort_ints(int *a, long n);

/* Coefficients of column j: returns the count and sets *idx / *val (the
 * cache must have been built by lp_matrix; otherwise returns 0). */
int lp_col(const rk_lp *lp, int j, const int **idx, const double **val);

#endif
