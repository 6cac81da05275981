/* cmd_solve.c — `rkmate solve CHAIN.rkg --budget B --algo ALGO`: find a
 * schedule of the whole chain under the memory budget (rockmate = rk-Rotor
 * over rk-Checkmate's block options, rotor, sqrt(n), keep-everything,
 * recompute-everything) through the solve pipeline (src/solve), which
 * replays it with the simulator; report it and optionally write it as .rks. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "rk_solve.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rkmate solve CHAIN.rkg --budget B [--algo ALGO] [--slots N] [--threads N] [--json]\n"
            "                    [-o SCHEDULE.rks] [--grid PxS] [--full-grid] [--grid-time S] [--builtin-options] [--no-fallback] [--quiet]\n\n"
            "Finds the fastest schedule of the chain's forward and backward whose peak memory (every\n"
            "data node in memory, the chain inputs included) stays within B bytes, replays it with the\n"
            "simulator and prints its peak, time and overhead.\n\n"
            "  --budget B         memory budget: bytes or with a unit (800MB, 1.5GiB)\n"
            "  --algo ALGO        rockmate (default): rk-Rotor over each block's options (rk-Checkmate's\n"
            "                     budget grid + keep all, asap, none)\n"
            "                     rotor: rk-Rotor with Rotor's options {none, keep all}\n"
            "                     sqrt: sqrt(n) checkpointing; none: keep everything (no recomputation);\n"
            "                     recompute-all: keep only the input, recompute before each backward;\n"
            "                     checkmate: whole-graph Checkmate ILP (small chains), started from the\n"
            "                     best cheap schedule (rk-Rotor, sqrt(n), greedy rematerialization); with\n"
            "                     --time-limit it returns the best schedule found and its proven gap\n"
            "  --slots N          memory slots of the DP (default 500); sizes are rounded up to slots\n"
            "  --threads N        OpenMP threads (default: all)\n"
            "  --grid PxS         rk-Checkmate budget grid (default 20x20)\n"
            "  --full-grid        rockmate: solve every point of every class's grid (by default only the\n"
            "                     points near the options rk-Rotor uses at this budget; docs/ilp.md)\n"
            "  --grid-time S      rockmate: seconds for the grid's ILPs in all (default 6; 0: no limit);\n"
            "                     past it the search stops with the options found\n"
            "  --time-limit S     seconds per ILP (rockmate's grid) or for the whole ILP (checkmate)\n"
            "  --export-mps DIR   write every ILP solved as MPS into DIR (named by class and budget)\n"
            "  --builtin-options  rockmate without rk-Checkmate: options {none, keep all, asap}\n"
            "  --no-fallback      rockmate/rotor: the DP's plan only (by default the keep-all, sqrt(n) and\n"
            "                     recompute-all plans are also tried in exact bytes, against slot rounding)\n"
            "  --verbose          log the ILPs (checkmate: its incumbents and the MILP's progress) to stderr\n"
            "  --json             one JSON object on stdout (min_budget: the smallest budget with a\n"
            "                     known schedule; min_budget_lower_bound: no schedule fits below it)\n"
            "  -o FILE            write the schedule (.rks)\n"
            "  --quiet            no progress lines\n\n"
            "Exit codes: 0 ok, 1 failure, 2 bad input, 3 no schedule fits the budget (the message gives\n"
            "the smallest budget that works).\n");
}

static void json_num(const char *key, double v) {
    if (isfinite(v)) printf("\"%s\": %.17g, ", key, v);
    else printf("\"%s\": null, ", key);
}

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

int rk_cmd_solve(int argc, char **argv) {
    static const struct option lopts[] = {
        {"budget", required_argument, 0, 'b'}, {"algo", required_argument, 0, 'a'},
        {"slots", required_argument, 0, 's'},  {"threads", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},         {"output", required_argument, 0, 'o'},
        {"quiet", no_argument, 0, 'q'},        {"grid", required_argument, 0, 'g'},
        {"builtin-options", no_argument, 0, 'B'}, {"no-fallback", no_argument, 0, 'F'},
        {"time-limit", required_argument, 0, 'T'}, {"export-mps", required_argument, 0, 'E'},
        {"verbose", no_argument, 0, 'v'},      {"help", no_argument, 0, 'h'},
        {"full-grid", no_argument, 0, 'G'},    {"grid-time", required_argument, 0, 'X'},
        {0, 0, 0, 0}};
    const char *cmd = "solve", *out_path = NULL, *algo_name = "rockmate", *export_dir = NULL;
    double time_limit = -1, grid_time = -1;
    int64_t budget = -1;
    int json = 0, quiet = 0, verbose = 0, builtin = 0, fallback = 1, full_grid = 0, gp = -1, gs = -1, c;
    long slots = 500, threads = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:a:s:t:jo:qg:BFT:E:vhGX:", lopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (cli_parse_bytes(cmd, "--budget", optarg, &budget)) return CLI_BADINPUT;
            break;
        case 'a': algo_name = optarg; break;
        case 's':
            if (cli_parse_int(cmd, "--slots", optarg, 1, 10000000, &slots)) return CLI_BADINPUT;
            break;
        case 't':
            if (cli_parse_int(cmd, "--threads", optarg, 1, 4096, &threads)) return CLI_BADINPUT;
            break;
        case 'g':
            if (sscanf(optarg, "%dx%d", &gp, &gs) != 2 || gp < 1 || gs < 1 || gp > 1000 || gs > 1000)
                return cli_usage_error(cmd, "--grid: expected PxS like 20x20, got '%s'", optarg);
            break;
        case 'B': builtin = 1; break;
        case 'G': full_grid = 1; break;
        case 'X':
            if (cli_parse_double(cmd, "--grid-time", optarg, 0, 1e9, &grid_time)) return CLI_BADINPUT;
            break;
        case 'T':
            if (cli_parse_double(cmd, "--time-limit", optarg, 0, 1e9, &time_limit)) return CLI_BADINPUT;
            break;
        case 'E': export_dir = optarg; break;
        case 'F': fallback = 0; break;
        case 'j': json = 1; break;
        case 'o': out_path = optarg; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    if (budget < 0) return cli_usage_error(cmd, "--budget is required (bytes or with a unit, e.g. 800MB)");
    if (budget == 0) return cli_usage_error(cmd, "--budget must be a positive number of bytes");
    int algo = rk_solve_algo_parse(algo_name);
    if (algo < 0)
        return cli_usage_error(cmd, "--algo: expected rockmate, rotor, sqrt, none, recompute-all or checkmate, got '%s'",
                               algo_name);
    const char *chain_path = argv[optind];
    if (out_path && cli_same_file(out_path, chain_path))
        return cli_usage_error(cmd, "-o %s is the input chain; refusing to overwrite it", out_path);

    if (export_dir) {
        struct stat sb;
        if (stat(export_dir, &sb) != 0) {
            if (mkdir(export_dir, 0755) != 0)
                return cli_usage_error(cmd, "--export-mps: cannot create directory '%s': %s", export_dir,
                                       strerror(errno));
        } else if (!S_ISDIR(sb.st_mode)) {
            return cli_usage_error(cmd, "--export-mps: '%s' exists and is not a directory", export_dir);
        }
    }
    int progress = cli_progress_wanted(quiet);
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(chain_path, &ch, &err);
    if (st) return cli_report(cmd, st, &err);
    int rc = CLI_OK;
    rk_solver *sv = NULL;
    rk_schedule s;
    rk_schedule_init(&s);
    rk_solve_params par;
    rk_solve_params_default(&par);
    par.algo = (rk_solve_algo)algo;
    par.dp.slots = (int)slots;
    par.dp.threads = (int)threads;
    par.dp.fallback = fallback;
    par.cm.threads = (int)threads;
    if (gp > 0) {
        par.cm.grid_peak = gp;
        par.cm.grid_save = gs;
    }
    if (builtin) par.checkmate_options = 0;
    par.full_grid = full_grid;
    if (grid_time >= 0) par.grid_time_box = grid_time;
    if (time_limit >= 0) par.cm.time_limit = time_limit;
    par.cm.export_dir = export_dir;
    par.cm.verbose = verbose;
    double t0 = omp_get_wtime();
    if (progress) fprintf(stderr, "rkmate solve: preparing %s on %d blocks...\r", algo_name, ch.n_blocks);
    st = rk_solver_new(&ch, &par, &sv, &err);
    if (st) {
        if (progress) fprintf(stderr, "%70s\r", "");
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    if (progress) fprintf(stderr, "rkmate solve: %s on %d blocks, %ld slots...          \r", algo_name, ch.n_blocks,
                          slots);
    rk_solve_result res;
    st = rk_solver_solve(sv, budget, &s, &res, &err);
    double solve_time = omp_get_wtime() - t0;
    if (progress) fprintf(stderr, "%70s\r", "");
    if (st == RK_EINFEASIBLE) {
        int64_t minb = -1, lb = -1;
        rk_error e2;
        if (rk_solver_min_budget(sv, &minb, &e2)) minb = -1;
        if (rk_solver_min_budget_bound(sv, &lb, &e2)) lb = -1;
        if (json) {
            /* min_budget: the smallest budget with a known schedule;
             * min_budget_lower_bound: proven, no schedule fits below it */
            printf("{\"algo\": \"%s\", \"budget\": %lld, \"feasible\": false, \"min_budget\": %lld, "
                   "\"min_budget_lower_bound\": %lld, ",
                   rk_solve_algo_name(par.algo), (long long)budget, (long long)minb, (long long)lb);
            json_num("baseline_time", rk_chain_baseline_time(&ch));
            printf("\"solve_time_s\": %.17g}\n", solve_time);
        }
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    if (st) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    if (out_path && (st = rk_schedule_write(out_path, &ch, &s, &err))) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    const rk_solver_info *info = rk_solver_get_info(sv);
    double overhead = res.overhead;
    if (fabs(overhead) < 1e-12) overhead = 0; /* summation-order noise */
    if (json) {
        printf("{\"algo\": \"%s\", \"budget\": %lld, \"feasible\": true, \"predicted_peak\": %lld, ",
               rk_solve_algo_name(par.algo), (long long)budget, (long long)res.predicted_peak);
        json_num("predicted_time", res.predicted_time);
        json_num("baseline_time", res.baseline_time);
        json_num("overhead", overhead);
        json_num("solve_time_s", solve_time);
        printf("\"simulated_peak\": %lld, ", (long long)res.sim.peak);
        json_num("simulated_time", res.sim.time);
        json_num("options_time_s", info->options_time_s);
        if (par.algo == RK_SOLVE_CHECKMATE) {
            /* gap and bound: against the proven bound of the Checkmate model */
            json_num("gap", res.checkmate_gap);
            json_num("bound", res.checkmate_bound);
            printf("\"optimal\": %s, \"source\": ", res.checkmate_optimal ? "true" : "false");
            json_str(res.checkmate_source ? res.checkmate_source : "?");
            printf(", ");
        }
        if (par.algo == RK_SOLVE_ROCKMATE && par.checkmate_options)
            printf("\"grid_ilps\": %d, \"grid_ilps_time_limited\": %d, \"grid_ilps_skipped\": %d, ", info->cm.n_ilps,
                   info->cm.n_timeout, info->cm.n_skipped);
        printf("\"options\": %d, \"forwards\": %ld, \"blocks\": %d, \"slots\": %ld, \"ops\": %d, \"output\": ",
               info->n_options, res.n_forwards, ch.n_blocks, slots, s.n_ops);
        if (out_path) json_str(out_path);
        else printf("null");
        printf("}\n");
    } else {
        char b1[32], b2[32];
        printf("algorithm     %s (%d block options over %d classes)\n", rk_solve_algo_name(par.algo), info->n_options,
               ch.n_classes);
        printf("budget        %lld bytes (%s)\n", (long long)budget, rk_format_bytes(budget, b1, sizeof b1));
        printf("peak memory   %lld bytes (%s), simulated (predicted %lld)\n", (long long)res.sim.peak,
               rk_format_bytes(res.sim.peak, b2, sizeof b2), (long long)res.predicted_peak);
        printf("time          %.3f us (every node once: %.3f us; overhead %+.2f %%)\n", res.sim.time,
               res.baseline_time, 100.0 * overhead);
        if (par.algo == RK_SOLVE_CHECKMATE) {
            if (res.checkmate_optimal) printf("checkmate     proven optimal (from %s)\n", res.checkmate_source);
            else if (isfinite(res.checkmate_gap))
                printf("checkmate     gap %.2f %% to the proven bound %.3f us (schedule from %s)\n",
                       100.0 * res.checkmate_gap, res.checkmate_bound, res.checkmate_source);
            else printf("checkmate     no proven bound (schedule from %s)\n", res.checkmate_source);
        }
        if (res.n_forwards > 0) printf("forwards      %ld block forwards for %d blocks\n", res.n_forwards, ch.n_blocks);
        if (par.algo == RK_SOLVE_ROCKMATE && par.checkmate_options)
            printf("grid ILPs     %d solved (%d stopped by their time limit, %d not started: the --grid-time box)\n",
                   info->cm.n_ilps, info->cm.n_timeout, info->cm.n_skipped);
        printf("solve time    %.3f s (options %.3f s)\n", solve_time, info->options_time_s);
        if (out_path) printf("written       %s (%d ops)\n", out_path, s.n_ops);
    }
done:
    rk_schedule_free(&s);
    rk_solver_free(sv);
    rk_chain_free(&ch);
    return rc;
}
