/* test_milp.c — Check tests of branch-and-bound (src/ilp/bb*.c) through
 * rk_milp_solve: every MIPLIB 3 instance of tests/data/miplib3 solved to
 * proven optimality within 1e-6 relative of OPTIMA.tsv with a solution
 * feasible row by row (1e-6) and integral; infeasible / unbounded / maximize
 * toy problems; an incumbent handed in is used (and an infeasible one
 * ignored); node and time limits return the best solution with a valid
 * bound; 1 and 2 threads give identical results, and so do solves run from
 * several OpenMP threads at once; `rkmate milp` (JSON, solution file, exit
 * codes) when meson gives the binary in $RKMATE; regressions with an
 * objective constant (tests/data/milp_regress, optima from CBC); the log
 * callback receives the verbose lines and stderr stays quiet. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bb_internal.h"
#include "lp_internal.h"
#include "ilp_testlib.h"
#include "rk_milp.h"

#define INF INFINITY

static rk_lp *read_miplib(const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%s.mps.gz", name);
    return ilp_read_data_mps("miplib3", file);
}

static double objective_of(const rk_lp *lp, const double *x) {
    double v = lp->obj_const;
    for (int j = 0; j < lp->n; j++) v += lp->obj[j] * x[j];
    return v;
}

static rk_milp_result solve(const rk_lp *lp, const rk_milp_params *p) {
    rk_milp_result r;
    rk_error err;
    err.msg[0] = 0;
    rk_status st = rk_milp_solve(lp, p, &r, &err);
    ck_assert_msg(st == RK_OK, "rk_milp_solve: %s", err.msg);
    return r;
}

/* ------------------------------------------------------------ MIPLIB */

#define MAX_INST 64
static char inst_name[MAX_INST][ILP_NAME_MAX];
static double inst_opt[MAX_INST];
static int n_inst;


/* Each instance: optimal, objective within 1e-6 relative, bound consistent,
 * solution feasible and with the objective reported.  The slowest (vpm2)
 * takes a few seconds here. */
START_TEST(test_miplib_instance) {
    ck_assert_int_gt(n_inst, 0);
    ck_assert_int_lt(_i, n_inst);
    const char *name = inst_name[_i];
    rk_lp *lp = read_miplib(name);
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.time_limit = 300;
    rk_milp_result r = solve(lp, &p);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "%s: status %s after %ld nodes, %.1f s", name,
                  rk_milp_status_name(r.status), r.nodes, r.time_s);
    ck_assert(r.has_solution);
    double opt = inst_opt[_i];
    double rel = fabs(r.objective - opt) / fmax(1.0, fabs(opt));
    ck_assert_msg(rel <= 1e-6, "%s: objective %.10g, expected %.10g", name, r.objective, opt);
    ck_assert_msg(r.bound <= r.objective + 1e-9 * fmax(1.0, fabs(r.objective)), "%s: bound %.10g above objective",
                  name, r.bound);
    ck_assert_msg((r.objective - r.bound) / fmax(1.0, fabs(r.objective)) <= 1e-6 + 1e-12, "%s: gap", name);
    ck_assert_int_eq(r.n, lp->n);
    double viol = ilp_max_violation(lp, r.x, 1);
    ck_assert_msg(viol <= 1e-6, "%s: solution violates a row / bound / integrality by %g", name, viol);
    ck_assert_msg(fabs(objective_of(lp, r.x) - r.objective) <= 1e-6 * fmax(1.0, fabs(opt)), "%s: objective of x",
                  name);
    fprintf(stderr, "  %-10s optimal %.10g  %ld nodes  %ld iterations  %.2f s\n", name, r.objective, r.nodes,
            r.iterations, r.time_s);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* ------------------------------------------------------------ toys */

/* 2x + 2y = 3, x, y integer in [0, 5]: LP feasible, integer infeasible */
START_TEST(test_infeasible_integer) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", 1, 0, 5, 1);
    rk_lp_add_col(lp, "y", 1, 0, 5, 1);
    int r = rk_lp_add_row(lp, "r", 3, 3);
    rk_lp_add_row_coefs(lp, r, 2, (int[]){0, 1}, (double[]){2, 2});
    rk_milp_params p;
    rk_milp_params_default(&p);
    rk_milp_result res = solve(lp, &p);
    ck_assert_int_eq(res.status, RK_MILP_INFEASIBLE);
    ck_assert(!res.has_solution);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
}
END_TEST

/* LP infeasible: x + y >= 3 with binaries */
START_TEST(test_infeasible_lp) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", 1, 0, 1, 1);
    rk_lp_add_col(lp, "y", 1, 0, 1, 1);
    rk_lp_add_col(lp, "z", 1, 0, 0.5, 0);
    int r = rk_lp_add_row(lp, "r", 3, INF);
    rk_lp_add_row_coefs(lp, r, 3, (int[]){0, 1, 2}, (double[]){1, 1, 1});
    rk_milp_params p;
    rk_milp_params_default(&p);
    rk_milp_result res = solve(lp, &p);
    ck_assert_int_eq(res.status, RK_MILP_INFEASIBLE);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
}
END_TEST

/* min -x - y, x integer unbounded above, x - y <= 1.5 */
START_TEST(test_unbounded) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "x", -1, 0, INF, 1);
    rk_lp_add_col(lp, "y", -1, 0, INF, 0);
    int r = rk_lp_add_row(lp, "r", -INF, 1.5);
    rk_lp_add_row_coefs(lp, r, 2, (int[]){0, 1}, (double[]){1, -1});
    rk_milp_params p;
    rk_milp_params_default(&p);
    rk_milp_result res = solve(lp, &p);
    ck_assert_int_eq(res.status, RK_MILP_UNBOUNDED);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
}
END_TEST

