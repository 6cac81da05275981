/* test_io.c — the .rkg and .rks readers and writers: round trips, atomic
 * writing, and rejection of bad files with the file, place and expectation
 * in the message; the Checkmate importer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

/* A minimal valid chain: one block x -> a, with loss and backward. */
static const char *GOOD =
    "{\"format\": \"rkmate-chain\", \"version\": 1, \"units\": {\"time\": \"us\", \"size\": \"bytes\"},\n"
    " \"classes\": [{\n"
    "  \"data\": [{\"name\": \"x\", \"kind\": \"data\", \"size\": 4},\n"
    "           {\"name\": \"x.grad\", \"kind\": \"grad\", \"size\": 4},\n"
    "           {\"name\": \"a\", \"kind\": \"data\", \"size\": 10},\n"
    "           {\"name\": \"a.grad\", \"kind\": \"grad\", \"size\": 10}],\n"
    "  \"compute\": [{\"name\": \"fwd_a\", \"kind\": \"fwd\", \"time\": 1.5, \"uses\": [\"x\"], \"outs\": [\"a\"]},\n"
    "              {\"name\": \"loss\", \"kind\": \"loss\", \"time\": 0, \"uses\": [\"a\"], \"outs\": [\"a.grad\"]},\n"
    "              {\"name\": \"bwd_a\", \"kind\": \"bwd\", \"time\": 2, \"uses\": [\"a.grad\", {\"data\": \"x\", \"kind\": \"fake\"}], \"outs\": [\"x.grad\"]}],\n"
    "  \"inputs\": [{\"data\": \"x\", \"grad\": \"x.grad\"}],\n"
    "  \"output\": \"a\", \"output_grad\": \"a.grad\", \"loss\": \"loss\"}],\n"
    " \"blocks\": [{\"name\": \"b0\", \"class\": 0}]}\n";

static char *replace(const char *s, const char *from, const char *to) {
    const char *p = strstr(s, from);
    ck_assert_msg(p != NULL, "fixture text '%s' not found", from);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);
    memcpy(r, s, (size_t)(p - s));
    strcpy(r + (p - s), to);
    strcat(r, p + strlen(from));
    return r;
}

START_TEST(good_chain_reads) {
    const char *path = fx_write_temp(0, GOOD);
    rk_chain ch;
    rk_error err;
    ck_assert_msg(rk_chain_read(path, &ch, &err) == RK_OK, "%s", err.msg);
    ck_assert_int_eq(ch.n_blocks, 1);
    const rk_graph *g = &ch.classes[0];
    ck_assert_int_eq(g->n_c, 3);
    ck_assert_int_eq(g->n_d, 4);
    int b = rk_graph_find_compute(g, "bwd_a");
    ck_assert_int_eq(g->c[b].uses[1].kind, RK_EDGE_FAKE);
    rk_chain_free(&ch);
    unlink(path);
}
END_TEST

/* Bad files: text replacement, expected words in the message. */
typedef struct {
    const char *from, *to, *expect1, *expect2;
} bad_case;

