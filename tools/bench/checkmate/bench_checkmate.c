/* bench_checkmate.c — rk-Checkmate benchmark: the full budget grid of each
 * unique block (a GPT2 block built here, or the classes of a .rkg chain),
 * solved by rkmate's own MILP solver; then CBC (1 thread) on the same
 * exported MPS files, objectives compared, and with --highs PYTHON HiGHS too
 * (highspy under that Python, 1 thread, its own read + solve time).
 *
 * The timed grid writes no file; when CBC runs (or --keep), the grid is
 * solved once more, untimed, to export its ILPs (the same ones: the grid is
 * deterministic), so that writing MPS text for the peer is not counted as
 * solving time.
 *
 *   bench_checkmate [--chain FILE.rkg] [--grid PxS] [--threads N]
 *                   [--batch B --seq S --hidden H --heads A]
 *                   [--time-limit S] [--no-cbc] [--keep DIR] [--highs PYTHON]
 *                   [--list]   (with --no-cbc: one line per ILP, own solver only)
 *                   [--verbose] (one line per ILP on stderr: looser optimum, incumbent;
 *                                twice: the MILP solver's own log of every ILP too)
 *                   [--seed N] (the MILP solver's seed: another, equally valid
 *                              search; the time's spread over seeds shows
 *                              how much of it is the search's luck) */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cbc_solve.h"
#include "highs_solve.h"
#include "gpt2_block.h"
#include "rk_checkmate.h"

typedef struct {
    char tag[128];
    int status;
    double obj, time_s;
} rec;

typedef struct {
    rec *r;
    int n, cap;
} recs;

static rk_status own_solve(void *ctx, const char *tag, const rk_lp *lp, const rk_milp_params *mp, rk_milp_result *res,
                           rk_error *err) {
    recs *R = ctx;
    rk_status st = rk_milp_solve(lp, mp, res, err);
#pragma omp critical(bench_recs)
    {
        if (R->n == R->cap) {
            R->cap = R->cap ? 2 * R->cap : 256;
            R->r = realloc(R->r, (size_t)R->cap * sizeof *R->r);
        }
        rec *x = &R->r[R->n++];
        snprintf(x->tag, sizeof x->tag, "%s", tag);
        x->status = st ? -1 : (int)res->status;
        x->obj = res->has_solution ? res->objective : NAN;
        x->time_s = res->time_s;
    }
    return st;
}

