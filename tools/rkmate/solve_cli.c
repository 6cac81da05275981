/* solve_cli.c — the solve options shared by `rkmate solve` and `rkmate
 * optimize` (solve_cli.h): parsing, the budget (bytes or a percentage of the
 * plain step's activation peak), solver parameters, progress lines and the
 * JSON object of an infeasible solve. */
#include "solve_cli.h"
#include "peak_explain.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

const char SOLVE_HELP[] =
    "  --budget B         memory budget: bytes or with a unit (800MB, 1.5GiB), or P% of the plain\n"
    "                     PyTorch step's activation peak (measured by `rkmate trace`, in the chain)\n"
    "  --algo ALGO        rockmate (default): rk-Rotor over each block's options (rk-Checkmate's\n"
    "                     budget grid + keep all, none)\n"
    "                     rotor: rk-Rotor with Rotor's options {none, keep all}\n"
    "                     sqrt: sqrt(n) checkpointing; none: keep everything (no recomputation:\n"
    "                     each data the backward reads is kept, as autograd does);\n"
    "                     recompute-all: keep only the input, recompute before each backward;\n"
    "                     checkmate: whole-graph Checkmate ILP (small chains), started from the\n"
    "                     best cheap schedule (rk-Rotor, sqrt(n), greedy rematerialization); with\n"
    "                     --time-limit it returns the best schedule found and its proven gap\n"
    "  --slots N          memory slots of the DP (default 500); sizes are rounded up to slots\n"
    "  --threads N        OpenMP threads (default: all)\n"
    "  --grid PxS         rk-Checkmate budget grid (default 20x20)\n"
    "  --full-grid        rockmate: solve every point of every class's grid (by default only the\n"
    "                     points near the options rk-Rotor uses at this budget; docs/ilp.md)\n"
    "  --grid-work N      rockmate: work for the grid's ILPs in all, in simplex iterations x rows\n"
    "                     / 1000 (default 250000, a few seconds; 0: no limit); past it the search\n"
    "                     stops with the options found (the same for any --threads, any machine)\n"
    "  --grid-time S      rockmate: seconds for the grid's ILPs in all (default: no limit); past it\n"
    "                     the search stops with the options found. Not deterministic: the options\n"
    "                     then depend on the machine, its load and --threads\n"
    "  --time-limit S     seconds per ILP (rockmate's grid) or for the whole ILP (checkmate)\n"
    "  --whole-graph S    rockmate: where no plan over the blocks' options fits, whole-graph\n"
    "                     Checkmate gets S seconds (default 4; 0: never) on chains of at most 400\n"
    "                     compute nodes (a U-Net's few large blocks have schedules below their\n"
    "                     floor; with none found yet, up to 4 S, stopping at the first), and on\n"
    "                     a chain of one block (9 in 10 of its nodes) also where a plan fits, its\n"
    "                     schedule taken when cheaper; such a chain of 401 to 1000 nodes gets its\n"
    "                     greedy rematerialization only (no MILP); stopped by S, its answer\n"
    "                     depends on the machine's speed\n"
    "  --export-mps DIR   write every ILP solved as MPS into DIR (named by class and budget)\n"
    "  --builtin-options  rockmate without rk-Checkmate: options {none, keep all}\n"
    "  --no-fallback      rockmate/rotor: the DP's plan only (by default the keep-all, sqrt(n) and\n"
    "                     recompute-all plans are also tried in exact bytes, against slot rounding)\n"
    "  --verbose          log the ILPs (checkmate: its incumbents and the MILP's progress) to stderr\n";

void solve_cli_init(solve_cli *s) {
    memset(s, 0, sizeof *s);
    s->algo_name = "rockmate";
    s->fallback = 1;
    s->grid_p = s->grid_s = -1;
    s->slots = 500;
    s->time_limit = -1;
    s->grid_time = -1;
    s->grid_work = -1;
    s->whole_graph = -1;
}

