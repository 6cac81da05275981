/* solve_cli.h — the solve options that `rkmate solve` and `rkmate optimize`
 * share: their long options and help text, parsing, the budget (bytes, or a
 * percentage of the plain PyTorch step's activation peak recorded in the
 * chain), the solver parameters they make, progress lines on a terminal
 * during long solves (classes done, ILPs solved, elapsed), and the JSON
 * object printed when no schedule fits (exit 3). */
#ifndef RK_SOLVE_CLI_H
#define RK_SOLVE_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rk_graph.h"
#include "rk_solve.h"

enum { SOPT_BUDGET = 2000, SOPT_ALGO, SOPT_SLOTS, SOPT_THREADS, SOPT_GRID, SOPT_TIME_LIMIT, SOPT_EXPORT_MPS,
       SOPT_BUILTIN, SOPT_NO_FALLBACK, SOPT_VERBOSE, SOPT_FULL_GRID, SOPT_GRID_TIME,
       SOPT_GRID_WORK, SOPT_WHOLE_GRAPH };

#define SOLVE_LONG_OPTS                                                                                           \
    {"budget", required_argument, 0, SOPT_BUDGET}, {"algo", required_argument, 0, SOPT_ALGO},                     \
        {"slots", required_argument, 0, SOPT_SLOTS}, {"threads", required_argument, 0, SOPT_THREADS},            \
        {"grid", required_argument, 0, SOPT_GRID}, {"time-limit", required_argument, 0, SOPT_TIME_LIMIT},        \
        {"export-mps", required_argument, 0, SOPT_EXPORT_MPS}, {"builtin-options", no_argument, 0, SOPT_BUILTIN}, \
        {"no-fallback", no_argument, 0, SOPT_NO_FALLBACK}, {"verbose", no_argument, 0, SOPT_VERBOSE},          \
        {"full-grid", no_argument, 0, SOPT_FULL_GRID}, {"grid-time", required_argument, 0, SOPT_GRID_TIME}, \
        {"grid-work", required_argument, 0, SOPT_GRID_WORK}, {"whole-graph", required_argument, 0, SOPT_WHOLE_GRAPH}

/* The lines of --help describing these options. */
extern const char SOLVE_HELP[];

typedef struct {
    const char *budget_text, *algo_name, *export_dir;
    int algo, builtin, fallback, verbose, grid_p, grid_s, full_grid;
    long slots, threads, grid_work;
    double time_limit, grid_time, whole_graph;
} solve_cli;

void solve_cli_init(solve_cli *s);
/* 0 handled, -1 not one of these options, else the exit code of an error (reported). */
int solve_cli_option(const char *cmd, int c, const char *arg, solve_cli *s);
/* After parsing: --budget given and well formed, --algo known, --export-mps a
 * directory (made if missing).  0 or the exit code of an error (reported). */
int solve_cli_check(const char *cmd, solve_cli *s);
/* The budget in bytes: B as given, or P % of the chain's plain_peak. */
int solve_cli_budget(const char *cmd, const solve_cli *s, const rk_chain *ch, int64_t *budget);
/* The solver parameters the options give (threads 0 = default_threads). */
void solve_cli_params(const solve_cli *s, int default_threads, rk_solve_params *par);

/* Progress on stderr while solving (when `on`): installs a log callback in
 * par that counts rk-Checkmate's ILPs (and passes lines on with --verbose)
 * and a line "CMD: ALGO on N blocks: C classes, K ILPs solved, T s". */
typedef struct solve_progress solve_progress;
solve_progress *solve_progress_start(const char *cmd, int on, const solve_cli *s, const rk_chain *ch,
                                     rk_solve_params *par);
/* Clears the line; prints "CMD: K ILPs in T s" when any were solved.  The
 * solver keeps logging through p (lines still pass on with --verbose), so p
 * lives until solve_progress_free, after rk_solver_free. */
void solve_progress_end(solve_progress *p);
void solve_progress_free(solve_progress *p);

/* After an infeasible solve: the smallest budget that works, exact to the
 * byte (a budget where the solver succeeds and one byte less where it does
 * not), by bisection between the proven lower bound and the solver's
 * min_budget (which rounds to the DP's memory slots); -1 if unknown.  For
 * checkmate (one ILP per try) the solver's min_budget as it is (and its
 * message, err).  Then prints "CMD: no ALGO schedule fits in B bytes; the
 * smallest budget that works is N bytes" on stderr (and the JSON object
 * with json) and returns CLI_INFEASIBLE.  With explain, also what is in
 * memory at the peak of the smallest schedule (peak_explain; JSON key
 * floor_explain).  whole_graph_s > 0: rockmate also tried whole-graph
 * Checkmate for that many seconds at this budget (rk_solve_result.
 * whole_graph_tried); < 0: it tried whole-graph Checkmate's greedy
 * rematerialization only (a chain too large for its MILP); either way the
 * smallest budget is then that of the block plans (searched without
 * whole-graph Checkmate), and it says so. */
/* solve_cli_infeasible's whole_graph_s from an infeasible solve's result:
 * the seconds whole-graph Checkmate had, -1 for its greedy only, 0 when it
 * was not tried. */
double solve_cli_whole_graph_s(const rk_solve_params *par, const rk_solve_result *res);
int solve_cli_infeasible(const char *cmd, int json, const char *algo, int64_t budget, const rk_chain *ch,
                         rk_solver *sv, double solve_time_s, const rk_error *err, int explain, double whole_graph_s);
void solve_cli_json_num(FILE *f, const char *key, double v);
/* The memory outside every budget (budgets are activation memory): the
 * parameters, their gradients and the buffers, as the chain records them.
 * json: `"param_bytes": P, "param_grad_bytes": G, "buffer_bytes": B, `;
 * text: one line "outside the budget: ..." (nothing when unknown).  The
 * optimizer's state (training) comes on top: `rkmate train` reports it. */
void solve_cli_print_model_memory(FILE *f, int64_t params, int64_t grads, int64_t buffers, int json);
void solve_cli_json_str(FILE *f, const char *s);

#endif
