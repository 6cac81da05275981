/* cmd_milp.c — `rkmate milp`: read an MPS file (.gz too), solve it with
 * rkmate's own simplex / branch-and-bound, print the result (text or one
 * JSON object) and optionally write the solution (`name value` per column);
 * --debug-solution checks the search against a known solution. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rk_milp.h"

static void milp_usage(FILE *f) {
    fprintf(f,
            "usage: rkmate milp FILE.mps[.gz] [--lp] [--time-limit S] [--gap G] [--node-limit N]\n"
            "                   [--threads N] [--seed N] [--json] [-o SOLUTION] [--quiet] [--verbose]\n"
            "                   [--debug-solution FILE]\n"
            "  Solve a MILP (or with --lp its LP relaxation) given in fixed or free MPS.\n"
            "  --lp             solve the LP relaxation only\n"
            "  --time-limit S   stop after S seconds with the best solution and its bound\n"
            "  --gap G          relative gap to stop at (default 1e-6)\n"
            "  --node-limit N   stop after N branch-and-bound nodes\n"
            "  --threads N      threads (results are identical for any number)\n"
            "  --seed N         seed of the simplex's cost perturbation (default 0): another,\n"
            "                   equally valid search (same optimum, other nodes and time)\n"
            "  --json           print one JSON object: status, objective, bound, gap, nodes,\n"
            "                   iterations, time_s\n"
            "  -o SOLUTION      write 'name value' for every column (never over the input)\n"
            "  --quiet          no progress on stderr\n"
            "  --verbose        more progress (cut rounds, heuristics), even when stderr is not a terminal\n"
            "  --debug-solution FILE\n"
            "                   a known feasible solution ('name value' lines, the -o format;\n"
            "                   columns not named are 0): every cut, bound tightening, presolve\n"
            "                   step and pruned node is checked against it while it is better\n"
            "                   than the incumbent; the first step that cuts it off stops the\n"
            "                   solve with a message naming it (exit 1); see docs/milp.md\n"
            "exit status: 0 solved (optimal, unbounded or a limit reached), 3 infeasible,\n"
            "2 bad input, 1 other failure\n");
}

/* JSON number or null. */
static void milp_json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fprintf(f, "null");
}

static double milp_gap(const rk_milp_result *r) {
    if (!r->has_solution || !isfinite(r->objective) || !isfinite(r->bound)) return INFINITY;
    double g = fabs(r->objective - r->bound) / fmax(fabs(r->objective), 1e-10);
    if (r->objective == r->bound) g = 0;
    return g;
}

