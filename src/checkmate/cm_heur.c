/* cm_heur.c — schedules given to the rk-Checkmate MILP as incumbents: any
 * schedule of the model's graph encoded as a full column vector of the
 * model, and a cheap greedy rematerialization that builds such schedules.
 *
 * Encoding (docs/ilp.md, "Incumbents"): a schedule's runs are mapped to the
 * model's stages (stage t ends with the first run of w_t); a run that the
 * model has no column for is useless (presolve 3: nothing at a later stage
 * can use its outputs) and is dropped, and two runs of a node in one stage
 * become one.  The presences then follow from the runs alone: the model's
 * schedule with those runs that holds the least memory at every step keeps
 * a data exactly from a run that touches it until its next real use, and
 * drops it right after the last use before the next run of its producer
 * (grads stay from their first producer to their last, input grads to the
 * end).  Same runs (fewer when some were useless or repeated), so never
 * more time; the peak can exceed the original's only when a stage held two
 * runs of a node or ran nodes out of topological order, and every encoded
 * vector is checked against every row of the model before it is used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

typedef struct {
    int s;            /* step index */
    char prod, use;
} touch;

/* Index of the step (t, k), or -1 when the model has no step there. */
static int step_of(const rk_checkmate_model *m, int t, int k) {
    if (t < 0 || t >= m->T) return -1;
    int lo = m->stage_start[t], hi = m->stage_start[t + 1] - 1;
    while (lo <= hi) { /* steps of a stage are in increasing k */
        int mid = (lo + hi) / 2;
        if (m->steps[mid].k == k) return mid;
        if (m->steps[mid].k < k) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int is_input(const rk_graph *g, int d) {
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == d) return 1;
    return 0;
}
static int is_input_grad(const rk_graph *g, int d) {
    for (int i = 0; i < g->n_inputs; i++)
        if (g->input_grads[i] == d) return 1;
    return 0;
}

/* The runs' touch lists (CSR over data, in step order) and the presence
 * after each touching run in the least-memory schedule for those runs. */
typedef struct {
    char *skip;       /* inputs: always present, not variables */
    int *cnt, *start;
    touch *tl;
    char *keep;
} lean_lists;

static void lean_free(lean_lists *L) {
    free(L->skip);
    free(L->cnt);
    free(L->start);
    free(L->tl);
    free(L->keep);
    memset(L, 0, sizeof *L);
}

static rk_status lean_build(const rk_checkmate_model *m, const char *run, lean_lists *L, rk_error *err) {
    const rk_graph *g = m->g;
    int D = g->n_d, S = m->n_steps;
    memset(L, 0, sizeof *L);
    for (int s = 0; s < S; s++) {
        if (m->steps[s].R == CM_ONE && !run[s])
            return rk_fail(err, RK_EINPUT, "rk-Checkmate: the schedule does not run '%s' at its own stage",
                           g->c[g->topo[m->steps[s].k]].name);
    }
    char *isg = calloc((size_t)D + 1, 1);
    L->skip = calloc((size_t)D + 1, 1);
    L->cnt = calloc((size_t)D + 1, sizeof(int));
    L->start = calloc((size_t)D + 2, sizeof(int));
    if (!isg || !L->skip || !L->cnt || !L->start) {
        free(isg);
        lean_free(L);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    char *skip = L->skip;
    int *cnt = L->cnt, *start = L->start;
    for (int d = 0; d < D; d++) {
        skip[d] = (char)is_input(g, d);
        isg[d] = (char)is_input_grad(g, d);
    }
    /* touch lists (CSR, in step order): runs that produce d or use it with
     * a real/global edge */
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < S; s++) {
            if (!run[s]) continue;
            const rk_cnode *c = &g->c[g->topo[m->steps[s].k]];
            for (int u = 0; u < c->n_uses + c->n_outs; u++) {
                int d = u < c->n_uses ? c->uses[u].data : c->outs[u - c->n_uses];
                if (u < c->n_uses && c->uses[u].kind == RK_EDGE_FAKE) continue;
                if (skip[d]) continue;
                if (pass == 0) {
                    cnt[d]++;
                    continue;
                }
                int at = start[d] + cnt[d];
                if (cnt[d] > 0 && L->tl[at - 1].s == s) at--;
                else {
                    L->tl[at].s = s;
                    L->tl[at].prod = L->tl[at].use = 0;
                    cnt[d]++;
                }
                if (u < c->n_uses) L->tl[at].use = 1;
                else L->tl[at].prod = 1;
            }
        }
        if (pass == 0) {
            for (int d = 0; d < D; d++) start[d + 1] = start[d] + cnt[d];
            L->tl = malloc((size_t)(start[D] + 1) * sizeof *L->tl);
            L->keep = malloc((size_t)(start[D] + 1));
            if (!L->tl || !L->keep) {
                free(isg);
                lean_free(L);
                return rk_fail(err, RK_ENOMEM, "out of memory");
            }
            memset(cnt, 0, (size_t)D * sizeof(int));
        }
    }
    /* presence after each touching run (least memory for these runs) */
    for (int d = 0; d < D; d++) {
        const touch *a = L->tl + start[d];
        int n = cnt[d], grad = g->d[d].kind == RK_D_GRAD, last_prod = -1, seen = 0;
        for (int i = 0; i < n; i++)
            if (a[i].prod) last_prod = i;
        for (int i = 0; i < n; i++) {
            seen |= a[i].prod;
            char k;
            if (!seen) k = 0; /* used before any production: the replay will refuse it */
            else if (isg[d]) k = 1;
            else if (grad && i < last_prod) k = 1;
            else k = i + 1 < n && a[i + 1].use;
            L->keep[start[d] + i] = k;
        }
    }
    free(isg);
    return RK_OK;
}

