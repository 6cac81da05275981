/* rk_solve.h — public API of the solve module: the whole Rockmate solver
 * pipeline on a chain, reused by `rkmate solve`, `rkmate demo` and
 * `rkmate optimize`: block options (rk-Checkmate's budget grid for
 * rockmate; keep-all/none for rotor), rk-Rotor or a baseline at a budget,
 * reconstruction of the schedule, and its replay by the simulator.  A
 * schedule whose simulated peak exceeds the budget or whose simulated time
 * differs from the prediction is never returned: that is RK_EFAIL ("BUG").
 *
 * Options are computed once per solver and reused for every budget; with
 * the grid solved in part (the default), each budget may solve more grid
 * points, which later budgets reuse. */
#ifndef RK_SOLVE_H
#define RK_SOLVE_H

#include <stdint.h>

#include "rk_checkmate.h"
#include "rk_dp.h"
#include "rk_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    RK_SOLVE_ROCKMATE = 0,  /* rk-Rotor over rk-Checkmate options (+ keep-all, asap, none) */
    RK_SOLVE_ROTOR,         /* rk-Rotor over {none, keep-all} */
    RK_SOLVE_SQRT,          /* sqrt(n) segments */
    RK_SOLVE_NONE,          /* keep everything, no recomputation */
    RK_SOLVE_RECOMPUTE_ALL, /* store nothing, recompute from the input */
    RK_SOLVE_CHECKMATE      /* whole-graph Checkmate ILP (small models) */
} rk_solve_algo;

RK_API const char *rk_solve_algo_name(rk_solve_algo a);
RK_API int rk_solve_algo_parse(const char *name); /* -1 if unknown */

typedef struct {
    rk_solve_algo algo;
    rk_dp_params dp;             /* slots, threads */
    rk_checkmate_params cm;      /* grid, time limit, export_dir, threads */
    int checkmate_options;       /* rockmate: 1 = options from the rk-Checkmate
                                    grid (default); 0 = only keep-all/asap/none */
    long grid_work;              /* rockmate, grid solved in part: the work box
                                    for the first budget (it includes the
                                    min-peak ILPs of rk_solver_new; each later
                                    budget of the solver gets a quarter of
                                    it, and once the solver's work reaches
                                    1.5 times the box later budgets solve no new
                                    point), in the units of
                                    rk_checkmate_stats.work (each ILP's simplex
                                    iterations x its rows / 1000; ~50 000 a
                                    second on one core of the machine of
                                    docs/grid.md).  Checked between rounds of
                                    the search: once the work done reaches it,
                                    the search ends with the options found;
                                    a round whose points would take more than
                                    what is left, at the average work of an
                                    ILP of their grid so far, keeps that share
                                    of each grid's points (the loosest,
                                    rounded down; a round left with no point
                                    ends the search).  Deterministic: the same
                                    options for any number of threads and on
                                    any machine (unless an ILP's time_limit is
                                    hit).  <= 0: none.  Default 250 000 */
    long grid_node_cap;          /* rockmate, grid solved in part: B&B nodes
                                    per grid ILP at most, the min-peak ILPs of
                                    rk_solver_new included (an option need not
                                    be optimal: a stopped ILP gives its best
                                    schedule with its true cost; a stopped
                                    min-peak ILP starts the grid's M_peak
                                    range at its best schedule); <= 0: none
                                    (cm.node_limit still applies).  Default 10 */
    int grid_greedy;             /* rockmate, grid solved in part: 1 (default)
                                    = the greedy rematerialization's schedules
                                    at the coarse grid's M_peak lines are
                                    options too, and incumbents of the grid's
                                    ILPs (rk_checkmate_params.greedy_step) */
    int grid_node_rows;          /* rockmate, grid solved in part: a grid ILP
                                    with more rows than this gets
                                    grid_node_cap x grid_node_rows / rows
                                    nodes (at least 1): a node costs about its
                                    LP's rows (rk_checkmate_params.
                                    node_limit_rows); <= 0: none.  Default
                                    2000 */
    int grid_ilp_max_cols;       /* rockmate, grid solved in part: blocks whose
                                    ILP has more columns get no ILP at all,
                                    min-peak included (their options are the
                                    greedy ones; rk_checkmate_params.
                                    ilp_max_cols); <= 0: none.  Default 20 000 */
    double grid_time_box;        /* rockmate, grid solved in part: a wall-clock
                                    box, in seconds, for the grids' ILPs of one
                                    budget (the first budget's include the
                                    min-peak ILPs of rk_solver_new); past it no
                                    ILP starts and a running one stops with
                                    its best schedule, and the search ends
                                    with the options found.  <= 0 (default):
                                    none.  NOT deterministic: reached, it makes
                                    the options depend on the machine's speed,
                                    its load and the number of threads
                                    (docs/grid.md); grid_work is the
                                    deterministic box */
    double whole_graph_time;     /* rockmate: when no plan over the block
                                    options fits a budget, whole-graph
                                    Checkmate (RK_SOLVE_CHECKMATE's search:
                                    the greedy rematerialization, then the
                                    MILP) gets this many seconds on chains
                                    small enough (whole_graph_max_nodes):
                                    rk-Rotor's blocks stop at 1-separators, so
                                    a model of a few large blocks (a U-Net)
                                    has schedules below its block plans'
                                    floor.  Its schedule is returned with
                                    res->whole_graph = 1.  While it has no
                                    schedule within the budget, the search
                                    goes on up to 4 x this and stops at the
                                    first one found.  A MILP stopped by
                                    this limit makes the answer depend on the
                                    machine's speed.  <= 0: never.  Default 4 */
    int whole_graph_max_nodes;   /* rockmate: the most compute nodes (all
                                    blocks, forward and backward) a chain may
                                    have for whole_graph_time to apply.
                                    Default 400 */
    int whole_graph_greedy_max_nodes; /* rockmate on a chain of one block over
                                    whole_graph_max_nodes, up to this many
                                    compute nodes: whole-graph Checkmate's
                                    greedy rematerialization alone (with its
                                    local search; no MILP), where the MILP
                                    would be: the block's own options are
                                    greedy ones there (unseen13's RAFT, 586
                                    nodes, at 50 %: the plan +512 %, the
                                    whole graph's greedy +13 %).  Default 1000 */
    int whole_graph_beside_plan; /* rockmate on a chain of one block, or one
                                    block and a few nodes (9 in 10 compute
                                    nodes in one block: a scalar op after the
                                    loss is a block of its own) (its
                                    options only approximate the block's own
                                    solve at the budget, and a block over
                                    grid_ilp_max_cols has greedy options
                                    only): 1 (default) = whole-graph
                                    Checkmate, seeded with the plan's
                                    schedule, also runs within
                                    whole_graph_time (on chains within
                                    whole_graph_max_nodes), and its schedule
                                    is taken when cheaper (res->whole_graph =
                                    2); as there, a MILP stopped by the time
                                    limit makes the answer depend on the
                                    machine's speed.  A chain of several
                                    blocks within whole_graph_max_nodes gets
                                    the same beside its plan, with the root
                                    of the search only and an eighth of
                                    whole_graph_time (block options cannot
                                    share a recomputation across a
                                    boundary).  0: never */
    int full_grid;               /* rockmate: 1 = solve every point of every
                                    class's grid when the solver is made (as
                                    rk_checkmate_chain_options); 0 (default) =
                                    only the points near the options rk-Rotor
                                    uses at the budgets asked for (a coarse
                                    grid, then a pattern search; docs/ilp.md) */
} rk_solve_params;

