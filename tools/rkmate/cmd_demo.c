/* cmd_demo.c — `rkmate demo`: the built-in GPT-like example chain solved at
 * a few budgets by rockmate, rotor and sqrt(n); every schedule is replayed
 * by the simulator and its simulated peak and time are what is printed. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rk_solve.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate demo [--layers N] [--batch N] [--seq N] [--width N] [--grid PxS] [--threads N] [--json]\n\n"
               "Builds the built-in GPT-like example chain (an embedding block, an attention and an MLP\n"
               "block per layer, a head block; sizes and times from a simple CPU model), and solves it at\n"
               "100 %%, 75 %%, 50 %% and 30 %% of the keep-everything peak and at the smallest budget\n"
               "rockmate accepts, with rockmate, rotor and sqrt(n).  Defaults: 6 layers, batch 4, seq 256,\n"
               "width 256, grid 10x10.\n");
}

int rk_cmd_demo(int argc, char **argv) {
    static const struct option opts[] = {{"layers", required_argument, 0, 'l'}, {"batch", required_argument, 0, 'b'},
                                         {"seq", required_argument, 0, 's'},    {"width", required_argument, 0, 'w'},
                                         {"grid", required_argument, 0, 'g'},   {"threads", required_argument, 0, 't'},
                                         {"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long layers = 6, batch = 4, seq = 256, width = 256, threads = 0;
    int gp = 10, gs = 10, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:b:s:w:g:t:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'l': if (cli_parse_int("demo", "--layers", optarg, 1, 1000, &layers)) return CLI_BADINPUT; break;
        case 'b': if (cli_parse_int("demo", "--batch", optarg, 1, 100000, &batch)) return CLI_BADINPUT; break;
        case 's': if (cli_parse_int("demo", "--seq", optarg, 1, 100000, &seq)) return CLI_BADINPUT; break;
        case 'w': if (cli_parse_int("demo", "--width", optarg, 1, 100000, &width)) return CLI_BADINPUT; break;
        case 't': if (cli_parse_int("demo", "--threads", optarg, 0, 1024, &threads)) return CLI_BADINPUT; break;
        case 'g':
            if (sscanf(optarg, "%dx%d", &gp, &gs) != 2 || gp < 1 || gs < 1 || gp > 1000 || gs > 1000)
                return cli_usage_error("demo", "--grid: expected PxS like 20x20, got '%s'", optarg);
            break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_BADINPUT;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_example(&ch, (int)layers, (int)batch, (int)seq, (int)width, &err);
    if (st) return cli_report("demo", st, &err);
    rk_schedule keep;
    if ((st = rk_schedule_keep_all(&ch, &keep, &err))) {
        rk_chain_free(&ch);
        return cli_report("demo", st, &err);
    }
    int64_t max_peak = keep.predicted_peak;
    rk_schedule_free(&keep);
    const rk_solve_algo algos[] = {RK_SOLVE_ROCKMATE, RK_SOLVE_ROTOR, RK_SOLVE_SQRT};
    rk_solver *sv[3] = {0};
    for (int a = 0; a < 3 && !st; a++) {
        rk_solve_params p;
        rk_solve_params_default(&p);
        p.algo = algos[a];
        p.dp.threads = (int)threads;
        p.cm.threads = (int)threads;
        p.cm.grid_peak = gp;
        p.cm.grid_save = gs;
        st = rk_solver_new(&ch, &p, &sv[a], &err);
    }
    int64_t min_rock = -1;
    if (!st) st = rk_solver_min_budget(sv[0], &min_rock, &err);
    if (st) {
        for (int a = 0; a < 3; a++) rk_solver_free(sv[a]);
        rk_chain_free(&ch);
        return cli_report("demo", st, &err);
    }
    int64_t budgets[5] = {max_peak, max_peak * 3 / 4, max_peak / 2, max_peak * 3 / 10, min_rock};
    const char *labels[5] = {"100%", "75%", "50%", "30%", "min"};
    char b1[32], b2[32];
    const rk_solver_info *info = rk_solver_get_info(sv[0]);
    if (json) printf("{\"chain\": \"%s\", \"keep_all_peak\": %lld, \"rows\": [", ch.model, (long long)max_peak);
    else {
        printf("%s\n%d blocks, %d classes; keep-everything peak %s, every node once %.1f ms\n", ch.model, ch.n_blocks,
               ch.n_classes, rk_format_bytes(max_peak, b1, sizeof b1), rk_chain_baseline_time(&ch) / 1000.0);
        printf("rockmate options: %d over %d classes from %d ILPs (%d budgets, %d infeasible) in %.2f s\n\n",
               info->n_options, ch.n_classes, info->cm.n_ilps, info->cm.n_budgets, info->cm.n_infeasible,
               info->options_time_s);
        printf("%-6s %12s  %-9s %12s %12s %10s %9s\n", "budget", "bytes", "algo", "sim. peak", "time (ms)", "overhead",
               "solve (s)");
    }
    int first = 1;
    for (int b = 0; b < 5; b++) {
        for (int a = 0; a < 3; a++) {
            rk_schedule s;
            rk_solve_result r;
            st = rk_solver_solve(sv[a], budgets[b], &s, &r, &err);
            if (st && st != RK_EINFEASIBLE) break;
            if (json) {
                printf("%s{\"label\": \"%s\", \"budget\": %lld, \"algo\": \"%s\", \"feasible\": %s", first ? "" : ", ",
                       labels[b], (long long)budgets[b], rk_solve_algo_name(algos[a]), st ? "false" : "true");
                if (!st)
                    printf(", \"peak\": %lld, \"time\": %.17g, \"overhead\": %.17g, \"solve_time_s\": %.6f",
                           (long long)r.sim.peak, r.sim.time, r.sim.overhead, r.solve_time_s);
                printf("}");
                first = 0;
            } else if (st) {
                printf("%-6s %12s  %-9s %12s\n", a ? "" : labels[b], a ? "" : rk_format_bytes(budgets[b], b1, sizeof b1),
                       rk_solve_algo_name(algos[a]), "infeasible");
            } else {
                printf("%-6s %12s  %-9s %12s %12.3f %9.2f%% %9.3f\n", a ? "" : labels[b],
                       a ? "" : rk_format_bytes(budgets[b], b1, sizeof b1), rk_solve_algo_name(algos[a]),
                       rk_format_bytes(r.sim.peak, b2, sizeof b2), r.sim.time / 1000.0,
                       fabs(r.sim.overhead) < 5e-7 ? 0.0 : 100.0 * r.sim.overhead,
                       r.solve_time_s);
            }
            if (!st) rk_schedule_free(&s);
            st = RK_OK;
        }
        if (st) break;
    }
    if (json && !st) printf("]}\n");
    for (int a = 0; a < 3; a++) rk_solver_free(sv[a]);
    rk_chain_free(&ch);
    return st ? cli_report("demo", st, &err) : CLI_OK;
}