/* Peak and time of the least-memory schedule with these runs, by one pass
 * over the steps (the simulator's accounting: live + outputs not present +
 * rk_cnode_step_overhead).  -1 when a run uses a data absent at that point
 * (runs that are no schedule). */
static int runs_peak_at(const rk_checkmate_model *m, const char *run, const lean_lists *L, int *pos, char *pres,
                        int64_t *peak, double *time, int *peak_step, char *pres_at_peak);
static int runs_peak(const rk_checkmate_model *m, const char *run, const lean_lists *L, int *pos, char *pres,
                     int64_t *peak, double *time) {
    return runs_peak_at(m, run, L, pos, pres, peak, time, NULL, NULL);
}

/* runs_peak, and the step of the (first) peak with the presences just
 * before its run (pres_at_peak, n_d flags; peak_step -1: the inputs alone) */
static int runs_peak_at(const rk_checkmate_model *m, const char *run, const lean_lists *L, int *pos, char *pres,
                        int64_t *peak, double *time, int *peak_step, char *pres_at_peak) {
    const rk_graph *g = m->g;
    int D = g->n_d;
    memset(pos, 0, (size_t)D * sizeof(int));
    memset(pres, 0, (size_t)D);
    if (peak_step) *peak_step = -1;
    int64_t live = m->input_size, pk = live;
    double t = 0;
    for (int s = 0; s < m->n_steps; s++) {
        if (!run[s]) continue;
        const rk_cnode *c = &g->c[g->topo[m->steps[s].k]];
        t += c->time;
        int64_t fresh = 0;
        for (int u = 0; u < c->n_uses + c->n_outs; u++) {
            int d = u < c->n_uses ? c->uses[u].data : c->outs[u - c->n_uses];
            if (L->skip[d]) continue;
            if (u < c->n_uses) {
                if (c->uses[u].kind != RK_EDGE_FAKE && !pres[d]) return -1;
            } else if (!pres[d] && pos[d] >= 0) {
                fresh += g->d[d].size;
                pos[d] = -1 - pos[d]; /* counted once */
            }
        }
        int64_t mem = live + fresh + rk_cnode_step_overhead(g, g->topo[m->steps[s].k]);
        if (mem > pk) {
            pk = mem;
            if (peak_step) {
                *peak_step = s;
                memcpy(pres_at_peak, pres, (size_t)D);
            }
        }
        for (int u = 0; u < c->n_uses + c->n_outs; u++) {
            int d = u < c->n_uses ? c->uses[u].data : c->outs[u - c->n_uses];
            if (L->skip[d]) continue;
            if (pos[d] < 0) pos[d] = -1 - pos[d];
            int i = pos[d];
            if (i >= L->cnt[d] || L->tl[L->start[d] + i].s != s) continue; /* done already (use and out) */
            int k = L->keep[L->start[d] + i];
            if (k && !pres[d]) live += g->d[d].size;
            else if (!k && pres[d]) live -= g->d[d].size;
            pres[d] = (char)k;
            pos[d] = i + 1;
        }
    }
    *peak = pk;
    *time = t;
    return 0;
}

