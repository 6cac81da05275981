/* rotor_build.c — plans (one decision per subproblem): their exact-byte
 * evaluation, their expansion into a chain-level schedule (rk-Rotor-Build's
 * output as block ops), and the rule plans keep-all, sqrt(n) and
 * recompute-all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

rk_status rk_dp_plan_init(rk_dp_plan *p, int n_blocks) {
    p->n_blocks = n_blocks;
    size_t W = (size_t)n_blocks + 1;
    p->code = calloc(W * W, sizeof *p->code);
    return p->code ? RK_OK : RK_ENOMEM;
}

void rk_dp_plan_free(rk_dp_plan *p) {
    if (!p) return;
    free(p->code);
    p->code = NULL;
    p->n_blocks = 0;
}

/* ------------------------------------------------------------ the walk */

/* The walk over a plan: exact peak and time, and (when sch != NULL) the ops. */
typedef struct {
    const dp_chain *d;
    const rk_dp_plan *p;
    const rk_chain *ch;        /* for emitting */
    const rk_dp_options *opts; /* for emitting */
    rk_schedule *sch;
    int64_t peak;
    double time;
    long n_fwd;
    int dropped;               /* the last bwd emitted forgot its block's input */
    rk_error *err;
} walk_ctx;

static void at_most(walk_ctx *w, int64_t v) {
    if (v > w->peak) w->peak = v;
}

static rk_status emit(walk_ctx *w, rk_op_kind kind, int block, int node, int option) {
    if (!w->sch) return RK_OK;
    if (rk_schedule_push(w->sch, kind, block, node, option)) return rk_fail(w->err, RK_ENOMEM, "out of memory");
    return RK_OK;
}

static rk_status emit_ops(walk_ctx *w, int block, const rk_op *ops, int n) {
    if (!w->sch) return RK_OK;
    for (int i = 0; i < n; i++)
        if (ops[i].kind != RK_OP_MARK && rk_schedule_push(w->sch, ops[i].kind, block, ops[i].node, -1))
            return rk_fail(w->err, RK_ENOMEM, "out of memory");
    return RK_OK;
}

static const rk_option *option_of(walk_ctx *w, int block, int o) {
    return &w->opts->classes[w->ch->blocks[block].cls].options[o];
}

static rk_status fwd(walk_ctx *w, int block, int o) {
    rk_status r;
    w->time += dp_opt(w->d, block, o)->fwd_time;
    w->n_fwd++;
    if (!w->sch) return RK_OK;
    const rk_option *op = option_of(w, block, o);
    if ((r = emit(w, RK_OP_MARK, block, RK_MARK_FWD_BEGIN, o))) return r;
    if ((r = emit_ops(w, block, op->fwd, op->n_fwd))) return r;
    return emit(w, RK_OP_MARK, block, RK_MARK_FWD_END, o);
}

/* drop: the caller frees the block's input right after; when that lowers
 * the backward's peak or the input is read for its shape only
 * (dp_bwd_drops), its ops forget the input after its last real use
 * (dp_bwd_drop_input), or it is already gone (early: forgotten after the
 * forward, dp_early_drop).  noout: the block's output is gone
 * (dp_case1_sub_flag): the ops that forget it are left out. */
static rk_status bwd(walk_ctx *w, int block, int o, int drop, int noout, int early) {
    rk_status r;
    w->time += dp_opt(w->d, block, o)->bwd_time;
    int in_mode = early ? 2 : dp_bwd_drops(w->d, block, o, drop, noout) ? 1 : 0;
    w->dropped = in_mode != 0;
    if (!w->sch) return RK_OK;
    const rk_option *op = option_of(w, block, o);
    if ((r = emit(w, RK_OP_MARK, block, RK_MARK_BWD_BEGIN, o))) return r;
    if (in_mode == 0 && !noout) {
        if ((r = emit_ops(w, block, op->bwd, op->n_bwd))) return r;
    } else {
        rk_op *v;
        int n;
        if ((r = dp_bwd_ops(&w->ch->classes[w->ch->blocks[block].cls], op, in_mode, noout, &v, &n, w->err)))
            return r;
        r = emit_ops(w, block, v, n);
        free(v);
        if (r) return r;
    }
    return emit(w, RK_OP_MARK, block, RK_MARK_BWD_END, o);
}

/* Subproblem (s, t): X bytes are held by the callers besides a_s, a_t, d_t;
 * f: the caller frees a_s right after (dp_bwd_peak). */
