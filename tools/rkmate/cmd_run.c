/* cmd_run.c — `rkmate run`: replay a schedule with the simulator, then run
 * it as a real training step beside the plain PyTorch step (rk_exec_run). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "torch_cli.h"

int rk_cmd_run(int argc, char **argv) {
    const char *cmd = "run";
    common_opts co;
    memset(&co, 0, sizeof co);
    rk_run_options ro;
    memset(&ro, 0, sizeof ro);
    const char *chain_path = NULL;
    static const struct option lo[] = {COMMON_LONG_OPTS,
                                       {"chain", required_argument, 0, OPT_CHAIN},
                                       {"iters", required_argument, 0, OPT_ITERS},
                                       {"check", no_argument, 0, OPT_CHECK},
                                       {"loss", required_argument, 0, OPT_LOSS},
                                       {"memory-log", required_argument, 0, OPT_MEMORY_LOG},
                                       {0, 0, 0, 0}};
    const char *memory_log = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == OPT_HELP) {
            printf("usage: rkmate run MODEL.pt SCHEDULE.rks --chain CHAIN.rkg [--input SHAPE:DTYPE ...]\n"
                   "                  [--input-file INPUTS.pt] [--device cpu|cuda] [--seed N] [--iters N] [--check] [--json]\n"
                   "                  [--loss sum|mean] [--memory-cap BYTES] [--memory-log FILE] [--runs N] [--verify]\n"
                   "                  [--quiet]\n\n"
                   "Replay the schedule with the simulator (invalid schedules are refused), then run it as a\n"
                   "real training step (forward, loss = sum or mean of the output, backward) and the plain\n"
                   "PyTorch step in the same process; report peak activation memory and step time of both.\n"
                   "--check compares every parameter gradient and the output with the plain step.\n"
                   "Without --input or --input-file, the inputs, input file and seed recorded in the chain\n"
                   "are used.  --memory-cap BYTES (CUDA): cap the device memory the process may take,\n"
                   "plain step included (as torch.cuda.set_per_process_memory_fraction).\n"
                   "--memory-log FILE: write the schedule's ops, each with its predicted and measured bytes\n"
                   "(while it runs, and held after it; tab-separated), and name the first op measured above\n"
                   "its prediction.\n");
            return CLI_OK;
        }
        if (c == OPT_CHAIN) { chain_path = optarg; continue; }
        if (c == OPT_MEMORY_LOG) { memory_log = optarg; continue; }
        int r = torch_parse_run_opts(cmd, c, optarg, &ro);
        if (r > 0) return r;
        if (r == 0) continue;
        r = torch_parse_common(cmd, c, optarg, &co);
        if (r > 0) return r;
        if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate run --help')");
    }
    if (optind + 2 != argc) return cli_usage_error(cmd, "expected MODEL.pt SCHEDULE.rks (see 'rkmate run --help')");
    if (!chain_path) return cli_usage_error(cmd, "missing --chain CHAIN.rkg");
    co.ex.model_path = argv[optind];
    if (memory_log) {
        const char *ins[] = {argv[optind], argv[optind + 1], chain_path, co.ex.input_file};
        if (cli_check_output(cmd, memory_log, ins, 4)) return CLI_BADINPUT;
        rk_error e; /* before the step runs: a log that cannot be written is known now */
        if (rk_check_output_file(memory_log, &e) != RK_OK)
            return cli_usage_error(cmd, "--memory-log: cannot write it: %s", e.msg);
    }
    if (access(co.ex.model_path, R_OK) != 0)
        return cli_usage_error(cmd, "%s: cannot read the model file", co.ex.model_path);
    rk_error err;
    err.msg[0] = 0;
    rk_chain ch;
    rk_status s = rk_chain_read(chain_path, &ch, &err);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    /* No --input: the inputs, input file and seed the chain was traced with */
    char *model_text = NULL;
    if (co.ex.n_inputs == 0 && !co.ex.input_file) model_text = torch_inputs_from_chain(&ch, &co.ex, 0);
    if (co.ex.n_inputs == 0 && !co.ex.input_file) {
        free(model_text);
        rk_chain_free(&ch);
        return cli_usage_error(cmd, "missing --input SHAPE:DTYPE or --input-file (and the chain does not say)");
    }
    rk_schedule sc;
    rk_schedule_init(&sc);
    s = rk_schedule_read(argv[optind + 1], &ch, &sc, &err);
    if (s != RK_OK) {
        rk_chain_free(&ch);
        free(model_text);
        return cli_report(cmd, s, &err);
    }
    rk_sim_result sim;
    int64_t *logs = memory_log ? calloc((size_t)sc.n_ops * 4 + 1, sizeof *logs) : NULL;
    int64_t *pred_step = logs, *pred_live = logs ? logs + sc.n_ops : NULL;
    if (logs) {
        ro.op_step = logs + 2 * (size_t)sc.n_ops;
        ro.op_live = logs + 3 * (size_t)sc.n_ops;
    }
    s = memory_log && !logs ? rk_fail(&err, RK_ENOMEM, "out of memory")
                            : rk_simulate_ops(&ch, &sc, &sim, pred_step, pred_live, &err);
    if (s != RK_OK) {
        rk_schedule_free(&sc);
        rk_chain_free(&ch);
        free(model_text);
        fprintf(stderr, "rkmate run: %s: the simulator refuses the schedule: %s\n", argv[optind + 1], err.msg);
        free(logs);
        return cli_exit_code(s);
    }
    rk_run_result rr;
    s = rk_exec_run(&co.ex, &ch, &sc, &ro, &rr, &err);
    int first_above = -1;
    if (s == RK_OK && memory_log)
        s = torch_write_memory_log(memory_log, &ch, &sc, pred_step, pred_live, ro.op_step, ro.op_live, 64,
                                   &first_above, &err);
    if (s == RK_OK) torch_print_run(&sim, &sc, &rr, co.json);
    if (s == RK_OK && memory_log && !co.json && !co.quiet) {
        printf("memory log: %s", memory_log);
        if (first_above >= 0) {
            const rk_op *o = &sc.ops[first_above];
            printf(" (first op measured above its prediction: op %d, %s '%s' of block %d: %lld bytes, predicted "
                   "%lld)",
                   first_above, o->kind == RK_OP_RUN ? "run" : "forget", torch_op_node_name(&ch, o), o->block,
                   (long long)ro.op_step[first_above], (long long)pred_step[first_above]);
        }
        printf("\n");
    }
    free(logs);
    int code = s == RK_OK ? CLI_OK : cli_report(cmd, s, &err);
    if (s == RK_OK && ro.check && !rr.grads_equal) code = CLI_FAIL;
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    free(model_text);
    return code;
}