rk_status cm_encode_runs(const rk_checkmate_model *m, const char *run, double *x, rk_error *err) {
    lean_lists L;
    rk_status r = lean_build(m, run, &L, err);
    if (r) return r;
    int S = m->n_steps;
    int *cnt = L.cnt, *start = L.start;
    touch *tl = L.tl;
    char *keep = L.keep;
    /* column values */
    memset(x, 0, (size_t)m->n_cols * sizeof *x);
    for (int j = 0; j < m->n_cols && !r; j++) {
        const cm_col *c = &m->cols[j];
        if (c->kind == CM_COL_N) continue;
        if (c->kind == CM_COL_R) {
            int s = step_of(m, c->t, c->a);
            if (s < 0) r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: run column %d has no step", j);
            else x[j] = run[s] ? 1 : 0;
            continue;
        }
        int d = c->a;
        int s = c->kind == CM_COL_P ? (c->t < m->T ? m->stage_start[c->t] : S) : step_of(m, c->t, c->b);
        if (s < 0) {
            r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: column %d has no step", j);
            break;
        }
        /* last touching run before s, and the one at s */
        const touch *a = tl + start[d];
        int lo = 0, hi = cnt[d] - 1, before = -1;
        while (lo <= hi) {
            int mid = (lo + hi) / 2;
            if (a[mid].s < s) {
                before = mid;
                lo = mid + 1;
            } else hi = mid - 1;
        }
        int pb = before >= 0 ? keep[start[d] + before] : 0;
        if (c->kind == CM_COL_P) {
            x[j] = pb;
            continue;
        }
        int at = before + 1 < cnt[d] && a[before + 1].s == s ? before + 1 : -1;
        int created = at >= 0 && a[at].prod && !pb;
        if (c->kind == CM_COL_C) x[j] = created;
        else { /* X: forgotten right after the step */
            int alive = pb || created;
            int after = at >= 0 ? keep[start[d] + at] : pb;
            x[j] = alive - after;
            if (x[j] < 0) r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: negative deletion encoding column %d", j);
        }
    }
    if (!r) {
        /* recomputation counts: N[k] = the sum of k's R columns */
        double *sum = calloc((size_t)m->T + 1, sizeof *sum);
        if (!sum) r = rk_fail(err, RK_ENOMEM, "out of memory");
        for (int j = 0; j < m->n_cols && !r; j++)
            if (m->cols[j].kind == CM_COL_R) sum[m->cols[j].a] += x[j];
        for (int j = 0; j < m->n_cols && !r; j++)
            if (m->cols[j].kind == CM_COL_N) x[j] = sum[m->cols[j].a];
        free(sum);
    }
    lean_free(&L);
    return r;
}

int cm_row_violation(const rk_checkmate_model *m, const double *x, int64_t m_peak, int64_t m_save, double *amount) {
    for (int i = 0; i < m->n_rows; i++) {
        const cm_row *rw = &m->rows[i];
        double ub = rw->ub, lb = rw->lb;
        if (rw->kind == CM_RHS_PEAK) ub += (double)m_peak;
        else if (rw->kind == CM_RHS_SAVE) {
            if (m_save < 0) continue;
            ub += (double)m_save;
        }
        double v = rw->e.c0;
        for (int q = 0; q < rw->e.n; q++) v += m->tval[rw->e.start + q] * x[m->tcol[rw->e.start + q]];
        double tol = 1e-6 * fmax(1.0, fabs(v));
        if (v < lb - tol || v > ub + tol) {
            if (amount) *amount = v < lb - tol ? lb - v : v - ub;
            return i;
        }
    }
    for (int j = 0; j < m->n_cols; j++)
        if (x[j] < m->cols[j].lb - 1e-9 || x[j] > m->cols[j].ub + 1e-9) {
            if (amount) *amount = 0;
            return m->n_rows + j;
        }
    return -1;
}

rk_status cm_encode_ops(const rk_checkmate_model *m, const rk_op *ops, int n_ops, double *x, rk_error *err) {
    const rk_graph *g = m->g;
    int T = m->T;
    int *pos = malloc((size_t)(g->n_c + 1) * sizeof(int));
    char *run = calloc((size_t)m->n_steps + 1, 1);
    if (!pos || !run) {
        free(pos);
        free(run);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int i = 0; i < T; i++) pos[g->topo[i]] = i;
    rk_status r = RK_OK;
    int t = 0; /* the current stage: positions < t have run */
    for (int i = 0; i < n_ops && !r; i++) {
        if (ops[i].kind != RK_OP_RUN) continue;
        if (ops[i].node < 0 || ops[i].node >= g->n_c) {
            r = rk_fail(err, RK_EINPUT, "rk-Checkmate: op %d runs node %d, out of range", i, ops[i].node);
            break;
        }
        int p = pos[ops[i].node];
        if (p > t) {
            r = rk_fail(err, RK_EINPUT,
                        "rk-Checkmate: op %d runs '%s' for the first time before '%s': not in the model's topological order",
                        i, g->c[ops[i].node].name, g->c[g->topo[t]].name);
            break;
        }
        int s = step_of(m, t < T ? t : T - 1, p);
        if (p == t) {
            run[s] = 1;
            t++;
        } else if (s >= 0) {
            run[s] = 1; /* a second run of p in this stage is the same step */
        }               /* else: a run the model proves useless, dropped */
    }
    if (!r && t < T)
        r = rk_fail(err, RK_EINPUT, "rk-Checkmate: the schedule never runs '%s'", g->c[g->topo[t]].name);
    if (!r) r = cm_encode_runs(m, run, x, err);
    free(pos);
    free(run);
    return r;
}

/* -------------------------------------------------- greedy heuristic */

/* Runs of the "checkpoints" schedule: every node once at its own stage; in
 * each stage from the loss on, the forward data its node needs that are not
 * checkpoints (keep[d]) and not recomputed earlier in the backward are
 * recomputed there, with what they need in turn (in topological order, the
 * model's step order).  The encoder keeps each data from a run until its
 * next use, so checkpoints stay from their production to their last use and
 * a recomputed data until its last use.  With `reset`, a stage recomputes
 * everything it needs that is not a checkpoint, even when an earlier stage
 * recomputed it: the encoder then drops each recomputed data after its last
 * use in the stage (less memory, more time).  Returns 0, or -1 when a needed
 * recomputation has no step (cannot happen on a model built from g). */
