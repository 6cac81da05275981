// exec_measure.cpp — rk_exec_trace's job: measure each class of blocks on its
// first block (time, phantom bytes, forward and backward overheads, which
// dependencies each backward really reads: reference counts, then a NaN-poison
// safety net), optionally verify that the blocks run forward in order
// reproduce the module's output bit for bit, and assemble the chain of
// CD-graphs.  docs/exec.md, "Measurement".
#include <torch/script.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "exec_internal.h"

namespace rkx {

// Saved-tensor detection: reference counts of a tensor and of its storage.
struct RefSnap {
    at::Tensor t;
    size_t impl_refs, storage_refs;
    int owner;
};

// Safety net for fake dependencies: run the node's backward once normally and
// once with the data of every dependency believed unread (not saved) replaced
// by NaN bytes; if any gradient changes, those dependencies are real.
static void poison_check(Model &M, Runtime &R, int g, Measure &me, const std::vector<at::Tensor> &roots,
                         const std::vector<at::Tensor> &grs, const std::vector<at::Tensor> &in_leaves) {
    Group &G = M.groups[g];
    std::vector<int> fake;
    for (int d : G.deps_real)
        if (!me.saved_deps.count(d) && at::isFloatingType(M.groups[d].dtype)) fake.push_back(d);
    bool self_fake = !me.saved_self && at::isFloatingType(G.dtype);
    if (fake.empty() && !self_fake) return;
    std::vector<at::Tensor> params;
    for (Node *n : G.prog)
        for (const Value *u : n->inputs()) {
            const VInfo &I = M.vi.at(u);
            if (I.kind == VK::Static && I.sval.isTensor()) {
                const at::Tensor &t = I.sval.toTensor();
                if (t.defined() && t.is_leaf() && t.requires_grad()) params.push_back(t);
            }
        }
    auto once = [&]() {
        for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
        for (auto &p : params) p.mutable_grad() = at::zeros_like(p);
        R.piece_grad.clear();
        R.stack_grad.clear();
        torch::autograd::backward(roots, grs, true);
        std::vector<at::Tensor> r;
        for (auto &pg : R.piece_grad) r.push_back(pg.second.clone()); // pieces' gradients (exec_pieces.cpp)
        for (auto &sg : R.stack_grad) r.push_back(sg.second.clone());
        R.piece_grad.clear();
        R.stack_grad.clear();
        for (auto &l : in_leaves) r.push_back(l.grad().defined() ? l.grad().clone() : at::Tensor());
        for (auto &p : params) r.push_back(p.grad().clone());
        return r;
    };
    if (roots.empty()) return;
    std::vector<at::Tensor> ref = once();
    // Each candidate poisoned alone: one that the count missed (a saved
    // dependency) must not take the others with it (the `mse_loss(z,
    // t.detach(), reduction="none")` output, which MseLossBackward0 never
    // reads, was held to its backward with the target: keep-all 1.12 x plain).
    auto poisoned_changes = [&](int d) {
        std::vector<std::pair<c10::StorageImpl *, c10::DataPtr>> saved;
        std::vector<at::Tensor> bufs;
        for (size_t k = 0; k < R.gs[d].p.size(); k++) {
            Part &P = R.gs[d].p[k];
            if (!P.leaf.defined() || !P.leaf.is_floating_point()) continue; // indices stay valid
            const std::vector<char> &ph = M.groups[d].part_in_phantom;
            if (d == g && k < ph.size() && ph[k]) continue; // its phantom's, which the backward may read
            c10::StorageImpl *si = P.canon.unsafeGetStorageImpl();
            at::Tensor buf = at::empty({(int64_t)si->nbytes()}, at::TensorOptions().dtype(at::kByte).device(si->device()))
                                 .fill_(255);
            bufs.push_back(buf);
            saved.push_back({si, si->set_data_ptr(c10::DataPtr(buf.data_ptr(), si->device()))});
        }
        if (saved.empty()) return false;
        std::vector<at::Tensor> got;
        bool same = true;
        try {
            got = once();
        } catch (const c10::Error &) {
            same = false; // the backward failed on poisoned data: it reads it
        }
        for (auto &p : saved) p.first->set_data_ptr(std::move(p.second));
        for (size_t i = 0; same && i < ref.size(); i++)
            if (ref[i].defined() != got[i].defined() || (ref[i].defined() && !at::equal(ref[i], got[i]))) same = false;
        return !same;
    };
    for (int d : fake)
        if (poisoned_changes(d)) me.saved_deps.insert(d);
    if (self_fake && poisoned_changes(g)) me.saved_self = true;
    for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
}

// The parameters a group's backward gives a gradient to, in the order its
// program reads them: static inputs that are leaves requiring grad, and the
// leaves behind static values computed from parameters (`weight.t()`),
// found through their autograd graph.
static std::vector<at::Tensor> group_params(Model &M, int g) {
    std::vector<at::Tensor> ps;
    std::set<const c10::TensorImpl *> seen;
    std::set<const torch::autograd::Node *> visited;
    std::function<void(const std::shared_ptr<torch::autograd::Node> &)> walk =
        [&](const std::shared_ptr<torch::autograd::Node> &fn) {
            if (!fn || !visited.insert(fn.get()).second) return;
            if (auto *acc = dynamic_cast<torch::autograd::AccumulateGrad *>(fn.get())) {
                if (seen.insert(acc->variable.unsafeGetTensorImpl()).second) ps.push_back(acc->variable);
                return;
            }
            for (const auto &e : fn->next_edges()) walk(e.function);
        };
    std::vector<IValue> todo;
    for (Node *n : M.groups[g].prog)
        for (const Value *u : n->inputs()) {
            auto it = M.vi.find(u);
            if (it != M.vi.end() && it->second.kind == VK::Static) todo.push_back(it->second.sval);
        }
    for (const IValue &v : todo) {
        std::vector<at::Tensor> ts;
        tensors_in(v, ts);
        for (const at::Tensor &t : ts) {
            if (!t.defined() || !t.requires_grad()) continue;
            if (t.is_leaf()) {
                if (seen.insert(t.unsafeGetTensorImpl()).second) ps.push_back(t);
            } else walk(t.grad_fn());
        }
    }
    return ps;
}

// Which parameters of each measured node get a second contribution in a step,
// added into .grad in place (a temporary); the others' first contribution
// becomes .grad (no temporary).  Blocks run their backwards from the last one
// down, so a parameter read in several blocks is first reached by the latest
// block's node; within one block the order of backwards is the schedule's, so
// every reader there counts as accumulating (conservative).  A class is
// measured on its first block but costs the same in all: a node accumulates
// parameter i (by its position in group_params) when it does in any block.
static std::vector<std::vector<std::vector<char>>> accumulating_params(Model &M) {
    std::map<const c10::TensorImpl *, std::vector<int>> readers;
    std::vector<std::vector<at::Tensor>> gp(M.groups.size());
    for (int g : M.order)
        if (M.groups[g].has_grad) {
            gp[g] = group_params(M, g);
            for (auto &p : gp[g]) readers[p.unsafeGetTensorImpl()].push_back(g);
        }
    std::vector<std::vector<std::vector<char>>> acc(M.class_canon.size());
    for (size_t c = 0; c < M.class_rep.size(); c++)
        acc[c].resize(M.block_end[M.class_rep[c]] - M.block_begin[M.class_rep[c]]);
    for (size_t b = 0; b < M.block_begin.size(); b++)
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            int g = M.order[i];
            const Group &G = M.groups[g];
            std::vector<char> &a = acc[M.block_class[b]][G.local];
            if (a.size() < gp[g].size()) a.resize(gp[g].size(), 0);
            for (size_t k = 0; k < gp[g].size(); k++) {
                const std::vector<int> &rs = readers[gp[g][k].unsafeGetTensorImpl()];
                int last = -1; // the latest block reading the parameter
                for (int r : rs) last = std::max(last, M.groups[r].block);
                bool first = G.block == last;
                for (int r : rs)
                    if (r != g && M.groups[r].block == last) first = false;
                if (!first) a[k] = 1;
            }
        }
    return acc;
}

