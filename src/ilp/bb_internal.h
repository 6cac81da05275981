/* bb_internal.h — the branch-and-bound solve context shared by the bb_*.c
 * files (one concept each): bb.c (the search loop and rk_milp_solve),
 * bb_lp.c (the node LP relaxation, cutoff and clock, called by all the others),
 * bb_aggr.c (aggregation of tied columns, before the search), bb_rows.c
 * (integer rows divided by their gcd), bb_coef.c (coefficient tightening),
 * bb_clique.c (clique rows from single rows),
 * bb_queue.c (open nodes, best-bound heap), bb_prop.c (domain propagation),
 * bb_probe.c (root probing), bb_branch.c (pseudocost / reliability
 * branching), bb_heur.c (incumbent checks, rounding, diving, RINS and RENS),
 * bb_fixprop.c (fix-and-propagate with backjumping),
 * bb_cuts.c and bb_cover.c (cutting planes at the root), bb_conflict.c
 * (conflict analysis), bb_debug.c (the debug-solution checks).  Calls go downward only: bb.c calls the others,
 * which call bb_lp.c (and bb_debug.c, bb_prop.c, bb_queue.c); the sub-MIPs of
 * RINS and RENS go back to the search through bb_ctx.solve_sub_mip.
 *
 * Everything is in minimization form: z = sense * (c'x + c0), sense = -1 for
 * a maximize problem.  No global state: one bb_ctx per solve (reentrant). */
#ifndef RK_BB_INTERNAL_H
#define RK_BB_INTERNAL_H

#include "lp_internal.h"
#include "simplex.h"

#define BB_INT_TOL 1e-6     /* integrality tolerance */
#define BB_FEAS_TOL 1e-6    /* row feasibility of an incumbent (relative: bb_check_solution) */
#define BB_CLEAN_TOL 1e-9   /* a candidate missing a row by more is re-solved without scaling */
#define BB_RELIABLE 4       /* observations after which a pseudocost is trusted (reliability branching) */

/* A bound change relative to the root bounds. */
typedef struct {
    int col;
    double lb, ub;
} bb_bound;

/* An open node. */
typedef struct {
    double bound;         /* lower bound (parent's LP value, min form) */
    double estimate;
    long id;              /* creation order: deterministic tie-break */
    int depth;
    int n_chg;
    bb_bound *chg;        /* full difference to the root bounds */
    signed char *basis;   /* parent's basis, n + m entries (NULL: none) */
    /* how it was created (pseudocost update after its LP) */
    int branch_col, branch_dir; /* dir 0 down, 1 up; col -1 for the root */
    double parent_z, frac;
} bb_node;

typedef struct {
    bb_node *heap;
    int size, cap;
    double floor;         /* a known lower bound (-inf: none): bounds below it tie */
    long popped;          /* nodes taken by bb_queue_pop (the best bound) */
    long dropped;         /* nodes dropped by bb_queue_prune */
    long leaves;          /* processed nodes that ended their branch (bb.c counts them) */
} bb_queue;

typedef struct bb_conflict_pool bb_conflict_pool;

