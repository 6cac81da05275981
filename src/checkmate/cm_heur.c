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

/* Eviction search (as the greedy of Checkmate's baselines and DTR): from
 * runs that do not fit, repeatedly take the peak step, and among the forward
 * data present there that it does not touch, recompute the producer of one
 * right before that data's next use (its presence before is then dropped by
 * the encoder's rule); the one with the most bytes per microsecond of
 * recomputation among those that do not raise the peak is taken.  Up to
 * max_moves moves; returns 1 when the runs fit the budget (run holds them),
 * 0 otherwise. */
#define CM_EVICT_TRY 12 /* candidates evaluated per move, by bytes per microsecond */
static int evict_search(const rk_checkmate_model *m, int64_t budget, char *run, int max_moves, int *pos, char *pres,
                        char *pres_at, int *cand, double *key) {
    const rk_graph *g = m->g;
    int D = g->n_d;
    int *tpos = malloc((size_t)(g->n_c + 1) * sizeof(int));
    if (!tpos) return 0;
    for (int i = 0; i < m->T; i++) tpos[g->topo[i]] = i;
    int fit = 0;
    for (int move = 0; move < max_moves; move++) {
        lean_lists L;
        rk_error e;
        if (lean_build(m, run, &L, &e) != RK_OK) break;
        int64_t pk;
        double t;
        int ps = -1;
        if (runs_peak_at(m, run, &L, pos, pres, &pk, &t, &ps, pres_at) != 0 || ps < 0) {
            lean_free(&L);
            break;
        }
        if (pk <= budget) {
            fit = 1;
            lean_free(&L);
            break;
        }
        /* candidates: present at the peak step, not touched by it, forward
         * data with a later use in a step after it whose stage can rerun the
         * producer after the peak step */
        int nc = 0;
        const rk_cnode *pc = &g->c[g->topo[m->steps[ps].k]];
        for (int d = 0; d < D; d++) {
            if (!pres_at[d] || L.skip[d] || g->d[d].kind == RK_D_GRAD || g->d[d].n_producers != 1) continue;
            int p = g->d[d].producers[0];
            if (g->c[p].kind != RK_C_FWD || g->d[d].size <= 0) continue;
            int touched = 0;
            for (int u = 0; u < pc->n_uses + pc->n_outs && !touched; u++)
                touched = (u < pc->n_uses ? pc->uses[u].data : pc->outs[u - pc->n_uses]) == d;
            if (touched) continue;
            /* next touching run after the peak step: must be a use */
            const touch *a = L.tl + L.start[d];
            int i = 0;
            while (i < L.cnt[d] && a[i].s <= ps) i++;
            if (i >= L.cnt[d] || !a[i].use || a[i].prod) continue;
            int su = a[i].s, tu = 0;
            while (m->stage_start[tu + 1] <= su) tu++;
            int sp = step_of(m, tu, tpos[p]);
            if (sp < 0 || sp <= ps || run[sp]) continue;
            key[nc] = (double)g->d[d].size / (g->c[p].time + 1e-3);
            cand[nc] = sp;
            /* keep the CM_EVICT_TRY best (insertion) */
            int j = nc;
            while (j > 0 && key[j - 1] < key[j]) {
                double tk = key[j - 1];
                key[j - 1] = key[j];
                key[j] = tk;
                int tc = cand[j - 1];
                cand[j - 1] = cand[j];
                cand[j] = tc;
                j--;
            }
            if (nc < CM_EVICT_TRY) nc++;
        }
        lean_free(&L);
        int taken = -1;
        for (int q = 0; q < nc && taken < 0; q++) {
            run[cand[q]] = 1;
            int64_t p2;
            double t2;
            if (fast_eval(m, run, pos, pres, &p2, &t2) == 0 && p2 <= pk) taken = q;
            run[cand[q]] = 0;
        }
        if (taken < 0) break;
        run[cand[taken]] = 1;
    }
    free(tpos);
    return fit;
}

rk_status cm_greedy(const rk_checkmate_model *m, int64_t budget, double *x_out, int64_t *peak_out, double *time_out,
                    rk_error *err) {
    const rk_graph *g = m->g;
    int D = g->n_d, nc = m->n_cols;
    char *keep = calloc((size_t)D + 1, 1), *avail = calloc((size_t)D + 1, 1), *mark = calloc((size_t)g->n_c + 1, 1);
    char *run = calloc((size_t)m->n_steps + 1, 1);
    long n_edges = 16;
    for (int c = 0; c < g->n_c; c++) n_edges += g->c[c].n_uses;
    int *stack = malloc((size_t)n_edges * sizeof(int)), *cand = malloc((size_t)(D + 1) * sizeof(int));
    double *x = malloc((size_t)(nc + 1) * sizeof *x), *key = malloc((size_t)(D + 1) * sizeof *key);
    char *best_run = malloc((size_t)m->n_steps + 1), *pres = malloc((size_t)D + 1);
    int *pos = malloc((size_t)(D + 1) * sizeof(int));
    rk_status r = RK_OK;
    int have = 0;
    int64_t best_peak = INT64_MAX;
    double best_time = INFINITY;
    if (!keep || !avail || !mark || !run || !stack || !cand || !x || !key || !best_run || !pres || !pos) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto done;
    }
    /* candidates: data produced by a forward node (data and phantoms),
     * biggest per microsecond of recomputation first */
    int n_cand = 0;
    for (int d = 0; d < D; d++) {
        const rk_dnode *dn = &g->d[d];
        if (dn->kind == RK_D_GRAD || dn->n_producers != 1 || g->c[dn->producers[0]].kind != RK_C_FWD) continue;
        keep[d] = 1;
        if (dn->size <= 0) continue;
        key[d] = (double)dn->size / (g->c[dn->producers[0]].time + 1e-3);
        int i = n_cand++;
        while (i > 0 && (key[cand[i - 1]] < key[d] || (key[cand[i - 1]] == key[d] && cand[i - 1] > d))) {
            cand[i] = cand[i - 1];
            i--;
        }
        cand[i] = d;
    }
    int64_t peak;
    double time;
    /* goal: fit the budget at the least time; without a budget (<= 0):
     * the least peak */