RK_API void rk_solve_params_default(rk_solve_params *p);

typedef struct {
    int feasible;
    int64_t budget;
    int64_t predicted_peak;      /* bytes (the solver's prediction) */
    double predicted_time;       /* us */
    rk_sim_result sim;           /* the simulator's replay (valid if feasible) */
    double baseline_time;        /* every node once, us */
    double overhead;             /* predicted_time / baseline_time - 1 */
    double solve_time_s;         /* this budget */
    long n_forwards;
    double checkmate_gap;        /* RK_SOLVE_CHECKMATE: relative gap to the
                                    model's proven bound (0: proven optimal;
                                    NaN: no bound known) */
    double checkmate_bound;      /* RK_SOLVE_CHECKMATE: proven lower bound on
                                    the time of the model's schedules (us) */
    int checkmate_optimal;
    const char *checkmate_source; /* "milp", "greedy" or "seed" */
    int whole_graph;             /* rockmate: 1 = no block plan fit, the
                                    schedule is whole-graph Checkmate's
                                    (rk_solve_params.whole_graph_time; the
                                    checkmate_* fields describe it); 2 = its
                                    whole-graph Checkmate schedule is cheaper
                                    than its block plan's
                                    (whole_graph_beside_plan) */
    int whole_graph_tried;       /* rockmate, infeasible: whole-graph
                                    Checkmate was tried too and found none:
                                    1 with its MILP, 2 its greedy only
                                    (whole_graph_greedy_max_nodes) */
} rk_solve_result;

typedef struct {
    int n_options;               /* options given to the DP over all classes */
    double options_time_s;       /* time to compute them */
    rk_checkmate_stats cm;       /* rockmate only */
} rk_solver_info;

typedef struct rk_solver rk_solver;

/* Prepare a solver for chain ch (kept by pointer: it must outlive the
 * solver): computes and measures the block options. */
RK_API rk_status rk_solver_new(const rk_chain *ch, const rk_solve_params *p, rk_solver **out, rk_error *err);
RK_API void rk_solver_free(rk_solver *s);
RK_API const rk_solver_info *rk_solver_get_info(const rk_solver *s);

/* Solve at `budget` bytes.  Infeasible: RK_EINFEASIBLE with a message giving
 * the smallest budget that works (res->feasible = 0).  On success `sched`
 * holds the replayed schedule with its predictions. */
RK_API rk_status rk_solver_solve(rk_solver *s, int64_t budget, rk_schedule *sched, rk_solve_result *res, rk_error *err);

/* Replace the solver's whole_graph_time (rk_solve_params; <= 0: rockmate
 * never tries whole-graph Checkmate), e.g. 0 while searching for the
 * smallest budget of the block plans. */
RK_API void rk_solver_set_whole_graph_time(rk_solver *s, double seconds);

/* Smallest budget at which rk_solver_solve succeeds (rk-Rotor, sqrt, ...:
 * exact; checkmate: the smallest peak of a schedule rkmate knows, i.e. of
 * free-asap, of the rk-Rotor / sqrt(n) / recompute-all schedules over the
 * built-in options, of the greedy rematerialization and of the schedules
 * the solver returned earlier: checkmate succeeds there, and may succeed
 * lower). */
RK_API rk_status rk_solver_min_budget(rk_solver *s, int64_t *out, rk_error *err);

/* A proven lower bound on the peak of every schedule of the chain, whatever
 * the algorithm: the most memory one node needs when it runs (its real
 * uses, its outputs and its overhead). */
RK_API rk_status rk_solver_min_budget_bound(rk_solver *s, int64_t *out, rk_error *err);

#ifdef __cplusplus
}
#endif
#endif
