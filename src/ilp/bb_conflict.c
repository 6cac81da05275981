/* bb_conflict.c — owns conflict analysis for branch-and-bound: a bounded
 * pool of conflict constraints `a x <= rhs`, valid for every solution of the
 * problem, learned from nodes whose LP is infeasible (the dual simplex's
 * Farkas proof: the combination of the rows, cuts included, that no point
 * in the node's bounds satisfies; a "dual proof constraint" as in Witzig,
 * Berthold and Heinz, "Experiments with conflict analysis in mixed integer
 * programming", 2017), and propagated at every node before its LP, like a
 * row (an infeasible one prunes the node without an LP).  A node whose
 * bound propagation fails gives a no-good over the binary fixings it
 * started with, found by resolving the propagation's trail backwards from
 * the infeasible row (as SAT solvers and HiGHS's conflict analysis do).  Nodes whose LP
 * passes the incumbent's cutoff give the same kind of row from the LP duals
 * and the objective (valid for the solutions better than the incumbent;
 * the cutoff only falls, so it stays valid).  Rows that neither
 * prune nor tighten for a while age out; the pool is bounded in rows and
 * entries.  Everything depends on the order of the nodes only, so results
 * are identical for any thread count.  Every learned row is checked by the
 * debug-solution mode (bb_debug_cut), every pruning and tightening too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bb_internal.h"

#define CF_MAX_ROWS 400      /* rows in the pool */
#define CF_MAX_AGE 2000      /* node visits without effect before a row is dropped */
#define CF_TIGHT_TOL 1e-9    /* coefficients below this times the largest are relaxed away */
#define CF_MAX_LEN(c) (100 + (c)->n / 2) /* denser proofs are not kept */
#define CF_MAX_PROP_LEN 100  /* longer no-goods from propagation are not kept */

typedef struct {
    long beg;   /* entries beg .. beg+len-1 of idx/val */
    int len;
    int age;
    double rhs;
} cf_row;

struct bb_conflict_pool {
    cf_row *row;
    int n_rows;
    int *idx;
    double *val;
    long nnz, cap_nnz; /* entries used, the most allowed */
    long alloc;        /* entries allocated (grown as needed) */
    double *a;         /* n: scratch for a proof */
    int *pos;          /* n: trail position of each column's change (-1: none) */
    char *mark;        /* n: columns in the conflict being resolved */
    int *tidx;         /* n: scratch entries */
    double *tval;
    long learned, pruned, tightened; /* statistics (log) */
    long learned_prop;  /* of the learned rows, those from propagation */
};

static int cf_init(bb_ctx *c) {
    if (c->cf) return 0;
    bb_conflict_pool *p = calloc(1, sizeof *p);
    if (!p) return -1;
    int n = c->n ? c->n : 1;
    p->row = malloc(CF_MAX_ROWS * sizeof *p->row);
    p->a = malloc((size_t)n * sizeof *p->a);
    p->tidx = malloc((size_t)n * sizeof *p->tidx);
    p->tval = malloc((size_t)n * sizeof *p->tval);
    p->pos = malloc((size_t)n * sizeof *p->pos);
    p->mark = calloc((size_t)n, 1);
    /* the entries of all rows together: at most 20 times the matrix's */
    p->cap_nnz = 20 * (c->A.nnz + c->n) + 1000;
    if (!p->row || !p->a || !p->tidx || !p->tval || !p->pos || !p->mark) {
        free(p->row); free(p->a); free(p->tidx); free(p->tval); free(p->pos); free(p->mark); free(p);
        return -1;
    }
    for (int j = 0; j < n; j++) p->pos[j] = -1;
    c->cf = p;
    return 0;
}

void bb_conflict_free(bb_ctx *c) {
    bb_conflict_pool *p = c->cf;
    if (!p) return;
    free(p->row); free(p->idx); free(p->val); free(p->a); free(p->tidx); free(p->tval);
    free(p->pos); free(p->mark);
    free(p);
    c->cf = NULL;
}

/* Drop the rows with drop[k] set and compact the entries. */
static void cf_compact(bb_conflict_pool *p, const char *drop) {
    long w = 0;
    int r = 0;
    for (int k = 0; k < p->n_rows; k++) {
        if (drop[k]) continue;
        cf_row x = p->row[k];
        if (x.beg != w) {
            memmove(p->idx + w, p->idx + x.beg, (size_t)x.len * sizeof *p->idx);
            memmove(p->val + w, p->val + x.beg, (size_t)x.len * sizeof *p->val);
        }
        x.beg = w;
        w += x.len;
        p->row[r++] = x;
    }
    p->n_rows = r;
    p->nnz = w;
}

