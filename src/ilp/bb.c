/* bb.c — owns the branch-and-bound search and rk_milp_solve: set-up of the
 * solve context, the root (propagation, LP, cuts, heuristics, reduced-cost
 * fixing), the node loop (best-bound selection with depth-first plunging
 * that backtracks to the plunge's open siblings before it returns to the
 * best bound, node LPs warm-started by the dual simplex from the parent's
 * basis),
 * limits (time, nodes, gap) and the result.  The search is sequential, so
 * results are identical for any thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bb_internal.h"

/* budgets of fix-and-propagate (passes over the matrix): the first attempt
 * of a solve, the others at the root, one in the tree */
#define BB_FP_WORK_FIRST 2000
#define BB_FP_WORK 250
#define BB_FP_WORK_NODE 100
/* with an incumbent, only while the gap to the node's bound is above this
 * (relative): below it there is little to improve */
#define BB_FP_GAP 0.02

/* ------------------------------------------------------------ helpers */

void bb_note_pruned(bb_ctx *c, double bound) {
    if (bound < c->prune_min) c->prune_min = bound;
}

/* All rows basic, columns at a finite bound (or free at zero). */
static void bb_install_slack_basis(bb_ctx *c) {
    spx_basis b;
    b.n = c->n;
    b.m = spx_num_rows(c->lps);
    b.col = malloc((size_t)(b.n ? b.n : 1));
    b.row = calloc((size_t)(b.m ? b.m : 1), 1);
    if (b.col && b.row) {
        for (int j = 0; j < b.n; j++)
            b.col[j] = (signed char)(c->slb[j] != -INFINITY ? 1 : c->sub[j] != INFINITY ? 2 : 3);
        spx_set_basis(c->lps, &b);
    }
    free(b.col);
    free(b.row);
}

/* The node's LP (bb_solve_lp without an iteration limit); on numerical
 * trouble from the warm start (the parent's basis, or where the heuristics
 * left the simplex), once more from the slack basis. */
static rk_lp_status bb_solve_node_lp(bb_ctx *c, int with_cutoff) {
    rk_lp_status st = bb_solve_lp(c, 0, with_cutoff);
    if (st == RK_LP_ERROR || st == RK_LP_ITER_LIMIT) {
        bb_install_slack_basis(c);
        st = bb_solve_lp(c, 0, with_cutoff);
    }
    return st;
}

/* Node bound after an LP value z: objective integrality rounds it up. */
static double bb_node_bound(const bb_ctx *c, double z) {
    if (c->obj_step > 0) {
        double d = c->obj_step;
        double r = ceil((z - c->obj_const) / d - 1e-6) * d + c->obj_const;
        return r > z ? r : z;
    }
    return z;
}

/* Reduced-cost fixing: tighten lb/ub of integer columns nonbasic at a bound
 * whose reduced cost would push the LP value past the incumbent. */
static void bb_reduced_cost_fixing(bb_ctx *c, double *lb, double *ub) {
    if (!c->has_inc) return;
    double gap = bb_cutoff(c) - c->z;
    if (gap < 0) return;
    int was_in = c->dbg_x ? bb_debug_in(c, lb, ub) : 0;
    for (int j = 0; j < c->n; j++) {
        if (!c->is_int[j] || lb[j] == ub[j]) continue;
        double d = c->d[j];
        if (d > 1e-7 && c->x[j] <= lb[j] + 1e-9 && lb[j] != -INFINITY) {
            double nub = lb[j] + floor(gap / d + 1e-9);
            if (nub < ub[j]) ub[j] = nub;
        } else if (d < -1e-7 && c->x[j] >= ub[j] - 1e-9 && ub[j] != INFINITY) {
            double nlb = ub[j] - floor(gap / -d + 1e-9);
            if (nlb > lb[j]) lb[j] = nlb;
        }
    }
    bb_debug_domain(c, was_in, lb, ub, "reduced-cost fixing");
}

static int bb_count_fractional(const bb_ctx *c) {
    int k = 0;
    for (int j = 0; j < c->n; j++) {
        if (!c->is_int[j]) continue;
        double f = c->x[j] - floor(c->x[j]);
        if (f > BB_INT_TOL && f < 1 - BB_INT_TOL) k++;
    }
    return k;
}

/* Whether the plunge goes on into a node of this bound and depth: with an
 * incumbent, while its bound is in the better half of the gap between the
 * open nodes' least bound and the incumbent; without, to a depth limit. */
static int bb_plunge_ok(const bb_ctx *c, double bound, int depth) {
    if (c->has_inc) {
        double qmin = bb_queue_min_bound(&c->q); /* at least the known bound */
        return bound <= qmin + 0.5 * (c->inc_z - qmin);
    }
    return depth <= 2 * (c->n_int + 10);
}

/* Integer columns whose local bounds are tighter than the global ones
 * (node propagation tightens integer columns only, and a binary at most
 * once: the growth of this count is the number of bound changes it made). */
static int bb_count_tightened(const bb_ctx *c) {
    int k = 0;
    for (int j = 0; j < c->n; j++)
        if (c->is_int[j] && (c->llb[j] != c->glb[j] || c->lub[j] != c->gub[j])) k++;
    return k;
}

/* Make an open node from the current local bounds with one extra change. */
static int bb_make_node(bb_ctx *c, bb_node *nd, int col, int dir, double val, double bound, int depth,
                        const spx_basis *basis) {
    memset(nd, 0, sizeof *nd);
    int k = 0;
    for (int j = 0; j < c->n; j++)
        if (c->llb[j] != c->glb[j] || c->lub[j] != c->gub[j] || j == col) k++;
    nd->chg = malloc((size_t)(k ? k : 1) * sizeof *nd->chg);
    if (!nd->chg) return -1;
    k = 0;
    for (int j = 0; j < c->n; j++) {
        if (c->llb[j] != c->glb[j] || c->lub[j] != c->gub[j] || j == col) {
            nd->chg[k].col = j;
            nd->chg[k].lb = c->llb[j];
            nd->chg[k].ub = c->lub[j];
            if (j == col) {
                if (dir) nd->chg[k].lb = ceil(val);
                else nd->chg[k].ub = floor(val);
            }
            k++;
        }
    }
    nd->n_chg = k;
    if (basis) {
        int nb = basis->n + basis->m;
        nd->basis = malloc((size_t)nb);
        if (!nd->basis) { free(nd->chg); nd->chg = NULL; return -1; }
        memcpy(nd->basis, basis->col, (size_t)basis->n);
        memcpy(nd->basis + basis->n, basis->row, (size_t)basis->m);
    }
    nd->bound = bound;
    nd->id = c->next_id++;
    nd->depth = depth;
    nd->branch_col = col;
    nd->branch_dir = dir;
    nd->parent_z = c->z;
    nd->frac = dir ? ceil(val) - val : val - floor(val);
    return 0;
}

