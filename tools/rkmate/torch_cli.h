/* torch_cli.h — what the libtorch commands of rkmate (trace, run, optimize)
 * share: their option codes and long options, the executor's option parsing,
 * and the run report.  Compiled into the `rkmate-torch` program only, which
 * links src/exec's library (rk_exec.h); `rkmate` runs it for these commands so
 * that the solver commands never load libtorch. */
#ifndef RK_TORCH_CLI_H
#define RK_TORCH_CLI_H

#include <stdio.h>
#include "rk_exec.h"
#include "rk_graph.h"
#include "rk_solve.h"

enum { OPT_INPUT = 1000, OPT_INPUT_FILE, OPT_DEVICE, OPT_QUIET, OPT_JSON, OPT_SEED, OPT_RUNS, OPT_CHAIN,
       OPT_ITERS, OPT_CHECK, OPT_LOSS, OPT_BUDGET, OPT_ALGO, OPT_HELP, OPT_VERIFY, OPT_NO_SPLIT_BWD,
       OPT_MEMORY_CAP, OPT_MEMORY_LOG };

/* Options shared by trace / run / optimize. */
typedef struct {
    rk_exec_options ex;
    int quiet, json;
} common_opts;

/* Options shared by trace / run / optimize: 0 handled, -1 not one of them,
 * else the exit code of an error (already reported). */
int torch_parse_common(const char *cmd, int c, const char *arg, common_opts *co);

#define COMMON_LONG_OPTS                                                                                 \
    {"input", required_argument, 0, OPT_INPUT}, {"input-file", required_argument, 0, OPT_INPUT_FILE},  \
        {"device", required_argument, 0, OPT_DEVICE}, {"quiet", no_argument, 0, OPT_QUIET},            \
        {"json", no_argument, 0, OPT_JSON}, {"seed", required_argument, 0, OPT_SEED},                  \
        {"runs", required_argument, 0, OPT_RUNS}, {"help", no_argument, 0, OPT_HELP},          \
        {"verify", no_argument, 0, OPT_VERIFY}, {"memory-cap", required_argument, 0, OPT_MEMORY_CAP}

/* trace and optimize only: keep every backward whole (rk_exec_options.no_split_bwd). */
#define NO_SPLIT_BWD_OPT {"no-split-bwd", no_argument, 0, OPT_NO_SPLIT_BWD}

/* The executor's options shared by run and optimize (--check, --loss,
 * --iters): 0 handled, -1 not one of them, else the exit code of an error. */
int torch_parse_run_opts(const char *cmd, int c, const char *arg, rk_run_options *ro);

/* The name of the node op `o` of a schedule of ch runs or forgets (not a mark). */
const char *torch_op_node_name(const rk_chain *ch, const rk_op *o);

/* `run --memory-log FILE`: the schedule's ops, each with the simulator's bytes
 * (rk_simulate_ops) beside the measured ones (rk_run_options.op_step, op_live),
 * as tab-separated columns, written atomically.  *first_above: the first op
 * measured above its prediction by more than `slack` bytes, or -1. */
rk_status torch_write_memory_log(const char *path, const rk_chain *ch, const rk_schedule *s,
                                 const int64_t *pred_step, const int64_t *pred_live, const int64_t *meas_step,
                                 const int64_t *meas_live, int64_t slack, int *first_above, rk_error *err);

/* The inputs, input file and seed a chain was traced with, from its "model"
 * text ("MODEL.pt --input SPEC ... [--input-file F] --seed N"), into ex (the
 * seed only when keep_seed is 0).  Returns the copy of the text that ex's
 * strings point into (free it once ex is no longer used), or NULL. */
char *torch_inputs_from_chain(const rk_chain *ch, rk_exec_options *ex, int keep_seed);

/* Print a run's report (text or one JSON object) on stdout. */
void torch_print_run(const rk_sim_result *sim, const rk_schedule *s, const rk_run_result *r, int json);

/* "rkmate CMD: warning: ..." on stderr when tracing kept an RNN node whole
 * (rk_trace_stats.rnn_warning), whatever --quiet says. */
void torch_cli_rnn_warning(const char *cmd, const rk_trace_stats *st);
/* Same for a backward kept whole because its parts' gradients differed
 * (rk_trace_stats.split_warning). */
void torch_cli_split_warning(const char *cmd, const rk_trace_stats *st);
/* The sentence naming `kernels` (rk_trace_stats, rk_run_result,
 * rk_train_step_result .nondeterministic_kernels: those without a
 * deterministic implementation on the device that ran), after `prefix`,
 * into f; nothing when there are none. */
void torch_cli_nondeterminism_note(FILE *f, const char *prefix, const char *kernels);

int rk_cmd_trace(int argc, char **argv);
int rk_cmd_run(int argc, char **argv);
int rk_cmd_optimize(int argc, char **argv);
int rk_cmd_train(int argc, char **argv);

#endif
