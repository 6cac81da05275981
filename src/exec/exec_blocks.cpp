// exec_blocks.cpp — from the analysed nodes to rk-GB's structure: each
// group's real and shape-only dependencies, the checks on in-place ops, the
// simplified graph (live groups in topological order, which get a gradient),
// its cut into blocks at 1-separators, the outputs of several that only a
// backward reads or nothing reads (find_phantom_parts), and the
// identical-block classes by a
// canonical text of each block (same ops, constants, shapes, dtypes and
// parameter shapes in the same places).
#include <torch/script.h>

#include <algorithm>
#include <queue>
#include <sstream>

#include "exec_internal.h"

namespace rkx {

// Dependencies of a value used by a group: real (the data is read) and
// shape-only; with grad, the real ones read through a path a gradient can
// take (not through a `detach`: the plain step's autograd frees a function
// whose result only a detach reads, and all it saved, at once; nor from an
// output that needs no gradient: a router's topk indices give its Linear
// no gradient, where zeros would decay it under AdamW).
void collect_deps(Model &M, const Value *v, std::set<int> &real, std::set<int> &shape, bool as_shape,
                  std::set<int> *grad, bool no_grad) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return collect_deps(M, I.alias, real, shape, as_shape, grad, no_grad);
    switch (I.kind) {
    case VK::Static: return;
    case VK::Cheap:
        for (const Value *u : I.def->inputs()) collect_deps(M, u, real, shape, as_shape, grad, no_grad);
        return;
    case VK::Data:
        (as_shape ? shape : real).insert(I.owner);
        if (grad && !as_shape && !no_grad) {
            // (an output that needs no gradient, topk's indices, carries none back to its op)
            const Group &O = M.groups[I.owner];
            if ((size_t)I.part >= O.out_rg.size() || O.out_rg[I.part]) grad->insert(I.owner);
        }
        return;
    case VK::View:
        for (size_t j = 0; j < I.def->inputs().size(); j++)
            collect_deps(M, I.def->input(j), real, shape, as_shape || (int)j != I.src, grad, no_grad || !I.rg);
        return;
    }
}

