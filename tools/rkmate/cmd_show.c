/* cmd_show.c — `rkmate show CHAIN.rkg [--nodes] [--dot FILE [--block K]]`:
 * a chain's blocks, classes, nodes and sizes, or its Graphviz drawing. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate show CHAIN.rkg [--nodes] [--dot FILE [--block K]]\n\n"
               "Prints the chain's blocks (class, node counts, input/output sizes, forward data and phantom\n"
               "bytes, forward/backward time) and its classes.\n"
               "  --nodes       also list every node of every class\n"
               "  --dot FILE    write Graphviz of block K (--block) or of the whole chain\n");
}

typedef struct {
    int n_fwd, n_bwd, n_data, n_phantom, n_grad;
    int64_t data_bytes, phantom_bytes, grad_bytes;
    double fwd_time, bwd_time;
} class_stats;

static void stats_of(const rk_graph *g, class_stats *s) {
    memset(s, 0, sizeof *s);
    for (int c = 0; c < g->n_c; c++) {
        if (g->c[c].kind == RK_C_FWD) {
            s->n_fwd++;
            s->fwd_time += g->c[c].time;
        } else if (g->c[c].kind == RK_C_BWD) {
            s->n_bwd++;
            s->bwd_time += g->c[c].time;
        }
    }
    for (int d = 0; d < g->n_d; d++) {
        int input = 0;
        for (int k = 0; k < g->n_inputs; k++) input |= g->inputs[k] == d;
        if (input) continue;
        if (g->d[d].kind == RK_D_DATA) {
            s->n_data++;
            s->data_bytes += g->d[d].size;
        } else if (g->d[d].kind == RK_D_PHANTOM) {
            s->n_phantom++;
            s->phantom_bytes += g->d[d].size;
        } else {
            s->n_grad++;
            s->grad_bytes += g->d[d].size;
        }
    }
}

static void dot_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}

static void dot_block(FILE *f, const rk_graph *g, int k, const char *prefix) {
    for (int d = 0; d < g->n_d; d++) {
        fprintf(f, "  \"%sd%d\" [shape=ellipse, style=filled, fillcolor=%s, label=\"", prefix, d,
                g->d[d].kind == RK_D_DATA ? "gold" : g->d[d].kind == RK_D_GRAD ? "lightpink" : "khaki");
        dot_escape(f, g->d[d].name);
        fprintf(f, "\\n%lld B\"];\n", (long long)g->d[d].size);
    }
    for (int c = 0; c < g->n_c; c++) {
        const rk_cnode *n = &g->c[c];
        fprintf(f, "  \"%sc%d\" [shape=box, style=filled, fillcolor=%s, label=\"", prefix, c,
                n->kind == RK_C_FWD ? "lightblue" : n->kind == RK_C_BWD ? "violet" : "palegreen");
        dot_escape(f, n->name);
        fprintf(f, "\\n%.1f us\"];\n", n->time);
        for (int u = 0; u < n->n_uses; u++)
            fprintf(f, "  \"%sd%d\" -> \"%sc%d\"%s;\n", prefix, n->uses[u].data, prefix, c,
                    n->uses[u].kind == RK_EDGE_FAKE ? " [style=dashed]"
                                                    : n->uses[u].kind == RK_EDGE_GLOBAL ? " [style=bold]" : "");
        for (int o = 0; o < n->n_outs; o++) fprintf(f, "  \"%sc%d\" -> \"%sd%d\";\n", prefix, c, prefix, n->outs[o]);
    }
    (void)k;
}

static int write_dot(const rk_chain *ch, const char *path, int block, rk_error *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return rk_fail(err, RK_ENOMEM, "out of memory");
    fprintf(f, "digraph rkmate {\n  rankdir=TB;\n  node [fontsize=10];\n");
    for (int k = 0; k < ch->n_blocks; k++) {
        if (block >= 0 && k != block) continue;
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "b%d_", k);
        fprintf(f, " subgraph cluster_%d {\n  label=\"block %d: ", k, k);
        dot_escape(f, ch->blocks[k].name);
        fprintf(f, " (class %d)\";\n", ch->blocks[k].cls);
        dot_block(f, g, k, prefix);
        fprintf(f, " }\n");
        if (block < 0 && k > 0) {
            const rk_graph *p = &ch->classes[ch->blocks[k - 1].cls];
            fprintf(f, "  \"b%d_d%d\" -> \"b%d_d%d\" [style=dotted, label=\"same data\"];\n", k - 1, p->output, k,
                    g->inputs[0]);
            fprintf(f, "  \"b%d_d%d\" -> \"b%d_d%d\" [style=dotted, label=\"same grad\"];\n", k, g->input_grads[0],
                    k - 1, p->output_grad);
        }
    }
    fprintf(f, "}\n");
    fclose(f);
    rk_status st = rk_write_file_atomic(path, buf, len, err);
    free(buf);
    return st;
}

int rk_cmd_show(int argc, char **argv) {
    static const struct option opts[] = {{"nodes", no_argument, 0, 'n'}, {"dot", required_argument, 0, 'd'},
                                         {"block", required_argument, 0, 'b'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int nodes = 0, c;
    long block = -1;
    const char *dot = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "nd:b:h", opts, NULL)) != -1) {
        if (c == 'n') nodes = 1;
        else if (c == 'd') dot = optarg;
        else if (c == 'b') {
            if (cli_parse_int("show", "--block", optarg, 0, 1000000000, &block)) return CLI_BADINPUT;
        } else if (c == 'h') {
            usage(stdout);
            return CLI_OK;
        } else {
            usage(stderr);
            return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    const char *path = argv[optind];
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(path, &ch, &err);
    if (st) return cli_report("show", st, &err);
    if (block >= ch.n_blocks) {
        int n = ch.n_blocks;
        rk_chain_free(&ch);
        return cli_usage_error("show", "--block %ld: the chain has %d blocks", block, n);
    }
    if (dot) {
        if (cli_check_output("show", dot, &path, 1)) {
            rk_chain_free(&ch);
            return CLI_BADINPUT;
        }
        st = write_dot(&ch, dot, (int)block, &err);
        rk_chain_free(&ch);
        if (st) return cli_report("show", st, &err);
        fprintf(stderr, "rkmate show: wrote %s\n", dot);
        return CLI_OK;
    }
    char b1[32], b2[32], b3[32], b4[32];
    printf("chain %s: %d blocks, %d classes%s%s%s%s\n", path, ch.n_blocks, ch.n_classes, ch.model ? ", model " : "",
           ch.model ? ch.model : "", ch.device ? ", device " : "", ch.device ? ch.device : "");
    printf("%5s  %-24s %5s %5s %5s %12s %12s %12s %12s %12s %12s\n", "block", "name", "class", "fwd", "data", "input",
           "output", "fwd data", "phantoms", "fwd us", "bwd us");
    int64_t total_data = 0;
    for (int k = 0; k < ch.n_blocks; k++) {
        const rk_graph *g = &ch.classes[ch.blocks[k].cls];
        class_stats s;
        stats_of(g, &s);
        int64_t in = 0;
        for (int i = 0; i < g->n_inputs; i++) in += g->d[g->inputs[i]].size;
        total_data += s.data_bytes + s.phantom_bytes;
        printf("%5d  %-24.24s %5d %5d %5d %12s %12s %12s %12s %12.1f %12.1f\n", k, ch.blocks[k].name, ch.blocks[k].cls,
               s.n_fwd, s.n_data + s.n_phantom, rk_format_bytes(in, b1, sizeof b1),
               rk_format_bytes(g->d[g->output].size, b2, sizeof b2), rk_format_bytes(s.data_bytes, b3, sizeof b3),
               rk_format_bytes(s.phantom_bytes, b4, sizeof b4), s.fwd_time, s.bwd_time);
    }
    printf("total forward data + phantoms: %lld bytes (%s); every node once: %.1f us\n", (long long)total_data,
           rk_format_bytes(total_data, b1, sizeof b1), rk_chain_baseline_time(&ch));
    for (int i = 0; i < ch.n_classes; i++) {
        const rk_graph *g = &ch.classes[i];
        int used = 0;
        for (int k = 0; k < ch.n_blocks; k++) used += ch.blocks[k].cls == i;
        printf("class %d: %d compute nodes, %d data nodes, %d inputs, used by %d block%s\n", i, g->n_c, g->n_d,
               g->n_inputs, used, used == 1 ? "" : "s");
        if (!nodes) continue;
        for (int t = 0; t < g->n_c; t++) {
            const rk_cnode *n = &g->c[g->topo[t]];
            printf("    %-4s %-40s %10.2f us  overhead %lld  uses:", rk_ckind_name(n->kind), n->name, n->time,
                   (long long)n->overhead);
            for (int u = 0; u < n->n_uses; u++)
                printf(" %s%s", g->d[n->uses[u].data].name,
                       n->uses[u].kind == RK_EDGE_FAKE ? "(fake)" : n->uses[u].kind == RK_EDGE_GLOBAL ? "(global)" : "");
            printf("  outs:");
            for (int o = 0; o < n->n_outs; o++)
                printf(" %s[%s %lld]", g->d[n->outs[o]].name, rk_dkind_name(g->d[n->outs[o]].kind),
                       (long long)g->d[n->outs[o]].size);
            printf("\n");
        }
    }
    rk_chain_free(&ch);
    return CLI_OK;
}
