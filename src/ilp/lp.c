/* lp.c — the LP/MILP problem builder of rk_milp.h (rk_lp_*): columns, rows,
 * coefficients kept as triplets and compressed column-wise on demand
 * (lp_matrix, see lp_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp_internal.h"

rk_lp *rk_lp_new(void) {
    rk_lp *lp = calloc(1, sizeof *lp);
    if (lp) omp_init_lock(&lp->csc_lock);
    return lp;
}

static void free_names(char **names, int k) {
    if (!names) return;
    for (int i = 0; i < k; i++) free(names[i]);
    free(names);
}

static void drop_cache(rk_lp *lp) {
    lp->csc_valid = 0;
}

void rk_lp_free(rk_lp *lp) {
    if (!lp) return;
    omp_destroy_lock(&lp->csc_lock);
    free(lp->obj);
    free(lp->col_lb);
    free(lp->col_ub);
    free(lp->is_int);
    free_names(lp->col_name, lp->n);
    free(lp->row_lb);
    free(lp->row_ub);
    free_names(lp->row_name, lp->m);
    free(lp->t_row);
    free(lp->t_col);
    free(lp->t_val);
    free(lp->csc_start);
    free(lp->csc_index);
    free(lp->csc_value);
    free(lp);
}

static char *make_name(const char *name, char prefix, int k) {
    if (name) {
        size_t l = strlen(name);
        char *s = malloc(l + 1);
        if (s) memcpy(s, name, l + 1);
        return s;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%c%d", prefix, k);
    size_t l = strlen(buf);
    char *s = malloc(l + 1);
    if (s) memcpy(s, buf, l + 1);
    return s;
}

#define GROW(ptr, cap, type)                                                   \
    do {                                                                       \
        type *np_ = realloc((ptr), (size_t)(cap) * sizeof(type));              \
        if (!np_) return -1;                                                   \
        (ptr) = np_;                                                           \
    } while (0)

static int grow_cols(rk_lp *lp) {
    if (lp->n < lp->cap_n) return 0;
    int cap = lp->cap_n ? 2 * lp->cap_n : 64;
    GROW(lp->obj, cap, double);
    GROW(lp->col_lb, cap, double);
    GROW(lp->col_ub, cap, double);
    GROW(lp->is_int, cap, signed char);
    GROW(lp->col_name, cap, char *);
    lp->cap_n = cap;
    return 0;
}

static int grow_rows(rk_lp *lp) {
    if (lp->m < lp->cap_m) return 0;
    int cap = lp->cap_m ? 2 * lp->cap_m : 64;
    GROW(lp->row_lb, cap, double);
    GROW(lp->row_ub, cap, double);
    GROW(lp->row_name, cap, char *);
    lp->cap_m = cap;
    return 0;
}

static int grow_trip(rk_lp *lp, long extra) {
    if (lp->nt + extra <= lp->cap_t) return 0;
    long cap = lp->cap_t ? 2 * lp->cap_t : 256;
    while (cap < lp->nt + extra) cap *= 2;
    GROW(lp->t_row, cap, int);
    GROW(lp->t_col, cap, int);
    GROW(lp->t_val, cap, double);
    lp->cap_t = cap;
    return 0;
}

int rk_lp_add_col(rk_lp *lp, const char *name, double obj, double lb, double ub, int is_integer) {
    if (grow_cols(lp)) return -1;
    int j = lp->n;
    char *nm = make_name(name, 'C', j);
    if (!nm) return -1;
    lp->obj[j] = obj;
    lp->col_lb[j] = lb;
    lp->col_ub[j] = ub;
    lp->is_int[j] = is_integer ? 1 : 0;
    lp->col_name[j] = nm;
    lp->n++;
    drop_cache(lp);
    return j;
}

int rk_lp_add_row(rk_lp *lp, const char *name, double lb, double ub) {
    if (grow_rows(lp)) return -1;
    int i = lp->m;
    char *nm = make_name(name, 'R', i);
    if (!nm) return -1;
    lp->row_lb[i] = lb;
    lp->row_ub[i] = ub;
    lp->row_name[i] = nm;
    lp->m++;
    drop_cache(lp);
    return i;
}

rk_status rk_lp_set_coef(rk_lp *lp, int row, int col, double v) {
    if (row < 0 || row >= lp->m || col < 0 || col >= lp->n) return RK_EINPUT;
    if (grow_trip(lp, 1)) return RK_ENOMEM;
    lp->t_row[lp->nt] = row;
    lp->t_col[lp->nt] = col;
    lp->t_val[lp->nt] = v;
    lp->nt++;
    drop_cache(lp);
    return RK_OK;
}

rk_status rk_lp_add_row_coefs(rk_lp *lp, int row, int n, const int *cols, const double *vals) {
    if (row < 0 || row >= lp->m || n < 0) return RK_EINPUT;
    for (int k = 0; k < n; k++)
        if (cols[k] < 0 || cols[k] >= lp->n) return RK_EINPUT;
    if (grow_trip(lp, n)) return RK_ENOMEM;
    for (int k = 0; k < n; k++) {
        lp->t_row[lp->nt] = row;
        lp->t_col[lp->nt] = cols[k];
        lp->t_val[lp->nt] = vals[k];
        lp->nt++;
    }
    drop_cache(lp);
    return RK_OK;
}

void rk_lp_set_maximize(rk_lp *lp, int maximize) { lp->maximize = maximize ? 1 : 0; }
void rk_lp_set_obj_const(rk_lp *lp, double c0) { lp->obj_const = c0; }
int rk_lp_num_cols(const rk_lp *lp) { return lp->n; }
int rk_lp_num_rows(const rk_lp *lp) { return lp->m; }
int rk_lp_num_integers(const rk_lp *lp) {
    int k = 0;
    for (int j = 0; j < lp->n; j++) k += lp->is_int[j] != 0;
    return k;
}
const char *rk_lp_col_name(const rk_lp *lp, int j) {
    return (j >= 0 && j < lp->n) ? lp->col_name[j] : NULL;
}
const char *rk_lp_row_name(const rk_lp *lp, int i) {
    return (i >= 0 && i < lp->m) ? lp->row_name[i] : NULL;
}

void rk_lp_set_col_bounds(rk_lp *lp, int j, double lb, double ub) {
    lp->col_lb[j] = lb;
    lp->col_ub[j] = ub;
}
void rk_lp_set_col_obj(rk_lp *lp, int j, double obj) { lp->obj[j] = obj; }
void rk_lp_set_col_integer(rk_lp *lp, int j, int is_integer) { lp->is_int[j] = is_integer ? 1 : 0; }
void rk_lp_set_row_bounds(rk_lp *lp, int i, double lb, double ub) {
    lp->row_lb[i] = lb;
    lp->row_ub[i] = ub;
}
void rk_lp_get_col_bounds(const rk_lp *lp, int j, double *lb, double *ub) {
    if (lb) *lb = lp->col_lb[j];
    if (ub) *ub = lp->col_ub[j];
}
void rk_lp_get_row_bounds(const rk_lp *lp, int i, double *lb, double *ub) {
    if (lb) *lb = lp->row_lb[i];
    if (ub) *ub = lp->row_ub[i];
}
double rk_lp_get_col_obj(const rk_lp *lp, int j) { return lp->obj[j]; }
int rk_lp_is_integer(const rk_lp *lp, int j) { return lp->is_int[j]; }
int rk_lp_get_maximize(const rk_lp *lp) { return lp->maximize; }
double rk_lp_get_obj_const(const rk_lp *lp) { return lp->obj_const; }

/* ------------------------------------------------------------ compression */