static rk_status walk(walk_ctx *w, int s, int t, int64_t X, int f) {
    const dp_chain *d = w->d;
    int L = d->L;
    int code = rk_dp_plan_get(w->p, s, t);
    int nopt = dp_cls(d, s)->n_options;
    rk_status r;
    if (code > 0) {
        if (code >= nopt)
            return rk_fail(w->err, RK_EINPUT, "plan: subproblem (%d, %d) uses option %d; block %d has %d", s, t, code, s,
                           nopt);
        const rk_dp_option_cost *x = dp_opt(d, s, code);
        int early = 0, noout = 0;
        if (t == s + 1) {
            at_most(w, X + (t < L ? dp_base_fwd(d, s, code) : x->fwd_peak));
            if ((r = fwd(w, s, code))) return r;
            if (t == L) {
                at_most(w, X + x->loss_peak);
                w->time += x->loss_time;
                if (w->sch) {
                    const rk_graph *g = &w->ch->classes[w->ch->blocks[s].cls];
                    if ((r = emit(w, RK_OP_RUN, s, g->loss, -1))) return r;
                }
            }
        } else {
            /* a_s goes right after the forward (early); a_{s+1} right after
             * Opt(s+1, t) (noout: block s's backward does not read it) */
            early = dp_early_drop(d, s, code, f);
            noout = dp_case1_sub_flag(d, s, code);
            at_most(w, X + d->G[t] + x->fwd_peak);
            if ((r = fwd(w, s, code))) return r;
            if (early && w->sch) {
                const rk_graph *g = &w->ch->classes[w->ch->blocks[s].cls];
                if ((r = emit(w, RK_OP_FORGET, s, g->inputs[0], -1))) return r;
            }
            if ((r = walk(w, s + 1, t, X + (early ? 0 : d->act[s]) + x->saved, noout))) return r;
            if (noout && w->sch && !w->dropped) {
                const rk_graph *g = &w->ch->classes[w->ch->blocks[s].cls];
                if ((r = emit(w, RK_OP_FORGET, s, g->output, -1))) return r;
            }
        }
        at_most(w, X + dp_bwd_peak(d, s, code, f, noout));
        return bwd(w, s, code, f, noout, early);
    }
    if (code == 0) return rk_fail(w->err, RK_EINPUT, "plan: no decision for subproblem (%d, %d)", s, t);
    int i = s - code;
    if (i <= s || i >= t)
        return rk_fail(w->err, RK_EINPUT, "plan: subproblem (%d, %d) checkpoints at %d, not strictly inside", s, t, i);
    for (int j = s; j < i; j++) {
        at_most(w, X + d->G[t] + (j > s ? d->act[s] : 0) + dp_opt(d, j, 0)->fwd_peak);
        if ((r = fwd(w, j, 0))) return r;
        if (j > s && w->sch) { /* a_j, the output of block j-1, is not kept */
            const rk_graph *g = &w->ch->classes[w->ch->blocks[j - 1].cls];
            if ((r = emit(w, RK_OP_FORGET, j - 1, g->output, -1))) return r;
        }
    }
    int fi = dp_right_drop(d, i);
    if ((r = walk(w, i, t, X + d->act[s], fi))) return r;
    /* a_i: only block i-1's forward reads it again, rebuilding it (block i's
     * backward, the last of Opt(i, t), may have forgotten it already) */
    if (fi && w->sch && !w->dropped) {
        const rk_graph *g = &w->ch->classes[w->ch->blocks[i - 1].cls];
        if ((r = emit(w, RK_OP_FORGET, i - 1, g->output, -1))) return r;
    }
    return walk(w, s, i, X, f);
}

static rk_status run_walk(const rk_dp_costs *c, const rk_dp_plan *p, const rk_chain *ch, const rk_dp_options *o,
                          rk_schedule *sch, rk_dp_eval *ev, rk_error *err) {
    if (p->n_blocks != c->n_blocks)
        return rk_fail(err, RK_EINPUT, "plan for %d blocks, chain of %d", p->n_blocks, c->n_blocks);
    dp_chain d;
    rk_status r = dp_chain_init(&d, c, err);
    if (r) return r;
    walk_ctx w = {.d = &d, .p = p, .ch = ch, .opts = o, .sch = sch, .peak = d.act[0], .err = err};
    r = walk(&w, 0, d.L, 0, 0);
    if (!r && ev) {
        ev->peak = w.peak;
        ev->time = w.time;
        ev->n_forwards = w.n_fwd;
    }
    dp_chain_free(&d);
    return r;
}