/* A small knapsack, as maximize with a constant, general integers and a
 * continuous column: max 5a + 4b + 3c + 0.5d + 10 s.t.
 * 2a + 3b + c + d <= 7.5, 4a + b + 2c <= 10, a, b, c integer in [0, 3],
 * d in [0, 1].  Optimum by enumeration below. */
START_TEST(test_maximize_general_integers) {
    rk_lp *lp = rk_lp_new();
    rk_lp_add_col(lp, "a", 5, 0, 3, 1);
    rk_lp_add_col(lp, "b", 4, 0, 3, 1);
    rk_lp_add_col(lp, "c", 3, 0, 3, 1);
    rk_lp_add_col(lp, "d", 0.5, 0, 1, 0);
    int r0 = rk_lp_add_row(lp, "cap1", -INF, 7.5);
    int r1 = rk_lp_add_row(lp, "cap2", -INF, 10);
    rk_lp_add_row_coefs(lp, r0, 4, (int[]){0, 1, 2, 3}, (double[]){2, 3, 1, 1});
    rk_lp_add_row_coefs(lp, r1, 3, (int[]){0, 1, 2}, (double[]){4, 1, 2});
    rk_lp_set_maximize(lp, 1);
    rk_lp_set_obj_const(lp, 10);
    double best = -INF;
    for (int a = 0; a <= 3; a++)
        for (int b = 0; b <= 3; b++)
            for (int c = 0; c <= 3; c++) {
                if (4 * a + b + 2 * c > 10) continue;
                double rest = 7.5 - (2 * a + 3 * b + c);
                if (rest < 0) continue;
                double d = fmin(1.0, rest);
                double v = 5 * a + 4 * b + 3 * c + 0.5 * d + 10;
                if (v > best) best = v;
            }
    rk_milp_params p;
    rk_milp_params_default(&p);
    rk_milp_result res = solve(lp, &p);
    ck_assert_int_eq(res.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(res.objective, best, 1e-9);
    ck_assert_double_ge(res.bound, res.objective - 1e-6 * fabs(best));
    ck_assert_double_le(ilp_max_violation(lp, res.x, 1), 1e-6);
    rk_milp_result_free(&res);
    /* the LP relaxation only */
    p.lp_only = 1;
    res = solve(lp, &p);
    ck_assert_int_eq(res.status, RK_MILP_OPTIMAL);
    ck_assert_double_ge(res.objective, best - 1e-9);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
}
END_TEST

/* ------------------------------------------------------------ incumbent, limits, threads */

/* Read a MIPLIB instance, solve it with default parameters (left in *p for
 * the test to change) and check that the solve is optimal. */
/* default parameters on a given number of threads */
static rk_milp_params params_on(int threads) {
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.threads = threads;
    return p;
}

static rk_milp_result solve_default(const char *name, rk_lp **lp, rk_milp_params *p) {
    *lp = read_miplib(name);
    rk_milp_params_default(p);
    rk_milp_result r = solve(*lp, p);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    return r;
}

START_TEST(test_incumbent_used) {
    rk_lp *lp;
    rk_milp_params p;
    rk_milp_result full = solve_default("p0033", &lp, &p);
    /* hand the optimum over with a node limit of 1: it must come back */
    p.incumbent = full.x;
    p.node_limit = 1;
    rk_milp_result r = solve(lp, &p);
    ck_assert(r.has_solution);
    ck_assert_double_eq_tol(r.objective, full.objective, 1e-9);
    ck_assert(r.status == RK_MILP_OPTIMAL || r.status == RK_MILP_TIME_LIMIT);
    ck_assert_double_le(r.bound, r.objective + 1e-9);
    rk_milp_result_free(&r);
    /* an infeasible incumbent is ignored */
    double *bad = calloc((size_t)lp->n, sizeof *bad);
    for (int j = 0; j < lp->n; j++) bad[j] = 0.5;
    p.incumbent = bad;
    p.node_limit = 0;
    r = solve(lp, &p);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(r.objective, full.objective, 1e-9);
    rk_milp_result_free(&r);
    free(bad);
    rk_milp_result_free(&full);
    rk_lp_free(lp);
}
END_TEST

/* a and b are the same search: same status, values, tree and solution. */
static void assert_same_search(const rk_lp *lp, const rk_milp_result *a, const rk_milp_result *b) {
    ck_assert_int_eq(a->status, b->status);
    ck_assert(a->objective == b->objective);
    ck_assert(a->bound == b->bound);
    ck_assert_int_eq(a->nodes, b->nodes);
    ck_assert_int_eq(a->iterations, b->iterations);
    ck_assert_int_eq(a->has_solution, b->has_solution);
    if (a->has_solution) ck_assert_int_eq(memcmp(a->x, b->x, (size_t)lp->n * sizeof *a->x), 0);
}

/* Pseudocosts come back with the result (one per column and direction,
 * observed on the branched columns); handed to a second solve they change
 * the search but not the optimum; pseudocosts of another column count are
 * ignored (same search as without). */
START_TEST(test_pseudocosts_round_trip) {
    rk_lp *lp;
    rk_milp_params p;
    rk_milp_result a = solve_default("p0201", &lp, &p);
    ck_assert_int_eq(a.pseudocosts.n, lp->n);
    long seen = 0;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < lp->n; j++) {
            ck_assert_int_ge(a.pseudocosts.cnt[d][j], 0);
            ck_assert_double_ge(a.pseudocosts.sum[d][j], 0);
            seen += a.pseudocosts.cnt[d][j];
        }
    ck_assert_int_gt(seen, 0); /* p0201 branches */
    p.pseudocosts = &a.pseudocosts;
    rk_milp_result b = solve(lp, &p);
    ck_assert_int_eq(b.status, RK_MILP_OPTIMAL);
    ck_assert_double_eq_tol(b.objective, a.objective, 1e-9);
    ck_assert_double_le(ilp_max_violation(lp, b.x, 1), 1e-6);
    rk_milp_pseudocosts wrong = a.pseudocosts;
    wrong.n = lp->n - 1;
    p.pseudocosts = &wrong;
    rk_milp_result c = solve(lp, &p);
    assert_same_search(lp, &c, &a); /* pseudocosts of the wrong size are ignored */
    rk_milp_result_free(&a);
    rk_milp_result_free(&b);
    rk_milp_result_free(&c);
    rk_lp_free(lp);
}
END_TEST

