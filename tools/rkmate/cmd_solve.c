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
#include "peak_explain.h"
#include "solve_cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rkmate solve CHAIN.rkg --budget B|P%% [--algo ALGO] [--slots N] [--threads N] [--grid PxS]\n"
            "                    [--full-grid] [--grid-work N] [--grid-time S] [--time-limit S] [--whole-graph S]\n"
            "                    [--export-mps DIR]\n"
            "                    [--builtin-options] [--no-fallback]\n"
            "                    [--verbose] [--json] [-o SCHEDULE.rks] [--quiet]\n\n"
            "Finds the fastest schedule of the chain's forward and backward whose peak memory (every\n"
            "data node in memory, the chain inputs included) stays within B bytes, replays it with the\n"
            "simulator and prints its peak, time and overhead.\n\n");
    fputs(SOLVE_HELP, f);
    fprintf(f,
            "  --json             one JSON object on stdout, also when no schedule fits (min_budget: the\n"
            "                     smallest budget with a known schedule; min_budget_lower_bound: no\n"
            "                     schedule fits below it; floor_node and floor_cause: the node that\n"
            "                     sets the floor and its largest part: inputs, outputs, temporaries,\n"
            "                     weight_gradient_temporaries (of a node computing weight gradients\n"
            "                     only) or grad_accumulation, a weight gradient added into .grad in place)\n"
            "  --explain          what is in memory at the schedule's peak: the node running, each data\n"
            "                     node with its bytes, read or made by it or held across it, and the\n"
            "                     node's temporary; when no schedule fits, the same for the smallest\n"
            "                     schedule (JSON: peak_explain, floor_explain)\n"
            "  -o FILE            write the schedule (.rks)\n"
            "  --quiet            no progress lines (shown on a terminal: classes, ILPs solved, elapsed)\n\n"
            "Exit codes: 0 ok, 1 failure, 2 bad input, 3 no schedule fits the budget (the message gives\n"
            "the smallest budget that works).\n");
}

#define json_num(k, v) solve_cli_json_num(stdout, k, v)
#define json_str(s) solve_cli_json_str(stdout, s)

