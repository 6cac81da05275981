/* rkmate_torch.c — the `rkmate-torch` program: the libtorch subcommands of
 * rkmate (trace, run, optimize), run by `rkmate` with argv[1] = the command.
 * Parses the command line, reads and writes chain and schedule files, replays
 * schedules with the simulator, and calls the C API of rk_exec.h. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rk_exec.h"
#include "rk_graph.h"
#include "rk_solve.h"

enum { OPT_INPUT = 1000, OPT_INPUT_FILE, OPT_DEVICE, OPT_QUIET, OPT_JSON, OPT_SEED, OPT_RUNS, OPT_CHAIN,
       OPT_ITERS, OPT_CHECK, OPT_LOSS, OPT_BUDGET, OPT_ALGO, OPT_HELP, OPT_VERIFY };

/* Options shared by trace / run / optimize. */
typedef struct {
    rk_exec_options ex;
    int quiet, json;
} common_opts;

static int parse_common(const char *cmd, int c, const char *arg, common_opts *co) {
    switch (c) {
    case OPT_INPUT:
        if (co->ex.n_inputs >= RK_EXEC_MAX_INPUTS)
            return cli_usage_error(cmd, "too many --input (at most %d)", RK_EXEC_MAX_INPUTS);
        co->ex.inputs[co->ex.n_inputs++] = arg;
        return 0;
    case OPT_INPUT_FILE: co->ex.input_file = arg; return 0;
    case OPT_DEVICE:
        if (strcmp(arg, "cpu") && strcmp(arg, "cuda") && strncmp(arg, "cuda:", 5))
            return cli_usage_error(cmd, "--device %s: expected cpu, cuda or cuda:N", arg);
        co->ex.device = arg;
        return 0;
    case OPT_QUIET: co->quiet = 1; return 0;
    case OPT_VERIFY: co->ex.verify = 1; return 0;
    case OPT_JSON: co->json = 1; return 0;
    case OPT_SEED: {
        long v;
        if (cli_parse_int(cmd, "--seed", arg, 0, LONG_MAX, &v)) return CLI_BADINPUT;
        co->ex.seed = (uint64_t)v;
        return 0;
    }
    case OPT_RUNS: {
        long v;
        if (cli_parse_int(cmd, "--runs", arg, 1, 1000, &v)) return CLI_BADINPUT;
        co->ex.measure_runs = (int)v;
        return 0;
    }
    }
    return -1;
}

#define COMMON_LONG_OPTS                                                                                 \
    {"input", required_argument, 0, OPT_INPUT}, {"input-file", required_argument, 0, OPT_INPUT_FILE},  \
        {"device", required_argument, 0, OPT_DEVICE}, {"quiet", no_argument, 0, OPT_QUIET},            \
        {"json", no_argument, 0, OPT_JSON}, {"seed", required_argument, 0, OPT_SEED},                  \
        {"runs", required_argument, 0, OPT_RUNS}, {"help", no_argument, 0, OPT_HELP},          \
        {"verify", no_argument, 0, OPT_VERIFY}

static void print_trace_stats(FILE *f, const rk_trace_stats *st, int json) {
    if (json) {
        fprintf(f,
                "{\"nodes_inlined\": %d, \"nodes_ops\": %d, \"nodes_dynamic\": %d, \"nodes_simplified\": %d, \"views\": %d, "
                "\"inplace\": %d, \"sizes\": %d, \"static\": %d, \"cheap\": %d, \"blocks\": %d, \"classes\": %d, "
                "\"forward_equal\": %s, \"max_forward_diff\": %.17g, \"seconds\": %.3f}\n",
                st->nodes_inlined, st->nodes_ops, st->nodes_dynamic, st->nodes_simplified, st->n_views, st->n_inplace,
                st->n_sizes, st->n_static, st->n_cheap, st->n_blocks, st->n_classes,
                st->forward_equal < 0 ? "null" : st->forward_equal ? "true" : "false",
                st->max_forward_diff, st->seconds);
    } else {
        fprintf(f,
                "traced: %d nodes (%d operations, %d on activations) -> %d after simplification (%d views, "
                "%d in-place, %d size, %d static, %d list/tuple); %d blocks, %d classes; forward %s; %.2f s\n",
                st->nodes_inlined, st->nodes_ops, st->nodes_dynamic, st->nodes_simplified, st->n_views, st->n_inplace,
                st->n_sizes, st->n_static, st->n_cheap, st->n_blocks, st->n_classes,
                st->forward_equal < 0 ? "not verified (--verify)" : st->forward_equal ? "bit-exact" : "DIFFERS",
                st->seconds);
    }
}

