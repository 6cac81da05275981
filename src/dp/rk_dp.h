/* rk_dp.h — public API of the dp module: rk-Rotor (the paper's dynamic
 * program over the chain of blocks and their options), Rotor (two options per
 * block), and the chain baselines sqrt(n), keep-everything and
 * recompute-everything, all producing chain-level rk_schedules.
 *
 * Model (paper appendix "rk-Rotor", made exact for the simulator):
 *  Blocks 0..L-1; a_k is block k's input (a_0 = the chain inputs, a_k = block
 *  k-1's output), d_k its grad.  Each block has options (per class):
 *  option 0 = "none" (the forward keeping only the output, no backward),
 *  options 1..n-1 = forward + backward op lists (rk_option).
 *
 *  Opt(s, t, m) (0 <= s < t <= L) is the fastest way to run the backward of
 *  blocks s..t-1 when a_s is in memory and, if t < L, a_t and d_t too;
 *  it ends with a_s and d_s in memory and a_t, d_t freed.  m is the memory
 *  the subproblem may use *including* a_s, a_t and d_t: everything held by
 *  the callers is outside m.  Then, with G_t = a_t + d_t (0 when t = L):
 *   - case 1 (block s computed once, option o >= 1):
 *       fwd  G_t + fwd_peak(o) <= m;  rest Opt(s+1, t, m - a_s - saved(o));
 *       bwd  bwd_peak(o) <= m;  time fwd_time + bwd_time + Opt(s+1, t, .)
 *       (a_s goes right after the forward when the caller frees it after
 *       the subproblem and o's backward reads its shape only: in_unread; and
 *       a_{s+1} goes with block s+1's backward when o's backward does not
 *       read it: out_unread.  docs/rk-rotor.md, "Boundaries read for their
 *       shape only")
 *   - case 2 (block s computed more than once, checkpoint at s < i < t):
 *       F0_s, ..., F0_{i-1} (each a_j, s < j < i, freed after use):
 *       G_t + fwd_peak(0) of s <= m, G_t + a_s + fwd_peak(0) of j <= m;
 *       then Opt(i, t, m - a_s), then Opt(s, i, m)
 *   - base case t = s+1: fwd with the output already present when t < L
 *       (d_t + fwd_peak_re(o) <= m), the loss when t = L, then bwd.
 *  All peaks are absolute for the block alone (inputs included), so the
 *  accounting above is exactly what rk_simulate computes: the exact-byte
 *  evaluation of a plan (rk_dp_plan_evaluate) equals the simulated peak.
 *
 *  Discretization: unit u = ceil(budget / slots) bytes, M = floor(budget / u)
 *  slots; every threshold is rounded up, every amount held by a caller is
 *  rounded up before it is subtracted, so a plan the table accepts always has
 *  a real peak <= budget.
 *
 * Threads: the table is filled by increasing length t - s; the rows (s, t)
 * of one length (each with all its m cells) are computed in parallel
 * (OpenMP); a row waits only for (s, t-1) and (s+1, t), so there is no
 * barrier between lengths.  Candidates are compared in a fixed order with
 * strict <, so the table is bitwise identical for any thread count.
 *
 * Table: row (s, t) stores m in [need(s,t), min(M, sat(s,t))]: below need
 * the subproblem is infeasible, from sat (the requirement of the fastest
 * plan) on Opt is constant.  Cells: a double time and an int16 decision.
 * See docs/rk-rotor.md.
 */
#ifndef RK_DP_H
#define RK_DP_H

#include <stddef.h>
#include <stdint.h>

#include "rk_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ options */

/* The options of one block class as the DP sees them.  options[0] must be
 * a "none" option (no bwd ops; the forward keeps only the output); every
 * other option has bwd ops.  keep_all = index of the keep-all option (used
 * for the sqrt / recompute-all / keep-everything plans), -1 if none. */
typedef struct {
    int n_options;
    rk_option *options;
    int keep_all;
} rk_dp_class_options;

typedef struct {
    int n_classes;                 /* = the chain's class count */
    rk_dp_class_options *classes;
} rk_dp_options;

