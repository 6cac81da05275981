/* torch_cli.c — option parsing and the run report shared by the libtorch
 * commands (trace, run, optimize); see torch_cli.h. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "solve_cli.h"
#include "torch_cli.h"

int torch_parse_common(const char *cmd, int c, const char *arg, common_opts *co) {
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
    case OPT_NO_SPLIT_BWD: co->ex.no_split_bwd = 1; return 0;
    case OPT_MEMORY_CAP: {
        rk_error e;
        int64_t b;
        if (rk_parse_bytes(arg, &b, &e) != RK_OK || b <= 0)
            return cli_usage_error(cmd, "--memory-cap %s: expected a positive size (bytes, or 40GB, 38GiB)", arg);
        co->ex.memory_cap = b;
        return 0;
    }
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

void torch_print_run(const rk_sim_result *sim, const rk_schedule *s, const rk_run_result *r, int json) {
    if (json) {
        printf("{\"predicted_peak\": %lld, \"measured_peak\": %lld, \"baseline_peak\": %lld, "
               "\"predicted_time\": %.3f, \"measured_time\": %.3f, \"baseline_time\": %.3f, ",
               (long long)sim->peak, (long long)r->measured_peak, (long long)r->baseline_peak, sim->time,
               r->measured_time, r->baseline_time);
        if (r->checked) {
            printf("\"grads_equal\": %s, \"output_equal\": %s, \"max_abs_diff\": %.9g, \"max_rel_diff\": %.9g, ",
                   r->grads_equal ? "true" : "false", r->output_equal ? "true" : "false", (double)(float)r->max_abs_diff,
                   (double)(float)r->max_rel_diff);
            printf("\"grads_differing\": %d, \"plain_repeatable\": %s, \"grads_differing_names\": ", r->grads_differing,
                   r->plain_repeatable < 0 ? "null" : r->plain_repeatable ? "true" : "false");
            solve_cli_json_str(stdout, r->grads_differing_names);
            printf(", ");
        }
        else
            printf("\"grads_equal\": null, \"max_abs_diff\": null, ");
        printf("\"nondeterministic_kernels\": ");
        solve_cli_json_str(stdout, r->nondeterministic_kernels);
        printf(", ");
        solve_cli_print_model_memory(stdout, r->param_bytes, r->param_grad_bytes, r->buffer_bytes, 1);
        printf("\"measured_reserved\": %lld, \"baseline_reserved\": %lld, ", (long long)r->measured_reserved,
               (long long)r->baseline_reserved);
        printf("\"budget\": %lld, \"algo\": \"%s\", \"loss\": %.17g, \"input_bytes\": %lld, \"ops\": %d, "
               "\"analysis_peak\": %lld, \"shared_grad_bytes\": %lld}\n",
               (long long)s->budget, s->algo ? s->algo : "", r->loss, (long long)r->input_bytes, s->n_ops,
               (long long)r->analysis_peak, (long long)r->shared_grad_bytes);
        return;
    }
    char a[32], b[32], c[32];
    printf("peak memory (activations): predicted %s, measured %s, plain step %s\n",
           rk_format_bytes(sim->peak, a, sizeof a), rk_format_bytes(r->measured_peak, b, sizeof b),
           rk_format_bytes(r->baseline_peak, c, sizeof c));
    solve_cli_print_model_memory(stdout, r->param_bytes, r->param_grad_bytes, r->buffer_bytes, 0);
    if (r->measured_reserved || r->baseline_reserved)
        printf("device memory reserved (whole step, parameters included): %s, plain step %s\n",
               rk_format_bytes(r->measured_reserved, a, sizeof a), rk_format_bytes(r->baseline_reserved, c, sizeof c));
    if (r->shared_grad_bytes > 0)
        printf("gradients shared: %s handed on to a second holder as the same buffer or kept expanded, as plain "
               "autograd does (predicted whole for each holder: the measured peak may be below the prediction)\n",
               rk_format_bytes(r->shared_grad_bytes, a, sizeof a));
    printf("step time: predicted %.1f us, measured %.1f us, plain step %.1f us\n", sim->time, r->measured_time,
           r->baseline_time);
    if (r->checked)
        printf("check: gradients and output %s (max abs diff %.3g, max rel diff %.3g)\n",
               r->grads_equal ? "equal to the plain step bit for bit" : "DIFFER from the plain step",
               (double)(float)r->max_abs_diff, (double)(float)r->max_rel_diff);
    if (r->checked && !r->grads_equal)
        printf("check: %d of %d parameter gradients differ; the plain step run twice is %s\n", r->grads_differing,
               r->n_params,
               r->plain_repeatable < 0 ? "not known (--iters 0)" : r->plain_repeatable ? "repeatable bit for bit"
                                                                       : "NOT repeatable (non-deterministic kernels)");
    if (r->checked && r->grads_differing_names[0])
        printf("check: differing (parameter:largest absolute difference): %s\n", r->grads_differing_names);
    torch_cli_nondeterminism_note(stdout, r->checked ? "check" : "note", r->nondeterministic_kernels);
}

/* The executor's options shared by run and optimize (--check, --loss,
 * --iters): 0 handled, -1 not one of them, else the exit code of an error. */
