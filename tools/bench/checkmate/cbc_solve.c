/* cbc_solve.c — run the CBC command-line solver on an rk_lp (via MPS) and read
 * its solution file back (benchmark / development only). */
#include "cbc_solve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

rk_status cbc_solve_file(const char *mps, const char *sol, int threads, double time_limit, const rk_lp *lp,
                         rk_milp_result *res, double *wall, rk_error *err) {
    memset(res, 0, sizeof *res);
    char cmd[8192];
    unlink(sol);
    int n = snprintf(cmd, sizeof cmd, "cbc '%s' -threads %d", mps, threads > 0 ? threads : 1);
    if (time_limit > 0) n += snprintf(cmd + n, sizeof cmd - (size_t)n, " -sec %g", time_limit);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " -solve -solu '%s' -quit > /dev/null 2>&1", sol);
    double t0 = now_s();
    int rc = system(cmd);
    if (wall) *wall = now_s() - t0;
    (void)rc;
    FILE *f = fopen(sol, "r");
    if (!f) return rk_fail(err, RK_EFAIL, "cbc: no solution file %s (command: %s)", sol, cmd);
    char line[4096];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return rk_fail(err, RK_EFAIL, "cbc: empty solution file %s", sol);
    }
    int nc = rk_lp_num_cols(lp);
    res->n = nc;
    res->bound = -INFINITY;
    if (strstr(line, "Infeasible") || strstr(line, "infeasible")) {
        res->status = RK_MILP_INFEASIBLE;
        fclose(f);
        return RK_OK;
    }
    int optimal = strncmp(line, "Optimal", 7) == 0;
    res->x = calloc((size_t)nc + 1, sizeof(double));
    if (!res->x) {
        fclose(f);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    int any = 0;
    while (fgets(line, sizeof line, f)) {
        int idx;
        char name[512];
        double v;
        char *p = line;
        if (*p == '*' && p[1] == '*') p += 2;
        if (sscanf(p, "%d %511s %lf", &idx, name, &v) == 3 && idx >= 0 && idx < nc) {
            res->x[idx] = v;
            any = 1;
        }
    }
    fclose(f);
    (void)any;
    double obj = rk_lp_get_obj_const(lp);
    for (int j = 0; j < nc; j++) obj += rk_lp_get_col_obj(lp, j) * res->x[j];
    res->objective = obj;
    res->has_solution = 1;
    res->status = optimal ? RK_MILP_OPTIMAL : RK_MILP_TIME_LIMIT;
    if (optimal) res->bound = obj;
    return RK_OK;
}

rk_status cbc_solve(void *vctx, const char *tag, const rk_lp *lp, const rk_milp_params *mp, rk_milp_result *res,
                    rk_error *err) {
    cbc_ctx *c = vctx;
    char mps[4096], sol[4096];
    snprintf(mps, sizeof mps, "%s/%s.mps", c->workdir, tag);
    snprintf(sol, sizeof sol, "%s/%s.sol", c->workdir, tag);
    rk_status r = rk_mps_write(mps, lp, err);
    if (r) return r;
    double w = 0;
    r = cbc_solve_file(mps, sol, c->threads, mp->time_limit, lp, res, &w, err);
    #pragma omp atomic
    c->total_s += w;
    #pragma omp atomic
    c->runs++;
    return r;
}
