/* lu.h — sparse LU factorization of a simplex basis (Markowitz pivoting with
 * a threshold) and product-form (eta file) updates.  Internal to src/ilp.
 *
 * The basis B is m x m; its columns are "positions" 0..m-1.  FTRAN solves
 * B z = b (b indexed by row, z by position); BTRAN solves B' y = e (e indexed
 * by position, y by row).  Every object owns its storage (reentrant). */
#ifndef RK_LU_H
#define RK_LU_H

typedef struct lu_factors lu_factors;

lu_factors *lu_new(void);
void lu_free(lu_factors *lu);

/* Factor the m x m matrix given column-wise (column k at start[k] ..
 * start[k+1]-1 of idx/val).  Returns 0 when nonsingular, -1 on allocation
 * failure, or the number r > 0 of dependent columns: then
 * bad_pos[0..r-1] lists the positions that could not be pivoted and
 * bad_row[0..r-1] rows left without a pivot (the caller replaces each
 * position by the unit column of a row and factors again).  bad_pos and
 * bad_row must have room for m entries. */
int lu_factor(lu_factors *lu, int m, const long *start, const int *idx, const double *val,
                 int *bad_pos, int *bad_row);

/* In place: x (size m) is b indexed by row on entry, z indexed by position
 * on return. */
void lu_ftran(lu_factors *lu, double *x);
/* Two FTRANs at once (x and x2, same conventions as lu_ftran). */
void lu_ftran2(lu_factors *lu, double *x, double *x2);
/* In place: x is e indexed by position on entry, y indexed by row on return. */
void lu_btran(lu_factors *lu, double *x);

/* The same solves when the caller knows the right-hand side's nonzeros:
 * rows[0..nrows) lists the rows where x may be nonzero, in increasing order
 * (nrows < 0: unknown); lu_btran_unit solves for x = e_r (x holds the
 * unit vector on entry).  Same results as the plain calls, without their
 * scan of x for its nonzeros. */
void lu_ftran_known(lu_factors *lu, double *x, const int *rows, int nrows);
void lu_ftran2_known(lu_factors *lu, double *x, const int *rows, int nrows, double *x2, const int *rows2, int nrows2);
void lu_btran_unit(lu_factors *lu, double *x, int r);

/* Replace the column at position p by a column whose FTRAN is alpha (size m,
 * indexed by position).  list[0..nz) may give alpha's nonzero positions in
 * increasing order (NULL: alpha is scanned).  Returns 0, or 1 when a
 * refactorization is advised (long eta file or small pivot), -1 on
 * allocation failure. */
int lu_update(lu_factors *lu, int p, const double *alpha, const int *list, int nz);
int lu_num_updates(const lu_factors *lu);

/* Factorizations done so far (a snapshot of the updates is only good while
 * this is unchanged). */
unsigned long lu_generation(const lu_factors *lu);
/* Drop the updates after the first k (k <= lu_num_updates): the factors
 * describe the basis they described then.  Same generation only. */
void lu_truncate_updates(lu_factors *lu, int k);

#endif