typedef struct bb_ctx {
    const rk_lp *lp;
    const rk_milp_params *par;
    rk_error *err;
    int n, m;
    double sense;         /* +1 min, -1 max */
    /* column-wise and row-wise matrix */
    lp_csc A;
    long *row_start;
    int *row_idx;
    double *row_val;
    double *obj;          /* min form */
    int *obj_cols, n_obj_cols; /* the columns with a cost, increasing */
    double obj_const;     /* min form */
    double obj_step;      /* every solution value is c0 + k * obj_step (0: unknown) */
    signed char *is_int;
    int n_int;
    /* bounds: global (root, tightened during the search) and local (node) */
    double *glb, *gub;
    double *llb, *lub;
    double *slb, *sub;    /* what the simplex currently has */
    double *row_lb, *row_ub;
    /* LP */
    spx *lps;
    int mm;               /* rows in the simplex (m + cuts) */
    double *x, *d, *ax;   /* LP solution, reduced costs (min form), activity */
    double z;             /* LP value, min form */
    /* incumbent */
    int has_inc;
    double inc_z;
    double *inc_x;
    /* pseudocosts */
    double *pc_sum[2];
    int *pc_cnt[2];
    /* branching history beside the pseudocosts (bb_branch.c, hybrid
     * branching): per column and direction, the bound changes that branching
     * there made propagation find (sum, count), how often a child there died
     * (cutoffs), and how often the column appeared in learned conflict rows
     * (with a weight that grows with every conflict: recent ones count more) */
    double *hist_inf[2];
    int *hist_inf_cnt[2];
    int *hist_cut[2];
    double *hist_cf[2];
    double hist_cf_weight, hist_cf_total;
    double hist_inf_total;
    long hist_inf_n, hist_cut_n, hist_pc_n;
    /* search state */
    bb_queue q;
    long next_id;
    long last_other_id;   /* id of the child queued by the last branching (bb_process_node) */
    long nodes;
    long lp_iter_base;
    long it_sb, it_dive;  /* simplex iterations in strong branching / diving (log) */
    double t0;
    int stopped;          /* a limit was hit */
    double root_z;
    double prune_min;     /* lowest bound of a node pruned by bound */
    long unresolved;      /* nodes whose integral LP point failed the check (their bounds are in prune_min) */
    int is_sub;           /* this is a sub-MIP of a heuristic: no sub-MIPs */
    int reliable;         /* observations after which a pseudocost is trusted (0: no strong branching) */
    /* scratch */
    double *tmp_x;
    int *tmp_i;
    int *prop_queue;
    char *prop_inq;
    int prop_obj_dirty;   /* a column with a cost was tightened: objective row again */
    int probed;           /* root probing done (with an incumbent) */
    long prop_work;       /* row entries visited by propagation (a deterministic clock) */
    /* The trail of a node's propagation, while tr_on (bb_prop.c writes it,
     * bb_conflict.c reads it): each bound change of an integer column (the
     * column, the row that made it, -2 for the objective row, and the side
     * of that row: 0 its upper side, 1 its lower side), and the row (side)
     * found infeasible (tr_fail_row -1: none).  tr_overflow: a change did not
     * fit (n entries), the trail is unusable. */
    int tr_on, tr_n, tr_overflow;
    int *tr_col, *tr_row;
    signed char *tr_side;
    int tr_fail_row, tr_fail_side;
    spx_basis basis_tmp;
    spx_state *sb_state; /* node LP snapshot for strong branching (reused) */
    /* debug solution (bb_debug.c; dbg_x NULL when off) in this search's
     * columns, its min-form objective, whether a violation was reported
     * (c->err holds it), and whether the running propagation tracks it */
    double *dbg_x;
    double dbg_z;
    int dbg_failed;
    int dbg_prop;
    /* The sub-MIP solver of RINS and RENS (bb_heur.c), set by bb.c: the
     * heuristics call the search they are part of through this pointer, so
     * that no file below bb.c calls up into it. */
    unsigned rr_attempts; /* randomized roundings tried (each its own random stream) */
    int *rr_order;        /* their column order (bb_fixprop.c; NULL until first used) */
    long fp_tries, fp_wins; /* fix-and-propagate calls with an incumbent, and those that improved it */
    int prop_continuous;  /* propagation also tightens continuous columns (heuristics only) */
    rk_status (*solve_sub_mip)(const rk_lp *lp, const rk_milp_params *p, rk_milp_result *res, rk_error *err);
    struct bb_conflict_pool *cf; /* learned conflict rows (bb_conflict.c; NULL: none yet) */
} bb_ctx;

/* the LP relaxation and the clock (bb_lp.c) */
double bb_now(void);
double bb_elapsed(const bb_ctx *c);
/* The time limit in force: par->time_limit, or while there is no incumbent
 * par->time_limit_no_incumbent when that is longer. */
double bb_time_limit(const bb_ctx *c);
int bb_time_up(const bb_ctx *c);

/* The value a node must beat to be worth exploring (min form); +inf when
 * there is no incumbent. */
double bb_cutoff(const bb_ctx *c);

/* queue */
void bb_queue_free(bb_queue *q);
int bb_queue_push(bb_queue *q, bb_node *nd);      /* takes ownership; -1 OOM */
int bb_queue_pop(bb_queue *q, bb_node *out);      /* best bound; 0 if empty */
int bb_queue_take(bb_queue *q, long id, bb_node *out); /* the node with this id; 0 if not open */
double bb_queue_min_bound(const bb_queue *q);     /* least bound, at least the floor; +inf if empty */
void bb_node_free(bb_node *nd);
/* Drop every node whose bound is >= cutoff; returns the lowest bound
 * dropped (+inf if none). */
