/* rk_checkmate.h — public API of rk-Checkmate: the rematerialization MILP of
 * one CD-graph under a peak budget M_peak and a saved-activation budget
 * M_save (paper appendix "rk-Checkmate: ILP details"), decoding of its
 * solutions into block options, the (M_peak, M_save) budget grid that gives
 * each block class its options, and whole-graph Checkmate on a chain
 * flattened into one graph.
 *
 * The formulation, every variable and constraint family with its count and
 * the argument for every presolve reduction are in docs/ilp.md.  All ILPs are
 * solved by rk_milp_solve (rk_milp.h) unless the caller installs its own
 * solver callback (the benchmark does, to compare with another solver).
 *
 * Every decoded schedule is replayed by the simulator (rk_option_evaluate /
 * rk_simulate) before it is returned; a schedule whose replay disagrees with
 * the ILP (peak above M_peak, saved above M_save, time != objective) is a bug
 * and is reported as RK_EFAIL with a message saying so. */
#ifndef RK_CHECKMATE_H
#define RK_CHECKMATE_H

#include <stdint.h>
#include "rk_graph.h"
#include "rk_milp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A MILP solver with rk_milp_solve's contract (res->x malloc'ed, freed by
 * rk_milp_result_free).  `tag` names the ILP (class and budget), for logs. */
typedef rk_status (*rk_checkmate_solve_fn)(void *ctx, const char *tag, const rk_lp *lp,
                                           const rk_milp_params *mp, rk_milp_result *res,
                                           rk_error *err);

typedef struct {
    int grid_peak;          /* number of M_peak values (default 20) */
    int grid_save;          /* number of M_save values per M_peak (default 20) */
    double time_limit;      /* seconds per ILP (default 10); <= 0: none */
    int greedy_only;        /* whole-graph Checkmate only: 1 = no MILP, the
                               cheapest of the greedy rematerialization
                               (with its local search) and the seeds
                               (chains too large for the MILP in time) */
    double time_limit_no_schedule; /* whole-graph Checkmate only: when above
                               time_limit, the search goes on past it while
                               no schedule within the budget is known, up to
                               this, and stops at the first one found after
                               time_limit (rk_milp_params.time_limit_no_incumbent);
                               0 (default): time_limit holds */
    long node_limit;        /* B&B nodes per ILP, <= 0: none.  Unlike the time
                               limit it keeps the grid's output independent of
                               the machine's speed and load */
    double gap;             /* relative gap at which an ILP counts as solved
                               (default 1e-6) */
    int threads;            /* OpenMP threads for independent budgets; 0: the
                               OpenMP default.  Results are identical for any */
    int milp_threads;       /* threads handed to each rk_milp_solve (default 1) */
    unsigned seed;          /* rk_milp_params.seed of every ILP (default 0) */
    const char *export_dir; /* when set, every ILP solved is written there as
                               MPS: <prefix>_p<i>_s<j>.mps (i, j = grid
                               indices), <prefix>_minpeak.mps, <prefix>.mps for
                               a single solve */
    const char *export_prefix; /* default "block" */
    int verbose;            /* log per ILP, through `log` */
    rk_log log;             /* where log lines go ({NULL, NULL}: stderr); handed
                               to every ILP's rk_milp_params */
    double deadline;        /* rk_checkmate_clock() time after which no grid
                               ILP (min-peak included) starts and a running
                               one stops as at its time limit (its best
                               schedule is kept); 0 (default): none.  The
                               solve pipeline sets it from
                               rk_solve_params.grid_time_box.  Like the time
                               limit, a deadline that is reached makes the
                               options depend on the machine's speed */
    int greedy_step;        /* > 0: rk_checkmate_grid_new also runs the greedy
                               rematerialization at the M_peak of every
                               greedy_step-th line from the loosest and of the
                               tightest; its schedules are options of the grid
                               and incumbents of every point they fit.  0
                               (default): none (rk_checkmate_block_options and
                               the whole grid leave it at 0) */
    int node_limit_rows;    /* > 0: an ILP with more rows (a grid point's, a
                               min-peak one, a single budget's) gets
                               node_limit x node_limit_rows / rows nodes (at
                               least 1): a node costs about its LP's rows.
                               0 (default): node_limit as it is */
    int ilp_max_cols;       /* > 0: a model with more columns gets no ILP
                               (their root alone takes 10 to 30 s and more on
                               DenseNet-121's dense blocks, 25 000 to 110 000
                               columns): the M_peak range starts at the least
                               peak of the asap schedule and of the greedy
                               (whose schedule seeds the incumbents), and the
                               grid's points are left without a schedule, so
                               its options are the greedy ones (greedy_step).
                               0 (default): no limit */
    long max_model_cols;    /* > 0: a graph whose model would have more
                               columns (counted before the model is made,
                               then while it is) gets no model at all: its
                               memory and the greedy's time grow with them
                               (a 2327-node GRU seq2seq block unrolled in
                               time: 8.6 M columns, 0.7 GiB without rows,
                               then 130 s and 3.5 GiB of greedy; with its
                               memory rows, billions of terms).
                               rk_checkmate_grid_new fails with RK_ENOMEM and
                               a message naming the size; rk_checkmate_chain_
                               grids leaves that class without a grid (its
                               options are the DP's built-in ones) and logs
                               it.  Default 2 000 000 (densenet201's largest
                               block: 579 000); 0: no limit but the model's
                               own (1.3 e8 terms of memory rows) */
    int no_fwd_min_peak;    /* 1: rk_checkmate_grid_new solves only the
                               min-peak ILP; 0 (default): also the min-peak
                               ILP whose forward stages hold the output's
                               gradient (the block's forward run again
                               before its backward, as rk-Rotor does), whose
                               schedule is an option too */
    rk_checkmate_solve_fn solve; /* NULL: rk_milp_solve */
    void *solve_ctx;
} rk_checkmate_params;