/* Load an open node: local bounds = global bounds intersected with the
 * node's changes; install its basis. */
static void bb_load_node(bb_ctx *c, const bb_node *nd) {
    memcpy(c->llb, c->glb, (size_t)c->n * sizeof *c->llb);
    memcpy(c->lub, c->gub, (size_t)c->n * sizeof *c->lub);
    for (int k = 0; k < nd->n_chg; k++) {
        int j = nd->chg[k].col;
        if (nd->chg[k].lb > c->llb[j]) c->llb[j] = nd->chg[k].lb;
        if (nd->chg[k].ub < c->lub[j]) c->lub[j] = nd->chg[k].ub;
    }
    if (nd->basis) {
        spx_basis b;
        b.n = c->n;
        b.m = c->mm;
        b.col = nd->basis;
        b.row = nd->basis + c->n;
        if (b.m == spx_num_rows(c->lps)) spx_set_basis(c->lps, &b);
    }
}

/* Queue both children of the node in llb/lub by the most fractional
 * integer column of the point x (bound: their bound, no basis).  Returns 1
 * when queued, 0 when x has no fractional integer column (or memory ran
 * out). */
static int bb_branch_on_point(bb_ctx *c, const double *x, double bound, int depth) {
    int j = -1;
    double best = BB_INT_TOL;
    for (int k = 0; k < c->n; k++) {
        if (!c->is_int[k]) continue;
        double f = x[k] - floor(x[k]), d = fmin(f, 1 - f);
        if (d > best) {
            best = d;
            j = k;
        }
    }
    if (j < 0) return 0;
    for (int dir = 0; dir < 2; dir++) {
        bb_node nd;
        if (bb_make_node(c, &nd, j, dir, x[j], bound, depth + 1, NULL)) return 0;
        nd.branch_col = -1; /* no pseudocost update: not the search's own LP */
        if (bb_queue_push(&c->q, &nd)) return 0;
    }
    return 1;
}

enum { BB_PRUNED = 0, BB_BRANCHED = 1, BB_STOP = 2, BB_FAIL = 3 };

/* Process the node whose bounds are in llb/lub.  On BB_BRANCHED the
 * preferred child's bounds are left in llb/lub and its creation data in
 * *child; the other child is queued. */
