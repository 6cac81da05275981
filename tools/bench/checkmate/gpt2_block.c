/* gpt2_block.c — a Checkmate-style CD-graph of one GPT2 transformer block
 * (pre-LN attention + MLP, dropout, residuals), with sizes of fp32
 * activations for (batch, seq, hidden, heads) and times/overheads of the
 * order measured on a GPU, for the benchmark before the tracer lands. */
#include "gpt2_block.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    rk_graph *g;
    int grad[256];
} gb;

static int D(gb *b, const char *name, rk_dkind k, int64_t size) {
    int d = rk_graph_add_data(b->g, name, k, size);
    b->grad[d] = -1;
    return d;
}
static int G(gb *b, int d) {
    if (b->grad[d] < 0) {
        char n[128];
        snprintf(n, sizeof n, "%s.grad", b->g->d[d].name);
        b->grad[d] = D(b, n, RK_D_GRAD, b->g->d[d].size);
    }
    return b->grad[d];
}
static int C(gb *b, const char *name, rk_ckind k, double t, int64_t oh, const int *uses, int nu, const int *outs,
             int no) {
    int c = rk_graph_add_compute(b->g, name, k, t, oh);
    for (int i = 0; i < nu; i++) rk_graph_add_use(b->g, c, uses[i], RK_EDGE_REAL);
    for (int i = 0; i < no; i++) rk_graph_add_out(b->g, c, outs[i]);
    return c;
}
#define L(...) ((const int[]){__VA_ARGS__}), (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