static int cmp_rec(const void *a, const void *b) { return strcmp(((const rec *)a)->tag, ((const rec *)b)->tag); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A peer's answer against the own solver's record: "same", "DIFFERENT" or
 * `unsolved` (neither optimal nor infeasible); counts[0..2] (same,
 * different, unsolved) is incremented accordingly. */
static const char *peer_verdict(const rk_milp_result *peer, const rec *own, int counts[3], const char *unsolved) {
    if (peer->status != RK_MILP_OPTIMAL && peer->status != RK_MILP_INFEASIBLE) {
        counts[2]++;
        return unsolved;
    }
    int same = peer->status == RK_MILP_INFEASIBLE
                   ? own->status == RK_MILP_INFEASIBLE
                   : fabs(peer->objective - own->obj) <= 1e-6 * fmax(1, fabs(peer->objective));
    counts[same ? 0 : 1]++;
    return same ? "same" : "DIFFERENT";
}

int main(int argc, char **argv) {
    const char *chain_path = NULL, *keep = NULL, *highs_py = NULL;
    int P = 20, S = 20, threads = 2, batch = 8, seq = 512, hidden = 768, heads = 12, cbc = 1;
    double tl = 10;
    int list = 0, verbose = 0;
    unsigned seed = 0;
    static struct option lo[] = {{"chain", 1, 0, 'c'}, {"grid", 1, 0, 'g'}, {"threads", 1, 0, 't'},
                                 {"batch", 1, 0, 'b'}, {"seq", 1, 0, 's'},  {"hidden", 1, 0, 'H'},
                                 {"heads", 1, 0, 'a'}, {"time-limit", 1, 0, 'T'}, {"no-cbc", 0, 0, 'n'},
                                 {"keep", 1, 0, 'k'},  {"list", 0, 0, 'l'}, {"verbose", 0, 0, 'v'},
                                 {"seed", 1, 0, 'S'},  {"highs", 1, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'c': chain_path = optarg; break;
        case 'g':
            if (sscanf(optarg, "%dx%d", &P, &S) != 2 || P < 1 || S < 1) {
                fprintf(stderr, "bench_checkmate: --grid wants PxS, e.g. 20x20\n");
                return 2;
            }
            break;
        case 't': threads = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 's': seq = atoi(optarg); break;
        case 'H': hidden = atoi(optarg); break;
        case 'a': heads = atoi(optarg); break;
        case 'T': tl = atof(optarg); break;
        case 'n': cbc = 0; break;
        case 'k': keep = optarg; break;
        case 'l': list = 1; break;
        case 'h': highs_py = optarg; break;
        case 'v': verbose++; break;
        case 'S': {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (*optarg == '-' || *end || end == optarg || v > 0xffffffffUL) {
                fprintf(stderr, "bench_checkmate: --seed wants a number from 0 to 4294967295, got '%s'\n", optarg);
                return 2;
            }
            seed = (unsigned)v;
            break;
        }
        default: return 2;
        }
    }
    rk_error err;
    rk_chain ch;
    rk_chain_init(&ch);
    if (chain_path) {
        if (rk_chain_read(chain_path, &ch, &err)) {
            fprintf(stderr, "bench_checkmate: %s\n", err.msg);
            return 2;
        }
    } else {
        rk_graph g;
        if (gpt2_block(&g, batch, seq, hidden, heads, &err)) {
            fprintf(stderr, "bench_checkmate: %s\n", err.msg);
            return 1;
        }
        int c = rk_chain_add_class(&ch, &g);
        rk_chain_add_block(&ch, "h0", c);
    }
    char dir[256];
    if (keep) snprintf(dir, sizeof dir, "%s", keep);
    else {
        snprintf(dir, sizeof dir, "/tmp/rkcm_benchXXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    printf("rk-Checkmate benchmark: %s, grid %dx%d, %d threads, time limit %g s per ILP, seed %u\n",
           chain_path ? chain_path : "GPT2 block (built-in graph)", P, S, threads, tl, seed);
    if (!chain_path)
        printf("GPT2 block: batch %d, seq %d, hidden %d, heads %d\n", batch, seq, hidden, heads);
    recs R = {0};
    rk_checkmate_params p;
    rk_checkmate_params_default(&p);
    p.grid_peak = P;
    p.grid_save = S;
    p.threads = threads;
    p.time_limit = tl;
    p.seed = seed;
    p.export_dir = NULL; /* the timed run writes nothing; see the export run below */
    p.export_prefix = "bench";
    p.solve = own_solve;
    p.solve_ctx = &R;
    p.verbose = verbose;
    double total_own = 0;
    int total_ilps = 0;
    for (int c = 0; c < ch.n_classes; c++) {
        const rk_graph *g = &ch.classes[c];
        char prefix[64];
        snprintf(prefix, sizeof prefix, "bench_c%d", c);
        p.export_prefix = prefix;
        rk_option *opts = NULL;
        int n = 0;
        rk_checkmate_stats st;
        double t0 = now_s();
        rk_status r = rk_checkmate_block_options(g, &p, &opts, &n, &st, &err);
        double wall = now_s() - t0;
        if (r) {
            fprintf(stderr, "bench_checkmate: class %d: %s\n", c, err.msg);
            return 1;
        }
        total_own += wall;
        total_ilps += st.n_ilps + 1;
        printf("class %d: %d compute, %d data nodes; M_peak range [%lld, %lld] bytes\n", c, g->n_c, g->n_d,
               (long long)st.min_peak, (long long)st.max_peak);
        printf("  budgets %d: ILPs solved %d (+1 min-peak), answered by a looser optimum %d, infeasible %d, "
               "time-limited %d\n",
               st.n_budgets, st.n_ilps, st.n_reused, st.n_infeasible, st.n_timeout);
        printf("  per ILP: %d columns, %d rows (largest); mean %.0f x %.0f\n", st.max_cols, st.max_rows,
               st.n_ilps ? (double)st.sum_cols / st.n_ilps : 0, st.n_ilps ? (double)st.sum_rows / st.n_ilps : 0);
        printf("  unique options: %d\n", n);
        printf("  wall time (own MILP solver, %d threads): %.3f s (sum of solver times %.3f s)\n", threads, wall,
               st.solve_time_s);
        for (int i = 0; i < n; i++) rk_option_free(&opts[i]);
        free(opts);
        if (cbc || keep) {
            /* the export run: the same grid again, untimed, writing every ILP */
            recs R2 = {0};
            rk_checkmate_params pe = p;
            pe.export_dir = dir;
            pe.solve_ctx = &R2;
            pe.verbose = 0;
            r = rk_checkmate_block_options(g, &pe, &opts, &n, &st, &err);
            free(R2.r);
            if (r) {
                fprintf(stderr, "bench_checkmate: class %d (export run): %s\n", c, err.msg);
                return 1;
            }
            for (int i = 0; i < n; i++) rk_option_free(&opts[i]);
            free(opts);
        }
    }
    printf("TOTAL own solver: %d ILPs, %.3f s wall on %d threads\n", total_ilps, total_own, threads);
    if (list && !cbc) {
        qsort(R.r, (size_t)R.n, sizeof *R.r, cmp_rec);
        for (int i = 0; i < R.n; i++)
            printf("  %-22s own %-10s %14.4f %8.3f s\n", R.r[i].tag,
                   R.r[i].status >= 0 ? rk_milp_status_name((rk_milp_status)R.r[i].status) : "error", R.r[i].obj,
                   R.r[i].time_s);
    }
    if (cbc) {
        qsort(R.r, (size_t)R.n, sizeof *R.r, cmp_rec);
        double cbc_total = 0, own_total = 0, highs_total = 0;
        int cbc_n[3] = {0, 0, 0}, highs_n[3] = {0, 0, 0}; /* same, different, unsolved */
        for (int i = 0; i < R.n; i++) {
            char mps[512], sol[512];
            snprintf(mps, sizeof mps, "%s/%s.mps", dir, R.r[i].tag);
            snprintf(sol, sizeof sol, "%s/%s.cbc.sol", dir, R.r[i].tag);
            rk_lp *lp = NULL;
            if (rk_mps_read(mps, &lp, &err)) {
                fprintf(stderr, "bench_checkmate: %s\n", err.msg);
                return 1;
            }
            rk_milp_result res;
            double w = 0;
            if (cbc_solve_file(mps, sol, 1, tl, lp, &res, &w, &err)) {
                fprintf(stderr, "bench_checkmate: %s\n", err.msg);
                return 1;
            }
            cbc_total += w;
            own_total += R.r[i].time_s;
            const char *verdict = peer_verdict(&res, &R.r[i], cbc_n, "cbc-unsolved");
            printf("  %-22s own %-10s %14.4f %8.3f s | cbc %-10s %14.4f %8.3f s  %s", R.r[i].tag,
                   R.r[i].status >= 0 ? rk_milp_status_name((rk_milp_status)R.r[i].status) : "error", R.r[i].obj,
                   R.r[i].time_s, rk_milp_status_name(res.status), res.has_solution ? res.objective : NAN, w, verdict);
            if (highs_py) {
                rk_milp_result hr;
                double hw = 0;
                if (highs_solve_file(highs_py, mps, tl, &hr, &hw, &err)) {
                    fprintf(stderr, "bench_checkmate: %s\n", err.msg);
                    return 1;
                }
                highs_total += hw;
                const char *hv = peer_verdict(&hr, &R.r[i], highs_n, "highs-unsolved");
                printf(" | highs %-10s %14.4f %8.3f s  %s", rk_milp_status_name(hr.status), hr.objective, hw, hv);
            }
            printf("\n");
            rk_milp_result_free(&res);
            rk_lp_free(lp);
        }
        printf("CBC (1 thread) on the same %d MPS files: %.3f s total (own solver: %.3f s summed over ILPs, %.3f s wall)\n",
               R.n, cbc_total, own_total, total_own);
        printf("objectives: %d equal, %d different, %d not solved by CBC in %g s\n", cbc_n[0], cbc_n[1], cbc_n[2], tl);
        printf("speed-up vs CBC: %.2fx (CBC total / own wall)\n", total_own > 0 ? cbc_total / total_own : 0);
        if (highs_py) {
            printf("HiGHS (1 thread) on the same %d MPS files: %.3f s total (its own read + solve times)\n", R.n,
                   highs_total);
            printf("objectives: %d equal, %d different, %d not solved by HiGHS in %g s\n", highs_n[0], highs_n[1],
                   highs_n[2], tl);
            printf("speed-up vs HiGHS: %.2fx (HiGHS total / own wall), %.2fx (HiGHS total / own summed)\n",
                   total_own > 0 ? highs_total / total_own : 0, own_total > 0 ? highs_total / own_total : 0);
        }
    }
    if (!keep) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) {}
    }
    free(R.r);
    rk_chain_free(&ch);
    return 0;
}
