/* chain.c — chains of blocks: classes (shared CD-graphs), block instances,
 * validation of the block boundaries, and the whole-chain index that gives
 * every node of every block a global number. */
#include <stdlib.h>
#include <string.h>

#include "rk_graph.h"

void rk_chain_init(rk_chain *ch) { memset(ch, 0, sizeof *ch); }

void rk_chain_free(rk_chain *ch) {
    if (!ch) return;
    for (int i = 0; i < ch->n_classes; i++) rk_graph_free(&ch->classes[i]);
    for (int i = 0; i < ch->n_blocks; i++) free(ch->blocks[i].name);
    free(ch->classes);
    free(ch->blocks);
    free(ch->model);
    free(ch->device);
    rk_chain_init(ch);
}

int rk_chain_add_class(rk_chain *ch, rk_graph *g) {
    rk_graph *c = realloc(ch->classes, (size_t)(ch->n_classes + 1) * sizeof *c);
    if (!c) return -1;
    ch->classes = c;
    c[ch->n_classes] = *g;
    rk_graph_init(g);
    return ch->n_classes++;
}

int rk_chain_add_block(rk_chain *ch, const char *name, int cls) {
    rk_block *b = realloc(ch->blocks, (size_t)(ch->n_blocks + 1) * sizeof *b);
    if (!b) return -1;
    ch->blocks = b;
    size_t n = strlen(name ? name : "") + 1;
    char *s = malloc(n);
    if (!s) return -1;
    memcpy(s, name ? name : "", n);
    b[ch->n_blocks].name = s;
    b[ch->n_blocks].cls = cls;
    return ch->n_blocks++;
}

rk_status rk_chain_validate(const rk_chain *ch, const char *where, rk_error *err) {
    if (!where) where = "chain";
    if (ch->n_blocks < 1) return rk_fail(err, RK_EINPUT, "%s: the chain has no blocks", where);
    for (int i = 0; i < ch->n_classes; i++)
        if (!ch->classes[i].finalized)
            return rk_fail(err, RK_EINPUT, "%s: class %d is not validated", where, i);
    for (int k = 0; k < ch->n_blocks; k++) {
        const rk_block *b = &ch->blocks[k];
        if (b->cls < 0 || b->cls >= ch->n_classes)
            return rk_fail(err, RK_EINPUT, "%s: block %d ('%s') refers to class %d; there are %d classes", where, k,
                           b->name, b->cls, ch->n_classes);
        const rk_graph *g = &ch->classes[b->cls];
        if (k == 0) continue;
        const rk_graph *p = &ch->classes[ch->blocks[k - 1].cls];
        if (g->n_inputs != 1)
            return rk_fail(err, RK_EINPUT,
                           "%s: block %d ('%s') has %d inputs; every block after the first has exactly one (the previous block's output)",
                           where, k, b->name, g->n_inputs);
        int64_t in = g->d[g->inputs[0]].size, out = p->d[p->output].size;
        if (in != out)
            return rk_fail(err, RK_EINPUT,
                           "%s: block %d ('%s') input '%s' has size %lld but block %d's output '%s' has size %lld", where,
                           k, b->name, g->d[g->inputs[0]].name, (long long)in, k - 1, p->d[p->output].name,
                           (long long)out);
        int gi = g->input_grads[0];
        if (gi < 0)
            return rk_fail(err, RK_EINPUT,
                           "%s: block %d ('%s') input '%s' has no grad node; the chain must carry a gradient through every block boundary",
                           where, k, b->name, g->d[g->inputs[0]].name);
        if (g->d[gi].size != p->d[p->output_grad].size)
            return rk_fail(err, RK_EINPUT, "%s: block %d ('%s') input grad '%s' has size %lld but block %d's output grad has size %lld",
                           where, k, b->name, g->d[gi].name, (long long)g->d[gi].size, k - 1,
                           (long long)p->d[p->output_grad].size);
    }
    return RK_OK;
}

void rk_chain_index_free(rk_chain_index *ix) {
    if (!ix) return;
    free(ix->c_base);
    free(ix->d_base);
    free(ix->d_map);
    free(ix->c_present);
    free(ix->d_size);
    free(ix->d_block);
    free(ix->d_local);
    memset(ix, 0, sizeof *ix);
}

rk_status rk_chain_index_build(const rk_chain *ch, rk_chain_index *ix, rk_error *err) {
    memset(ix, 0, sizeof *ix);
    int L = ch->n_blocks;
    ix->n_blocks = L;
    ix->c_base = calloc((size_t)L + 1, sizeof(int));
    ix->d_base = calloc((size_t)L + 1, sizeof(int));
    if (!ix->c_base || !ix->d_base) goto oom;
    for (int k = 0; k < L; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        ix->c_base[k + 1] = ix->c_base[k] + g->n_c;
        ix->d_base[k + 1] = ix->d_base[k] + g->n_d;
    }
    ix->n_c = ix->c_base[L];
    int nd_local = ix->d_base[L];
    ix->d_map = malloc((size_t)(nd_local + 1) * sizeof(int));
    ix->c_present = malloc((size_t)(ix->n_c + 1) * sizeof(int));
    ix->d_size = malloc((size_t)(nd_local + 1) * sizeof(int64_t));
    ix->d_block = malloc((size_t)(nd_local + 1) * sizeof(int));
    ix->d_local = malloc((size_t)(nd_local + 1) * sizeof(int));
    if (!ix->d_map || !ix->c_present || !ix->d_size || !ix->d_block || !ix->d_local) goto oom;
    int next = 0;
    for (int k = 0; k < L; k++) {
        const rk_graph *g = &ch->classes[ch->blocks[k].cls];
        for (int c = 0; c < g->n_c; c++)
            ix->c_present[ix->c_base[k] + c] = !(g->c[c].kind == RK_C_LOSS && k < L - 1);
        for (int d = 0; d < g->n_d; d++) {
            int gid = -1;
            if (k > 0) {
                const rk_graph *p = &ch->classes[ch->blocks[k - 1].cls];
                if (d == g->inputs[0]) gid = ix->d_map[ix->d_base[k - 1] + p->output];
                else if (d == g->input_grads[0]) gid = ix->d_map[ix->d_base[k - 1] + p->output_grad];
            }
            if (gid < 0) {
                gid = next++;
                ix->d_size[gid] = g->d[d].size;
                ix->d_block[gid] = k;
                ix->d_local[gid] = d;
            }
            ix->d_map[ix->d_base[k] + d] = gid;
        }
    }
    ix->n_d = next;
    return RK_OK;
oom:
    rk_chain_index_free(ix);
    return rk_fail(err, RK_ENOMEM, "out of memory building the chain index");
}
