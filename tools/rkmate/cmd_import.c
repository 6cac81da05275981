/* cmd_import.c — `rkmate import-checkmate GRAPH.json -o CHAIN.rkg`. */
#include <getopt.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate import-checkmate GRAPH.json -o CHAIN.rkg\n\n"
               "Reads a Checkmate/Moccasin training graph (networkx node-link JSON: nodes with id, name,\n"
               "backward, cost_cpu, cost_ram; links with source, target) and writes a one-block chain.\n");
}

int rk_cmd_import_checkmate(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'h') {
            usage(stdout);
            return CLI_OK;
        } else {
            usage(stderr);
            return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1 || !out) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    const char *in = argv[optind];
    if (cli_check_output("import-checkmate", out, &in, 1)) return CLI_BADINPUT;
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_import_checkmate(in, &ch, &err);
    if (st) return cli_report("import-checkmate", st, &err);
    st = rk_chain_write(out, &ch, &err);
    if (!st) {
        const rk_graph *g = &ch.classes[0];
        fprintf(stderr, "rkmate import-checkmate: wrote %s (%d compute nodes, %d data nodes)\n", out, g->n_c, g->n_d);
    }
    rk_chain_free(&ch);
    return st ? cli_report("import-checkmate", st, &err) : CLI_OK;
}
