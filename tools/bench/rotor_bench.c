/* rotor_bench.c — benchmark of the rk-Rotor table fill (tools/bench/rotor):
 * random chains of L blocks with N options per block, the table filled with
 * 1 and with T threads (the peer: the same fill on one thread; the two must
 * give the same optimum), its size, and Rotor (2 options per block) on the
 * same chain on one thread.  Also measured in the same run: the speed-up of
 * a plain parallel loop on T threads (what the machine can give right now)
 * and, per fill, cpu-est = T * cpu(1 thread) / cpu(T threads), the speed-up
 * on T idle cores when the threads are balanced -- a busy machine hides it
 * from the wall clock.
 *
 *   bench-rotor [--lengths 25,50,100,200] [--slots 500] [--options 30]
 *               [--threads 2] [--repeat 3] [--seed 1] [--json]
 */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rk_dp.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Best wall time of `repeat` fills; *cpu = the process CPU time of that fill
 * (all threads). */
static double fill_time(const rk_dp_costs *c, int64_t budget, int slots, int threads, int repeat, double *opt,
                        size_t *bytes, double *cpu) {
    rk_dp_params p;
    rk_dp_params_default(&p);
    p.slots = slots;
    p.threads = threads;
    double best = INFINITY;
    for (int r = 0; r < repeat; r++) {
        rk_dp_table *t;
        rk_error err;
        double t0 = omp_get_wtime(), c0 = cpu_now();
        if (rk_dp_table_fill(c, budget, &p, &t, &err)) {
            fprintf(stderr, "bench-rotor: %s\n", err.msg);
            exit(1);
        }
        double dt = omp_get_wtime() - t0, dc = cpu_now() - c0;
        if (dt < best) {
            best = dt;
            *cpu = dc;
        }
        *opt = rk_dp_table_time(t);
        *bytes = rk_dp_table_bytes(t);
        rk_dp_table_free(t);
    }
    return best;
}

/* The machine's own T-thread speed-up right now: an embarrassingly parallel
 * loop of about the same length, 1 thread vs T (a busy machine shows < T). */
static double calibrate(int threads, int repeat) {
    double best[2] = {INFINITY, INFINITY};
    volatile double sink = 0;
    for (int r = 0; r < repeat; r++)
        for (int k = 0; k < 2; k++) {
            int nt = k ? threads : 1;
            double t0 = omp_get_wtime(), acc = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : acc) schedule(static)
            for (long i = 0; i < 100000000L; i++) acc += (double)(i % 7) * 1e-9;
            double dt = omp_get_wtime() - t0;
            sink += acc;
            if (dt < best[k]) best[k] = dt;
        }
    (void)sink;
    return best[0] / best[1];
}

/* Rotor's view of the same chain: options 0 and 1 (keep all) only. */
static int rotor_costs(const rk_dp_costs *c, rk_dp_costs *r) {
    int n = c->n_classes;
    int *two = malloc((size_t)n * sizeof *two);
    if (!two) return 1;
    for (int k = 0; k < n; k++) two[k] = 2;
    if (rk_dp_costs_alloc(r, n, two, c->n_blocks)) {
        free(two);
        return 1;
    }
    free(two);
    memcpy(r->block_class, c->block_class, (size_t)c->n_blocks * sizeof *r->block_class);
    for (int k = 0; k < n; k++) {
        rk_dp_class_cost *d = &r->classes[k];
        const rk_dp_class_cost *s = &c->classes[k];
        rk_dp_option_cost *keep = d->opt;
        *d = *s;
        d->opt = keep;
        d->n_options = 2;
        d->keep_all = 1;
        d->opt[0] = s->opt[0];
        d->opt[1] = s->opt[s->keep_all];
    }
    return 0;
}

