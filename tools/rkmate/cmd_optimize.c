/* cmd_optimize.c — `rkmate optimize`: trace + solve + simulate + run in one
 * command, reporting predicted and measured memory and time. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "torch_cli.h"

int rk_cmd_optimize(int argc, char **argv) {
    const char *cmd = "optimize";
    common_opts co;
    memset(&co, 0, sizeof co);
    co.ex.measure = 1;
    rk_run_options ro;
    memset(&ro, 0, sizeof ro);
    const char *algo_name = "rockmate", *budget_text = NULL, *sched_out = NULL, *chain_out = NULL;
    static const struct option lo[] = {COMMON_LONG_OPTS,
                                       {"budget", required_argument, 0, OPT_BUDGET},
                                       {"algo", required_argument, 0, OPT_ALGO},
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
            printf("usage: rkmate optimize MODEL.pt --input SHAPE:DTYPE [...] --budget B [--algo ALGO]\n"
                   "                       [--input-file INPUTS.pt] [--device cpu|cuda] [--seed N] [--runs N] [--iters N]\n"
                   "                       [--check]\n"
                   "                       [--loss sum|mean] [--json] [-o SCHEDULE.rks] [--chain-out CHAIN.rkg]\n\n"
                   "Trace the model, solve at the budget, replay the schedule with the simulator, run it as\n"
                   "a real training step beside the plain PyTorch step and report both.  B is bytes (800MB,\n"
                   "1.5GiB) or a percentage of the keep-everything peak of the traced chain (50%%).\n"
                   "ALGO: rockmate (default), rotor, sqrt, none, recompute-all, checkmate.\n");
            return CLI_OK;
        }
        if (c == 'o') { sched_out = optarg; continue; }
        if (c == OPT_CHAIN) { chain_out = optarg; continue; }
        if (c == OPT_BUDGET) { budget_text = optarg; continue; }
        if (c == OPT_ALGO) { algo_name = optarg; continue; }
        int r = torch_parse_run_opts(cmd, c, optarg, &ro);
        if (r > 0) return r;
        if (r == 0) continue;
        r = torch_parse_common(cmd, c, optarg, &co);
        if (r > 0) return r;
        if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate optimize --help')");
    }
    if (optind + 1 != argc) return cli_usage_error(cmd, "expected one MODEL.pt (see 'rkmate optimize --help')");
    if (co.ex.n_inputs == 0 && !co.ex.input_file)
        return cli_usage_error(cmd, "missing --input SHAPE:DTYPE or --input-file INPUTS.pt");
    if (!budget_text) return cli_usage_error(cmd, "missing --budget B (bytes, or a percentage such as 50%%)");
    int algo = rk_solve_algo_parse(algo_name);
    if (algo < 0)
        return cli_usage_error(cmd, "--algo: expected rockmate, rotor, sqrt, none, recompute-all or checkmate, got '%s'",
                               algo_name);
    double percent = -1;
    int64_t budget = -1;
    size_t bl = strlen(budget_text);
    if (bl > 1 && budget_text[bl - 1] == '%') {
        char *end;
        percent = strtod(budget_text, &end);
        if (end != budget_text + bl - 1 || !(percent > 0) || percent > 1000)
            return cli_usage_error(cmd, "--budget %s: expected a percentage in (0, 1000]", budget_text);
    } else if (cli_parse_bytes(cmd, "--budget", budget_text, &budget)) {
        return CLI_BADINPUT;
    }
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
    int code = CLI_OK;
    rk_solver *sv = NULL;
    rk_schedule sc;
    rk_schedule_init(&sc);
    if (chain_out && (s = rk_chain_write(chain_out, &ch, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    if (percent > 0) {
        rk_schedule keep;
        rk_schedule_init(&keep);
        rk_sim_result ks;
        s = rk_schedule_keep_all(&ch, &keep, &err);
        if (s == RK_OK) s = rk_simulate(&ch, &keep, &ks, &err);
        rk_schedule_free(&keep);
        if (s != RK_OK) {
            code = cli_report(cmd, s, &err);
            goto done;
        }
        budget = (int64_t)((double)ks.peak * percent / 100.0);
    }
    rk_solve_params par;
    rk_solve_params_default(&par);
    par.algo = (rk_solve_algo)algo;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    par.dp.threads = nproc > 0 ? (int)nproc : 1; /* libtorch changes the OpenMP default */
    par.cm.threads = par.dp.threads;
    if (co.ex.progress) fprintf(stderr, "rkmate optimize: solving %s at %lld bytes...\r", algo_name, (long long)budget);
    s = rk_solver_new(&ch, &par, &sv, &err);
    rk_solve_result sr;
    if (s == RK_OK) s = rk_solver_solve(sv, budget, &sc, &sr, &err);
    if (co.ex.progress) fprintf(stderr, "%70s\r", "");
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
        printf("algorithm %s, budget %s, predicted overhead %+.1f %%\n", rk_solve_algo_name(par.algo),
               rk_format_bytes(budget, b, sizeof b), 100.0 * sr.overhead);
    }
    sc.budget = budget;
    torch_print_run(&sim, &sc, &rr, co.json);
    if (ro.check && !rr.grads_equal) code = CLI_FAIL;
done:
    if (sv) rk_solver_free(sv);
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    return code;
}