void build_structure(Model &M) {
    int ng = (int)M.groups.size();
    // Dependencies.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        std::set<const Value *> local;
        for (Node *n : G.prog) {
            for (const Value *u : n->inputs())
                if (!local.count(u)) collect_deps(M, u, G.deps_real, G.deps_shape, false, &G.deps_grad);
            for (const Value *o : n->outputs()) local.insert(o);
        }
        G.deps_real.erase(gi);
        G.deps_shape.erase(gi);
        G.deps_grad.erase(gi);
        for (int d : G.deps_real) G.deps_shape.erase(d);
    }
    // In-place ordering: nobody else may read the owner between its main node and the in-place node.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        if (!G.main || G.prog.back() == G.main) continue;
        int a = M.node_index[G.main];
        for (Node *ip : G.prog) {
            int b = M.node_index[ip];
            if (b <= a) continue;
            for (int hj = 0; hj < ng; hj++) {
                if (hj == gi || !M.groups[hj].main) continue;
                int m = M.node_index[M.groups[hj].main];
                if (m > a && m < b && M.groups[hj].deps_real.count(gi))
                    fail(RK_EINPUT, "in-place operation on data read by another operation before it is not "
                                    "supported: " + where(ip) + " (read by " + where(M.groups[hj].main) + ")");
            }
        }
    }
    // An in-place op run on a copy: nothing may read the original after it.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        if (G.clone_arg < 0) continue;
        int p = M.node_index[G.main];
        for (int hj = 0; hj < ng; hj++) {
            const Group &H = M.groups[hj];
            if (hj == gi || !H.main || M.node_index[H.main] <= p) continue;
            if (H.deps_real.count(G.clone_owner) || H.deps_shape.count(G.clone_owner))
                fail(RK_EINPUT, "in-place operation on a view or an input whose original is read again later is "
                                "not supported: " + where(G.main) + " (read by " + where(H.main) + ")");
        }
        if (M.out_group == G.clone_owner)
            fail(RK_EINPUT, "in-place operation on a view of the model's output: " + where(G.main));
    }
    // Live groups: ancestors of the output group, and of every random group:
    // the plain forward draws for a random op whose result nothing reads (a
    // KV-cache prompt pass's last attention with dropout, kept by TorchScript
    // because it draws), and so must a step, or every later draw differs.
    std::vector<char> live(ng, 0);
    std::vector<int> stack{M.out_group};
    live[M.out_group] = 1;
    for (int g = 0; g < ng; g++)
        if (M.groups[g].nondet && M.groups[g].input_index < 0 && !live[g]) {
            live[g] = 1;
            stack.push_back(g);
        }
    while (!stack.empty()) {
        int g = stack.back();
        stack.pop_back();
        for (auto *ds : {&M.groups[g].deps_real, &M.groups[g].deps_shape})
            for (int d : *ds)
                if (!live[d]) { live[d] = 1; stack.push_back(d); }
    }
    // Topological order by main-node position.
    std::vector<int> indeg(ng, 0);
    for (int g = 0; g < ng; g++) {
        if (!live[g] || M.groups[g].input_index >= 0) continue;
        for (auto *ds : {&M.groups[g].deps_real, &M.groups[g].deps_shape})
            for (int d : *ds) {
                M.groups[d].consumers.push_back(g);
                if (M.groups[d].input_index < 0) indeg[g]++;
            }
    }
    using P = std::pair<int, int>;
    std::priority_queue<P, std::vector<P>, std::greater<P>> q;
    auto push = [&](int g) { q.push({M.node_index[M.groups[g].main], g}); };
    for (int g = 0; g < ng; g++)
        if (live[g] && M.groups[g].input_index < 0 && indeg[g] == 0) push(g);
    while (!q.empty()) {
        int g = q.top().second;
        q.pop();
        M.groups[g].pos = (int)M.order.size();
        M.order.push_back(g);
        for (int c : M.groups[g].consumers)
            if (--indeg[c] == 0) push(c);
    }
    int nlive = 0;
    for (int g = 0; g < ng; g++) nlive += live[g] && M.groups[g].input_index < 0;
    if ((int)M.order.size() != nlive)
        fail(RK_EINPUT, "the simplified graph has a cycle (an in-place operation on data that depends on it)");
    M.st.nodes_simplified = (int)M.order.size();
    // Which groups receive a gradient: reverse propagation from the output.
    M.groups[M.out_group].has_grad = true;
    for (int i = (int)M.order.size() - 1; i >= 0; i--) {
        Group &G = M.groups[M.order[i]];
        if (!G.has_grad) continue;
        for (int d : G.deps_grad)
            if (M.groups[d].rg) M.groups[d].has_grad = true;
    }
    for (auto &G : M.groups)
        if (G.input_index >= 0) G.has_grad = false; // inputs get no gradient
    // 1-separators: position i is a cut when no edge jumps over it, and the
    // data there is not read only through the items of a split (a fused gate
    // projection `fc(x).chunk(2)`: the next block's input gradient would be
    // one zero-filled buffer from the first item's backward to the block's
    // end, where autograd's SplitBackward makes it after the last item's
    // backward: keep-all 1.125 of the plain step on `silu(k) * v`; a
    // `select`'s backward makes such a buffer in the plain step too), nor
    // as a strided piece of a cat's gradient (a BatchNorm cat-ed with a
    // branch made from a side input: the block input's gradient would be
    // dense, and the BatchNorm's sums run in another order).
    int m = (int)M.order.size();
    std::vector<int> maxcons(ng, -1);
    for (int g = 0; g < ng; g++)
        for (int c : M.groups[g].consumers) maxcons[g] = std::max(maxcons[g], M.groups[c].pos);
    // A model input is not an edge to jump: the caller holds it all step and
    // it gets no gradient, so a later block reads it as a side input (a label
    // read only by the loss: cdgraph keeps it in memory until block 0's last
    // backward, after every later block's).
    int reach = -1;
    int begin = 0;
    for (int i = 0; i < m; i++) {
        int g = M.order[i];
        if (i == m - 1 || (reach <= i && M.groups[g].has_grad && !read_only_through_split_items(M, g) &&
                           !read_as_a_strided_piece(M, g))) {
            M.block_begin.push_back(begin);
            M.block_end.push_back(i + 1);
            begin = i + 1;
        }
        reach = std::max(reach, maxcons[g]);
    }
    if (M.order[m - 1] != M.out_group) fail(RK_EFAIL, "the output node is not last in the simplified graph");
    for (size_t b = 0; b < M.block_begin.size(); b++)
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            M.groups[M.order[i]].block = (int)b;
            M.groups[M.order[i]].local = i - M.block_begin[b];
        }
}

