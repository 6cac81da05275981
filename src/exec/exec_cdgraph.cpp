// exec_cdgraph.cpp — the CD-graph of one block (rk_graph): a forward C-node
// per simplified node (real uses of its data dependencies, fake uses of its
// shape dependencies) producing its data and phantom D-nodes, the loss node,
// and a backward C-node per node that gets a gradient (using its data and
// its dependencies' really when its autograd graph saved them, else
// fakely) — or two, for a backward split in two (exec_split_bwd.cpp): the
// weight part b3_convolutionw (its gradient, phantoms, its inputs really; no
// output: parameter gradients are outside the budget), then the input part
// b3_convolution (its gradient, phantoms, its inputs' shapes only; their
// gradients).  A node read only through pieces (exec_pieces.cpp) has a grad
// D-node per piece (g3_linear_p0, ...) instead of its own, each produced by
// the piece's reader's backward, all used by its own.  A view of a node's
// data read by several nodes (a view sum, exec_grad_order.cpp) has a grad
// D-node of its own (g3_embedding_v0): made by its readers' backwards but the
// last, used by the last one's, which makes the data's.  Names are stable (f3_matmul, d3_matmul, ...), so that
// rk_exec_run can map a schedule's operations back onto model nodes.
#include <torch/script.h>

#include <algorithm>

#include "exec_internal.h"

