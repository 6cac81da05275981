/* bb_zerohalf.c — owns {0,1/2}-Chvatal-Gomory cuts (Caprara & Fischetti):
 * one side of each of a few model rows over integer columns with integer
 * coefficients and an integer side, written a_i x <= b_i, is summed (each
 * with multiplier 1/2); every column left with an odd coefficient gets its
 * bound row added (x_j <= u_j or -x_j <= -l_j, the one with the smaller slack
 * at the LP point, one of them switched when that makes the right side odd);
 * the sum, halved, has integer coefficients and a half-integer right side,
 * rounded down.  The cut is violated by (1 - the slacks of the rows and
 * bounds used) / 2 at the LP point x*.  The rows are chosen greedily from a
 * start row: while the cut is not violated enough, the odd column with the
 * largest bound slack is made even by adding the row (tight enough, not yet
 * used) with an odd coefficient on it that lowers the total slack most (or
 * keeps it level).  The
 * precedence and freeing rows of rk-Checkmate (x - y - z <= 0,
 * x - y + 2 z <= 1) are such rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define ZH_MAX_ROWS 6      /* rows summed in one cut */
#define ZH_MAX_SLACK 0.9   /* rows tighter than this at x* may be used */
#define ZH_MIN_VIOL 0.02

typedef struct {
    double *alpha;   /* n: the sum of the rows used */
    char *mark;      /* n: column in list */
    int *list;       /* n: columns touched */
    int nl;
} zh_work;

size_t bb_zerohalf_work_size(int n) {
    size_t k = n > 0 ? (size_t)n : 1;
    return sizeof(zh_work) + k * (sizeof(double) + sizeof(int) + 1) + 16;
}

static int zh_is_integral(double v) { return fabs(v - nearbyint(v)) <= 1e-9 && fabs(v) < 1e9; }

/* One side of row i as a x <= b (dir 0: <= ub, dir 1: -(row) <= -lb) with
 * integer data over integer columns: its slack at x*; -1 when not eligible. */
static double zh_row_slack(const bb_ctx *c, int i, int dir, double *b) {
    double side = dir == 0 ? c->row_ub[i] : -c->row_lb[i];
    if (!isfinite(side) || !zh_is_integral(side)) return -1;
    double ax = 0;
    for (long p = c->row_start[i]; p < c->row_start[i + 1]; p++) {
        int j = c->row_idx[p];
        if (!c->is_int[j] || !zh_is_integral(c->row_val[p])) return -1;
        ax += c->row_val[p] * c->x[j];
    }
    if (dir == 1) ax = -ax;
    *b = side;
    double s = side - ax;
    return s < 0 ? 0 : s;
}

static int zh_odd(double a) { return ((long long)nearbyint(fabs(a))) & 1; }

static double zh_bound_slack(const bb_ctx *c, int j) {
    double s = INFINITY;
    if (isfinite(c->glb[j])) s = fmax(0, c->x[j] - c->glb[j]);
    if (isfinite(c->gub[j])) s = fmin(s, fmax(0, c->gub[j] - c->x[j]));
    return s;
}

static void zh_add_row(const bb_ctx *c, zh_work *W, int i, int dir) {
    double sg = dir == 0 ? 1 : -1;
    for (long p = c->row_start[i]; p < c->row_start[i + 1]; p++) {
        int j = c->row_idx[p];
        if (!W->mark[j]) {
            W->mark[j] = 1;
            W->list[W->nl++] = j;
        }
        W->alpha[j] += sg * c->row_val[p];
    }
}

/* Total bound slack of the odd columns of alpha (INFINITY if one has no
 * finite bound). */
static double zh_odd_slack(const bb_ctx *c, const zh_work *W) {
    double s = 0;
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        if (zh_odd(W->alpha[j])) s += zh_bound_slack(c, j);
    }
    return s;
}

/* Slack added by row r's side when summed with alpha: its own slack plus the
 * change in the odd columns' bound slack. */
static double zh_delta(const bb_ctx *c, const zh_work *W, int r, int dir, double rs) {
    double d = rs, sg = dir == 0 ? 1 : -1;
    for (long p = c->row_start[r]; p < c->row_start[r + 1]; p++) {
        int j = c->row_idx[p];
        double a0 = W->mark[j] ? W->alpha[j] : 0;
        int o0 = zh_odd(a0), o1 = zh_odd(a0 + sg * c->row_val[p]);
        if (o0 != o1) d += (o1 ? 1 : -1) * zh_bound_slack(c, j);
    }
    return d;
}

/* The cut from alpha x <= beta: odd columns made even by their bounds, the
 * right side made odd, halved and rounded.  Returns its length (0: none). */