rk_status gpt2_block(rk_graph *g, int batch, int seq, int hidden, int heads, rk_error *err) {
    rk_graph_init(g);
    gb b;
    memset(&b, 0, sizeof b);
    b.g = g;
    const int64_t f = 4; /* fp32 */
    int64_t BSH = (int64_t)batch * seq * hidden * f;
    int64_t ATT = (int64_t)batch * heads * seq * seq * f;
    int64_t MASKA = (int64_t)batch * heads * seq * seq; /* bool */
    int64_t MASKH = (int64_t)batch * seq * hidden;
    int64_t STAT = (int64_t)batch * seq * f * 2;
    /* times in microseconds, roughly an A100 at B=8, S=512, H=768 scaled by size */
    double s = (double)BSH / (8.0 * 512 * 768 * 4);
    double sa = (double)ATT / (8.0 * 12 * 512 * 512 * 4);

    int x = D(&b, "x", RK_D_DATA, BSH);
    int ln1 = D(&b, "ln1", RK_D_DATA, BSH), ln1s = D(&b, "ln1.stats", RK_D_PHANTOM, STAT);
    int q = D(&b, "q", RK_D_DATA, BSH), k = D(&b, "k", RK_D_DATA, BSH), v = D(&b, "v", RK_D_DATA, BSH);
    int sc = D(&b, "scores", RK_D_DATA, ATT);
    int pr = D(&b, "probs", RK_D_DATA, ATT);
    int pd = D(&b, "probs.drop", RK_D_DATA, ATT), m1 = D(&b, "probs.mask", RK_D_PHANTOM, MASKA);
    int ctx = D(&b, "ctx", RK_D_DATA, BSH);
    int ao = D(&b, "attn", RK_D_DATA, BSH);
    int ad = D(&b, "attn.drop", RK_D_DATA, BSH), m2 = D(&b, "attn.mask", RK_D_PHANTOM, MASKH);
    int h1 = D(&b, "h1", RK_D_DATA, BSH);
    int ln2 = D(&b, "ln2", RK_D_DATA, BSH), ln2s = D(&b, "ln2.stats", RK_D_PHANTOM, STAT);
    int fc = D(&b, "fc", RK_D_DATA, 4 * BSH);
    int ge = D(&b, "gelu", RK_D_DATA, 4 * BSH);
    int mo = D(&b, "mlp", RK_D_DATA, BSH);
    int md = D(&b, "mlp.drop", RK_D_DATA, BSH), m3 = D(&b, "mlp.mask", RK_D_PHANTOM, MASKH);
    int y = D(&b, "y", RK_D_DATA, BSH);

    C(&b, "ln_1", RK_C_FWD, 30 * s, 0, L(x), L(ln1, ln1s));
    C(&b, "c_attn", RK_C_FWD, 150 * s, 0, L(ln1), L(q, k, v));
    C(&b, "matmul_qk", RK_C_FWD, 120 * sa, 0, L(q, k), L(sc));
    C(&b, "softmax", RK_C_FWD, 150 * sa, ATT / 2, L(sc), L(pr));
    C(&b, "attn_dropout", RK_C_FWD, 100 * sa, 0, L(pr), L(pd, m1));
    C(&b, "matmul_pv", RK_C_FWD, 120 * sa, 0, L(pd, v), L(ctx));
    C(&b, "c_proj", RK_C_FWD, 50 * s, 0, L(ctx), L(ao));
    C(&b, "resid_dropout", RK_C_FWD, 15 * s, 0, L(ao), L(ad, m2));
    C(&b, "add_1", RK_C_FWD, 15 * s, 0, L(x, ad), L(h1));
    C(&b, "ln_2", RK_C_FWD, 30 * s, 0, L(h1), L(ln2, ln2s));
    C(&b, "c_fc", RK_C_FWD, 200 * s, 0, L(ln2), L(fc));
    C(&b, "gelu", RK_C_FWD, 60 * s, 0, L(fc), L(ge));
    C(&b, "c_proj_mlp", RK_C_FWD, 200 * s, 0, L(ge), L(mo));
    C(&b, "mlp_dropout", RK_C_FWD, 15 * s, 0, L(mo), L(md, m3));
    C(&b, "add_2", RK_C_FWD, 15 * s, 0, L(h1, md), L(y));
    int yg = G(&b, y);
    int loss = C(&b, "loss", RK_C_LOSS, 5, 0, L(y), L(yg));
    C(&b, "add_2.bwd", RK_C_BWD, 10 * s, 0, L(yg), L(G(&b, h1), G(&b, md)));
    C(&b, "mlp_dropout.bwd", RK_C_BWD, 15 * s, 0, L(G(&b, md), m3), L(G(&b, mo)));
    C(&b, "c_proj_mlp.bwd", RK_C_BWD, 400 * s, 0, L(G(&b, mo), ge), L(G(&b, ge)));
    C(&b, "gelu.bwd", RK_C_BWD, 80 * s, 4 * BSH, L(G(&b, ge), fc), L(G(&b, fc)));
    C(&b, "c_fc.bwd", RK_C_BWD, 400 * s, 0, L(G(&b, fc), ln2), L(G(&b, ln2)));
    C(&b, "ln_2.bwd", RK_C_BWD, 50 * s, 0, L(G(&b, ln2), h1, ln2s), L(G(&b, h1)));
    C(&b, "add_1.bwd", RK_C_BWD, 10 * s, 0, L(G(&b, h1)), L(G(&b, x), G(&b, ad)));
    C(&b, "resid_dropout.bwd", RK_C_BWD, 15 * s, 0, L(G(&b, ad), m2), L(G(&b, ao)));
    C(&b, "c_proj.bwd", RK_C_BWD, 100 * s, 0, L(G(&b, ao), ctx), L(G(&b, ctx)));
    C(&b, "matmul_pv.bwd", RK_C_BWD, 240 * sa, 0, L(G(&b, ctx), pd, v), L(G(&b, pd), G(&b, v)));
    C(&b, "attn_dropout.bwd", RK_C_BWD, 100 * sa, 0, L(G(&b, pd), m1), L(G(&b, pr)));
    C(&b, "softmax.bwd", RK_C_BWD, 150 * sa, ATT, L(G(&b, pr), pr), L(G(&b, sc)));
    C(&b, "matmul_qk.bwd", RK_C_BWD, 240 * sa, 0, L(G(&b, sc), q, k), L(G(&b, q), G(&b, k)));
    C(&b, "c_attn.bwd", RK_C_BWD, 300 * s, 2 * BSH, L(G(&b, q), G(&b, k), G(&b, v), ln1), L(G(&b, ln1)));
    C(&b, "ln_1.bwd", RK_C_BWD, 50 * s, 0, L(G(&b, ln1), x, ln1s), L(G(&b, x)));
    rk_graph_add_input(g, x, G(&b, x));
    rk_graph_set_output(g, y, yg, loss);
    return rk_graph_finalize(g, "gpt2 block", err);
}
