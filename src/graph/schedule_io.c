/* schedule_io.c — the schedule file (.rks): versioned JSON with one op per
 * line, resolved against the chain it was made for (format in
 * docs/formats.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"

#define RKS_FORMAT "rkmate-schedule"
#define RKS_VERSION 1

static const char *mark_names[] = {"fwd_begin", "fwd_end", "bwd_begin", "bwd_end"};

/* A fingerprint of the chain's structure, so a schedule is not replayed on
 * a chain it was not made for: FNV-1a over block classes, node names, kinds
 * and edges (not over times and sizes, which re-measuring changes). */
static unsigned long long chain_fingerprint(const rk_chain *ch) {
    unsigned long long h = 1469598103934665603ULL;
#define MIX(x)                                                                                                         \
    do {                                                                                                               \
        h ^= (unsigned long long)(x);                                                                                  \
        h *= 1099511628211ULL;                                                                                         \
    } while (0)
#define MIXS(s)                                                                                                        \
    do {                                                                                                               \
        for (const char *p_ = (s); *p_; p_++) MIX((unsigned char)*p_);                                                  \
        MIX(0);                                                                                                        \
    } while (0)
    MIX(ch->n_blocks);
    for (int k = 0; k < ch->n_blocks; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        MIX(g->n_c);
        MIX(g->n_d);
        for (int c = 0; c < g->n_c; c++) {
            MIXS(g->c[c].name);
            MIX(g->c[c].kind);
        }
        for (int d = 0; d < g->n_d; d++) MIXS(g->d[d].name);
    }
#undef MIX
#undef MIXS
    return h;
}

rk_status rk_schedule_read(const char *path, const rk_chain *ch, rk_schedule *s, rk_error *err) {
    rk_schedule_init(s);
    json_t *root;
    rk_status r = rkj_load(path, &root, err);
    if (r) return r;
    rkj_names *cn = NULL, *dn = NULL;
    if (!json_is_object(root)) {
        r = rk_fail(err, RK_EINPUT, "%s: expected a JSON object at the top level, got %s", path, rkj_type_name(root));
        goto out;
    }
    const char *fmt = NULL, *algo = NULL, *fp = NULL;
    int64_t ver = 0, nblocks = -1;
    if ((r = rkj_string(path, "(top)", root, "format", 1, &fmt, err))) goto out;
    if (strcmp(fmt, RKS_FORMAT)) {
        r = rk_fail(err, RK_EINPUT, "%s: format is '%s'; expected '%s'", path, fmt, RKS_FORMAT);
        goto out;
    }
    if ((r = rkj_int64(path, "(top)", root, "version", 1, &ver, err))) goto out;
    if (ver != RKS_VERSION) {
        r = rk_fail(err, RK_EINPUT, "%s: version %lld is not supported (this rkmate reads version %d)", path,
                    (long long)ver, RKS_VERSION);
        goto out;
    }
    json_t *jch = NULL, *ops = NULL;
    if ((r = rkj_object(path, "(top)", root, "chain", 0, &jch, err))) goto out;
    if (jch) {
        if ((r = rkj_int64(path, "chain", jch, "blocks", 0, &nblocks, err))) goto out;
        if ((r = rkj_string(path, "chain", jch, "fingerprint", 0, &fp, err))) goto out;
        if (nblocks >= 0 && nblocks != ch->n_blocks) {
            r = rk_fail(err, RK_EINPUT, "%s: the schedule was made for a chain of %lld blocks; this chain has %d", path,
                        (long long)nblocks, ch->n_blocks);
            goto out;
        }
        if (fp) {
            char mine[32];
            snprintf(mine, sizeof mine, "%016llx", chain_fingerprint(ch));
            if (strcmp(fp, mine)) {
                r = rk_fail(err, RK_EINPUT,
                            "%s: the schedule was made for a different chain (fingerprint %s, this chain's is %s)",
                            path, fp, mine);
                goto out;
            }
        }
    }
    if ((r = rkj_string(path, "(top)", root, "algo", 0, &algo, err))) goto out;
    if ((r = rkj_int64(path, "(top)", root, "budget", 0, &s->budget, err))) goto out;
    if ((r = rkj_int64(path, "(top)", root, "predicted_peak", 0, &s->predicted_peak, err))) goto out;
    if ((r = rkj_double(path, "(top)", root, "predicted_time", 0, &s->predicted_time, err))) goto out;
    if ((r = rkj_array(path, "(top)", root, "ops", 1, &ops, err))) goto out;
    rk_schedule_set_algo(s, algo);
    cn = calloc((size_t)ch->n_classes + 1, sizeof *cn);
    dn = calloc((size_t)ch->n_classes + 1, sizeof *dn);
    if (!cn || !dn) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < ch->n_classes; i++) {
        const rk_graph *g = &ch->classes[i];
        if (rkj_names_init(&cn[i], g->n_c) || rkj_names_init(&dn[i], g->n_d)) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
        for (int c = 0; c < g->n_c; c++) rkj_names_put(&cn[i], g->c[c].name, c, NULL);
        for (int d = 0; d < g->n_d; d++) rkj_names_put(&dn[i], g->d[d].name, d, NULL);
    }
    size_t i;
    json_t *v;
    json_array_foreach(ops, i, v) {
        size_t n = json_is_array(v) ? json_array_size(v) : 0;
        if (n < 3) {
            r = rk_fail(err, RK_EINPUT,
                        "%s: ops[%zu]: expected [\"run\"|\"forget\", BLOCK, NAME] or [\"mark\", BLOCK, KIND, OPTION], got %s",
                        path, i, json_is_array(v) ? "a short array" : rkj_type_name(v));
            goto out;
        }
        json_t *jk = json_array_get(v, 0), *jb = json_array_get(v, 1), *jn = json_array_get(v, 2);
        if (!json_is_string(jk)) {
            r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][0]: expected \"run\", \"forget\" or \"mark\", got %s", path, i,
                        rkj_type_name(jk));
            goto out;
        }
        if (!json_is_integer(jb) || json_integer_value(jb) < 0 || json_integer_value(jb) >= ch->n_blocks) {
            r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][1]: expected a block index in [0, %d), got %s", path, i,
                        ch->n_blocks, json_is_integer(jb) ? "an integer out of range" : rkj_type_name(jb));
            goto out;
        }
        int b = (int)json_integer_value(jb), cls = ch->blocks[b].cls;
        const char *k = json_string_value(jk);
        if (!json_is_string(jn)) {
            r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][2]: expected a node name (string), got %s", path, i,
                        rkj_type_name(jn));
            goto out;
        }
        const char *name = json_string_value(jn);
        if (!strcmp(k, "run")) {
            int c = rkj_names_get(&cn[cls], name);
            if (c < 0) {
                r = rk_fail(err, RK_EINPUT, "%s: ops[%zu]: block %d has no compute node '%s'", path, i, b, name);
                goto out;
            }
            if (rk_schedule_push(s, RK_OP_RUN, b, c, -1)) goto oom;
        } else if (!strcmp(k, "forget")) {
            int d = rkj_names_get(&dn[cls], name);
            if (d < 0) {
                r = rk_fail(err, RK_EINPUT, "%s: ops[%zu]: block %d has no data node '%s'", path, i, b, name);
                goto out;
            }
            if (rk_schedule_push(s, RK_OP_FORGET, b, d, -1)) goto oom;
        } else if (!strcmp(k, "mark")) {
            int m = -1;
            for (int j = 0; j < 4; j++)
                if (!strcmp(name, mark_names[j])) m = j;
            if (m < 0) {
                r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][2]: '%s' is not a marker (expected fwd_begin, fwd_end, bwd_begin or bwd_end)",
                            path, i, name);
                goto out;
            }
            json_t *jo = json_array_get(v, 3);
            int opt = -1;
            if (jo && !json_is_integer(jo)) {
                r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][3]: expected an option number, got %s", path, i,
                            rkj_type_name(jo));
                goto out;
            }
            if (jo) opt = (int)json_integer_value(jo);
            if (rk_schedule_push(s, RK_OP_MARK, b, m, opt)) goto oom;
        } else {
            r = rk_fail(err, RK_EINPUT, "%s: ops[%zu][0]: '%s' is not an op (expected run, forget or mark)", path, i, k);
            goto out;
        }
    }
    r = RK_OK;
    goto out;
