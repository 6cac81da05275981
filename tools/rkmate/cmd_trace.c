/* cmd_trace.c — `rkmate trace`: a TorchScript or torch.export model ->
 * measured chain of CD-graphs (rk_exec_trace), written atomically. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "solve_cli.h"
#include "torch_cli.h"

static void print_trace_stats(FILE *f, const rk_trace_stats *st, const rk_chain *ch, int json) {
    int64_t plain_peak = ch->plain_peak;
    if (json) {
        fputc('{', f);
        solve_cli_print_model_memory(f, ch->param_bytes, ch->param_grad_bytes, ch->buffer_bytes, 1);
        fprintf(f,
                "\"nodes_inlined\": %d, \"nodes_ops\": %d, \"nodes_dynamic\": %d, \"nodes_simplified\": %d, \"views\": %d, "
                "\"inplace\": %d, \"sizes\": %d, \"static\": %d, \"cheap\": %d, \"blocks\": %d, \"classes\": %d, "
                "\"forward_equal\": %s, \"max_forward_diff\": %.17g, \"plain_peak\": %lld, \"seconds\": %.3f, "
                "\"rnn_expanded\": %d, \"rnn_steps\": %d, \"rnn_layered\": %d, \"rnn_kept\": %d, \"rnn_cells\": %d, \"split_bwd\": %d, "
                "\"split_bwd_unequal\": %d, \"analysis_peak\": %lld, \"functionalized\": %d, \"rnn_warning\": ",
                st->nodes_inlined, st->nodes_ops, st->nodes_dynamic, st->nodes_simplified, st->n_views, st->n_inplace,
                st->n_sizes, st->n_static, st->n_cheap, st->n_blocks, st->n_classes,
                st->forward_equal < 0 ? "null" : st->forward_equal ? "true" : "false",
                st->max_forward_diff, (long long)plain_peak, st->seconds, st->rnn_expanded, st->rnn_steps,
                st->rnn_layered, st->rnn_kept, st->rnn_cells, st->split_bwd, st->split_bwd_unequal,
                (long long)st->analysis_peak,
                st->n_functionalized);
        if (st->rnn_warning[0]) solve_cli_json_str(f, st->rnn_warning);
        else fputs("null", f);
        fputs(", \"nondeterministic_kernels\": ", f);
        solve_cli_json_str(f, st->nondeterministic_kernels);
        fputs("}\n", f);
    } else {
        fprintf(f,
                "traced: %d nodes (%d operations, %d on activations) -> %d after simplification (%d views, "
                "%d in-place, %d size, %d static, %d list/tuple); %d blocks, %d classes; forward %s; plain step's "
                "activation peak %lld bytes (what --budget P%% is a percentage of); %.2f s\n",
                st->nodes_inlined, st->nodes_ops, st->nodes_dynamic, st->nodes_simplified, st->n_views, st->n_inplace,
                st->n_sizes, st->n_static, st->n_cheap, st->n_blocks, st->n_classes,
                st->forward_equal < 0 ? "not verified (--verify)" : st->forward_equal ? "bit-exact" : "DIFFERS",
                (long long)plain_peak, st->seconds);
        solve_cli_print_model_memory(f, ch->param_bytes, ch->param_grad_bytes, ch->buffer_bytes, 0);
        if (st->rnn_expanded)
            fprintf(f, "RNN layers expanded into their time steps: %d node(s), %d steps\n", st->rnn_expanded,
                    st->rnn_steps);
        if (st->rnn_cells)
            fprintf(f, "RNN cells (nn.GRUCell, nn.LSTMCell) rewritten out of place: %d call(s)\n", st->rnn_cells);
        if (st->split_bwd)
            fprintf(f, "backward split in two (weight part, input part): %d node(s)\n", st->split_bwd);
        if (st->n_functionalized)
            fprintf(f, "in-place writes on data read before and after them, run on a copy: %d node(s)\n",
                    st->n_functionalized);
    }
}

int rk_cmd_trace(int argc, char **argv) {
    const char *cmd = "trace";
    common_opts co;
    memset(&co, 0, sizeof co);
    co.ex.measure = 1;
    const char *out = NULL;
    static const struct option lo[] = {COMMON_LONG_OPTS, NO_SPLIT_BWD_OPT, {"output", required_argument, 0, 'o'},
                                       {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
        if (c == 'o') { out = optarg; continue; }
        if (c == OPT_HELP) {
            printf("usage: rkmate trace MODEL.pt (--input SHAPE:DTYPE [--input ...] | --input-file INPUTS.pt)\n"
                   "                    [--device cpu|cuda] [--seed N] [--runs N] [--verify] [--no-split-bwd]\n"
                   "                    [--memory-cap BYTES] -o CHAIN.rkg [--quiet] [--json]\n\n"
                   "Load a TorchScript model (torch.jit.trace(...).save) or a torch.export program\n"
                   "(torch.export.save, MODEL.pt2), run it on example inputs (random\n"
                   "values of the given shapes and dtypes, int inputs in [0, 10), or the tensors of\n"
                   "--input-file: torch.save of a tensor or a list of tensors; --input, if also given, must\n"
                   "describe them), simplify its graph to one node per allocation, cut it into blocks, and\n"
                   "write the measured chain of CD-graphs.  --json prints the statistics on stdout.\n"
                   "--runs N: timed runs per node (median; default 3).  --verify: also run the plain module\n"
                   "and all blocks forward, and check the outputs are equal bit for bit.\n"
                   "--no-split-bwd: keep every backward one node.  By default a convolution's or Linear's\n"
                   "backward becomes two nodes, its weight part then its input part (so that its input can\n"
                   "be dropped between them), where the parts' gradients equal the one call's bit for bit.\n"
                   "--memory-cap BYTES (CUDA): cap the device memory the process may take.\n");
            return CLI_OK;
        }
        int r = torch_parse_common(cmd, c, optarg, &co);
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
    if (s != RK_OK) {
        rk_chain_free(&ch);
        return cli_report(cmd, s, &err);
    }
    torch_cli_rnn_warning(cmd, &st);
    torch_cli_split_warning(cmd, &st);
    torch_cli_nondeterminism_note(stderr, "rkmate trace: note", st.nondeterministic_kernels);
    if (co.json) print_trace_stats(stdout, &st, &ch, 1);
    if (!co.quiet) {
        print_trace_stats(stderr, &st, &ch, 0);
        fprintf(stderr, "wrote %s\n", out);
    }
    rk_chain_free(&ch);
    return CLI_OK;
}