/* Make room for a row of len entries: rows past the age limit go, then the
 * oldest (highest age, then earliest) until it fits.  Returns 0 when it
 * fits. */
static int cf_make_room(bb_conflict_pool *p, int len) {
    char drop[CF_MAX_ROWS];
    memset(drop, 0, sizeof drop);
    int any = 0;
    for (int k = 0; k < p->n_rows; k++)
        if (p->row[k].age > CF_MAX_AGE) drop[k] = 1, any = 1;
    if (any) cf_compact(p, drop);
    while (p->n_rows > 0 && (p->n_rows >= CF_MAX_ROWS || p->nnz + len > p->cap_nnz)) {
        int worst = 0;
        for (int k = 1; k < p->n_rows; k++)
            if (p->row[k].age > p->row[worst].age) worst = k;
        memset(drop, 0, sizeof drop);
        drop[worst] = 1;
        cf_compact(p, drop);
    }
    if (p->nnz + len > p->cap_nnz) return -1;
    if (p->nnz + len > p->alloc) {
        long a = p->alloc ? 2 * p->alloc : 4096;
        while (a < p->nnz + len) a *= 2;
        if (a > p->cap_nnz) a = p->cap_nnz;
        int *ni = realloc(p->idx, (size_t)a * sizeof *ni);
        if (!ni) return -1;
        p->idx = ni;
        double *nv = realloc(p->val, (size_t)a * sizeof *nv);
        if (!nv) return -1;
        p->val = nv;
        p->alloc = a;
    }
    return 0;
}

/* Least activity of sum val*x over lb/ub (-inf when unbounded below). */
static double cf_minact(const int *idx, const double *val, int len, const double *lb, const double *ub) {
    double s = 0;
    for (int k = 0; k < len; k++) {
        double v = val[k] > 0 ? lb[idx[k]] : ub[idx[k]];
        if (!isfinite(v)) return -INFINITY;
        s += val[k] * v;
    }
    return s;
}

/* Add a row to the pool; check: whether the debug mode checks it here. */
static int cf_push(bb_ctx *c, const int *idx, const double *val, int len, double rhs, const char *source, int check) {
    if (len <= 0 || !isfinite(rhs)) return 0;
    if (cf_init(c) || cf_make_room(c->cf, len)) return 0;
    bb_conflict_pool *p = c->cf;
    /* the debug solution satisfies every row of the problem, so every
     * conflict row too (those of a cutoff: while it beats the cutoff) */
    if (c->dbg_x && check) bb_debug_cut(c, source, len, idx, val, -INFINITY, rhs);
    cf_row *r = &p->row[p->n_rows++];
    r->beg = p->nnz;
    r->len = len;
    r->age = 0;
    r->rhs = rhs;
    memcpy(p->idx + p->nnz, idx, (size_t)len * sizeof *idx);
    memcpy(p->val + p->nnz, val, (size_t)len * sizeof *val);
    p->nnz += len;
    p->learned++;
    bb_hist_conflict(c, idx, val, len);
    return 1;
}

int bb_conflict_add(bb_ctx *c, const int *idx, const double *val, int len, double rhs, const char *source) {
    return cf_push(c, idx, val, len, rhs, source, 1);
}

/* Planted faults (tests of the debug mode): the wrong conflict row
 * x_j <= (its debug value) - 1, checked when added (fault 3) or only by the
 * propagation of the pool (fault 4). */
static void cf_plant(bb_ctx *c) {
    int f = c->par->debug_fault;
    if ((f != 3 && f != 4) || !c->dbg_x || c->cf->learned > 0) return;
    int j = bb_debug_plant_column(c, c->glb);
    if (j < 0) return;
    double one = 1;
    cf_push(c, &j, &one, 1, c->dbg_x[j] - 1, "conflict analysis (planted fault)", f == 3);
}

/* The row sg * p->a x <= rhs (valid for every solution of interest) over
 * the columns not fixed globally, tiny coefficients relaxed away; added
 * when it proves the node in slb/sub infeasible.  Returns 1 when added. */