static int bb_process_node(bb_ctx *c, const bb_node *info, bb_node *child, double *node_bound) {
    c->nodes++;
    int depth = info->depth;
    int resolves = 0;
    /* the branching that made this node, for the branching history */
    int hcol = info->branch_col, hdir = info->branch_dir;
    for (;;) {
        /* the node holds the debug solution (0 when the mode is off) */
        int dbg_in = c->dbg_x ? bb_debug_in(c, c->llb, c->lub) : 0;
        int h0 = resolves == 0 && hcol >= 0 ? bb_count_tightened(c) : 0;
        c->tr_on = 1;
        int pinf = bb_propagate(c, c->llb, c->lub, resolves ? -1 : info->branch_col);
        c->tr_on = 0;
        if (pinf) {
            bb_debug_prune(c, dbg_in, "node propagation", INFINITY);
            bb_conflict_learn_prop(c, c->llb, c->lub);
            if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
            return BB_PRUNED;
        }
        for (int j = 0; j < c->n; j++)
            if (c->llb[j] > c->lub[j]) {
                bb_debug_prune(c, dbg_in, "node propagation (crossing bounds)", INFINITY);
                if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
                return BB_PRUNED;
            }
        bb_debug_domain(c, dbg_in, c->llb, c->lub, "node propagation");
        int cf_tight = 0;
        if (bb_conflict_propagate(c, c->llb, c->lub, &cf_tight) ||
            (cf_tight && bb_propagate(c, c->llb, c->lub, -1))) {
            bb_debug_prune(c, dbg_in, "conflict propagation", INFINITY);
            if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
            return BB_PRUNED;
        }
        if (resolves == 0 && hcol >= 0) bb_hist_inference(c, hcol, hdir, bb_count_tightened(c) - h0);
        bb_apply_bounds(c, c->llb, c->lub);
        rk_lp_status st = bb_solve_node_lp(c, 1);
        if (st == RK_LP_INFEASIBLE) {
            bb_debug_prune(c, dbg_in, "node LP (infeasible)", INFINITY);
            bb_conflict_learn_lp(c);
            if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
            return BB_PRUNED;
        }
        if (st == RK_LP_CUTOFF) {
            bb_debug_prune(c, dbg_in, "node LP (objective cutoff)", bb_cutoff(c));
            bb_conflict_learn_cutoff(c);
            bb_note_pruned(c, c->obj_step > 0 ? c->inc_z : bb_cutoff(c));
            if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
            return BB_PRUNED;
        }
        if (st == RK_LP_TIME_LIMIT) { c->stopped = 1; return BB_STOP; }
        if (st != RK_LP_OPTIMAL) {
            rk_fail(c->err, RK_EFAIL, "branch-and-bound: node LP failed (status %d) at node %ld", (int)st, c->nodes);
            return BB_FAIL;
        }
        bb_read_lp(c);
        bb_debug_lp_value(c, dbg_in, "node LP");
        if (info->branch_col >= 0 && resolves == 0)
            bb_update_pseudocost(c, info->branch_col, info->branch_dir, c->z - info->parent_z, info->frac);
        *node_bound = bb_node_bound(c, c->z);
        if (*node_bound >= bb_cutoff(c)) {
            bb_debug_prune(c, dbg_in, "node bound", *node_bound);
            bb_note_pruned(c, *node_bound);
            if (resolves == 0) bb_hist_cutoff(c, hcol, hdir);
            return BB_PRUNED;
        }
        if (bb_count_fractional(c) == 0) {
            if (!bb_offer_solution(c, c->x, "node LP")) {
                double *xs = malloc((size_t)c->n * sizeof *xs);
                if (xs) {
                    memcpy(xs, c->x, (size_t)c->n * sizeof *xs);
                    bb_polish_solution(c, xs);
                    free(xs);
                }
            }
            if (!c->has_inc || c->inc_z > *node_bound + 1e-9 * fmax(1.0, fabs(*node_bound))) {
                /* neither the LP point nor its polished version passed the
                 * check, and it looks better than the incumbent: the node's
                 * LP once more without scaling gives an exact bound (its
                 * point offered); a node still below the cutoff is left
                 * unresolved, its bound kept in the proven bound (never
                 * pruned as if solved) */
                double zu = *node_bound;
                double *xu = malloc((size_t)c->n * sizeof *xu);
                int r = xu ? bb_node_lp_unscaled(c, &zu, xu) : -1;
                if (r == 1) zu = bb_node_bound(c, zu);
                if (r == 0) {
                    bb_debug_prune(c, dbg_in, "the node LP without scaling (infeasible)", INFINITY);
                } else if (r == 1 && zu >= bb_cutoff(c)) {
                    bb_debug_prune(c, dbg_in, "the node LP without scaling (bound)", zu);
                    bb_note_pruned(c, zu);
                } else if (r == 1 && bb_branch_on_point(c, xu, zu, depth)) {
                    /* its point is fractional: both children queued */
                } else {
                    c->unresolved++;
                    bb_note_pruned(c, r < 0 ? *node_bound : zu);
                    bb_debug_prune(c, dbg_in, "an integral node LP solution that failed the feasibility check", c->z);
                }
                free(xu);
            }
            return BB_PRUNED;
        }
        if (c->has_inc) {
            bb_reduced_cost_fixing(c, c->llb, c->lub);
            if (depth == 0) bb_reduced_cost_fixing(c, c->glb, c->gub);
        }
        /* heuristics: at the root and now and then */
        if (resolves == 0 && (depth == 0 || (c->nodes % 100) == 0 || (!c->has_inc && (c->nodes % 20) == 0))) {
            bb_heur_rounding(c);
            /* randomized rounding with propagation, a few streams at the
             * root, one now and then; with an incumbent too (propagation
             * then has the objective cutoff: only better schedules pass,
             * n16_B92 268 -> 248 at the root after the cuts), one attempt
             * a call, while the gap is large: at the root, and in the tree
             * while it improves the incumbent at least once in 8 calls (one
             * attempt after each improvement until one fails cost the grid
             * bench 8 % CPU, one attempt 3 %) */
            int fp_on = !c->has_inc || (c->inc_z - *node_bound > BB_FP_GAP * fmax(1.0, fabs(c->inc_z)) &&
                                        (depth == 0 || (c->fp_wins + 1) * 8 > c->fp_tries));
            for (int a = 0; fp_on && a < (depth > 0 ? 1 : c->is_sub ? 2 : 4); a++) {
                int had = c->has_inc;
                bb_heur_fix_and_propagate(c, c->x, c->rr_attempts++, depth == 0 ? BB_FP_WORK : BB_FP_WORK_NODE);
                if (had) break; /* with the cutoff: one attempt */
            }
            /* RENS in the tree where nothing else found an incumbent, from
             * the node's LP point (the dive moves c->x), with a tenth of the
             * nodes so far as its node limit; not at the root, where
             * fix-and-propagate finds the schedules for less (RENS's
             * sub-MIP spent up to 24 s there on the infeasible remat MILPs) */
            double *xn = NULL;
            if (!c->is_sub && !c->has_inc && depth > 0 && (c->nodes % 500) == 0) {
                xn = malloc((size_t)c->n * sizeof *xn);
                if (xn) memcpy(xn, c->x, (size_t)c->n * sizeof *xn);
            }
            bb_heur_dive(c, c->n);
            if (xn && !c->has_inc) bb_heur_rens(c, xn, c->nodes / 10);
            free(xn);
            if (!c->is_sub && c->has_inc && (depth == 0 || (c->nodes % 500) == 0)) bb_heur_rins(c);
            bb_apply_bounds(c, c->llb, c->lub);
            st = bb_solve_node_lp(c, 0);
            if (st != RK_LP_OPTIMAL) {
                if (st == RK_LP_TIME_LIMIT) { c->stopped = 1; return BB_STOP; }
                if (st == RK_LP_INFEASIBLE || st == RK_LP_CUTOFF) {
                    bb_debug_prune(c, dbg_in, "node LP after the heuristics", INFINITY);
                    return BB_PRUNED;
                }
                rk_fail(c->err, RK_EFAIL, "branch-and-bound: node LP failed after diving (status %d)", (int)st);
                return BB_FAIL;
            }
            bb_read_lp(c);
            if (*node_bound >= bb_cutoff(c)) {
                bb_debug_prune(c, dbg_in, "node bound (after the heuristics)", *node_bound);
                bb_note_pruned(c, *node_bound);
                return BB_PRUNED;
            }
            if (c->has_inc) bb_reduced_cost_fixing(c, c->llb, c->lub);
        }
        /* probing at the root, once there is an incumbent (its cutoff and
         * the reduced costs make most of the fixings) */
        if (depth == 0 && c->has_inc && !c->probed) {
            c->probed = 1;
            long w0 = c->prop_work;
            double t0 = bb_elapsed(c);
            int fx = bb_probe_root(c, 1);
            if (c->par->verbose > 1)
                rk_log_printf(&c->par->log, RK_LOG_DETAIL, "milp: probing fixed %d columns, work %.0f x nnz, %.2f s (%.2f s)", fx,
                        (double)(c->prop_work - w0) / (double)(c->A.nnz + 1), bb_elapsed(c), bb_elapsed(c) - t0);
            if (fx < 0) {
                bb_debug_prune(c, dbg_in, "probing", INFINITY);
                bb_note_pruned(c, c->obj_step > 0 ? c->inc_z : bb_cutoff(c));
                return BB_PRUNED;
            }
            if (fx > 0) {
                for (int k = 0; k < c->n; k++) {
                    if (c->glb[k] > c->llb[k]) c->llb[k] = c->glb[k];
                    if (c->gub[k] < c->lub[k]) c->lub[k] = c->gub[k];
                }
                resolves++;
                continue;
            }
        }
        int up = 0;
        int sb_in = c->dbg_x ? bb_debug_in(c, c->llb, c->lub) : 0;
        int j = bb_select_branch_var(c, &up, depth);
        if (j == -1) {
            /* both children infeasible or cut off */
            bb_debug_prune(c, sb_in, "strong branching (both children)", INFINITY);
            if (c->has_inc) bb_note_pruned(c, c->obj_step > 0 ? c->inc_z : bb_cutoff(c));
            return BB_PRUNED;
        }
        if (j == -2) {
            bb_debug_domain(c, sb_in, c->llb, c->lub, "strong branching (one child infeasible)");
            if (++resolves > 50) return BB_PRUNED; /* cannot happen: bounds only shrink */
            continue;
        }
        if (j < 0) {
            rk_fail(c->err, RK_ENOMEM, "branch-and-bound: out of memory");
            return BB_FAIL;
        }
        /* queue the other child with this node's basis */
        spx_basis b = {0};
        int have_b = spx_get_basis(c->lps, &b) == RK_OK;
        bb_node other;
        if (bb_make_node(c, &other, j, !up, c->x[j], *node_bound, depth + 1, have_b ? &b : NULL) ||
            bb_queue_push(&c->q, &other)) {
            if (have_b) spx_basis_free(&b);
            rk_fail(c->err, RK_ENOMEM, "branch-and-bound: out of memory");
            return BB_FAIL;
        }
        if (have_b) spx_basis_free(&b);
        c->last_other_id = other.id;
        memset(child, 0, sizeof *child);
        child->bound = *node_bound;
        child->depth = depth + 1;
        child->branch_col = j;
        child->branch_dir = up;
        child->parent_z = c->z;
        child->frac = up ? ceil(c->x[j]) - c->x[j] : c->x[j] - floor(c->x[j]);
        child->id = c->next_id++;
        if (up) c->llb[j] = ceil(c->x[j]);
        else c->lub[j] = floor(c->x[j]);
        return BB_BRANCHED;
    }
}