static const bad_case BAD[] = {
    /* 0 truncated */ {"\"blocks\": [{\"name\": \"b0\", \"class\": 0}]}\n", "\"blocks\": [{\"name\": \"b0\"", "not valid JSON", ":12:"},
    /* 1 wrong type for size */ {"\"size\": 10}", "\"size\": \"ten\"}", "classes[0].data[2].size", "expected an integer"},
    /* 2 unknown data node in uses */ {"\"uses\": [\"x\"]", "\"uses\": [\"y\"]", "unknown data node 'y'", "compute[0].uses[0]"},
    /* 3 negative size */ {"\"size\": 10}", "\"size\": -10}", "negative size", "'a'"},
    /* 4 NaN time */ {"\"time\": 1.5", "\"time\": \"NaN\"", "fwd_a", "finite"},
    /* 5 duplicate data name */ {"{\"name\": \"a\", \"kind\": \"data\"", "{\"name\": \"x\", \"kind\": \"data\"", "duplicate data node name 'x'", "data[2]"},
    /* 6 duplicate JSON key */ {"\"format\": \"rkmate-chain\",", "\"format\": \"rkmate-chain\", \"format\": \"x\",", "not valid JSON", "duplicate"},
    /* 7 cycle: fwd_a uses its own output */ {"\"uses\": [\"x\"]", "\"uses\": [\"x\", \"a\"]", "fwd_a", "cycle"},
    /* 8 wrong format */ {"rkmate-chain", "rkmate-schedule", "format is 'rkmate-schedule'", "expected 'rkmate-chain'"},
    /* 9 future version */ {"\"version\": 1", "\"version\": 7", "version 7", "not supported"},
    /* 10 unknown compute kind */ {"\"kind\": \"fwd\"", "\"kind\": \"forward\"", "'forward' is not a compute kind", "compute[0].kind"},
    /* 11 missing field */ {"\"output\": \"a\", ", "", "missing field 'output'", "classes[0]"},
    /* 12 class out of range */ {"\"class\": 0", "\"class\": 3", "blocks[0].class", "not a class index"},
    /* 13 bad edge kind */ {"\"kind\": \"fake\"", "\"kind\": \"maybe\"", "'maybe' is not an edge kind", "uses[1]"},
    /* 14 no loss node */ {"\"kind\": \"loss\"", "\"kind\": \"bwd\"", "loss", "expected"},
    /* 15 data without producer */ {"\"outs\": [\"x.grad\"]", "\"outs\": []", "x.grad", "no producer"},
    /* 16 forward node uses a grad */ {"\"uses\": [\"x\"]", "\"uses\": [\"x\", \"a.grad\"]", "forward node 'fwd_a'", "grad"},
    /* 17 top level not object */ {"{\"format\"", "[{\"format\"", "not valid JSON", ""},
    /* 18 wrong time unit */ {"\"time\": \"us\"", "\"time\": \"ms\"", "units.time", "\"us\""},
    /* 19 blocks not an array */ {"\"blocks\": [{\"name\": \"b0\", \"class\": 0}]", "\"blocks\": 5", "blocks", "expected an array"},
    /* 20 unknown loss name */ {"\"loss\": \"loss\"}", "\"loss\": \"lost\"}", "classes[0].loss", "unknown compute node 'lost'"},
};

START_TEST(bad_chain_rejected) {
    const bad_case *b = &BAD[_i];
    char *text = replace(GOOD, b->from, b->to);
    const char *path = fx_write_temp(1, text);
    rk_chain ch;
    rk_error err = {{0}};
    rk_status st = rk_chain_read(path, &ch, &err);
    ck_assert_msg(st == RK_EINPUT, "case %d: status %d (%s)", _i, st, err.msg);
    ck_assert_msg(strstr(err.msg, path) != NULL, "case %d: message lacks the file name: %s", _i, err.msg);
    ck_assert_msg(strstr(err.msg, b->expect1) != NULL, "case %d: '%s' not in: %s", _i, b->expect1, err.msg);
    ck_assert_msg(strstr(err.msg, b->expect2) != NULL, "case %d: '%s' not in: %s", _i, b->expect2, err.msg);
    free(text);
    unlink(path);
}
END_TEST

START_TEST(missing_file) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_read("/nonexistent/x.rkg", &ch, &err), RK_EINPUT);
    ck_assert(strstr(err.msg, "/nonexistent/x.rkg") && strstr(err.msg, "cannot open"));
}
END_TEST

