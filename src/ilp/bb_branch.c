/* bb_branch.c — owns the branching decision of branch-and-bound: reliability
 * branching with hybrid scores.  Each integer column keeps pseudocosts
 * (average objective gain per unit of change, down and up); a column whose
 * pseudocosts rest on fewer than c->reliable observations (BB_RELIABLE, or 0
 * with the parameter pseudocost_branching; rk_milp_params.sb_reliability) is
 * evaluated by strong branching (at most sb_max_candidates columns a node, a
 * few dual simplex iterations on each child from the node's basis), which
 * also initialises its pseudocosts.  Children found infeasible by strong
 * branching tighten the node instead.  Score (hybrid branching, as SCIP's
 * and HiGHS's): the product of the two gains relative to the average gain,
 * plus, with smaller weights, how often the column took part in learned
 * conflicts, how often its children died, and how many bound changes
 * branching on it let propagation find, each relative to its average.  The history behind the last three
 * (bb_hist_*) is kept here too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define BB_SB_MAX_CANDS 10
#define BB_SB_LOOKAHEAD 4
#define BB_SB_ITER_CAP 500

/* weights of the history scores beside the gains' (whose weight is 1) */
#define BB_W_CONFLICT 1e-2
#define BB_W_CUTOFF 1e-4
#define BB_W_INFERENCE 1e-4
/* the conflict weight grows by this factor with every conflict learned */
#define BB_CF_GROWTH 1.02

void bb_update_pseudocost(bb_ctx *c, int col, int dir, double delta_z, double frac) {
    if (frac < 1e-9 || !isfinite(delta_z)) return;
    if (delta_z < 0) delta_z = 0;
    c->pc_sum[dir][col] += delta_z / frac;
    c->pc_cnt[dir][col]++;
    c->hist_pc_n++;
}

int bb_hist_alloc(bb_ctx *c, size_t nn) {
    for (int d = 0; d < 2; d++) {
        c->hist_inf[d] = calloc(nn, sizeof(double));
        c->hist_inf_cnt[d] = calloc(nn, sizeof(int));
        c->hist_cut[d] = calloc(nn, sizeof(int));
        c->hist_cf[d] = calloc(nn, sizeof(double));
        if (!c->hist_inf[d] || !c->hist_inf_cnt[d] || !c->hist_cut[d] || !c->hist_cf[d]) return -1;
    }
    c->hist_cf_weight = 1;
    return 0;
}

void bb_hist_free(bb_ctx *c) {
    for (int d = 0; d < 2; d++) {
        free(c->hist_inf[d]);
        free(c->hist_inf_cnt[d]);
        free(c->hist_cut[d]);
        free(c->hist_cf[d]);
        c->hist_inf[d] = c->hist_cf[d] = NULL;
        c->hist_inf_cnt[d] = c->hist_cut[d] = NULL;
    }
}

void bb_hist_inference(bb_ctx *c, int col, int dir, int k) {
    if (col < 0 || !c->hist_inf[0]) return;
    c->hist_inf[dir][col] += k;
    c->hist_inf_cnt[dir][col]++;
    c->hist_inf_total += k;
    c->hist_inf_n++;
}

void bb_hist_cutoff(bb_ctx *c, int col, int dir) {
    if (col < 0 || !c->hist_cut[0]) return;
    c->hist_cut[dir][col]++;
    c->hist_cut_n++;
}

void bb_hist_conflict(bb_ctx *c, const int *idx, const double *val, int len) {
    if (!c->hist_cf[0]) return;
    double w = c->hist_cf_weight;
    for (int k = 0; k < len; k++) {
        /* a > 0: the row bounds x_j from above, so the up branch is the one
         * the conflict speaks against (and the down branch for a < 0) */
        c->hist_cf[val[k] > 0 ? 1 : 0][idx[k]] += w;
        c->hist_cf_total += w;
    }
    c->hist_cf_weight *= BB_CF_GROWTH;
    if (c->hist_cf_weight > 1e3) {
        /* rescale before the weights overflow: only ratios matter */
        double s = 1 / c->hist_cf_weight;
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < c->n; j++) c->hist_cf[d][j] *= s;
        c->hist_cf_total *= s;
        c->hist_cf_weight = 1;
    }
}

static double bb_pc(const bb_ctx *c, int col, int dir, double avg) {
    return c->pc_cnt[dir][col] ? c->pc_sum[dir][col] / c->pc_cnt[dir][col] : avg;
}