/* ------------------------------------------------------------ set-up */

static void bb_ctx_free(bb_ctx *c) {
    bb_conflict_free(c);
    free(c->row_start);
    free(c->rr_order);
    free(c->row_idx);
    free(c->row_val);
    free(c->obj);
    free(c->obj_cols);
    free(c->glb);
    free(c->gub);
    free(c->llb);
    free(c->lub);
    free(c->slb);
    free(c->sub);
    free(c->row_lb);
    free(c->row_ub);
    free(c->x);
    free(c->d);
    free(c->ax);
    free(c->inc_x);
    for (int d = 0; d < 2; d++) {
        free(c->pc_sum[d]);
        free(c->pc_cnt[d]);
    }
    bb_hist_free(c);
    free(c->tmp_x);
    free(c->tmp_i);
    free(c->prop_queue);
    free(c->prop_inq);
    free(c->tr_col);
    free(c->tr_row);
    free(c->tr_side);
    bb_queue_free(&c->q);
    bb_debug_free(c);
    spx_state_free(c->sb_state);
    if (c->lps) spx_free(c->lps);
}

static int bb_is_integral(double v) { return !isfinite(v) || v == floor(v); }

/* A continuous column is implied integer when it appears in a single row
 * whose other columns are integer with coefficients (divided by its own)
 * integral, the row sides likewise, and its bounds integral: whatever the
 * integer columns, its best value lies at an integral end of its interval. */
static int bb_implied_integer(const bb_ctx *c, int j) {
    if (c->A.start[j + 1] - c->A.start[j] != 1) return 0;
    if (!bb_is_integral(c->glb[j]) || !bb_is_integral(c->gub[j])) return 0;
    int i = c->A.index[c->A.start[j]];
    double a = c->A.value[c->A.start[j]];
    if (!bb_is_integral(c->row_lb[i] / a) || !bb_is_integral(c->row_ub[i] / a)) return 0;
    for (long p = c->row_start[i]; p < c->row_start[i + 1]; p++) {
        int k = c->row_idx[p];
        if (k == j) continue;
        if (!c->is_int[k] || !bb_is_integral(c->row_val[p] / a)) return 0;
    }
    return 1;
}

static double bb_gcd(double a, double b) {
    while (b > 0.5) {
        double t = fmod(a, b);
        a = b;
        b = t;
    }
    return a;
}

/* The objective step: d > 0 such that every solution's value minus the
 * constant is a multiple of d (objective only on integer or implied integer
 * columns, coefficients k * d), or 0 when there is none. */
static double bb_objective_step(const bb_ctx *c) {
    static const double scales[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 40, 50, 100, 1000};
    int any = 0;
    for (int j = 0; j < c->n; j++) {
        if (c->obj[j] == 0) continue;
        any = 1;
        if (!c->is_int[j] && !bb_implied_integer(c, j)) return 0;
    }
    if (!any) return 0;
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        double s = scales[k], g = 0;
        int ok = 1;
        for (int j = 0; j < c->n && ok; j++) {
            if (c->obj[j] == 0) continue;
            double v = fabs(c->obj[j]) * s;
            double r = floor(v + 0.5);
            if (fabs(v - r) > 1e-9 * fmax(1.0, v) || r > 1e12) ok = 0;
            else g = g == 0 ? r : bb_gcd(g, r);
        }
        if (ok && g >= 1) return g / s;
    }
    return 0;
}

static rk_status bb_solve_sub_mip(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err);