int solve_cli_option(const char *cmd, int c, const char *arg, solve_cli *s) {
    switch (c) {
    case SOPT_BUDGET: s->budget_text = arg; return 0;
    case SOPT_ALGO: s->algo_name = arg; return 0;
    case SOPT_SLOTS: return cli_parse_int(cmd, "--slots", arg, 1, 10000000, &s->slots) ? CLI_BADINPUT : 0;
    case SOPT_THREADS: return cli_parse_int(cmd, "--threads", arg, 1, 4096, &s->threads) ? CLI_BADINPUT : 0;
    case SOPT_GRID: {
        char tail;
        if (sscanf(arg, "%dx%d%c", &s->grid_p, &s->grid_s, &tail) != 2 || s->grid_p < 1 || s->grid_s < 1 ||
            s->grid_p > 1000 || s->grid_s > 1000)
            return cli_usage_error(cmd, "--grid: expected PxS like 20x20 (1 to 1000 each), got '%s'", arg);
        return 0;
    }
    case SOPT_TIME_LIMIT:
        return cli_parse_double(cmd, "--time-limit", arg, 0, 1e9, &s->time_limit) ? CLI_BADINPUT : 0;
    case SOPT_EXPORT_MPS: s->export_dir = arg; return 0;
    case SOPT_BUILTIN: s->builtin = 1; return 0;
    case SOPT_NO_FALLBACK: s->fallback = 0; return 0;
    case SOPT_VERBOSE: s->verbose = 1; return 0;
    case SOPT_FULL_GRID: s->full_grid = 1; return 0;
    case SOPT_GRID_TIME:
        return cli_parse_double(cmd, "--grid-time", arg, 0, 1e9, &s->grid_time) ? CLI_BADINPUT : 0;
    case SOPT_WHOLE_GRAPH:
        return cli_parse_double(cmd, "--whole-graph", arg, 0, 1e9, &s->whole_graph) ? CLI_BADINPUT : 0;
    case SOPT_GRID_WORK:
        return cli_parse_int(cmd, "--grid-work", arg, 0, 1000000000000L, &s->grid_work) ? CLI_BADINPUT : 0;
    default: return -1;
    }
}

int solve_cli_check(const char *cmd, solve_cli *s) {
    if (!s->budget_text)
        return cli_usage_error(cmd, "--budget is required (bytes or with a unit, e.g. 800MB, or a percentage such "
                                    "as 50%% of the plain step's activation peak)");
    size_t n = strlen(s->budget_text);
    if (n > 1 && s->budget_text[n - 1] == '%') {
        char *end;
        double pc = strtod(s->budget_text, &end);
        if (end != s->budget_text + n - 1 || !(pc > 0) || pc > 1000)
            return cli_usage_error(cmd, "--budget %s: expected a percentage in (0, 1000], such as 50%%",
                                   s->budget_text);
    } else {
        int64_t b;
        if (cli_parse_bytes(cmd, "--budget", s->budget_text, &b)) return CLI_BADINPUT;
        if (b <= 0) return cli_usage_error(cmd, "--budget must be a positive number of bytes");
    }
    s->algo = rk_solve_algo_parse(s->algo_name);
    if (s->algo < 0)
        return cli_usage_error(cmd, "--algo: expected rockmate, rotor, sqrt, none, recompute-all or checkmate, got '%s'",
                               s->algo_name);
    if (s->export_dir) {
        struct stat sb;
        if (stat(s->export_dir, &sb) != 0) {
            if (mkdir(s->export_dir, 0755) != 0)
                return cli_usage_error(cmd, "--export-mps: cannot create directory '%s': %s", s->export_dir,
                                       strerror(errno));
        } else if (!S_ISDIR(sb.st_mode)) {
            return cli_usage_error(cmd, "--export-mps: '%s' exists and is not a directory", s->export_dir);
        }
    }
    return 0;
}

int solve_cli_budget(const char *cmd, const solve_cli *s, const rk_chain *ch, int64_t *budget) {
    size_t n = strlen(s->budget_text);
    if (n > 1 && s->budget_text[n - 1] == '%') {
        double pc = strtod(s->budget_text, NULL);
        if (ch->plain_peak <= 0)
            return cli_usage_error(cmd, "--budget %s: the chain records no plain-step peak (plain_peak: chains "
                                        "written by `rkmate trace` have it); give the budget in bytes",
                                   s->budget_text);
        *budget = (int64_t)floor((double)ch->plain_peak * pc / 100.0);
        if (*budget <= 0) return cli_usage_error(cmd, "--budget %s: rounds to 0 bytes", s->budget_text);
        return 0;
    }
    return cli_parse_bytes(cmd, "--budget", s->budget_text, budget) ? CLI_BADINPUT : 0;
}