// The outputs of other groups that value v, read by group `self`, reads
// (its data, the data behind its views, shapes included).
static void mark_parts_read(Model &M, const Value *v, int self, std::vector<std::vector<char>> &read) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return mark_parts_read(M, I.alias, self, read);
    switch (I.kind) {
    case VK::Static: return;
    case VK::Data:
        if (I.owner != self && (size_t)I.part < read[I.owner].size()) read[I.owner][I.part] = 1;
        return;
    case VK::Cheap:
    case VK::View:
        for (const Value *u : I.def->inputs()) mark_parts_read(M, u, self, read);
        return;
    }
}

void find_phantom_parts(Model &M) {
    int ng = (int)M.groups.size();
    std::vector<std::vector<char>> read(ng);
    for (int g = 0; g < ng; g++) read[g].assign(M.groups[g].outs.size(), 0);
    for (int g = 0; g < ng; g++) {
        std::set<const Value *> local;
        for (Node *n : M.groups[g].prog) {
            for (const Value *u : n->inputs())
                if (!local.count(u)) mark_parts_read(M, u, g, read);
            for (const Value *o : n->outputs()) local.insert(o);
        }
    }
    for (int g = 0; g < ng; g++) {
        Group &G = M.groups[g];
        G.part_in_phantom.assign(G.outs.size(), 0);
        G.part_dead.assign(G.outs.size(), 0);
        G.phantom_part_bytes = G.dead_part_bytes = 0;
        // (the model's output: the loss reads it all; a block's output is the
        // next block's input, as many bytes: cdgraph)
        if (G.input_index >= 0 || G.outs.size() < 2 || G.part_bytes.size() != G.outs.size() || g == M.out_group ||
            !G.pieces.empty() || G.stack_reader >= 0)
            continue;
        bool any_read = false;
        for (size_t k = 0; k < G.outs.size(); k++) any_read = any_read || read[g][k];
        if (!any_read) continue;
        for (size_t k = 0; k < G.outs.size(); k++) {
            if (read[g][k]) continue;
            if (G.has_grad) { // what the backward saves of it stays with the phantom
                G.part_in_phantom[k] = 1;
                G.phantom_part_bytes += G.part_bytes[k];
            } else { // no backward: gone once made
                G.part_dead[k] = 1;
                G.dead_part_bytes += G.part_bytes[k];
            }
        }
    }
}

// Anonymized canonical text of a block: same ops, constants, shapes, dtypes
// and parameter shapes in the same places give the same text.
static std::string ivalue_text(const IValue &v) {
    std::ostringstream s;
    if (v.isTensor()) {
        const at::Tensor &t = v.toTensor();
        if (!t.defined()) return "T()";
        s << "T" << t.sizes() << t.strides() << c10::toString(t.scalar_type()) << (t.requires_grad() ? "g" : "");
        return s.str();
    }
    if (v.isObject()) return "obj";
    if (v.isList()) {
        s << "[";
        for (const IValue &e : v.toListRef()) s << ivalue_text(e) << ",";
        s << "]";
        return s.str();
    }
    if (v.isTuple()) {
        s << "(";
        for (const IValue &e : v.toTupleRef().elements()) s << ivalue_text(e) << ",";
        s << ")";
        return s.str();
    }
    s.precision(17);
    s << v;
    return s.str();
}