RK_API void rk_checkmate_params_default(rk_checkmate_params *p);

/* Seconds on a monotonic clock (the clock of rk_checkmate_params.deadline). */
RK_API double rk_checkmate_clock(void);

/* Counters of a grid (or of a chain of grids: they add up). */
typedef struct {
    int n_budgets;          /* grid points considered */
    int n_ilps;             /* ILPs handed to the solver */
    int n_reused;           /* budgets answered by the proven optimum of a looser budget */
    int n_infeasible;       /* budgets proven infeasible (by an ILP or by a looser one) */
    int n_timeout;          /* ILPs stopped by the time limit (their best schedule is kept) */
    int n_skipped;          /* ILPs not started: the deadline had passed */
    int n_options;          /* unique options returned */
    int max_cols, max_rows; /* largest ILP */
    long sum_cols, sum_rows; /* over the ILPs solved */
    int64_t min_peak, max_peak; /* the M_peak range */
    double solve_time_s;    /* sum of the solver's time over the ILPs */
    double wall_s;          /* wall time of the call */
    long nodes;             /* B&B nodes summed over the ILPs (the min-peak
                               ILPs included): the work the grid's work box
                               counts, the same for any number of threads */
    long iterations;        /* simplex iterations summed, likewise */
    long work;              /* the work the grid's work box counts, likewise:
                               each ILP's simplex iterations x its rows /
                               1000 (an iteration costs about its LP's rows) */
    int n_work_ilps;        /* the ILPs counted in work (min-peak included) */
} rk_checkmate_stats;

/* ------------------------------------------------------------ one ILP */

/* The model of one graph, independent of the budgets: built once, then turned
 * into an rk_lp for any (M_peak, M_save).  Opaque. */
typedef struct rk_checkmate_model rk_checkmate_model;

/* Build the model of finalized graph g (stages = g->topo).  Fails with
 * RK_EINPUT when g is outside what the model supports (a non-grad data node
 * with several producers). */
RK_API rk_status rk_checkmate_model_build(const rk_graph *g, rk_checkmate_model **out, rk_error *err);
RK_API void rk_checkmate_model_free(rk_checkmate_model *m);

/* The LP for budgets (m_peak, m_save) (m_save < 0: no M_save row).  Its
 * objective is the recomputation time (the time of every node once is left
 * out; decoding adds it back).  Sets
 * *lp = NULL and returns RK_EINFEASIBLE when presolve alone proves the budget
 * infeasible (a step whose fixed memory exceeds m_peak). */
RK_API rk_status rk_checkmate_model_lp(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save,
                                rk_lp **lp, rk_error *err);

/* Sizes of the model's LP (same for every budget). */
RK_API int rk_checkmate_model_num_cols(const rk_checkmate_model *m);
RK_API int rk_checkmate_model_num_rows(const rk_checkmate_model *m);

