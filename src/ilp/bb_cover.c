/* bb_cover.c — owns lifted knapsack cover cuts: from one side of one model
 * row over binary columns, written as a knapsack sum a_j z_j <= b with
 * a_j > 0 (columns with a negative coefficient complemented, z = 1 - x;
 * columns fixed in the global bounds moved to the right side), a cover C
 * (sum over C of a_j > b) is chosen greedily by (1 - z*_j) / a_j at the LP
 * point z*, made minimal (dropping the least fractional members first), and
 * the cover inequality sum_C z_j <= |C| - 1 is lifted with Balas's lower
 * bounds: a column outside C with mu_h <= a_j < mu_{h+1} (mu_h = the sum of
 * the h largest a in C) gets coefficient h.  Each sequential lifting gives
 * every coefficient at least that bound, so the inequality is dominated by a
 * valid one and is valid itself.  The memory rows of rk-Checkmate are such
 * knapsacks (tensor sizes against a budget). */
#include <math.h>
#include <stdlib.h>

#include "bb_internal.h"

typedef struct {
    int col;
    int comp;      /* complemented: z = 1 - x */
    int in;        /* member of the cover */
    double a;      /* > 0 */
    double z;      /* LP value of z */
    double key;
} bb_item;

static int bb_item_by_key(const void *x, const void *y) {
    const bb_item *p = x, *q = y;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return p->col - q->col;
}

size_t bb_cover_work_size(int n) { return (size_t)(n ? n : 1) * (sizeof(bb_item) + sizeof(double)); }

int bb_cover_cut(const bb_ctx *c, int row, int dir, void *work, int *idx, double *val, double *rhs, double *eff) {
    bb_item *it = work;
    double s = dir == 0 ? 1.0 : -1.0;
    double b = dir == 0 ? c->row_ub[row] : -c->row_lb[row];
    if (!isfinite(b)) return 0;
    int k = 0;
    double total = 0;
    for (long p = c->row_start[row]; p < c->row_start[row + 1]; p++) {
        int j = c->row_idx[p];
        double a = s * c->row_val[p];
        if (c->glb[j] == c->gub[j]) {
            b -= a * c->glb[j];
            continue;
        }
        if (!c->is_int[j] || c->glb[j] != 0 || c->gub[j] != 1) return 0;
        if (a == 0) continue;
        it[k].col = j;
        it[k].in = 0;
        if (a > 0) {
            it[k].comp = 0;
            it[k].a = a;
            it[k].z = c->x[j];
        } else {
            it[k].comp = 1;
            it[k].a = -a;
            it[k].z = 1 - c->x[j];
            b -= a;
        }
        total += it[k].a;
        k++;
    }
    double *mu = (double *)(it + k);
    /* an activity within the tolerance of b is feasible: covers must exceed it */
    double tol = 1e-9 * fmax(1.0, fabs(b));
    if (k < 2 || b < 0 || total <= b + tol) return 0;
    /* greedy cover: smallest (1 - z) / a first (members at 1 cost nothing) */
    for (int q = 0; q < k; q++) it[q].key = (1 - it[q].z) / it[q].a;
    qsort(it, (size_t)k, sizeof *it, bb_item_by_key);
    double sum = 0;
    for (int q = 0; q < k && sum <= b + tol; q++) {
        sum += it[q].a;
        it[q].in = 1;
    }
    if (sum <= b + tol) return 0;
    /* minimal: drop members, least LP value first, while still a cover */
    for (;;) {
        int drop = -1;
        for (int q = 0; q < k; q++) {
            if (!it[q].in || sum - it[q].a <= b + tol) continue;
            if (drop < 0 || it[q].z < it[drop].z || (it[q].z == it[drop].z && it[q].a > it[drop].a)) drop = q;
        }
        if (drop < 0) break;
        it[drop].in = 0;
        sum -= it[drop].a;
    }
    /* mu_h: sums of the h largest member sizes */
    int nc = 0;
    for (int q = 0; q < k; q++)
        if (it[q].in) mu[nc++] = it[q].a;
    if (nc < 2) return 0;
    for (int a = 1; a < nc; a++) {
        double v = mu[a];
        int bq = a;
        while (bq > 0 && mu[bq - 1] < v) {
            mu[bq] = mu[bq - 1];
            bq--;
        }
        mu[bq] = v;
    }
    for (int q = 1; q < nc; q++) mu[q] += mu[q - 1];
    /* the lifted cover in z, then in x: sum alpha_j z_j <= nc - 1 */
    double r = nc - 1;
    double lhs = 0, norm = 0;
    int cnt = 0;
    for (int q = 0; q < k; q++) {
        double alpha;
        if (it[q].in) {
            alpha = 1;
        } else {
            int h = 0;
            while (h < nc && mu[h] <= it[q].a - tol) h++;
            alpha = h;
        }
        if (alpha == 0) continue;
        lhs += alpha * it[q].z;
        norm += alpha * alpha;
        idx[cnt] = it[q].col;
        if (it[q].comp) {
            val[cnt] = -alpha;
            r -= alpha;
        } else {
            val[cnt] = alpha;
        }
        cnt++;
    }
    double viol = lhs - (nc - 1);
    if (viol <= 1e-4) return 0;
    *rhs = r;
    *eff = viol / sqrt(norm);
    return cnt;
}