static int cf_learn_row(bb_ctx *c, double sg, double rhs, const char *source) {
    bb_conflict_pool *p = c->cf;
    const double *lb = c->slb, *ub = c->sub; /* the bounds the LP was solved in */
    if (!isfinite(rhs)) return 0;
    double amax = 0;
    for (int j = 0; j < c->n; j++) amax = fmax(amax, fabs(p->a[j]));
    if (!(amax > 0)) return 0;
    int len = 0;
    double mag = fabs(rhs);
    for (int j = 0; j < c->n; j++) {
        double v = sg * p->a[j];
        if (v == 0) continue;
        if (c->glb[j] == c->gub[j]) {
            rhs -= v * c->glb[j];
            mag = fmax(mag, fabs(v * c->glb[j]));
            continue;
        }
        if (fabs(v) < CF_TIGHT_TOL * amax) {
            double w = v > 0 ? c->glb[j] : c->gub[j];
            if (isfinite(w)) {
                rhs -= v * w;
                continue;
            }
        }
        p->tidx[len] = j;
        p->tval[len] = v;
        len++;
    }
    if (len > CF_MAX_LEN(c)) return 0;
    /* rounding in the combination: a little room on the side */
    for (int k = 0; k < len; k++) {
        int j = p->tidx[k];
        double w = fmax(fabs(c->glb[j]), fabs(c->gub[j]));
        if (isfinite(w)) mag = fmax(mag, fabs(p->tval[k]) * w);
    }
    rhs += 1e-9 * fmax(1.0, mag);
    /* it must prove the node infeasible with the propagation's margin */
    double mn = cf_minact(p->tidx, p->tval, len, lb, ub);
    if (!(mn > rhs + 1e-6 * fmax(1.0, fabs(rhs)))) return 0;
    return bb_conflict_add(c, p->tidx, p->tval, len, rhs, source);
}

int bb_conflict_learn_lp(bb_ctx *c) {
    if (cf_init(c)) return 0;
    double lo, hi;
    cf_plant(c);
    if (spx_farkas_row(c->lps, c->cf->a, &lo, &hi)) return 0;
    if (cf_learn_row(c, 1.0, hi, "conflict analysis (LP infeasibility proof)")) return 1;
    return cf_learn_row(c, -1.0, -lo, "conflict analysis (LP infeasibility proof)");
}

int bb_conflict_learn_cutoff(bb_ctx *c) {
    if (!c->has_inc || cf_init(c)) return 0;
    cf_plant(c);
    double lo;
    if (spx_cutoff_row(c->lps, c->cf->a, &lo) || !isfinite(lo)) return 0;
    /* objective (min form) = a x + y'A x + c0 >= a x + lo + c0, and a
     * solution of interest has objective <= cutoff (only ever lowered) */
    return cf_learn_row(c, 1.0, bb_cutoff(c) - c->obj_const - lo, "conflict analysis (LP cutoff proof)");
}

/* Mark the columns whose bound in the least activity of side s of row r
 * (-2: the objective row, its upper side) was tighter than the global one
 * when trail entry t was made (columns changed at t or later still had
 * their node's bounds, and a binary changed on the trail was free there);
 * the marked ones are listed in p->tidx[*nl..].  Returns -1 when such a
 * bound is not a binary's fixing (a no-good cannot say it). */
static int cf_explain(bb_ctx *c, int r, int s, int t, const double *lb, const double *ub, int *nl) {
    bb_conflict_pool *p = c->cf;
    const int *idx;
    const double *val;
    long len;
    if (r == -2) {
        idx = c->obj_cols;
        val = NULL;
        len = c->n_obj_cols;
    } else {
        idx = c->row_idx + c->row_start[r];
        val = c->row_val + c->row_start[r];
        len = c->row_start[r + 1] - c->row_start[r];
    }
    for (long k = 0; k < len; k++) {
        int j = idx[k];
        double a = val ? val[k] : c->obj[j];
        if (s) a = -a; /* the lower side, written -a x <= -side */
        if (a == 0 || p->mark[j]) continue;
        int tight = a > 0 ? lb[j] > c->glb[j] : ub[j] < c->gub[j];
        if (!(c->is_int[j] && c->glb[j] == 0 && c->gub[j] == 1)) {
            /* bounds only tighten: one at its global value now was then */
            if (tight) return -1;
            continue;
        }
        if (p->pos[j] >= t) continue; /* a binary fixed on the trail at t or later was free at t */
        if (!tight) continue;
        p->mark[j] = 1;
        p->tidx[(*nl)++] = j;
    }
    return 0;
}