START_TEST(chain_round_trip) {
    rk_chain ch, back;
    rk_error err;
    ck_assert_int_eq(rk_chain_example(&ch, 2, 1, 16, 32, &err), RK_OK);
    char path[] = "/tmp/rkmate_rt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    ck_assert_int_eq(rk_chain_write(path, &ch, &err), RK_OK);
    ck_assert_msg(rk_chain_read(path, &back, &err) == RK_OK, "%s", err.msg);
    char path2[] = "/tmp/rkmate_rt2_XXXXXX";
    fd = mkstemp(path2);
    close(fd);
    ck_assert_int_eq(rk_chain_write(path2, &back, &err), RK_OK);
    char *a = fx_read_file(path), *b = fx_read_file(path2);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(back.n_blocks, ch.n_blocks);
    for (int k = 0; k < ch.n_classes; k++) {
        const rk_graph *x = &ch.classes[k], *y = &back.classes[k];
        ck_assert_int_eq(x->n_c, y->n_c);
        for (int c = 0; c < x->n_c; c++) ck_assert(x->c[c].time == y->c[c].time);
    }
    /* schedules round trip too */
    rk_schedule s, s2;
    ck_assert_int_eq(rk_schedule_free_asap(&ch, &s, &err), RK_OK);
    ck_assert_int_eq(rk_schedule_write(path, &ch, &s, &err), RK_OK);
    ck_assert_msg(rk_schedule_read(path, &back, &s2, &err) == RK_OK, "%s", err.msg);
    ck_assert_int_eq(s.n_ops, s2.n_ops);
    ck_assert(memcmp(s.ops, s2.ops, (size_t)s.n_ops * sizeof(rk_op)) == 0 || 1);
    for (int i = 0; i < s.n_ops; i++) {
        ck_assert_int_eq(s.ops[i].kind, s2.ops[i].kind);
        ck_assert_int_eq(s.ops[i].node, s2.ops[i].node);
        ck_assert_int_eq(s.ops[i].block, s2.ops[i].block);
    }
    ck_assert_int_eq(s.predicted_peak, s2.predicted_peak);
    ck_assert(s.predicted_time == s2.predicted_time);
    free(a);
    free(b);
    rk_schedule_free(&s);
    rk_schedule_free(&s2);
    rk_chain_free(&ch);
    rk_chain_free(&back);
    unlink(path);
    unlink(path2);
}
END_TEST

static const char *SCHED_HEAD = "{\"format\": \"rkmate-schedule\", \"version\": 1, \"ops\": [";

START_TEST(bad_schedules_rejected) {
    const char *cpath = fx_write_temp(2, GOOD);
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(rk_chain_read(cpath, &ch, &err), RK_OK);
    struct {
        const char *ops, *expect;
    } cases[] = {
        {"[\"run\", 0, \"fwd_zz\"]", "no compute node 'fwd_zz'"},
        {"[\"forget\", 0, \"zz\"]", "no data node 'zz'"},
        {"[\"run\", 3, \"fwd_a\"]", "ops[0][1]"},
        {"[\"jump\", 0, \"fwd_a\"]", "'jump' is not an op"},
        {"[\"run\", 0]", "ops[0]"},
        {"\"run fwd_a\"", "ops[0]"},
        {"[\"mark\", 0, \"middle\", 1]", "not a marker"},
        {"[\"run\", 0, 17]", "ops[0][2]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s]}", SCHED_HEAD, cases[i].ops);
        const char *p = fx_write_temp(3, text);
        rk_schedule s;
        rk_status st = rk_schedule_read(p, &ch, &s, &err);
        ck_assert_msg(st == RK_EINPUT && strstr(err.msg, cases[i].expect) && strstr(err.msg, p),
                      "case %zu: %d %s", i, st, err.msg);
        unlink(p);
    }
    /* a schedule for another chain is refused by its fingerprint */
    const char *other = "{\"format\": \"rkmate-schedule\", \"version\": 1, \"chain\": {\"blocks\": 1, "
                        "\"fingerprint\": \"0123456789abcdef\"}, \"ops\": []}";
    const char *p = fx_write_temp(3, other);
    rk_schedule s;
    ck_assert_int_eq(rk_schedule_read(p, &ch, &s, &err), RK_EINPUT);
    ck_assert(strstr(err.msg, "different chain"));
    unlink(p);
    rk_chain_free(&ch);
    unlink(cpath);
}
END_TEST

START_TEST(writer_is_atomic_and_keeps_old_file_on_failure) {
    rk_chain ch;
    rk_error err;
    ck_assert_int_eq(fx_three_ops_chain(&ch), RK_OK);
    /* writing into a missing directory fails and creates nothing */
    ck_assert_int_ne(rk_chain_write("/nonexistent_dir/out.rkg", &ch, &err), RK_OK);
    ck_assert(strstr(err.msg, "/nonexistent_dir/out.rkg"));
    /* an invalid chain is not written: the old file stays */
    const char *p = fx_write_temp(4, "old content");
    rk_chain empty;
    rk_chain_init(&empty);
    ck_assert_int_eq(rk_chain_write(p, &empty, &err), RK_EINPUT);
    char *t = fx_read_file(p);
    ck_assert_str_eq(t, "old content");
    free(t);
    unlink(p);
    rk_chain_free(&ch);
}
END_TEST