static rk_status bb_ctx_init(bb_ctx *c, const rk_lp *lp, const rk_milp_params *p, rk_error *err) {
    memset(c, 0, sizeof *c);
    c->t0 = bb_now();
    c->lp = lp;
    c->par = p;
    c->solve_sub_mip = bb_solve_sub_mip;
    c->err = err;
    c->n = lp->n;
    c->m = lp->m;
    c->mm = lp->m;
    c->q.floor = -INFINITY;
    c->sense = lp->maximize ? -1.0 : 1.0;
    c->prune_min = INFINITY;
    if (lp_matrix(lp, &c->A)) return rk_fail(err, RK_ENOMEM, "branch-and-bound: out of memory");
    int n = c->n, m = c->m;
    size_t nn = (size_t)(n ? n : 1), mn = (size_t)(m ? m : 1), big = nn > mn ? nn : mn;
    c->row_start = calloc(mn + 1, sizeof *c->row_start);
    c->row_idx = malloc((size_t)(c->A.nnz ? c->A.nnz : 1) * sizeof *c->row_idx);
    c->row_val = malloc((size_t)(c->A.nnz ? c->A.nnz : 1) * sizeof *c->row_val);
    c->obj = malloc(nn * sizeof *c->obj);
    c->obj_cols = malloc(nn * sizeof *c->obj_cols);
    c->glb = malloc(nn * sizeof(double));
    c->gub = malloc(nn * sizeof(double));
    c->llb = malloc(nn * sizeof(double));
    c->lub = malloc(nn * sizeof(double));
    c->slb = malloc(nn * sizeof(double));
    c->sub = malloc(nn * sizeof(double));
    c->row_lb = malloc(mn * sizeof(double));
    c->row_ub = malloc(mn * sizeof(double));
    c->x = malloc(nn * sizeof(double));
    c->d = malloc(nn * sizeof(double));
    c->ax = malloc(big * sizeof(double));
    c->inc_x = malloc(nn * sizeof(double));
    for (int d = 0; d < 2; d++) {
        c->pc_sum[d] = calloc(nn, sizeof(double));
        c->pc_cnt[d] = calloc(nn, sizeof(int));
    }
    c->tmp_x = malloc(big * sizeof(double));
    c->tmp_i = malloc(big * sizeof(int));
    c->prop_queue = malloc(mn * sizeof(int));
    c->prop_inq = calloc(mn, 1);
    c->tr_col = malloc(nn * sizeof(int));
    c->tr_row = malloc(nn * sizeof(int));
    c->tr_side = malloc(nn);
    if (!c->row_start || !c->row_idx || !c->row_val || !c->obj || !c->obj_cols || !c->glb || !c->gub || !c->llb ||
        !c->lub || !c->slb || !c->sub || !c->row_lb || !c->row_ub || !c->x || !c->d || !c->ax || !c->inc_x ||
        !c->pc_sum[0] || !c->pc_sum[1] || !c->pc_cnt[0] || !c->pc_cnt[1] || !c->tmp_x || !c->tmp_i ||
        !c->prop_queue || !c->prop_inq || !c->tr_col || !c->tr_row || !c->tr_side || bb_hist_alloc(c, nn))
        return rk_fail(err, RK_ENOMEM, "branch-and-bound: out of memory");
    if (csc_rowwise(n, m, c->A.start, c->A.index, c->A.value, c->row_start, c->row_idx, c->row_val))
        return rk_fail(err, RK_ENOMEM, "branch-and-bound: out of memory");
    const rk_milp_pseudocosts *pc = p->pseudocosts;
    c->reliable = p->pseudocost_branching ? 0 : p->sb_reliability > 0 ? p->sb_reliability : BB_RELIABLE;
    if (pc && pc->n == n && n > 0)
        for (int d = 0; d < 2; d++) {
            memcpy(c->pc_sum[d], pc->sum[d], (size_t)n * sizeof(double));
            memcpy(c->pc_cnt[d], pc->cnt[d], (size_t)n * sizeof(int));
        }
    memcpy(c->row_lb, lp->row_lb, (size_t)m * sizeof(double));
    memcpy(c->row_ub, lp->row_ub, (size_t)m * sizeof(double));
    c->is_int = lp->is_int;
    c->obj_const = c->sense * lp->obj_const;
    for (int j = 0; j < n; j++) {
        c->obj[j] = c->sense * lp->obj[j];
        if (c->obj[j] != 0) c->obj_cols[c->n_obj_cols++] = j;
        double lb = lp->col_lb[j], ub = lp->col_ub[j];
        if (lp->is_int[j]) {
            c->n_int++;
            lb = ceil(lb - 1e-9);
            ub = floor(ub + 1e-9);
        }
        c->glb[j] = lb;
        c->gub[j] = ub;
        c->slb[j] = lp->col_lb[j];
        c->sub[j] = lp->col_ub[j];
    }
    c->obj_step = bb_objective_step(c);
    return RK_OK;
}

static void bb_fill_result(bb_ctx *c, rk_milp_result *res, rk_milp_status st, double bound_min) {
    res->status = st;
    res->nodes = c->nodes;
    res->iterations = c->lp_iter_base + (c->lps ? spx_iterations(c->lps) : 0);
    res->time_s = bb_elapsed(c);
    res->n = c->n;
    if (c->has_inc) {
        res->has_solution = 1;
        res->x = malloc((size_t)(c->n ? c->n : 1) * sizeof *res->x);
        if (res->x) memcpy(res->x, c->inc_x, (size_t)c->n * sizeof *res->x);
        else res->has_solution = 0;
        res->objective = c->sense * c->inc_z;
    } else {
        res->objective = c->sense * INFINITY;
    }
    if (st == RK_MILP_OPTIMAL && c->has_inc && bound_min > c->inc_z) bound_min = c->inc_z;
    res->bound = c->sense * bound_min;
    rk_milp_pseudocosts *pc = &res->pseudocosts;
    size_t nn = (size_t)(c->n ? c->n : 1);
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        pc->sum[d] = malloc(nn * sizeof *pc->sum[d]);
        pc->cnt[d] = malloc(nn * sizeof *pc->cnt[d]);
        if (!pc->sum[d] || !pc->cnt[d]) ok = 0;
        else {
            memcpy(pc->sum[d], c->pc_sum[d], (size_t)c->n * sizeof *pc->sum[d]);
            memcpy(pc->cnt[d], c->pc_cnt[d], (size_t)c->n * sizeof *pc->cnt[d]);
        }
    }
    if (ok) pc->n = c->n;
    else rk_milp_pseudocosts_free(pc); /* out of memory: none (they are advice only) */
}

/* ------------------------------------------------------------ solve */

static rk_status bb_solve(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err, int sub);

rk_status rk_milp_solve(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err) {
    return bb_solve(lp, p, res, err, 0);
}

/* A sub-MIP (RINS): solved by the same search without further sub-MIPs. */
static rk_status bb_solve_sub_mip(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err) {
    return bb_solve(lp, p, res, err, 1);
}

static rk_status bb_search(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err, int sub);

/* The caller's incumbent and pseudocosts in the aggregated problem's
 * columns (map: bb_aggregate): the representative's values.  Returns 0, -1
 * when out of memory. */
static int bb_aggr_params(const rk_milp_params *p, int n, int n_red, const int *map, rk_milp_params *q,
                          double **inc, rk_milp_pseudocosts *pc) {
    *q = *p;
    *inc = NULL;
    memset(pc, 0, sizeof *pc);
    if (p->incumbent) {
        *inc = malloc((size_t)n_red * sizeof **inc);
        if (!*inc) return -1;
        for (int j = n - 1; j >= 0; j--) (*inc)[map[j]] = p->incumbent[j];
        q->incumbent = *inc;
    }
    if (p->pseudocosts && p->pseudocosts->n == n) {
        pc->n = n_red;
        for (int d = 0; d < 2; d++) {
            pc->sum[d] = malloc((size_t)n_red * sizeof *pc->sum[d]);
            pc->cnt[d] = malloc((size_t)n_red * sizeof *pc->cnt[d]);
            if (!pc->sum[d] || !pc->cnt[d]) return -1;
            for (int j = n - 1; j >= 0; j--) {
                pc->sum[d][map[j]] = p->pseudocosts->sum[d][j];
                pc->cnt[d][map[j]] = p->pseudocosts->cnt[d][j];
            }
        }
        q->pseudocosts = pc;
    }
    return 0;
}

/* The result in the original columns: x_j and j's pseudocosts are those of
 * its class.  Returns 0, -1 when out of memory. */