int torch_parse_run_opts(const char *cmd, int c, const char *arg, rk_run_options *ro) {
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

char *torch_inputs_from_chain(const rk_chain *ch, rk_exec_options *ex, int keep_seed) {
    if (!ch->model) return NULL;
    char *text = strdup(ch->model);
    char *save = NULL, *tok = text ? strtok_r(text, " ", &save) : NULL;
    while (tok && (tok = strtok_r(NULL, " ", &save))) {
        char *val = strtok_r(NULL, " ", &save);
        if (!val) break;
        if (!strcmp(tok, "--input") && ex->n_inputs < RK_EXEC_MAX_INPUTS) ex->inputs[ex->n_inputs++] = val;
        else if (!strcmp(tok, "--input-file") && !ex->input_file) ex->input_file = val;
        else if (!strcmp(tok, "--seed") && !keep_seed) ex->seed = strtoull(val, NULL, 10);
    }
    return text;
}

void torch_cli_rnn_warning(const char *cmd, const rk_trace_stats *st) {
    if (!st->rnn_warning[0]) return;
    fprintf(stderr, "rkmate %s: warning: %s", cmd, st->rnn_warning);
    int more = st->rnn_layered + st->rnn_kept - 1;
    if (more > 0) fprintf(stderr, " (and %d more such node(s))", more);
    fputc('\n', stderr);
}

void torch_cli_nondeterminism_note(FILE *f, const char *prefix, const char *kernels) {
    if (!kernels[0]) return;
    fprintf(f,
            "%s: kernels without a deterministic implementation on this device ran (%s): gradients may differ "
            "from step to step, the plain step's own included\n",
            prefix, kernels);
}

void torch_cli_split_warning(const char *cmd, const rk_trace_stats *st) {
    if (!st->split_warning[0]) return;
    fprintf(stderr, "rkmate %s: warning: %s", cmd, st->split_warning);
    if (st->split_bwd_unequal > 1) fprintf(stderr, " (and %d more such node(s))", st->split_bwd_unequal - 1);
    fputc('\n', stderr);
}

const char *torch_op_node_name(const rk_chain *ch, const rk_op *o) {
    const rk_graph *g = &ch->classes[ch->blocks[o->block].cls];
    return o->kind == RK_OP_RUN ? g->c[o->node].name : g->d[o->node].name;
}

rk_status torch_write_memory_log(const char *path, const rk_chain *ch, const rk_schedule *s,
                                 const int64_t *pred_step, const int64_t *pred_live, const int64_t *meas_step,
                                 const int64_t *meas_live, int64_t slack, int *first_above, rk_error *err) {
    *first_above = -1;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return rk_fail(err, RK_ENOMEM, "out of memory");
    fprintf(f, "# rkmate run --memory-log: bytes of activations op by op (the first block's inputs included),\n"
               "# predicted by the simulator and measured in the last timed iteration; step: the highest\n"
               "# while the op ran, live: held after it\n");
    fprintf(f, "op\tkind\tblock\tnode\tpredicted_step\tmeasured_step\tpredicted_live\tmeasured_live\n");
    for (int i = 0; i < s->n_ops; i++) {
        const rk_op *o = &s->ops[i];
        if (o->kind == RK_OP_MARK) continue;
        fprintf(f, "%d\t%s\t%d\t%s\t%lld\t%lld\t%lld\t%lld\n", i, o->kind == RK_OP_RUN ? "run" : "forget",
                o->block, torch_op_node_name(ch, o), (long long)pred_step[i], (long long)meas_step[i],
                (long long)pred_live[i], (long long)meas_live[i]);
        if (*first_above < 0 && meas_step[i] > pred_step[i] + slack) *first_above = i;
    }
    if (fclose(f) != 0) {
        free(buf);
        return rk_fail(err, RK_EFAIL, "%s: cannot format the memory log", path);
    }
    rk_status st = rk_write_file_atomic(path, buf, len, err);
    free(buf);
    return st;
}