#define CONSIDER()                                                                                                     \
    do {                                                                                                               \
        int better = budget > 0 ? (peak <= budget && (!have || time < best_time || (time == best_time && peak < best_peak))) \
                                : (!have || peak < best_peak || (peak == best_peak && time < best_time));             \
        if (better) {                                                                                                  \
            memcpy(best_run, run, (size_t)m->n_steps);                                                                 \
            best_peak = peak;                                                                                          \
            best_time = time;                                                                                          \
            have = 1;                                                                                                  \
        }                                                                                                              \
    } while (0)
    /* evenly spaced checkpoints (Chen et al.'s sqrt(n) family): the outputs
     * of every s-th forward node in topological order, both variants */
    for (int sp = 2; sp <= m->n_fwd; sp++) {
        for (int reset = 0; reset < 2; reset++) {
            for (int i = 0; i < n_cand; i++) keep[cand[i]] = 0;
            for (int k = 0; k < m->n_fwd; k += sp) {
                const rk_cnode *c = &g->c[g->topo[k]];
                for (int o = 0; o < c->n_outs; o++) keep[c->outs[o]] = 1;
            }
            if (checkpoint_runs(m, keep, reset, avail, stack, mark, run) == 0 &&
                fast_eval(m, run, pos, pres, &peak, &time) == 0)
                CONSIDER();
        }
    }
    /* checkpoints dropped one by one, in two variants: recomputed data kept
     * for the later stages (cheaper), then, when that does not fit,
     * recomputed in every stage that needs it */
    int fitted = 0; /* this search found a schedule that fits */
    for (int reset = 0; reset < 2 && !fitted; reset++) {
        for (int i = 0; i < n_cand; i++) keep[cand[i]] = 1;
        /* every checkpoint kept: no recomputation (free-asap) */
        if (checkpoint_runs(m, keep, reset, avail, stack, mark, run) || fast_eval(m, run, pos, pres, &peak, &time)) {
            r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: greedy: the schedule without recomputation is no schedule");
            goto done;
        }
        int64_t cur = peak;
        CONSIDER();
        fitted = budget > 0 && peak <= budget;
        /* drop checkpoints one at a time (in the candidates' order, a few
         * passes) while that lowers the peak; stop once the budget fits */
        for (int pass = 0; pass < 3 && !fitted; pass++) {
            int improved = 0;
            for (int i = 0; i < n_cand && !fitted; i++) {
                int d = cand[i];
                if (!keep[d]) continue;
                keep[d] = 0;
                if (checkpoint_runs(m, keep, reset, avail, stack, mark, run) ||
                    fast_eval(m, run, pos, pres, &peak, &time) || peak >= cur) {
                    keep[d] = 1;
                    continue;
                }
                cur = peak;
                improved = 1;
                CONSIDER();
                fitted = budget > 0 && peak <= budget;
            }
            if (!improved) break;
        }
    }
    /* eviction search from the schedule without recomputation */
    if (budget > 0) {
        char *pres_at = malloc((size_t)D + 1);
        int *ecand = malloc((size_t)(D + 1) * sizeof(int));
        double *ekey = malloc((size_t)(D + 1) * sizeof *ekey);
        if (pres_at && ecand && ekey) {
            for (int i = 0; i < n_cand; i++) keep[cand[i]] = 1;
            if (checkpoint_runs(m, keep, 0, avail, stack, mark, run) == 0 &&
                evict_search(m, budget, run, 4 * m->T, pos, pres, pres_at, ecand, ekey) &&
                fast_eval(m, run, pos, pres, &peak, &time) == 0)
                CONSIDER();
        }
        free(pres_at);
        free(ecand);
        free(ekey);
    }
#undef CONSIDER
    if (!have) r = rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: greedy: no schedule within %lld bytes", (long long)budget);
    else if ((r = eval_runs(m, best_run, x_out, &peak, &time, err)) == RK_OK &&
             (peak != best_peak || fabs(time - best_time) > 1e-9 * fmax(1, time))) {
        r = rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: greedy: replayed peak %lld time %.17g, predicted %lld %.17g",
                    (long long)peak, time, (long long)best_peak, best_time);
    }
    if (!r) {
        if (peak_out) *peak_out = best_peak;
        if (time_out) *time_out = best_time;
    }
done:
    free(keep);
    free(avail);
    free(mark);
    free(run);
    free(stack);
    free(cand);
    free(x);
    free(key);
    free(best_run);
    free(pres);
    free(pos);
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