// The layout each node's output gradient arrives in during a step: the
// leaf's hook records it (Part::grad_strides, exec_runtime.cpp).  A node's
// backward is measured on ones in that layout (bwd_roots): a transposed
// gradient makes some kernels copy it first (a batched matmul's backward
// after a transpose, col2im's after unfold + transpose), a copy the step
// pays and the measurement with contiguous ones missed.  One step through
// the executor (every node forward, the loss's sum, every backward from the
// last), before the measurement, on a Runtime of its own.  A failure leaves
// the layouts unknown (contiguous ones, as before): the measurement reports
// the model's real errors.
static void probe_grad_layouts(Model &M, Runtime &R) {
    try {
        Runtime P(M);
        for (int g : M.order) P.fwd(g);
        if (M.out_group < 0 || !P.gs[M.out_group].ran) return;
        at::Tensor y = P.materialize(M.output).toTensor();
        if (!y.requires_grad()) return;
        torch::autograd::backward({y.sum()});
        for (size_t i = M.order.size(); i-- > 0;) {
            int g = M.order[i];
            if (M.groups[g].has_grad && P.gs[g].ran) P.bwd(g, false, BWD_ALL);
        }
        for (size_t g = 0; g < P.gs.size(); g++) // both made from M: the same groups and parts
            for (size_t k = 0; k < P.gs[g].p.size(); k++) {
                R.gs[g].p[k].grad_strides = P.gs[g].p[k].grad_strides;
                R.gs[g].p[k].recv_strides = P.gs[g].p[k].recv_strides;
            }
    } catch (const std::exception &) {
    }
}

