/* highs_solve.c — runs tools/bench/highs_run.py (RK_HIGHS_RUN, set by meson)
 * under a Python with highspy on one MPS file and reads its JSON line. */
#define _POSIX_C_SOURCE 200809L
#include "highs_solve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after "key": in a JSON line, NAN when null or absent. */
static double json_num(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    p += strlen(pat);
    if (strncmp(p, "null", 4) == 0) return NAN;
    return strtod(p, NULL);
}

rk_status highs_solve_file(const char *python, const char *mps, double time_limit, rk_milp_result *res, double *secs,
                           rk_error *err) {
    memset(res, 0, sizeof *res);
    res->status = RK_MILP_ERROR;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %g 2>/dev/null", python, RK_HIGHS_RUN, mps, time_limit);
    FILE *f = popen(cmd, "r");
    if (!f) return rk_fail(err, RK_EFAIL, "cannot run %s", cmd);
    char line[1024], last[1024] = "";
    while (fgets(line, sizeof line, f))
        if (line[0] == '{') snprintf(last, sizeof last, "%s", line);
    int rc = pclose(f);
    if (rc != 0 || !last[0]) return rk_fail(err, RK_EFAIL, "HiGHS run failed (exit %d): %s", rc, cmd);
    static const struct {
        const char *name;
        rk_milp_status st;
    } names[] = {{"\"optimal\"", RK_MILP_OPTIMAL},
                 {"\"infeasible\"", RK_MILP_INFEASIBLE},
                 {"\"unbounded\"", RK_MILP_UNBOUNDED},
                 {"\"time_limit\"", RK_MILP_TIME_LIMIT}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strstr(last, names[k].name)) res->status = names[k].st;
    double obj = json_num(last, "objective");
    res->has_solution = !isnan(obj);
    res->objective = obj;
    *secs = json_num(last, "time_s");
    return RK_OK;
}
