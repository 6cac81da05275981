/* cmd_baseline.c — `rkmate baseline CHAIN.rkg --kind keep-all|free-asap -o S.rks`:
 * the schedules without recomputation that bound every budget grid. */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate baseline CHAIN.rkg --kind keep-all|free-asap [-o S.rks] [--json]\n\n"
               "  keep-all    every node once, nothing forgotten before the backward has used it\n"
               "              (the maximum peak: every forward output kept until the loss, more than\n"
               "              PyTorch keeps)\n"
               "  free-asap   every node once, each data forgotten right after its last use\n"
               "              (the minimum peak without recomputation: what autograd keeps, as\n"
               "              `rkmate solve --algo none`, the zoo's \"keep-all\" column)\n");
}

int rk_cmd_baseline(int argc, char **argv) {
    static const struct option opts[] = {{"kind", required_argument, 0, 'k'}, {"output", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *kind = NULL, *out = NULL;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:o:jh", opts, NULL)) != -1) {
        if (c == 'k') kind = optarg;
        else if (c == 'o') out = optarg;
        else if (c == 'j') json = 1;
        else if (c == 'h') {
            usage(stdout);
            return CLI_OK;
        } else {
            usage(stderr);
            return CLI_BADINPUT;
        }
    }
    if (argc - optind != 1 || !kind) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    int keep = !strcmp(kind, "keep-all");
    if (!keep && strcmp(kind, "free-asap"))
        return cli_usage_error("baseline", "--kind: expected keep-all or free-asap, got '%s'", kind);
    const char *in = argv[optind];
    if (out && cli_check_output("baseline", out, &in, 1)) return CLI_BADINPUT;
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(in, &ch, &err);
    if (st) return cli_report("baseline", st, &err);
    rk_schedule s;
    st = keep ? rk_schedule_keep_all(&ch, &s, &err) : rk_schedule_free_asap(&ch, &s, &err);
    if (!st && out) st = rk_schedule_write(out, &ch, &s, &err);
    if (!st) {
        if (json)
            printf("{\"kind\": \"%s\", \"peak\": %lld, \"time\": %.17g, \"ops\": %d}\n", kind,
                   (long long)s.predicted_peak, s.predicted_time, s.n_ops);
        else {
            char b[32];
            printf("%s: peak %lld bytes (%s), time %.3f us, %d ops\n", kind, (long long)s.predicted_peak,
                   rk_format_bytes(s.predicted_peak, b, sizeof b), s.predicted_time, s.n_ops);
        }
    }
    rk_schedule_free(&s);
    rk_chain_free(&ch);
    return st ? cli_report("baseline", st, &err) : CLI_OK;
}