int main(int argc, char **argv) {
    static const struct option lo[] = {{"lengths", required_argument, 0, 'l'}, {"slots", required_argument, 0, 's'},
                                       {"options", required_argument, 0, 'o'}, {"threads", required_argument, 0, 't'},
                                       {"repeat", required_argument, 0, 'r'},  {"seed", required_argument, 0, 'e'},
                                       {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    char lengths[256] = "25,50,100,200";
    int slots = 500, nopt = 30, threads = 2, repeat = 3, json = 0, c;
    unsigned long seed = 1;
    while ((c = getopt_long(argc, argv, "l:s:o:t:r:e:jh", lo, NULL)) != -1) {
        switch (c) {
        case 'l': snprintf(lengths, sizeof lengths, "%s", optarg); break;
        case 's': slots = atoi(optarg); break;
        case 'o': nopt = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': repeat = atoi(optarg); break;
        case 'e': seed = strtoul(optarg, NULL, 10); break;
        case 'j': json = 1; break;
        default:
            printf("usage: bench-rotor [--lengths 25,50,100,200] [--slots 500] [--options 30] [--threads 2]\n"
                   "                   [--repeat 3] [--seed 1] [--json]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (slots < 1 || nopt < 2 || threads < 1 || repeat < 1) {
        fprintf(stderr, "bench-rotor: bad arguments\n");
        return 2;
    }
    double machine = calibrate(threads, repeat);
    if (!json)
        printf("machine: a plain parallel loop runs %.2fx faster on %d threads than on 1 right now\n", machine,
               threads);
    if (!json)
        printf("rk-Rotor table fill: %d slots, %d options per block (option 0 + %d with a backward), best of %d\n"
               "%6s %12s %12s %12s %9s %9s %10s %12s %10s\n",
               slots, nopt, nopt - 1, repeat, "L", "1 thread s", "threads", "T threads s", "speed-up", "cpu-est",
               "table MB", "rotor 1t s", "overhead");
    else
        printf("{\"machine_speedup\": %.3f, \"runs\": [", machine);
    int first = 1, bad = 0;
    for (char *tok = strtok(lengths, ","); tok; tok = strtok(NULL, ",")) {
        int L = atoi(tok);
        if (L < 1) continue;
        rk_dp_costs cst, rot;
        if (rk_dp_costs_random(&cst, L, nopt, seed + (unsigned long)L) || rotor_costs(&cst, &rot)) {
            fprintf(stderr, "bench-rotor: out of memory\n");
            return 1;
        }
        /* a budget between the least memory and keeping everything */
        rk_dp_plan pl;
        rk_dp_eval ev;
        rk_error err;
        int64_t lo_b = rk_dp_min_memory(&cst);
        if (rk_dp_plan_keep_all(&cst, &pl, &err) || rk_dp_plan_evaluate(&cst, &pl, &ev, &err)) {
            fprintf(stderr, "bench-rotor: %s\n", err.msg);
            return 1;
        }
        rk_dp_plan_free(&pl);
        int64_t budget = lo_b + (ev.peak - lo_b) / 3;
        double o1, oT, oR, c1, cT, cR;
        size_t b1, bT, bR;
        double t1 = fill_time(&cst, budget, slots, 1, repeat, &o1, &b1, &c1);
        double tT = fill_time(&cst, budget, slots, threads, repeat, &oT, &bT, &cT);
        double tR = fill_time(&rot, budget, slots, 1, repeat, &oR, &bR, &cR);
        double est = cT > 0 ? threads * c1 / cT : 0;
        double base = 0;
        for (int b = 0; b < L; b++) {
            const rk_dp_option_cost *x = &cst.classes[cst.block_class[b]].opt[1];
            base += x->fwd_time + x->bwd_time + x->loss_time;
        }
        if (memcmp(&o1, &oT, sizeof o1)) {
            fprintf(stderr, "bench-rotor: L=%d: 1-thread optimum %.17g differs from %d-thread %.17g\n", L, o1, threads,
                    oT);
            bad = 1;
        }
        if (json)
            printf("%s\n {\"L\": %d, \"slots\": %d, \"options\": %d, \"budget\": %lld, \"t1_s\": %.6f, \"threads\": %d, "
                   "\"tT_s\": %.6f, \"speedup\": %.3f, \"cpu1_s\": %.6f, \"cpuT_s\": %.6f, \"cpu_est_speedup\": %.3f, "
                   "\"table_bytes\": %zu, \"rotor_t1_s\": %.6f, \"overhead\": %.6f, \"rotor_overhead\": %.6f}",
                   first ? "" : ",", L, slots, nopt, (long long)budget, t1, threads, tT, t1 / tT, c1, cT, est, bT, tR,
                   o1 / base - 1, oR / base - 1);
        else
            printf("%6d %12.4f %12d %12.4f %9.2f %9.2f %10.1f %12.4f %9.2f%%\n", L, t1, threads, tT, t1 / tT, est,
                   bT / 1e6, tR, 100 * (o1 / base - 1));
        fflush(stdout);
        first = 0;
        rk_dp_costs_free(&cst);
        rk_dp_costs_free(&rot);
    }
    if (json) printf("\n]}\n");
    return bad;
}