/* The hybrid score of column j whose children gain gd (down) and gu (up);
 * avg_gain: the average gain per unit of the observed pseudocosts.  Each
 * part is a product over the two directions relative to the square of its
 * average (as SCIP's hybrid score), so that with zero weights the order is
 * the pseudocosts' alone. */
static double bb_hybrid_score(const bb_ctx *c, int j, double gd, double gu, double avg_gain) {
    const double eps = 1e-6;
    double s = fmax(gd, eps) * fmax(gu, eps) / fmax(eps, avg_gain * avg_gain);
    int n = c->n ? c->n : 1;
    if (c->hist_cf_total > 0) {
        double avg = c->hist_cf_total / (2.0 * n);
        s += BB_W_CONFLICT * fmax(c->hist_cf[0][j], eps * avg) * fmax(c->hist_cf[1][j], eps * avg) / (avg * avg);
    }
    if (c->hist_cut_n > 0) {
        double r[2];
        for (int d = 0; d < 2; d++) r[d] = c->hist_cut[d][j] / fmax(1.0, (double)(c->hist_cut[d][j] + c->pc_cnt[d][j]));
        double avg = (double)c->hist_cut_n / fmax(1.0, (double)(c->hist_cut_n + c->hist_pc_n));
        s += BB_W_CUTOFF * fmax(r[0], eps) * fmax(r[1], eps) / fmax(eps, avg * avg);
    }
    if (c->hist_inf_n > 0 && c->hist_inf_total > 0) {
        double r[2];
        for (int d = 0; d < 2; d++)
            r[d] = c->hist_inf_cnt[d][j] ? c->hist_inf[d][j] / c->hist_inf_cnt[d][j] : 0;
        double avg = c->hist_inf_total / (double)c->hist_inf_n;
        s += BB_W_INFERENCE * fmax(r[0], eps) * fmax(r[1], eps) / (avg * avg);
    }
    return s;
}

typedef struct {
    int col;
    double score;
} bb_cand;

static int bb_cand_cmp(const void *a, const void *b) {
    const bb_cand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->col - y->col;
}

/* Solve one strong-branching child: returns 1 if infeasible / cut off, else
 * 0 with *zc its value (a valid bound only if optimal: *exact). */
static int bb_strong_child(bb_ctx *c, int j, int dir, double xj, long iters, const spx_state *saved,
                           double *zc, int *exact) {
    double olb = c->llb[j], oub = c->lub[j];
    double nlb = olb, nub = oub;
    if (dir) nlb = ceil(xj);
    else nub = floor(xj);
    spx_set_col_bounds(c->lps, j, nlb, nub);
    c->slb[j] = nlb;
    c->sub[j] = nub;
    long it0 = spx_iterations(c->lps);
    rk_lp_status st = bb_solve_lp(c, iters, BB_LP_CUTOFF | BB_LP_TRIAL);
    c->it_sb += spx_iterations(c->lps) - it0;
    int inf = 0;
    *exact = 0;
    if (st == RK_LP_INFEASIBLE) bb_conflict_learn_lp(c); /* a dual proof for the pool */
    if (st == RK_LP_CUTOFF) bb_conflict_learn_cutoff(c);
    if (st == RK_LP_INFEASIBLE || st == RK_LP_CUTOFF) inf = 1;
    else if (st == RK_LP_OPTIMAL || st == RK_LP_ITER_LIMIT) {
        double z = c->sense * spx_objective(c->lps);
        *zc = z;
        *exact = st == RK_LP_OPTIMAL;
        if (*exact && z >= bb_cutoff(c)) inf = 1;
    } else {
        *zc = c->z;
    }
    /* back to the node's LP: bounds, basis, solution and factors */
    spx_state_restore(c->lps, saved);
    c->slb[j] = olb;
    c->sub[j] = oub;
    return inf;
}