/* Decode solution x (n_cols values, rounded to 0/1 here) into the ops of the
 * whole schedule in stage/step order (block field 0, local indices), and its
 * objective recomputed from the rounded values. */
RK_API rk_status rk_checkmate_model_decode_ops(const rk_checkmate_model *m, const double *x,
                                        rk_op **ops, int *n_ops, double *objective,
                                        rk_error *err);

/* Decode x into a block option (fwd ops = before the loss, bwd ops = after),
 * evaluate it with rk_option_evaluate and check it against the ILP: peak <=
 * m_peak, saved <= m_save (if m_save >= 0), simulated time == objective
 * (relative 1e-9).  Any mismatch: RK_EFAIL, "BUG: ...". */
RK_API rk_status rk_checkmate_model_decode_option(const rk_checkmate_model *m, const double *x,
                                           int64_t m_peak, int64_t m_save, rk_option *opt,
                                           double *objective, rk_error *err);

/* Solve one budget: the cheapest option of g with peak <= m_peak and saved <=
 * m_save.  RK_EINFEASIBLE when there is none.  *optimal (may be NULL) is set
 * to 1 when proven optimal, 0 when the time limit stopped the solver (the
 * best schedule found is returned).  *gap (may be NULL): its relative gap. */
RK_API rk_status rk_checkmate_solve_budget(const rk_graph *g, int64_t m_peak, int64_t m_save,
                                    const rk_checkmate_params *p, rk_option *opt,
                                    double *objective, int *optimal, double *gap,
                                    rk_error *err);

/* --------------------------------------------------------- budget grid */

/* The M_peak range of g's grid: min_peak = the smallest peak of any schedule
 * of the model (an ILP that minimises the peak; without M_save), max_peak =
 * rk_option_keep_all's peak. */
RK_API rk_status rk_checkmate_peak_range(const rk_graph *g, const rk_checkmate_params *p,
                                  int64_t *min_peak, int64_t *max_peak, rk_error *err);

/* All options of one block class: the grid grid_peak x grid_save, M_peak
 * evenly spaced in [min_peak, max_peak], for each M_peak M_save evenly spaced
 * in [output size, M_peak]; options deduplicated on (saved, fwd_time,
 * fwd_peak, bwd_time, bwd_peak) and sorted by (saved, fwd_peak, bwd_peak,
 * fwd_time, bwd_time).  *opts is malloc'ed (free each with rk_option_free,
 * then free()).  st may be NULL. */
RK_API rk_status rk_checkmate_block_options(const rk_graph *g, const rk_checkmate_params *p,
                                     rk_option **opts, int *n, rk_checkmate_stats *st,
                                     rk_error *err);

/* Options of every class of a chain (classes used by no block get none).
 * class_opts[c] / class_n[c] for c < ch->n_classes, malloc'ed; free with
 * rk_checkmate_chain_options_free.  The export prefix of class c is
 * "<export_prefix or class>_c<c>".  st (may be NULL) sums over classes. */
RK_API rk_status rk_checkmate_chain_options(const rk_chain *ch, const rk_checkmate_params *p,
                                     rk_option ***class_opts, int **class_n,
                                     rk_checkmate_stats *st, rk_error *err);
RK_API void rk_checkmate_chain_options_free(int n_classes, rk_option **class_opts, int *class_n);

/* ------------------------------------------- the grid, solved in part */

/* A class's budget grid whose points are solved on demand (the solve
 * pipeline solves only the points near the options rk-Rotor uses; see
 * docs/ilp.md, "The grid solved in part").  Grid point (i, j), 0 <= i <
 * grid_peak, 0 <= j < grid_save, is the budget rk_checkmate_block_options
 * would solve there; a point is solved with what the points solved before
 * it (in this call or an earlier one) tell it, so its option depends on
 * which points were asked for and in which calls, never on the timing or
 * the number of threads.  Solving every point in one call gives exactly
 * rk_checkmate_block_options's options. */
typedef struct rk_checkmate_grid rk_checkmate_grid;

/* Build g's model and M_peak range (the min-peak ILP) and lay out the grid;
 * no budget is solved.  g (and p->export_dir, p->solve_ctx) must outlive
 * the grid. */
