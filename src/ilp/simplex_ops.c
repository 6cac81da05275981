/* simplex_ops.c — the operations on an spx that the simplex loops and the
 * public functions share (see simplex_internal.h): refactoring the basis,
 * recomputing primal and dual values, the pivot row, infeasibility and
 * objective sums, cost perturbation, the basis change, and the work
 * arrays' (re)allocation and row-wise copy of the matrix. */
#include "simplex_internal.h"

/* ------------------------------------------------------------ factor */

int sx_refactor(spx *s) {
    int m = s->m, n = s->n;
    for (int attempt = 0; attempt < 4; attempt++) {
        long nnz = 0;
        for (int p = 0; p < m; p++) {
            int j = s->head[p];
            nnz += j < n ? s->Acs[j + 1] - s->Acs[j] : 1;
        }
        long *bs = malloc((size_t)(m + 1) * sizeof *bs);
        int *bi = malloc((size_t)(nnz ? nnz : 1) * sizeof *bi);
        double *bv = malloc((size_t)(nnz ? nnz : 1) * sizeof *bv);
        if (!bs || !bi || !bv) { free(bs); free(bi); free(bv); return -1; }
        long w = 0;
        for (int p = 0; p < m; p++) {
            bs[p] = w;
            int j = s->head[p];
            if (j < n) {
                for (long q = s->Acs[j]; q < s->Acs[j + 1]; q++) { bi[w] = s->Aci[q]; bv[w] = s->Acv[q]; w++; }
            } else {
                bi[w] = j - n; bv[w] = 1.0; w++;
            }
        }
        bs[m] = w;
        int r = lu_factor(s->lu, m, bs, bi, bv, s->bad_pos, s->bad_row);
        free(bs); free(bi); free(bv);
        if (r < 0) return -1;
        if (r == 0) { s->lu_ok = 1; s->need_refactor = 0; return 0; }
        /* replace dependent columns by logicals of unpivoted rows */
        for (int t = 0; t < r; t++) {
            int p = s->bad_pos[t], row = s->bad_row[t];
            int jo = s->head[p], jn = n + row;
            s->bpos[jo] = -1;
            s->vst[jo] = VS_LB;
            fix_status(s, jo);
            s->head[p] = jn;
            s->bpos[jn] = p;
            s->vst[jn] = VS_BASIC;
            s->dse[p] = 1.0;
        }
        if (s->verbose) rk_log_printf(s->log, RK_LOG_WARNING, "simplex: singular basis, %d columns replaced", r);
    }
    return -1;
}

void sx_compute_primal(spx *s) {
    int m = s->m, N = N_of(s);
    double *t = s->tmp;
    for (int i = 0; i < m; i++) t[i] = 0.0;
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        s->x[j] = nb_value(s, j);
        if (s->x[j] != 0.0) col_axpy(s, j, -s->x[j], t);
    }
    lu_ftran(s->lu, t);
    for (int p = 0; p < m; p++) s->x[s->head[p]] = t[p];
}

void sx_compute_duals(spx *s) {
    int m = s->m, N = N_of(s);
    for (int p = 0; p < m; p++) s->y[p] = s->cw[s->head[p]];
    lu_btran(s->lu, s->y);
    for (int j = 0; j < N; j++) s->d[j] = s->vst[j] == VS_BASIC ? 0.0 : s->cw[j] - col_dot(s, j, s->y);
}

/* pivot row: arow[j] = rho . a_j for the nonbasic j, listed in alist;
 * arow is zero elsewhere */
void sx_compute_row(spx *s, const double *rho) {
    int n = s->n, m = s->m;
    double *ar = s->arow;
    for (int k = 0; k < s->alen; k++) ar[s->alist[k]] = 0.0;
    s->alen = 0;
    const int *rl = s->rlist;
    int nz = s->rlen;
    if ((double)nz < 0.1 * m) {
        for (int t = 0; t < nz; t++) {
            int i = rl[t];
            double r = rho[i];
            for (long p = s->Ars[i]; p < s->Ars[i + 1]; p++) {
                int j = s->Arj[p];
                if (s->vst[j] == VS_BASIC) continue;
                if (!s->amark[j]) { s->amark[j] = 1; s->alist[s->alen++] = j; }
                ar[j] += r * s->Arv[p];
            }
        }
        for (int k = 0; k < s->alen; k++) s->amark[s->alist[k]] = 0;
    } else {
        for (int j = 0; j < n; j++) {
            if (s->vst[j] == VS_BASIC) continue;
            double v = col_dot(s, j, rho);
            if (v != 0.0) { ar[j] = v; s->alist[s->alen++] = j; }
        }
    }
    for (int t = 0; t < nz; t++) {
        int i = rl[t];
        if (s->vst[n + i] != VS_BASIC) { ar[n + i] = rho[i]; s->alist[s->alen++] = n + i; }
    }
}

/* the nonzero positions of v (size m) in increasing order -> list; returns
 * their count */
int sx_nonzero_list(const double *v, int m, int *list) {
    int k = 0, i = 0;
    for (; i + 8 <= m; i += 8) {
        if (zero8(v + i)) continue;
        for (int q = i; q < i + 8; q++) {
            list[k] = q;
            k += v[q] != 0.0;
        }
    }
    for (; i < m; i++) {
        list[k] = i;
        k += v[i] != 0.0;
    }
    return k;
}