static int checkpoint_runs(const rk_checkmate_model *m, const char *keep, int reset, char *avail, int *stack,
                           char *mark, char *run) {
    const rk_graph *g = m->g;
    int T = m->T, D = g->n_d;
    for (int s = 0; s < m->n_steps; s++) run[s] = m->steps[s].R == CM_ONE;
    for (int d = 0; d < D; d++) avail[d] = keep[d];
    const rk_cnode *loss = &g->c[g->topo[m->t_loss]];
    for (int u = 0; u < loss->n_uses; u++) avail[loss->uses[u].data] = 1;
    for (int t = m->t_loss; t < T; t++) {
        const rk_cnode *c = &g->c[g->topo[t]];
        int sp = 0;
        if (reset && t > m->t_loss)
            for (int d = 0; d < D; d++) avail[d] = keep[d];
        memset(mark, 0, (size_t)g->n_c);
        for (int u = 0; u < c->n_uses; u++) {
            int d = c->uses[u].data;
            if (c->uses[u].kind == RK_EDGE_FAKE || avail[d] || g->d[d].n_producers != 1) continue;
            stack[sp++] = d;
        }
        while (sp > 0) {
            int d = stack[--sp];
            if (avail[d] || g->d[d].n_producers != 1) continue;
            int p = g->d[d].producers[0];
            if (g->c[p].kind != RK_C_FWD || mark[p]) continue;
            mark[p] = 1;
            for (int u = 0; u < g->c[p].n_uses; u++) {
                int e = g->c[p].uses[u].data;
                if (g->c[p].uses[u].kind == RK_EDGE_FAKE || avail[e] || g->d[e].n_producers != 1) continue;
                stack[sp++] = e;
            }
        }
        for (int k = 0; k < m->t_loss; k++) {
            int p = g->topo[k];
            if (!mark[p]) continue;
            int s = step_of(m, t, k);
            if (s < 0) return -1;
            run[s] = 1;
            for (int o = 0; o < g->c[p].n_outs; o++) avail[g->c[p].outs[o]] = 1;
        }
    }
    return 0;
}

/* Peak and time of runs by runs_peak (pos, pres: scratch of n_d entries);
 * -1 when they are no schedule or out of memory. */
static int fast_eval(const rk_checkmate_model *m, const char *run, int *pos, char *pres, int64_t *peak, double *time) {
    lean_lists L;
    rk_error e;
    if (lean_build(m, run, &L, &e) != RK_OK) return -1;
    int r = runs_peak(m, run, &L, pos, pres, peak, time);
    lean_free(&L);
    return r;
}

/* Evaluate runs: encode, decode and replay; time = simulated time. */
static rk_status eval_runs(const rk_checkmate_model *m, const char *run, double *x, int64_t *peak, double *time,
                           rk_error *err) {
    rk_status r = cm_encode_runs(m, run, x, err);
    if (r) return r;
    rk_op *ops = NULL;
    int n = 0;
    double obj;
    r = cm_decode_replay(m, x, &ops, &n, &obj, peak, time, err);
    free(ops);
    return r;
}

/* The greedy's working state: the model, the candidates (data produced by a
 * forward node, biggest per microsecond of recomputation first) and scratch
 * arrays; one per cm_greedy call or per cm_greedy_runs. */
typedef struct {
    const rk_checkmate_model *m;
    char *keep, *avail, *mark, *run, *pres, *pres_at;
    int *stack, *cand, *pos, *ecand, *tpos;
    double *key, *ekey;
    int n_cand;
} greedy_ctx;

static void greedy_ctx_free(greedy_ctx *c) {
    free(c->keep);
    free(c->avail);
    free(c->mark);
    free(c->run);
    free(c->pres);
    free(c->pres_at);
    free(c->stack);
    free(c->cand);
    free(c->pos);
    free(c->ecand);
    free(c->tpos);
    free(c->key);
    free(c->ekey);
    memset(c, 0, sizeof *c);
}