double bb_queue_prune(bb_queue *q, double cutoff);
/* Record that a node with this bound was pruned by the incumbent. */
void bb_note_pruned(bb_ctx *c, double bound);

/* propagation: tighten lb/ub of integer columns; returns 0 ok, 1 infeasible.
 * changed_col (may be -1): only rows of that column are queued first; -1
 * queues all rows. */
int bb_propagate(bb_ctx *c, double *lb, double *ub, int changed_col);

/* incumbent */
/* Check x (integers rounded in place) against bounds and rows; returns 1 when
 * feasible and sets *z to its min-form objective (its row activities are
 * then in c->tmp_x). */
int bb_check_solution(const bb_ctx *c, double *x, double *z);
/* Offer a candidate solution; returns 1 if it became the incumbent. */
int bb_offer_solution(bb_ctx *c, const double *x, const char *source);
/* Fix the integer columns of x (integral within tolerance) and re-solve the
 * LP for the continuous ones; offers the result.  Leaves the simplex with
 * the node's bounds (llb/lub) and basis. */
int bb_polish_solution(bb_ctx *c, const double *x);
/* The node's LP (bounds llb/lub, model rows, no cuts) solved without
 * scaling, whose tolerances hold in the problem's units; its point is
 * offered.  Returns 1 with *z its value (min form; a valid node bound) and x
 * its point (n values), 0 when infeasible, -1 when it could not be solved. */
int bb_node_lp_unscaled(bb_ctx *c, double *z, double *x);
/* Rows in which moving x_j down (dir 0) or up (dir 1) may violate a side. */
int bb_locks(const bb_ctx *c, int j, int dir);
/* Primal heuristics at a node whose LP is solved (c->x valid). */
void bb_heur_rounding(bb_ctx *c);
void bb_heur_dive(bb_ctx *c, int max_depth);
/* The effort of LP diving, as SCIP's and HiGHS's heuristics have one: the
 * dives' simplex iterations (dive_its) may reach BB_DIVE_QUOT of the
 * search's other LP iterations (node LPs, cuts; node_its) plus 2000 + m +
 * n; returns 1 while another dive may start. */
#define BB_DIVE_QUOT 0.1
int bb_dive_within_quota(long dive_its, long node_its, int m, int n);
/* Randomized rounding with propagation of the LP point x, with conflict
 * backjumping (bb_fixprop.c; attempt: which random stream of this solve's
 * seed; work: its budget of propagation work, in passes over the matrix);
 * returns 1 when it found a new or better incumbent. */
int bb_heur_fix_and_propagate(bb_ctx *c, const double *x, unsigned attempt, double work);
/* RINS: fix the integer columns where the node LP and the incumbent agree
 * and solve the rest as a small MILP with a node limit. */
void bb_heur_rins(bb_ctx *c);
/* RENS: fix the integer columns that are integral at the LP point x,
 * restrict the others to their two nearest integers, and solve that as a
 * small MILP (a first incumbent where diving fails: the Checkmate MILPs)
 * of at most node_limit nodes. */
void bb_heur_rens(bb_ctx *c, const double *x, long node_limit);

/* branching: pick a fractional column; returns column, or -1 when the node
 * can be pruned (strong branching proved both children infeasible), or -2
 * when strong branching tightened a bound (node must be re-solved).
 * *prefer_up says which child to explore first. */
int bb_select_branch_var(bb_ctx *c, int *prefer_up, int depth);
void bb_update_pseudocost(bb_ctx *c, int col, int dir, double delta_z, double frac);
/* branching history (hybrid branching scores): bb_hist_alloc: 0 ok, -1 out
 * of memory; bb_hist_inference: branching col in dir let propagation tighten
 * k bounds; bb_hist_cutoff: the child of col in dir died (infeasible, cut
 * off); bb_hist_conflict: a conflict row a x <= b was learned (a > 0 counts
 * for the up direction, a < 0 for the down one). */
int bb_hist_alloc(bb_ctx *c, size_t nn);
void bb_hist_free(bb_ctx *c);
void bb_hist_inference(bb_ctx *c, int col, int dir, int k);
void bb_hist_cutoff(bb_ctx *c, int col, int dir);
void bb_hist_conflict(bb_ctx *c, const int *idx, const double *val, int len);