rk_status rk_dp_plan_evaluate(const rk_dp_costs *c, const rk_dp_plan *p, rk_dp_eval *ev, rk_error *err) {
    return run_walk(c, p, NULL, NULL, NULL, ev, err);
}

rk_status rk_dp_plan_build(const rk_chain *ch, const rk_dp_options *o, const rk_dp_costs *c, const rk_dp_plan *p,
                           rk_schedule *s, rk_error *err) {
    if (ch->n_blocks != c->n_blocks || o->n_classes != ch->n_classes || c->n_classes != ch->n_classes)
        return rk_fail(err, RK_EINPUT, "chain, options and costs do not match");
    for (int k = 0; k < ch->n_classes; k++)
        if (o->classes[k].n_options != c->classes[k].n_options)
            return rk_fail(err, RK_EINPUT, "class %d: %d options but costs for %d", k, o->classes[k].n_options,
                           c->classes[k].n_options);
    for (int b = 0; b < ch->n_blocks; b++)
        if (ch->blocks[b].cls != c->block_class[b])
            return rk_fail(err, RK_EINPUT, "block %d: chain class %d, costs class %d", b, ch->blocks[b].cls,
                           c->block_class[b]);
    rk_dp_eval ev = {0, 0.0, 0};
    int n0 = s->n_ops;
    rk_status r = run_walk(c, p, ch, o, s, &ev, err);
    if (r) {
        s->n_ops = n0;
        return r;
    }
    s->predicted_peak = ev.peak;
    s->predicted_time = ev.time;
    return RK_OK;
}

/* ------------------------------------------------------------ rule plans */

static rk_status need_keep_all(const rk_dp_costs *c, rk_error *err) {
    for (int k = 0; k < c->n_classes; k++)
        if (c->classes[k].keep_all < 1 || c->classes[k].keep_all >= c->classes[k].n_options)
            return rk_fail(err, RK_EINPUT, "class %d has no keep-all option", k);
    return RK_OK;
}

static int ka(const rk_dp_costs *c, int block) { return c->classes[c->block_class[block]].keep_all; }

/* keep-all chain over [s, t): case 1 with keep_all at (j, t) for j in [s, t). */
static void keep_all_run(const rk_dp_costs *c, rk_dp_plan *p, int s, int t) {
    for (int j = s; j < t; j++) rk_dp_plan_set(p, j, t, ka(c, j));
}

rk_status rk_dp_plan_keep_all(const rk_dp_costs *c, rk_dp_plan *p, rk_error *err) {
    rk_status r = need_keep_all(c, err);
    if (r) return r;
    if (rk_dp_plan_init(p, c->n_blocks)) return rk_fail(err, RK_ENOMEM, "out of memory");
    keep_all_run(c, p, 0, c->n_blocks);
    return RK_OK;
}

rk_status rk_dp_plan_recompute_all(const rk_dp_costs *c, rk_dp_plan *p, rk_error *err) {
    rk_status r = need_keep_all(c, err);
    if (r) return r;
    int L = c->n_blocks;
    if (rk_dp_plan_init(p, L)) return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int t = L; t >= 1; t--) {
        if (t >= 2) rk_dp_plan_set(p, 0, t, -(t - 1)); /* checkpoint at t-1 */
        rk_dp_plan_set(p, t - 1, t, ka(c, t - 1));
    }
    return RK_OK;
}

rk_status rk_dp_plan_sqrt(const rk_dp_costs *c, int segments, rk_dp_plan *p, rk_error *err) {
    rk_status r = need_keep_all(c, err);
    if (r) return r;
    int L = c->n_blocks;
    int K = segments > 0 ? segments : (int)floor(sqrt((double)L) + 0.5);
    if (K < 1) K = 1;
    if (K > L) K = L;
    if (rk_dp_plan_init(p, L)) return rk_fail(err, RK_ENOMEM, "out of memory");
    int *b = malloc((size_t)(K + 1) * sizeof *b);
    if (!b) {
        rk_dp_plan_free(p);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    for (int k = 0; k <= K; k++) b[k] = (int)(((int64_t)k * L) / K);
    for (int k = 0; k < K; k++) {
        if (k == K - 1) {
            keep_all_run(c, p, b[k], L); /* the last segment runs keep-all directly */
        } else {
            rk_dp_plan_set(p, b[k], L, -(b[k + 1] - b[k])); /* forward through segment k keeping b[k+1] */
            keep_all_run(c, p, b[k], b[k + 1]);             /* its backward: recompute with keep-all */
        }
    }
    free(b);
    return RK_OK;
}