/* r is optimal with objective opt and a feasible solution */
static void assert_optimum(const rk_lp *lp, const rk_milp_result *r, double opt, const char *name) {
    ck_assert_int_eq(r->status, RK_MILP_OPTIMAL);
    ck_assert_msg(fabs(r->objective - opt) <= 1e-6 * fmax(1.0, fabs(opt)), "%s: %.10g vs %.10g", name, r->objective,
                  opt);
    ck_assert_double_le(ilp_max_violation(lp, r->x, 1), 1e-6);
}

/* Pseudocost branching (no strong branching) reaches the same optima, from
 * scratch and from the pseudocosts of an earlier solve, and is another
 * search than reliability branching. */
START_TEST(test_pseudocost_branching) {
    const char *names[] = {"p0201", "stein27", "lseu", "mod008"};
    for (int k = 0; k < 4; k++) {
        rk_lp *lp = read_miplib(names[k]);
        double opt = NAN;
        for (int i = 0; i < n_inst; i++)
            if (!strcmp(inst_name[i], names[k])) opt = inst_opt[i];
        ck_assert_msg(!isnan(opt), "%s: no optimum in OPTIMA.tsv", names[k]);
        rk_milp_params p = params_on(1);
        rk_milp_result rel = solve(lp, &p);
        p.pseudocost_branching = 1;
        rk_milp_result a = solve(lp, &p);
        p.pseudocosts = &a.pseudocosts;
        rk_milp_result b = solve(lp, &p);
        const rk_milp_result *all[3] = {&rel, &a, &b};
        for (int t = 0; t < 3; t++) {
            assert_optimum(lp, all[t], opt, names[k]);
        }
        ck_assert_msg(a.nodes != rel.nodes || a.iterations != rel.iterations, "%s: the same search", names[k]);
        rk_milp_result_free(&rel);
        rk_milp_result_free(&a);
        rk_milp_result_free(&b);
        rk_lp_free(lp);
    }
}
END_TEST

/* The seed: 0 is the default search; other seeds are other searches (other
 * pivots, so other trees) to the same optimum. */
START_TEST(test_seed) {
    const char *names[] = {"p0201", "stein27", "lseu"};
    for (int k = 0; k < 3; k++) {
        rk_lp *lp = read_miplib(names[k]);
        rk_milp_params p = params_on(1);
        rk_milp_result d = solve(lp, &p);
        p.seed = 0;
        rk_milp_result z = solve(lp, &p);
        assert_same_search(lp, &z, &d);
        int differs = 0;
        for (unsigned sd = 1; sd <= 3; sd++) {
            p.seed = sd;
            rk_milp_result r = solve(lp, &p);
            assert_optimum(lp, &r, d.objective, names[k]);
            differs |= r.iterations != d.iterations;
            rk_milp_result_free(&r);
        }
        ck_assert_msg(differs, "%s: every seed gave the default search", names[k]);
        rk_milp_result_free(&d);
        rk_milp_result_free(&z);
        rk_lp_free(lp);
    }
}
END_TEST