static int bb_aggr_expand(rk_milp_result *res, int n, const int *map) {
    if (res->x) {
        double *x = malloc((size_t)n * sizeof *x);
        if (!x) return -1;
        for (int j = 0; j < n; j++) x[j] = res->x[map[j]];
        free(res->x);
        res->x = x;
    }
    res->n = n;
    rk_milp_pseudocosts *pc = &res->pseudocosts;
    if (pc->n) {
        for (int d = 0; d < 2; d++) {
            double *sum = malloc((size_t)n * sizeof *sum);
            int *cnt = malloc((size_t)n * sizeof *cnt);
            if (!sum || !cnt) {
                free(sum);
                free(cnt);
                return -1;
            }
            for (int j = 0; j < n; j++) {
                sum[j] = pc->sum[d][map[j]];
                cnt[j] = pc->cnt[d][map[j]];
            }
            free(pc->sum[d]);
            free(pc->cnt[d]);
            pc->sum[d] = sum;
            pc->cnt[d] = cnt;
        }
        pc->n = n;
    }
    return 0;
}

/* The search runs on a working copy: tied columns aggregated (bb_aggr.c),
 * then integer rows strengthened (bb_rows.c), then coefficients of binaries
 * tightened (bb_coef.c); solutions are mapped back to the problem's
 * columns. */
static rk_status bb_solve(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err, int sub) {
    if ((p && p->lp_only) || rk_lp_num_integers(lp) == 0) return bb_search(lp, p, res, err, sub);
    rk_milp_params defp;
    if (!p) {
        rk_milp_params_default(&defp);
        p = &defp;
    }
    memset(res, 0, sizeof *res);
    rk_lp *agg = NULL, *work = NULL, *tight = NULL, *clq = NULL;
    int *map = NULL;
    double *inc = NULL, *dbg = NULL;
    rk_milp_pseudocosts pc;
    memset(&pc, 0, sizeof pc);
    rk_milp_params q = *p;
    int removed = bb_aggregate(lp, &agg, &map);
    if (removed > 0 && bb_aggr_params(p, lp->n, agg->n, map, &q, &inc, &pc)) removed = -1;
    int changed = removed < 0 ? -1 : bb_strengthen_rows(agg ? agg : lp, &work);
    int tightened = changed < 0 ? -1 : bb_tighten_coefs(work ? work : agg ? agg : lp, &tight);
    if (tightened < 0) changed = -1;
    int clq_dropped = 0;
    int cliques = changed < 0 ? -1 : bb_add_cliques(tight ? tight : work ? work : agg ? agg : lp, &clq, &clq_dropped);
    if (cliques < 0) changed = -1;
    rk_status st;
    if (changed < 0) {
        st = rk_fail(err, RK_ENOMEM, "branch-and-bound: out of memory");
    } else {
        if (p->verbose > 1 && agg)
            rk_log_printf(&p->log, RK_LOG_DETAIL, "milp: aggregation: %d columns tied to others, %d rows dropped", lp->n - agg->n,
                    lp->m - agg->m);
        if (p->verbose > 1 && changed) rk_log_printf(&p->log, RK_LOG_DETAIL, "milp: %d integer rows strengthened", changed);
        if (p->verbose > 1 && tightened)
            rk_log_printf(&p->log, RK_LOG_DETAIL, "milp: %d coefficients of binaries tightened", tightened);
        if (p->verbose > 1 && cliques) rk_log_printf(&p->log, RK_LOG_DETAIL, "milp: %d clique rows added, %d row sides they imply dropped", cliques, clq_dropped);
        st = RK_OK;
        const rk_lp *stages[3] = {work, tight, clq};
        const char *stage_names[3] = {"the integer-row strengthening", "the coefficient tightening", "the clique rows"};
        if (p->debug_solution) st = bb_debug_presolve(lp, p->debug_solution, agg, map, stages, stage_names, 3, &dbg, err);
        if (st == RK_OK) {
            q.debug_solution = dbg;
            st = bb_search(clq ? clq : tight ? tight : work ? work : agg ? agg : lp, &q, res, err, sub);
        } else {
            res->status = RK_MILP_ERROR;
        }
        if (agg && bb_aggr_expand(res, lp->n, map)) {
            rk_milp_result_free(res);
            res->has_solution = 0;
            res->status = RK_MILP_ERROR;
            st = rk_fail(err, RK_ENOMEM, "branch-and-bound: out of memory");
        }
    }
    rk_lp_free(clq);
    rk_lp_free(tight);
    rk_lp_free(work);
    rk_lp_free(agg);
    free(map);
    free(inc);
    free(dbg);
    rk_milp_pseudocosts_free(&pc);
    return st;
}

/* Whether lp has an integer point (its objective dropped): *st becomes
 * RK_MILP_UNBOUNDED (one exists), RK_MILP_INFEASIBLE or RK_MILP_TIME_LIMIT
 * (undecided); the caller's limits hold. */
static rk_status bb_feasibility(bb_ctx *c, const rk_lp *lp, const rk_milp_params *p, rk_milp_status *st) {
    double *zero = calloc((size_t)(lp->n ? lp->n : 1), sizeof *zero);
    rk_lp *f = zero ? lp_assemble(lp, lp->n, NULL, zero, lp->col_lb, lp->col_ub, lp->m, NULL, lp->row_lb,
                                     lp->row_ub, c->row_start, c->row_idx, c->row_val)
                    : NULL;
    free(zero);
    if (!f) return rk_fail(c->err, RK_ENOMEM, "branch-and-bound: out of memory");
    rk_milp_params q;
    rk_milp_params_default(&q);
    q.threads = p->threads;
    q.seed = p->seed;
    q.node_limit = p->node_limit;
    if (bb_time_limit(c) > 0) q.time_limit = fmax(bb_time_limit(c) - bb_elapsed(c), 1e-3);
    rk_milp_result r;
    rk_status rs = bb_search(f, &q, &r, c->err, 1);
    rk_lp_free(f);
    if (rs == RK_OK) {
        *st = r.status == RK_MILP_OPTIMAL ? RK_MILP_UNBOUNDED
              : r.status == RK_MILP_INFEASIBLE ? RK_MILP_INFEASIBLE
                                                : RK_MILP_TIME_LIMIT;
        if (r.status == RK_MILP_TIME_LIMIT && r.has_solution) *st = RK_MILP_UNBOUNDED;
        c->nodes += r.nodes;
        c->lp_iter_base += r.iterations;
    }
    rk_milp_result_free(&r);
    return rs;
}

