/* chain_costs.c — the DP's view of a chain: per-class option lists (the
 * built-in {none, keep_all} where keep_all is the asap option, or any list a caller
 * builds) and their exact costs, measured by replaying each option's op lists
 * on its block graph. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_dp.h"

void rk_dp_options_free(rk_dp_options *o) {
    if (!o) return;
    for (int k = 0; k < o->n_classes; k++) {
        rk_dp_class_options *co = &o->classes[k];
        for (int i = 0; i < co->n_options; i++) rk_option_free(&co->options[i]);
        free(co->options);
    }
    free(o->classes);
    memset(o, 0, sizeof *o);
}

static rk_status push_option(rk_dp_class_options *co, rk_option *opt) {
    rk_option *a = realloc(co->options, (size_t)(co->n_options + 1) * sizeof *a);
    if (!a) return RK_ENOMEM;
    co->options = a;
    a[co->n_options++] = *opt; /* takes ownership */
    memset(opt, 0, sizeof *opt);
    return RK_OK;
}

static rk_status builtin_options(const rk_chain *ch, rk_dp_options *o, int with_asap, rk_error *err) {
    memset(o, 0, sizeof *o);
    o->classes = calloc((size_t)ch->n_classes + 1, sizeof *o->classes);
    if (!o->classes) return rk_fail(err, RK_ENOMEM, "out of memory");
    o->n_classes = ch->n_classes;
    for (int k = 0; k < ch->n_classes; k++) {
        const rk_graph *g = &ch->classes[k];
        rk_dp_class_options *co = &o->classes[k];
        co->keep_all = 1;
        rk_option opt;
        rk_status r = rk_option_none(g, &opt, err);
        if (!r && (r = push_option(co, &opt))) rk_fail(err, r, "out of memory");
        /* The no-recomputation option holds what autograd holds: each data
         * the backward reads (saved tensors, phantoms) until its backward,
         * the rest freed after its last forward use (asap), so keep-all is
         * never above PyTorch's own step.  (rk_option_keep_all, which keeps
         * every data until the backward, costs more for the same time.) */
        (void)with_asap;
        if (!r && !(r = rk_option_asap(g, &opt, err)) && (r = push_option(co, &opt)))
            rk_fail(err, r, "out of memory");
        if (r) {
            rk_option_free(&opt);
            rk_dp_options_free(o);
            return r;
        }
    }
    return RK_OK;
}

rk_status rk_dp_options_rotor(const rk_chain *ch, rk_dp_options *o, rk_error *err) {
    return builtin_options(ch, o, 0, err);
}

rk_status rk_dp_options_default(const rk_chain *ch, rk_dp_options *o, rk_error *err) {
    return builtin_options(ch, o, 1, err);
}

