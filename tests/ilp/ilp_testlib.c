/* ilp_testlib.c — shared by the LP, MPS and MILP tests: where the test data
 * is, reading its MPS files, and the feasibility of a returned solution, row
 * by row and bound by bound. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ilp_testlib.h"
#include "lp_internal.h"

double ilp_max_violation(const rk_lp *lp, const double *x, int with_integrality) {
    lp_csc A;
    ck_assert_int_eq(lp_matrix(lp, &A), 0);
    double *ax = calloc((size_t)lp->m + 1, sizeof *ax);
    ck_assert_ptr_nonnull(ax);
    for (int j = 0; j < lp->n; j++)
        for (long p = A.start[j]; p < A.start[j + 1]; p++) ax[A.index[p]] += A.value[p] * x[j];
    double w = 0.0;
    for (int i = 0; i < lp->m; i++) {
        double lo = lp->row_lb[i], hi = lp->row_ub[i];
        if (ax[i] < lo) w = fmax(w, (lo - ax[i]) / fmax(1.0, fabs(lo)));
        if (ax[i] > hi) w = fmax(w, (ax[i] - hi) / fmax(1.0, fabs(hi)));
    }
    for (int j = 0; j < lp->n; j++) {
        double lo = lp->col_lb[j], hi = lp->col_ub[j];
        if (x[j] < lo) w = fmax(w, (lo - x[j]) / fmax(1.0, fabs(lo)));
        if (x[j] > hi) w = fmax(w, (x[j] - hi) / fmax(1.0, fabs(hi)));
        if (with_integrality && lp->is_int[j]) w = fmax(w, fabs(x[j] - floor(x[j] + 0.5)));
    }
    free(ax);
    return w;
}

const char *ilp_testdata(void) {
    const char *d = getenv("RKMATE_TESTDATA");
    return d ? d : "tests/data";
}

rk_lp *ilp_read_data_mps(const char *dir, const char *name) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%s/%s/%s", ilp_testdata(), dir, name);
    ck_assert_msg(n > 0 && (size_t)n < sizeof path, "test data path too long");
    rk_lp *lp = NULL;
    rk_error err;
    ck_assert_msg(rk_mps_read(path, &lp, &err) == RK_OK, "reading %s: %s", path, err.msg);
    return lp;
}

double *ilp_read_data_solution(const rk_lp *lp, const char *dir, const char *name) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%s/%s/%s.sol", ilp_testdata(), dir, name);
    ck_assert_msg(n > 0 && (size_t)n < sizeof path, "test data path too long");
    double *x = NULL;
    rk_error err;
    err.msg[0] = 0;
    ck_assert_msg(rk_milp_read_solution(path, lp, &x, &err) == RK_OK, "%s", err.msg);
    return x;
}

int ilp_load_optima(char (*names)[ILP_NAME_MAX], double *opt, int max) {
    char path[1024];
    snprintf(path, sizeof path, "%s/miplib3/OPTIMA.tsv", ilp_testdata());
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char name[ILP_NAME_MAX];
        double v;
        if (line[0] != '#' && sscanf(line, "%63s %lf", name, &v) == 2) {
            strcpy(names[n], name);
            opt[n] = v;
            n++;
        }
    }
    fclose(f);
    return n;
}

void ilp_check_remat_debug(const ilp_remat_debug *d) {
    char mps[256];
    snprintf(mps, sizeof mps, "%s.mps.gz", d->name);
    rk_lp *lp = ilp_read_data_mps("remat", mps);
    double *x = ilp_read_data_solution(lp, "remat", d->name);
    int runs = d->compare_threads ? 2 : 1;
    long nodes[2] = {0, 0}, iters[2] = {0, 0};
    for (int t = 0; t < runs; t++) {
        rk_milp_params p;
        rk_milp_params_default(&p);
        p.node_limit = d->node_limit;
        if (d->compare_threads) p.threads = t + 1;
        p.debug_solution = x;
        p.verbose = d->verbose;
        p.log.fn = d->log_fn;
        p.log.user = d->log_user[t];
        rk_milp_result r;
        rk_error err;
        err.msg[0] = 0;
        rk_status st = rk_milp_solve(lp, &p, &r, &err);
        ck_assert_msg(st == RK_OK, "%s: %s", d->name, err.msg);
        ck_assert_msg(r.has_solution || !d->need_incumbent, "%s: no incumbent (%s)", d->name,
                      rk_milp_status_name(r.status));
        ck_assert_msg(r.bound <= d->optimum + 1e-6, "%s: bound %.10g above the optimum %.10g", d->name, r.bound,
                      d->optimum);
        ck_assert_msg(!r.has_solution || r.objective >= d->optimum - 1e-6,
                      "%s: incumbent %.10g below the optimum %.10g", d->name, r.objective, d->optimum);
        nodes[t] = r.nodes;
        iters[t] = r.iterations;
        rk_milp_result_free(&r);
    }
    ck_assert_msg(nodes[0] == nodes[runs - 1] && iters[0] == iters[runs - 1],
                  "%s: 1 thread %ld nodes %ld iterations, 2 threads %ld %ld", d->name, nodes[0], iters[0],
                  nodes[runs - 1], iters[runs - 1]);
    free(x);
    rk_lp_free(lp);
}
