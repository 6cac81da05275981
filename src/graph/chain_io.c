/* chain_io.c — the chain file (.rkg): versioned JSON reader with precise
 * messages and an atomic writer (format in docs/formats.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"

#define RKG_FORMAT "rkmate-chain"
#define RKG_VERSION 1

static int parse_ckind(const char *s, rk_ckind *k) {
    if (!strcmp(s, "fwd")) *k = RK_C_FWD;
    else if (!strcmp(s, "bwd")) *k = RK_C_BWD;
    else if (!strcmp(s, "loss")) *k = RK_C_LOSS;
    else return -1;
    return 0;
}
static int parse_dkind(const char *s, rk_dkind *k) {
    if (!strcmp(s, "data")) *k = RK_D_DATA;
    else if (!strcmp(s, "grad")) *k = RK_D_GRAD;
    else if (!strcmp(s, "phantom")) *k = RK_D_PHANTOM;
    else return -1;
    return 0;
}
static int parse_ekind(const char *s, rk_edge_kind *k) {
    if (!strcmp(s, "real")) *k = RK_EDGE_REAL;
    else if (!strcmp(s, "fake")) *k = RK_EDGE_FAKE;
    else if (!strcmp(s, "global")) *k = RK_EDGE_GLOBAL;
    else return -1;
    return 0;
}

static rk_status data_ref(const char *file, const char *path, json_t *v, const rkj_names *names, int *out,
                          rk_error *err) {
    if (!json_is_string(v))
        return rk_fail(err, RK_EINPUT, "%s: %s: expected a data node name (string), got %s", file, path,
                       rkj_type_name(v));
    int d = rkj_names_get(names, json_string_value(v));
    if (d < 0)
        return rk_fail(err, RK_EINPUT, "%s: %s: unknown data node '%s'", file, path, json_string_value(v));
    *out = d;
    return RK_OK;
}

static rk_status read_class(const char *file, const char *cpath, json_t *jc, rk_graph *g, rk_error *err) {
    rk_status r;
    char path[256];
    json_t *jd = NULL, *jcn = NULL, *jin = NULL;
    if (!json_is_object(jc))
        return rk_fail(err, RK_EINPUT, "%s: %s: expected an object (a block class), got %s", file, cpath,
                       rkj_type_name(jc));
    if ((r = rkj_array(file, cpath, jc, "data", 1, &jd, err))) return r;
    if ((r = rkj_array(file, cpath, jc, "compute", 1, &jcn, err))) return r;
    if ((r = rkj_array(file, cpath, jc, "inputs", 1, &jin, err))) return r;
    rkj_names dn = {0}, cn = {0};
    if (rkj_names_init(&dn, (int)json_array_size(jd)) || rkj_names_init(&cn, (int)json_array_size(jcn))) {
        rkj_names_free(&dn);
        rkj_names_free(&cn);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    size_t i;
    json_t *v;
    json_array_foreach(jd, i, v) {
        snprintf(path, sizeof path, "%s.data[%zu]", cpath, i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object (a data node), got %s", file, path, rkj_type_name(v));
            goto out;
        }
        const char *name = NULL, *kind = NULL, *target = NULL;
        int64_t size = 0;
        if ((r = rkj_string(file, path, v, "name", 1, &name, err))) goto out;
        if ((r = rkj_string(file, path, v, "kind", 1, &kind, err))) goto out;
        if ((r = rkj_int64(file, path, v, "size", 1, &size, err))) goto out;
        if ((r = rkj_string(file, path, v, "target", 0, &target, err))) goto out;
        rk_dkind k;
        if (parse_dkind(kind, &k)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.kind: '%s' is not a data kind (expected data, grad or phantom)", file,
                        path, kind);
            goto out;
        }
        if (size < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s (data node '%s'): negative size %lld; expected bytes >= 0", file, path,
                        name, (long long)size);
            goto out;
        }
        int prev;
        if (rkj_names_put(&dn, name, (int)i, &prev)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: duplicate data node name '%s' (also %s.data[%d])", file, path, name,
                        cpath, prev);
            goto out;
        }
        int idx = rk_graph_add_data(g, name, k, size);
        if (idx < 0 || (target && rk_graph_set_target(g, 0, idx, target))) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
    }
    json_array_foreach(jcn, i, v) {
        snprintf(path, sizeof path, "%s.compute[%zu]", cpath, i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object (a compute node), got %s", file, path,
                        rkj_type_name(v));
            goto out;
        }
        const char *name = NULL, *kind = NULL, *target = NULL;
        double time = 0;
        int64_t overhead = 0, grad_accum = 0;
        json_t *ju = NULL, *jo = NULL;
        if ((r = rkj_string(file, path, v, "name", 1, &name, err))) goto out;
        if ((r = rkj_string(file, path, v, "kind", 1, &kind, err))) goto out;
        if ((r = rkj_double(file, path, v, "time", 1, &time, err))) goto out;
        if ((r = rkj_int64(file, path, v, "overhead", 0, &overhead, err))) goto out;
        if ((r = rkj_int64(file, path, v, "grad_accum", 0, &grad_accum, err))) goto out;
        if ((r = rkj_string(file, path, v, "target", 0, &target, err))) goto out;
        if ((r = rkj_array(file, path, v, "uses", 0, &ju, err))) goto out;
        if ((r = rkj_array(file, path, v, "outs", 0, &jo, err))) goto out;
        rk_ckind k;
        if (parse_ckind(kind, &k)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.kind: '%s' is not a compute kind (expected fwd, bwd or loss)", file,
                        path, kind);
            goto out;
        }
        if (!isfinite(time) || time < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s (compute node '%s'): time %g; expected a finite number >= 0", file,
                        path, name, time);
            goto out;
        }
        int prev;
        if (rkj_names_put(&cn, name, (int)i, &prev)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: duplicate compute node name '%s' (also %s.compute[%d])", file, path,
                        name, cpath, prev);
            goto out;
        }
        if (grad_accum < 0 || grad_accum > (overhead > 0 ? overhead : 0)) {
            r = rk_fail(err, RK_EINPUT,
                        "%s: %s (compute node '%s'): grad_accum %lld; expected bytes between 0 and the overhead (%lld)",
                        file, path, name, (long long)grad_accum, (long long)(overhead > 0 ? overhead : 0));
            goto out;
        }
        int c = rk_graph_add_compute(g, name, k, time, overhead);
        if (c < 0 || (target && rk_graph_set_target(g, 1, c, target))) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
        g->c[c].grad_accum = grad_accum;
        size_t j;
        json_t *u;
        char upath[300];
        if (ju) json_array_foreach(ju, j, u) {
                snprintf(upath, sizeof upath, "%s.uses[%zu]", path, j);
                rk_edge_kind ek = RK_EDGE_REAL;
                json_t *ref = u;
                if (json_is_object(u)) {
                    const char *eks = NULL;
                    ref = json_object_get(u, "data");
                    if (!ref) {
                        r = rk_fail(err, RK_EINPUT, "%s: %s: missing field 'data'", file, upath);
                        goto out;
                    }
                    if ((r = rkj_string(file, upath, u, "kind", 0, &eks, err))) goto out;
                    if (eks && parse_ekind(eks, &ek)) {
                        r = rk_fail(err, RK_EINPUT, "%s: %s.kind: '%s' is not an edge kind (expected real, fake or global)",
                                    file, upath, eks);
                        goto out;
                    }
                }
                int d = -1;
                if ((r = data_ref(file, upath, ref, &dn, &d, err))) goto out;
                if (rk_graph_add_use(g, c, d, ek)) {
                    r = rk_fail(err, RK_ENOMEM, "out of memory");
                    goto out;
                }
            }
        if (jo) json_array_foreach(jo, j, u) {
                snprintf(upath, sizeof upath, "%s.outs[%zu]", path, j);
                int d = -1;
                if ((r = data_ref(file, upath, u, &dn, &d, err))) goto out;
                if (rk_graph_add_out(g, c, d)) {
                    r = rk_fail(err, RK_ENOMEM, "out of memory");
                    goto out;
                }
            }
    }
    json_array_foreach(jin, i, v) {
        snprintf(path, sizeof path, "%s.inputs[%zu]", cpath, i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object {\"data\": NAME, \"grad\": NAME or null}, got %s",
                        file, path, rkj_type_name(v));
            goto out;
        }
        int d = -1, gr = -1;
        json_t *jdv = json_object_get(v, "data");
        if (!jdv) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: missing field 'data'", file, path);
            goto out;
        }
        if ((r = data_ref(file, path, jdv, &dn, &d, err))) goto out;
        json_t *jg = json_object_get(v, "grad");
        if (jg && !json_is_null(jg) && (r = data_ref(file, path, jg, &dn, &gr, err))) goto out;
        if (rk_graph_add_input(g, d, gr)) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
    }
    {
        const char *out = NULL, *outg = NULL, *loss = NULL;
        if ((r = rkj_string(file, cpath, jc, "output", 1, &out, err))) goto out;
        if ((r = rkj_string(file, cpath, jc, "output_grad", 1, &outg, err))) goto out;
        if ((r = rkj_string(file, cpath, jc, "loss", 1, &loss, err))) goto out;
        int o = rkj_names_get(&dn, out), og = rkj_names_get(&dn, outg), l = rkj_names_get(&cn, loss);
        if (o < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.output: unknown data node '%s'", file, cpath, out);
            goto out;
        }
        if (og < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.output_grad: unknown data node '%s'", file, cpath, outg);
            goto out;
        }
        if (l < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.loss: unknown compute node '%s'", file, cpath, loss);
            goto out;
        }
        rk_graph_set_output(g, o, og, l);
    }
    {
        char where[512];
        snprintf(where, sizeof where, "%s: %s", file, cpath);
        r = rk_graph_finalize(g, where, err);
    }
out:
    rkj_names_free(&dn);
    rkj_names_free(&cn);
    return r;
}

static rk_status check_header(const char *file, json_t *root, const char *format, int version, rk_error *err) {
    if (!json_is_object(root))
        return rk_fail(err, RK_EINPUT, "%s: expected a JSON object at the top level, got %s", file, rkj_type_name(root));
    const char *fmt = NULL;
    int64_t ver = 0;
    rk_status r;
    if ((r = rkj_string(file, "(top)", root, "format", 1, &fmt, err))) return r;
    if (strcmp(fmt, format))
        return rk_fail(err, RK_EINPUT, "%s: format is '%s'; expected '%s'", file, fmt, format);
    if ((r = rkj_int64(file, "(top)", root, "version", 1, &ver, err))) return r;
    if (ver != version)
        return rk_fail(err, RK_EINPUT, "%s: version %lld is not supported (this rkmate reads version %d)", file,
                       (long long)ver, version);
    json_t *units = NULL;
    if ((r = rkj_object(file, "(top)", root, "units", 0, &units, err))) return r;
    if (units) {
        const char *ts = "us", *ss = "bytes";
        if ((r = rkj_string(file, "units", units, "time", 0, &ts, err))) return r;
        if ((r = rkj_string(file, "units", units, "size", 0, &ss, err))) return r;
        if (strcmp(ts, "us")) return rk_fail(err, RK_EINPUT, "%s: units.time is '%s'; expected \"us\"", file, ts);
        if (strcmp(ss, "bytes")) return rk_fail(err, RK_EINPUT, "%s: units.size is '%s'; expected \"bytes\"", file, ss);
    }
    return RK_OK;
}

rk_status rk_chain_read(const char *path, rk_chain *ch, rk_error *err) {
    rk_chain_init(ch);
    json_t *root;
    rk_status r = rkj_load(path, &root, err);
    if (r) return r;
    if ((r = check_header(path, root, RKG_FORMAT, RKG_VERSION, err))) goto out;
    json_t *jcl = NULL, *jbl = NULL;
    if ((r = rkj_array(path, "(top)", root, "classes", 1, &jcl, err))) goto out;
    if ((r = rkj_array(path, "(top)", root, "blocks", 1, &jbl, err))) goto out;
    const char *model = NULL, *device = NULL;
    if ((r = rkj_string(path, "(top)", root, "model", 0, &model, err))) goto out;
    if ((r = rkj_string(path, "(top)", root, "device", 0, &device, err))) goto out;
    if (model) ch->model = strdup(model);
    if (device) ch->device = strdup(device);
    {
        int64_t pp = 0;
        if ((r = rkj_int64(path, "(top)", root, "plain_peak", 0, &pp, err))) goto out;
        if (pp < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: plain_peak: %lld is negative; expected the plain step's peak in bytes",
                        path, (long long)pp);
            goto out;
        }
        ch->plain_peak = pp;
        static const char *const mem_keys[] = {"param_bytes", "param_grad_bytes", "buffer_bytes"};
        int64_t *mem_vals[] = {&ch->param_bytes, &ch->param_grad_bytes, &ch->buffer_bytes};
        for (int k = 0; k < 3; k++) {
            int64_t x = 0;
            if ((r = rkj_int64(path, "(top)", root, mem_keys[k], 0, &x, err))) goto out;
            if (x < 0) {
                r = rk_fail(err, RK_EINPUT, "%s: %s: %lld is negative; expected a size in bytes", path, mem_keys[k],
                            (long long)x);
                goto out;
            }
            *mem_vals[k] = x;
        }
    }
    size_t i;
    json_t *v;
    char p[64];
    json_array_foreach(jcl, i, v) {
        snprintf(p, sizeof p, "classes[%zu]", i);
        rk_graph g;
        rk_graph_init(&g);
        if ((r = read_class(path, p, v, &g, err))) {
            rk_graph_free(&g);
            goto out;
        }
        if (rk_chain_add_class(ch, &g) < 0) {
            rk_graph_free(&g);
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
    }
    json_array_foreach(jbl, i, v) {
        snprintf(p, sizeof p, "blocks[%zu]", i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object {\"name\", \"class\"}, got %s", path, p,
                        rkj_type_name(v));
            goto out;
        }
        const char *name = NULL;
        int64_t cls = -1;
        if ((r = rkj_string(path, p, v, "name", 0, &name, err))) goto out;
        if ((r = rkj_int64(path, p, v, "class", 1, &cls, err))) goto out;
        if (cls < 0 || cls >= ch->n_classes) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.class: %lld is not a class index (the file has %d classes)", path, p,
                        (long long)cls, ch->n_classes);
            goto out;
        }
        char nm[32];
        if (!name) {
            snprintf(nm, sizeof nm, "block%zu", i);
            name = nm;
        }
        if (rk_chain_add_block(ch, name, (int)cls) < 0) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out;
        }
    }
    r = rk_chain_validate(ch, path, err);
out:
    json_decref(root);
    if (r) rk_chain_free(ch);
    return r;
}

static void write_class(FILE *f, const rk_graph *g) {
    fputs("    {\n      \"data\": [\n", f);
    for (int i = 0; i < g->n_d; i++) {
        const rk_dnode *d = &g->d[i];
        fputs("        {\"name\": ", f);
        rkj_write_string(f, d->name);
        fprintf(f, ", \"kind\": \"%s\", \"size\": %lld", rk_dkind_name(d->kind), (long long)d->size);
        if (d->target) {
            fputs(", \"target\": ", f);
            rkj_write_string(f, d->target);
        }
        fprintf(f, "}%s\n", i + 1 < g->n_d ? "," : "");
    }
    fputs("      ],\n      \"compute\": [\n", f);
    for (int i = 0; i < g->n_c; i++) {
        const rk_cnode *c = &g->c[i];
        fputs("        {\"name\": ", f);
        rkj_write_string(f, c->name);
        fprintf(f, ", \"kind\": \"%s\", \"time\": ", rk_ckind_name(c->kind));
        rkj_write_double(f, c->time);
        fprintf(f, ", \"overhead\": %lld", (long long)c->overhead);
        if (c->grad_accum) fprintf(f, ", \"grad_accum\": %lld", (long long)c->grad_accum);
        if (c->target) {
            fputs(", \"target\": ", f);
            rkj_write_string(f, c->target);
        }
        fputs(", \"uses\": [", f);
        for (int k = 0; k < c->n_uses; k++) {
            if (k) fputs(", ", f);
            if (c->uses[k].kind == RK_EDGE_REAL) rkj_write_string(f, g->d[c->uses[k].data].name);
            else {
                fputs("{\"data\": ", f);
                rkj_write_string(f, g->d[c->uses[k].data].name);
                fprintf(f, ", \"kind\": \"%s\"}", rk_edge_kind_name(c->uses[k].kind));
            }
        }
        fputs("], \"outs\": [", f);
        for (int k = 0; k < c->n_outs; k++) {
            if (k) fputs(", ", f);
            rkj_write_string(f, g->d[c->outs[k]].name);
        }
        fprintf(f, "]}%s\n", i + 1 < g->n_c ? "," : "");
    }
    fputs("      ],\n      \"inputs\": [", f);
    for (int k = 0; k < g->n_inputs; k++) {
        if (k) fputs(", ", f);
        fputs("{\"data\": ", f);
        rkj_write_string(f, g->d[g->inputs[k]].name);
        fputs(", \"grad\": ", f);
        if (g->input_grads[k] >= 0) rkj_write_string(f, g->d[g->input_grads[k]].name);
        else fputs("null", f);
        fputs("}", f);
    }
    fputs("],\n      \"output\": ", f);
    rkj_write_string(f, g->d[g->output].name);
    fputs(", \"output_grad\": ", f);
    rkj_write_string(f, g->d[g->output_grad].name);
    fputs(", \"loss\": ", f);
    rkj_write_string(f, g->c[g->loss].name);
    fputs("\n    }", f);
}

rk_status rk_chain_write(const char *path, const rk_chain *ch, rk_error *err) {
    rk_status r = rk_chain_validate(ch, "chain", err);
    if (r) return r;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return rk_fail(err, RK_ENOMEM, "out of memory");
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"units\": {\"time\": \"us\", \"size\": \"bytes\"},\n",
            RKG_FORMAT, RKG_VERSION);
    if (ch->model) {
        fputs("  \"model\": ", f);
        rkj_write_string(f, ch->model);
        fputs(",\n", f);
    }
    if (ch->device) {
        fputs("  \"device\": ", f);
        rkj_write_string(f, ch->device);
        fputs(",\n", f);
    }
    if (ch->plain_peak > 0) fprintf(f, "  \"plain_peak\": %lld,\n", (long long)ch->plain_peak);
    if (ch->param_bytes > 0 || ch->buffer_bytes > 0)
        fprintf(f, "  \"param_bytes\": %lld, \"param_grad_bytes\": %lld, \"buffer_bytes\": %lld,\n",
                (long long)ch->param_bytes, (long long)ch->param_grad_bytes, (long long)ch->buffer_bytes);
    fputs("  \"classes\": [\n", f);
    for (int i = 0; i < ch->n_classes; i++) {
        write_class(f, &ch->classes[i]);
        fputs(i + 1 < ch->n_classes ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"blocks\": [\n", f);
    for (int k = 0; k < ch->n_blocks; k++) {
        fputs("    {\"name\": ", f);
        rkj_write_string(f, ch->blocks[k].name);
        fprintf(f, ", \"class\": %d}%s\n", ch->blocks[k].cls, k + 1 < ch->n_blocks ? "," : "");
    }
    fputs("  ]\n}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    r = rk_write_file_atomic(path, buf, len, err);
    free(buf);
    return r;
}
