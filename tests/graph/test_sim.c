/* test_sim.c — the simulator, options and baseline schedules on hand-built
 * graphs whose peaks and times are worked out by hand below. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"

static int C(const rk_graph *g, const char *n) { return rk_graph_find_compute(g, n); }
static int D(const rk_graph *g, const char *n) { return rk_graph_find_data(g, n); }

/* Hand accounting for fx_three_ops, free-asap (inputs x=4 kept):
 *  fwd_a  step 4+10=14            live 14
 *  fwd_b  step 14+20+5+7=46       live 39, forget a -> 29
 *  fwd_c  step 29+30=59           live 59, forget b -> 39
 *  loss   step 39+30=69           live 69
 *  bwd_c  step 69+20=89 (peak)    live 89, forget c, c.grad -> 29
 *  bwd_b  step 29+10=39           live 39, forget b.grad, b.phantom -> 14
 *  bwd_a  step 14+4=18            live 18, forget a.grad -> 8
 * time 1+3+5+0+6+4+2 = 21 */
START_TEST(free_asap_by_hand) {
    rk_chain ch;
    ck_assert_int_eq(fx_three_ops_chain(&ch), RK_OK);
    rk_schedule s;
    rk_error err;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 89);
    ck_assert(fabs(r.time - 21.0) < 1e-12);
    ck_assert(fabs(r.baseline_time - 21.0) < 1e-12);
    ck_assert(fabs(r.overhead) < 1e-12);
    ck_assert_int_eq(r.final_live, 8);
    const rk_graph *g = &ch.classes[0];
    ck_assert_int_eq(s.ops[r.peak_op].kind, RK_OP_RUN);
    ck_assert_int_eq(s.ops[r.peak_op].node, C(g, "bwd_c"));
    ck_assert_int_eq(s.predicted_peak, 89);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

/* keep-all: forward keeps everything (step at fwd_b 46, live 39; fwd_c 69;
 * loss 99 = peak); forgets of a, b after the loss -> 69; bwd_c 89 -> 29 ... */
START_TEST(keep_all_by_hand) {
    rk_chain ch;
    ck_assert_int_eq(fx_three_ops_chain(&ch), RK_OK);
    rk_schedule s;
    rk_error err;
    ck_assert_int_eq(rk_schedule_keep_all(&ch, &s, &err), RK_OK);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 99);
    ck_assert_int_eq(s.ops[r.peak_op].node, ch.classes[0].loss);
    ck_assert(fabs(r.time - 21.0) < 1e-12);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

/* Recompute a: forget a after fwd_b, then before bwd_b... bwd_b only needs
 * a's shape (fake edge), bwd_a needs x: a is never needed again. Instead
 * recompute b for bwd_c? bwd_c needs c (output) only.  So build a schedule
 * that recomputes c to check time and in-place semantics: */
START_TEST(recompute_time_and_memory) {
    rk_chain ch;
    ck_assert_int_eq(fx_three_ops_chain(&ch), RK_OK);
    const rk_graph *g = &ch.classes[0];
    rk_schedule s;
    rk_schedule_init(&s);
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "fwd_a"), -1);    /* 14 */
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "fwd_b"), -1);    /* 46, live 39 */
    rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, "a"), -1);     /* 29 */
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "fwd_c"), -1);    /* 59, live 59 */
    rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, "c"), -1);     /* 29 */
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "fwd_c"), -1);    /* recompute: 59, +5us */
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "fwd_c"), -1);    /* already present: no new memory, +5us */
    rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, "b"), -1);     /* 39 */
    rk_schedule_push(&s, RK_OP_RUN, 0, g->loss, -1);          /* 69 */
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "bwd_c"), -1);    /* 89 */
    rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, "c"), -1);
    rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, "c.grad"), -1);
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "bwd_b"), -1);
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g, "bwd_a"), -1);
    rk_sim_result r;
    rk_error err;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 89);
    ck_assert(fabs(r.time - 31.0) < 1e-12);
    ck_assert(fabs(r.overhead - 10.0 / 21.0) < 1e-12);
    ck_assert_int_eq(r.n_runs, 9);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