/* Build the CSC arrays from the triplets: bucket by column (stable, so the
 * insertion order survives), then within a column order by row and keep
 * the last value set for each row; zeros are dropped. */
static int build_csc(rk_lp *lp) {
    int n = lp->n, m = lp->m;
    long nt = lp->nt;
    long *start = calloc((size_t)n + 1, sizeof *start);
    int *idx = malloc((size_t)(nt ? nt : 1) * sizeof *idx);
    double *val = malloc((size_t)(nt ? nt : 1) * sizeof *val);
    long *pos = malloc((size_t)(n + 1) * sizeof *pos);
    long *last = malloc((size_t)(m ? m : 1) * sizeof *last); /* row -> slot */
    if (!start || !idx || !val || !pos || !last) {
        free(start); free(idx); free(val); free(pos); free(last);
        return -1;
    }
    for (long t = 0; t < nt; t++) start[lp->t_col[t] + 1]++;
    for (int j = 0; j < n; j++) start[j + 1] += start[j];
    memcpy(pos, start, (size_t)(n + 1) * sizeof *pos);
    for (long t = 0; t < nt; t++) {
        long p = pos[lp->t_col[t]]++;
        idx[p] = lp->t_row[t];
        val[p] = lp->t_val[t];
    }
    for (int i = 0; i < m; i++) last[i] = -1;
    /* dedupe in place, column by column (later entries overwrite) */
    long w = 0;
    for (int j = 0; j < n; j++) {
        long b = start[j], e = start[j + 1];
        long cb = w;
        for (long p = b; p < e; p++) {
            int r = idx[p];
            if (last[r] >= cb) {
                val[last[r]] = val[p];
            } else {
                last[r] = w;
                idx[w] = r;
                val[w] = val[p];
                w++;
            }
        }
        /* drop zeros and sort by row (insertion sort: columns are short;
         * fall back to a simple shell sort for long ones) */
        long k = cb;
        for (long p = cb; p < w; p++) {
            last[idx[p]] = -1;
            if (val[p] != 0.0) {
                idx[k] = idx[p];
                val[k] = val[p];
                k++;
            }
        }
        w = k;
        long len = w - cb;
        int *ci = idx + cb;
        double *cv = val + cb;
        for (long gap = len / 2; gap > 0; gap = (gap == 2) ? 1 : (long)(gap / 2.2)) {
            for (long a = gap; a < len; a++) {
                int ti = ci[a];
                double tv = cv[a];
                long b2 = a;
                while (b2 >= gap && ci[b2 - gap] > ti) {
                    ci[b2] = ci[b2 - gap];
                    cv[b2] = cv[b2 - gap];
                    b2 -= gap;
                }
                ci[b2] = ti;
                cv[b2] = tv;
            }
        }
        start[j] = cb;
    }
    start[n] = w;
    free(pos);
    free(last);
    free(lp->csc_start);
    free(lp->csc_index);
    free(lp->csc_value);
    lp->csc_start = start;
    lp->csc_index = idx;
    lp->csc_value = val;
    lp->csc_nnz = w;
    lp->csc_valid = 1;
    return 0;
}