static std::string value_text(Model &M, const Value *v, int block, const std::map<const Value *, int> &local) {
    auto it = local.find(v);
    if (it != local.end()) return "L" + std::to_string(it->second);
    const VInfo &I = M.vi.at(v);
    if (I.alias) return value_text(M, I.alias, block, local);
    switch (I.kind) {
    case VK::Static: return ivalue_text(I.sval);
    case VK::Cheap: {
        std::string s = "[";
        for (const Value *u : I.def->inputs()) s += value_text(M, u, block, local) + ",";
        return s + "]";
    }
    case VK::Data: {
        const Group &O = M.groups[I.owner];
        if (O.block == block) return "g" + std::to_string(O.local);
        if (O.input_index >= 0 && block > 0) return "m" + std::to_string(O.input_index); // a side input
        return "in";
    }
    case VK::View: {
        std::string s = std::string(I.def->kind().toQualString()) + "(";
        for (const Value *u : I.def->inputs()) s += value_text(M, u, block, local) + ",";
        s += ")";
        for (size_t i = 0; i < I.def->outputs().size(); i++)
            if (I.def->output(i) == v) s += ":" + std::to_string(i);
        return s;
    }
    }
    return "?";
}

void classify_blocks(Model &M) {
    std::map<std::string, int> cls;
    for (size_t b = 0; b < M.block_begin.size(); b++) {
        std::ostringstream s;
        if (b == 0) s << "first;";
        else { // the input's bytes: equal bodies may read inputs of other sizes (a node with several outputs)
            const Group &I = M.groups[M.order[M.block_end[b - 1] - 1]];
            // whether the input's leaf may share a gradient (share_grad): else an
            // add's gradient is copied there, one activation more in the step
            // (resnet18's second layer1 block, after a multi-op block, measured
            // on the first, after the max pool: 589 824 B over its prediction)
            // and its layout: a Linear reading a transposed input copies it and
            // saves the copy, a contiguous one it saves as it is (unseen5's
            // mod: a block measured on the first, run on the second, freed the
            // input its weight gradient read)
            s << "in" << I.bytes << "/" << I.grad_bytes << (may_share_grad(I) ? "s" : "")
              << at::IntArrayRef(I.strides) << ";";
        }
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            const Group &G = M.groups[M.order[i]];
            std::map<const Value *, int> local;
            s << "{" << G.rg << G.has_grad << c10::toString(G.dtype) << at::IntArrayRef(G.sizes);
            for (Node *n : G.prog) {
                // a ReLU keeping a mask (its result read by pools, adds, ...
                // downstream only: exec_act_grad.cpp) holds other bytes
                s << n->kind().toQualString() << (M.act_mask.count(n) ? "#mask" : "") << "(";
                for (const Value *u : n->inputs()) s << value_text(M, u, (int)b, local) << ",";
                s << ")";
                for (const Value *o : n->outputs()) local.emplace(o, (int)local.size());
            }
            s << "}";
        }
        // view sums (exec_grad_order.cpp): their owner (-1: the input) and readers, as block positions
        for (int i = b > 0 ? M.block_end[b - 1] - 1 : M.block_begin[b]; i < M.block_end[b] - 1; i++)
            for (int k : M.groups[M.order[i]].vsums_owned) {
                s << ";vsum" << (i < M.block_begin[b] ? -1 : M.groups[M.order[i]].local) << ":";
                for (int r : M.view_sums[k].readers)
                    s << M.groups[r].local << (M.view_sums[k].reads_other.count(r) ? "+" : "") << ",";
                if (M.view_sums[k].viewer() < 0) s << "c" << M.groups[M.view_sums[k].carrier].local;
            }
        for (const BlockStaticSum &S : block_static_sums(M, (int)b)) { // static sums' buffers in the chain
            s << ";ssum" << S.bytes << ":";
            for (int r : S.readers) s << M.groups[r].local << ",";
        }
        if (b + 1 == M.block_begin.size()) s << ";last";
        auto it = cls.find(s.str());
        if (it == cls.end()) {
            it = cls.emplace(s.str(), (int)M.class_canon.size()).first;
            M.class_canon.push_back(s.str());
            M.class_rep.push_back((int)b);
        }
        M.block_class.push_back(it->second);
    }
    M.st.n_blocks = (int)M.block_begin.size();
    M.st.n_classes = (int)M.class_canon.size();
}

} // namespace rkx