/* A negative overhead: the node writes outputs in the place of inputs it
 * consumes.  It lowers a step only by the gradients the node alone produces
 * (rk_cnode_step_overhead), never a forward's step.  fx_three_ops, free-asap:
 *  bwd_c -25 (b.grad, 20 bytes, only bwd_c makes it): 69 + 20 - 20 = 69
 *  bwd_c -5: 69 + 20 - 5 = 84 (peak)
 *  fwd_b -50 (a forward: counted as 0): 14 + 20 + 5 = 39 instead of 46
 * With c reading a too (a.grad then has two producers, bwd_b and bwd_c),
 * bwd_c's negative overhead offsets only b.grad. */
START_TEST(negative_overhead_offsets_sole_gradients) {
    rk_chain ch;
    ck_assert_int_eq(fx_three_ops_chain(&ch), RK_OK);
    rk_graph *g = &ch.classes[0];
    int bc = C(g, "bwd_c"), fb = C(g, "fwd_b");
    rk_error err;
    rk_schedule s;
    rk_sim_result r;
    g->c[bc].overhead = -25;
    ck_assert_int_eq(rk_cnode_step_overhead(g, bc), -20);
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 69); /* the loss and bwd_c */
    rk_schedule_free(&s);
    g->c[bc].overhead = -5;
    ck_assert_int_eq(rk_cnode_step_overhead(g, bc), -5);
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 84);
    ck_assert_int_eq(s.ops[r.peak_op].node, bc);
    rk_schedule_free(&s);
    g->c[fb].overhead = -50;
    ck_assert_int_eq(rk_cnode_step_overhead(g, fb), 0);
    rk_block_state st;
    ck_assert_int_eq(rk_block_state_init(&st, g), RK_OK);
    rk_op fwd[] = {{RK_OP_RUN, 0, C(g, "fwd_a"), -1}, {RK_OP_RUN, 0, fb, -1}};
    ck_assert_int_eq(rk_block_replay(g, &st, fwd, 2, "test", &err), RK_OK);
    ck_assert_int_eq(st.peak, 39);
    rk_block_state_free(&st);
    rk_chain_free(&ch);

    /* a.grad made by bwd_b and bwd_c: bwd_c's -25 offsets b.grad (20) only */
    rk_op_spec ops[] = {
        {"a", 1, {-1}, 10, 0, 1, 2, 0, 0, 1, 0},
        {"b", 1, {0}, 20, 5, 3, 4, 7, 0, 0, 0},
        {"c", 2, {1, 0}, 30, 0, 5, 6, 0, -25, 3, 1},
    };
    rk_graph g2;
    ck_assert_int_eq(rk_graph_from_specs(&g2, 4, 1, ops, 3, &err), RK_OK);
    ck_assert_int_eq(rk_cnode_step_overhead(&g2, C(&g2, "bwd_c")), -20);
    g2.c[C(&g2, "bwd_c")].overhead = -5;
    ck_assert_int_eq(rk_cnode_step_overhead(&g2, C(&g2, "bwd_c")), -5);
    rk_graph_free(&g2);
}
END_TEST

/* Each refusal rule, with the op index and names in the message. */
static rk_status run_ops(const rk_chain *ch, const char *const *spec, int n, rk_error *err) {
    const rk_graph *g = &ch->classes[0];
    rk_schedule s;
    rk_schedule_init(&s);
    for (int i = 0; i < n; i++) {
        const char *x = spec[i];
        if (x[0] == '-') rk_schedule_push(&s, RK_OP_FORGET, 0, D(g, x + 1), -1);
        else rk_schedule_push(&s, RK_OP_RUN, 0, C(g, x), -1);
    }
    rk_sim_result r;
    rk_status st = rk_simulate(ch, &s, &r, err);
    rk_schedule_free(&s);
    return st;
}