void solve_cli_params(const solve_cli *s, int default_threads, rk_solve_params *par) {
    rk_solve_params_default(par);
    par->algo = (rk_solve_algo)s->algo;
    par->dp.slots = (int)s->slots;
    par->dp.threads = s->threads > 0 ? (int)s->threads : default_threads;
    par->dp.fallback = s->fallback;
    par->cm.threads = par->dp.threads;
    if (s->grid_p > 0) {
        par->cm.grid_peak = s->grid_p;
        par->cm.grid_save = s->grid_s;
    }
    if (s->builtin) par->checkmate_options = 0;
    par->full_grid = s->full_grid;
    if (s->grid_time >= 0) par->grid_time_box = s->grid_time;
    if (s->grid_work >= 0) par->grid_work = s->grid_work;
    if (s->whole_graph >= 0) par->whole_graph_time = s->whole_graph;
    if (s->time_limit >= 0) par->cm.time_limit = s->time_limit;
    par->cm.export_dir = s->export_dir;
    par->cm.verbose = s->verbose;
}

/* ------------------------------------------------------------ progress */

struct solve_progress {
    const char *cmd, *algo;
    int on, verbose, n_blocks, n_classes;
    atomic_long ilps;
    atomic_int max_class;
    atomic_flag printing;
    double t0, last;
};

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_log(void *user, rk_log_level level, const char *line) {
    solve_progress *p = user;
    /* warnings always (a block too large for rk-Checkmate's model), on a line of their own */
    if (p->verbose || level == RK_LOG_WARNING) fprintf(stderr, "%s%s\n", p->on && !p->verbose ? "\n" : "", line);
    if (strncmp(line, "rk-Checkmate:", 13) == 0) {
        atomic_fetch_add(&p->ilps, 1);
        const char *c = strstr(line, "_c");
        int k;
        if (c && sscanf(c, "_c%d_p", &k) == 1) {
            int cur = atomic_load(&p->max_class);
            while (k + 1 > cur && !atomic_compare_exchange_weak(&p->max_class, &cur, k + 1)) {
            }
        }
    }
    if (!p->on || atomic_flag_test_and_set(&p->printing)) return; /* another thread prints */
    double t = wall();
    if (t - p->last >= 0.2) {
        p->last = t;
        fprintf(stderr, "\r%s: %s on %d blocks: class %d of %d, %ld ILPs solved, %.1f s   ", p->cmd, p->algo,
                p->n_blocks, atomic_load(&p->max_class), p->n_classes, atomic_load(&p->ilps), t - p->t0);
    }
    atomic_flag_clear(&p->printing);
}

solve_progress *solve_progress_start(const char *cmd, int on, const solve_cli *s, const rk_chain *ch,
                                     rk_solve_params *par) {
    solve_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cmd = cmd;
    p->algo = s->algo_name;
    p->on = on;
    p->verbose = s->verbose;
    p->n_blocks = ch->n_blocks;
    p->n_classes = ch->n_classes;
    atomic_init(&p->ilps, 0);
    atomic_init(&p->max_class, 0);
    atomic_flag_clear(&p->printing);
    p->t0 = p->last = wall();
    if (on || s->verbose) {
        par->cm.verbose = 1; /* one log line per ILP: counted (and printed with --verbose) */
        par->cm.log.fn = progress_log;
        par->cm.log.user = p;
    }
    if (on) fprintf(stderr, "\r%s: %s on %d blocks (%d classes)...   ", cmd, s->algo_name, ch->n_blocks, ch->n_classes);
    return p;
}

void solve_progress_end(solve_progress *p) {
    if (!p) return;
    if (p->on) {
        fprintf(stderr, "\r%100s\r", "");
        long n = atomic_load(&p->ilps);
        if (n > 0) fprintf(stderr, "%s: %ld ILPs solved in %.1f s\n", p->cmd, n, wall() - p->t0);
    }
    p->on = 0; /* the solver may still log through p (the smallest-budget search): no more line */
}

void solve_progress_free(solve_progress *p) { free(p); }

/* ---------------------------------------------------------------- JSON */