// Blocks of one class (equal bodies) may receive their gradients in other
// layouts: Swin V2's last LayerNorm block gets its output's gradient
// permuted (through the pool over its permuted output), an equal block
// before it a contiguous one, and LayerNorm's backward copies a permuted
// gradient first.  One measurement of the class would miss that copy
// (110 592 B on swin_v2_t at 96×96).  So the layouts the probe recorded are
// part of a block's class: a class whose blocks received different ones is
// split, its first block of each layout the new class's representative (the
// first class keeps its number; the others are numbered after all existing
// ones, in block order).  `rkmate run` adopts these classes from the chain
// (match_chain, exec_run.cpp).
static void split_classes_by_grad_layout(Model &M, const Runtime &R) {
    std::map<std::pair<int, std::string>, int> cls;
    size_t n_old = M.class_canon.size();
    for (size_t b = 0; b < M.block_begin.size(); b++) {
        std::ostringstream s;
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++)
            for (const Part &P : R.gs[M.order[i]].p)
                s << at::IntArrayRef(P.grad_strides) << at::IntArrayRef(P.recv_strides) << ";";
        int old = M.block_class[b];
        auto key = std::make_pair(old, s.str());
        auto it = cls.find(key);
        if (it == cls.end()) {
            int c = old;
            if (M.class_rep[old] != (int)b) { // a second layout of this class
                c = (int)M.class_canon.size();
                M.class_canon.push_back(M.class_canon[old] + ";grads " + s.str());
                M.class_rep.push_back((int)b);
            }
            it = cls.emplace(key, c).first;
        }
        M.block_class[b] = it->second;
    }
    if (M.class_canon.size() != n_old) M.st.n_classes = (int)M.class_canon.size();
}

void trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st) {
    double t0 = now_us(); // wall clock of the whole trace
    NondeterminismWatch watch;
    Model M;
    load_model(M, o, /*for_tracing=*/true);
    Mem A(M);
    auto params = params_of(M);
    clear_param_grads(params);
    // The plain PyTorch step (module forward + sum().backward()), once: its
    // activation peak (what a percentage budget is a percentage of, as
    // rk_exec_run measures it) and, with --verify, the reference output.
    at::Tensor ref;
    int64_t plain_peak = 0;
    {
        int64_t input_bytes = 0;
        for (auto &t : M.inputs) input_bytes += t.numel() * t.element_size();
        std::vector<at::Tensor> keep_inputs;
        for (auto &t : M.inputs) keep_inputs.push_back(t.clone()); // the step may write them
        int64_t base = A.cur();
        ActivationPeak ap(A, params); // .grad is not activation memory, as rk_exec_run counts it
        {
            at::Tensor r = plain_forward(M, o->seed);
            if (o->verify) ref = keep_copy(r);
            backward_measured(r.sum());
        }
        plain_peak = ap.finish() - base + input_bytes;
        for (size_t i = 0; i < M.inputs.size(); i++) M.inputs[i].copy_(keep_inputs[i]);
        clear_param_grads(params);
    }
    int runs = o->measure_runs > 0 ? o->measure_runs : 3;
    const double cap_us = 0.3e6; // stop timing a node after this much time (>= 1 run)
    Runtime R(M);
    if (o->measure) {
        probe_grad_layouts(M, R);
        split_classes_by_grad_layout(M, R);
    }
    std::vector<std::vector<Measure>> meas(M.class_canon.size());
    std::vector<char> is_rep(M.block_begin.size(), 0);
    for (size_t c = 0; c < M.class_rep.size(); c++) {
        is_rep[M.class_rep[c]] = 1;
        meas[c].resize(M.block_end[M.class_rep[c]] - M.block_begin[M.class_rep[c]]);
    }
    std::vector<std::vector<std::vector<char>>> accum = accumulating_params(M);
    std::vector<std::vector<int64_t>> accum_bytes(M.class_canon.size()); // per class and local node
    double loss_time = 0;
    size_t nb = M.block_begin.size();
    // Without --verify the forward stops after the last block that is measured.
    size_t last_needed = 0;
    for (int r : M.class_rep) last_needed = std::max(last_needed, (size_t)r);
    // Without --verify only the measured blocks run, each from its input as
    // the analysis run computed it.
    bool all = o->verify || !o->measure;
    size_t nrun = all ? nb : last_needed + 1;
    for (size_t b = 0; b < nrun; b++) {
        if (!all && !is_rep[b]) continue;
        if (b > 0) {
            int sep = M.order[M.block_end[b - 1] - 1];
            GState &S = R.gs[sep];
            if (!S.ran) {
                const std::vector<at::Tensor> &bo = M.block_output.at(sep);
                for (size_t k = 0; k < bo.size(); k++) {
                    Part &P = S.p[k];
                    P.leaf = bo[k].detach();
                    if (M.groups[sep].has_grad && M.groups[sep].out_rg[k]) P.leaf.requires_grad_(true);
                    P.canon = P.leaf.storage();
                }
                S.ran = true;
            }
        }
        if (o->progress)
            fprintf(stderr, "\rrkmate trace: block %zu/%zu, %zu classes   ", b + 1, nb, M.class_canon.size());
        bool measure = o->measure && is_rep[b];
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            int g = M.order[i];
            Group &G = M.groups[g];
            if (!measure) {
                R.fwd(g);
                continue;
            }
            Measure &me = meas[M.block_class[b]][G.local];
            // Materialize the inputs first so that views exist before the snapshot.
            std::vector<RefSnap> snaps;
            {
                std::set<const Value *> local;
                for (Node *n : G.prog) {
                    for (const Value *u : n->inputs()) {
                        if (local.count(u) || owned_by(M, u, g)) continue;
                        IValue v = R.materialize(u);
                        std::vector<int> own;
                        owners_of(M, u, own);
                        std::vector<at::Tensor> ts;
                        tensors_in(v, ts);
                        // A tensor of a value read from several groups' data (an
                        // item of broadcast_tensors: Normal(loc, scale)'s scale,
                        // an expand of the std, whose view the analysis gives the
                        // mean as owner) is a read of the group whose bytes it
                        // holds: saved, it must not make the others real (ppo
                        // held the mean to the log and pow backwards of the std).
                        std::vector<int> cand = own;
                        {
                            std::set<int> real, shape;
                            collect_deps(M, u, real, shape, false);
                            for (int d : real)
                                if (std::find(cand.begin(), cand.end(), d) == cand.end()) cand.push_back(d);
                        }
                        for (auto &t : ts) {
                            std::vector<int> hold;
                            if (cand.size() > 1 && t.has_storage())
                                for (int ow : cand)
                                    for (const Part &P : R.gs[ow].p)
                                        if (P.canon && P.canon.unsafeGetStorageImpl() ==
                                                           t.storage().unsafeGetStorageImpl())
                                            hold.push_back(ow);
                            for (int ow : hold.empty() ? own : hold) snaps.push_back({t, 0, 0, ow});
                        }
                    }
                    for (const Value *x : n->outputs()) local.insert(x);
                }
            }
            // The leaf of a view sum this node reads instead of the view (it is
            // not its last reader, exec_grad_order.cpp): made now, on the
            // data's storage, so that only what the node saves counts.
            for (int k : G.vsums_read)
                if (M.view_sums[k].viewer() != g) snaps.push_back({R.vsum_leaf(k), 0, 0, M.view_sums[k].owner});
            // The views this node carries (made first in its forward, for their
            // backward functions only: exec_grad_order.cpp, "The carrier"): made
            // now too, so that they do not count as a read of the data.  Counted,
            // a carrier that reads the data held it to its backward, where the
            // plain step frees it when the view's reader's backward has run
            // (unseen11's TabNet, `x[:, :d] * sigmoid(x[:, d:])`: x held
            // through the sigmoid's backward, keep-all 1.006).
            for (int k : G.vsums_carried) R.materialize(M.view_sums[k].v);
            // Leaves' grad accumulators hold their tensor: create them first so
            // that only saved tensors raise the reference counts.
            std::vector<std::shared_ptr<torch::autograd::Node>> accs;
            for (auto &s : snaps)
                if (s.t.is_leaf() && s.t.requires_grad()) accs.push_back(torch::autograd::impl::grad_accumulator(s.t));
            for (auto &s : snaps) {
                s.impl_refs = s.t.use_count();
                s.storage_refs = s.t.has_storage() ? s.t.storage().use_count() : 0;
            }
            int64_t c0 = A.cur();
            A.reset_peak();
            R.fwd(g);
            int64_t c1 = A.cur(), pk = A.peak();
            GState &S = R.gs[g];
            int64_t alloc = 0;
            for (Part &P : S.p)
                if (P.leaf.has_storage()) alloc += (int64_t)P.leaf.storage().nbytes();
            const int64_t graph_bytes = c1 - c0 - alloc; // what the autograd graph holds
            me.phantom = std::max<int64_t>(0, graph_bytes);
            me.fwd_over = pk - c1;
            // A second read of a leaf among the node's arguments is an alias
            // leaf on its bytes (dedupe_reads), kept with the first until the
            // node's backward settles them: neither holder is a read of the
            // data; the alias is saved only when more than its pair and its
            // grad accumulator hold it (`e + e` or `cat([u, u])` held e to the
            // node's backward, which reads no value: keep-all 1.25 and 1.15).
            auto dup_of_g = R.dup_alias.find(g);
            for (auto &s : snaps) {
                size_t ir = s.t.use_count(), sr = s.t.has_storage() ? s.t.storage().use_count() : 0;
                bool alias_saved = false;
                if (dup_of_g != R.dup_alias.end())
                    for (auto &la : dup_of_g->second) {
                        if (la.first.is_same(s.t) && ir > 0) ir--;
                        if (!s.t.has_storage() || !la.second.has_storage() ||
                            la.second.storage().unsafeGetStorageImpl() != s.t.storage().unsafeGetStorageImpl())
                            continue;
                        if (sr > 0) sr--;
                        const bool acc = torch::autograd::impl::try_get_grad_accumulator(la.second) != nullptr;
                        alias_saved = alias_saved || (size_t)la.second.use_count() > 1 + (acc ? 1 : 0);
                    }
                if (ir > s.impl_refs || sr > s.storage_refs || alias_saved) me.saved_deps.insert(s.owner);
            }
            // The proxy, the leaf and the canonical Storage hold it (and the
            // proxy's base when the op returned a view of its own result, as
            // linear on a 3-d input does); more holders are saved outputs.
            // (A false "not saved" is caught by poison_check below.)
            // An integer output returned as a view of the op's own (adaptive
            // max pooling 1-d: the 2-d op's indices, squeezed) is saved as that
            // base, which poison_check cannot test (indices are not poisoned).
            me.saved_self = false;
            for (size_t k = 0; k < S.p.size(); k++) {
                Part &P = S.p[k];
                if (k < G.part_in_phantom.size() && G.part_in_phantom[k]) continue; // (the phantom's)
                size_t holders = 3 + (P.proxy.defined() && P.proxy.is_view() ? 1 : 0);
                if (G.has_grad && ((P.leaf.has_storage() && P.leaf.storage().use_count() > holders) ||
                                   P.proxy.use_count() > 1)) // an output without grad_fn (indices) is saved as is
                    me.saved_self = true;
                if (G.has_grad && P.proxy.defined() && !P.proxy.is_floating_point() && P.proxy.is_view() &&
                    P.proxy._base().use_count() > 1)
                    me.saved_self = true;
            }
            snaps.clear();
            std::vector<double> ts;
            double spent = 0;
            // (the timing runs make aliases of their own: the backward measured
            // below runs on R.fwd's graph, whose second reads are these)
            auto dup_it = R.dup_alias.find(g);
            const auto dup_reads = dup_it == R.dup_alias.end() ? decltype(dup_it->second){} : dup_it->second;
            auto put_back_dup_reads = [&]() {
                R.dup_alias.erase(g);
                if (!dup_reads.empty()) R.dup_alias[g] = dup_reads;
            };
            for (int r = 0; r < runs && (r == 0 || spent < cap_us); r++) {
                double a = A.now();
                std::vector<at::Tensor> x = R.exec_program(g);
                double e = A.now() - a;
                ts.push_back(e);
                spent += e;
            }
            put_back_dup_reads();
            me.fwd_time = median(ts);
            if (G.has_grad) {
                std::vector<at::Tensor> roots, grs;
                R.bwd_roots(g, roots, grs, true);
                std::vector<at::Tensor> in_leaves, acc_leaves;
                for (int d : G.deps_grad)
                    if (M.groups[d].has_grad && M.groups[d].pieces.empty() && M.groups[d].stack_reader != g) {
                        // (pieces: to R.piece_grad; a stack's kept inputs: to R.stack_grad)
                        // A later consumer's backward (run before this one) made
                        // d's gradient already: this one adds a temporary to it.
                        bool later = false;
                        for (int c : M.groups[d].consumers)
                            if (c != g && M.groups[c].has_grad && M.groups[c].deps_grad.count(d) &&
                                M.groups[c].pos > G.pos)
                                later = true;
                        for (size_t k = 0; k < R.gs[d].p.size(); k++)
                            if (M.groups[d].out_rg[k]) (later ? acc_leaves : in_leaves).push_back(R.gs[d].p[k].leaf);
                    }
                // The data of a view sum it carries without reading it (the view's
                // backward gives it a gradient): there already when a later node
                // gave the data a gradient of its own (not only the view sums').
                for (int k : G.vsums_carried) {
                    const int d = M.view_sums[k].owner;
                    if (G.deps_grad.count(d) || !M.groups[d].pieces.empty()) continue;
                    bool later = false;
                    for (int c : M.groups[d].consumers) {
                        const Group &C = M.groups[c];
                        if (c == g || !C.has_grad || !C.deps_grad.count(d) || C.pos < G.pos) continue;
                        bool of_d = false, direct = !C.vsums_carried.empty();
                        for (int r : C.vsums_read) {
                            const ViewSum &VS = M.view_sums[r];
                            if (VS.owner != d) continue;
                            of_d = true;
                            direct = direct || VS.viewer() == c || VS.reads_other.count(c);
                        }
                        later = later || !of_d || direct;
                    }
                    for (size_t p = 0; p < R.gs[d].p.size(); p++)
                        if (M.groups[d].out_rg[p]) (later ? acc_leaves : in_leaves).push_back(R.gs[d].p[p].leaf);
                }
                // A view sum's leaf this node reads (it is no last reader,
                // exec_grad_order.cpp): added to in place when a reader whose
                // backward runs before this one's (not the last) gave it a gradient.
                for (int k : G.vsums_read) {
                    const ViewSum &VS = M.view_sums[k];
                    auto vp = R.vsum_part.find(k);
                    if (VS.viewer() == g || vp == R.vsum_part.end() || !vp->second.leaf.defined()) continue;
                    bool later = false;
                    for (int c : VS.readers) later = later || (c != VS.viewer() && M.groups[c].pos > G.pos);
                    (later ? acc_leaves : in_leaves).push_back(vp->second.leaf);
                }
                // The same for pieces (exec_pieces.cpp): a piece this node reads
                // that a later reader's backward gave a gradient already (F.normalize
                // of q: the division's backward runs before the norm's) gets this
                // node's added in place; its new gradient is a temporary (the norm's
                // backward held two piece-sized buffers at once, which the chain,
                // counting the piece's gradient as present, did not see).
                std::vector<std::pair<const Value *, at::Tensor>> acc_pieces;
                for (int d : G.deps_grad) {
                    const Group &D = M.groups[d];
                    if (!D.has_grad) continue;
                    for (size_t k = 0; k < D.pieces.size(); k++) {
                        const std::vector<int> &rd = D.piece_readers[k];
                        bool reads = false, later = false;
                        for (int c : rd) {
                            reads = reads || c == g;
                            later = later || (c != g && M.groups[c].has_grad && M.groups[c].pos > G.pos);
                        }
                        if (!reads || !later) continue;
                        // (the piece as this node's forward read it: cached; never made here)
                        auto it = R.cache.find(D.pieces[k]);
                        if (it == R.cache.end() || !it->second.isTensor()) continue;
                        const at::Tensor &t = it->second.toTensor();
                        acc_pieces.push_back({D.pieces[k], at::zeros(t.sizes(), t.options().requires_grad(false))});
                    }
                }
                // A static sum's buffer as in a step (its chain D-node): there
                // when a reader whose backward runs before this one's gave it a
                // gradient, else this backward makes it.
                std::vector<std::pair<const Value *, bool>> ssum_acc;
                for (const BlockStaticSum &SS : block_static_sums(M, (int)b)) {
                    const std::vector<int> &rs = SS.readers;
                    if (std::find(rs.begin(), rs.end(), g) == rs.end()) continue;
                    ssum_acc.push_back({SS.v, rs.back() != g});
                }
                auto reset = [&]() {
                    for (auto &sa : ssum_acc) {
                        R.sum_grad.erase(sa.first);
                        if (sa.second) {
                            const at::Tensor &t = M.vi.at(sa.first).sval.toTensor();
                            R.sum_grad[sa.first] = at::zeros(t.sizes(), t.options().requires_grad(false));
                        }
                    }
                    R.piece_grad.clear();
                    R.stack_grad.clear();
                    for (auto &ap : acc_pieces) R.piece_grad[ap.first] = at::zeros_like(ap.second);
                    for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
                    for (auto &l : acc_leaves) l.mutable_grad() = at::zeros_like(l);
                };
                reset();
                // The parameters' .grad as in a step: undefined where this
                // node's contribution is the first (autograd takes it as
                // .grad: not a temporary), defined where it is added in place
                // (the new gradient is a temporary).
                std::vector<at::Tensor> gps = group_params(M, g);
                const std::vector<char> &acc = accum[M.block_class[b]][G.local];
                bool acc_any = false;
                for (char x : acc) acc_any = acc_any || x;
                // gps and acc come from the same program text: a size
                // mismatch (never seen) counts every parameter as added.
                auto adds = [&](size_t k) { return acc.size() == gps.size() ? acc[k] != 0 : acc_any; };
                auto set_param_grads = [&]() {
                    for (size_t k = 0; k < gps.size(); k++)
                        gps[k].mutable_grad() = adds(k) ? at::zeros_like(gps[k]) : at::Tensor();
                };
                std::vector<int64_t> &ab = accum_bytes[M.block_class[b]];
                if (ab.size() <= (size_t)G.local) ab.resize(G.local + 1, 0);
                for (size_t k = 0; k < gps.size(); k++)
                    if (adds(k)) ab[G.local] += gps[k].numel() * gps[k].element_size();
                // The backward (inputs empty), or one part of it (autograd
                // restricted to inputs; whole = false: the gradient stays, as
                // for the part that runs first), measured as rk_exec_run runs it.
                auto measure_bwd = [&](const std::vector<at::Tensor> &inputs, bool whole, double &time,
                                       int64_t &over, bool weight_part = false) {
                    set_param_grads();
                    std::vector<double> tb;
                    double spentb = 0;
                    for (int r = 0; r <= runs && (r <= 1 || spentb < cap_us); r++) {
                        if (r > 0) { // the gradient may have been freed by the last run
                            roots.clear();
                            grs.clear();
                            R.bwd_roots(g, roots, grs, true);
                        }
                        // The first run measures memory as rk_exec_run does: the
                        // peak less the parameter gradients that became .grad, from
                        // the function that made each (ActivationPeak).
                        std::unique_ptr<ActivationPeak> ap;
                        if (r == 0) ap = std::make_unique<ActivationPeak>(A, gps);
                        else A.reset_peak();
                        // The executor frees the node's data after the root function
                        // (frees_data_in_bwd); here it stays (later runs need it): the
                        // rest of the backward is counted without it.
                        std::function<void()> split;
                        if (whole && ap && me.saved_self && R.frees_data_in_bwd(g))
                            split = [&]() {
                                ap->boundary();
                                ap->bias = -(int64_t)S.p[0].canon.nbytes();
                            };
                        // (leaves this backward reaches twice get their gradient so
                        // far as a root's, as in a step: exec_grad_order.cpp)
                        // (a view sum's last reader: the others' sum, zeros, handed to the
                        // view's backward first; the chain counts it live through the
                        // node, so its bytes, made here, are not overhead)
                        int64_t vsum_bytes = 0;
                        size_t seeds = R.seed_roots(g, roots, grs, inputs, !weight_part, true, &vsum_bytes);
                        double a = A.now();
                        int64_t freed = Runtime::backward_consuming(roots, grs, split, 0, inputs, whole, true, seeds);
                        freed += vsum_bytes;
                        if (whole) R.settle_dup_aliases(g);
                        double e = A.now() - a;
                        // The simulator counts the node's own gradient and data live
                        // during the node: what is freed early is not overhead.  The
                        // result is negative when the node never holds its inputs and
                        // its new gradients at once (an in-place activation's gradient
                        // written into the incoming one, exec_act_grad.cpp): the
                        // simulator then lowers the step by up to those gradients
                        // (rk_cnode_step_overhead).
                        if (ap) {
                            int64_t bp = ap->finish(), b1 = A.cur() - ap->grads;
                            over = bp - b1 - freed;
                        } else { tb.push_back(e); spentb += e; }
                        reset();
                        set_param_grads();
                    }
                    clear_param_grads(gps);
                    roots.clear();
                    grs.clear();
                    R.bwd_roots(g, roots, grs, true);
                    time = median(tb);
                };
                measure_bwd({}, true, me.bwd_time, me.bwd_over);
                in_leaves.insert(in_leaves.end(), acc_leaves.begin(), acc_leaves.end());
                poison_check(M, R, g, me, roots, grs, in_leaves);
                // The backward in two parts, where the group's autograd graph
                // allows it, the whole backward reads an input that the input
                // part does not, and the parts' gradients are the one call's.
                std::vector<at::Tensor> ps, xs;
                bool sheds = false;
                for (int d : me.saved_deps) sheds = sheds || G.deps_real.count(d);
                if (!o->no_split_bwd && sheds && G.pieces.empty() && split_leaves(M, R, g, ps, xs)) {
                    if (split_parts_equal(roots, grs, ps, xs)) {
                        if (!input_part_reads(M, R, g, roots, grs, xs)) { // else nothing to shed: kept whole
                            measure_bwd(ps, false, me.w_time, me.w_over, true);
                            R.add_carried_leaves(g, xs);
                            measure_bwd(xs, false, me.x_time, me.x_over);
                            // Split only where neither part needs more than the
                            // one call even when x stays (the weight part holds
                            // x and dy, the input part dy and dx): a strided
                            // convolution's input part can have a larger
                            // temporary than the one call, and the solver cannot
                            // join the parts again.
                            int64_t dx = 0;
                            for (auto &l : xs) dx += l.numel() * (int64_t)l.element_size();
                            me.split = me.x_over <= me.bwd_over && me.w_over <= me.bwd_over + dx;
                            M.st.split_bwd += me.split ? 1 : 0;
                        }
                    } else {
                        M.st.split_bwd_unequal++;
                        if (!M.st.split_warning[0])
                            snprintf(M.st.split_warning, sizeof M.st.split_warning,
                                     "the backward of %s is kept whole: its two parts' gradients differ from "
                                     "the one call's", where(G.main).c_str());
                    }
                    for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
                }
                // The whole backward's memory once more, last, as rk_exec_run
                // runs it: the graph not kept, so each autograd function's saved
                // tensors go as soon as it has run (a matmul's operand copies
                // before the gradients it makes, hardswish_'s input copy before
                // the BatchNorm's backward), as in the plain step.  (The runs
                // above keep the graph: timing, the poison check and the split
                // parts need it, and the parts keep it in the executor too.)
                reset();
                set_param_grads();
                roots.clear();
                grs.clear();
                R.bwd_roots(g, roots, grs, true);
                // The second reads as a step starts them: no gradient yet (the
                // runs above settled them once, then left their gradients on).
                for (auto la : dup_reads) la.second.mutable_grad() = at::Tensor();
                put_back_dup_reads();
                {
                    ActivationPeak ap(A, gps);
                    std::function<void()> split;
                    if (me.saved_self && R.frees_data_in_bwd(g))
                        split = [&]() {
                            ap.boundary();
                            ap.bias = -(int64_t)S.p[0].canon.nbytes();
                        };
                    int64_t vsum_bytes = 0;
                    size_t seeds = R.seed_roots(g, roots, grs, {}, true, true, &vsum_bytes);
                    int64_t freed =
                        Runtime::backward_consuming(roots, grs, split, 0, {}, true, /*retain=*/false, seeds);
                    freed += vsum_bytes;
                    // A second read's gradient (an alias leaf's: `cat([x, x])`)
                    // joins the leaf's as the executor adds it, right after the
                    // backward: both were held until then.
                    R.settle_dup_aliases(g);
                    // What the backward left of the graph goes too (forget
                    // phantoms): the bytes after that less the whole graph's are
                    // those before the backward less the incoming gradient plus
                    // the gradients made, however early the graph's tensors went.
                    int64_t bp = ap.finish();
                    R.forget_phantom(g);
                    // (forget_phantom freed the outputs counted in the phantom too)
                    int64_t b1 = A.cur() - ap.grads + graph_bytes + G.phantom_part_bytes;
                    me.bwd_over = bp - b1 - freed;
                }
                if (!G.pieces.empty()) {
                    // Measured from its whole gradient; the executor makes that
                    // gradient (zeros + its pieces', which the chain counts
                    // live through the node) at the start of the node.
                    int64_t pieces = 0;
                    for (int64_t x : G.piece_bytes) pieces += x;
                    me.bwd_over = std::max(me.bwd_over + G.grad_bytes - pieces, G.grad_bytes);
                }
                // A stack whose inputs keep their pieces of its gradient: the
                // chain counts that gradient again on one of them (exec_pieces.cpp).
                if (G.stack_input_kept) me.bwd_over -= G.grad_bytes;
                R.stack_buffers.clear();
                reset();
                clear_param_grads(gps);
                for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
                for (auto &l : acc_leaves) l.mutable_grad() = at::Tensor();
            }
        }
    }
    if (o->progress) fprintf(stderr, "\n");
    // The loss node: the reduction of the output (timed once, tiny).
    if (R.gs[M.out_group].ran) {
        at::Tensor outv = R.materialize(M.output).toTensor();
        double a = A.now();
        at::Tensor l = outv.sum();
        loss_time = A.now() - a;
    }
    st->forward_equal = -1;
    st->max_forward_diff = 0;
    if (o->verify) { // bit-exact forward check
        at::Tensor outv = R.materialize(M.output).toTensor();
        at::Tensor mine = keep_copy(outv);
        PauseTracking p;
        st->forward_equal = mine.sizes() == ref.sizes() && at::equal(mine, ref);
        st->max_forward_diff =
            mine.sizes() == ref.sizes() ? (mine.to(at::kDouble) - ref.to(at::kDouble)).abs().max().item<double>() : INFINITY;
    }
    // The chain.
    rk_chain_init(out);
    for (size_t c = 0; c < M.class_canon.size(); c++) {
        rk_graph gr;
        ClassGraph cg;
        build_class_graph(M, M.class_rep[c], o->measure ? &meas[c] : nullptr, loss_time, &gr, cg);
        // The part of each backward's temporaries that is weight gradients
        // added into .grad in place (what explains a floor it sets).
        for (int i = 0; i < gr.n_c && i < (int)cg.cmap.size(); i++) {
            const CMapEntry &e = cg.cmap[i];
            if ((e.kind != 1 && e.kind != 3) || e.local < 0 || (size_t)e.local >= accum_bytes[c].size()) continue;
            int64_t ov = gr.c[i].overhead > 0 ? gr.c[i].overhead : 0;
            gr.c[i].grad_accum = std::min<int64_t>(accum_bytes[c][e.local], ov);
        }
        rk_error e;
        char where_buf[64];
        snprintf(where_buf, sizeof where_buf, "class %zu", c);
        rk_status s = rk_graph_finalize(&gr, where_buf, &e);
        if (s != RK_OK) {
            rk_graph_free(&gr);
            fail(RK_EFAIL, std::string("internal error building the CD-graph: ") + e.msg);
        }
        rk_chain_add_class(out, &gr);
    }
    for (size_t b = 0; b < nb; b++) rk_chain_add_block(out, ("b" + std::to_string(b)).c_str(), M.block_class[b]);
    std::ostringstream desc;
    desc << o->model_path;
    for (int i = 0; i < o->n_inputs; i++) desc << " --input " << o->inputs[i];
    if (o->input_file) desc << " --input-file " << o->input_file;
    desc << " --seed " << o->seed;
    out->model = strdup(desc.str().c_str());
    out->device = strdup(M.cuda ? "cuda" : "cpu");
    out->plain_peak = plain_peak;
    param_memory(M, &out->param_bytes, &out->param_grad_bytes, &out->buffer_bytes);
    rk_error e;
    if (rk_chain_validate(out, "traced chain", &e) != RK_OK)
        fail(RK_EFAIL, std::string("internal error: ") + e.msg);
    M.st.forward_equal = st->forward_equal;
    M.st.max_forward_diff = st->max_forward_diff;
    *st = M.st;
    watch.copy_names(st->nondeterministic_kernels, sizeof st->nondeterministic_kernels);
    st->seconds = (now_us() - t0) * 1e-6;
}

} // namespace rkx