static rk_status greedy_ctx_init(greedy_ctx *c, const rk_checkmate_model *m, rk_error *err) {
    const rk_graph *g = m->g;
    int D = g->n_d;
    memset(c, 0, sizeof *c);
    c->m = m;
    long n_edges = 16;
    for (int k = 0; k < g->n_c; k++) n_edges += g->c[k].n_uses;
    c->keep = calloc((size_t)D + 1, 1);
    c->avail = calloc((size_t)D + 1, 1);
    c->mark = calloc((size_t)g->n_c + 1, 1);
    c->run = calloc((size_t)m->n_steps + 1, 1);
    c->pres = malloc((size_t)D + 1);
    c->pres_at = malloc((size_t)D + 1);
    c->stack = malloc((size_t)n_edges * sizeof(int));
    c->cand = malloc((size_t)(D + 1) * sizeof(int));
    c->pos = malloc((size_t)(D + 1) * sizeof(int));
    c->ecand = malloc((size_t)(D + 1) * sizeof(int));
    c->tpos = malloc((size_t)(g->n_c + 1) * sizeof(int));
    c->key = malloc((size_t)(D + 1) * sizeof *c->key);
    c->ekey = malloc((size_t)(D + 1) * sizeof *c->ekey);
    if (!c->keep || !c->avail || !c->mark || !c->run || !c->pres || !c->pres_at || !c->stack || !c->cand ||
        !c->pos || !c->ecand || !c->tpos || !c->key || !c->ekey) {
        greedy_ctx_free(c);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int i = 0; i < m->T; i++) c->tpos[g->topo[i]] = i;
    /* candidates: data produced by a forward node (data and phantoms),
     * biggest per microsecond of recomputation first */
    for (int d = 0; d < D; d++) {
        const rk_dnode *dn = &g->d[d];
        if (dn->kind == RK_D_GRAD || dn->n_producers != 1 || g->c[dn->producers[0]].kind != RK_C_FWD) continue;
        c->keep[d] = 1;
        if (dn->size <= 0) continue;
        c->key[d] = (double)dn->size / (g->c[dn->producers[0]].time + 1e-3);
        int i = c->n_cand++;
        while (i > 0 && (c->key[c->cand[i - 1]] < c->key[d] || (c->key[c->cand[i - 1]] == c->key[d] && c->cand[i - 1] > d))) {
            c->cand[i] = c->cand[i - 1];
            i--;
        }
        c->cand[i] = d;
    }
    return RK_OK;
}

/* What the greedy does with each schedule it finds (its runs, peak, time):
 * phase 0 evenly spaced checkpoints, 1 and 2 checkpoints dropped one by one
 * (recomputed data kept for the later stages, recomputed in every stage),
 * 3 a state of the eviction search. */
typedef void (*greedy_sink)(void *u, int phase, const char *run, int64_t peak, double time);

/* The evenly spaced checkpoints (Chen et al.'s sqrt(n) family: the outputs
 * of every s-th forward node in topological order, both variants), then the
 * checkpoints dropped one by one, in two variants: recomputed data kept for
 * the later stages (cheaper), then, when that does not fit, recomputed in
 * every stage that needs it.  Each drop is kept while it lowers the peak (in
 * the candidates' order, a few passes); with stop > 0 a variant ends at the
 * first schedule within stop bytes, and the second is skipped then. */
static rk_status greedy_checkpoints(greedy_ctx *c, int64_t stop, greedy_sink sink, void *u, rk_error *err) {
    const rk_checkmate_model *m = c->m;
    int64_t peak;
    double time;
    for (int sp = 2; sp <= m->n_fwd; sp++) {
        for (int reset = 0; reset < 2; reset++) {
            for (int i = 0; i < c->n_cand; i++) c->keep[c->cand[i]] = 0;
            for (int k = 0; k < m->n_fwd; k += sp) {
                const rk_cnode *cn = &m->g->c[m->g->topo[k]];
                for (int o = 0; o < cn->n_outs; o++) c->keep[cn->outs[o]] = 1;
            }
            if (checkpoint_runs(m, c->keep, reset, c->avail, c->stack, c->mark, c->run) == 0 &&
                fast_eval(m, c->run, c->pos, c->pres, &peak, &time) == 0)
                sink(u, 0, c->run, peak, time);
        }
    }
    int fitted = 0; /* a variant found a schedule within stop */
    for (int reset = 0; reset < 2 && !fitted; reset++) {
        for (int i = 0; i < c->n_cand; i++) c->keep[c->cand[i]] = 1;
        /* every checkpoint kept: no recomputation (free-asap) */
        if (checkpoint_runs(m, c->keep, reset, c->avail, c->stack, c->mark, c->run) ||
            fast_eval(m, c->run, c->pos, c->pres, &peak, &time))
            return rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: greedy: the schedule without recomputation is no schedule");
        int64_t cur = peak;
        sink(u, 1 + reset, c->run, peak, time);
        fitted = stop > 0 && peak <= stop;
        for (int pass = 0; pass < 3 && !fitted; pass++) {
            int improved = 0;
            for (int i = 0; i < c->n_cand && !fitted; i++) {
                int d = c->cand[i];
                if (!c->keep[d]) continue;
                c->keep[d] = 0;
                if (checkpoint_runs(m, c->keep, reset, c->avail, c->stack, c->mark, c->run) ||
                    fast_eval(m, c->run, c->pos, c->pres, &peak, &time) || peak >= cur) {
                    c->keep[d] = 1;
                    continue;
                }
                cur = peak;
                improved = 1;
                sink(u, 1 + reset, c->run, peak, time);
                fitted = stop > 0 && peak <= stop;
            }
            if (!improved) break;
        }
    }
    return RK_OK;
}