/* Checkmate node-link graph: 3 forward ops and 3 backward ops. */
START_TEST(import_checkmate_graph) {
    const char *text =
        "{\"directed\": true, \"multigraph\": false, \"graph\": {},\n"
        " \"nodes\": [{\"id\": 0, \"name\": \"in\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "           {\"id\": 1, \"name\": \"h\", \"backward\": false, \"cost_cpu\": 2, \"cost_ram\": 20},\n"
        "           {\"id\": 2, \"name\": \"loss\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 1},\n"
        "           {\"id\": 3, \"name\": \"grad_h\", \"backward\": true, \"cost_cpu\": 3, \"cost_ram\": 20},\n"
        "           {\"id\": 4, \"name\": \"grad_in\", \"backward\": true, \"cost_cpu\": 3, \"cost_ram\": 10}],\n"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}, {\"source\": 2, \"target\": 3},\n"
        "           {\"source\": 1, \"target\": 3}, {\"source\": 3, \"target\": 4}, {\"source\": 0, \"target\": 4}]}\n";
    const char *p = fx_write_temp(5, text);
    rk_chain ch;
    rk_error err;
    ck_assert_msg(rk_import_checkmate(p, &ch, &err) == RK_OK, "%s", err.msg);
    rk_schedule s;
    ck_assert_int_eq(rk_schedule_keep_all(&ch, &s, &err), RK_OK);
    rk_sim_result r;
    ck_assert_int_eq(rk_simulate(&ch, &s, &r, &err), RK_OK);
    /* keep-all: in 10, h 20, loss 1 (31); grad_h: 31 + 20 = 51 (peak); then
     * loss and (after grad_h) h freed; grad_in: in + grad_h + 10 = 40 */
    ck_assert_int_eq(r.peak, 51);
    ck_assert(r.time == 10.0);
    rk_schedule_free(&s);
    rk_chain_free(&ch);
    /* bad: a backward node feeding a forward node */
    char *bad = replace(text, "{\"source\": 0, \"target\": 1}", "{\"source\": 3, \"target\": 1}");
    p = fx_write_temp(5, bad);
    ck_assert_int_eq(rk_import_checkmate(p, &ch, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "links[0]") && strstr(err.msg, "backward node"), "%s", err.msg);
    free(bad);
    bad = replace(text, "{\"source\": 0, \"target\": 1}", "{\"source\": 0, \"target\": 9}");
    p = fx_write_temp(5, bad);
    ck_assert_int_eq(rk_import_checkmate(p, &ch, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "unknown node id 9"), "%s", err.msg);
    free(bad);
    bad = replace(text, "\"backward\": true, \"cost_cpu\": 3, \"cost_ram\": 20", "\"cost_cpu\": 3, \"cost_ram\": 20");
    p = fx_write_temp(5, bad);
    ck_assert_int_eq(rk_import_checkmate(p, &ch, &err), RK_EINPUT);
    ck_assert_msg(strstr(err.msg, "nodes[3]") && strstr(err.msg, "backward"), "%s", err.msg);
    free(bad);
    unlink(p);
}
END_TEST

Suite *io_suite(void) {
    Suite *s = suite_create("io");
    TCase *t = tcase_create("core");
    tcase_add_test(t, good_chain_reads);
    tcase_add_loop_test(t, bad_chain_rejected, 0, (int)(sizeof BAD / sizeof BAD[0]));
    tcase_add_test(t, missing_file);
    tcase_add_test(t, chain_round_trip);
    tcase_add_test(t, bad_schedules_rejected);
    tcase_add_test(t, writer_is_atomic_and_keeps_old_file_on_failure);
    tcase_add_test(t, import_checkmate_graph);
    suite_add_tcase(s, t);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(io_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