START_TEST(refuses_missing_input) {
    rk_chain ch;
    fx_three_ops_chain(&ch);
    const char *ops[] = {"fwd_a", "-a", "fwd_b"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 3, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "op 2") && strstr(err.msg, "fwd_b") && strstr(err.msg, "'a'") &&
                      strstr(err.msg, "not in memory"),
                  "%s", err.msg);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(refuses_forget_absent) {
    rk_chain ch;
    fx_three_ops_chain(&ch);
    const char *ops[] = {"fwd_a", "-b"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 2, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "op 1") && strstr(err.msg, "forgets 'b'"), "%s", err.msg);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(refuses_incomplete_backward) {
    rk_chain ch;
    fx_three_ops_chain(&ch);
    const char *ops[] = {"fwd_a", "fwd_b", "fwd_c", "loss", "bwd_c", "bwd_b"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 6, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "bwd_a") && strstr(err.msg, "incomplete"), "%s", err.msg);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(refuses_backward_twice) {
    rk_chain ch;
    fx_three_ops_chain(&ch);
    const char *ops[] = {"fwd_a", "fwd_b", "fwd_c", "loss", "bwd_c", "bwd_c"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 6, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "op 5") && strstr(err.msg, "second time"), "%s", err.msg);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(refuses_backward_before_loss) {
    rk_chain ch;
    fx_three_ops_chain(&ch);
    const char *ops[] = {"fwd_a", "fwd_b", "fwd_c", "bwd_c"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 4, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "c.grad") && strstr(err.msg, "not in memory"), "%s", err.msg);
    rk_chain_free(&ch);
}
END_TEST

/* A grad with two producers: x used by two ops. */
static rk_status diamond_chain(rk_chain *ch) {
    rk_op_spec ops[] = {
        {"p", 1, {-1}, 8, 0, 1, 1, 0, 0, 1, 0},
        {"q", 1, {-1}, 8, 0, 1, 1, 0, 0, 1, 0},
        {"s", 2, {0, 1}, 8, 0, 1, 1, 0, 0, 0, 0},
    };
    rk_graph g;
    rk_error err;
    rk_chain_init(ch);
    rk_status r = rk_graph_from_specs(&g, 8, 1, ops, 3, &err);
    if (r) return r;
    rk_chain_add_class(ch, &g);
    rk_chain_add_block(ch, "d", 0);
    return rk_chain_validate(ch, "t", &err);
}

START_TEST(refuses_incomplete_grad) {
    rk_chain ch;
    ck_assert_int_eq(diamond_chain(&ch), RK_OK);
    const char *ops[] = {"fwd_p", "fwd_q", "fwd_s", "loss", "bwd_s", "bwd_q", "-input.grad"};
    rk_error err;
    ck_assert_int_eq(run_ops(&ch, ops, 7, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "input.grad") && strstr(err.msg, "contributions"), "%s", err.msg);
    /* the accumulation costs no new memory; free-asap by hand: x 8; p 16;
     * q 24; s 32, forget p, q -> 16; loss 24, forget s -> 16; bwd_s +p.grad
     * +q.grad = 32, forget s.grad -> 24; bwd_q +input.grad 32, forget q.grad
     * -> 24; bwd_p accumulates into input.grad: 24.  Peak 32. */
    rk_schedule s;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert_int_eq(r.peak, 32);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

/* Two blocks: the loss of block 0 does not exist at chain level. */
START_TEST(refuses_inner_loss) {
    rk_chain ch;
    rk_chain_init(&ch);
    rk_graph g;
    ck_assert_int_eq(fx_three_ops(&g), RK_OK);
    rk_chain_add_class(&ch, &g);
    rk_op_spec ops[] = {{"z", 1, {-1}, 30, 0, 1, 1, 0, 0, 1, 0}};
    rk_error err;
    ck_assert_int_eq(rk_graph_from_specs(&g, 30, 1, ops, 1, &err), RK_OK);
    rk_chain_add_class(&ch, &g);
    rk_chain_add_block(&ch, "first", 0);
    rk_chain_add_block(&ch, "second", 1);
    ck_assert_int_eq(rk_chain_validate(&ch, "t", &err), RK_OK);
    rk_schedule s;
    rk_schedule_init(&s);
    const rk_graph *g0 = &ch.classes[0];
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g0, "fwd_a"), -1);
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g0, "fwd_b"), -1);
    rk_schedule_push(&s, RK_OP_RUN, 0, C(g0, "fwd_c"), -1);
    rk_schedule_push(&s, RK_OP_RUN, 0, g0->loss, -1);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "only the last block's loss"), "%s", err.msg);
    rk_schedule_free(&s);
    /* and the two-block baselines are valid: block 1's input is block 0's c */
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    ck_assert(fabs(r.time - (21.0 + 2.0)) < 1e-12);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(options_contract) {
    rk_graph g;
    ck_assert_int_eq(fx_three_ops(&g), RK_OK);
    rk_option all, none, asap;
    rk_error err;
    ck_assert_int_eq(rk_option_keep_all(&g, &all, &err), RK_OK);
    ck_assert_int_eq(rk_option_none(&g, &none, &err), RK_OK);
    ck_assert_int_eq(rk_option_asap(&g, &asap, &err), RK_OK);
    /* keep-all fwd: 4 -> 14 -> 46 (39) -> 69; saved = a + b + b.phantom = 35 */
    ck_assert_int_eq(all.fwd_peak, 69);
    ck_assert_int_eq(all.saved, 35);
    ck_assert_int_eq(all.input_size, 4);
    ck_assert_int_eq(all.output_size, 30);
    ck_assert(fabs(all.fwd_time - 9) < 1e-12 && fabs(all.bwd_time - 12) < 1e-12);
    /* none: 14, 46 (live 39, forget a and b.phantom: 24), fwd_c 54 */
    ck_assert_int_eq(none.saved, 0);
    ck_assert_int_eq(none.n_bwd, 0);
    ck_assert_int_eq(none.fwd_peak, 54); /* fwd_c: x 4 + b 20 + c 30 */
    /* asap keeps what backward needs: b.phantom (5); a and b are fake deps */
    ck_assert_int_eq(asap.saved, 5);
    /* bwd of keep-all starts from 4+35+30+30 = 99, frees a and b first (fake
     * uses only) -> 69, bwd_c 89 */
    ck_assert_int_eq(all.bwd_peak, 99);
    ck_assert_int_eq(asap.bwd_peak, 89);
    /* contract violations are refused */
    rk_option bad;
    ck_assert_int_eq(rk_option_copy(&bad, &all), RK_OK);
    bad.n_bwd--; /* drop the last op: bwd ends with something extra or missing */
    ck_assert_int_eq(rk_option_evaluate(&g, &bad, &err), RK_EINPUT);
    rk_option_free(&bad);
    rk_option_free(&all);
    rk_option_free(&none);
    rk_option_free(&asap);
    rk_graph_free(&g);
}
END_TEST