/* Eviction search (as the greedy of Checkmate's baselines and DTR), from the
 * schedule without recomputation: repeatedly take the peak step, and among
 * the forward data present there that it does not touch, recompute the
 * producer of one right before that data's next use (its presence before is
 * then dropped by the encoder's rule); the one with the most bytes per
 * microsecond of recomputation among those that do not raise the peak is
 * taken.  Up to 4 T moves.  Resumable: evict_until stops at the first state
 * within a budget, and a later call goes on from there (the moves do not
 * depend on the budget). */
#define CM_EVICT_TRY 12 /* candidates evaluated per move, by bytes per microsecond */
typedef struct {
    char *run;
    int moves, max_moves;
    int checked; /* the current state was checked (and fit the last budget) */
    int done;
} evictor;

static rk_status evictor_init(evictor *ev, greedy_ctx *c, rk_error *err) {
    const rk_checkmate_model *m = c->m;
    memset(ev, 0, sizeof *ev);
    ev->max_moves = 4 * m->T;
    ev->run = malloc((size_t)m->n_steps + 1);
    if (!ev->run) return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int i = 0; i < c->n_cand; i++) c->keep[c->cand[i]] = 1;
    if (checkpoint_runs(m, c->keep, 0, c->avail, c->stack, c->mark, ev->run) != 0) ev->done = 1;
    return RK_OK;
}

/* Moves until a state within budget is checked (1: the sink got it) or the
 * search ends (0). */
static int evict_until(greedy_ctx *c, evictor *ev, int64_t budget, greedy_sink sink, void *u) {
    const rk_checkmate_model *m = c->m;
    const rk_graph *g = m->g;
    int D = g->n_d;
    while (!ev->done && ev->moves < ev->max_moves) {
        lean_lists L;
        rk_error e;
        if (lean_build(m, ev->run, &L, &e) != RK_OK) {
            ev->done = 1;
            break;
        }
        int64_t pk;
        double t;
        int ps = -1;
        if (runs_peak_at(m, ev->run, &L, c->pos, c->pres, &pk, &t, &ps, c->pres_at) != 0 || ps < 0) {
            lean_free(&L);
            ev->done = 1;
            break;
        }
        if (!ev->checked) {
            sink(u, 3, ev->run, pk, t);
            if (pk <= budget) {
                ev->checked = 1;
                lean_free(&L);
                return 1;
            }
        }
        ev->checked = 0;
        /* candidates: present at the peak step, not touched by it, forward
         * data with a later use in a step after it whose stage can rerun the
         * producer after the peak step */
        int nc = 0;
        const rk_cnode *pc = &g->c[g->topo[m->steps[ps].k]];
        for (int d = 0; d < D; d++) {
            if (!c->pres_at[d] || L.skip[d] || g->d[d].kind == RK_D_GRAD || g->d[d].n_producers != 1) continue;
            int p = g->d[d].producers[0];
            if (g->c[p].kind != RK_C_FWD || g->d[d].size <= 0) continue;
            int touched = 0;
            for (int k = 0; k < pc->n_uses + pc->n_outs && !touched; k++)
                touched = (k < pc->n_uses ? pc->uses[k].data : pc->outs[k - pc->n_uses]) == d;
            if (touched) continue;
            /* next touching run after the peak step: must be a use */
            const touch *a = L.tl + L.start[d];
            int i = 0;
            while (i < L.cnt[d] && a[i].s <= ps) i++;
            if (i >= L.cnt[d] || !a[i].use || a[i].prod) continue;
            int su = a[i].s, tu = 0;
            while (m->stage_start[tu + 1] <= su) tu++;
            int sp = step_of(m, tu, c->tpos[p]);
            if (sp < 0 || sp <= ps || ev->run[sp]) continue;
            c->ekey[nc] = (double)g->d[d].size / (g->c[p].time + 1e-3);
            c->ecand[nc] = sp;
            /* keep the CM_EVICT_TRY best (insertion) */
            int j = nc;
            while (j > 0 && c->ekey[j - 1] < c->ekey[j]) {
                double tk = c->ekey[j - 1];
                c->ekey[j - 1] = c->ekey[j];
                c->ekey[j] = tk;
                int tc = c->ecand[j - 1];
                c->ecand[j - 1] = c->ecand[j];
                c->ecand[j] = tc;
                j--;
            }
            if (nc < CM_EVICT_TRY) nc++;
        }
        lean_free(&L);
        int taken = -1;
        for (int q = 0; q < nc && taken < 0; q++) {
            ev->run[c->ecand[q]] = 1;
            int64_t p2;
            double t2;
            if (fast_eval(m, ev->run, c->pos, c->pres, &p2, &t2) == 0 && p2 <= pk) taken = q;
            ev->run[c->ecand[q]] = 0;
        }
        if (taken < 0) {
            ev->done = 1;
            break;
        }
        ev->run[c->ecand[taken]] = 1;
        ev->moves++;
    }
    ev->done = 1;
    return 0;
}

/* The choice among the schedules found: with a budget (> 0) the fastest
 * within it (ties: the least peak), else the least peak (ties: the
 * fastest); the first found wins a full tie. */
