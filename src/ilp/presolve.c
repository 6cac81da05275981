/* presolve.c — LP presolve and primal postsolve (see presolve.h):
 * empty rows, singleton rows -> column bounds, fixed columns, empty columns,
 * redundant rows and forcing rows, repeated until nothing changes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lp_internal.h"
#include "presolve.h"

struct presolve_info {
    int n, m;
    int n_red, m_red;
    int *col_map;    /* original column -> reduced column, -1 removed */
    double *xfix;    /* value of removed columns */
};

static double tol_of(double v) { return 1e-9 * (1.0 + fabs(v)); }

typedef struct {
    int n, m;
    const long *cs;
    const int *ci;
    const double *cv;
    long *rs;
    int *rj;
    double *rv;
    double *clb, *cub, *cobj, *rlb, *rub;
    char *cact, *ract;
    int *rcnt, *ccnt;
    double *xfix;
    double c0;
    int sense;
} pre_t;

static void drop_row(pre_t *P, int i) {
    P->ract[i] = 0;
    for (long p = P->rs[i]; p < P->rs[i + 1]; p++)
        if (P->cact[P->rj[p]]) P->ccnt[P->rj[p]]--;
}

static void drop_col(pre_t *P, int j, double v) {
    P->cact[j] = 0;
    P->xfix[j] = v;
    P->c0 += P->cobj[j] * v;
    for (long p = P->cs[j]; p < P->cs[j + 1]; p++) {
        int i = P->ci[p];
        if (!P->ract[i]) continue;
        double a = P->cv[p] * v;
        if (isfinite(P->rlb[i])) P->rlb[i] -= a;
        if (isfinite(P->rub[i])) P->rub[i] -= a;
        P->rcnt[i]--;
    }
}

/* set column bounds [l,u] ∩ current; returns -1 if infeasible */
static int tighten(pre_t *P, int j, double l, double u) {
    if (!isfinite(P->clb[j]) ? l > P->clb[j] : l > P->clb[j] + tol_of(P->clb[j])) P->clb[j] = l;
    if (!isfinite(P->cub[j]) ? u < P->cub[j] : u < P->cub[j] - tol_of(P->cub[j])) P->cub[j] = u;
    if (P->clb[j] > P->cub[j]) {
        if (P->clb[j] > P->cub[j] + 1e-7 * (1.0 + fabs(P->cub[j]))) return -1;
        double mid = isfinite(l) && l == P->clb[j] ? P->cub[j] : P->clb[j];
        P->clb[j] = P->cub[j] = mid;
    }
    return 0;
}