rk_status rk_dp_options_add(rk_dp_options *o, int cls, const rk_option *opt, rk_error *err) {
    if (cls < 0 || cls >= o->n_classes)
        return rk_fail(err, RK_EINPUT, "option for class %d; the chain has %d classes", cls, o->n_classes);
    if (opt->n_bwd <= 0)
        return rk_fail(err, RK_EINPUT, "class %d: an added option needs backward ops (option 0 is the only one without)",
                       cls);
    rk_option c;
    if (rk_option_copy(&c, opt)) return rk_fail(err, RK_ENOMEM, "out of memory");
    if (push_option(&o->classes[cls], &c)) {
        rk_option_free(&c);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    return RK_OK;
}

/* Does some option of co hold no more than x at each phase (forward peak,
 * saved, backward peak) in no more time? */
static int dominated(const rk_dp_class_options *co, const rk_option *x) {
    for (int i = 0; i < co->n_options; i++) {
        const rk_option *a = &co->options[i];
        if (a->n_bwd <= 0) continue;
        if (a->fwd_peak <= x->fwd_peak && a->saved <= x->saved && a->bwd_peak <= x->bwd_peak &&
            a->fwd_time + a->bwd_time <= x->fwd_time + x->bwd_time)
            return 1;
    }
    return 0;
}

rk_status rk_dp_options_add_segments(const rk_chain *ch, rk_dp_options *o, int cls, int *n_added, rk_error *err) {
    static const int counts[] = {2, 3, 4, 6, 8, 12, 16, 24, 32};
    if (n_added) *n_added = 0;
    if (cls < 0 || cls >= o->n_classes || cls >= ch->n_classes)
        return rk_fail(err, RK_EINPUT, "segmented options for class %d; the chain has %d classes", cls, o->n_classes);
    const rk_graph *g = &ch->classes[cls];
    int nf = 0;
    for (int c = 0; c < g->n_c; c++) nf += g->c[c].kind == RK_C_FWD;
    for (size_t i = 0; i < 2 * (sizeof counts / sizeof counts[0]); i++) {
        int k = counts[i / 2], lean = (int)(i % 2);
        if (k > nf) break;
        rk_option opt;
        rk_error e2;
        rk_status r = rk_option_segments(g, k, lean, &opt, &e2);
        if (r == RK_ENOMEM) return rk_fail(err, r, "out of memory");
        if (r) continue; /* a graph the cut does not fit (checked by the replay): no option */
        if (dominated(&o->classes[cls], &opt)) {
            rk_option_free(&opt);
            continue;
        }
        if (push_option(&o->classes[cls], &opt)) {
            rk_option_free(&opt);
            return rk_fail(err, RK_ENOMEM, "out of memory");
        }
        if (n_added) (*n_added)++;
    }
    return RK_OK;
}

/* ------------------------------------------------------------- costs */

void rk_dp_costs_free(rk_dp_costs *c) {
    if (!c) return;
    for (int k = 0; k < c->n_classes; k++) free(c->classes[k].opt);
    free(c->classes);
    free(c->block_class);
    memset(c, 0, sizeof *c);
}

rk_status rk_dp_costs_alloc(rk_dp_costs *c, int n_classes, const int *n_options, int n_blocks) {
    memset(c, 0, sizeof *c);
    if (n_classes < 1 || n_blocks < 1) return RK_EINPUT;
    c->classes = calloc((size_t)n_classes, sizeof *c->classes);
    c->block_class = calloc((size_t)n_blocks, sizeof *c->block_class);
    if (!c->classes || !c->block_class) {
        rk_dp_costs_free(c);
        return RK_ENOMEM;
    }
    c->n_classes = n_classes;
    c->n_blocks = n_blocks;
    for (int k = 0; k < n_classes; k++) {
        int n = n_options[k] > 0 ? n_options[k] : 1;
        c->classes[k].opt = calloc((size_t)n, sizeof *c->classes[k].opt);
        if (!c->classes[k].opt) {
            rk_dp_costs_free(c);
            return RK_ENOMEM;
        }
        c->classes[k].n_options = n;
        c->classes[k].keep_all = -1;
    }
    return RK_OK;
}

rk_status rk_dp_costs_check(const rk_dp_costs *c, rk_error *err) {
    if (c->n_blocks < 1) return rk_fail(err, RK_EINPUT, "costs: no blocks");
    for (int b = 0; b < c->n_blocks; b++)
        if (c->block_class[b] < 0 || c->block_class[b] >= c->n_classes)
            return rk_fail(err, RK_EINPUT, "costs: block %d has class %d of %d", b, c->block_class[b], c->n_classes);
    for (int b = 1; b < c->n_blocks; b++) {
        const rk_dp_class_cost *p = &c->classes[c->block_class[b - 1]], *q = &c->classes[c->block_class[b]];
        if (p->output_size != q->input_size)
            return rk_fail(err, RK_EINPUT, "costs: block %d input size %lld != block %d output size %lld", b,
                           (long long)q->input_size, b - 1, (long long)p->output_size);
    }
    for (int k = 0; k < c->n_classes; k++) {
        const rk_dp_class_cost *cc = &c->classes[k];
        if (cc->input_size < 0 || cc->output_size < 0 || cc->output_grad_size < 0)
            return rk_fail(err, RK_EINPUT, "costs: class %d has a negative size", k);
        if (cc->n_options < 2) return rk_fail(err, RK_EINPUT, "costs: class %d has no option with a backward", k);
        if (cc->keep_all >= cc->n_options || cc->keep_all == 0)
            return rk_fail(err, RK_EINPUT, "costs: class %d keep_all index %d out of range", k, cc->keep_all);
        for (int o = 0; o < cc->n_options; o++) {
            const rk_dp_option_cost *x = &cc->opt[o];
            int64_t io = cc->input_size + cc->output_size;
            if (!isfinite(x->fwd_time) || x->fwd_time < 0 || (o > 0 && (!isfinite(x->bwd_time) || x->bwd_time < 0)) ||
                !isfinite(x->loss_time) || x->loss_time < 0)
                return rk_fail(err, RK_EINPUT, "costs: class %d option %d has a bad time", k, o);
            if (x->saved < 0 || x->fwd_peak < io || x->fwd_peak_re < io + x->saved ||
                (o > 0 && (x->bwd_peak < io + x->saved + cc->output_grad_size ||
                           x->loss_peak < io + x->saved)))
                return rk_fail(err, RK_EINPUT, "costs: class %d option %d has peaks below what they include", k, o);
            if (x->bwd_peak_drop < 0 || x->bwd_peak_drop > x->bwd_peak)
                return rk_fail(err, RK_EINPUT, "costs: class %d option %d: bwd_peak_drop must be in [0, bwd_peak]", k, o);
            if (x->in_unread < 0 || x->in_unread > 1 || x->out_unread < 0 || x->out_unread > 1 ||
                (x->in_unread && (o == 0 || x->bwd_peak_drop <= 0)))
                return rk_fail(err, RK_EINPUT, "costs: class %d option %d: in_unread and out_unread are 0 or 1 "
                               "(in_unread with a measured bwd_peak_drop)", k, o);
            if (x->out_unread && (o == 0 || !cc->out_rebuilt || x->bwd_peak_noout <= 0 ||
                                  x->bwd_peak_noout > x->bwd_peak || x->bwd_peak_drop_noout <= 0 ||
                                  x->bwd_peak_drop_noout > x->bwd_peak_noout))
                return rk_fail(err, RK_EINPUT, "costs: class %d option %d: out_unread needs 0 < bwd_peak_drop_noout <= "
                               "bwd_peak_noout <= bwd_peak", k, o);
            if (o == 0 && x->saved != 0)
                return rk_fail(err, RK_EINPUT, "costs: class %d option 0 must keep nothing but the output", k);
        }
    }
    return RK_OK;
}

static int is_input(const rk_graph *g, int d) {
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == d) return 1;
    return 0;
}