typedef struct {
    int64_t budget;
    int have;
    int64_t peak;
    double time;
    char *run;
    int n_steps;
} greedy_best;

static void greedy_consider(void *u, int phase, const char *run, int64_t peak, double time) {
    (void)phase;
    greedy_best *b = u;
    int better = b->budget > 0 ? (peak <= b->budget && (!b->have || time < b->time || (time == b->time && peak < b->peak)))
                               : (!b->have || peak < b->peak || (peak == b->peak && time < b->time));
    if (better) {
        memcpy(b->run, run, (size_t)b->n_steps);
        b->peak = peak;
        b->time = time;
        b->have = 1;
    }
}

/* The eviction search's last state, when it fits. */
static void greedy_last(void *u, int phase, const char *run, int64_t peak, double time) {
    (void)phase;
    greedy_best *b = u;
    memcpy(b->run, run, (size_t)b->n_steps);
    b->peak = peak;
    b->time = time;
    b->have = 1;
}

/* x_out from the chosen runs, checked against the replay. */
static rk_status greedy_finish(const rk_checkmate_model *m, const greedy_best *b, double *x_out, int64_t *peak_out,
                               double *time_out, rk_error *err) {
    if (!b->have)
        return rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: greedy: no schedule within %lld bytes", (long long)b->budget);
    int64_t peak;
    double time;
    rk_status r = eval_runs(m, b->run, x_out, &peak, &time, err);
    if (!r && (peak != b->peak || fabs(time - b->time) > 1e-9 * fmax(1, time)))
        r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: greedy: replayed peak %lld time %.17g, predicted %lld %.17g",
                    (long long)peak, time, (long long)b->peak, b->time);
    if (!r) {
        if (peak_out) *peak_out = b->peak;
        if (time_out) *time_out = b->time;
    }
    return r;
}

rk_status cm_greedy(const rk_checkmate_model *m, int64_t budget, double *x_out, int64_t *peak_out, double *time_out,
                    rk_error *err) {
    greedy_ctx c;
    rk_status r = greedy_ctx_init(&c, m, err);
    if (r) return r;
    greedy_best best = {.budget = budget, .n_steps = m->n_steps, .run = malloc((size_t)m->n_steps + 1)};
    greedy_best ev_last = {.budget = budget, .n_steps = m->n_steps, .run = malloc((size_t)m->n_steps + 1)};
    evictor ev = {0};
    if (!best.run || !ev_last.run) r = rk_fail(err, RK_ENOMEM, "out of memory");
    if (!r) r = greedy_checkpoints(&c, budget, greedy_consider, &best, err);
    if (!r && budget > 0) {
        r = evictor_init(&ev, &c, err);
        if (!r && evict_until(&c, &ev, budget, greedy_last, &ev_last))
            greedy_consider(&best, 3, ev_last.run, ev_last.peak, ev_last.time);
    }
    if (!r) r = greedy_finish(m, &best, x_out, peak_out, time_out, err);
    free(ev.run);
    free(best.run);
    free(ev_last.run);
    greedy_ctx_free(&c);
    return r;
}

/* ------------------------------------------ the greedy for many budgets */

typedef struct {
    unsigned char phase;
    int64_t peak;
    double time;
    char *run;
} greedy_state;

struct cm_greedy_runs {
    const rk_checkmate_model *m;
    greedy_ctx c;
    evictor ev;
    greedy_state *st;
    int n, cap;
    int oom;
};

static void greedy_record(void *u, int phase, const char *run, int64_t peak, double time) {
    cm_greedy_runs *gr = u;
    if (gr->oom) return;
    if (gr->n == gr->cap) {
        int cap = gr->cap ? 2 * gr->cap : 64;
        greedy_state *st = realloc(gr->st, (size_t)cap * sizeof *st);
        if (!st) {
            gr->oom = 1;
            return;
        }
        gr->st = st;
        gr->cap = cap;
    }
    char *copy = malloc((size_t)gr->m->n_steps + 1);
    if (!copy) {
        gr->oom = 1;
        return;
    }
    memcpy(copy, run, (size_t)gr->m->n_steps);
    gr->st[gr->n++] = (greedy_state){.phase = (unsigned char)phase, .peak = peak, .time = time, .run = copy};
}

void cm_greedy_runs_free(cm_greedy_runs *gr) {
    if (!gr) return;
    for (int i = 0; i < gr->n; i++) free(gr->st[i].run);
    free(gr->st);
    free(gr->ev.run);
    greedy_ctx_free(&gr->c);
    free(gr);
}

rk_status cm_greedy_runs_new(const rk_checkmate_model *m, cm_greedy_runs **out, rk_error *err) {
    *out = NULL;
    cm_greedy_runs *gr = calloc(1, sizeof *gr);
    if (!gr) return rk_fail(err, RK_ENOMEM, "out of memory");
    gr->m = m;
    rk_status r = greedy_ctx_init(&gr->c, m, err);
    /* no early stop: a budget takes the states up to its first fit */
    if (!r) r = greedy_checkpoints(&gr->c, 0, greedy_record, gr, err);
    if (!r) r = evictor_init(&gr->ev, &gr->c, err);
    if (!r && gr->oom) r = rk_fail(err, RK_ENOMEM, "out of memory");
    if (r) {
        cm_greedy_runs_free(gr);
        return r;
    }
    *out = gr;
    return RK_OK;
}