void solve_cli_print_model_memory(FILE *f, int64_t params, int64_t grads, int64_t buffers, int json) {
    if (json) {
        fprintf(f, "\"param_bytes\": %lld, \"param_grad_bytes\": %lld, \"buffer_bytes\": %lld, ", (long long)params,
                (long long)grads, (long long)buffers);
        return;
    }
    if (params <= 0 && buffers <= 0) return;
    char a[32], b[32], c[32];
    fprintf(f, "outside the budget (activations only): parameters %s, their gradients %s, buffers %s\n",
            rk_format_bytes(params, a, sizeof a), rk_format_bytes(grads, b, sizeof b),
            rk_format_bytes(buffers, c, sizeof c));
}

void solve_cli_json_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, "\"%s\": %.17g, ", key, v);
    else fprintf(f, "\"%s\": null, ", key);
}

void solve_cli_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static int fits(rk_solver *sv, int64_t b) {
    rk_schedule s;
    rk_schedule_init(&s);
    rk_solve_result r;
    rk_error e;
    rk_status st = rk_solver_solve(sv, b, &s, &r, &e);
    rk_schedule_free(&s);
    return st == RK_OK ? 1 : st == RK_EINFEASIBLE ? 0 : -1;
}

/* The node that sets the proven floor: the compute node whose real uses,
 * outputs and overhead (temporaries) are largest when it runs (the lower
 * bound rk_solver_min_budget_bound takes), and what its bytes are: its
 * inputs (real uses), outputs, temporaries, and the part of those that is
 * weight gradients added into .grad in place (grad_accum). */
typedef struct {
    int block;
    const char *node;
    int64_t need, inputs, outputs, overhead, grad_accum;
    int bwd;
    int weights_only; /* a backward that makes no activation gradient: weight gradients only */
} floor_node;

static floor_node find_floor(const rk_chain *ch) {
    floor_node f = {-1, NULL, -1, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < ch->n_blocks; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++) {
            const rk_cnode *n = &g->c[c];
            if (n->kind == RK_C_LOSS && k != ch->n_blocks - 1) continue;
            int64_t in = 0, out = 0, ov = rk_cnode_step_overhead(g, c);
            for (int q = 0; q < n->n_uses; q++) /* data used twice counts once: fine for naming the node */
                if (n->uses[q].kind != RK_EDGE_FAKE) in += g->d[n->uses[q].data].size;
            for (int q = 0; q < n->n_outs; q++) out += g->d[n->outs[q]].size;
            /* a negative overhead: outputs written in the place of inputs; the
             * outputs then count what they add */
            if (ov < 0) {
                out = out + ov > 0 ? out + ov : 0;
                ov = 0;
            }
            if (in + out + ov > f.need) {
                f.block = k;
                f.node = n->name;
                f.need = in + out + ov;
                f.inputs = in;
                f.outputs = out;
                f.overhead = ov;
                f.grad_accum = n->grad_accum < ov ? n->grad_accum : ov;
                f.bwd = n->kind == RK_C_BWD;
                f.weights_only = f.bwd && n->n_outs == 0;
            }
        }
    }
    return f;
}

/* The smallest schedule (solved again at the exact smallest budget) at its
 * peak: one line saying which node runs then, how much of the peak is that
 * node's own need (its real inputs, outputs and temporary: no schedule of
 * this chain runs it with less) and how much the schedule holds across it;
 * with explain, every data node (peak_explain; JSON: floor_explain). */