/* The option's bwd ops with a forget of the block's input right after its
 * last real use (at the start when no bwd op reads it really: the input
 * part of a split backward names it for its shape only): what the block's
 * backward runs when the caller frees the input right after it anyway.
 * *ops = NULL, *n = 0 when the class cannot drop its input (more than one
 * input, or its output is its input). */
rk_status dp_bwd_drop_input(const rk_graph *g, const rk_option *opt, rk_op **ops, int *n, rk_error *err) {
    *ops = NULL;
    *n = 0;
    if (g->n_inputs != 1 || is_input(g, g->output)) return RK_OK;
    int in = g->inputs[0], last = -1;
    for (int i = 0; i < opt->n_bwd; i++) {
        const rk_op *o = &opt->bwd[i];
        if (o->kind == RK_OP_FORGET && o->node == in) return RK_OK; /* not an option's bwd */
        if (o->kind != RK_OP_RUN) continue;
        const rk_cnode *c = &g->c[o->node];
        for (int q = 0; q < c->n_uses; q++)
            if (c->uses[q].data == in && c->uses[q].kind != RK_EDGE_FAKE) last = i;
    }
    rk_op *v = malloc(((size_t)opt->n_bwd + 1) * sizeof *v);
    if (!v) return rk_fail(err, RK_ENOMEM, "out of memory");
    int k = 0;
    for (int i = -1; i < opt->n_bwd; i++) {
        if (i >= 0) v[k++] = opt->bwd[i];
        if (i == last) v[k++] = (rk_op){RK_OP_FORGET, 0, in, -1};
    }
    *ops = v;
    *n = k;
    return RK_OK;
}

/* Whether a bwd op of opt runs a node that reads d really or makes it. */
static int bwd_reads(const rk_graph *g, const rk_option *opt, int d) {
    for (int i = 0; i < opt->n_bwd; i++) {
        const rk_op *o = &opt->bwd[i];
        if (o->kind != RK_OP_RUN) continue;
        const rk_cnode *c = &g->c[o->node];
        for (int q = 0; q < c->n_uses; q++)
            if (c->uses[q].data == d && c->uses[q].kind != RK_EDGE_FAKE) return 1;
        for (int q = 0; q < c->n_outs; q++)
            if (c->outs[q] == d) return 1;
    }
    return 0;
}

rk_status dp_bwd_ops(const rk_graph *g, const rk_option *opt, int in_mode, int out_absent, rk_op **ops, int *n,
                     rk_error *err) {
    rk_op *v = NULL;
    int k = 0;
    rk_status r;
    if (in_mode == 1) {
        if ((r = dp_bwd_drop_input(g, opt, &v, &k, err))) return r;
        if (!v) return rk_fail(err, RK_EFAIL, "internal: the block's backward cannot drop its input");
    } else {
        v = malloc(((size_t)opt->n_bwd + 1) * sizeof *v);
        if (!v) return rk_fail(err, RK_ENOMEM, "out of memory");
        memcpy(v, opt->bwd, (size_t)opt->n_bwd * sizeof *v);
        k = opt->n_bwd;
    }
    if (out_absent) {
        int j = 0;
        for (int i = 0; i < k; i++)
            if (!(v[i].kind == RK_OP_FORGET && v[i].node == g->output)) v[j++] = v[i];
        k = j;
    }
    *ops = v;
    *n = k;
    return RK_OK;
}