static int cmd_trace(int argc, char **argv) {
    const char *cmd = "trace";
    common_opts co;
    memset(&co, 0, sizeof co);
    co.ex.measure = 1;
    const char *out = NULL;
    static const struct option lo[] = {COMMON_LONG_OPTS, {"output", required_argument, 0, 'o'}, {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
        if (c == 'o') { out = optarg; continue; }
        if (c == OPT_HELP) {
            printf("usage: rkmate trace MODEL.pt (--input SHAPE:DTYPE [--input ...] | --input-file INPUTS.pt)\n"
                   "                    [--device cpu|cuda] [--seed N] [--runs N] [--verify] -o CHAIN.rkg [--quiet] [--json]\n\n"
                   "Load a TorchScript model (torch.jit.trace(...).save) or a torch.export program\n"
                   "(torch.export.save, MODEL.pt2), run it on example inputs (random\n"
                   "values of the given shapes and dtypes, int inputs in [0, 10), or the tensors of\n"
                   "--input-file: torch.save of a tensor or a list of tensors; --input, if also given, must\n"
                   "describe them), simplify its graph to one node per allocation, cut it into blocks, and\n"
                   "write the measured chain of CD-graphs.  --json prints the statistics on stdout.\n"
                   "--runs N: timed runs per node (median; default 3).  --verify: also run the plain module\n"
                   "and all blocks forward, and check the outputs are equal bit for bit.\n");
            return CLI_OK;
        }
        int r = parse_common(cmd, c, optarg, &co);
        if (r > 0) return r;
        if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate trace --help')");
    }
    if (optind + 1 != argc) return cli_usage_error(cmd, "expected one MODEL.pt (see 'rkmate trace --help')");
    if (!out) return cli_usage_error(cmd, "missing -o CHAIN.rkg");
    if (co.ex.n_inputs == 0 && !co.ex.input_file)
        return cli_usage_error(cmd, "missing --input SHAPE:DTYPE or --input-file INPUTS.pt");
    co.ex.model_path = argv[optind];
    if (access(co.ex.model_path, R_OK) != 0)
        return cli_usage_error(cmd, "%s: cannot read the model file", co.ex.model_path);
    if (cli_same_file(out, co.ex.model_path) || (co.ex.input_file && cli_same_file(out, co.ex.input_file)))
        return cli_usage_error(cmd, "-o %s would overwrite an input", out);
    co.ex.progress = cli_progress_wanted(co.quiet);
    rk_chain ch;
    rk_trace_stats st;
    rk_error err;
    err.msg[0] = 0;
    rk_status s = rk_exec_trace(&co.ex, &ch, &st, &err);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    s = rk_chain_write(out, &ch, &err);
    rk_chain_free(&ch);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    if (co.json) print_trace_stats(stdout, &st, 1);
    if (!co.quiet) {
        print_trace_stats(stderr, &st, 0);
        fprintf(stderr, "wrote %s\n", out);
    }
    return CLI_OK;
}

static void print_run(const rk_sim_result *sim, const rk_schedule *s, const rk_run_result *r, int json) {
    if (json) {
        printf("{\"predicted_peak\": %lld, \"measured_peak\": %lld, \"baseline_peak\": %lld, "
               "\"predicted_time\": %.3f, \"measured_time\": %.3f, \"baseline_time\": %.3f, ",
               (long long)sim->peak, (long long)r->measured_peak, (long long)r->baseline_peak, sim->time,
               r->measured_time, r->baseline_time);
        if (r->checked)
            printf("\"grads_equal\": %s, \"output_equal\": %s, \"max_abs_diff\": %.9g, \"max_rel_diff\": %.9g, ",
                   r->grads_equal ? "true" : "false", r->output_equal ? "true" : "false", (double)(float)r->max_abs_diff,
                   (double)(float)r->max_rel_diff);
        else
            printf("\"grads_equal\": null, \"max_abs_diff\": null, ");
        printf("\"budget\": %lld, \"algo\": \"%s\", \"loss\": %.17g, \"input_bytes\": %lld, \"ops\": %d}\n",
               (long long)s->budget, s->algo ? s->algo : "", r->loss, (long long)r->input_bytes, s->n_ops);
        return;
    }
    char a[32], b[32], c[32];
    printf("peak memory (activations): predicted %s, measured %s, plain step %s\n",
           rk_format_bytes(sim->peak, a, sizeof a), rk_format_bytes(r->measured_peak, b, sizeof b),
           rk_format_bytes(r->baseline_peak, c, sizeof c));
    printf("step time: predicted %.1f us, measured %.1f us, plain step %.1f us\n", sim->time, r->measured_time,
           r->baseline_time);
    if (r->checked)
        printf("check: gradients and output %s (max abs diff %.3g, max rel diff %.3g)\n",
               r->grads_equal ? "equal to the plain step bit for bit" : "DIFFER from the plain step",
               (double)(float)r->max_abs_diff, (double)(float)r->max_rel_diff);
}

/* The executor's options shared by run and optimize (--check, --loss,
 * --iters): 0 handled, -1 not one of them, else the exit code of an error. */
static int parse_run_opts(const char *cmd, int c, const char *arg, rk_run_options *ro) {
    long v;
    switch (c) {
    case OPT_CHECK: ro->check = 1; return 0;
    case OPT_LOSS:
        if (!strcmp(arg, "sum")) ro->loss = RK_LOSS_SUM;
        else if (!strcmp(arg, "mean")) ro->loss = RK_LOSS_MEAN;
        else return cli_usage_error(cmd, "--loss %s: expected sum or mean", arg);
        return 0;
    case OPT_ITERS:
        if (cli_parse_int(cmd, "--iters", arg, 1, 1000, &v)) return CLI_BADINPUT;
        ro->iters = (int)v;
        return 0;
    }
    return -1;
}

static int cmd_run(int argc, char **argv) {
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
                                       {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == OPT_HELP) {
            printf("usage: rkmate run MODEL.pt SCHEDULE.rks --chain CHAIN.rkg [--input SHAPE:DTYPE ...]\n"
                   "                  [--input-file INPUTS.pt] [--device cpu|cuda] [--seed N] [--iters N] [--check] [--json]\n"
                   "                  [--loss sum|mean]\n\n"
                   "Replay the schedule with the simulator (invalid schedules are refused), then run it as a\n"
                   "real training step (forward, loss = sum or mean of the output, backward) and the plain\n"
                   "PyTorch step in the same process; report peak activation memory and step time of both.\n"
                   "--check compares every parameter gradient and the output with the plain step.\n"
                   "Without --input or --input-file, the inputs, input file and seed recorded in the chain\n"
                   "are used.\n");
            return CLI_OK;
        }
        if (c == OPT_CHAIN) { chain_path = optarg; continue; }
        int r = parse_run_opts(cmd, c, optarg, &ro);
        if (r > 0) return r;
        if (r == 0) continue;
        r = parse_common(cmd, c, optarg, &co);
        if (r > 0) return r;
        if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate run --help')");
    }
    if (optind + 2 != argc) return cli_usage_error(cmd, "expected MODEL.pt SCHEDULE.rks (see 'rkmate run --help')");
    if (!chain_path) return cli_usage_error(cmd, "missing --chain CHAIN.rkg");
    co.ex.model_path = argv[optind];
    if (access(co.ex.model_path, R_OK) != 0)
        return cli_usage_error(cmd, "%s: cannot read the model file", co.ex.model_path);
    rk_error err;
    err.msg[0] = 0;
    rk_chain ch;
    rk_status s = rk_chain_read(chain_path, &ch, &err);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    /* No --input: take the inputs, input file and seed the chain was traced with
     * (its "model" text is "MODEL.pt --input SPEC ... [--input-file F] --seed N"). */
    char *model_text = NULL;
    if (co.ex.n_inputs == 0 && !co.ex.input_file && ch.model) {
        model_text = strdup(ch.model);
        char *save = NULL, *tok = model_text ? strtok_r(model_text, " ", &save) : NULL;
        while (tok && (tok = strtok_r(NULL, " ", &save))) {
            char *val = strtok_r(NULL, " ", &save);
            if (!val) break;
            if (!strcmp(tok, "--input") && co.ex.n_inputs < RK_EXEC_MAX_INPUTS) co.ex.inputs[co.ex.n_inputs++] = val;
            else if (!strcmp(tok, "--input-file") && !co.ex.input_file) co.ex.input_file = val;
            else if (!strcmp(tok, "--seed")) co.ex.seed = strtoull(val, NULL, 10);
        }
    }
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
    s = rk_simulate(&ch, &sc, &sim, &err);
    if (s != RK_OK) {
        rk_schedule_free(&sc);
        rk_chain_free(&ch);
        free(model_text);
        fprintf(stderr, "rkmate run: %s: the simulator refuses the schedule: %s\n", argv[optind + 1], err.msg);
        return cli_exit_code(s);
    }
    rk_run_result rr;
    s = rk_exec_run(&co.ex, &ch, &sc, &ro, &rr, &err);
    if (s == RK_OK) print_run(&sim, &sc, &rr, co.json);
    int code = s == RK_OK ? CLI_OK : cli_report(cmd, s, &err);
    if (s == RK_OK && ro.check && !rr.grads_equal) code = CLI_FAIL;
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    free(model_text);
    return code;
}

static int cmd_optimize(int argc, char **argv) {
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
        int r = parse_run_opts(cmd, c, optarg, &ro);
        if (r > 0) return r;
        if (r == 0) continue;
        r = parse_common(cmd, c, optarg, &co);
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
    print_run(&sim, &sc, &rr, co.json);
    if (ro.check && !rr.grads_equal) code = CLI_FAIL;
done:
    if (sv) rk_solver_free(sv);
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    return code;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: rkmate-torch trace|run|optimize ARGS... (normally run as 'rkmate trace ...')\n");
        return CLI_BADINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "trace")) return cmd_trace(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "optimize")) return cmd_optimize(argc - 1, argv + 1);
    fprintf(stderr, "rkmate-torch: unknown command '%s' (expected trace, run or optimize)\n", cmd);
    return CLI_BADINPUT;
}