/* lifted knapsack covers (bb_cover.c): bb_cover_cut separates one cut
 * a x <= *rhs from side dir (0: <= ub, 1: >= lb) of model row `row` at the
 * LP point c->x, in the global bounds; returns its number of nonzeros (0:
 * none violated, or the row is not over binary columns) with *eff its
 * efficacy.  work: bb_cover_work_size(c->n) bytes; idx/val: c->n entries. */
size_t bb_cover_work_size(int n);
int bb_cover_cut(const bb_ctx *c, int row, int dir, void *work, int *idx, double *val, double *rhs, double *eff);
/* {0,1/2}-CG cuts (bb_zerohalf.c): bb_zerohalf_cut separates one cut
 * a x <= rhs from one side of model row `row` (dir 0: <= ub, 1: >= lb)
 * summed with a few other rows and bounds; returns its length (0: none)
 * with its efficacy.  work: bb_zerohalf_work_size(c->n) bytes, zeroed
 * once (left zeroed); idx/val: c->n entries. */
size_t bb_zerohalf_work_size(int n);
int bb_zerohalf_cut(const bb_ctx *c, int row, int dir, void *work, int *idx, double *val, double *rhs, double *eff);

/* LP helpers (bb_lp.c) */
void bb_apply_bounds(bb_ctx *c, const double *lb, const double *ub);
/* with_cutoff: 0, or BB_LP_CUTOFF (stop once the incumbent's cutoff is
 * passed), plus BB_LP_TRIAL for a solve whose state is thrown away. */
#define BB_LP_CUTOFF 1
#define BB_LP_TRIAL 2
rk_lp_status bb_solve_lp(bb_ctx *c, long iter_limit, int with_cutoff);
void bb_read_lp(bb_ctx *c);
/* A new problem with the model's rows and objective (no cuts) and the given
 * column bounds, for sub-MIPs and rebuilt LPs; NULL when out of memory. */
rk_lp *bb_model_copy(const bb_ctx *c, const double *lb, const double *ub);

/* integer rows (bb_rows.c): *out = a copy of lp whose all-integer rows are
 * divided by their coefficients' gcd with bounds rounded inwards (same
 * integer solutions).  Returns the number of rows changed (0: *out NULL, no
 * copy), -1 when out of memory. */
int bb_strengthen_rows(const rk_lp *lp, rk_lp **out);

/* aggregation (bb_aggr.c): *out = lp with the columns tied by rows
 * `a x_j - a x_k = 0` merged into one (the smallest index of a class stands
 * for it: bounds intersected, costs added), rows rewritten over the classes,
 * empty rows dropped and identical rows merged; *map (n entries) gives each
 * original column's column in *out.  Same solutions (x_j = x'[map[j]]), same
 * objective, same LP relaxation.  Returns the number of columns and rows
 * removed (0: *out and *map NULL, nothing to do, or a class or merged row
 * with no feasible value, left for the search to prove), -1 when out of
 * memory. */
int bb_aggregate(const rk_lp *lp, rk_lp **out, int **map);

/* coefficient tightening (bb_coef.c): *out = a copy of lp where, in each
 * one-sided row, the coefficient of a binary column whose one value leaves
 * the row redundant (in the bounds the rows imply) is reduced to what the
 * other value needs (with the side); same integer solutions, tighter LP.
 * Returns the number of coefficients changed (0: *out NULL), -1 when out of
 * memory. */
int bb_tighten_coefs(const rk_lp *lp, rk_lp **out);

/* clique rows (bb_clique.c): *out = a copy of lp with set-packing rows
 * `sum of literals <= 1` appended for the maximal cliques of conflicting
 * binaries read off single rows (pairs whose weights pass the row's slack),
 * those not already rows, and the row sides that their cliques imply
 * dropped (*dropped of them); same integer solutions, tighter LP.  Returns
 * the number of rows added (0: *out NULL), -1 when out of memory. */
int bb_add_cliques(const rk_lp *lp, rk_lp **out, int *dropped);

/* probing (bb_probe.c): fix binaries whose one side is infeasible (rows,
 * objective cutoff, with use_rc the root LP's reduced-cost bound) in
 * glb/gub; returns the number fixed, -1 when no solution better than the
 * incumbent exists. */
int bb_probe_root(bb_ctx *c, int use_rc);

