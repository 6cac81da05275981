/* cmd_train.c — `rkmate train`: many training steps with a schedule (or the
 * plain PyTorch step, --plain) and a libtorch optimizer, through the training
 * session of rk_exec.h.  Reads the model, chain and schedule (replayed by the
 * simulator first), prints per step the loss, the step time and the measured
 * activation peak (a progress bar on a terminal, or one JSON line per step
 * with --json), and saves the trained model atomically with --save. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rk_exec.h"
#include "rk_graph.h"
#include "solve_cli.h"
#include "torch_cli.h"

enum { T_STEPS = 1200, T_OPTIM, T_LR, T_WD, T_MOMENTUM, T_DATA, T_SAVE, T_PLAIN };

static void usage(void) {
    printf("usage: rkmate train MODEL.pt (SCHEDULE.rks | --plain) --chain CHAIN.rkg [--steps N]\n"
           "                    [--optimizer sgd|adam|adamw] [--lr X] [--weight-decay X] [--momentum X]\n"
           "                    [--data FILE.npy ... | --data random] [--loss sum|mean] [--save OUT.pt]\n"
           "                    [--input SHAPE:DTYPE ... | --input-file INPUTS.pt] [--seed N] [--device cpu|cuda]\n"
           "                    [--memory-cap BYTES] [--json] [--quiet]\n\n"
           "Train the model for N steps (default 10): each step runs forward and backward as the\n"
           "schedule says (replayed by the simulator first; --plain: the plain PyTorch step instead),\n"
           "then the optimizer (default adam, --lr 1e-3, --weight-decay 0, SGD's --momentum 0) steps\n"
           "the parameters.  The loss is the sum or mean (default) of the model's output (a tuple,\n"
           "list or dict: of its floating-point outputs joined, both ways alike).  The generator\n"
           "is seeded once with --seed, so a schedule's run and a --plain run give equal\n"
           "losses and parameters bit for bit (BatchNorm statistics and dropout included).\n"
           "--data FILE.npy, once per model input: numpy.save of an array of shape (K, *input shape)\n"
           "and the input's dtype (little-endian, C order); step i reads item i mod K.  --data random\n"
           "(the default): random floating-point inputs drawn from the seed and the step number;\n"
           "integer and boolean inputs (token ids, masks, labels, offsets) are the example's, whose\n"
           "ranges and structure random values would break.\n"
           "Per step: loss, time, measured peak activation memory (as 'rkmate run'); on a terminal\n"
           "a progress bar; --json: one JSON line per step, then a summary line with the hashes of\n"
           "the parameters and buffers.  --save writes the trained model (TorchScript) atomically.\n"
           "Without --input or --input-file, the inputs the chain was traced with are used.\n"
           "--memory-cap BYTES (CUDA): cap the device memory the process may take (parameters,\n"
           "optimizer state and activations; as torch.cuda.set_per_process_memory_fraction): a step\n"
           "that needs more fails with out of memory.\n");
}

static int parse_double_opt(const char *opt, const char *arg, double lo, double hi, double *out) {
    return cli_parse_double("train", opt, arg, lo, hi, out) ? CLI_BADINPUT : 0;
}

static void fmt_time(double s, char *buf, size_t n) {
    if (s < 120) snprintf(buf, n, "%.0f s", s);
    else if (s < 7200) snprintf(buf, n, "%.0f min", s / 60);
    else snprintf(buf, n, "%.1f h", s / 3600);
}

static void progress(int done, int total, const rk_train_step_result *r, double elapsed_s) {
    char eta[32], pk[32];
    int w = 30, fill = total > 0 ? done * w / total : w;
    fmt_time(done > 0 ? elapsed_s / done * (total - done) : 0, eta, sizeof eta);
    fprintf(stderr, "\r[%.*s%*s] %d/%d loss %.6g peak %s ETA %s   ", fill, "##############################",
            w - fill, "", done, total, r->loss, rk_format_bytes(r->peak, pk, sizeof pk), eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

int rk_cmd_train(int argc, char **argv) {
    const char *cmd = "train";
    common_opts co;
    memset(&co, 0, sizeof co);
    rk_train_options to;
    memset(&to, 0, sizeof to);
    to.optimizer = RK_OPTIM_ADAM;
    to.lr = 1e-3;
    to.loss = RK_LOSS_MEAN;
    long steps = 10;
    int plain = 0, random_data = 0;
    const char *chain_path = NULL, *save = NULL;
    static const struct option lo[] = {
        COMMON_LONG_OPTS,
        {"steps", required_argument, 0, T_STEPS},   {"optimizer", required_argument, 0, T_OPTIM},
        {"lr", required_argument, 0, T_LR},         {"weight-decay", required_argument, 0, T_WD},
        {"momentum", required_argument, 0, T_MOMENTUM}, {"data", required_argument, 0, T_DATA},
        {"save", required_argument, 0, T_SAVE},     {"chain", required_argument, 0, OPT_CHAIN},
        {"loss", required_argument, 0, OPT_LOSS},   {"plain", no_argument, 0, T_PLAIN},
        {0, 0, 0, 0}};
    optind = 1;
    int c, r;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case OPT_HELP: usage(); return CLI_OK;
        case T_STEPS:
            if (cli_parse_int(cmd, "--steps", optarg, 1, 100000000, &steps)) return CLI_BADINPUT;
            break;
        case T_OPTIM:
            if (!strcmp(optarg, "sgd")) to.optimizer = RK_OPTIM_SGD;
            else if (!strcmp(optarg, "adam")) to.optimizer = RK_OPTIM_ADAM;
            else if (!strcmp(optarg, "adamw")) to.optimizer = RK_OPTIM_ADAMW;
            else return cli_usage_error(cmd, "--optimizer %s: expected sgd, adam or adamw", optarg);
            break;
        case T_LR:
            if (parse_double_opt("--lr", optarg, 1e-300, 1e6, &to.lr)) return CLI_BADINPUT;
            break;
        case T_WD:
            if (parse_double_opt("--weight-decay", optarg, 0, 1e6, &to.weight_decay)) return CLI_BADINPUT;
            break;
        case T_MOMENTUM:
            if (parse_double_opt("--momentum", optarg, 0, 0.999999, &to.momentum)) return CLI_BADINPUT;
            break;
        case T_DATA:
            if (!strcmp(optarg, "random")) {
                random_data = 1;
                break;
            }
            if (to.n_data >= RK_EXEC_MAX_INPUTS)
                return cli_usage_error(cmd, "too many --data (at most %d)", RK_EXEC_MAX_INPUTS);
            to.data[to.n_data++] = optarg;
            break;
        case T_SAVE: save = optarg; break;
        case T_PLAIN: plain = 1; break;
        case OPT_CHAIN: chain_path = optarg; break;
        case OPT_LOSS:
            if (!strcmp(optarg, "sum")) to.loss = RK_LOSS_SUM;
            else if (!strcmp(optarg, "mean")) to.loss = RK_LOSS_MEAN;
            else return cli_usage_error(cmd, "--loss %s: expected sum or mean", optarg);
            break;
        case OPT_RUNS:
        case OPT_VERIFY: return cli_usage_error(cmd, "--runs and --verify are options of trace, not train");
        default:
            r = torch_parse_common(cmd, c, optarg, &co);
            if (r > 0) return r;
            if (r < 0) return cli_usage_error(cmd, "unknown option (see 'rkmate train --help')");
        }
    }
    int json = co.json, quiet = co.quiet;
    int nargs = argc - optind;
    if (nargs != (plain ? 1 : 2))
        return cli_usage_error(cmd, plain ? "expected MODEL.pt with --plain (see 'rkmate train --help')"
                                          : "expected MODEL.pt SCHEDULE.rks, or MODEL.pt --plain (see 'rkmate train --help')");
    if (!chain_path) return cli_usage_error(cmd, "missing --chain CHAIN.rkg");
    if (random_data && to.n_data > 0) return cli_usage_error(cmd, "--data random and --data FILE.npy together");
    co.ex.model_path = argv[optind];
    const char *sched_path = plain ? NULL : argv[optind + 1];
    if (access(co.ex.model_path, R_OK) != 0) return cli_usage_error(cmd, "%s: cannot read the model file", co.ex.model_path);
    if (save) {
        const char *ins[4 + RK_EXEC_MAX_INPUTS] = {co.ex.model_path, chain_path, sched_path, co.ex.input_file};
        for (int i = 0; i < to.n_data; i++) ins[4 + i] = to.data[i];
        if (cli_check_output(cmd, save, ins, 4 + to.n_data)) return CLI_BADINPUT;
    }
    rk_error err;
    err.msg[0] = 0;
    rk_chain ch;
    rk_status s = rk_chain_read(chain_path, &ch, &err);
    if (s != RK_OK) return cli_report(cmd, s, &err);
    /* No --input: the inputs, input file and seed (unless given) the chain was traced with */
    char *model_text = NULL;
    int seed_given = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--seed") || !strncmp(argv[i], "--seed=", 7)) seed_given = 1;
    if (co.ex.n_inputs == 0 && !co.ex.input_file) model_text = torch_inputs_from_chain(&ch, &co.ex, seed_given);
    int code = CLI_OK;
    rk_schedule sc;
    rk_schedule_init(&sc);
    rk_train *t = NULL;
    rk_sim_result sim;
    memset(&sim, 0, sizeof sim);
    if (co.ex.n_inputs == 0 && !co.ex.input_file) {
        code = cli_usage_error(cmd, "missing --input SHAPE:DTYPE or --input-file (and the chain does not say)");
        goto done;
    }
    if (sched_path) {
        if ((s = rk_schedule_read(sched_path, &ch, &sc, &err)) != RK_OK) {
            code = cli_report(cmd, s, &err);
            goto done;
        }
        if ((s = rk_simulate(&ch, &sc, &sim, &err)) != RK_OK) {
            fprintf(stderr, "rkmate train: %s: the simulator refuses the schedule: %s\n", sched_path, err.msg);
            code = cli_exit_code(s);
            goto done;
        }
    }
    if ((s = rk_train_open(&co.ex, &ch, sched_path ? &sc : NULL, &to, &t, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    int bar = !json && cli_progress_wanted(quiet);
    double elapsed = 0;
    int64_t max_peak = 0, first_alloc = -1, last_alloc = 0;
    double first_loss = 0, last_loss = 0;
    rk_train_step_result last;
    memset(&last, 0, sizeof last);
    for (long i = 0; i < steps; i++) {
        rk_train_step_result r;
        if ((s = rk_train_step(t, &r, &err)) != RK_OK) {
            if (bar) fputc('\n', stderr);
            code = cli_report(cmd, s, &err);
            goto done;
        }
        elapsed += r.time_us * 1e-6;
        if (r.peak > max_peak) max_peak = r.peak;
        if (i == 0) first_loss = r.loss;
        if (i == 1) first_alloc = r.allocated;
        last_loss = r.loss;
        last_alloc = r.allocated;
        last = r;
        if (json) {
            printf("{\"step\": %d, ", r.step);
            solve_cli_json_num(stdout, "loss", r.loss); // (null when not finite: JSON has no NaN)
            printf("\"time_us\": %.1f, \"peak\": %lld, \"allocated\": %lld, "
                   "\"param_bytes\": %lld, \"param_grad_bytes\": %lld, \"buffer_bytes\": %lld, \"optimizer_bytes\": %lld",
                   r.time_us, (long long)r.peak, (long long)r.allocated, (long long)r.param_bytes,
                   (long long)r.param_grad_bytes, (long long)r.buffer_bytes, (long long)r.optimizer_bytes);
            if (sched_path)
                printf(", \"predicted_peak\": %lld, \"budget\": %lld", (long long)sim.peak, (long long)sc.budget);
            printf("}\n");
            fflush(stdout);
        } else if (bar) {
            progress(r.step, (int)steps, &r, elapsed);
        } else if (!quiet) {
            char pk[32];
            printf("step %d/%ld: loss %.9g, %.1f ms, peak %s\n", r.step, steps, r.loss, r.time_us / 1000,
                   rk_format_bytes(r.peak, pk, sizeof pk));
        }
    }
    torch_cli_nondeterminism_note(stderr, "rkmate train: note", last.nondeterministic_kernels);
    if (save && (s = rk_train_save(t, save, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    uint64_t hp = 0, hb = 0;
    if ((s = rk_train_digest(t, &hp, &hb, &err)) != RK_OK) {
        code = cli_report(cmd, s, &err);
        goto done;
    }
    if (json) {
        printf("{\"steps\": %ld, ", steps);
        solve_cli_json_num(stdout, "first_loss", first_loss);
        solve_cli_json_num(stdout, "last_loss", last_loss);
        printf("\"max_peak\": %lld, "
               "\"allocated_step2\": %lld, \"allocated_last\": %lld, \"params_hash\": \"%016llx\", "
               "\"buffers_hash\": \"%016llx\", \"param_bytes\": %lld, \"param_grad_bytes\": %lld, "
               "\"buffer_bytes\": %lld, \"optimizer_bytes\": %lld",
               (long long)max_peak, (long long)first_alloc, (long long)last_alloc,
               (unsigned long long)hp, (unsigned long long)hb, (long long)last.param_bytes,
               (long long)last.param_grad_bytes, (long long)last.buffer_bytes, (long long)last.optimizer_bytes);
        if (sched_path)
            printf(", \"predicted_peak\": %lld, \"budget\": %lld", (long long)sim.peak, (long long)sc.budget);
        printf(", \"nondeterministic_kernels\": ");
        solve_cli_json_str(stdout, last.nondeterministic_kernels);
        printf(", \"saved\": ");
        if (save) solve_cli_json_str(stdout, save);
        else printf("null");
        printf("}\n");
    } else if (!quiet) {
        char a[32], b[32];
        printf("trained %ld steps (%s): loss %.9g -> %.9g; peak activations %s (predicted %s); "
               "parameters %016llx, buffers %016llx\n",
               steps, sched_path ? sched_path : "plain", first_loss, last_loss, rk_format_bytes(max_peak, a, sizeof a),
               sched_path ? rk_format_bytes(sim.peak, b, sizeof b) : "-", (unsigned long long)hp,
               (unsigned long long)hb);
        char c[32], d[32], e2[32], f2[32];
        printf("outside the activation peak: parameters %s, their gradients %s, buffers %s, optimizer state %s\n",
               rk_format_bytes(last.param_bytes, c, sizeof c), rk_format_bytes(last.param_grad_bytes, d, sizeof d),
               rk_format_bytes(last.buffer_bytes, e2, sizeof e2), rk_format_bytes(last.optimizer_bytes, f2, sizeof f2));
        if (save) printf("wrote %s\n", save);
    }
done:
    rk_train_free(t);
    rk_schedule_free(&sc);
    rk_chain_free(&ch);
    free(model_text);
    return code;
}