oom:
    r = rk_fail(err, RK_ENOMEM, "out of memory");
out:
    if (cn)
        for (int c = 0; c < ch->n_classes; c++) rkj_names_free(&cn[c]);
    if (dn)
        for (int c = 0; c < ch->n_classes; c++) rkj_names_free(&dn[c]);
    free(cn);
    free(dn);
    json_decref(root);
    if (r) rk_schedule_free(s);
    return r;
}

rk_status rk_schedule_write(const char *path, const rk_chain *ch, const rk_schedule *s, rk_error *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return rk_fail(err, RK_ENOMEM, "out of memory");
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"units\": {\"time\": \"us\", \"size\": \"bytes\"},\n",
            RKS_FORMAT, RKS_VERSION);
    fprintf(f, "  \"chain\": {\"blocks\": %d, \"fingerprint\": \"%016llx\"},\n", ch->n_blocks, chain_fingerprint(ch));
    if (s->algo) {
        fputs("  \"algo\": ", f);
        rkj_write_string(f, s->algo);
        fputs(",\n", f);
    }
    fprintf(f, "  \"budget\": %lld,\n  \"predicted_peak\": %lld,\n  \"predicted_time\": ", (long long)s->budget,
            (long long)s->predicted_peak);
    rkj_write_double(f, s->predicted_time);
    fputs(",\n  \"ops\": [\n", f);
    for (int i = 0; i < s->n_ops; i++) {
        const rk_op *o = &s->ops[i];
        if (o->block < 0 || o->block >= ch->n_blocks) {
            fclose(f);
            free(buf);
            return rk_fail(err, RK_EFAIL, "schedule op %d refers to block %d of %d", i, o->block, ch->n_blocks);
        }
        const rk_graph *g = &ch->classes[ch->blocks[o->block].cls];
        if ((o->kind == RK_OP_RUN && (o->node < 0 || o->node >= g->n_c)) ||
            (o->kind == RK_OP_FORGET && (o->node < 0 || o->node >= g->n_d))) {
            fclose(f);
            free(buf);
            return rk_fail(err, RK_EFAIL, "schedule op %d refers to node #%d, not in block %d", i, o->node, o->block);
        }
        fputs("    [", f);
        if (o->kind == RK_OP_RUN) {
            fprintf(f, "\"run\", %d, ", o->block);
            rkj_write_string(f, g->c[o->node].name);
        } else if (o->kind == RK_OP_FORGET) {
            fprintf(f, "\"forget\", %d, ", o->block);
            rkj_write_string(f, g->d[o->node].name);
        } else {
            fprintf(f, "\"mark\", %d, \"%s\", %d", o->block, mark_names[o->node & 3], o->option);
        }
        fprintf(f, "]%s\n", i + 1 < s->n_ops ? "," : "");
    }
    fputs("  ]\n}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    rk_status r = rk_write_file_atomic(path, buf, len, err);
    free(buf);
    return r;
}