RK_API void rk_dp_options_free(rk_dp_options *o);
/* Rotor's options: {none, keep_all} for every class (keep_all = 1), where
 * keep_all is the asap option (rk_option_asap: the forward keeps what the
 * backward reads, as autograd does; nothing is recomputed). */
RK_API rk_status rk_dp_options_rotor(const rk_chain *ch, rk_dp_options *o, rk_error *err);
/* Default rk-Rotor options until rk-Checkmate supplies more: the same
 * {none, keep_all = asap} (keep_all = 1). */
RK_API rk_status rk_dp_options_default(const rk_chain *ch, rk_dp_options *o, rk_error *err);
/* Append a copy of `opt` (which must have bwd ops) to class `cls`. */
RK_API rk_status rk_dp_options_add(rk_dp_options *o, int cls, const rk_option *opt, rk_error *err);
/* Append to class `cls` the segmented options of its graph
 * (rk_option_segments) for 2, 3, 4, 6, 8, 12, 16, 24 and 32 segments (as
 * many as it has forward nodes), lean and not, each unless an option of the class already
 * holds no more at each phase in no more time: checkpointing inside a block
 * that gets no rk-Checkmate options (too large for its model).  Returns the
 * number added in *n_added (may be NULL). */
RK_API rk_status rk_dp_options_add_segments(const rk_chain *ch, rk_dp_options *o, int cls, int *n_added,
                                            rk_error *err);

/* ------------------------------------------------------------- costs */

/* Exact statistics of one option, measured by replaying it on the block
 * graph (bytes, microseconds). */
typedef struct {
    double fwd_time, bwd_time;
    int64_t fwd_peak;    /* absolute peak of the fwd from the inputs only */
    int64_t fwd_peak_re; /* same when the output is already in memory */
    int64_t saved;       /* kept after fwd besides inputs and output */
    int64_t bwd_peak;    /* absolute, from inputs+saved+output+output_grad */
    int64_t bwd_peak_drop; /* <= bwd_peak: the same when the block's input is
                            forgotten right after its last real use (the
                            caller frees it after the backward anyway:
                            docs/rk-rotor.md); with in_unread, when it is
                            absent from the start; 0 = not measured (bwd_peak) */
    int in_unread;       /* 1: the backward reads the block's single input for
                            its shape only: where the caller frees it right
                            after the subproblem, it goes right after this
                            forward instead (case 1; docs/rk-rotor.md) */
    int out_unread;      /* 1: the backward neither reads the block's output
                            (shape only) nor makes it: the next block's
                            backward may free it (case 1's subproblem flag),
                            and this backward runs without it */
    int64_t bwd_peak_noout, bwd_peak_drop_noout; /* bwd_peak, bwd_peak_drop
                            with the output absent (out_unread); 0 = not
                            measured (then out_unread must be 0) */
    int64_t loss_peak;   /* absolute peak of the loss run after this fwd */
    double loss_time;
} rk_dp_option_cost;

typedef struct {
    int n_options;             /* including option 0 */
    rk_dp_option_cost *opt;
    int keep_all;              /* -1 if none */
    int64_t input_size;        /* sum of the block inputs */
    int64_t output_size, output_grad_size;
    int out_rebuilt;           /* 1: rk-Rotor frees a block's output once
                                  the next block's backward is done, and the
                                  block's forward before its own backward
                                  rebuilds it (every option's forward computes
                                  the output, in place when it is there: the
                                  same time); every class whose output is not
                                  one of its inputs.  0: kept until the
                                  block's own backward, as Rotor does */
} rk_dp_class_cost;

typedef struct {
    int n_classes;
    rk_dp_class_cost *classes;
    int n_blocks;
    int *block_class;
} rk_dp_costs;

/* Measure every option of every class of the chain (validates the option
 * contract with rk_option_evaluate; RK_EINPUT naming class and option). */
RK_API rk_status rk_dp_costs_build(const rk_chain *ch, const rk_dp_options *o, rk_dp_costs *c, rk_error *err);
/* Allocate costs to fill by hand (synthetic chains, benches): classes with
 * n_options[k] zeroed options each, n_blocks blocks of class 0. */