void sx_all_basic_infeasibilities(spx *s) {
    for (int p = 0; p < s->m; p++) s->pinf[p] = basic_infeasibility(s, p);
}

double sx_objective_internal(const spx *s, const double *cost) {
    double o = 0.0;
    if (cost == s->c) { /* the true costs: only the columns that have one */
        for (int k = 0; k < s->ncnz; k++) o += cost[s->cnz[k]] * s->x[s->cnz[k]];
        return o;
    }
    int N = N_of(s);
    for (int j = 0; j < N; j++)
        if (cost[j] != 0.0) o += cost[j] * s->x[j];
    return o;
}

/* put boxed nonbasic variables at the bound their reduced cost asks for;
 * returns the number of flips */
int sx_flip_to_dual_feasible(spx *s) {
    int N = N_of(s), k = 0;
    for (int j = 0; j < N; j++) {
        if (s->vst[j] == VS_BASIC) continue;
        if (!isfinite(s->lb[j]) || !isfinite(s->ub[j]) || s->lb[j] == s->ub[j]) continue;
        if (s->vst[j] == VS_LB && s->d[j] < -DTOL) { s->vst[j] = VS_UB; k++; }
        else if (s->vst[j] == VS_UB && s->d[j] > DTOL) { s->vst[j] = VS_LB; k++; }
        else if (s->vst[j] == VS_FREE) { s->vst[j] = s->d[j] >= 0 ? VS_LB : VS_UB; k++; }
        s->x[j] = nb_value(s, j);
    }
    return k;
}

int sx_count_dual_infeasible(const spx *s) {
    int N = N_of(s), k = 0;
    for (int j = 0; j < N; j++)
        if (s->vst[j] != VS_BASIC && dual_infeasible(s, j, DTOL)) k++;
    return k;
}

/* cost perturbation of the nonbasic structurals in the direction that keeps
 * them dual feasible */
void sx_perturb_costs(spx *s) {
    int n = s->n;
    for (int j = 0; j < n; j++) {
        if (s->vst[j] == VS_BASIC || s->lb[j] == s->ub[j]) continue;
        double xi = (1e-7 + 5e-7 * fabs(s->c[j])) * (1.0 + rnd01(s));
        if (s->vst[j] == VS_LB) { s->cw[j] += xi; s->d[j] += xi; }
        else if (s->vst[j] == VS_UB) { s->cw[j] -= xi; s->d[j] -= xi; }
    }
    s->perturbed = 1;
}

void sx_remove_perturbation(spx *s) {
    memcpy(s->cw, s->c, (size_t)N_of(s) * sizeof *s->cw);
    s->perturbed = 0;
    s->shifted = 0;
}

/* list/nz: the nonzero positions of s->alpha, or NULL (lu.c scans alpha) */
void sx_basis_change(spx *s, int r, int q, int leave_status, const int *list, int nz) {
    int jr = s->head[r];
    s->head[r] = q;
    s->bpos[q] = r;
    s->vst[q] = VS_BASIC;
    s->bpos[jr] = -1;
    s->vst[jr] = (signed char)leave_status;
    if (s->lb[jr] == s->ub[jr]) s->vst[jr] = VS_LB;
    int rc = lu_update(s->lu, r, s->alpha, list, nz);
    if (rc != 0) s->need_refactor = 1;
}

int sx_alloc_arrays(spx *s, int n, int m) {
    int N = n + m;
    size_t Nz = (size_t)(N ? N : 1), mz = (size_t)(m ? m : 1);
#define AL(p, k) do { void *q_ = realloc((p), (k) * sizeof(*(p))); if (!q_) return -1; (p) = q_; } while (0)
    AL(s->c, Nz); AL(s->cnz, Nz); AL(s->cw, Nz); AL(s->lb, Nz); AL(s->ub, Nz);
    AL(s->bpos, Nz); AL(s->vst, Nz); AL(s->x, Nz); AL(s->d, Nz); AL(s->dvx, Nz); AL(s->arow, Nz);
    AL(s->cand, Nz); AL(s->alist, Nz); AL(s->amark, Nz);
    AL(s->head, mz); AL(s->y, mz); AL(s->dse, mz); AL(s->rho, mz); AL(s->alpha, mz); AL(s->tau, mz);
    AL(s->tmp, mz); AL(s->rs, mz); AL(s->pinf, mz); AL(s->rlist, mz); AL(s->qlist, mz);
    AL(s->bad_pos, Nz); AL(s->bad_row, Nz);
#undef AL
    return 0;
}

int sx_build_rowwise(spx *s) {
    int n = s->n, m = s->m;
    long nnz = s->Acs[n];
    free(s->Ars); free(s->Arj); free(s->Arv);
    s->Ars = calloc((size_t)m + 1, sizeof *s->Ars);
    s->Arj = malloc((size_t)(nnz ? nnz : 1) * sizeof *s->Arj);
    s->Arv = malloc((size_t)(nnz ? nnz : 1) * sizeof *s->Arv);
    if (!s->Ars || !s->Arj || !s->Arv) return -1;
    return csc_rowwise(n, m, s->Acs, s->Aci, s->Acv, s->Ars, s->Arj, s->Arv);
}