static int run(pre_t *P) {
    int n = P->n, m = P->m;
    for (int pass = 0; pass < 20; pass++) {
        int changed = 0;
        for (int i = 0; i < m; i++) {
            if (!P->ract[i]) continue;
            if (P->rcnt[i] == 0) {
                if (P->rlb[i] > tol_of(P->rlb[i]) * 100 || P->rub[i] < -tol_of(P->rub[i]) * 100) return RK_PRE_INFEASIBLE;
                P->ract[i] = 0;
                changed = 1;
                continue;
            }
            if (P->rcnt[i] == 1) {
                int j = -1;
                double a = 0;
                for (long p = P->rs[i]; p < P->rs[i + 1]; p++)
                    if (P->cact[P->rj[p]]) { j = P->rj[p]; a = P->rv[p]; break; }
                if (j < 0 || fabs(a) < 1e-9) continue;
                double l = P->rlb[i] / a, u = P->rub[i] / a;
                if (a < 0) { double t = l; l = u; u = t; }
                if (!isfinite(P->rlb[i])) { if (a > 0) l = -INFINITY; else u = INFINITY; }
                if (!isfinite(P->rub[i])) { if (a > 0) u = INFINITY; else l = -INFINITY; }
                if (tighten(P, j, l, u)) return RK_PRE_INFEASIBLE;
                drop_row(P, i);
                changed = 1;
                continue;
            }
            /* activity bounds */
            double mn = 0, mx = 0;
            int mninf = 0, mxinf = 0;
            for (long p = P->rs[i]; p < P->rs[i + 1]; p++) {
                int j = P->rj[p];
                if (!P->cact[j]) continue;
                double a = P->rv[p];
                double lo = a > 0 ? a * P->clb[j] : a * P->cub[j];
                double hi = a > 0 ? a * P->cub[j] : a * P->clb[j];
                if (isfinite(lo)) mn += lo; else mninf++;
                if (isfinite(hi)) mx += hi; else mxinf++;
            }
            double rl = P->rlb[i], ru = P->rub[i];
            if ((!mninf && isfinite(ru) && mn > ru + 1e-7 * (1 + fabs(ru))) ||
                (!mxinf && isfinite(rl) && mx < rl - 1e-7 * (1 + fabs(rl))))
                return RK_PRE_INFEASIBLE;
            int lo_ok = !isfinite(rl) || (!mninf && mn >= rl - tol_of(rl));
            int hi_ok = !isfinite(ru) || (!mxinf && mx <= ru + tol_of(ru));
            if (lo_ok && hi_ok) {
                drop_row(P, i);
                changed = 1;
                continue;
            }
            int force_lo = !mninf && isfinite(ru) && mn >= ru - tol_of(ru);
            int force_hi = !mxinf && isfinite(rl) && mx <= rl + tol_of(rl);
            if (force_lo || force_hi) {
                for (long p = P->rs[i]; p < P->rs[i + 1]; p++) {
                    int j = P->rj[p];
                    if (!P->cact[j]) continue;
                    double a = P->rv[p];
                    double v = (force_lo == (a > 0)) ? P->clb[j] : P->cub[j];
                    P->clb[j] = P->cub[j] = v;
                }
                drop_row(P, i);
                changed = 1;
            }
        }
        for (int j = 0; j < n; j++) {
            if (!P->cact[j]) continue;
            if (P->clb[j] == P->cub[j]) {
                drop_col(P, j, P->clb[j]);
                changed = 1;
            } else if (P->ccnt[j] == 0) {
                double c = P->sense * P->cobj[j], v;
                if (c > 0) v = P->clb[j];
                else if (c < 0) v = P->cub[j];
                else v = isfinite(P->clb[j]) ? P->clb[j] : (isfinite(P->cub[j]) ? P->cub[j] : 0.0);
                if (!isfinite(v)) continue; /* unbounded direction: leave it to the simplex */
                drop_col(P, j, v);
                changed = 1;
            }
        }
        if (!changed) break;
    }
    return RK_PRE_OK;
}