static void explain_floor(const char *cmd, int json, int explain, rk_solver *sv, const rk_chain *ch, int64_t minb) {
    rk_schedule s;
    rk_schedule_init(&s);
    rk_solve_result r;
    rk_error e;
    peak_parts pp;
    if (rk_solver_solve(sv, minb, &s, &r, &e) == RK_OK) {
        if (json) {
            if (explain) {
                printf("\"floor_explain\": ");
                if (peak_explain(stdout, ch, &s, 1, &e) == RK_OK) printf(", ");
                else printf("null, ");
            }
        } else if (peak_summary(ch, &s, &pp, &e) == RK_OK && pp.node) {
            char b1[32], b2[32], b3[32];
            fprintf(stderr,
                    "rkmate %s: at that budget the peak (%lld bytes) is the %s of %s in block %d: %lld bytes are "
                    "that node's own inputs, outputs (%s) and temporary (%s), which no schedule of this chain "
                    "avoids, and %lld bytes (%s) are held across it",
                    cmd, (long long)pp.peak, pp.kind == RK_C_BWD ? "backward" : pp.kind == RK_C_FWD ? "forward" : "loss",
                    pp.node, pp.block, (long long)(pp.own + pp.temporary), rk_format_bytes(pp.own, b1, sizeof b1),
                    rk_format_bytes(pp.temporary, b2, sizeof b2), (long long)pp.held,
                    rk_format_bytes(pp.held, b3, sizeof b3));
            if (pp.model_input_held > 0)
                fprintf(stderr, ", %lld of them the model's inputs", (long long)pp.model_input_held);
            fprintf(stderr, "%s\n", explain ? ":" : " (--explain lists them)");
            if (explain && peak_explain(stderr, ch, &s, 0, &e)) fprintf(stderr, "rkmate %s: %s\n", cmd, e.msg);
        }
    }
    rk_schedule_free(&s);
}

/* The largest part of the floor node's bytes: "inputs", "outputs",
 * "temporaries" (the op's own, beyond weight-gradient accumulation;
 * "weight_gradient_temporaries" when the node computes weight gradients
 * only: the weight part of a split backward, or the backward of a first
 * layer whose input needs no gradient) or "grad_accumulation". */
static const char *floor_cause(const floor_node *f) {
    int64_t parts[4] = {f->inputs, f->outputs, f->overhead - f->grad_accum, f->grad_accum};
    static const char *const names[4] = {"inputs", "outputs", "temporaries", "grad_accumulation"};
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (parts[i] > parts[best]) best = i;
    return best == 2 && f->weights_only ? "weight_gradient_temporaries" : names[best];
}

double solve_cli_whole_graph_s(const rk_solve_params *par, const rk_solve_result *res) {
    return res->whole_graph_tried == 2 ? -1 : res->whole_graph_tried ? par->whole_graph_time : 0;
}