START_TEST(test_node_limit_bound) {
    rk_lp *lp = read_miplib("stein27");
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.node_limit = 20;
    rk_milp_result r = solve(lp, &p);
    ck_assert_int_eq(r.status, RK_MILP_TIME_LIMIT);
    ck_assert_int_le(r.nodes, 21);
    ck_assert_double_le(r.bound, 18 + 1e-9); /* a valid bound: the optimum is 18 */
    if (r.has_solution) {
        ck_assert_double_ge(r.objective, 18 - 1e-9);
        ck_assert_double_le(ilp_max_violation(lp, r.x, 1), 1e-6);
    }
    rk_milp_result_free(&r);
    p.node_limit = 0;
    p.time_limit = 0.05;
    r = solve(lp, &p);
    ck_assert(r.status == RK_MILP_TIME_LIMIT || r.status == RK_MILP_OPTIMAL);
    ck_assert_double_le(r.bound, 18 + 1e-9);
    ck_assert_double_le(r.time_s, 2.0);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* time_limit_no_incumbent: past time_limit the search goes on while it has
 * no incumbent and stops at the first one (rockmate's whole-graph fallback:
 * an answer late beats none).  A rematerialization MILP (n16_B78, optimum
 * 381, which takes thousands of nodes to prove) at a time limit that ends
 * the search in its root LP: nothing without the extension, a schedule with
 * it, found and returned long before the proof. */
START_TEST(test_time_limit_no_incumbent) {
    rk_lp *lp = ilp_read_data_mps("remat", "remat_n16_B78.mps.gz");
    rk_milp_params p;
    rk_milp_params_default(&p);
    p.time_limit = 1e-6;
    rk_milp_result r = solve(lp, &p);
    ck_assert_int_eq(r.status, RK_MILP_TIME_LIMIT);
    ck_assert(!r.has_solution);
    rk_milp_result_free(&r);
    p.time_limit_no_incumbent = 300;
    r = solve(lp, &p);
    ck_assert(r.has_solution);
    ck_assert_int_eq(r.status, RK_MILP_TIME_LIMIT);
    ck_assert_double_le(ilp_max_violation(lp, r.x, 1), 1e-6);
    ck_assert_double_ge(r.objective, 381 - 1e-6);
    ck_assert_double_le(r.bound, 381 + 1e-6);
    ck_assert_int_le(r.nodes, 200);
    /* that schedule handed in as the incumbent: time_limit holds again */
    double *x = malloc((size_t)lp->n * sizeof *x);
    memcpy(x, r.x, (size_t)lp->n * sizeof *x);
    rk_milp_result_free(&r);
    rk_milp_params q = p;
    q.incumbent = x;
    r = solve(lp, &q);
    ck_assert_int_eq(r.status, RK_MILP_TIME_LIMIT);
    ck_assert(r.has_solution);
    ck_assert_int_eq(r.nodes, 0);
    rk_milp_result_free(&r);
    free(x);
    rk_lp_free(lp);
}
END_TEST

START_TEST(test_threads_identical) {
    const char *names[] = {"p0201", "misc03", "bell3a"};
    for (int k = 0; k < 3; k++) {
        rk_lp *lp = read_miplib(names[k]);
        rk_milp_params p = params_on(1);
        rk_milp_result a = solve(lp, &p);
        p.threads = 2;
        rk_milp_result b = solve(lp, &p);
        assert_same_search(lp, &a, &b);
        rk_milp_result_free(&a);
        rk_milp_result_free(&b);
        rk_lp_free(lp);
    }
}
END_TEST

/* rk-Checkmate solves many MILPs from OpenMP threads at once: same results
 * as one at a time, on the same rk_lp. */
START_TEST(test_reentrant_parallel) {
    rk_lp *lp = read_miplib("stein27");
    rk_milp_params p;
    rk_milp_params_default(&p);
    rk_milp_result ref = solve(lp, &p);
    double obj[4];
    long nodes[4];
    int ok[4];
#pragma omp parallel for num_threads(4)
    for (int k = 0; k < 4; k++) {
        rk_milp_result r;
        rk_error err;
        ok[k] = rk_milp_solve(lp, &p, &r, &err) == RK_OK && r.status == RK_MILP_OPTIMAL;
        obj[k] = r.objective;
        nodes[k] = r.nodes;
        rk_milp_result_free(&r);
    }
    for (int k = 0; k < 4; k++) {
        ck_assert(ok[k]);
        ck_assert(obj[k] == ref.objective);
        ck_assert_int_eq(nodes[k], ref.nodes);
    }
    rk_milp_result_free(&ref);
    rk_lp_free(lp);
}
END_TEST

/* ------------------------------------------------------------ rkmate milp */

static int run_cmd(const char *cmd, char *out, size_t cap) {
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t len = fread(out, 1, cap - 1, f);
    out[len] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_cli) {
    const char *bin = getenv("RKMATE");
    if (!bin) return; /* only under meson */
    char cmd[4096], out[8192], sol[512];
    snprintf(sol, sizeof sol, "%s/rk_test_milp_%ld.sol", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    snprintf(cmd, sizeof cmd, "'%s' milp '%s/miplib3/p0033.mps.gz' --json --quiet -o '%s' --threads 2", bin,
             ilp_testdata(), sol);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "\"status\": \"optimal\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"objective\": 3089") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\"bound\": "));
    ck_assert_ptr_nonnull(strstr(out, "\"nodes\": "));
    ck_assert_ptr_nonnull(strstr(out, "\"iterations\": "));
    ck_assert_ptr_nonnull(strstr(out, "\"time_s\": "));
    /* the solution file: one "name value" line per column, feasible */
    rk_lp *lp = read_miplib("p0033");
    FILE *f = fopen(sol, "r");
    ck_assert_ptr_nonnull(f);
    double *x = calloc((size_t)lp->n, sizeof *x);
    char name[256];
    double v;
    int k = 0;
    while (fscanf(f, "%255s %lf", name, &v) == 2) {
        ck_assert_int_lt(k, lp->n);
        ck_assert_str_eq(name, lp->col_name[k]);
        x[k++] = v;
    }
    fclose(f);
    ck_assert_int_eq(k, lp->n);
    ck_assert_double_le(ilp_max_violation(lp, x, 1), 1e-6);
    ck_assert_double_eq_tol(objective_of(lp, x), 3089, 1e-6);
    free(x);
    rk_lp_free(lp);
    unlink(sol);
    /* LP relaxation, text output */
    snprintf(cmd, sizeof cmd, "'%s' milp '%s/miplib3/p0033.mps.gz' --lp --quiet", bin, ilp_testdata());
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "status      optimal"));
    /* infeasible toy: exit 3 */
    char toy[512];
    snprintf(toy, sizeof toy, "%s/rk_test_milp_%ld.mps", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    f = fopen(toy, "w");
    ck_assert_ptr_nonnull(f);
    fputs("NAME t\nROWS\n N o\n E r\nCOLUMNS\n M 'MARKER' 'INTORG'\n x o 1 r 2\n y o 1 r 2\n M 'MARKER' 'INTEND'\n"
          "RHS\n R r 3\nBOUNDS\n UP B x 5\n UP B y 5\nENDATA\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' milp '%s' --json --quiet", bin, toy);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 3);
    ck_assert_ptr_nonnull(strstr(out, "\"status\": \"infeasible\""));
    /* never over the input; bad values and files: exit 2 */
    snprintf(cmd, sizeof cmd, "'%s' milp '%s' -o '%s' --quiet 2>&1", bin, toy, toy);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "input"));
    snprintf(cmd, sizeof cmd, "'%s' milp '%s' --gap nope 2>&1", bin, toy);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--gap"));
    snprintf(cmd, sizeof cmd, "'%s' milp '%s' --seed -3 2>&1", bin, toy);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--seed"));
    /* another seed: the same optimum */
    snprintf(cmd, sizeof cmd, "'%s' milp '%s/miplib3/p0033.mps.gz' --json --quiet --seed 7", bin, ilp_testdata());
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "\"objective\": 3089") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' milp '%s/mps_bad/05_bad_number.mps' 2>&1", bin, ilp_testdata());
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "line 7"));
    unlink(toy);
}
END_TEST