rk_status presolve_run(const rk_lp *lp, presolve_info **pre_out, rk_lp **reduced, pre_status *ps,
                          rk_error *err) {
    *pre_out = NULL;
    *reduced = NULL;
    *ps = RK_PRE_OK;
    lp_csc A;
    if (lp_matrix(lp, &A)) return rk_fail(err, RK_ENOMEM, "presolve: out of memory");
    int n = lp->n, m = lp->m;
    size_t nz = (size_t)(n ? n : 1), mz = (size_t)(m ? m : 1), az = (size_t)(A.nnz ? A.nnz : 1);
    pre_t P;
    memset(&P, 0, sizeof P);
    P.n = n; P.m = m;
    P.cs = A.start; P.ci = A.index; P.cv = A.value;
    P.sense = lp->maximize ? -1 : 1;
    P.rs = calloc(mz + 1, sizeof *P.rs);
    P.rj = malloc(az * sizeof *P.rj);
    P.rv = malloc(az * sizeof *P.rv);
    P.clb = malloc(nz * sizeof(double)); P.cub = malloc(nz * sizeof(double));
    P.cobj = malloc(nz * sizeof(double)); P.xfix = calloc(nz, sizeof(double));
    P.rlb = malloc(mz * sizeof(double)); P.rub = malloc(mz * sizeof(double));
    P.cact = malloc(nz); P.ract = malloc(mz);
    P.rcnt = calloc(mz, sizeof(int)); P.ccnt = calloc(nz, sizeof(int));
    presolve_info *pre = calloc(1, sizeof *pre);
    rk_status st = RK_OK;
    if (!P.rs || !P.rj || !P.rv || !P.clb || !P.cub || !P.cobj || !P.xfix || !P.rlb || !P.rub ||
        !P.cact || !P.ract || !P.rcnt || !P.ccnt || !pre) {
        st = rk_fail(err, RK_ENOMEM, "presolve: out of memory");
        goto done;
    }
    if (csc_rowwise(n, m, A.start, A.index, A.value, P.rs, P.rj, P.rv)) {
        st = rk_fail(err, RK_ENOMEM, "presolve: out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        P.clb[j] = lp->col_lb[j]; P.cub[j] = lp->col_ub[j]; P.cobj[j] = lp->obj[j];
        P.cact[j] = 1;
        P.ccnt[j] = (int)(A.start[j + 1] - A.start[j]);
        if (P.clb[j] > P.cub[j]) { *ps = RK_PRE_INFEASIBLE; goto done; }
    }
    for (int i = 0; i < m; i++) {
        P.rlb[i] = lp->row_lb[i]; P.rub[i] = lp->row_ub[i];
        P.ract[i] = 1;
        P.rcnt[i] = (int)(P.rs[i + 1] - P.rs[i]);
        if (P.rlb[i] > P.rub[i]) { *ps = RK_PRE_INFEASIBLE; goto done; }
    }
    P.c0 = lp->obj_const;
    int r = run(&P);
    if (r != RK_PRE_OK) { *ps = (pre_status)r; goto done; }
    /* build the reduced LP */
    pre->n = n; pre->m = m;
    pre->col_map = malloc(nz * sizeof(int));
    pre->xfix = P.xfix;
    P.xfix = NULL;
    rk_lp *red = rk_lp_new();
    int *cols = malloc(nz * sizeof(int));
    double *vals = malloc(nz * sizeof(double));
    if (!pre->col_map || !red || !cols || !vals) {
        free(cols); free(vals); rk_lp_free(red);
        st = rk_fail(err, RK_ENOMEM, "presolve: out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        pre->col_map[j] = -1;
        if (!P.cact[j]) continue;
        pre->col_map[j] = rk_lp_add_col(red, lp->col_name[j], P.cobj[j], P.clb[j], P.cub[j], 0);
        if (pre->col_map[j] < 0) { st = RK_ENOMEM; break; }
    }
    for (int i = 0; i < m && st == RK_OK; i++) {
        if (!P.ract[i]) continue;
        int k = 0;
        for (long p = P.rs[i]; p < P.rs[i + 1]; p++)
            if (P.cact[P.rj[p]]) { cols[k] = pre->col_map[P.rj[p]]; vals[k] = P.rv[p]; k++; }
        int ri = rk_lp_add_row(red, lp->row_name[i], P.rlb[i], P.rub[i]);
        if (ri < 0 || rk_lp_add_row_coefs(red, ri, k, cols, vals) != RK_OK) st = RK_ENOMEM;
    }
    free(cols);
    free(vals);
    if (st != RK_OK) {
        rk_lp_free(red);
        st = rk_fail(err, RK_ENOMEM, "presolve: out of memory");
        goto done;
    }
    rk_lp_set_maximize(red, lp->maximize);
    rk_lp_set_obj_const(red, P.c0);
    pre->n_red = red->n;
    pre->m_red = red->m;
    *reduced = red;
    *pre_out = pre;
    pre = NULL;
done:
    free(P.rs); free(P.rj); free(P.rv); free(P.clb); free(P.cub); free(P.cobj); free(P.xfix);
    free(P.rlb); free(P.rub); free(P.cact); free(P.ract); free(P.rcnt); free(P.ccnt);
    presolve_free(pre);
    return st;
}

void presolve_postsolve(const presolve_info *pre, const double *x_red, double *x) {
    for (int j = 0; j < pre->n; j++) x[j] = pre->col_map[j] >= 0 ? x_red[pre->col_map[j]] : pre->xfix[j];
}

int presolve_removed_rows(const presolve_info *pre) { return pre->m - pre->m_red; }
int presolve_removed_cols(const presolve_info *pre) { return pre->n - pre->n_red; }

void presolve_free(presolve_info *pre) {
    if (!pre) return;
    free(pre->col_map);
    free(pre->xfix);
    free(pre);
}