int solve_cli_infeasible(const char *cmd, int json, const char *algo, int64_t budget, const rk_chain *ch,
                         rk_solver *sv, double solve_time_s, const rk_error *err, int explain, double whole_graph_s) {
    int64_t minb = -1, lb = -1;
    int exact = 0;
    rk_error e2;
    if (sv) rk_solver_set_whole_graph_time(sv, 0); /* the block plans' smallest budget */
    if (!sv || rk_solver_min_budget(sv, &minb, &e2)) minb = -1;
    if (!sv || rk_solver_min_budget_bound(sv, &lb, &e2)) lb = -1;
    if (sv && minb > 0 && strcmp(algo, "checkmate") != 0 && fits(sv, minb) == 1) {
        /* invariant: lo does not fit, hi fits */
        int64_t lo = budget > lb - 1 ? budget : lb - 1, hi = minb;
        if (lo >= hi) lo = hi - 1;
        int ok = 1;
        while (hi - lo > 1 && ok) {
            int64_t mid = lo + (hi - lo) / 2;
            int f = fits(sv, mid);
            if (f < 0) ok = 0;
            else if (f) hi = mid;
            else lo = mid;
        }
        if (ok) {
            minb = hi;
            exact = 1;
        }
    }
    char b1[32], b2[32];
    if (!exact && err && err->msg[0]) /* the solver's own words (checkmate: known schedules, proven bound) */
        fprintf(stderr, "rkmate %s: %s\n", cmd, err->msg);
    else if (minb > 0)
        fprintf(stderr, "rkmate %s: no %s schedule fits in %lld bytes (%s); the smallest budget that works is %lld "
                        "bytes (%s)%s\n",
                cmd, algo, (long long)budget, rk_format_bytes(budget, b1, sizeof b1), (long long)minb,
                rk_format_bytes(minb, b2, sizeof b2), exact ? ", one byte less does not" : "");
    else
        fprintf(stderr, "rkmate %s: no %s schedule fits in %lld bytes (%s)\n", cmd, algo, (long long)budget,
                rk_format_bytes(budget, b1, sizeof b1));
    if (whole_graph_s > 0)
        fprintf(stderr, "rkmate %s: that is the smallest budget of its plans over the blocks' options; whole-graph "
                        "Checkmate (--whole-graph) found no schedule in %g s at %lld bytes either\n",
                cmd, whole_graph_s, (long long)budget);
    else if (whole_graph_s < 0)
        fprintf(stderr, "rkmate %s: that is the smallest budget of its plans over the blocks' options; whole-graph "
                        "Checkmate's greedy rematerialization (the chain is too large for its MILP) found no schedule "
                        "at %lld bytes either\n",
                cmd, (long long)budget);
    if (ch->plain_peak > 0 && minb > 0)
        fprintf(stderr, "rkmate %s: that is %.1f %% of the plain step's activation peak (%lld bytes)\n", cmd,
                100.0 * (double)minb / (double)ch->plain_peak, (long long)ch->plain_peak);
    floor_node fl = find_floor(ch);
    const char *cause = fl.node ? floor_cause(&fl) : NULL;
    if (fl.node) {
        char bi[32], bo[32], bt[32], ba[32];
        fprintf(stderr,
                "rkmate %s: no schedule fits in less than %lld bytes: node %s of block %d (%s) needs %lld bytes when "
                "it runs: its inputs %s, its outputs %s, its temporaries %s",
                cmd, (long long)fl.need, fl.node, fl.block, ch->blocks[fl.block].name, (long long)fl.need,
                rk_format_bytes(fl.inputs, bi, sizeof bi), rk_format_bytes(fl.outputs, bo, sizeof bo),
                rk_format_bytes(fl.overhead, bt, sizeof bt));
        if (fl.grad_accum > 0)
            fprintf(stderr, " (%s of them weight gradients added into .grad in place: a second contribution to "
                            "parameters another node gave a gradient first)",
                    rk_format_bytes(fl.grad_accum, ba, sizeof ba));
        if (!strcmp(cause, "inputs"))
            fprintf(stderr, "; its inputs set the floor, and they must all be present while it runs\n");
        else if (!strcmp(cause, "outputs"))
            fprintf(stderr, "; its outputs set the floor, and it makes them all at once\n");
        else if (!strcmp(cause, "temporaries"))
            fprintf(stderr, "; the op's own temporaries set the floor, which recomputation cannot remove\n");
        else if (!strcmp(cause, "weight_gradient_temporaries"))
            fprintf(stderr, "; the op's own temporaries set the floor: it computes weight gradients only (no "
                            "activation gradient), so they are the weight-gradient kernel's, which recomputation "
                            "cannot remove\n");
        else
            fprintf(stderr, "; the weight-gradient accumulation sets the floor (the parameter is shared), which "
                            "recomputation cannot remove\n");
    }
    if (exact && !json) explain_floor(cmd, 0, explain, sv, ch, minb);
    if (json) {
        /* min_budget: the smallest budget that works (min_budget_exact: one byte
         * less does not); min_budget_lower_bound: proven, no schedule fits below
         * it; plain_peak: the plain step's (0: unknown) */
        printf("{\"algo\": \"%s\", \"budget\": %lld, \"feasible\": false, \"min_budget\": %lld, "
               "\"min_budget_exact\": %s, \"min_budget_lower_bound\": %lld, \"plain_peak\": %lld, ",
               algo, (long long)budget, (long long)minb, exact ? "true" : "false", (long long)lb,
               (long long)ch->plain_peak);
        solve_cli_print_model_memory(stdout, ch->param_bytes, ch->param_grad_bytes, ch->buffer_bytes, 1);
        if (fl.node) {
            printf("\"floor_block\": %d, \"floor_node\": ", fl.block);
            solve_cli_json_str(stdout, fl.node);
            printf(", \"floor_bytes\": %lld, \"floor_inputs\": %lld, \"floor_outputs\": %lld, "
                   "\"floor_temporary\": %lld, \"floor_grad_accum\": %lld, \"floor_cause\": \"%s\", ",
                   (long long)fl.need, (long long)fl.inputs, (long long)fl.outputs, (long long)fl.overhead,
                   (long long)fl.grad_accum, cause);
        }
        if (explain && exact) explain_floor(cmd, 1, 1, sv, ch, minb);
        solve_cli_json_num(stdout, "baseline_time", rk_chain_baseline_time(ch));
        printf("\"whole_graph_tried\": %s, \"solve_time_s\": %.17g}\n", whole_graph_s != 0 ? "true" : "false",
               solve_time_s);
    }
    return CLI_INFEASIBLE;
}