int lp_matrix(const rk_lp *lp_c, lp_csc *out) {
    rk_lp *lp = (rk_lp *)lp_c; /* the cache is logically const */
    int rc = 0;
    omp_set_lock(&lp->csc_lock);
    if (!lp->csc_valid) rc = build_csc(lp);
    omp_unset_lock(&lp->csc_lock);
    if (rc) return -1;
    out->n = lp->n;
    out->m = lp->m;
    out->nnz = lp->csc_nnz;
    out->start = lp->csc_start;
    out->index = lp->csc_index;
    out->value = lp->csc_value;
    return 0;
}

int lp_col(const rk_lp *lp, int j, const int **idx, const double **val) {
    if (!lp->csc_valid || j < 0 || j >= lp->n) {
        *idx = NULL;
        *val = NULL;
        return 0;
    }
    long b = lp->csc_start[j];
    *idx = lp->csc_index + b;
    *val = lp->csc_value + b;
    return (int)(lp->csc_start[j + 1] - b);
}

int lp_rowwise(const rk_lp *lp, long **rs, int **ri, double **rv) {
    lp_csc A;
    *rs = NULL;
    *ri = NULL;
    *rv = NULL;
    if (lp_matrix(lp, &A)) return -1;
    long nnz = A.nnz;
    *rs = malloc(((size_t)lp->m + 1) * sizeof **rs);
    *ri = malloc((size_t)(nnz ? nnz : 1) * sizeof **ri);
    *rv = malloc((size_t)(nnz ? nnz : 1) * sizeof **rv);
    if (*rs && *ri && *rv && !csc_rowwise(lp->n, lp->m, A.start, A.index, A.value, *rs, *ri, *rv)) return 0;
    free(*rs);
    free(*ri);
    free(*rv);
    *rs = NULL;
    *ri = NULL;
    *rv = NULL;
    return -1;
}