/* A recurrent block without inner 1-separators: op 0 "m" (a memory, as an
 * encoder's outputs) read by every step; step i reads step i-1 and m, and
 * its backward reads both and its phantom. */
static rk_status fx_recurrent(rk_graph *g, int steps) {
    rk_op_spec *ops = calloc((size_t)steps + 1, sizeof *ops);
    static char names[64][16];
    if (!ops || steps > 63) return RK_ENOMEM;
    ops[0] = (rk_op_spec){"m", 1, {-1}, 100, 10, 2, 3, 0, 0, 1, 0};
    for (int i = 1; i <= steps; i++) {
        snprintf(names[i], sizeof names[i], "h%d", i);
        ops[i] = (rk_op_spec){names[i], 2, {i - 1, 0}, 50, 20, 1, 2, 0, 0, 3, 0};
    }
    rk_error err;
    rk_status r = rk_graph_from_specs(g, 8, 1, ops, steps + 1, &err);
    free(ops);
    return r;
}

/* Segmented options (option_segments.c): one segment is the asap option;
 * more segments keep less from the forward and hold less in the backward,
 * for more time (recomputation); lean ones keep less still; all pass
 * rk_option_evaluate's contract (checked inside). */
START_TEST(options_segments) {
    rk_graph g;
    ck_assert_int_eq(fx_recurrent(&g, 40), RK_OK);
    rk_error err;
    rk_option asap, one;
    ck_assert_int_eq(rk_option_asap(&g, &asap, &err), RK_OK);
    ck_assert_int_eq(rk_option_segments(&g, 1, 0, &one, &err), RK_OK);
    ck_assert_int_eq(one.saved, asap.saved);
    ck_assert_int_eq(one.fwd_peak, asap.fwd_peak);
    ck_assert_int_eq(one.bwd_peak, asap.bwd_peak);
    ck_assert(fabs(one.fwd_time + one.bwd_time - asap.fwd_time - asap.bwd_time) < 1e-9);
    double t_asap = asap.fwd_time + asap.bwd_time;
    int64_t prev_saved = asap.saved;
    static const int ks[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        rk_option o, l;
        ck_assert_msg(rk_option_segments(&g, ks[i], 0, &o, &err) == RK_OK, "%s", err.msg);
        ck_assert_msg(rk_option_segments(&g, ks[i], 1, &l, &err) == RK_OK, "%s", err.msg);
        ck_assert_msg(o.saved < prev_saved, "k=%d saved %lld, before %lld", ks[i], (long long)o.saved,
                      (long long)prev_saved);
        ck_assert(o.bwd_peak < asap.bwd_peak);
        ck_assert(o.fwd_time + o.bwd_time > t_asap);
        ck_assert(l.saved <= o.saved);
        ck_assert(l.fwd_time + l.bwd_time >= o.fwd_time + o.bwd_time);
        prev_saved = o.saved;
        rk_option_free(&o);
        rk_option_free(&l);
    }
    ck_assert_int_eq(rk_option_segments(&g, 0, 0, &one, &err), RK_EINPUT);
    rk_option_free(&asap);
    rk_graph_free(&g);
}
END_TEST