static rk_status bb_search(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err, int sub) {
    rk_milp_params defp;
    if (!p) {
        rk_milp_params_default(&defp);
        p = &defp;
    }
    memset(res, 0, sizeof *res);
    res->n = lp->n;
    if (p->lp_only || rk_lp_num_integers(lp) == 0) return lp_solve_relaxation(lp, p, res, err);

    bb_ctx c;
    rk_status rs = bb_ctx_init(&c, lp, p, err);
    c.is_sub = sub;
    if (rs != RK_OK) {
        bb_ctx_free(&c);
        return rs;
    }
    int n = c.n;
    /* caller's incumbent */
    if (p->incumbent) {
        if (!bb_offer_solution(&c, p->incumbent, "given") && p->verbose)
            rk_log_printf(&p->log, RK_LOG_WARNING, "milp: the given incumbent is infeasible; ignored");
    }
    double known = p->known_bound;
    double known_min = -INFINITY;
    if (!isnan(known) && known != -INFINITY && known != INFINITY) known_min = c.sense * known;
    if (c.sense < 0 && known == INFINITY) known_min = -INFINITY;
    c.q.floor = known_min;
    /* the debug solution, checked against the problem and the known bound */
    rs = bb_debug_init(&c, p->debug_solution);
    if (rs != RK_OK) {
        bb_fill_result(&c, res, RK_MILP_ERROR, -INFINITY);
        bb_ctx_free(&c);
        return rs;
    }

    /* root propagation */
    int dbg_in = c.dbg_x ? bb_debug_in(&c, c.glb, c.gub) : 0;
    for (int j = 0; j < n; j++)
        if (c.glb[j] > c.gub[j]) goto infeasible;
    if (bb_propagate(&c, c.glb, c.gub, -1)) {
        bb_debug_prune(&c, dbg_in, "root propagation", INFINITY);
        goto infeasible;
    }
    if (c.dbg_failed) goto debug_failed;

    c.lps = spx_new(lp, err);
    if (!c.lps) {
        bb_ctx_free(&c);
        return RK_EFAIL;
    }
    spx_set_seed(c.lps, p->seed);
    memcpy(c.llb, c.glb, (size_t)n * sizeof(double));
    memcpy(c.lub, c.gub, (size_t)n * sizeof(double));

    /* root LP (without cutoff: its status tells unbounded / infeasible) */
    bb_apply_bounds(&c, c.llb, c.lub);
    {
        rk_lp_status st = bb_solve_lp(&c, 0, 0);
        if (st == RK_LP_INFEASIBLE) {
            bb_debug_prune(&c, dbg_in, "root LP (infeasible)", INFINITY);
            goto infeasible;
        }
        if (st == RK_LP_UNBOUNDED) {
            /* unbounded relaxation: the MILP is unbounded if it has an
             * integer point at all (rational data), else infeasible */
            rk_milp_status fs = RK_MILP_TIME_LIMIT;
            rk_status rs2 = bb_feasibility(&c, lp, p, &fs);
            if (rs2 != RK_OK) {
                bb_fill_result(&c, res, RK_MILP_ERROR, -INFINITY);
                bb_ctx_free(&c);
                return rs2;
            }
            if (fs == RK_MILP_INFEASIBLE && bb_debug_active(&c)) {
                bb_debug_fail(&c, "the feasibility search of an unbounded relaxation", "no integer point found");
                goto debug_failed;
            }
            bb_fill_result(&c, res, fs, fs == RK_MILP_INFEASIBLE ? INFINITY : -INFINITY);
            if (fs == RK_MILP_UNBOUNDED) res->objective = c.sense * -INFINITY;
            bb_ctx_free(&c);
            return RK_OK;
        }
        if (st == RK_LP_TIME_LIMIT) {
            bb_fill_result(&c, res, RK_MILP_TIME_LIMIT, known_min);
            bb_ctx_free(&c);
            return RK_OK;
        }
        if (st != RK_LP_OPTIMAL) {
            rk_fail(err, RK_EFAIL, "branch-and-bound: root LP failed (status %d)", (int)st);
            bb_fill_result(&c, res, RK_MILP_ERROR, -INFINITY);
            bb_ctx_free(&c);
            return RK_EFAIL;
        }
        bb_read_lp(&c);
        c.root_z = c.z;
        if (p->verbose) {
            char step[64] = "";
            if (c.obj_step > 0) snprintf(step, sizeof step, ", objective in steps of %g", c.obj_step);
            rk_log_printf(&p->log, RK_LOG_INFO, "milp: %d rows, %d columns (%d integer)%s; root LP %.10g, %ld iterations, %.2f s", c.m,
                    c.n, c.n_int, step, c.sense * c.z, spx_iterations(c.lps), bb_elapsed(&c));
        }
    }
    bb_debug_lp_value(&c, dbg_in, "root LP");
    /* without an incumbent: randomized rounding of the root LP point before
     * the cuts move it (the rematerialization MILPs round better there) */
    if (c.n_int > 0)
        for (int a = 0; a < (c.is_sub ? 1 : 4) && !c.has_inc; a++)
            bb_heur_fix_and_propagate(&c, c.x, c.rr_attempts++, a == 0 && !c.is_sub ? BB_FP_WORK_FIRST : BB_FP_WORK);
    /* cuts at the root */
    bb_root_cuts(&c);
    bb_debug_lp_value(&c, dbg_in, "root LP after the cuts");
    if (c.dbg_failed) goto debug_failed;

    /* the search */
    bb_node info;
    memset(&info, 0, sizeof info);
    info.branch_col = -1;
    info.id = c.next_id++;
    int have_node = 1;
    double cur_bound = c.z;
    int result = BB_PRUNED;
    double last_log = bb_now();
    /* the plunge's stack: the ids of the children it queued, deepest last */
    long *dive = NULL;
    int n_dive = 0, cap_dive = 0;
    for (;;) {
        if (!have_node) {
            bb_note_pruned(&c, bb_queue_prune(&c.q, bb_cutoff(&c)));
            bb_node nd;
            /* backtrack within the plunge: the sibling of its deepest node
             * still open, while it passes the plunging test (the subtree
             * under way is finished first, as HiGHS's and SCIP's plunging
             * do), else the best bound */
            int got = 0;
            while (n_dive > 0 && !got) {
                if (!bb_queue_take(&c.q, dive[--n_dive], &nd)) continue;
                got = 1;
                if (!bb_plunge_ok(&c, nd.bound, nd.depth)) {
                    if (bb_queue_push(&c.q, &nd)) bb_node_free(&nd);
                    got = 0;
                    n_dive = 0;
                }
            }
            if (!got) {
                n_dive = 0;
                if (!bb_queue_pop(&c.q, &nd)) break;
            }
            double gb = nd.bound > known_min ? nd.bound : known_min;
            if (c.has_inc && gb >= bb_cutoff(&c)) {
                bb_note_pruned(&c, gb);
                bb_node_free(&nd);
                bb_queue_prune(&c.q, -INFINITY);
                break;
            }
            bb_load_node(&c, &nd);
            info = nd;
            info.chg = NULL;
            info.basis = NULL;
            bb_node_free(&nd);
            have_node = 1;
        }
        if (bb_time_up(&c) || (p->node_limit > 0 && c.nodes >= p->node_limit)) {
            c.stopped = 1;
            /* put the current node back so the bound stays right */
            bb_node back;
            if (bb_make_node(&c, &back, -1, 0, 0, info.bound, info.depth, NULL) == 0) {
                back.bound = info.bound;
                bb_queue_push(&c.q, &back);
            }
            break;
        }
        bb_node child;
        double nb = info.bound;
        result = bb_process_node(&c, &info, &child, &nb);
        if (c.dbg_failed) {
            result = BB_FAIL;
            break;
        }
        if (result == BB_STOP) {
            bb_node back;
            if (bb_make_node(&c, &back, -1, 0, 0, info.bound, info.depth, NULL) == 0) bb_queue_push(&c.q, &back);
            break;
        }
        if (result == BB_FAIL) break;
        if (p->verbose && bb_now() - last_log > 2.0) {
            last_log = bb_now();
            double qb = bb_queue_min_bound(&c.q);
            rk_log_printf(&p->log, RK_LOG_INFO, "milp: %ld nodes, %d open, bound %.10g, incumbent %.10g, %.1f s", c.nodes, c.q.size,
                    c.sense * fmin(qb, nb), c.has_inc ? c.sense * c.inc_z : c.sense * INFINITY, bb_elapsed(&c));
        }
        if (result == BB_PRUNED) {
            c.q.leaves++;
            have_node = 0;
            continue;
        }
        /* branched: plunge into the preferred child unless it looks bad */
        cur_bound = nb;
        info = child;
        if (n_dive == cap_dive) {
            int nc = cap_dive ? 2 * cap_dive : 64;
            long *nd = realloc(dive, (size_t)nc * sizeof *nd);
            if (nd) { dive = nd; cap_dive = nc; }
        }
        if (n_dive < cap_dive) dive[n_dive++] = c.last_other_id;
        int plunge = bb_plunge_ok(&c, cur_bound, info.depth);
        if (!plunge) {
            n_dive = 0;
            bb_node back;
            spx_basis b = {0};
            int have_b = spx_get_basis(c.lps, &b) == RK_OK;
            /* the child's bounds are in llb/lub already: no extra change */
            if (bb_make_node(&c, &back, -1, 0, 0, cur_bound, info.depth, have_b ? &b : NULL) == 0) {
                back.branch_col = info.branch_col;
                back.branch_dir = info.branch_dir;
                back.parent_z = info.parent_z;
                back.frac = info.frac;
                bb_queue_push(&c.q, &back);
            }
            if (have_b) spx_basis_free(&b);
            have_node = 0;
        }
    }
    free(dive);
    if (result == BB_FAIL) {
        bb_fill_result(&c, res, RK_MILP_ERROR, -INFINITY);
        bb_ctx_free(&c);
        return RK_EFAIL;
    }
    {
        double qb = bb_queue_min_bound(&c.q);
        rk_milp_status st;
        double bound;
        if (c.stopped && c.q.size > 0) {
            st = RK_MILP_TIME_LIMIT;
            bound = qb;
            if (c.has_inc && bound > c.inc_z) bound = c.inc_z;
            if (bound < known_min) bound = known_min;
            if (c.has_inc && bound >= bb_cutoff(&c)) st = RK_MILP_OPTIMAL;
        } else if (c.has_inc) {
            st = RK_MILP_OPTIMAL;
            /* the proven bound: nodes pruned within the gap still count */
            bound = fmin(c.prune_min, c.inc_z);
            if (c.obj_step > 0 && bound > c.inc_z - c.obj_step * (1 - 1e-6)) bound = c.inc_z;
            if (bound < known_min) bound = fmin(known_min, c.inc_z);
            /* a node left unresolved (bb_process_node) below the cutoff:
             * the gap is not closed */
            if (c.unresolved > 0 && bound < bb_cutoff(&c)) st = RK_MILP_TIME_LIMIT;
        } else {
            st = RK_MILP_INFEASIBLE;
            bound = INFINITY;
        }
        (void)cur_bound;
        if (st != RK_MILP_TIME_LIMIT && bb_debug_active(&c)) {
            bb_debug_fail(&c, "a step the debug mode does not check", "the search ended (%s) with %s",
                          rk_milp_status_name(st), c.has_inc ? "a worse incumbent" : "no solution");
            goto debug_failed;
        }
        bb_fill_result(&c, res, st, bound);
        if (p->verbose && c.cf) {
            long cl, cq, cp, ct;
            int cr;
            bb_conflict_stats(&c, &cl, &cq, &cp, &ct, &cr);
            rk_log_printf(&p->log, RK_LOG_INFO,
                          "milp: conflicts: %ld learned, %d in the pool, %ld nodes pruned, %ld bounds tightened, %ld "
                          "learned from propagation",
                          cl, cr, cp, ct, cq);
        }
        if (p->verbose && c.unresolved)
            rk_log_printf(&p->log, RK_LOG_WARNING, "milp: %ld nodes left unresolved: integral LP points that fail the feasibility check",
                    c.unresolved);
        if (p->verbose)
            rk_log_printf(&p->log, RK_LOG_INFO,
                    "milp: %s, objective %.10g, bound %.10g, %ld nodes, %ld iterations (%ld strong branching, %ld "
                    "diving), %.2f s",
                    rk_milp_status_name(st), res->objective, res->bound, res->nodes, res->iterations, c.it_sb,
                    c.it_dive, res->time_s);
        if (p->verbose)
            rk_log_printf(&p->log, RK_LOG_INFO,
                          "milp: tree: %ld leaves, %ld nodes dropped by the incumbent, %d open, %ld picks of the "
                          "best bound (the others: plunges and their backtracking)",
                          c.q.leaves, c.q.dropped, c.q.size, c.q.popped);
    }
    bb_ctx_free(&c);
    return RK_OK;

debug_failed:
    bb_fill_result(&c, res, RK_MILP_ERROR, -INFINITY);
    bb_ctx_free(&c);
    return RK_EFAIL;

infeasible:
    if (bb_debug_active(&c)) {
        bb_debug_fail(&c, "the root", "the problem was found infeasible");
        goto debug_failed;
    }
    if (c.has_inc) {
        /* cannot be: a feasible incumbent exists; trust it */
        bb_fill_result(&c, res, RK_MILP_OPTIMAL, c.inc_z);
    } else {
        bb_fill_result(&c, res, RK_MILP_INFEASIBLE, INFINITY);
    }
    bb_ctx_free(&c);
    return RK_OK;
}