/* ------------------------------------------------------- regressions */

/* 'name value' per line, as `rkmate milp -o` writes; every column given */
static double *read_incumbent(const rk_lp *lp, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/milp_regress/%s", ilp_testdata(), name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    double *x = calloc((size_t)lp->n + 1, sizeof *x);
    char *seen = calloc((size_t)lp->n + 1, 1);
    ck_assert(x && seen);
    char col[256];
    double v;
    while (fscanf(f, "%255s %lf", col, &v) == 2) {
        int j = 0;
        while (j < lp->n && strcmp(rk_lp_col_name(lp, j), col)) j++;
        ck_assert_msg(j < lp->n, "%s: unknown column %s", path, col);
        x[j] = v;
        seen[j] = 1;
    }
    fclose(f);
    for (int j = 0; j < lp->n; j++) ck_assert_msg(seen[j], "%s: no value for %s", path, rk_lp_col_name(lp, j));
    free(seen);
    return x;
}

/* Both instances have an objective constant (RHS on the objective row) that
 * is not a multiple of the objective step.  The dual simplex cutoff was
 * handed the cutoff minus the constant, so nodes that could improve were cut
 * off: optimal 77 instead of CBC's 64, and 25 instead of 21 once the (worse)
 * incumbent of the second instance was handed in.  Optima from CBC 2.10. */
