/* cmd_optimize.c — `rkmate optimize`: trace + solve + simulate + run in one
 * command, reporting predicted and measured memory and time. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "solve_cli.h"
#include "torch_cli.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


static void usage(void) {
    printf("usage: rkmate optimize MODEL.pt (--input SHAPE:DTYPE [--input ...] | --input-file INPUTS.pt)\n"
           "                       --budget B|P%% [--algo ALGO] [solve options] [--device cpu|cuda[:N]] [--seed N]\n"
           "                       [--memory-cap BYTES] [--runs N] [--verify] [--no-split-bwd] [--iters N] [--check] [--loss sum|mean]\n"
           "                       [--json] [--quiet]\n"
           "                       [-o SCHEDULE.rks] [--chain-out CHAIN.rkg]\n\n"
           "Trace the model, solve at the budget, replay the schedule with the simulator, run it as\n"
           "a real training step beside the plain PyTorch step and report both.\n\n"
           "Model and inputs (as `rkmate trace`):\n"
           "  --input SHAPE:DTYPE  an input (4x64:int64, 2x3x32x32:float32), random from --seed\n"
           "  --input-file F.pt    inputs saved with torch.save (a tensor or a list of tensors)\n"
           "  --device DEV         cpu (default), cuda or cuda:N\n"
           "  --memory-cap BYTES   CUDA: cap the device memory the process may take (as\n"
           "                       torch.cuda.set_per_process_memory_fraction); more fails: out of memory\n"
           "  --seed N             seed of random inputs and random ops (default 0)\n"
           "  --runs N             timing runs per node when tracing (default 3)\n"
           "  --verify             check that the blocks reproduce the module's output bit for bit\n"
           "  --no-split-bwd       keep every backward one node (default: a convolution's or Linear's\n"
           "                       backward is two, weight part then input part, where bit-exact)\n\n"
           "Solve (as `rkmate solve`):\n");
    fputs(SOLVE_HELP, stdout);
    printf("\nRun (as `rkmate run`):\n"
           "  --iters N            measured steps after one warm-up (default 3)\n"
           "  --check              compare gradients and output with the plain step bit for bit (exit 1 if not)\n"
           "  --loss sum|mean      loss = output.sum() (default) or .mean(); several outputs: over all\n\n"
           "Output:\n"
           "  --json               one JSON object on stdout, also when no schedule fits (exit 3)\n"
           "  -o SCHEDULE.rks      write the schedule\n"
           "  --chain-out F.rkg    write the traced chain\n"
           "  --quiet              no progress lines (shown on a terminal: tracing, classes, ILPs, elapsed)\n\n"
           "Exit codes: 0 ok, 1 failure (or --check found a difference), 2 bad input, 3 no schedule fits.\n");
}

int rk_cmd_optimize(int argc, char **argv) {
    const char *cmd = "optimize";
    common_opts co;
    memset(&co, 0, sizeof co);
    co.ex.measure = 1;
    rk_run_options ro;
    memset(&ro, 0, sizeof ro);
    solve_cli so;
    solve_cli_init(&so);
    const char *sched_out = NULL, *chain_out = NULL;
    static const struct option lo[] = {COMMON_LONG_OPTS,
                                       NO_SPLIT_BWD_OPT,
                                       SOLVE_LONG_OPTS,
                                       {"iters", required_argument, 0, OPT_ITERS},
                                       {"check", no_argument, 0, OPT_CHECK},
                                       {"loss", required_argument, 0, OPT_LOSS},
                                       {"chain-out", required_argument, 0, OPT_CHAIN},
                                       {"output", required_argument, 0, 'o'},
                                       {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
        if (c == OPT_HELP) {
            usage();
            return CLI_OK;
        }
        if (c == 'o') { sched_out = optarg; continue; }
        if (c == OPT_CHAIN) { chain_out = optarg; continue; }
        int r = solve_cli_option(cmd, c, optarg, &so);
        if (r > 0) return r;
        if (r == 0) continue;
        r = torch_parse_run_opts(cmd, c, optarg, &ro);
        if (r > 0) return r;
        if (r == 0) continue;
        r = torch_parse_common(cmd, c, optarg, &co);
        if (r > 0) return r;
        if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate optimize --help')");
    }
    if (optind + 1 != argc) return cli_usage_error(cmd, "expected one MODEL.pt (see 'rkmate optimize --help')");
    if (co.ex.n_inputs == 0 && !co.ex.input_file)
        return cli_usage_error(cmd, "missing --input SHAPE:DTYPE or --input-file INPUTS.pt");
    int r0 = solve_cli_check(cmd, &so);
    if (r0) return r0;
    co.ex.model_path = argv[optind];
    if (access(co.ex.model_path, R_OK) != 0)
        return cli_usage_error(cmd, "%s: cannot read the model file", co.ex.model_path);
    if ((sched_out && cli_same_file(sched_out, co.ex.model_path)) || (chain_out && cli_same_file(chain_out, co.ex.model_path)))
        return cli_usage_error(cmd, "an output would overwrite the model file");
    co.ex.progress = cli_progress_wanted(co.quiet);
    rk_error err;
    err.msg[0] = 0;
    rk_chain ch;
    rk_trace_stats ts;
    rk_status s = rk_exec_trace(&co.ex, &ch, &ts, &err);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    torch_cli_rnn_warning(cmd, &ts);
    torch_cli_split_warning(cmd, &ts);
    torch_cli_nondeterminism_note(stderr, "rkmate optimize: note", ts.nondeterministic_kernels);
    int code = CLI_OK;
    rk_solver *sv = NULL;
    solve_progress *pg = NULL;
    rk_schedule sc;
    rk_schedule_init(&sc);
    int64_t budget = -1;
    if (chain_out && (s = rk_chain_write(chain_out, &ch, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    if ((code = solve_cli_budget(cmd, &so, &ch, &budget))) goto done;
    rk_solve_params par;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    solve_cli_params(&so, nproc > 0 ? (int)nproc : 1, &par); /* libtorch changes the OpenMP default */
    double t0 = now_s();
    pg = solve_progress_start("rkmate optimize", co.ex.progress, &so, &ch, &par);
    s = rk_solver_new(&ch, &par, &sv, &err);
    rk_solve_result sr;
    if (s == RK_OK) s = rk_solver_solve(sv, budget, &sc, &sr, &err);
    solve_progress_end(pg);
    if (s == RK_EINFEASIBLE) {
        code = solve_cli_infeasible(cmd, co.json, rk_solve_algo_name(par.algo), budget, &ch, sv, now_s() - t0, &err, 0,
                                    solve_cli_whole_graph_s(&par, &sr));
        goto done;
    }
    if (s != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    rk_sim_result sim;
    if ((s = rk_simulate(&ch, &sc, &sim, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    if (sched_out && (s = rk_schedule_write(sched_out, &ch, &sc, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    rk_run_result rr;
    s = rk_exec_run(&co.ex, &ch, &sc, &ro, &rr, &err);
    if (s != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    if (!co.json) {
        char b[32];
        printf("model %s: %d blocks, %d classes (%d nodes after simplification), traced in %.2f s\n",
               co.ex.model_path, ts.n_blocks, ts.n_classes, ts.nodes_simplified, ts.seconds);
        printf("algorithm %s%s, budget %s, predicted overhead %+.1f %%\n", rk_solve_algo_name(par.algo),
               sr.whole_graph == 1   ? " (no plan over the blocks fits: whole-graph Checkmate's schedule)"
               : sr.whole_graph == 2 ? " (whole-graph Checkmate's schedule, cheaper than the block plan's)"
                                     : "",
               rk_format_bytes(budget, b, sizeof b), 100.0 * sr.overhead);
    }
    sc.budget = budget;
    torch_print_run(&sim, &sc, &rr, co.json);
    if (ro.check && !rr.grads_equal) code = CLI_FAIL;
done:
    if (sv) rk_solver_free(sv);
    solve_progress_free(pg);
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    return code;
}