RK_API rk_status rk_dp_costs_alloc(rk_dp_costs *c, int n_classes, const int *n_options, int n_blocks);
RK_API void rk_dp_costs_free(rk_dp_costs *c);
/* Sanity of hand-filled costs (sizes >= 0, peaks cover what they include,
 * times finite, option 0 present, every class has an option >= 1). */
RK_API rk_status rk_dp_costs_check(const rk_dp_costs *c, rk_error *err);

/* A synthetic chain for benches and tests: n_blocks blocks, each its own
 * class with n_options options (option 0 = none, option 1 = keep all, the
 * others trade saved memory for backward time), sizes around 1 MB, times
 * around 10 us; deterministic for a seed. */
RK_API rk_status rk_dp_costs_random(rk_dp_costs *c, int n_blocks, int n_options, uint64_t seed);

/* ------------------------------------------------------------- plans */

/* A plan: one decision per subproblem (s, t) reached, code[s*(L+1)+t]:
 * o > 0 = case 1 with option o; -d < 0 = case 2 with checkpoint i = s + d;
 * 0 = not reached.  Base cases (t = s+1) hold an option > 0. */
typedef struct {
    int n_blocks;
    int *code;
} rk_dp_plan;

RK_API rk_status rk_dp_plan_init(rk_dp_plan *p, int n_blocks);
RK_API void rk_dp_plan_free(rk_dp_plan *p);
static inline int rk_dp_plan_get(const rk_dp_plan *p, int s, int t) { return p->code[s * (p->n_blocks + 1) + t]; }
static inline void rk_dp_plan_set(rk_dp_plan *p, int s, int t, int v) { p->code[s * (p->n_blocks + 1) + t] = v; }

/* Exact (byte) evaluation of a plan with the accounting above; what
 * rk_simulate reports for the built schedule. */
typedef struct {
    int64_t peak;
    double time;
    long n_forwards;   /* block forwards run (L when nothing is recomputed) */
} rk_dp_eval;
RK_API rk_status rk_dp_plan_evaluate(const rk_dp_costs *c, const rk_dp_plan *p, rk_dp_eval *ev, rk_error *err);

/* Rule-based plans; `opt` per class is costs->classes[k].keep_all. */
RK_API rk_status rk_dp_plan_keep_all(const rk_dp_costs *c, rk_dp_plan *p, rk_error *err);
/* sqrt(n): `segments` segments of about L/segments blocks (0: round(sqrt L)),
 * forward with option 0 keeping only segment inputs; each segment's
 * backward recomputes it with keep_all (the last segment runs keep_all
 * directly). */
RK_API rk_status rk_dp_plan_sqrt(const rk_dp_costs *c, int segments, rk_dp_plan *p, rk_error *err);
/* Recompute-everything: keep only the chain input; before each block's
 * backward, recompute from a_0 (L(L+1)/2 block forwards). */
RK_API rk_status rk_dp_plan_recompute_all(const rk_dp_costs *c, rk_dp_plan *p, rk_error *err);

/* Expand a plan into a chain-level schedule: MARK ops (FWD_BEGIN/FWD_END/
 * BWD_BEGIN/BWD_END, `option` = the option index, 0 for a forward without
 * saving), the option's ops with `block` set, forgets of the case-2
 * activations, and the last block's loss between its fwd and bwd.  Sets
 * predicted_peak / predicted_time from rk_dp_plan_evaluate. */
RK_API rk_status rk_dp_plan_build(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c,
                           const rk_dp_plan *p, rk_schedule *s, rk_error *err);

/* ------------------------------------------------------------ the DP */

typedef struct {
    int slots;      /* memory slots (default 500) */
    int threads;    /* OpenMP threads; 0 = the OpenMP default */
    int fallback;   /* 1 (default): also consider the keep-all, sqrt(n) and
                       recompute-all plans (same family) evaluated in exact
                       bytes, and return the fastest plan that fits; this
                       makes the result never worse than those baselines
                       despite the slot rounding */
} rk_dp_params;

RK_API void rk_dp_params_default(rk_dp_params *p);

/* The filled table (opaque). */
typedef struct rk_dp_table rk_dp_table;