RK_API rk_status rk_checkmate_grid_new(const rk_graph *g, const rk_checkmate_params *p,
                                       rk_checkmate_grid **out, rk_error *err);
RK_API void rk_checkmate_grid_free(rk_checkmate_grid *gr);
RK_API void rk_checkmate_grid_size(const rk_checkmate_grid *gr, int *grid_peak, int *grid_save);
/* Replace the grid's p.deadline (0: none). */
RK_API void rk_checkmate_grid_set_deadline(rk_checkmate_grid *gr, double deadline);
/* 1 when point (i, j) is solved (or answered by a looser budget). */
RK_API int rk_checkmate_grid_solved(const rk_checkmate_grid *gr, int i, int j);

/* Solve the wanted points of several grids in one pool of threads
 * (grids[0]'s p.threads): want[q] has grid_peak x grid_save flags of grid q
 * (index i * grid_save + j); want NULL or want[q] NULL: every point.  Points
 * already solved are kept. */
RK_API rk_status rk_checkmate_grid_solve(rk_checkmate_grid *const *grids, int n_grids, char *const *want,
                                         rk_error *err);

/* The options of the points solved so far and of the seeds (the min-peak
 * ILP's schedule, the greedy schedules), deduplicated and sorted as
 * rk_checkmate_block_options's; free each with rk_option_free, then free(). */
RK_API rk_status rk_checkmate_grid_options(const rk_checkmate_grid *gr, rk_option **opts, int *n,
                                           rk_error *err);

/* Flag in want the unsolved points at offsets {-step, 0, step}^2 of the
 * points where a schedule with option o (same saved, peaks and times) was
 * found by an ILP (not of the tighter points it also answers); returns how
 * many were flagged, -1 when no point found option o. */
RK_API int rk_checkmate_grid_want_near(const rk_checkmate_grid *gr, const rk_option *o, int step, char *want);
/* Flag the unsolved points at offsets {-step, 0, step}^2 of the grid point
 * of the tightest budget that a schedule with this peak and saved size fits
 * (the first M_peak line >= peak, on it the first M_save >= saved): the
 * grid's optimum there is at least as fast.  For an option rk-Rotor uses
 * that no grid point found (a built-in one).  Returns how many. */
RK_API int rk_checkmate_grid_want_budget(const rk_checkmate_grid *gr, int64_t peak, int64_t saved, int step,
                                         char *want);
/* Keep the `keep` loosest budgets of those flagged in want (the others'
 * points are unflagged); returns how many are kept, -1 on out of memory. */
RK_API int rk_checkmate_grid_want_trim(const rk_checkmate_grid *gr, char *want, int keep);
/* Flag the unsolved points (i, j) with grid_peak - 1 - i and grid_save - 1 - j
 * multiples of step: a coarse grid anchored at the loosest corner (the
 * tightest lines, whose ILPs are the hardest, are left to the search), and
 * the point (grid_peak - 1, 0) (the least saved at the loosest peak, cheap:
 * without it a search can settle on options that save much more than
 * needed); returns how many. */
RK_API int rk_checkmate_grid_want_coarse(const rk_checkmate_grid *gr, int step, char *want);
/* Counters over the points solved so far (wall_s: setup and solves). */
RK_API void rk_checkmate_grid_stats(const rk_checkmate_grid *gr, rk_checkmate_stats *st);
/* tot += s1 (min_peak, max_peak: the widest range; first: tot is empty). */
RK_API void rk_checkmate_stats_add(rk_checkmate_stats *tot, const rk_checkmate_stats *s1, int first);

/* The grid of every class used by a block of ch (NULL for the others, and
 * for a class whose model is too large: p.max_model_cols, logged as a
 * warning through p.log), built in parallel (one min-peak ILP per class);
 * export prefix of class c:
 * "<export_prefix or class>_c<c>".  Free with rk_checkmate_chain_grids_free. */
RK_API rk_status rk_checkmate_chain_grids(const rk_chain *ch, const rk_checkmate_params *p,
                                          rk_checkmate_grid ***grids, rk_error *err);
RK_API void rk_checkmate_chain_grids_free(int n_classes, rk_checkmate_grid **grids);

/* ------------------------------------------------- whole-graph Checkmate */

