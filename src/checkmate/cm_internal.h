/* cm_internal.h — internals shared by the rk-Checkmate files: the model (its
 * columns, rows and the stage/step layout used for decoding) and helpers. */
#ifndef CM_INTERNAL_H
#define CM_INTERNAL_H

#include <stdint.h>
#include "rk_checkmate.h"

/* row family letters (docs/ilp.md): c p n u x e m s, r recomputation count,
 * w twin */
#define CM_FAMILIES "cpnuxemsrw"

/* A reference to a 0/1 quantity of the model: a constant or a column. */
#define CM_ZERO (-1)
#define CM_ONE (-2)

/* A linear expression stored in the model's term arena. */
typedef struct {
    int start, n;     /* terms m->tcol[start..start+n), m->tval[...] */
    double c0;
} cm_expr;

typedef enum { CM_RHS_FIXED = 0, CM_RHS_PEAK = 1, CM_RHS_SAVE = 2 } cm_rhs;

typedef struct {
    cm_expr e;
    double lb, ub;    /* lb <= e <= ub (+ the budget for PEAK / SAVE rows) */
    cm_rhs kind;
    char fam;         /* constraint family letter, for row names */
    int t, a, b;      /* indices for the row name */
} cm_row;

/* R run, C create, X forget, P presence at a stage start, N recomputation
 * count of a forward node (sum of its R columns) */
typedef enum { CM_COL_R = 0, CM_COL_C, CM_COL_X, CM_COL_P, CM_COL_N } cm_colkind;

typedef struct {
    cm_colkind kind;
    int t, a, b;      /* stage, node/data, step */
    double obj, lb, ub;
    int integer;
} cm_col;

typedef struct {
    int d;            /* data forgotten */
    cm_expr x;        /* its deletion indicator */
} cm_del;

typedef struct {
    int k;            /* step = topo position of the node run */
    int R;            /* reference of R[t][k] */
    int del_start, n_del; /* m->dels[...] */
} cm_step;

/* A step (t, k): the bytes it needs whatever the schedule when w_k runs
 * (`mand`: inputs, overhead, w_k's uses and outputs, data present for sure)
 * and the other data that may be present then, with their presence
 * expressions (for SAVE: the loss step, mand = data present for sure).
 * Budget-dependent implied bounds come from these (docs/ilp.md). */
typedef struct {
    cm_rhs kind;      /* PEAK or SAVE */
    int t, k;         /* stage, step */
    int r;            /* reference of R[t][k] (CM_ONE at a stage's own node) */
    int64_t mand;
    int start, n;     /* m->opt_d / m->opt_e */
} cm_knap;

struct rk_checkmate_model {
    const rk_graph *g;
    int T;            /* stages = compute nodes */
    int t_loss;
    int n_fwd;
    int64_t input_size, output_size;
    double time_const; /* time of the runs fixed to 1 */
    /* columns and rows */
    int n_cols, cap_cols;
    cm_col *cols;
    int n_rows, cap_rows;
    cm_row *rows;
    int n_terms, cap_terms;
    int *tcol;
    double *tval;
    /* layout for decoding: stage t has steps [stage_start[t], stage_start[t+1]) */
    int *stage_start;
    int n_steps, cap_steps;
    cm_step *steps;
    int n_dels, cap_dels;
    cm_del *dels;
    int infeasible;   /* presolve found a violated constant row */
    char why[256];
    int64_t fixed_peak; /* highest memory of a step whose memory is constant */
    int n_fam[sizeof CM_FAMILIES]; /* row counts per family, in CM_FAMILIES order (for docs/stats) */
    int n_knap, cap_knap;
    cm_knap *knap;
    int n_opt, cap_opt;
    int *opt_d;
    cm_expr *opt_e;
    /* column and row names (the LP of every budget carries them), made once:
     * names + name_at[j] for column j, names + name_at[n_cols + i] for row i */
    char *names;
    long *name_at;
    /* 1: built without rows and names (more columns than cm_model_build's
     * ilp_max_cols): columns and steps for decoding, replay and the greedy,
     * no LP */
    int no_lp;
    int too_big;      /* m_commit refused a term past CM_MAX_TERMS */
};