START_TEST(test_regress_objective_constant) {
    static const struct {
        const char *mps, *inc;
        double opt;
    } cases[] = {
        {"seed178_budget45_10_own77_cbc64.mps", NULL, 64.0},
        {"seed1000_incumbent_bug.mps", "seed1000_incumbent_bug.incumbent.txt", 21.0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rk_lp *lp = ilp_read_data_mps("milp_regress", cases[k].mps);
        ck_assert_double_ne(rk_lp_get_obj_const(lp), 0.0);
        rk_milp_params p;
        rk_milp_params_default(&p);
        rk_milp_result r = solve(lp, &p);
        ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
        ck_assert_msg(fabs(r.objective - cases[k].opt) < 1e-6, "%s: objective %.10g, expected %.10g", cases[k].mps,
                      r.objective, cases[k].opt);
        ck_assert_double_le(r.bound, r.objective + 1e-9);
        ck_assert_double_le(ilp_max_violation(lp, r.x, 1), 1e-6);
        ck_assert_double_eq_tol(objective_of(lp, r.x), r.objective, 1e-6);
        /* handing in an incumbent (the file's, else the optimum itself) must
         * give the same optimum */
        double *inc = cases[k].inc ? read_incumbent(lp, cases[k].inc) : NULL;
        p.incumbent = inc ? inc : r.x;
        rk_milp_result r2 = solve(lp, &p);
        ck_assert_int_eq(r2.status, RK_MILP_OPTIMAL);
        ck_assert_msg(fabs(r2.objective - cases[k].opt) < 1e-6, "%s with incumbent: objective %.10g, expected %.10g",
                      cases[k].mps, r2.objective, cases[k].opt);
        ck_assert_double_le(ilp_max_violation(lp, r2.x, 1), 1e-6);
        rk_milp_result_free(&r2);
        free(inc);
        rk_milp_result_free(&r);
        rk_lp_free(lp);
    }
}
END_TEST

START_TEST(test_status_names) {
    ck_assert_str_eq(rk_milp_status_name(RK_MILP_OPTIMAL), "optimal");
    ck_assert_str_eq(rk_milp_status_name(RK_MILP_INFEASIBLE), "infeasible");
    ck_assert_str_eq(rk_milp_status_name(RK_MILP_UNBOUNDED), "unbounded");
    ck_assert_str_eq(rk_milp_status_name(RK_MILP_TIME_LIMIT), "time_limit");
    ck_assert_str_eq(rk_milp_status_name(RK_MILP_ERROR), "error");
}
END_TEST


static unsigned long long cov_rng(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Lifted knapsack covers (bb_cover.c) on random rows over binaries (both
 * signs, both sides, some columns fixed): every cut is violated at the LP
 * point it was separated from and satisfied by every 0/1 point of the row
 * (all 2^k enumerated). */
START_TEST(test_cover_cuts_valid) {
    enum { K = 12 };
    int found = 0, lifted = 0;
    unsigned long long seed = 7;
    for (int trial = 0; trial < 3000; trial++) {
        int k = 3 + (int)(cov_rng(&seed) % (K - 2));
        int idx[K], cidx[K];
        double val[K], cval[K], glb[K], gub[K], x[K];
        signed char is_int[K];
        long rs[2] = {0, k};
        double sum = 0;
        for (int j = 0; j < k; j++) {
            idx[j] = j;
            val[j] = (double)(1 + cov_rng(&seed) % 50) * ((cov_rng(&seed) % 4) == 0 ? -1 : 1);
            sum += fabs(val[j]);
            is_int[j] = 1;
            glb[j] = 0;
            gub[j] = 1;
            if (cov_rng(&seed) % 10 == 0) glb[j] = gub[j] = (double)(cov_rng(&seed) % 2);
            x[j] = glb[j] == gub[j] ? glb[j] : (double)(cov_rng(&seed) % 1001) / 1000.0;
        }
        int dir = (int)(cov_rng(&seed) % 2);
        double b = floor(sum * (double)(20 + cov_rng(&seed) % 50) / 100.0) + 0.5;
        double rlb = dir ? -b : -INFINITY, rub = dir ? INFINITY : b;
        if (dir)
            for (int j = 0; j < k; j++) val[j] = -val[j]; /* -a x >= -b */
        bb_ctx c;
        memset(&c, 0, sizeof c);
        c.n = k;
        c.m = 1;
        c.row_start = rs;
        c.row_idx = idx;
        c.row_val = val;
        c.row_lb = &rlb;
        c.row_ub = &rub;
        c.glb = glb;
        c.gub = gub;
        c.is_int = is_int;
        c.x = x;
        void *work = malloc(bb_cover_work_size(k));
        double rhs, eff;
        int cnt = bb_cover_cut(&c, 0, dir, work, cidx, cval, &rhs, &eff);
        free(work);
        if (cnt == 0) continue;
        found++;
        double at = 0;
        for (int q = 0; q < cnt; q++) {
            at += cval[q] * x[cidx[q]];
            if (fabs(cval[q]) > 1) lifted++;
        }
        ck_assert_msg(at > rhs + 1e-6 && eff > 0, "trial %d: cut not violated at its LP point", trial);
        for (unsigned long mask = 0; mask < (1ul << k); mask++) {
            double row = 0, cut = 0;
            int in_bounds = 1;
            for (int j = 0; j < k; j++) {
                double v = (double)((mask >> j) & 1);
                if (v < glb[j] || v > gub[j]) in_bounds = 0;
                row += val[j] * v;
            }
            if (!in_bounds || row < rlb || row > rub) continue;
            for (int q = 0; q < cnt; q++) cut += cval[q] * (double)((mask >> cidx[q]) & 1);
            ck_assert_msg(cut <= rhs + 1e-9, "trial %d: feasible point %lx violates the cover cut (%g > %g)", trial,
                          mask, cut, rhs);
        }
    }
    ck_assert_int_ge(found, 300);
    ck_assert_int_ge(lifted, 1); /* some coefficients come from lifting */
}
END_TEST

/* LP diving's effort (bb_heur.c): a dive may start while the dives' simplex
 * iterations are within a tenth of the search's other iterations plus
 * 2000 + m + n, and not once they are past it. */
START_TEST(test_dive_quota) {
    ck_assert(bb_dive_within_quota(0, 0, 100, 200));
    ck_assert(bb_dive_within_quota(2300, 0, 100, 200));
    ck_assert(!bb_dive_within_quota(2301, 0, 100, 200));
    ck_assert(bb_dive_within_quota(12300, 100000, 100, 200));
    ck_assert(!bb_dive_within_quota(12301, 100000, 100, 200));
    ck_assert(!bb_dive_within_quota(74469, 240000, 3932, 2293)); /* n16_B68 before the quota */
}
END_TEST

/* Random multi-knapsack MILPs (where covers and c-MIR cut): the solver's
 * optimum equals brute-force enumeration. */
START_TEST(test_knapsack_vs_enumeration) {
    unsigned long long seed = 11;
    for (int trial = 0; trial < 40; trial++) {
        int n = 8 + (int)(cov_rng(&seed) % 7), m = 1 + (int)(cov_rng(&seed) % 3);
        double a[3][14], b[3], c[14];
        rk_lp *lp = rk_lp_new();
        for (int j = 0; j < n; j++) {
            c[j] = (double)(1 + cov_rng(&seed) % 40);
            ck_assert_int_eq(rk_lp_add_col(lp, NULL, c[j], 0, 1, 1), j);
        }
        rk_lp_set_maximize(lp, 1);
        for (int i = 0; i < m; i++) {
            double sum = 0;
            for (int j = 0; j < n; j++) {
                a[i][j] = (double)(1 + cov_rng(&seed) % 60);
                sum += a[i][j];
            }
            b[i] = floor(sum * 0.4);
            int r = rk_lp_add_row(lp, NULL, -INFINITY, b[i]);
            for (int j = 0; j < n; j++) rk_lp_set_coef(lp, r, j, a[i][j]);
        }
        double best = 0;
        for (unsigned long mask = 0; mask < (1ul << n); mask++) {
            int ok = 1;
            for (int i = 0; i < m && ok; i++) {
                double s = 0;
                for (int j = 0; j < n; j++)
                    if ((mask >> j) & 1) s += a[i][j];
                ok = s <= b[i];
            }
            if (!ok) continue;
            double v = 0;
            for (int j = 0; j < n; j++)
                if ((mask >> j) & 1) v += c[j];
            if (v > best) best = v;
        }
        static const char *rule[3] = {"reliability", "pseudocost", "light strong"};
        for (int br = 0; br < 3; br++) { /* reliability, pseudocost, light strong branching */
            rk_milp_params p = params_on(1);
            p.pseudocost_branching = br == 1;
            if (br == 2) {
                p.sb_reliability = 1;
                p.sb_max_candidates = 2;
                p.sb_max_iterations = 5;
            }
            rk_milp_result res;
            rk_error err;
            ck_assert_int_eq(rk_milp_solve(lp, &p, &res, &err), RK_OK);
            ck_assert_int_eq(res.status, RK_MILP_OPTIMAL);
            ck_assert_msg(fabs(res.objective - best) < 1e-6, "trial %d (%s branching): solver %g, enumeration %g",
                          trial, rule[br], res.objective, best);
            rk_milp_result_free(&res);
        }
        rk_lp_free(lp);
    }
}
END_TEST

/* Columns tied by rows x_j - x_k = 0 are one column in the search
 * (bb_aggr.c): on random knapsacks whose items come in tied groups, with
 * duplicated rows (one with a looser bound), the optimum equals the
 * enumeration's; the solution, its pseudocosts and an incumbent handed in
 * are in the problem's own columns; ties whose bounds cannot meet leave the
 * problem infeasible. */
START_TEST(test_tied_columns_vs_enumeration) {
    unsigned long long seed = 23;
    for (int trial = 0; trial < 30; trial++) {
        int n = 8 + (int)(cov_rng(&seed) % 6);
        double a[14], c[14], b = 0;
        int grp[14];
        rk_lp *lp = rk_lp_new();
        for (int j = 0; j < n; j++) {
            c[j] = (double)(1 + cov_rng(&seed) % 40);
            a[j] = (double)(1 + cov_rng(&seed) % 60);
            b += a[j];
            grp[j] = j < 2 ? j : (int)(cov_rng(&seed) % (unsigned)j); /* tied to an earlier item (or itself) */
            ck_assert_int_eq(rk_lp_add_col(lp, NULL, c[j], 0, 1, 1), j);
        }
        for (int j = 0; j < n; j++)
            while (grp[grp[j]] != grp[j]) grp[j] = grp[grp[j]];
        b = floor(b * 0.45);
        rk_lp_set_maximize(lp, 1);
        for (int k = 0; k < 2; k++) { /* the same knapsack row twice, the second looser */
            int r = rk_lp_add_row(lp, NULL, -INFINITY, b + 7 * k);
            for (int j = 0; j < n; j++) rk_lp_set_coef(lp, r, j, a[j]);
        }
        int tied = 0;
        for (int j = 0; j < n; j++) {
            if (grp[j] == j) continue;
            int r = rk_lp_add_row(lp, NULL, 0, 0);
            double s = (trial & 1) ? 3.0 : -1.0; /* either sign, any scale */
            rk_lp_set_coef(lp, r, grp[j], s);
            rk_lp_set_coef(lp, r, j, -s);
            tied++;
        }
        double best = 0;
        for (unsigned long mask = 0; mask < (1ul << n); mask++) {
            int ok = 1;
            double w = 0, v = 0;
            for (int j = 0; j < n && ok; j++) {
                int in = (mask >> j) & 1;
                ok = in == (int)((mask >> grp[j]) & 1);
                if (in) {
                    w += a[j];
                    v += c[j];
                }
            }
            if (ok && w <= b && v > best) best = v;
        }
        rk_milp_params p = params_on(1);
        rk_milp_result res;
        rk_error err;
        ck_assert_int_eq(rk_milp_solve(lp, &p, &res, &err), RK_OK);
        ck_assert_int_eq(res.status, RK_MILP_OPTIMAL);
        ck_assert_msg(fabs(res.objective - best) < 1e-6, "trial %d (%d ties): solver %g, enumeration %g", trial, tied,
                      res.objective, best);
        ck_assert_int_eq(res.n, n);
        ck_assert_double_le(ilp_max_violation(lp, res.x, 1), 1e-9);
        ck_assert_int_eq(res.pseudocosts.n, n);
        for (int j = 0; j < n; j++)
            for (int d = 0; d < 2; d++) { /* tied columns: one decision, one pseudocost */
                ck_assert(res.pseudocosts.cnt[d][j] == res.pseudocosts.cnt[d][grp[j]]);
                ck_assert(res.pseudocosts.sum[d][j] == res.pseudocosts.sum[d][grp[j]]);
            }
        /* the optimum handed back in with a node limit of 1 comes back */
        p.incumbent = res.x;
        p.pseudocosts = &res.pseudocosts;
        p.node_limit = 1;
        rk_milp_result again;
        ck_assert_int_eq(rk_milp_solve(lp, &p, &again, &err), RK_OK);
        ck_assert(again.has_solution);
        ck_assert_double_eq_tol(again.objective, best, 1e-6);
        ck_assert_double_le(ilp_max_violation(lp, again.x, 1), 1e-9);
        rk_milp_result_free(&again);
        rk_milp_result_free(&res);
        if (tied) { /* a tied pair whose bounds cannot meet */
            int j = 0;
            while (grp[j] == j) j++;
            rk_lp_set_col_bounds(lp, j, 1, 1);
            rk_lp_set_col_bounds(lp, grp[j], 0, 0);
            p = params_on(1);
            ck_assert_int_eq(rk_milp_solve(lp, &p, &res, &err), RK_OK);
            ck_assert_int_eq(res.status, RK_MILP_INFEASIBLE);
            rk_milp_result_free(&res);
        }
        rk_lp_free(lp);
    }
}
END_TEST

/* The log callback (rk_milp_params.log): with verbose on, every line reaches
 * the caller's function, one line at a time without its newline, and nothing
 * is printed on stderr; rk_log_silent drops them all. */
typedef struct {
    int lines, info, detail, bad;
} log_count;

static void count_lines(void *user, rk_log_level level, const char *line) {
    log_count *lc = user;
    lc->lines++;
    lc->info += level == RK_LOG_INFO;
    lc->detail += level == RK_LOG_DETAIL;
    lc->bad += strchr(line, '\n') != NULL || strncmp(line, "milp: ", 6) != 0;
}

static long stderr_bytes_during(const rk_lp *lp, const rk_milp_params *p) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    rk_milp_result r = solve(lp, p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(r.status, RK_MILP_OPTIMAL);
    rk_milp_result_free(&r);
    fseek(tmp, 0, SEEK_END);
    long n = ftell(tmp);
    fclose(tmp);
    return n;
}

START_TEST(test_log_callback) {
    rk_lp *lp = read_miplib("p0201");
    rk_milp_params p = params_on(1);
    p.verbose = 2;
    /* default: the lines go to stderr */
    ck_assert_int_gt(stderr_bytes_during(lp, &p), 0);
    log_count lc = {0, 0, 0, 0};
    p.log.fn = count_lines;
    p.log.user = &lc;
    ck_assert_int_eq(stderr_bytes_during(lp, &p), 0);
    ck_assert_int_ge(lc.lines, 2);
    ck_assert_int_ge(lc.info, 2);     /* root LP and final lines */
    ck_assert_int_eq(lc.bad, 0);
    p.log.fn = rk_log_silent;
    p.log.user = NULL;
    ck_assert_int_eq(stderr_bytes_during(lp, &p), 0);
    rk_lp_free(lp);
}
END_TEST

/* A rematerialization MILP whose LP point rounds to no schedule unless each
 * fixing is propagated through the memory rows (continuous columns too): the
 * randomized rounding with propagation finds an incumbent at the root, and
 * the search proves the optimum (334) within a few nodes.  Without it the
 * search ran 140+ nodes with no incumbent at all. */
START_TEST(test_remat_root_incumbent) {
    rk_lp *lp = ilp_read_data_mps("remat", "remat_n24_B156.mps.gz");
    rk_milp_params p = params_on(1);
    p.node_limit = 60;
    rk_milp_result r = solve(lp, &p);
    ck_assert_msg(r.status == RK_MILP_OPTIMAL, "status %s after %ld nodes", rk_milp_status_name(r.status), r.nodes);
    ck_assert_double_eq_tol(r.objective, 334.0, 1e-6);
    rk_milp_result_free(&r);
    rk_lp_free(lp);
}
END_TEST

/* A tight-budget rematerialization MILP (n16_B92, optimum 240) whose
 * randomized rounding with propagation reaches a column that can take
 * neither value after a few hundred fixings, whatever the random stream:
 * fix-and-propagate with backjumping (bb_fixprop.c) finds a schedule at the
 * root, the same on 1 and 2 threads.  Without the backjumping the first
 * incumbent came after 1000 nodes. */
START_TEST(test_remat_backjump_incumbent) {
    rk_lp *lp = ilp_read_data_mps("remat", "remat_n16_B92.mps.gz");
    rk_milp_result r[2];
    for (int t = 0; t < 2; t++) {
        rk_milp_params p = params_on(t + 1);
        p.node_limit = 1;
        r[t] = solve(lp, &p);
        ck_assert_msg(r[t].has_solution, "no incumbent at the root (%s)", rk_milp_status_name(r[t].status));
        ck_assert_int_eq(r[t].status, RK_MILP_TIME_LIMIT);
        ck_assert(r[t].objective >= 240 - 1e-6);
        ck_assert(r[t].bound <= 240 + 1e-6);
    }
    ck_assert_double_eq(r[0].objective, r[1].objective);
    ck_assert_int_eq(r[0].iterations, r[1].iterations);
    for (int t = 0; t < 2; t++) rk_milp_result_free(&r[t]);
    rk_lp_free(lp);
}
END_TEST

int main(void) {
    n_inst = ilp_load_optima(inst_name, inst_opt, MAX_INST);
    Suite *s = suite_create("milp");
    TCase *toys = tcase_create("toys");
    tcase_set_timeout(toys, 120);
    tcase_add_test(toys, test_status_names);
    tcase_add_test(toys, test_log_callback);
    tcase_add_test(toys, test_remat_root_incumbent);
    tcase_add_test(toys, test_remat_backjump_incumbent);
    tcase_add_test(toys, test_infeasible_integer);
    tcase_add_test(toys, test_infeasible_lp);
    tcase_add_test(toys, test_unbounded);
    tcase_add_test(toys, test_maximize_general_integers);
    tcase_add_test(toys, test_incumbent_used);
    tcase_add_test(toys, test_node_limit_bound);
    tcase_add_test(toys, test_time_limit_no_incumbent);
    tcase_add_test(toys, test_pseudocosts_round_trip);
    tcase_add_test(toys, test_pseudocost_branching);
    tcase_add_test(toys, test_seed);
    tcase_add_test(toys, test_threads_identical);
    tcase_add_test(toys, test_reentrant_parallel);
    tcase_add_test(toys, test_cli);
    tcase_add_test(toys, test_regress_objective_constant);
    tcase_add_test(toys, test_cover_cuts_valid);
    tcase_add_test(toys, test_dive_quota);
    tcase_add_test(toys, test_knapsack_vs_enumeration);
    tcase_add_test(toys, test_tied_columns_vs_enumeration);
    suite_add_tcase(s, toys);
    TCase *mip = tcase_create("miplib3");
    tcase_set_timeout(mip, 600);
    tcase_add_loop_test(mip, test_miplib_instance, 0, n_inst > 0 ? n_inst : 1);
    suite_add_tcase(s, mip);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