/* Fill Opt(s, t, m) for all 0 <= s < t <= L, 0 <= m <= M.  An infeasible
 * budget is not an error: rk_dp_table_feasible() says so (and nothing is
 * filled).  c is kept by pointer: it must outlive the table. */
RK_API rk_status rk_dp_table_fill(const rk_dp_costs *c, int64_t budget, const rk_dp_params *p, rk_dp_table **out,
                           rk_error *err);
RK_API void rk_dp_table_free(rk_dp_table *t);
RK_API int rk_dp_table_feasible(const rk_dp_table *t);
RK_API double rk_dp_table_time(const rk_dp_table *t);      /* Opt(0, L, M); INFINITY if infeasible */
RK_API size_t rk_dp_table_bytes(const rk_dp_table *t);     /* memory held by the table */
RK_API int64_t rk_dp_table_unit(const rk_dp_table *t);     /* bytes per slot */
RK_API int rk_dp_table_slots(const rk_dp_table *t);        /* M */
/* Opt(s, t, m) and its decision code (0 = infeasible), for a_s kept after
 * the subproblem (the table's layer of flag 0, docs/rk-rotor.md).  A table whose top
 * cell is infeasible holds no cells: INFINITY / 0 everywhere. */
RK_API double rk_dp_table_opt(const rk_dp_table *t, int s, int t_, int m);
RK_API int rk_dp_table_decision(const rk_dp_table *t, int s, int t_, int m);
/* rk-Rotor-Build: the plan of the optimum (RK_EINFEASIBLE if none; on any
 * error p holds nothing to free). */
RK_API rk_status rk_dp_table_plan(const rk_dp_table *t, rk_dp_plan *p, rk_error *err);

/* Smallest memory the plan family needs, exact bytes (no slots). */
RK_API int64_t rk_dp_min_memory(const rk_dp_costs *c);
/* Smallest budget for which the table with `slots` slots is feasible (found
 * from the exact minimum and a bisection over budgets; the result is checked
 * feasible). */
RK_API rk_status rk_dp_min_budget(const rk_dp_costs *c, int slots, int64_t *out, rk_error *err);

/* ------------------------------------------------------- algorithms */

typedef enum {
    RK_DP_ROCKMATE = 0,   /* rk-Rotor on the given options */
    RK_DP_ROTOR,          /* rk-Rotor on {none, keep_all} */
    RK_DP_SQRT,           /* sqrt(n) checkpointing */
    RK_DP_KEEP_ALL,       /* keep everything, no recomputation */
    RK_DP_RECOMPUTE_ALL   /* store nothing, recompute from the input */
} rk_dp_algo;

RK_API const char *rk_dp_algo_name(rk_dp_algo a);
/* "rockmate", "rotor", "sqrt", "none" (= keep-all), "keep-all",
 * "recompute-all"; -1 if unknown. */
RK_API int rk_dp_algo_parse(const char *name);

typedef struct {
    int feasible;
    int64_t budget;
    int64_t predicted_peak;   /* exact bytes */
    double predicted_time;    /* microseconds */
    long n_forwards;
    const char *source;       /* "dp", "keep-all", "sqrt", "recompute-all" */
    int64_t unit;             /* bytes per slot (DP algorithms) */
    int slots;                /* M */
    size_t table_bytes;
    double fill_time_s;       /* wall time of the table fill */
} rk_dp_result;

/* Solve `algo` at `budget` on costs c: fills the table for the DP
 * algorithms (rockmate: every option of c; rotor: only option 0 and each
 * class's keep_all, the plan's codes are indices into c), else evaluates the
 * rule plan.  Infeasible: RK_OK with res->feasible = 0 and an empty plan. */
RK_API rk_status rk_dp_solve(const rk_dp_costs *c, rk_dp_algo algo, int64_t budget, const rk_dp_params *p,
                      rk_dp_plan *plan, rk_dp_result *res, rk_error *err);
/* Smallest budget at which rk_dp_solve(algo) is feasible. */
RK_API rk_status rk_dp_algo_min_budget(const rk_dp_costs *c, rk_dp_algo algo, const rk_dp_params *p, int64_t *out,
                                rk_error *err);

#ifdef __cplusplus
}
#endif
#endif