/* The most terms (12 bytes each, and as much again while the arena grows)
 * and knapsack records a model holds: about 1.5 GiB.  The memory rows are
 * the bulk: a row per step over the data that may be present, steps x data
 * (densenet201's largest block, 531 nodes and 64 637 steps: 55 M; the one
 * 2327-node block of a GRU seq2seq whose recurrences are unrolled, 1.27 M
 * steps: billions). */
#define CM_MAX_TERMS (1L << 27)

/* rk_checkmate_model_build with limits.  ilp_max_cols > 0: once the model
 * has more columns (no ILP will be solved on it), the rest is built without
 * rows (m->no_lp): the memory rows are steps x data terms.  max_cols > 0: a
 * model with more columns (estimated before the model is made, then
 * counted) is too large; so is one whose memory rows pass CM_MAX_TERMS.  Too
 * large: RK_ENOMEM with a message naming its size and the limit, and
 * *too_large (may be NULL) = 1. */
rk_status cm_model_build(const rk_graph *g, int ilp_max_cols, long max_cols, rk_checkmate_model **out,
                         int *too_large, rk_error *err);
/* No ILP on m: built without rows, or more columns than p->ilp_max_cols
 * (> 0). */
int cm_model_no_ilp(const rk_checkmate_model *m, const rk_checkmate_params *p);

/* Emit the LP; peak_var != 0 makes M_peak a column (index n_cols) minimised
 * instead (min-peak ILP, time objective dropped); fwd_extra bytes are added
 * to the peak rows of the stages before the loss's (min-peak ILP only: the
 * forward run beside the output's gradient, as rk-Rotor runs a block's
 * last forward). */
rk_status cm_model_lp(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save, int peak_var, int64_t fwd_extra,
                      rk_lp **lp, rk_error *err);

/* The MILP parameters of one rk-Checkmate ILP (time and node limits, gap,
 * threads, verbosity) from the rk-Checkmate parameters. */
void cm_milp_params(const rk_checkmate_params *p, rk_milp_params *mp);
/* Solve lp with the params' solver (or rk_milp_solve). */
rk_status cm_solve(const rk_checkmate_params *p, const char *tag, const rk_lp *lp,
                   const rk_milp_params *mp, rk_milp_result *res, rk_error *err);

/* Export lp to p->export_dir/<name>.mps when exporting. */
rk_status cm_export(const rk_checkmate_params *p, const char *name, const rk_lp *lp, rk_error *err);
/* p->node_limit_rows applied to mp->node_limit for an LP of `rows` rows: a
 * node costs about its LP's rows, so a larger LP gets node_limit x
 * node_limit_rows / rows nodes (at least 1). */
void cm_scale_node_limit(const rk_checkmate_params *p, int rows, rk_milp_params *mp);
/* cm_export, then cm_solve with cm_milp_params, its node limit scaled by the
 * LP's rows (cm_scale_node_limit; res zeroed first, also on failure). */
rk_status cm_export_and_solve(const rk_checkmate_params *p, const char *name, const rk_lp *lp, rk_milp_result *res,
                              rk_error *err);

/* Decode into ops and replay the whole sequence on the graph: peak, time. */
rk_status cm_decode_replay(const rk_checkmate_model *m, const double *x, rk_op **ops, int *n_ops,
                           double *objective, int64_t *peak, double *sim_time, rk_error *err);

double cm_now(void);

/* The LP objective is the recomputation time; schedule time = LP objective +
 * this offset (every node once). */
double cm_obj_offset(const rk_checkmate_model *m);

/* M_peak range of g (model m built on g); *xmin (may be NULL) receives the
 * min-peak ILP's solution (malloc'ed, n_cols + 1 values) when there is one. */
rk_status cm_peak_range(const rk_graph *g, const rk_checkmate_model *m, const rk_checkmate_params *p,
                        int64_t *min_peak, int64_t *max_peak, double **xmin, rk_error *err);