/* The peak of opt's backward (dp_bwd_ops) after its forward and the loss,
 * with the input absent (in_mode 2) and / or the output absent. */
static rk_status measure_bwd(const rk_graph *g, const rk_option *opt, int in_mode, int out_absent, const char *where,
                             int64_t *peak, rk_error *err) {
    rk_op *v;
    int n;
    rk_status r = dp_bwd_ops(g, opt, in_mode, out_absent, &v, &n, err);
    if (r) return r;
    rk_block_state st;
    if (rk_block_state_init(&st, g)) {
        free(v);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    rk_op loss = {RK_OP_RUN, 0, g->loss, -1};
    if (!(r = rk_block_replay(g, &st, opt->fwd, opt->n_fwd, where, err)) &&
        !(r = rk_block_replay(g, &st, &loss, 1, where, err))) {
        int gone[2] = {in_mode == 2 ? g->inputs[0] : -1, out_absent ? g->output : -1};
        for (int i = 0; i < 2; i++)
            if (gone[i] >= 0 && st.present[gone[i]]) {
                st.present[gone[i]] = 0;
                st.live -= g->d[gone[i]].size;
            }
        rk_block_state_reset_peak(&st);
        if (!(r = rk_block_replay(g, &st, v, n, where, err))) *peak = st.peak;
    }
    free(v);
    rk_block_state_free(&st);
    return r;
}

/* Replay one option: fwd from the inputs (fwd_peak, saved), loss, bwd;
 * then the fwd again with the output already present (fwd_peak_re). */
static rk_status measure_option(const rk_graph *g, int cls, int oi, const rk_option *opt, rk_dp_option_cost *x,
                                rk_error *err) {
    char where[96];
    rk_block_state st;
    rk_status r;
    memset(x, 0, sizeof *x);
    snprintf(where, sizeof where, "class %d option %d", cls, oi);
    {   /* the contract check, on a shallow copy (stats only) */
        rk_option tmp = *opt;
        if ((r = rk_option_evaluate(g, &tmp, err))) {
            rk_error e2 = *err;
            return rk_fail(err, r, "%s: %s", where, e2.msg);
        }
    }
    if (oi == 0 && opt->n_bwd != 0)
        return rk_fail(err, RK_EINPUT, "%s: option 0 must be a forward without backward ops", where);
    if (oi > 0 && opt->n_bwd == 0)
        return rk_fail(err, RK_EINPUT, "%s: option %d has no backward ops", where, oi);
    if (rk_block_state_init(&st, g)) return rk_fail(err, RK_ENOMEM, "out of memory");
    int64_t in = st.live;
    int64_t out = is_input(g, g->output) ? 0 : g->d[g->output].size;
    if ((r = rk_block_replay(g, &st, opt->fwd, opt->n_fwd, where, err))) goto done;
    x->fwd_time = st.time;
    x->fwd_peak = st.peak;
    x->saved = st.live - in - out;
    if (oi == 0) {
        for (int d = 0; d < g->n_d; d++)
            if (st.present[d] && d != g->output && !is_input(g, d)) {
                r = rk_fail(err, RK_EINPUT, "%s: option 0 must keep only the output, but '%s' stays in memory", where,
                            g->d[d].name);
                goto done;
            }
    } else {
        rk_op loss = {RK_OP_RUN, 0, g->loss, -1};
        rk_block_state_reset_peak(&st);
        double t0 = st.time;
        if ((r = rk_block_replay(g, &st, &loss, 1, where, err))) goto done;
        x->loss_peak = st.peak;
        x->loss_time = st.time - t0;
        rk_block_state_reset_peak(&st);
        t0 = st.time;
        if ((r = rk_block_replay(g, &st, opt->bwd, opt->n_bwd, where, err))) goto done;
        x->bwd_peak = st.peak;
        x->bwd_time = st.time - t0;
    }
    rk_block_state_free(&st);
    x->bwd_peak_drop = x->bwd_peak;
    if (oi > 0) { /* the bwd again, dropping the input after its last real use */
        rk_op *dv;
        int dn;
        if ((r = dp_bwd_drop_input(g, opt, &dv, &dn, err))) return r;
        /* forgotten before any bwd op: the bwd reads the input for its shape
         * only (in_unread), and then runs with it absent from the start */
        x->in_unread = dv && dn > 0 && dv[0].kind == RK_OP_FORGET && dv[0].node == g->inputs[0];
        int have = dv != NULL;
        free(dv);
        if (x->in_unread) {
            if ((r = measure_bwd(g, opt, 2, 0, where, &x->bwd_peak_drop, err))) return r;
        } else if (have) {
            int64_t pk;
            if ((r = measure_bwd(g, opt, 1, 0, where, &pk, err))) return r;
            if (pk < x->bwd_peak) x->bwd_peak_drop = pk;
        }
        /* the output read for its shape only (out_unread) */
        x->out_unread = !is_input(g, g->output) && !bwd_reads(g, opt, g->output);
        if (x->out_unread) {
            if ((r = measure_bwd(g, opt, 0, 1, where, &x->bwd_peak_noout, err))) return r;
            x->bwd_peak_drop_noout = x->bwd_peak_noout;
            if (x->in_unread) r = measure_bwd(g, opt, 2, 1, where, &x->bwd_peak_drop_noout, err);
            else if (x->bwd_peak_drop < x->bwd_peak) r = measure_bwd(g, opt, 1, 1, where, &x->bwd_peak_drop_noout, err);
            if (r) return r;
            if (x->bwd_peak_drop_noout > x->bwd_peak_noout) x->bwd_peak_drop_noout = x->bwd_peak_noout;
            if (x->bwd_peak_drop_noout <= 0) x->out_unread = 0; /* nothing held at all: nothing to gain */
        }
        if (x->bwd_peak_drop <= 0) x->in_unread = 0;
    }
    /* forward again with the output already in memory */
    if (rk_block_state_init(&st, g)) return rk_fail(err, RK_ENOMEM, "out of memory");
    if (!st.present[g->output]) {
        st.present[g->output] = 1;
        st.live += g->d[g->output].size;
        st.contrib[g->output] = 1;
        rk_block_state_reset_peak(&st);
    }
    if ((r = rk_block_replay(g, &st, opt->fwd, opt->n_fwd, where, err))) goto done;
    x->fwd_peak_re = st.peak;
done:
    rk_block_state_free(&st);
    return r;
}

rk_status rk_dp_costs_build(const rk_chain *ch, const rk_dp_options *o, rk_dp_costs *c, rk_error *err) {
    memset(c, 0, sizeof *c);
    rk_status r = rk_chain_validate(ch, "chain", err);
    if (r) return r;
    if (o->n_classes != ch->n_classes)
        return rk_fail(err, RK_EINPUT, "options are given for %d classes; the chain has %d", o->n_classes,
                       ch->n_classes);
    int *nopt = malloc((size_t)ch->n_classes * sizeof *nopt);
    if (!nopt) return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int k = 0; k < ch->n_classes; k++) nopt[k] = o->classes[k].n_options;
    for (int k = 0; k < ch->n_classes; k++)
        if (nopt[k] < 2) {
            free(nopt);
            return rk_fail(err, RK_EINPUT, "class %d has %d options; it needs option 0 (none) and at least one with a backward",
                            k, o->classes[k].n_options);
        }
    r = rk_dp_costs_alloc(c, ch->n_classes, nopt, ch->n_blocks);
    free(nopt);
    if (r) return rk_fail(err, r, "out of memory");
    for (int b = 0; b < ch->n_blocks; b++) c->block_class[b] = ch->blocks[b].cls;
    for (int k = 0; k < ch->n_classes && !r; k++) {
        const rk_graph *g = &ch->classes[k];
        rk_dp_class_cost *cc = &c->classes[k];
        cc->keep_all = o->classes[k].keep_all;
        cc->input_size = 0;
        for (int i = 0; i < g->n_inputs; i++) cc->input_size += g->d[g->inputs[i]].size;
        cc->output_size = g->d[g->output].size;
        cc->output_grad_size = g->d[g->output_grad].size;
        /* every option's forward computes the output (rk_option's contract),
         * in place when it is there: freeing it until then costs no time */
        cc->out_rebuilt = !is_input(g, g->output);
        for (int i = 0; i < cc->n_options && !r; i++)
            r = measure_option(g, k, i, &o->classes[k].options[i], &cc->opt[i], err);
    }
    if (!r) r = rk_dp_costs_check(c, err);
    if (r) rk_dp_costs_free(c);
    return r;
}