/* debug solution (bb_debug.c).  bb_debug_lp_check: 0 when x satisfies lp's
 * bounds, integrality and rows within 1e-6 (scaled), 1 with msg naming the
 * first violation, -1 out of memory.  bb_debug_init: set up from x (this
 * search's columns; NULL: off); an error status with c->err filled when it
 * is infeasible (RK_EINPUT) or already cut off (RK_EFAIL: objective step,
 * known bound).  bb_debug_active: on,
 * no violation yet, objective below the cutoff (only then must the search
 * keep it).  bb_debug_in: active and inside lb..ub.  The checks report the
 * first violation (bb_debug_fail) and set dbg_failed, which stops the
 * search: bb_debug_domain (was_in: bb_debug_in before a change of lb/ub),
 * bb_debug_bound (column j's new bounds; row -1 when no row caused it; call
 * only while the debug solution was in the domain), bb_debug_cut (a cut
 * row, checked while the debug solution is in the global domain),
 * bb_debug_prune (a node that held it pruned), bb_debug_lp_value (the LP
 * value c->z of a node that held it).  bb_debug_plant_column: an integer
 * column whose debug value is above lb (for planted faults), or -1. */
int bb_debug_lp_check(const rk_lp *lp, const double *x, char *msg, size_t cap);
rk_status bb_debug_init(bb_ctx *c, const double *x);
void bb_debug_free(bb_ctx *c);
int bb_debug_active(const bb_ctx *c);
int bb_debug_in(const bb_ctx *c, const double *lb, const double *ub);
void bb_debug_fail(bb_ctx *c, const char *component, const char *fmt, ...);
void bb_debug_domain(bb_ctx *c, int was_in, const double *lb, const double *ub, const char *component);
void bb_debug_bound(bb_ctx *c, const char *component, int row, int j, double lb, double ub);
void bb_debug_cut(bb_ctx *c, const char *family, int k, const int *idx, const double *val, double lb, double ub);
void bb_debug_prune(bb_ctx *c, int was_in, const char *why, double bound);
void bb_debug_lp_value(bb_ctx *c, int was_in, const char *what);
int bb_debug_plant_column(const bb_ctx *c, const double *lb);
/* The debug solution x of lp through the presolve of bb_solve: checked
 * against lp (RK_EINPUT when it violates it), mapped to agg's columns (map;
 * agg NULL: none) and checked against agg's rows and each later stage's rows
 * (stages[k], named names[k]; NULL: skipped; same columns as agg or lp);
 * RK_EFAIL naming the step that cuts it off.  *out (new array): its values
 * in the columns of the problem searched. */
rk_status bb_debug_presolve(const rk_lp *lp, const double *x, const rk_lp *agg, const int *map,
                            const rk_lp *const *stages, const char *const *names, int n_stages, double **out,
                            rk_error *err);

/* conflict analysis (bb_conflict.c): a pool of rows a x <= rhs valid for
 * every solution.  bb_conflict_learn_lp: after a node LP (bounds slb/sub)
 * ended infeasible, learn the dual proof of its Farkas ray when it proves
 * the node infeasible; returns 1 when a row was added.  bb_conflict_add:
 * add one row (checked by the debug mode; source names it); returns 1 when
 * added.  bb_conflict_propagate: propagate the pool's rows on lb/ub
 * (integer columns tightened, *tightened counts them); returns 1 when a row
 * cannot be satisfied (the node is infeasible). */
int bb_conflict_learn_lp(bb_ctx *c);
/* the same after a node LP was stopped by the cutoff (its dual proof with
 * the objective row) */
int bb_conflict_learn_cutoff(bb_ctx *c);
int bb_conflict_add(bb_ctx *c, const int *idx, const double *val, int len, double rhs, const char *source);
int bb_conflict_propagate(bb_ctx *c, double *lb, double *ub, int *tightened);
/* After the node propagation in lb/ub (recorded in the trail, c->tr_*)
 * found row tr_fail_row infeasible: resolve the bound changes of the trail
 * back to the binary fixings the node started with and learn the row "not
 * all of these" (a no-good: sum over those fixed at 1 of (1 - x) plus sum
 * over those fixed at 0 of x >= 1); returns 1 when a row was added. */
int bb_conflict_learn_prop(bb_ctx *c, const double *lb, const double *ub);
void bb_conflict_stats(const bb_ctx *c, long *learned, long *from_prop, long *pruned, long *tightened, int *rows);
void bb_conflict_free(bb_ctx *c);

/* cuts (bb_cuts.c): rounds of cuts at the root; returns rows added */
int bb_root_cuts(bb_ctx *c);

#endif