/* The same, also adding the min-peak ILPs' B&B nodes and simplex iterations
 * to *nodes and *iters (may be NULL); *xfwd (may be NULL) receives the
 * solution of the min-peak ILP whose forward stages hold the output's
 * gradient too (cm_model_lp's fwd_extra): the least max(forward peak +
 * output gradient, backward peak), the block's need when rk-Rotor runs its
 * forward again before its backward.  runs (may be NULL): the greedy's runs
 * of m, picked for the least peak when the model is too large for the ILP
 * (else cm_greedy runs it). */
typedef struct cm_greedy_runs cm_greedy_runs; /* cm_heur.c */
rk_status cm_peak_range_work(const rk_graph *g, const rk_checkmate_model *m, const rk_checkmate_params *p,
                             int64_t *min_peak, int64_t *max_peak, double **xmin, double **xfwd, long *nodes,
                             long *iters, cm_greedy_runs *runs, rk_error *err);

/* Replace x (a schedule of the model that fits (m_peak, m_save)) by the one
 * with the same runs that holds the least memory at every step (cm_solve.c). */
void cm_lean_schedule(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save, double *x);

/* Encoding a schedule as a column vector of the model (cm_heur.c).
 * run[s] (one flag per step of m->steps) says which steps run; x (n_cols
 * values) receives the schedule with those runs that holds the least memory
 * at every step.  RK_EINPUT when a stage's own node does not run. */
rk_status cm_encode_runs(const rk_checkmate_model *m, const char *run, double *x, rk_error *err);
/* The same from a schedule of m's graph (ops: RUN/FORGET of the graph's
 * nodes, block field ignored): runs mapped to stages (first runs must come in
 * the order of g->topo: RK_EINPUT otherwise), useless runs dropped,
 * presences as above (forgets are not read: the least memory for the runs). */
rk_status cm_encode_ops(const rk_checkmate_model *m, const rk_op *ops, int n_ops, double *x, rk_error *err);
/* Index of the first row of the model violated by x under (m_peak, m_save)
 * (m_save < 0: no M_save row), n_rows + j for a column j out of its bounds,
 * -1 when x satisfies every row.  *amount (may be NULL): by how much. */
int cm_row_violation(const rk_checkmate_model *m, const double *x, int64_t m_peak, int64_t m_save, double *amount);
/* Greedy rematerialization in the model: checkpoints dropped one by one
 * (largest size per microsecond of recomputation first) while the peak
 * falls; the forward data a backward stage needs and that are not kept are
 * recomputed there.  budget > 0: the first schedule found that fits;
 * budget <= 0: the least peak found.  x_out (n_cols values), its replayed
 * peak and time.  RK_EINFEASIBLE when nothing fits the budget. */
rk_status cm_greedy(const rk_checkmate_model *m, int64_t budget, double *x_out, int64_t *peak_out, double *time_out,
                    rk_error *err);
/* The greedy for many budgets of one model (a grid's lines): what cm_greedy
 * does before it looks at the budget, done once, and cm_greedy_pick(budget)
 * gives what cm_greedy(m, budget) gives (the eviction search goes on as far
 * as a budget needs, from where an earlier pick left it).  One caller at a
 * time. */
rk_status cm_greedy_runs_new(const rk_checkmate_model *m, cm_greedy_runs **out, rk_error *err);
rk_status cm_greedy_pick(cm_greedy_runs *gr, int64_t budget, double *x_out, int64_t *peak_out, double *time_out,
                         rk_error *err);
void cm_greedy_runs_free(cm_greedy_runs *gr);

/* Local search: recomputations of x (a schedule that fits budget) removed,
 * dearest first, while the schedule still fits; at most max_evals replays.
 * Returns the number removed, -1 on out of memory (x unchanged then). */
int cm_improve(const rk_checkmate_model *m, int64_t budget, double *x, int max_evals);

/* Round the 0/1 columns of x. */
void cm_fix_continuous(const rk_checkmate_model *m, double *x);

#endif