int rk_cmd_milp(int argc, char **argv) {
    const char *cmd = "milp";
    rk_milp_params p;
    rk_milp_params_default(&p);
    int json = 0, quiet = 0, verbose = 0;
    const char *out = NULL, *debug_path = NULL;
    static const struct option opts[] = {
        {"lp", no_argument, NULL, 'l'},
        {"time-limit", required_argument, NULL, 't'},
        {"gap", required_argument, NULL, 'g'},
        {"node-limit", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 'j'},
        {"seed", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'J'},
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'V'},
        {"debug-solution", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        long lv;
        double dv;
        switch (ch) {
        case 'l': p.lp_only = 1; break;
        case 't':
            if (cli_parse_double(cmd, "--time-limit", optarg, 0, 1e9, &dv)) return CLI_BADINPUT;
            p.time_limit = dv;
            break;
        case 'g':
            if (cli_parse_double(cmd, "--gap", optarg, 0, 1e9, &dv)) return CLI_BADINPUT;
            p.gap = dv;
            break;
        case 'n':
            if (cli_parse_int(cmd, "--node-limit", optarg, 1, 2000000000L, &lv)) return CLI_BADINPUT;
            p.node_limit = lv;
            break;
        case 'j':
            if (cli_parse_int(cmd, "--threads", optarg, 1, 4096, &lv)) return CLI_BADINPUT;
            p.threads = (int)lv;
            break;
        case 's':
            if (cli_parse_int(cmd, "--seed", optarg, 0, 2000000000L, &lv)) return CLI_BADINPUT;
            p.seed = (unsigned)lv;
            break;
        case 'J': json = 1; break;
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'V': verbose = 1; break;
        case 'D': debug_path = optarg; break;
        case 'h': milp_usage(stdout); return CLI_OK;
        case ':':
            return cli_usage_error(cmd, "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1) {
        return cli_usage_error(cmd, "expected exactly one MPS file, got %d (see rkmate milp --help)", argc - optind);
    }
    const char *path = argv[optind];
    if (out && (strcmp(out, path) == 0 || cli_same_file(out, path)))
        return cli_usage_error(cmd, "-o %s: refusing to write the solution over the input file", out);
    p.verbose = verbose && !quiet ? 2 : cli_progress_wanted(quiet);

    rk_error err;
    err.msg[0] = 0;
    rk_lp *lp = NULL;
    rk_status st = rk_mps_read(path, &lp, &err);
    if (st != RK_OK) return cli_report(cmd, st, &err);
    double *debug_x = NULL;
    if (debug_path) {
        st = rk_milp_read_solution(debug_path, lp, &debug_x, &err);
        if (st != RK_OK) {
            rk_lp_free(lp);
            return cli_report(cmd, st, &err);
        }
        p.debug_solution = debug_x;
    }
    rk_milp_result r;
    memset(&r, 0, sizeof r);
    st = rk_milp_solve(lp, &p, &r, &err);
    if (st != RK_OK) {
        int rc = cli_report(cmd, st, &err);
        if (json)
            printf("{\"status\": \"error\", \"objective\": null, \"bound\": null, \"gap\": null, \"nodes\": %ld, "
                   "\"iterations\": %ld, \"time_s\": %.6f}\n",
                   r.nodes, r.iterations, r.time_s);
        rk_milp_result_free(&r);
        rk_lp_free(lp);
        free(debug_x);
        return rc;
    }
    double gap = milp_gap(&r);
    double obj = r.has_solution ? r.objective : NAN;
    if (r.status == RK_MILP_UNBOUNDED) obj = NAN;
    if (json) {
        printf("{\"status\": \"%s\", \"objective\": ", rk_milp_status_name(r.status));
        milp_json_num(stdout, obj);
        printf(", \"bound\": ");
        milp_json_num(stdout, r.bound);
        printf(", \"gap\": ");
        milp_json_num(stdout, gap);
        printf(", \"nodes\": %ld, \"iterations\": %ld, \"time_s\": %.6f}\n", r.nodes, r.iterations, r.time_s);
    } else {
        printf("status      %s\n", rk_milp_status_name(r.status));
        if (isfinite(obj)) printf("objective   %.10g\n", obj);
        else printf("objective   -\n");
        if (isfinite(r.bound)) printf("bound       %.10g\n", r.bound);
        else printf("bound       %s\n", isnan(r.bound) ? "-" : (r.bound > 0 ? "inf" : "-inf"));
        if (isfinite(gap)) printf("gap         %.3g%%\n", 100 * gap);
        else printf("gap         -\n");
        printf("nodes       %ld\n", r.nodes);
        printf("iterations  %ld\n", r.iterations);
        printf("time_s      %.3f\n", r.time_s);
    }
    fflush(stdout);
    int rc = CLI_OK;
    if (out) {
        if (!r.has_solution || !r.x) {
            fprintf(stderr, "rkmate milp: no solution to write to %s (status %s)\n", out, rk_milp_status_name(r.status));
            rc = CLI_FAIL;
        } else {
            st = rk_milp_write_solution(out, lp, r.x, &err);
            if (st != RK_OK) rc = cli_report(cmd, st, &err);
        }
    }
    if (rc == CLI_OK && r.status == RK_MILP_INFEASIBLE) rc = CLI_INFEASIBLE;
    if (rc == CLI_OK && r.status == RK_MILP_ERROR) rc = CLI_FAIL;
    rk_milp_result_free(&r);
    rk_lp_free(lp);
    free(debug_x);
    return rc;
}