rk_lp *lp_assemble(const rk_lp *lp, int n, const int *col_src, const double *obj, const double *lb,
                      const double *ub, int m, const int *row_src, const double *rlb, const double *rub, const long *rs,
                      const int *ri, const double *rv) {
    rk_lp *cp = rk_lp_new();
    int ok = cp != NULL;
    for (int k = 0; ok && k < n; k++) {
        int j = col_src ? col_src[k] : k;
        ok = rk_lp_add_col(cp, lp->col_name[j], obj[k], lb[k], ub[k], lp->is_int[j]) == k;
    }
    for (int i = 0; ok && i < m; i++) {
        ok = rk_lp_add_row(cp, lp->row_name[row_src ? row_src[i] : i], rlb[i], rub[i]) == i;
        if (ok) ok = rk_lp_add_row_coefs(cp, i, (int)(rs[i + 1] - rs[i]), ri + rs[i], rv + rs[i]) == RK_OK;
    }
    if (!ok) {
        rk_lp_free(cp);
        return NULL;
    }
    rk_lp_set_maximize(cp, lp->maximize);
    rk_lp_set_obj_const(cp, lp->obj_const);
    return cp;
}

static void int_sift_down(int *a, long i, long n) {
    int v = a[i];
    for (long c = 2 * i + 1; c < n; i = c, c = 2 * i + 1) {
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[c] <= v) break;
        a[i] = a[c];
    }
    a[i] = v;
}

/* Quicksort (median of three, insertion sort below 16 entries, the smaller
 * part first) with heapsort past a depth of 2 log2 n: O(n log n) always. */
static void int_sort(int *a, long n, int depth) {
    while (n > 16) {
        if (depth-- == 0) {
            for (long i = n / 2 - 1; i >= 0; i--) int_sift_down(a, i, n);
            for (long e = n - 1; e > 0; e--) {
                int t = a[0];
                a[0] = a[e];
                a[e] = t;
                int_sift_down(a, 0, e);
            }
            return;
        }
        int x = a[0], y = a[n / 2], z = a[n - 1];
        int piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        long i = 0, j = n - 1;
        for (;;) {
            while (a[i] < piv) i++;
            while (a[j] > piv) j--;
            if (i >= j) break;
            int t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
        /* a[0..j] <= piv <= a[j+1..n) */
        if (j + 1 < n - j - 1) {
            int_sort(a, j + 1, depth);
            a += j + 1;
            n -= j + 1;
        } else {
            int_sort(a + j + 1, n - j - 1, depth);
            n = j + 1;
        }
    }
    for (long i = 1; i < n; i++) {
        int v = a[i];
        long k = i - 1;
        while (k >= 0 && a[k] > v) {
            a[k + 1] = a[k];
            k--;
        }
        a[k + 1] = v;
    }
}

void sort_ints(int *a, long n) {
    int depth = 0;
    for (long k = n; k > 1; k >>= 1) depth += 2;
    int_sort(a, n, depth);
}

int csc_rowwise(int n, int m, const long *cs, const int *ci, const double *cv, long *rs, int *ri, double *rv) {
    long *fill = malloc((size_t)(m ? m : 1) * sizeof *fill);
    if (!fill) return -1;
    memset(rs, 0, (size_t)(m + 1) * sizeof *rs);
    for (long p = 0; p < cs[n]; p++) rs[ci[p] + 1]++;
    for (int i = 0; i < m; i++) rs[i + 1] += rs[i];
    memcpy(fill, rs, (size_t)m * sizeof *fill);
    for (int j = 0; j < n; j++)
        for (long p = cs[j]; p < cs[j + 1]; p++) {
            long d = fill[ci[p]]++;
            ri[d] = j;
            rv[d] = cv[p];
        }
    free(fill);
    return 0;
}
