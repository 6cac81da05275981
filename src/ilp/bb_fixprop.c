/* bb_fixprop.c — owns fix-and-propagate, the primal heuristic of
 * branch-and-bound that builds a first solution without LP solves: the
 * integer columns are fixed one at a time (most locked first) to a
 * randomized rounding of an LP point, each fix propagated, and when a column
 * can take neither of its two values, the search backjumps: it finds the
 * shortest prefix of its decisions under which that column is already
 * refuted (by bisection, replaying the decisions from checkpoints), flips
 * the last decision of that prefix to its other value and goes on from
 * there.  Everything is deterministic: the random stream depends only on the
 * seed and the attempt, the budgets are counted in propagation work. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define FP_CHECK_EVERY 32     /* decisions between two checkpoints of the domain */
#define FP_MAX_CONFLICTS 5000 /* backjumps and restarts an attempt may make */

/* A small deterministic generator (splitmix64) for the randomized rounding:
 * its stream depends only on the seed and the attempt, never on threads. */
static uint64_t fp_rand_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double fp_rand_real(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * (double)(fp_rand_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* The integer columns, most locked first (uplocks x downlocks, then by
 * index): the order in which the columns are fixed, so that the columns
 * that constrain most are decided while the domain is still wide.  Built
 * once per solve; NULL when out of memory. */
static const int *fp_order(bb_ctx *c) {
    if (c->rr_order) return c->rr_order;
    int k = 0;
    int *ord = malloc((size_t)(c->n_int ? c->n_int : 1) * sizeof *ord);
    double *score = malloc((size_t)(c->n ? c->n : 1) * sizeof *score);
    int *tmp = malloc((size_t)(c->n_int ? c->n_int : 1) * sizeof *tmp);
    if (!ord || !score || !tmp) {
        free(ord);
        free(score);
        free(tmp);
        return NULL;
    }
    for (int j = 0; j < c->n; j++)
        if (c->is_int[j]) {
            ord[k++] = j;
            score[j] = (double)bb_locks(c, j, 0) * (double)bb_locks(c, j, 1);
        }
    /* merge sort by (score desc, index asc) */
    for (int w = 1; w < k; w *= 2)
        for (int lo = 0; lo < k; lo += 2 * w) {
            int mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k;
            int a = lo, b = mid, t = lo;
            while (a < mid || b < hi) {
                int take_a = b >= hi || (a < mid && (score[ord[a]] > score[ord[b]] ||
                                                     (score[ord[a]] == score[ord[b]] && ord[a] < ord[b])));
                tmp[t++] = take_a ? ord[a++] : ord[b++];
            }
            memcpy(ord + lo, tmp + lo, (size_t)(hi - lo) * sizeof *ord);
        }
    free(tmp);
    free(score);
    c->rr_order = ord;
    return ord;
}

/* One decision: column col fixed to val (alt: the value tried next, NAN
 * when none is left), made at position pos of the order. */
typedef struct {
    int col, pos;
    double val, alt;
} fp_dec;

typedef struct {
    bb_ctx *c;
    int n;
    double *lb, *ub;      /* the domain after the decisions */
    double *y;            /* scratch (n) */
    int *ord;             /* the order of the columns (this attempt's: conflicts move columns up) */
    fp_dec *dec;          /* the decisions (n_int at most) */
    int nd;
    double *ck;           /* checkpoint k: lb then ub after k * FP_CHECK_EVERY decisions */
    int nck;              /* valid checkpoints */
} fp_search;

/* Fix column j at v in the domain lb/ub and propagate; 0 ok, 1 infeasible. */
static int fp_fix(bb_ctx *c, double *lb, double *ub, int j, double v) {
    if (v < lb[j] || v > ub[j]) return 1;
    lb[j] = ub[j] = v;
    c->prop_continuous = 1;
    int r = bb_propagate(c, lb, ub, j);
    c->prop_continuous = 0;
    return r;
}

/* The domain after the first p decisions, from the nearest checkpoint. */
static void fp_replay(fp_search *s, int p) {
    int n = s->n, k = p / FP_CHECK_EVERY;
    if (k > s->nck - 1) k = s->nck - 1;
    memcpy(s->lb, s->ck + (size_t)k * 2 * n, (size_t)n * sizeof *s->lb);
    memcpy(s->ub, s->ck + (size_t)k * 2 * n + n, (size_t)n * sizeof *s->ub);
    for (int i = k * FP_CHECK_EVERY; i < p; i++) fp_fix(s->c, s->lb, s->ub, s->dec[i].col, s->dec[i].val);
}

/* Whether column j can take neither value v nor w (NAN: none) in the domain
 * after the first p decisions (lb/ub are left undefined). */
static int fp_refuted(fp_search *s, int p, int j, double v, double w) {
    double vals[2] = {v, w};
    for (int k = 0; k < 2; k++) {
        if (isnan(vals[k])) continue;
        fp_replay(s, p);
        if (!fp_fix(s->c, s->lb, s->ub, j, vals[k])) return 0;
    }
    return 1;
}

/* The value column j is fixed at first (randomized rounding of x, up or
 * down where no row stops it going that way) and the one after it (*alt,
 * NAN when none), both within lb..ub. */
static double fp_values(bb_ctx *c, const double *lb, const double *ub, int j, double xj, uint64_t *state,
                        double *alt) {
    double v;
    double r = fp_rand_real(state, 0.1, 0.9); /* drawn for every column: the stream stays aligned */
    if (bb_locks(c, j, 1) == 0) v = ceil(xj - BB_INT_TOL);
    else if (bb_locks(c, j, 0) == 0) v = floor(xj + BB_INT_TOL);
    else v = floor(xj + r);
    v = fmin(fmax(v, lb[j]), ub[j]);
    double w = v > xj ? v - 1 : v + 1;
    if (w < lb[j] || w > ub[j]) w = v > xj ? v + 1 : v - 1;
    *alt = w >= lb[j] && w <= ub[j] ? w : NAN;
    return v;
}

/* Move column j to the front of the order ord (k columns). */
static void fp_move_front(int *ord, int k, int j) {
    int i = 0;
    while (i < k && ord[i] != j) i++;
    if (i == k) return;
    memmove(ord + 1, ord, (size_t)i * sizeof *ord);
    ord[0] = j;
}

/* Fix every integer column (the search above) in lb/ub from the node's
 * domain; returns 1 when all are fixed with propagation holding. */
static int fp_run(fp_search *s, const double *x, unsigned attempt, double work) {
    bb_ctx *c = s->c;
    int n = s->n;
    int *ord = s->ord;
    size_t sz = (size_t)n * sizeof *s->lb;
    uint64_t state = ((uint64_t)c->par->seed << 32) ^ (0x5851F42D4C957F2Dull * (attempt + 1));
    long w0 = c->prop_work, wmax = (long)(work * (double)(c->A.nnz + 1));
    int conflicts = 0;
    memcpy(s->ck, s->lb, sz);
    memcpy(s->ck + n, s->ub, sz);
    s->nck = 1;
    s->nd = 0;
    int pos = 0;
    while (pos < c->n_int) {
        int j = ord[pos];
        if (s->lb[j] == s->ub[j]) {
            pos++;
            continue;
        }
        double alt, v = fp_values(c, s->lb, s->ub, j, x[j], &state, &alt);
        double vals[2] = {v, alt};
        if (s->nd % FP_CHECK_EVERY == 0 && s->nd / FP_CHECK_EVERY >= s->nck) {
            memcpy(s->ck + (size_t)s->nck * 2 * n, s->lb, sz);
            memcpy(s->ck + (size_t)s->nck * 2 * n + n, s->ub, sz);
            s->nck++;
        }
        /* each value is tried in place; a failed trial is undone by a
         * replay from the last checkpoint (copying the domain for every
         * trial cost more than the propagation on the big problems) */
        int k, tried = 0;
        for (k = 0; k < 2; k++) {
            if (isnan(vals[k])) continue;
            if (tried) fp_replay(s, s->nd);
            tried = 1;
            if (!fp_fix(c, s->lb, s->ub, j, vals[k])) break;
        }
        if (k < 2) {
            s->dec[s->nd++] = (fp_dec){.col = j, .pos = pos, .val = vals[k], .alt = k == 0 ? alt : NAN};
            pos++;
            continue;
        }
        /* a conflict: neither value of j is left.  The shortest prefix of
         * the decisions that refutes j (bisection: refutation only grows
         * with the prefix); its last decision is flipped.  When that
         * decision has no other value left, or the flip fails too, the
         * prefix before it is dead for a reason propagation does not see:
         * restart with j and that column decided first. */
        if (++conflicts > FP_MAX_CONFLICTS || c->prop_work - w0 > wmax || bb_time_up(c)) return 0;
        if (fp_refuted(s, 0, j, v, alt)) return 0;
        int lo = 0, hi = s->nd; /* refuted at hi, not at lo */
        while (hi - lo > 1) {
            int mid = lo + (hi - lo) / 2;
            if (fp_refuted(s, mid, j, v, alt)) hi = mid;
            else lo = mid;
        }
        if (hi == 0) return 0; /* not refuted at the decisions either: budget-limited propagation */
        fp_dec d = s->dec[hi - 1];
        s->nd = hi - 1;
        if (s->nck > s->nd / FP_CHECK_EVERY + 1) s->nck = s->nd / FP_CHECK_EVERY + 1;
        fp_replay(s, s->nd);
        if (!isnan(d.alt)) {
            if (!fp_fix(c, s->lb, s->ub, d.col, d.alt)) {
                s->dec[s->nd++] = (fp_dec){.col = d.col, .pos = d.pos, .val = d.alt, .alt = NAN};
                pos = d.pos + 1;
                continue;
            }
        }
        fp_move_front(ord, c->n_int, d.col);
        fp_move_front(ord, c->n_int, j);
        s->nd = 0;
        s->nck = 1;
        fp_replay(s, 0);
        pos = 0;
    }
    return 1;
}

/* Randomized rounding with propagation (fix-and-propagate, the idea of
 * HiGHS's randomized rounding) of the LP point x, with backjumping (above):
 * a plain rounding ignores what the earlier fixes imply and fails on rows
 * that tie many binaries, such as the memory rows of the rematerialization
 * MILPs, and a rounding without backjumping gives up at its first conflict.
 * The continuous columns then come from an LP with the integers fixed.
 * Leaves the simplex with the node's bounds and basis; returns 1 when the
 * incumbent is new or better. */
int bb_heur_fix_and_propagate(bb_ctx *c, const double *x, unsigned attempt, double work) {
    int n = c->n;
    fp_search s = {.c = c, .n = n};
    const int *ord = fp_order(c);
    size_t sz = (size_t)(n ? n : 1) * sizeof(double);
    int nck = c->n_int / FP_CHECK_EVERY + 2;
    s.lb = malloc(sz);
    s.ub = malloc(sz);
    s.y = malloc(sz);
    s.ord = malloc((size_t)(c->n_int ? c->n_int : 1) * sizeof *s.ord);
    s.dec = malloc((size_t)(c->n_int ? c->n_int : 1) * sizeof *s.dec);
    s.ck = malloc((size_t)nck * 2 * sz);
    int ok = 0, had = c->has_inc;
    double z0 = c->inc_z;
    if (ord && s.ord && s.lb && s.ub && s.y && s.dec && s.ck) {
        memcpy(s.ord, ord, (size_t)c->n_int * sizeof *s.ord);
        memcpy(s.lb, c->llb, (size_t)n * sizeof *s.lb);
        memcpy(s.ub, c->lub, (size_t)n * sizeof *s.ub);
        ok = fp_run(&s, x, attempt, work);
    }
    if (ok) {
        /* the LP gets the integers fixed and the node's continuous bounds
         * (the propagated ones are implied, up to rounding) */
        for (int j = 0; j < n; j++)
            if (!c->is_int[j]) {
                s.lb[j] = c->llb[j];
                s.ub[j] = c->lub[j];
            }
        if (c->n_int == n) {
            bb_offer_solution(c, s.lb, "fix-and-propagate");
        } else {
            double *sl = c->llb, *su = c->lub;
            /* bb_polish_solution fixes the integers of y within the bounds
             * it finds in llb/lub: the propagated ones */
            double *y = s.y;
            for (int j = 0; j < n; j++) y[j] = c->is_int[j] ? s.lb[j] : x[j];
            c->llb = s.lb;
            c->lub = s.ub;
            bb_polish_solution(c, y);
            c->llb = sl;
            c->lub = su;
            bb_apply_bounds(c, c->llb, c->lub);
        }
    }
    int won = c->has_inc && (!had || c->inc_z < z0);
    if (had) {
        c->fp_tries++;
        c->fp_wins += won;
    }
    free(s.lb);
    free(s.ub);
    free(s.y);
    free(s.dec);
    free(s.ord);
    free(s.ck);
    return won;
}
