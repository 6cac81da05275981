/* cmd_solve.c — `rkmate solve CHAIN.rkg --budget B --algo ALGO`: find a
 * schedule of the whole chain under the memory budget (rk-Rotor, Rotor,
 * sqrt(n), keep-everything, recompute-everything), replay it with the
 * simulator, report it and optionally write it as a .rks file. */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "rk_dp.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rkmate solve CHAIN.rkg --budget B [--algo ALGO] [--slots N] [--threads N] [--json]\n"
            "                    [-o SCHEDULE.rks] [--quiet]\n\n"
            "Finds the fastest schedule of the chain's forward and backward whose peak memory (every\n"
            "data node in memory, the chain inputs included) stays within B bytes, replays it with the\n"
            "simulator and prints its peak, time and overhead.\n\n"
            "  --budget B      memory budget: bytes or with a unit (800MB, 1.5GiB)\n"
            "  --algo ALGO     rockmate (default): rk-Rotor over the block options {none, keep all, asap}\n"
            "                  rotor: the same DP with Rotor's options {none, keep all}\n"
            "                  sqrt: sqrt(n) checkpointing; none: keep everything (no recomputation);\n"
            "                  recompute-all: keep only the input, recompute before each backward\n"
            "  --slots N       memory slots of the DP (default 500); sizes are rounded up to slots\n"
            "  --threads N     OpenMP threads for the DP (default: all)\n"
            "  --json          one JSON object on stdout\n"
            "  -o FILE         write the schedule (.rks)\n"
            "  --quiet         no progress lines\n\n"
            "Exit codes: 0 ok, 1 failure, 2 bad input, 3 no schedule fits the budget (the message gives\n"
            "the smallest budget that works).\n");
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) || stat(b, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void json_num(const char *key, double v, int last) {
    if (isfinite(v)) printf("\"%s\": %.17g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

int rk_cmd_solve(int argc, char **argv) {
    static const struct option lopts[] = {{"budget", required_argument, 0, 'b'}, {"algo", required_argument, 0, 'a'},
                                          {"slots", required_argument, 0, 's'},  {"threads", required_argument, 0, 't'},
                                          {"json", no_argument, 0, 'j'},         {"output", required_argument, 0, 'o'},
                                          {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *cmd = "solve", *out_path = NULL, *algo_name = "rockmate";
    int64_t budget = -1;
    int json = 0, quiet = 0, c;
    long slots = 500, threads = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:a:s:t:jo:qh", lopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (cli_parse_bytes(cmd, "--budget", optarg, &budget)) return CLI_BADINPUT;
            break;
        case 'a': algo_name = optarg; break;
        case 's':
            if (cli_parse_int(cmd, "--slots", optarg, 1, 100000000, &slots)) return CLI_BADINPUT;
            break;
        case 't':
            if (cli_parse_int(cmd, "--threads", optarg, 1, 4096, &threads)) return CLI_BADINPUT;
            break;
        case 'j': json = 1; break;
        case 'o': out_path = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    if (budget < 0) return cli_usage_error(cmd, "--budget is required (bytes or with a unit, e.g. 800MB)");
    int algo = rk_dp_algo_parse(algo_name);
    if (algo < 0)
        return cli_usage_error(cmd, "--algo: expected rockmate, rotor, sqrt, none or recompute-all, got '%s'",
                               algo_name);
    const char *chain_path = argv[optind];
    if (out_path && same_file(out_path, chain_path))
        return cli_usage_error(cmd, "-o %s is the input chain; refusing to overwrite it", out_path);

    int progress = cli_progress_wanted(quiet);
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(chain_path, &ch, &err);
    if (st) return cli_report(cmd, st, &err);
    int rc = CLI_OK;
    rk_dp_options opts = {0};
    rk_dp_costs costs = {0};
    rk_dp_plan plan = {0};
    rk_schedule s;
    rk_schedule_init(&s);
    rk_dp_params par;
    rk_dp_params_default(&par);
    par.slots = (int)slots;
    par.threads = (int)threads;
    double t0 = omp_get_wtime();
    if (progress) fprintf(stderr, "rkmate solve: measuring block options...\r");
    st = algo == RK_DP_ROCKMATE ? rk_dp_options_default(&ch, &opts, &err) : rk_dp_options_rotor(&ch, &opts, &err);
    if (!st) st = rk_dp_costs_build(&ch, &opts, &costs, &err);
    if (st) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    if (progress) fprintf(stderr, "rkmate solve: %s on %d blocks, %ld slots...      \r", algo_name, ch.n_blocks, slots);
    rk_dp_result res;
    st = rk_dp_solve(&costs, (rk_dp_algo)algo, budget, &par, &plan, &res, &err);
    double solve_time = omp_get_wtime() - t0;
    if (progress) fprintf(stderr, "%60s\r", "");
    if (st) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    double baseline = rk_chain_baseline_time(&ch);
    char b1[32], b2[32];
    if (!res.feasible) {
        int64_t minb = -1;
        st = rk_dp_algo_min_budget(&costs, (rk_dp_algo)algo, &par, &minb, &err);
        if (st) {
            rc = cli_report(cmd, st, &err);
            goto done;
        }
        if (json) {
            printf("{\"algo\": \"%s\", \"budget\": %lld, \"feasible\": false, \"min_budget\": %lld, ",
                   rk_dp_algo_name((rk_dp_algo)algo), (long long)budget, (long long)minb);
            json_num("baseline_time", baseline, 0);
            json_num("solve_time_s", solve_time, 1);
            printf("}\n");
        }
        fprintf(stderr,
                "rkmate solve: no %s schedule fits in %lld bytes (%s); the smallest budget that works is %lld bytes "
                "(%s)\n",
                rk_dp_algo_name((rk_dp_algo)algo), (long long)budget, rk_format_bytes(budget, b1, sizeof b1),
                (long long)minb, rk_format_bytes(minb, b2, sizeof b2));
        rc = CLI_INFEASIBLE;
        goto done;
    }
    st = rk_dp_plan_build(&ch, &opts, &costs, &plan, &s, &err);
    if (st) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    rk_schedule_set_algo(&s, rk_dp_algo_name((rk_dp_algo)algo));
    s.budget = budget;
    rk_sim_result sim;
    st = rk_simulate(&ch, &s, &sim, &err);
    if (st) {
        rk_error e2 = err;
        rk_fail(&err, RK_EFAIL, "internal error: the %s schedule does not replay: %s", algo_name, e2.msg);
        rc = cli_report(cmd, RK_EFAIL, &err);
        goto done;
    }
    if (sim.peak > budget || sim.peak > s.predicted_peak ||
        fabs(sim.time - s.predicted_time) > 1e-9 * (fabs(sim.time) + 1)) {
        rk_fail(&err, RK_EFAIL,
                "internal error: the %s schedule replays with peak %lld and time %.17g; predicted %lld and %.17g "
                "(budget %lld)",
                algo_name, (long long)sim.peak, sim.time, (long long)s.predicted_peak, s.predicted_time,
                (long long)budget);
        rc = cli_report(cmd, RK_EFAIL, &err);
        goto done;
    }
    if (out_path && (st = rk_schedule_write(out_path, &ch, &s, &err))) {
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    double overhead = sim.baseline_time > 0 ? sim.time / sim.baseline_time - 1.0 : 0.0;
    if (json) {
        printf("{\"algo\": \"%s\", \"budget\": %lld, \"feasible\": true, \"predicted_peak\": %lld, ",
               rk_dp_algo_name((rk_dp_algo)algo), (long long)budget, (long long)s.predicted_peak);
        json_num("predicted_time", s.predicted_time, 0);
        json_num("baseline_time", sim.baseline_time, 0);
        json_num("overhead", overhead, 0);
        json_num("solve_time_s", solve_time, 0);
        printf("\"simulated_peak\": %lld, ", (long long)sim.peak);
        json_num("simulated_time", sim.time, 0);
        printf("\"source\": \"%s\", \"forwards\": %ld, \"blocks\": %d, \"slots\": %d, \"slot_bytes\": %lld, "
               "\"table_bytes\": %zu, \"threads\": %d, \"ops\": %d, \"output\": ",
               res.source, res.n_forwards, ch.n_blocks, res.slots, (long long)res.unit, res.table_bytes,
               threads > 0 ? (int)threads : omp_get_max_threads(), s.n_ops);
        if (out_path) {
            putchar('"');
            for (const char *p = out_path; *p; p++) {
                if (*p == '"' || *p == '\\') putchar('\\');
                if ((unsigned char)*p < 0x20) printf("\\u%04x", (unsigned char)*p);
                else putchar(*p);
            }
            putchar('"');
        } else {
            printf("null");
        }
        printf("}\n");
    } else {
        printf("algorithm     %s (%s%s)\n", rk_dp_algo_name((rk_dp_algo)algo), res.source,
               strcmp(res.source, "dp") ? " plan" : ", rk-Rotor table");
        printf("budget        %lld bytes (%s)\n", (long long)budget, rk_format_bytes(budget, b1, sizeof b1));
        printf("peak memory   %lld bytes (%s), simulated\n", (long long)sim.peak, rk_format_bytes(sim.peak, b2, sizeof b2));
        printf("time          %.3f us (every node once: %.3f us; overhead %+.2f %%)\n", sim.time, sim.baseline_time,
               100.0 * overhead);
        printf("forwards      %ld block forwards for %d blocks\n", res.n_forwards, ch.n_blocks);
        if (res.table_bytes)
            printf("table         %d slots of %lld bytes, %zu bytes, filled in %.3f s\n", res.slots, (long long)res.unit,
                   res.table_bytes, res.fill_time_s);
        printf("solve time    %.3f s\n", solve_time);
        if (out_path) printf("written       %s (%d ops)\n", out_path, s.n_ops);
    }
done:
    rk_schedule_free(&s);
    rk_dp_plan_free(&plan);
    rk_dp_costs_free(&costs);
    rk_dp_options_free(&opts);
    rk_chain_free(&ch);
    return rc;
}
