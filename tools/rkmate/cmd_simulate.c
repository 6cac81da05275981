/* cmd_simulate.c — `rkmate simulate CHAIN.rkg SCHEDULE.rks [--json]`: replay a
 * schedule and report its peak memory, time and overhead. */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "peak_explain.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate simulate CHAIN.rkg SCHEDULE.rks [--json] [--explain]\n\n"
               "Replays the schedule on the chain: refuses a schedule that runs a node whose inputs are\n"
               "not in memory, forgets data that is not there or leaves the backward incomplete;\n"
               "otherwise prints the peak memory (live data + the running node's temporary overhead and\n"
               "new outputs), when it happens, the total time and the overhead against running every\n"
               "node once.\n\n  --json      one JSON object on stdout\n"
               "  --explain   what is in memory at the peak: the node running, each data node with its\n"
               "              bytes, read or made by it or held across it, and the node's temporary\n"
               "              (JSON: peak_explain)\n");
}

int rk_cmd_simulate(int argc, char **argv) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"explain", no_argument, 0, 'e'},
                                          {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, explain = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        if (c == 'j') json = 1;
        else if (c == 'e') explain = 1;
        else if (c == 'h') {
            usage(stdout);
            return CLI_OK;
        } else {
            usage(stderr);
            return CLI_BADINPUT;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    const char *chain_path = argv[optind], *sched_path = argv[optind + 1];
    rk_error err = {{0}};
    rk_chain ch;
    rk_status st = rk_chain_read(chain_path, &ch, &err);
    if (st) return cli_report("simulate", st, &err);
    rk_schedule s;
    st = rk_schedule_read(sched_path, &ch, &s, &err);
    if (st) {
        rk_chain_free(&ch);
        return cli_report("simulate", st, &err);
    }
    rk_sim_result res;
    st = rk_simulate(&ch, &s, &res, &err);
    if (st) {
        rk_schedule_free(&s);
        rk_chain_free(&ch);
        return cli_report("simulate", st, &err);
    }
    int within = s.budget < 0 || res.peak <= s.budget;
    if (json) {
        printf("{\"valid\": true, \"peak\": %lld, \"peak_op\": %d, \"time\": %.17g, \"time_at_peak\": %.17g, "
               "\"baseline_time\": %.17g, \"overhead\": %.17g, \"runs\": %d, \"forgets\": %d, \"budget\": %lld, "
               "\"within_budget\": %s, \"predicted_peak\": %lld, \"predicted_time\": %.17g",
               (long long)res.peak, res.peak_op, res.time, res.time_at_peak, res.baseline_time, res.overhead,
               res.n_runs, res.n_forgets, (long long)s.budget, within ? "true" : "false",
               (long long)s.predicted_peak, s.predicted_time);
        if (explain) {
            printf(", \"peak_explain\": ");
            peak_explain(stdout, &ch, &s, 1, &err); /* replayed above: cannot fail but for memory */
        }
        printf("}\n");
    } else {
        char b1[32], b2[32];
        printf("schedule      %s (%s%s)\n", sched_path, s.algo ? s.algo : "unknown algorithm",
               s.budget >= 0 ? ", budget given" : "");
        printf("ops           %d runs, %d forgets\n", res.n_runs, res.n_forgets);
        printf("peak memory   %lld bytes (%s) at op %d, t = %.3f us\n", (long long)res.peak,
               rk_format_bytes(res.peak, b1, sizeof b1), res.peak_op, res.time_at_peak);
        if (s.budget >= 0)
            printf("budget        %lld bytes (%s): %s\n", (long long)s.budget, rk_format_bytes(s.budget, b2, sizeof b2),
                   within ? "within" : "EXCEEDED");
        printf("time          %.3f us (every node once: %.3f us; overhead %+.2f %%)\n", res.time, res.baseline_time,
               100.0 * res.overhead);
        if (s.predicted_peak >= 0)
            printf("predicted     peak %lld bytes, time %.3f us (%s)\n", (long long)s.predicted_peak, s.predicted_time,
                   (s.predicted_peak == res.peak) ? "peak matches" : "peak differs");
        if (explain) peak_explain(stdout, &ch, &s, 0, &err);
    }
    rk_schedule_free(&s);
    rk_chain_free(&ch);
    return CLI_OK;
}