int bb_select_branch_var(bb_ctx *c, int *prefer_up, int depth) {
    int n = c->n;
    bb_cand *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    if (!cand) return -3;
    /* average pseudocosts over all observed columns (for the unobserved) */
    double avg[2] = {1, 1};
    for (int d = 0; d < 2; d++) {
        double s = 0;
        long k = 0;
        for (int j = 0; j < n; j++)
            if (c->pc_cnt[d][j]) { s += c->pc_sum[d][j] / c->pc_cnt[d][j]; k++; }
        if (k) avg[d] = s / (double)k;
    }
    double avg_gain = 0.5 * (avg[0] + avg[1]);
    int nc = 0;
    for (int j = 0; j < n; j++) {
        if (!c->is_int[j]) continue;
        double f = c->x[j] - floor(c->x[j]);
        if (f <= BB_INT_TOL || f >= 1 - BB_INT_TOL) continue;
        double s = bb_hybrid_score(c, j, bb_pc(c, j, 0, avg[0]) * f, bb_pc(c, j, 1, avg[1]) * (1 - f), avg_gain);
        cand[nc].col = j;
        cand[nc].score = s;
        nc++;
    }
    if (nc == 0) { free(cand); return -3; }
    if (c->reliable == 0) {
        /* every pseudocost is trusted: the first candidate in sorted order
         * (largest score, then smallest column) wins, found without sorting */
        int b = 0;
        for (int k = 1; k < nc; k++)
            if (bb_cand_cmp(&cand[k], &cand[b]) < 0) b = k;
        cand[0] = cand[b];
        nc = 1;
    } else {
        qsort(cand, (size_t)nc, sizeof *cand, bb_cand_cmp);
    }

    /* strong branching on unreliable candidates, in pseudocost order */
    int best = cand[0].col;
    double best_score = -1;
    int tightened = 0;
    int sb_done = 0, no_improve = 0;
    spx_state *saved = NULL;
    int have_basis = 0;
    int max_cands = depth < 10 ? BB_SB_MAX_CANDS : BB_SB_MAX_CANDS / 2;
    if (c->par->sb_max_candidates > 0) max_cands = c->par->sb_max_candidates;
    long it_limit = 20 + 2 * (long)c->m;
    if (it_limit > BB_SB_ITER_CAP) it_limit = BB_SB_ITER_CAP;
    if (c->par->sb_max_iterations > 0) it_limit = c->par->sb_max_iterations;
    for (int k = 0; k < nc; k++) {
        int j = cand[k].col;
        double f = c->x[j] - floor(c->x[j]);
        int reliable = c->pc_cnt[0][j] >= c->reliable && c->pc_cnt[1][j] >= c->reliable;
        double s;
        if (!reliable && sb_done < max_cands && no_improve < BB_SB_LOOKAHEAD && !bb_time_up(c)) {
            if (!have_basis) {
                saved = spx_state_save(c->lps, c->sb_state);
                if (!saved) break;
                c->sb_state = saved;
                have_basis = 1;
            }
            double zd = c->z, zu = c->z;
            int exd, exu;
            int infd = bb_strong_child(c, j, 0, c->x[j], it_limit, saved, &zd, &exd);
            int infu = bb_strong_child(c, j, 1, c->x[j], it_limit, saved, &zu, &exu);
            sb_done++;
            if (infd) bb_hist_cutoff(c, j, 0);
            if (infu) bb_hist_cutoff(c, j, 1);
            if (infd && infu) {
                free(cand);
                return -1;
            }
            if (infd || infu) {
                /* the other side is the only one left: tighten the node */
                if (infd) c->llb[j] = ceil(c->x[j]);
                else c->lub[j] = floor(c->x[j]);
                tightened = 1;
                continue;
            }
            bb_update_pseudocost(c, j, 0, zd - c->z, f);
            bb_update_pseudocost(c, j, 1, zu - c->z, 1 - f);
            s = bb_hybrid_score(c, j, zd - c->z, zu - c->z, avg_gain);
        } else {
            s = cand[k].score;
            if (!reliable && sb_done >= max_cands) s = cand[k].score;
        }
        if (s > best_score * (1 + 1e-9) || best_score < 0) {
            if (s > best_score) no_improve = 0;
            best_score = s;
            best = j;
        } else {
            no_improve++;
        }
    }
    free(cand);
    if (tightened) return -2;
    double f = c->x[best] - floor(c->x[best]);
    double gd = bb_pc(c, best, 0, avg[0]) * f, gu = bb_pc(c, best, 1, avg[1]) * (1 - f);
    /* explore first the child that looks better: smaller gain; without an
     * incumbent go up (towards fixing binaries on, usually feasible faster) */
    if (!c->has_inc) *prefer_up = f >= 0.5 ? 1 : (gu <= gd);
    else *prefer_up = gu < gd;
    return best;
}
