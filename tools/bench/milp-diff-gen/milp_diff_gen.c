/* milp_diff_gen.c — writes one small rk-Checkmate ILP as MPS for the
 * differential test against HiGHS (tools/bench/milp-diff, family
 * "checkmate").  Uses only the public API (rk_graph.h, rk_checkmate.h,
 * rk_milp.h): a random block of tests/checkmate/cm_testlib.c (or, now and
 * then, a small GPT2 block of the checkmate benchmark), its grid's M_peak
 * range (rk_checkmate_peak_range, which solves the min-peak ILP), then
 * either that min-peak ILP itself (12 %) or the model's LP for a random
 * budget pair: M_peak in [0.93 min peak, 1.02 keep-all peak], M_save none or
 * in [output size, M_peak].
 *
 *   milp-diff-gen SEED OUT.mps
 *
 * Prints one JSON line (the block, the budgets, the LP's size).  A budget
 * the model's presolve already proves infeasible is redrawn (up to 20 times,
 * then the keep-all peak is used).  Exit 0 on success, 1 on failure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_testlib.h"
#include "gpt2_block.h"
#include "rk_checkmate.h"

static unsigned long long st;
static unsigned rnd(void) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(st >> 33);
}
static double unif(void) { return rnd() / 2147483648.0; }

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: milp-diff-gen SEED OUT.mps\n");
        return 2;
    }
    char *end;
    unsigned long seed = strtoul(argv[1], &end, 10);
    if (*end || end == argv[1]) {
        fprintf(stderr, "milp-diff-gen: SEED must be a number, got '%s'\n", argv[1]);
        return 2;
    }
    st = seed * 0x9E3779B97F4A7C15ULL + 12345;
    rnd();
    rk_error err;
    err.msg[0] = 0;
    rk_graph g;
    char block[64];
    int gpt = rnd() % 100 < 12;
    if (gpt) {
        int heads = 1 + (int)(rnd() % 4), batch = 1 + (int)(rnd() % 4), seq = 8 << (rnd() % 4);
        int hidden = heads * (8 << (rnd() % 3));
        snprintf(block, sizeof block, "gpt2 b%d s%d h%d a%d", batch, seq, hidden, heads);
        if (gpt2_block(&g, batch, seq, hidden, heads, &err)) {
            fprintf(stderr, "milp-diff-gen: %s\n", err.msg);
            return 1;
        }
    } else {
        int max_fwd = 2 + (int)(rnd() % 7); /* cm_testlib holds at most 8 forward nodes */
        unsigned bseed = rnd();
        snprintf(block, sizeof block, "random seed %u max_fwd %d", bseed, max_fwd);
        if (cmt_random_block(bseed, max_fwd, &g, &err)) {
            fprintf(stderr, "milp-diff-gen: %s\n", err.msg);
            return 1;
        }
    }
    rk_checkmate_model *m = NULL;
    if (rk_checkmate_model_build(&g, &m, &err)) {
        fprintf(stderr, "milp-diff-gen: %s: %s\n", block, err.msg);
        rk_graph_free(&g);
        return 1;
    }
    /* the M_peak range of the block's grid: [min-peak ILP's optimum, keep-all's peak] */
    rk_checkmate_params cp;
    rk_checkmate_params_default(&cp);
    cp.threads = 1;
    cp.time_limit = 30;
    int minpeak_ilp = unif() < 0.12;
    char dir[4096], prefix[256], mpath[4600];
    if (minpeak_ilp) {
        /* write the min-peak ILP itself (M_peak a column) beside OUT.mps */
        const char *slash = strrchr(argv[2], '/');
        if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - argv[2]), argv[2]);
        else snprintf(dir, sizeof dir, ".");
        snprintf(prefix, sizeof prefix, "mdg%lu_%ld", seed, (long)getpid());
        cp.export_dir = dir;
        cp.export_prefix = prefix;
    }
    int64_t minp = 0, maxp = 0;
    if (rk_checkmate_peak_range(&g, &cp, &minp, &maxp, &err)) {
        fprintf(stderr, "milp-diff-gen: %s: peak range: %s\n", block, err.msg);
        return 1;
    }
    if (minpeak_ilp) {
        snprintf(mpath, sizeof mpath, "%s/%s_minpeak.mps", dir, prefix);
        if (rename(mpath, argv[2]) != 0) {
            fprintf(stderr, "milp-diff-gen: %s: no min-peak ILP written (%s)\n", block, mpath);
            return 1;
        }
        printf("{\"block\": \"%s\", \"ilp\": \"min-peak\", \"min_peak\": %" PRId64 ", \"keep_all_peak\": %" PRId64
               "}\n", block, minp, maxp);
        rk_checkmate_model_free(m);
        rk_graph_free(&g);
        return 0;
    }
    int64_t outsz = g.d[g.output].size;
    rk_lp *lp = NULL;
    int64_t mp = maxp, ms = -1;
    for (int tries = 0; tries <= 20; tries++) {
        if (tries < 20) {
            /* mostly inside the range, some just below the minimum (infeasible) */
            double lo = 0.93 * (double)minp, hi = 1.02 * (double)maxp;
            mp = (int64_t)(lo + (hi - lo) * unif());
            if (mp < 1) mp = 1;
            ms = -1;
            if (unif() < 0.6) {
                int64_t l = outsz < mp ? outsz : mp;
                ms = l + (int64_t)((double)(mp - l) * unif());
            }
        } else {
            mp = maxp;
            ms = -1;
        }
        rk_status s = rk_checkmate_model_lp(m, mp, ms, &lp, &err);
        if (s == RK_OK) break;
        if (s != RK_EINFEASIBLE) {
            fprintf(stderr, "milp-diff-gen: %s: %s\n", block, err.msg);
            return 1;
        }
        lp = NULL;
    }
    if (!lp) {
        fprintf(stderr, "milp-diff-gen: %s: no budget gives an LP (M_peak %" PRId64 ": %s)\n", block, mp, err.msg);
        return 1;
    }
    if (rk_mps_write(argv[2], lp, &err)) {
        fprintf(stderr, "milp-diff-gen: %s\n", err.msg);
        return 1;
    }
    printf("{\"block\": \"%s\", \"ilp\": \"budget\", \"m_peak\": %" PRId64 ", \"m_save\": %" PRId64
           ", \"min_peak\": %" PRId64 ", \"keep_all_peak\": %" PRId64 "}\n",
           block, mp, ms, minp, maxp);
    rk_lp_free(lp);
    rk_checkmate_model_free(m);
    rk_graph_free(&g);
    return 0;
}
