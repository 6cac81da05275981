/* milp_solve.c — example consumer of the installed MILP API (rk_milp.h):
 * read an LP/MILP in MPS format (fixed or free, .gz read as well), solve it
 * with rkmate's own simplex + branch-and-bound, print the result.
 *
 * Build against an installed rkmate:
 *   cc milp_solve.c $(pkg-config --cflags --libs rkmate) -o milp_solve
 *   cc -static milp_solve.c $(pkg-config --cflags --libs --static rkmate) -o milp_solve
 * Run:
 *   ./milp_solve [-v] p0033.mps.gz [TIME_LIMIT_SECONDS]
 * Prints one line per item (status, objective, bound, nodes, iterations, the
 * number of columns and of nonzero values of the solution); exit status 0 when
 * the solve ends (whatever its status), 2 for a bad argument or file, 1 for a
 * failure of the solver.  With -v the solver's progress lines are routed
 * through a log callback (rk_milp_params.log) to stderr, each prefixed with
 * the program's name and a level letter; without it they are silenced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_milp.h"

/* The embedding program decides where the solver's log lines go. */
static void log_line(void *user, rk_log_level level, const char *line) {
    const char letter[] = {'I', 'D', 'W'};
    fprintf(stderr, "%s [%c] %s\n", (const char *)user, letter[level <= RK_LOG_WARNING ? level : 0], line);
}

int main(int argc, char **argv) {
    int verbose = argc > 1 && !strcmp(argv[1], "-v");
    const char *prog = argv[0];
    argc -= verbose;
    argv += verbose;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s [-v] FILE.mps [TIME_LIMIT_SECONDS]\n", prog);
        return 2;
    }
    rk_milp_params par;
    rk_milp_params_default(&par);
    if (argc == 3) {
        char *end;
        par.time_limit = strtod(argv[2], &end);
        if (end == argv[2] || *end || !(par.time_limit > 0)) {
            fprintf(stderr, "%s: time limit: expected a positive number of seconds, got '%s'\n", prog, argv[2]);
            return 2;
        }
    }
    par.threads = 1;
    par.verbose = verbose;
    par.log.fn = verbose ? log_line : rk_log_silent;
    par.log.user = (void *)prog;

    rk_error err = {{0}};
    rk_lp *lp = NULL;
    rk_status st = rk_mps_read(argv[1], &lp, &err);
    if (st != RK_OK) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        return st == RK_EINPUT ? 2 : 1;
    }
    printf("problem %d rows %d columns %d integer\n", rk_lp_num_rows(lp), rk_lp_num_cols(lp),
           rk_lp_num_integers(lp));

    rk_milp_result res;
    st = rk_milp_solve(lp, &par, &res, &err);
    if (st != RK_OK) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        rk_lp_free(lp);
        return 1;
    }
    printf("status %s\n", rk_milp_status_name(res.status));
    if (res.has_solution) {
        int nonzero = 0;
        for (int j = 0; j < res.n; j++)
            if (res.x[j] != 0) nonzero++;
        printf("objective %.10g\n", res.objective);
        printf("solution %d columns %d nonzero\n", res.n, nonzero);
    }
    printf("bound %.10g\n", res.bound);
    printf("nodes %ld\n", res.nodes);
    printf("iterations %ld\n", res.iterations);
    rk_milp_result_free(&res);
    rk_lp_free(lp);
    return 0;
}