int bb_conflict_learn_prop(bb_ctx *c, const double *lb, const double *ub) {
    if (c->tr_fail_row == -1 || c->tr_overflow || cf_init(c)) return 0;
    bb_conflict_pool *p = c->cf;
    int nt = c->tr_n;
    for (int t = 0; t < nt; t++) p->pos[c->tr_col[t]] = t;
    int nl = 0, ok = cf_explain(c, c->tr_fail_row, c->tr_fail_side, nt, lb, ub, &nl) == 0;
    /* resolve the changes made on the trail by their reasons, newest first */
    for (int t = nt - 1; t >= 0 && ok; t--) {
        int j = c->tr_col[t];
        if (!p->mark[j]) continue;
        p->mark[j] = 0;
        ok = cf_explain(c, c->tr_row[t], c->tr_side[t], t, lb, ub, &nl) == 0;
    }
    /* what is left: the fixings the node started with */
    int len = 0, ones = 0;
    for (int k = 0; k < nl; k++) {
        int j = p->tidx[k];
        if (!p->mark[j]) continue;
        p->mark[j] = 0;
        if (!ok) continue;
        p->tidx[len] = j;
        if (lb[j] > 0.5) { p->tval[len] = 1; ones++; }
        else p->tval[len] = -1;
        len++;
    }
    for (int t = 0; t < nt; t++) p->pos[c->tr_col[t]] = -1;
    if (!ok || len == 0 || len > CF_MAX_PROP_LEN) return 0;
    cf_plant(c);
    if (!bb_conflict_add(c, p->tidx, p->tval, len, (double)(ones - 1), "conflict analysis (propagation)")) return 0;
    p->learned_prop++;
    return 1;
}

int bb_conflict_propagate(bb_ctx *c, double *lb, double *ub, int *tightened) {
    *tightened = 0;
    bb_conflict_pool *p = c->cf;
    if (!p || p->n_rows == 0) return 0;
    int was_in = c->dbg_x ? bb_debug_in(c, lb, ub) : 0;
    for (int pass = 0; pass < 2; pass++) {
        int changed = 0;
        for (int k = 0; k < p->n_rows; k++) {
            cf_row *r = &p->row[k];
            const int *idx = p->idx + r->beg;
            const double *val = p->val + r->beg;
            c->prop_work += r->len;
            double minact = 0, maxmove = 0;
            int ninf = 0;
            for (int t = 0; t < r->len; t++) {
                int j = idx[t];
                double v = val[t] > 0 ? lb[j] : ub[j];
                if (!isfinite(v)) ninf++;
                else minact += val[t] * v;
                maxmove = fmax(maxmove, fabs(val[t]) * (ub[j] - lb[j]));
            }
            double tol = 1e-6 * fmax(1.0, fabs(r->rhs));
            if (ninf == 0 && minact > r->rhs + tol) {
                r->age = 0;
                p->pruned++;
                if (was_in && bb_debug_active(c))
                    bb_debug_fail(c, "conflict propagation",
                                  "conflict row %d (%d terms) found infeasible (least activity %.17g, side %.17g)", k,
                                  r->len, minact, r->rhs);
                return 1;
            }
            if (pass == 0) r->age++;
            if (ninf > 1 || (ninf == 0 && r->rhs - minact > maxmove + 1e-3 * fmax(1.0, fabs(r->rhs)))) continue;
            for (int t = 0; t < r->len; t++) {
                int j = idx[t];
                if (!c->is_int[j] || lb[j] == ub[j]) continue;
                double a = val[t];
                double contrib = a > 0 ? lb[j] : ub[j];
                double res;
                if (!isfinite(contrib)) { if (ninf != 1) continue; res = minact; }
                else { if (ninf != 0) continue; res = minact - a * contrib; }
                double v = (r->rhs - res) / a;
                if (a > 0) {
                    double nub = floor(v + 1e-6);
                    if (nub < ub[j] - 0.5) {
                        if (was_in) bb_debug_bound(c, "conflict propagation", -1, j, lb[j], nub);
                        if (nub < lb[j]) return 1; /* cannot be: minact covers it */
                        ub[j] = nub;
                        changed = 1;
                        r->age = 0;
                        (*tightened)++;
                    }
                } else {
                    double nlb = ceil(v - 1e-6);
                    if (nlb > lb[j] + 0.5) {
                        if (was_in) bb_debug_bound(c, "conflict propagation", -1, j, nlb, ub[j]);
                        if (nlb > ub[j]) return 1;
                        lb[j] = nlb;
                        changed = 1;
                        r->age = 0;
                        (*tightened)++;
                    }
                }
            }
            if (c->dbg_failed) return 1;
        }
        if (!changed) break;
    }
    p->tightened += *tightened;
    return 0;
}

void bb_conflict_stats(const bb_ctx *c, long *learned, long *from_prop, long *pruned, long *tightened, int *rows) {
    const bb_conflict_pool *p = c->cf;
    *learned = p ? p->learned : 0;
    *from_prop = p ? p->learned_prop : 0;
    *pruned = p ? p->pruned : 0;
    *tightened = p ? p->tightened : 0;
    *rows = p ? p->n_rows : 0;
}