static int zh_make_cut(const bb_ctx *c, const zh_work *W, double beta, int *idx, double *val, double *rhs,
                       double *eff) {
    /* per odd column: the bound with the smaller slack; parity of the sum */
    double best_switch = INFINITY;
    int sw = -1;
    long long par = (long long)nearbyint(beta);
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        if (!zh_odd(W->alpha[j])) continue;
        double su = isfinite(c->gub[j]) ? fmax(0, c->gub[j] - c->x[j]) : INFINITY;
        double sl = isfinite(c->glb[j]) ? fmax(0, c->x[j] - c->glb[j]) : INFINITY;
        if (!isfinite(su) && !isfinite(sl)) return 0;
        int up = su <= sl;
        par += up ? (long long)nearbyint(c->gub[j]) : -(long long)nearbyint(c->glb[j]);
        /* switching to the other bound changes the parity by u - l */
        if (isfinite(su) && isfinite(sl) && ((long long)nearbyint(c->gub[j] - c->glb[j]) & 1)) {
            double cost = fabs(su - sl);
            if (cost < best_switch) { best_switch = cost; sw = j; }
        }
    }
    int need_switch = !(par & 1);
    if (need_switch && sw < 0) return 0;
    double b = beta;
    int cnt = 0;
    double act = 0, norm = 0;
    for (int k = 0; k < W->nl; k++) {
        int j = W->list[k];
        double a = nearbyint(W->alpha[j]);
        if (zh_odd(a)) {
            double su = isfinite(c->gub[j]) ? fmax(0, c->gub[j] - c->x[j]) : INFINITY;
            double sl = isfinite(c->glb[j]) ? fmax(0, c->x[j] - c->glb[j]) : INFINITY;
            int up = su <= sl;
            if (need_switch && j == sw) up = !up;
            if (up) { a += 1; b += nearbyint(c->gub[j]); }
            else { a -= 1; b -= nearbyint(c->glb[j]); }
        }
        if (a == 0) continue;
        idx[cnt] = j;
        val[cnt] = a / 2;
        act += val[cnt] * c->x[j];
        norm += val[cnt] * val[cnt];
        cnt++;
    }
    if (cnt == 0) return 0;
    *rhs = floor(b / 2 + 1e-9);
    double viol = act - *rhs;
    if (viol < ZH_MIN_VIOL) return 0;
    *eff = viol / sqrt(norm);
    return cnt;
}

int bb_zerohalf_cut(const bb_ctx *c, int row, int dir, void *work, int *idx, double *val, double *rhs, double *eff) {
    double beta;
    double s0 = zh_row_slack(c, row, dir, &beta);
    if (s0 < 0 || s0 > ZH_MAX_SLACK) return 0;
    int n = c->n;
    zh_work *W = work;
    char *base = (char *)work + sizeof *W;
    W->alpha = (double *)(void *)base;
    W->list = (int *)(void *)(base + (size_t)(n > 0 ? n : 1) * sizeof(double));
    W->mark = (char *)(W->list + (n > 0 ? n : 1));
    W->nl = 0;
    int used_r[ZH_MAX_ROWS], used_d[ZH_MAX_ROWS], nu = 0;
    zh_add_row(c, W, row, dir);
    used_r[nu] = row;
    used_d[nu++] = dir;
    double slack = s0 + zh_odd_slack(c, W);
    int cnt = 0;
    for (;;) {
        if (slack < 1 - 2 * ZH_MIN_VIOL) {
            cnt = zh_make_cut(c, W, beta, idx, val, rhs, eff);
            if (cnt > 0) break;
        }
        if (nu == ZH_MAX_ROWS) break;
        /* the odd column with the largest bound slack */
        int bj = -1;
        double bs = 1e-6;
        for (int k = 0; k < W->nl; k++) {
            int j = W->list[k];
            if (!zh_odd(W->alpha[j])) continue;
            double s = zh_bound_slack(c, j);
            if (s > bs) { bs = s; bj = j; }
        }
        if (bj < 0) break;
        /* the total slack may stay level (an odd cycle: each row but
         * the last moves the odd column on) */
        int br = -1, bd = 0;
        double bdelta = 1e-9, bb = 0;
        for (long p = c->A.start[bj]; p < c->A.start[bj + 1]; p++) {
            int r = c->A.index[p];
            if (!zh_odd(c->A.value[p])) continue;
            for (int d = 0; d < 2; d++) {
                int seen = 0;
                for (int u = 0; u < nu; u++) seen |= used_r[u] == r && used_d[u] == d;
                if (seen) continue;
                double rb;
                double rs = zh_row_slack(c, r, d, &rb);
                if (rs < 0 || rs > ZH_MAX_SLACK) continue;
                double dl = zh_delta(c, W, r, d, rs);
                if (dl < bdelta) { bdelta = dl; br = r; bd = d; bb = rb; }
            }
        }
        if (br < 0) break;
        zh_add_row(c, W, br, bd);
        beta += bb;
        used_r[nu] = br;
        used_d[nu++] = bd;
        slack += bdelta;
    }
    for (int k = 0; k < W->nl; k++) {
        W->alpha[W->list[k]] = 0;
        W->mark[W->list[k]] = 0;
    }
    return cnt;
}