int rk_cmd_solve(int argc, char **argv) {
    static const struct option lopts[] = {SOLVE_LONG_OPTS,
                                          {"json", no_argument, 0, 'j'},
                                          {"output", required_argument, 0, 'o'},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"explain", no_argument, 0, 'e'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *cmd = "solve", *out_path = NULL;
    solve_cli so;
    solve_cli_init(&so);
    int json = 0, quiet = 0, explain = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jo:qh", lopts, NULL)) != -1) {
        int r = solve_cli_option(cmd, c, optarg, &so);
        if (r > 0) return r;
        if (r == 0) continue;
        switch (c) {
        case 'j': json = 1; break;
        case 'o': out_path = optarg; break;
        case 'q': quiet = 1; break;
        case 'e': explain = 1; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    int r0 = solve_cli_check(cmd, &so);
    if (r0) return r0;
    const char *chain_path = argv[optind];
    if (out_path && cli_same_file(out_path, chain_path))
        return cli_usage_error(cmd, "-o %s is the input chain; refusing to overwrite it", out_path);
    int progress = cli_progress_wanted(quiet);
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(chain_path, &ch, &err);
    if (st) return cli_report(cmd, st, &err);
    int64_t budget;
    if ((r0 = solve_cli_budget(cmd, &so, &ch, &budget))) {
        rk_chain_free(&ch);
        return r0;
    }
    long slots = so.slots;
    int rc = CLI_OK;
    rk_solver *sv = NULL;
    solve_progress *pg = NULL;
    rk_schedule s;
    rk_schedule_init(&s);
    rk_solve_params par;
    solve_cli_params(&so, 0, &par);
    double t0 = omp_get_wtime();
    pg = solve_progress_start("rkmate solve", progress, &so, &ch, &par);
    st = rk_solver_new(&ch, &par, &sv, &err);
    if (st) {
        solve_progress_end(pg);
        rc = cli_report(cmd, st, &err);
        goto done;
    }
    rk_solve_result res;
    st = rk_solver_solve(sv, budget, &s, &res, &err);
    double solve_time = omp_get_wtime() - t0;
    solve_progress_end(pg);
    if (st == RK_EINFEASIBLE) {
        rc = solve_cli_infeasible(cmd, json, rk_solve_algo_name(par.algo), budget, &ch, sv, solve_time, &err, explain,
                                  solve_cli_whole_graph_s(&par, &res));
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
        printf("\"simulated_peak\": %lld, \"plain_peak\": %lld, ", (long long)res.sim.peak, (long long)ch.plain_peak);
        solve_cli_print_model_memory(stdout, ch.param_bytes, ch.param_grad_bytes, ch.buffer_bytes, 1);
        json_num("simulated_time", res.sim.time);
        json_num("options_time_s", info->options_time_s);
        if (par.algo == RK_SOLVE_ROCKMATE)
            printf("\"whole_graph\": %s, \"whole_graph_why\": %s, ", res.whole_graph ? "true" : "false",
                   res.whole_graph == 1 ? "\"no block plan fits\"" : res.whole_graph == 2 ? "\"cheaper than the block plan\"" : "null");
        if (par.algo == RK_SOLVE_CHECKMATE || res.whole_graph) {
            /* gap and bound: against the proven bound of the Checkmate model */
            json_num("gap", res.checkmate_gap);
            json_num("bound", res.checkmate_bound);
            printf("\"optimal\": %s, \"source\": ", res.checkmate_optimal ? "true" : "false");
            json_str(res.checkmate_source ? res.checkmate_source : "?");
            printf(", ");
        }
        if (par.algo == RK_SOLVE_ROCKMATE && par.checkmate_options)
            printf("\"grid_ilps\": %d, \"grid_ilps_time_limited\": %d, \"grid_ilps_skipped\": %d, \"grid_nodes\": %ld, \"grid_work\": %ld, ",
                   info->cm.n_ilps, info->cm.n_timeout, info->cm.n_skipped, info->cm.nodes, info->cm.work);
        if (explain) {
            printf("\"peak_explain\": ");
            if ((st = peak_explain(stdout, &ch, &s, 1, &err))) {
                rc = cli_report(cmd, st, &err);
                goto done;
            }
            printf(", ");
        }
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
        if (res.whole_graph == 1)
            printf("whole graph   no plan over the blocks' options fits: whole-graph Checkmate's schedule "
                   "(--whole-graph %g s)\n", par.whole_graph_time);
        else if (res.whole_graph == 2)
            printf("whole graph   whole-graph Checkmate's schedule, cheaper than the block plan's "
                   "(--whole-graph %g s)\n", par.whole_graph_time);
        if (par.algo == RK_SOLVE_CHECKMATE || res.whole_graph) {
            if (res.checkmate_optimal) printf("checkmate     proven optimal (from %s)\n", res.checkmate_source);
            else if (isfinite(res.checkmate_gap))
                printf("checkmate     gap %.2f %% to the proven bound %.3f us (schedule from %s)\n",
                       100.0 * res.checkmate_gap, res.checkmate_bound, res.checkmate_source);
            else printf("checkmate     no proven bound (schedule from %s)\n", res.checkmate_source);
        }
        if (res.n_forwards > 0) printf("forwards      %ld block forwards for %d blocks\n", res.n_forwards, ch.n_blocks);
        if (par.algo == RK_SOLVE_ROCKMATE && par.checkmate_options)
            printf("grid ILPs     %d solved, %ld B&B nodes (%d stopped by their node or time limit, %d not started: "
                   "the --grid-time box)\n",
                   info->cm.n_ilps, info->cm.nodes, info->cm.n_timeout, info->cm.n_skipped);
        solve_cli_print_model_memory(stdout, ch.param_bytes, ch.param_grad_bytes, ch.buffer_bytes, 0);
        printf("solve time    %.3f s (options %.3f s)\n", solve_time, info->options_time_s);
        if (out_path) printf("written       %s (%d ops)\n", out_path, s.n_ops);
        if (explain && (st = peak_explain(stdout, &ch, &s, 0, &err))) rc = cli_report(cmd, st, &err);
    }
done:
    rk_schedule_free(&s);
    rk_solver_free(sv);
    solve_progress_free(pg);
    rk_chain_free(&ch);
    return rc;
}