START_TEST(example_chain_baselines) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 4, 2, 64, 128, &err), RK_OK);
    ck_assert_int_eq(ch.n_blocks, 10);
    ck_assert_int_eq(ch.n_classes, 4);
    rk_schedule a, b;
    ck_assert_int_eq(rk_schedule_keep_all(&ch, &a, &err), RK_OK);
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &b, &err), RK_OK);
    ck_assert(a.predicted_peak > b.predicted_peak);
    ck_assert(fabs(a.predicted_time - b.predicted_time) < 1e-6 * a.predicted_time);
    ck_assert(fabs(a.predicted_time - rk_chain_baseline_time(&ch)) < 1e-6 * a.predicted_time);
    rk_schedule_free(&a);
    rk_schedule_free(&b);
    rk_chain_free(&ch);
}
END_TEST

START_TEST(units) {
    int64_t v;
    rk_error err;
    ck_assert_int_eq(rk_parse_bytes("800MB", &v, &err), RK_OK);
    ck_assert_int_eq(v, 800000000);
    ck_assert_int_eq(rk_parse_bytes("1.5GiB", &v, &err), RK_OK);
    ck_assert_int_eq(v, 1610612736);
    ck_assert_int_eq(rk_parse_bytes("12345", &v, &err), RK_OK);
    ck_assert_int_eq(v, 12345);
    ck_assert_int_eq(rk_parse_bytes("64k", &v, &err), RK_OK);
    ck_assert_int_eq(v, 64000);
    ck_assert_int_eq(rk_parse_bytes("2 KiB", &v, &err), RK_OK);
    ck_assert_int_eq(v, 2048);
    ck_assert_int_eq(rk_parse_bytes("-5MB", &v, &err), RK_EINPUT);
    ck_assert_int_eq(rk_parse_bytes("5 parsecs", &v, &err), RK_EINPUT);
    ck_assert(strstr(err.msg, "unknown unit"));
    ck_assert_int_eq(rk_parse_bytes("", &v, &err), RK_EINPUT);
    ck_assert_int_eq(rk_parse_bytes("1.5", &v, &err), RK_EINPUT);
}
END_TEST

Suite *sim_suite(void) {
    Suite *s = suite_create("simulator");
    TCase *t = tcase_create("core");
    tcase_add_test(t, free_asap_by_hand);
    tcase_add_test(t, keep_all_by_hand);
    tcase_add_test(t, recompute_time_and_memory);
    tcase_add_test(t, refuses_missing_input);
    tcase_add_test(t, refuses_forget_absent);
    tcase_add_test(t, refuses_incomplete_backward);
    tcase_add_test(t, refuses_backward_twice);
    tcase_add_test(t, refuses_backward_before_loss);
    tcase_add_test(t, refuses_incomplete_grad);
    tcase_add_test(t, refuses_inner_loss);
    tcase_add_test(t, options_contract);
    tcase_add_test(t, options_segments);
    tcase_add_test(t, example_chain_baselines);
    tcase_add_test(t, units);
    tcase_add_test(t, negative_overhead_offsets_sole_gradients);
    suite_add_tcase(s, t);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(sim_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