namespace rkx {

// A group's D-node bytes: its outputs but those no other node reads (in its
// phantom, Group::part_in_phantom, or freed once made, Group::part_dead),
// the same as its own block's output and as the next block's input.
static int64_t data_bytes(const Group &G) { return G.bytes - G.phantom_part_bytes - G.dead_part_bytes; }

// Block inputs: the model inputs (block 0) or the previous block's output.
std::vector<int> block_inputs(Model &M, int b) {
    std::vector<int> r;
    if (b == 0) {
        for (size_t g = 0; g < M.groups.size(); g++)
            if (M.groups[g].input_index >= 0) r.push_back((int)g);
    } else {
        r.push_back(M.order[M.block_end[b - 1] - 1]);
    }
    return r;
}

std::vector<int> side_inputs(const Model &M) {
    std::vector<int> r;
    for (size_t g = 0; g < M.groups.size(); g++) {
        const Group &I = M.groups[g];
        if (I.input_index < 0) continue;
        for (int c : I.consumers)
            if (M.groups[c].block > 0) {
                r.push_back((int)g);
                break;
            }
    }
    return r;
}

std::string sanitize(const std::string &s) {
    std::string r;
    for (char c : s) r += (isalnum((unsigned char)c) || c == '_') ? c : '_';
    return r;
}

// Build the CD-graph of block b (measures may be null: structure only).
void build_class_graph(Model &M, int b, const std::vector<Measure> *meas, double loss_time, rk_graph *gr,
                       ClassGraph &cg) {
    rk_graph_init(gr);
    std::vector<int> ins = block_inputs(M, b);
    std::map<int, int> in_idx; // group -> input position
    for (size_t i = 0; i < ins.size(); i++) in_idx[ins[i]] = (int)i;
    int first = M.block_begin[b], end = M.block_end[b], m = end - first;
    std::vector<int> din(ins.size()), dgin(ins.size(), -1);
    auto add_d = [&](const std::string &name, rk_dkind k, int64_t size, int kind, int local, int piece = -1) {
        int d = rk_graph_add_data(gr, name.c_str(), k, size);
        if (d < 0) fail(RK_ENOMEM, "out of memory");
        cg.dmap.push_back({kind, local, piece});
        rk_graph_set_target(gr, 0, d, local >= 0 ? ("g" + std::to_string(local)).c_str()
                                                 : ("in" + std::to_string(-1 - local)).c_str());
        return d;
    };
    auto add_c = [&](const std::string &name, rk_ckind k, double t, int64_t o, int kind, int local) {
        int c = rk_graph_add_compute(gr, name.c_str(), k, t, o);
        if (c < 0) fail(RK_ENOMEM, "out of memory");
        cg.cmap.push_back({kind, local});
        if (local >= 0) rk_graph_set_target(gr, 1, c, ("g" + std::to_string(local)).c_str());
        return c;
    };
    std::map<int, std::vector<int>> dvs; // a node's view sums' gradients, by group (exec_grad_order.cpp)
    for (size_t i = 0; i < ins.size(); i++) {
        const Group &I = M.groups[ins[i]];
        din[i] = add_d("in" + std::to_string(i), RK_D_DATA, data_bytes(I), 0, -1 - (int)i);
        if (I.has_grad) // (a sum's input, the block's boundary: its gradient is the sum's, as a view)
            dgin[i] = add_d("in" + std::to_string(i) + ".grad", RK_D_GRAD,
                            I.stack_reader >= 0 ? I.stack_grad_bytes : I.grad_bytes, 2, -1 - (int)i);
        rk_graph_add_input(gr, din[i], dgin[i]);
        if (I.has_grad && b > 0) // its view sums, read in this block
            for (size_t k = 0; k < I.vsums_owned.size(); k++)
                dvs[ins[i]].push_back(add_d("in" + std::to_string(i) + "_v" + std::to_string(k), RK_D_GRAD,
                                            M.view_sums[I.vsums_owned[k]].bytes, 4, -1 - (int)i, (int)k));
    }
    std::vector<int> dd(m), dp(m, -1), dg(m, -1);
    std::vector<std::vector<int>> dpc(m); // a node read through pieces: their gradients (exec_pieces.cpp)
    for (int j = 0; j < m; j++) {
        const Group &G = M.groups[M.order[first + j]];
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        dd[j] = add_d("d" + nm, RK_D_DATA, data_bytes(G), 0, j);
        if (G.has_grad) {
            dp[j] = add_d("p" + nm, RK_D_PHANTOM, (meas ? (*meas)[j].phantom : 0) + G.phantom_part_bytes, 1, j);
            if (G.pieces.empty())
                dg[j] = add_d("g" + nm, RK_D_GRAD, G.stack_reader >= 0 ? G.stack_grad_bytes : G.grad_bytes, 2, j);
            for (size_t k = 0; k < G.pieces.size(); k++)
                dpc[j].push_back(add_d("g" + nm + "_p" + std::to_string(k), RK_D_GRAD, G.piece_bytes[k], 3, j, (int)k));
            if (j + 1 < m) // (the block's output: its view sums are the next block's)
                for (size_t k = 0; k < G.vsums_owned.size(); k++)
                    dvs[M.order[first + j]].push_back(add_d("g" + nm + "_v" + std::to_string(k), RK_D_GRAD,
                                                            M.view_sums[G.vsums_owned[k]].bytes, 4, j, (int)k));
        }
    }
    // static sums read in this block only: their buffers (exec_grad_order.cpp)
    std::vector<BlockStaticSum> ssums = block_static_sums(M, b);
    std::vector<int> dss;
    for (size_t k = 0; k < ssums.size(); k++)
        dss.push_back(add_d("s" + std::to_string(k), RK_D_GRAD, ssums[k].bytes, 5,
                            M.groups[ssums[k].readers.front()].local, (int)k));
    // (-1: a side input, outside this block's graph: block 0 holds it)
    auto data_of = [&](int grp) -> int {
        auto it = in_idx.find(grp);
        if (it != in_idx.end()) return din[it->second];
        const Group &H = M.groups[grp];
        if (H.input_index >= 0 && b > 0) return -1;
        if (H.block != b) fail(RK_EFAIL, "block " + std::to_string(b) + " uses data of another block");
        return dd[H.local];
    };
    auto use = [&](int c, int d, rk_edge_kind k) {
        if (d >= 0) rk_graph_add_use(gr, c, d, k);
    };
    auto grad_of = [&](int grp) -> int {
        auto it = in_idx.find(grp);
        if (it != in_idx.end()) return dgin[it->second];
        return dg[M.groups[grp].local];
    };
    for (int j = 0; j < m; j++) {
        const Group &G = M.groups[M.order[first + j]];
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        int c = add_c("f" + nm, RK_C_FWD, meas ? (*meas)[j].fwd_time : 0, meas ? (*meas)[j].fwd_over : 0, 0, j);
        for (int d : G.deps_real) use(c, data_of(d), RK_EDGE_REAL);
        for (int d : G.deps_shape) use(c, data_of(d), RK_EDGE_FAKE);
        rk_graph_add_out(gr, c, dd[j]);
        if (dp[j] >= 0) rk_graph_add_out(gr, c, dp[j]);
    }
    int dout = dd[m - 1];
    int loss = add_c("loss", RK_C_LOSS, loss_time, 0, 2, -1);
    rk_graph_add_use(gr, loss, dout, RK_EDGE_REAL);
    rk_graph_add_out(gr, loss, dg[m - 1]);
    rk_graph_set_output(gr, dout, dg[m - 1], loss);
    if (meas) {
        cg.split.assign(m, 0);
        for (int j = 0; j < m; j++) cg.split[j] = (*meas)[j].split;
    }
    for (int j = m - 1; j >= 0; j--) {
        const Group &G = M.groups[M.order[first + j]];
        if (!G.has_grad) continue;
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        const Measure *me = meas ? &(*meas)[j] : nullptr;
        bool split = (size_t)j < cg.split.size() && cg.split[j] && G.pieces.empty();
        if (split) { // the weight part: no output in the chain
            int c = add_c("b" + nm + "w", RK_C_BWD, me ? me->w_time : 0, me ? me->w_over : 0, 3, j);
            rk_graph_add_use(gr, c, dg[j], RK_EDGE_REAL);
            rk_graph_add_use(gr, c, dp[j], RK_EDGE_REAL);
            rk_graph_add_use(gr, c, dd[j], (!me || me->saved_self) ? RK_EDGE_REAL : RK_EDGE_FAKE);
            for (int d : G.deps_real)
                use(c, data_of(d), !me || me->saved_deps.count(d) ? RK_EDGE_REAL : RK_EDGE_FAKE);
        }
        int c = split ? add_c("b" + nm, RK_C_BWD, me ? me->x_time : 0, me ? me->x_over : 0, 4, j)
                      : add_c("b" + nm, RK_C_BWD, me ? me->bwd_time : 0, me ? me->bwd_over : 0, 1, j);
        if (dg[j] >= 0) rk_graph_add_use(gr, c, dg[j], RK_EDGE_REAL);
        for (int d : dpc[j]) rk_graph_add_use(gr, c, d, RK_EDGE_REAL);
        rk_graph_add_use(gr, c, dp[j], RK_EDGE_REAL);
        // side inputs: present until every later block is done (really used here)
        std::vector<int> side = b == 0 && j == m - 1 && M.block_begin.size() > 1 ? side_inputs(M) : std::vector<int>();
        for (int si : side)
            if (!G.deps_real.count(si)) rk_graph_add_use(gr, c, din[in_idx.at(si)], RK_EDGE_REAL);
        for (size_t k = 0; k < ssums.size(); k++) { // a static sum's reader adds to its buffer
            const std::vector<int> &rs = ssums[k].readers;
            if (std::find(rs.begin(), rs.end(), M.order[first + j]) == rs.end()) continue;
            if (rs.front() == M.order[first + j]) rk_graph_add_use(gr, c, dss[k], RK_EDGE_REAL);
            else rk_graph_add_out(gr, c, dss[k]);
        }
        rk_graph_add_use(gr, c, dd[j], (!me || me->saved_self) ? RK_EDGE_REAL : RK_EDGE_FAKE);
        for (int d : G.deps_real) {
            bool saved = !me || (!split && me->saved_deps.count(d)) || // the input part: shapes only
                         std::find(side.begin(), side.end(), d) != side.end();
            use(c, data_of(d), saved ? RK_EDGE_REAL : RK_EDGE_FAKE);
            const Group &D = M.groups[d];
            if (!D.has_grad || !G.deps_grad.count(d)) continue; // (read through a detach: no gradient)
            if (dvs.count(d)) {
                // A view sum's reader but the viewer adds to the view's gradient;
                // the carrier uses it and makes the data's (exec_grad_order.cpp).
                bool data_grad = false, reader = false;
                for (size_t k = 0; k < D.vsums_owned.size(); k++) {
                    const ViewSum &S = M.view_sums[D.vsums_owned[k]];
                    if (S.carrier == M.order[first + j]) {
                        rk_graph_add_use(gr, c, dvs[d][k], RK_EDGE_REAL);
                        data_grad = true;
                        continue;
                    }
                    if (std::find(S.readers.begin(), S.readers.end(), M.order[first + j]) == S.readers.end()) continue;
                    reader = true;
                    rk_graph_add_out(gr, c, dvs[d][k]);
                    if (S.reads_other.count(M.order[first + j])) data_grad = true;
                }
                if (!reader || data_grad) rk_graph_add_out(gr, c, grad_of(d));
                continue;
            }
            if (D.pieces.empty() || in_idx.count(d)) {
                rk_graph_add_out(gr, c, grad_of(d));
                continue;
            }
            for (size_t k = 0; k < D.pieces.size(); k++) // the gradients of the pieces it reads
                for (int r : D.piece_readers[k])
                    if (r == M.order[first + j]) rk_graph_add_out(gr, c, dpc[D.local][k]);
        }
        for (int k : G.vsums_carried) { // a view sum carried without reading the data: its view's backward
            const ViewSum &S = M.view_sums[k];
            if (G.deps_grad.count(S.owner) || !dvs.count(S.owner)) continue; // (with its reads above)
            const std::vector<int> &own = M.groups[S.owner].vsums_owned;
            const size_t at = std::find(own.begin(), own.end(), k) - own.begin();
            rk_graph_add_use(gr, c, dvs[S.owner][at], RK_EDGE_REAL);
            rk_graph_add_out(gr, c, grad_of(S.owner));
        }
    }
}

} // namespace rkx
