/* import_checkmate.c — reads a Checkmate / Moccasin training DAG (networkx
 * node-link JSON: nodes with id, name, backward, cost_cpu, cost_ram; links
 * with source, target) into a one-block chain.
 *
 * Mapping: every node v becomes a compute node (fwd or bwd by `backward`)
 * with time cost_cpu that produces one data node of size cost_ram (kind data
 * for forward nodes, grad for backward ones); a link u→v makes v use u's
 * data.  The block output is the single forward node without forward
 * successors (the loss in Checkmate's graphs); a loss node of time 0 uses it
 * and produces a 0-byte output grad that every backward node with no grad
 * input uses, so the accounting is exactly Checkmate's: the memory of a
 * schedule is the sum of the outputs alive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"

rk_status rk_import_checkmate(const char *path, rk_chain *ch, rk_error *err) {
    rk_chain_init(ch);
    json_t *root;
    rk_status r = rkj_load(path, &root, err);
    if (r) return r;
    rk_graph g;
    rk_graph_init(&g);
    rkj_names ids = {0};
    int *is_bwd = NULL, *has_fwd_succ = NULL, *has_grad_in = NULL;
    char **names = NULL;
    json_t *nodes = NULL, *links = NULL;
    if (!json_is_object(root)) {
        r = rk_fail(err, RK_EINPUT, "%s: expected a JSON object (networkx node-link data), got %s", path,
                    rkj_type_name(root));
        goto out;
    }
    if ((r = rkj_array(path, "(top)", root, "nodes", 1, &nodes, err))) goto out;
    if ((r = rkj_array(path, "(top)", root, "links", 0, &links, err))) goto out;
    if (!links && (r = rkj_array(path, "(top)", root, "edges", 1, &links, err))) goto out;
    int n = (int)json_array_size(nodes);
    if (n == 0) {
        r = rk_fail(err, RK_EINPUT, "%s: the graph has no nodes", path);
        goto out;
    }
    is_bwd = calloc((size_t)n, sizeof(int));
    has_fwd_succ = calloc((size_t)n, sizeof(int));
    has_grad_in = calloc((size_t)n, sizeof(int));
    names = calloc((size_t)n, sizeof(char *));
    if (!is_bwd || !has_fwd_succ || !has_grad_in || !names || rkj_names_init(&ids, n)) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto out;
    }
    /* id strings live in this array for the name table */
    char (*idstr)[32] = calloc((size_t)n, 32);
    if (!idstr) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto out;
    }
    size_t i;
    json_t *v;
    char p[64];
    json_array_foreach(nodes, i, v) {
        snprintf(p, sizeof p, "nodes[%zu]", i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object, got %s", path, p, rkj_type_name(v));
            goto out2;
        }
        int64_t id;
        const char *name = NULL;
        double cpu = 0;
        int64_t ram = 0;
        if ((r = rkj_int64(path, p, v, "id", 1, &id, err))) goto out2;
        if ((r = rkj_string(path, p, v, "name", 0, &name, err))) goto out2;
        if ((r = rkj_double(path, p, v, "cost_cpu", 1, &cpu, err))) goto out2;
        if ((r = rkj_int64(path, p, v, "cost_ram", 1, &ram, err))) goto out2;
        json_t *jb = json_object_get(v, "backward");
        if (!jb) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: missing field 'backward' (expected true or false)", path, p);
            goto out2;
        }
        if (!json_is_boolean(jb)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s.backward: expected true or false, got %s", path, p, rkj_type_name(jb));
            goto out2;
        }
        if (!isfinite(cpu) || cpu < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s (id %lld): cost_cpu %g; expected a finite number >= 0", path, p,
                        (long long)id, cpu);
            goto out2;
        }
        if (ram < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s (id %lld): cost_ram %lld; expected bytes >= 0", path, p, (long long)id,
                        (long long)ram);
            goto out2;
        }
        snprintf(idstr[i], 32, "%lld", (long long)id);
        int prev;
        if (rkj_names_put(&ids, idstr[i], (int)i, &prev)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: duplicate node id %lld (also nodes[%d])", path, p, (long long)id, prev);
            goto out2;
        }
        is_bwd[i] = json_is_true(jb);
        char nm[512];
        snprintf(nm, sizeof nm, "%s#%lld", name ? name : "node", (long long)id);
        names[i] = strdup(nm);
        int c = rk_graph_add_compute(&g, nm, is_bwd[i] ? RK_C_BWD : RK_C_FWD, cpu, 0);
        int d = rk_graph_add_data(&g, nm, is_bwd[i] ? RK_D_GRAD : RK_D_DATA, ram);
        if (!names[i] || c != (int)i || d != (int)i || rk_graph_add_out(&g, c, d)) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out2;
        }
    }
    json_array_foreach(links, i, v) {
        snprintf(p, sizeof p, "links[%zu]", i);
        if (!json_is_object(v)) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: expected an object {source, target}, got %s", path, p, rkj_type_name(v));
            goto out2;
        }
        int64_t s = 0, t = 0;
        if ((r = rkj_int64(path, p, v, "source", 1, &s, err))) goto out2;
        if ((r = rkj_int64(path, p, v, "target", 1, &t, err))) goto out2;
        char ks[32], kt[32];
        snprintf(ks, sizeof ks, "%lld", (long long)s);
        snprintf(kt, sizeof kt, "%lld", (long long)t);
        int a = rkj_names_get(&ids, ks), b = rkj_names_get(&ids, kt);
        if (a < 0 || b < 0) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: unknown node id %lld", path, p, (long long)(a < 0 ? s : t));
            goto out2;
        }
        if (a == b) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: self-loop on node id %lld", path, p, (long long)s);
            goto out2;
        }
        if (!is_bwd[a] && is_bwd[b]) {
            /* forward activation used by a backward node */
        } else if (is_bwd[a] && !is_bwd[b]) {
            r = rk_fail(err, RK_EINPUT, "%s: %s: backward node '%s' feeds forward node '%s'; expected forward → backward order",
                        path, p, names[a], names[b]);
            goto out2;
        }
        if (!is_bwd[a] && !is_bwd[b]) has_fwd_succ[a] = 1;
        if (is_bwd[a] && is_bwd[b]) has_grad_in[b] = 1;
        for (int k = 0; k < g.c[b].n_uses; k++)
            if (g.c[b].uses[k].data == a) {
                r = rk_fail(err, RK_EINPUT, "%s: %s: duplicate link %lld -> %lld", path, p, (long long)s, (long long)t);
                goto out2;
            }
        if (rk_graph_add_use(&g, b, a, RK_EDGE_REAL)) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out2;
        }
    }
    int out_node = -1;
    for (int k = 0; k < n; k++)
        if (!is_bwd[k] && !has_fwd_succ[k]) {
            if (out_node >= 0) {
                r = rk_fail(err, RK_EINPUT,
                            "%s: forward nodes '%s' and '%s' both have no forward successor; expected one (the loss)",
                            path, names[out_node], names[k]);
                goto out2;
            }
            out_node = k;
        }
    if (out_node < 0) {
        r = rk_fail(err, RK_EINPUT, "%s: no forward node without forward successor (is the graph cyclic?)", path);
        goto out2;
    }
    int loss = rk_graph_add_compute(&g, "rkmate_loss", RK_C_LOSS, 0, 0);
    int og = rk_graph_add_data(&g, "rkmate_loss.grad", RK_D_GRAD, 0);
    if (loss < 0 || og < 0 || rk_graph_add_use(&g, loss, out_node, RK_EDGE_REAL) || rk_graph_add_out(&g, loss, og)) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto out2;
    }
    for (int k = 0; k < n; k++)
        if (is_bwd[k] && !has_grad_in[k] && rk_graph_add_use(&g, k, og, RK_EDGE_REAL)) {
            r = rk_fail(err, RK_ENOMEM, "out of memory");
            goto out2;
        }
    rk_graph_set_output(&g, out_node, og, loss);
    if ((r = rk_graph_finalize(&g, path, err))) goto out2;
    if (rk_chain_add_class(ch, &g) < 0 || rk_chain_add_block(ch, "graph", 0) < 0) {
        r = rk_fail(err, RK_ENOMEM, "out of memory");
        goto out2;
    }
    ch->model = strdup(path);
    r = rk_chain_validate(ch, path, err);
out2:
    free(idstr);
out:
    if (names)
        for (int k = 0; k < (nodes ? (int)json_array_size(nodes) : 0); k++) free(names[k]);
    free(names);
    free(is_bwd);
    free(has_fwd_succ);
    free(has_grad_in);
    rkj_names_free(&ids);
    rk_graph_free(&g);
    json_decref(root);
    if (r) rk_chain_free(ch);
    return r;
}