rk_status cm_greedy_pick(cm_greedy_runs *gr, int64_t budget, double *x_out, int64_t *peak_out, double *time_out,
                         rk_error *err) {
    const rk_checkmate_model *m = gr->m;
    greedy_best best = {.budget = budget, .n_steps = m->n_steps, .run = malloc((size_t)m->n_steps + 1)};
    if (!best.run) return rk_fail(err, RK_ENOMEM, "out of memory");
    /* as cm_greedy: every evenly spaced schedule; each variant of the drops
     * up to its first schedule within the budget, the second only when the
     * first has none (the states are in the order they were found) */
    int fit[3] = {0, 0, 0}; /* a variant of the drops reached the budget */
    for (int i = 0; i < gr->n; i++) {
        const greedy_state *s = &gr->st[i];
        if (s->phase == 3 || (s->phase >= 1 && fit[s->phase])) continue;
        if (s->phase == 2 && fit[1]) continue; /* the first variant fit: no second */
        greedy_consider(&best, s->phase, s->run, s->peak, s->time);
        if (s->phase >= 1 && budget > 0 && s->peak <= budget) fit[s->phase] = 1;
    }
    rk_status r = RK_OK;
    if (budget > 0) {
        /* the eviction search's first state within the budget, searched on
         * when none of those found so far is */
        int found = -1;
        for (int i = 0; i < gr->n && found < 0; i++)
            if (gr->st[i].phase == 3 && gr->st[i].peak <= budget) found = i;
        if (found < 0 && !gr->ev.done) {
            if (evict_until(&gr->c, &gr->ev, budget, greedy_record, gr) && !gr->oom) found = gr->n - 1;
            if (gr->oom) r = rk_fail(err, RK_ENOMEM, "out of memory");
        }
        if (!r && found >= 0)
            greedy_consider(&best, 3, gr->st[found].run, gr->st[found].peak, gr->st[found].time);
    }
    if (!r) r = greedy_finish(m, &best, x_out, peak_out, time_out, err);
    free(best.run);
    return r;
}

/* Local search on the runs of x (a schedule of the model that fits budget):
 * each recomputation, dearest first, is removed when the schedule without it
 * (its outputs kept from their previous run instead) still fits; at most
 * max_evals replays.  Same or less time, never over the budget; x is
 * replaced by the result.  Returns the number of runs removed (-1: out of
 * memory). */
int cm_improve(const rk_checkmate_model *m, int64_t budget, double *x, int max_evals) {
    const rk_graph *g = m->g;
    int S = m->n_steps, nc = m->n_cols;
    char *run = malloc((size_t)S + 1), *pres = malloc((size_t)g->n_d + 1);
    int *order = malloc((size_t)S * sizeof(int) + 1), *pos = malloc((size_t)(g->n_d + 1) * sizeof(int));
    double *y = malloc((size_t)(nc + 1) * sizeof *y);
    if (!run || !order || !y || !pres || !pos) {
        free(run);
        free(order);
        free(y);
        free(pres);
        free(pos);
        return -1;
    }
    int n = 0;
    for (int s = 0; s < S; s++) {
        int R = m->steps[s].R;
        run[s] = R == CM_ONE || (R >= 0 && x[R] > 0.5);
        if (R >= 0 && run[s]) order[n++] = s;
    }
    /* dearest first, then the later stages first (insertion sort: the
     * list is the schedule's recomputations) */
    for (int i = 1; i < n; i++) {
        int s = order[i], j = i - 1;
        double ts = g->c[g->topo[m->steps[s].k]].time;
        while (j >= 0) {
            double tj = g->c[g->topo[m->steps[order[j]].k]].time;
            if (tj > ts || (tj == ts && order[j] > s)) break;
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = s;
    }
    int removed = 0, evals = 0;
    rk_error e2;
    int64_t pk;
    double t;
    for (int i = 0; i < n && evals < max_evals; i++) {
        int s = order[i];
        run[s] = 0;
        evals++;
        if (fast_eval(m, run, pos, pres, &pk, &t) == 0 && pk <= budget) removed++;
        else run[s] = 1;
    }
    /* the result, encoded and checked against every row */
    if (removed > 0) {
        if (eval_runs(m, run, y, &pk, &t, &e2) == RK_OK && pk <= budget && cm_row_violation(m, y, budget, -1, NULL) < 0)
            memcpy(x, y, (size_t)nc * sizeof *x);
        else
            removed = -2; /* cannot happen: runs_peak is the replay's accounting */
    }
    free(run);
    free(order);
    free(y);
    free(pres);
    free(pos);
    return removed;
}