/* The chain as one CD-graph: every block's forward nodes, the last block's
 * loss, every block's backward nodes; block k+1's input is block k's output
 * and block k+1's input grad block k's output grad (rk_chain_index).  Node
 * names are "<block name>/<local name>".  c_block/c_local (n_c entries) and
 * d_block/d_local (n_d entries), malloc'ed, map flattened nodes back. */
typedef struct {
    rk_graph g;
    int *c_block, *c_local;
    int *d_block, *d_local;
} rk_checkmate_flat;

RK_API rk_status rk_checkmate_flatten(const rk_chain *ch, rk_checkmate_flat *flat, rk_error *err);
RK_API void rk_checkmate_flat_free(rk_checkmate_flat *flat);

/* Map a schedule of the flattened graph (ops with local = flattened indices)
 * to a chain-level schedule. */
RK_API rk_status rk_checkmate_flat_to_schedule(const rk_checkmate_flat *flat, const rk_op *ops, int n_ops,
                                        rk_schedule *s, rk_error *err);

/* What rk_checkmate_chain_solve did.  "The model" is the rk-Checkmate
 * stage model of the flattened chain (docs/ilp.md): its bound holds for the
 * schedules of the model, which is how Checkmate defines its optimum. */
typedef struct {
    double gap;              /* (time - bound) / time of the returned schedule,
                                >= 0; 0 when proven optimal; NaN when no bound
                                applies (the MILP was not solved or failed, or
                                it proved that the model has no schedule and a
                                seed that is no schedule of the model was
                                returned) */
    double bound;            /* proven lower bound on the time (us) of every
                                schedule of the model under the budget (at
                                least every node's time once); -INFINITY: no
                                MILP solved, +INFINITY: the model has none */
    int optimal;             /* the returned schedule is proven optimal */
    int milp_status;         /* rk_milp_status of the MILP; -1: not solved */
    long nodes;              /* B&B nodes */
    const char *source;      /* where the returned schedule comes from:
                                "milp", "greedy" or "seed" (static string) */
    int seed_index;          /* source "seed": its index in seeds */
    const char *incumbent_source; /* the MILP's starting incumbent: "greedy",
                                "seed" or "none" */
    double incumbent_time;   /* its time (us), NaN when none */
    int n_seeds_encoded;     /* seeds that are (encode as) schedules of the model */
    double milp_time_s, total_time_s;
} rk_checkmate_chain_info;

/* Whole-graph Checkmate: the cheapest schedule of the chain with peak <=
 * budget (no M_save), within p->time_limit (the heuristics' time included).
 * Never empty-handed: before the MILP, a greedy rematerialization of the
 * model and every seed (chain schedules the caller already has, e.g.
 * rk-Rotor's, or the optimum of a tighter budget) are replayed by the
 * simulator; those that fit and encode as a schedule of the model are
 * candidates for the MILP's incumbent (the cheapest is given), and a seed
 * that fits but is no schedule of the model (first runs out of the model's
 * topological order) is still returned when nothing cheaper is found.  The
 * returned schedule is the cheapest of all that fit, replayed by
 * rk_simulate (its predictions are the simulator's).  RK_EINFEASIBLE when
 * nothing fits: the MILP proved that no schedule of the model fits (or
 * found none in time) and no seed fits.  `s` must be initialised
 * (rk_schedule_init); it is replaced on success.  info and seeds may be
 * NULL. */
RK_API rk_status rk_checkmate_chain_solve(const rk_chain *ch, int64_t budget, const rk_checkmate_params *p,
                                   const rk_schedule *seeds, int n_seeds, rk_schedule *s,
                                   rk_checkmate_chain_info *info, rk_error *err);

/* rk_checkmate_chain_solve without seeds; *gap (may be NULL): info.gap. */
RK_API rk_status rk_checkmate_chain_schedule(const rk_chain *ch, int64_t budget,
                                      const rk_checkmate_params *p, rk_schedule *s,
                                      double *gap, rk_error *err);

/* The greedy rematerialization alone (no MILP): budget > 0, a schedule of
 * the model that fits it (RK_EINFEASIBLE when the greedy finds none);
 * budget <= 0, the least peak the greedy finds.  Replayed by rk_simulate;
 * algo "checkmate-greedy". */
RK_API rk_status rk_checkmate_chain_greedy(const rk_chain *ch, int64_t budget, rk_schedule *s, rk_error *err);

#ifdef __cplusplus
}
#endif
#endif
