// exec_runtime.cpp — the executor's operations on one simplified node (a
// group): run its forward (first run or recompute, moving recomputed data
// into the storage every view and saved tensor already points at), run its
// backward through its own autograd graph, and forget its data (freeing the
// storage everywhere at once), its phantoms (the autograd graph) or its
// gradient.  Tracing (measurement), rk_exec_run and training sessions use
// them.  A recompute leaves the state the plain step changes once alone:
// BatchNorm running statistics are restored after it, random nodes replay
// the generator state of their first run.
#include <torch/script.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <c10/core/StorageImpl.h>

#include "exec_internal.h"

namespace rkx {

Runtime::Runtime(Model &m) : M(m), gs(m.groups.size()) {
    for (size_t g = 0; g < M.groups.size(); g++) {
        const Group &G = M.groups[g];
        gs[g].p.resize(std::max<size_t>(1, G.outs.size()));
        if (G.input_index >= 0) {
            Part &P = gs[g].p[0];
            P.leaf = M.inputs[G.input_index];
            P.canon = P.leaf.storage();
            gs[g].ran = true;
        }
        if (g < M.grad_layouts.size())
            for (size_t k = 0; k < gs[g].p.size() && k < M.grad_layouts[g].size(); k++)
                gs[g].p[k].grad_strides = M.grad_layouts[g][k];
    }
}

Runtime::~Runtime() {
    M.grad_layouts.resize(gs.size());
    for (size_t g = 0; g < gs.size(); g++) {
        M.grad_layouts[g].resize(gs[g].p.size());
        for (size_t k = 0; k < gs[g].p.size(); k++)
            if (!gs[g].p[k].grad_strides.empty()) M.grad_layouts[g][k] = gs[g].p[k].grad_strides;
    }
}

void Runtime::fail_freed_by_bwd(int g) const {
    fail(RK_EINPUT, "the schedule reads the data of " +
                        (M.groups[g].main ? where(M.groups[g].main) : std::string("an input")) +
                        " after its backward, which frees it (recompute it first)");
}

namespace {
// `select` of another node's data, whose gradient goes straight into that
// node's leaf's .grad.  Autograd's SelectBackward makes a zero-filled
// gradient of the whole data for each selected piece, which the leaf's
// accumulator then adds into .grad: an RNN time step reading its piece of
// the input projection made a whole projection's temporary at every step's
// backward (gru_lm: 24 KiB, its keep-all peak 2.6 % above the plain step,
// whose UnbindBackward stacks the steps' gradients once).  Here the piece's
// gradient is copied into its slice of .grad (made as zeros in the
// contiguous layout SelectBackward gives, when there is none yet) or added
// to it: the same values as zeros + slice, then added in place.
struct SelectIntoGrad : torch::autograd::Function<SelectIntoGrad> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &leaf, int64_t dim,
                              int64_t index) {
        ctx->saved_data["leaf"] = leaf;
        ctx->saved_data["dim"] = dim;
        ctx->saved_data["index"] = index;
        return leaf.select(dim, index);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor leaf = ctx->saved_data["leaf"].toTensor();
        const at::Tensor &g = go[0];
        if (g.defined()) {
            at::Tensor &G = leaf.mutable_grad();
            int64_t dim = ctx->saved_data["dim"].toInt(), index = ctx->saved_data["index"].toInt();
            if (!G.defined()) {
                G = at::zeros(leaf.sizes(), g.options());
                G.select(dim, index).copy_(g);
            } else {
                // another leaf's too (share_grad), or expanded (keep_expanded_grad)
                if (storage_shared(G) || overlapping(G)) G = G.clone(at::MemoryFormat::Preserve);
                G.select(dim, index).add_(g);
            }
        }
        return {at::Tensor(), at::Tensor(), at::Tensor()};
    }
};
} // namespace

// Whether t is the leaf, or a view of it that is the whole of it as it is
// (the same sizes, strides and offset: `x[:, :, -1]` traces as two slices
// over the whole range, then the select), whose gradient is the leaf's.
static bool leaf_itself(const at::Tensor &t, const at::Tensor &leaf) {
    if (t.is_same(leaf)) return true;
    return t.is_view() && t._base().is_same(leaf) && t.sizes() == leaf.sizes() && t.strides() == leaf.strides() &&
           t.storage_offset() == leaf.storage_offset() && t.scalar_type() == leaf.scalar_type();
}

// A `select` view of group `owner`'s leaf that requires grad (or of a view
// that is the whole leaf: its slices' backward would each make a zero-filled
// copy of the whole data, the tcn head's `x[:, :, -1]` two of 128 KiB while
// the plain step had freed the data): through SelectIntoGrad (above), whose
// gradient is the same contiguous tensor the slices' backward gave.
// Otherwise (other views, or no gradient) undefined.
static at::Tensor select_into_grad(const Node *def, const Stack &st, GState &S) {
    if (def->kind() != aten::select || st.size() != 3 || !st[0].isTensor() || !st[1].isInt() || !st[2].isInt())
        return {};
    const at::Tensor &t = st[0].toTensor();
    if (!at::GradMode::is_enabled() || !t.requires_grad()) return {};
    for (const Part &P : S.p)
        if (P.leaf.defined() && leaf_itself(t, P.leaf)) return SelectIntoGrad::apply(P.leaf, st[1].toInt(), st[2].toInt());
    return {};
}

IValue Runtime::materialize(const Value *v) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return materialize(I.alias);
    switch (I.kind) {
    case VK::Static: {
        auto ss = M.static_sums.find(v);
        if (ss == M.static_sums.end()) {
            auto sv = M.static_sum_views.find(v);
            if (sv == M.static_sum_views.end()) return I.sval;
            const Node *def = v->node(); // a view of a static sum: made from this step's leaf
            Stack st;
            for (const Value *u : def->inputs()) st.push_back(materialize(u));
            run_node(M, def, st);
            for (size_t i = 0; i < def->outputs().size(); i++)
                if (def->output(i) == v) return st[i];
            return I.sval;
        }
        auto it = sum_read.find(v);
        if (it != sum_read.end()) return it->second;
        sum_left[v] = ss->second;
        sum_leaf[v] = I.sval.toTensor().detach().requires_grad_(true);
        return sum_read[v] = wrap_sum(v, sum_leaf[v]);
    }
    case VK::Data: {
        GState &S = gs[I.owner];
        if (S.freed_by_bwd) fail_freed_by_bwd(I.owner);
        if (!S.ran)
            fail(RK_EINPUT, "the schedule uses the data of " +
                                (M.groups[I.owner].main ? where(M.groups[I.owner].main) : std::string("an input")) +
                                " before computing it");
        // An input of a stack whose gradient piece is kept (exec_pieces.cpp).
        if (M.groups[I.owner].stack_reader >= 0) return wrap_stack_input(I.owner, S.p[I.part].leaf);
        return S.p[I.part].leaf;
    }
    case VK::Cheap: {
        Stack st;
        for (const Value *u : I.def->inputs()) st.push_back(materialize(u));
        run_node(M, I.def, st);
        return st[0];
    }
    case VK::View: {
        if (I.owner >= 0 && gs[I.owner].freed_by_bwd) fail_freed_by_bwd(I.owner);
        auto it = cache.find(v);
        if (it != cache.end()) return it->second;
        Stack st;
        for (const Value *u : I.def->inputs()) st.push_back(materialize(u));
        // (Not a piece: exec_pieces.cpp's is_piece takes a select of a whole
        // view of the data for one, and the chain counts its gradient so.)
        if (I.owner >= 0 && !M.piece_owner.count(v)) {
            at::Tensor sel = select_into_grad(I.def, st, gs[I.owner]);
            if (sel.defined()) return cache[v] = sel;
        }
        run_node(M, I.def, st);
        for (size_t i = 0; i < st.size(); i++) {
            const Value *o = I.def->output(i);
            // A piece read by another node: its gradient kept apart (exec_pieces.cpp).
            cache[o] = st[i].isTensor() && M.piece_owner.count(o) ? IValue(wrap_piece(o, st[i].toTensor())) : st[i];
        }
        return cache.at(v);
    }
    }
    return IValue();
}

// BatchNorm-like nodes in training mode update their running statistics
// (arguments 3 and 4, training flag 5) as a side effect the schema does not
// declare.  The plain step does it once per forward: a recompute must not.
static bool updates_running_stats_kind(const Node *n) {
    static const std::set<std::string> kinds = {"aten::batch_norm", "aten::instance_norm",
                                                "aten::native_batch_norm", "aten::_native_batch_norm_legit",
                                                "aten::_batch_norm_impl_index", "aten::cudnn_batch_norm",
                                                "aten::miopen_batch_norm"};
    return n->inputs().size() >= 6 && kinds.count(n->kind().toQualString());
}
static bool updates_running_stats(const Node *n, const Stack &st) {
    if (st.size() < 6 || !updates_running_stats_kind(n)) return false;
    return st[5].isBool() && st[5].toBool();
}

// The copies a recompute keeps the running statistics' values in were
// allocated in the step (2 × channels floats per BatchNorm, not in the
// simulator's prediction: DenseNet-121's recomputed BatchNorms stepped up to
// 7 680 B over it).  They are made once with the model instead, beside its
// buffers (docs/exec.md, "BatchNorm recomputed").
void make_stat_shadows(Model &M) {
    for (const Group &G : M.groups)
        for (const Node *n : G.prog) {
            if (!updates_running_stats_kind(n)) continue;
            auto flag = M.vi.find(n->input(5));
            if (flag == M.vi.end() || flag->second.kind != VK::Static || !flag->second.sval.isBool() ||
                !flag->second.sval.toBool())
                continue;
            for (int a : {3, 4}) {
                auto it = M.vi.find(n->input(a));
                if (it == M.vi.end() || it->second.kind != VK::Static || !it->second.sval.isTensor()) continue;
                const at::Tensor &t = it->second.sval.toTensor();
                if (t.defined() && !M.stat_shadow.count(t.unsafeGetTensorImpl()))
                    M.stat_shadow.emplace(t.unsafeGetTensorImpl(), at::empty_like(t));
            }
        }
}

// Whether view v is made from a view sum's view that group g reads as a
// reader but the last (through its leaf: Runtime::vsum_leaf).
bool Runtime::made_on_vsum_leaf(int g, const Value *v) {
    for (const Value *p = resolve_alias(M, v);;) {
        const VInfo &P = M.vi.at(p);
        if (P.kind != VK::View || !P.def || P.src < 0) return false;
        p = view_source(M, p, P.owner);
        if (!p) return false;
        auto vs = M.view_sum_of.find(p);
        if (vs != M.view_sum_of.end()) {
            const ViewSum &S = M.view_sums[vs->second];
            return S.viewer() != g && std::find(S.readers.begin(), S.readers.end(), g) != S.readers.end();
        }
    }
}

// A value inside group g's program: its own outputs and views of them come
// from this run (an in-place op on a slice of the group's data), the rest
// from the executor's state.
IValue Runtime::materialize_in(int g, const Value *v, std::unordered_map<const Value *, IValue> &local) {
    auto it = local.find(v);
    if (it != local.end()) return it->second;
    const VInfo &I = M.vi.at(v);
    if (I.alias) return materialize_in(g, I.alias, local);
    if (I.kind == VK::View && I.owner == g) {
        Stack st;
        for (const Value *u : I.def->inputs()) st.push_back(materialize_in(g, u, local));
        run_node(M, I.def, st);
        for (size_t i = 0; i < st.size(); i++) local[I.def->output(i)] = st[i];
        return local.at(v);
    }
    if (I.kind == VK::Data && I.owner == g) return local.at(M.groups[g].outs[I.part]);
    if (I.kind == VK::Cheap && I.def && !M.groups[g].vsums_read.empty()) {
        // A list holding a view sum's view (`broadcast_tensors([y, t])`, what
        // F.mse_loss calls, made on its leaf for g): its items as g reads them.
        Stack st;
        for (const Value *u : I.def->inputs()) st.push_back(materialize_in(g, u, local));
        run_node(M, I.def, st);
        return st[0];
    }
    if (I.kind == VK::View && !M.view_sums.empty()) { // a view sum's reader but the last: its leaf
        auto vs = M.view_sum_of.find(v);
        if (vs != M.view_sum_of.end() && M.view_sums[vs->second].viewer() != g) return vsum_leaf(vs->second);
        if (I.def && I.src >= 0 && made_on_vsum_leaf(g, v)) { // (a slice of it: on the leaf, for g only)
            Stack st;
            for (size_t j = 0; j < I.def->inputs().size(); j++)
                st.push_back((int)j == I.src ? materialize_in(g, I.def->input(j), local) : materialize(I.def->input(j)));
            run_node(M, I.def, st);
            for (size_t i = 0; i < I.def->outputs().size() && i < st.size(); i++)
                if (I.def->output(i) == v) return st[i];
        }
    }
    return materialize(v);
}

// Run a group's program on the current inputs; returns its outputs (with grad_fn).
std::vector<at::Tensor> Runtime::exec_program(int g) {
    Group &G = M.groups[g];
    bool again = gs[g].ran; // a recompute
    bool restore_rng = G.nondet && (!live_rng || again);
    at::Tensor saved_rng;
    if (restore_rng) saved_rng = rng_get(M.cuda);
    std::vector<std::pair<at::Tensor, at::Tensor>> stats; // running statistics, their values before a recompute (M.stat_shadow)
    std::unordered_map<const Value *, IValue> local;
    dup_alias.erase(g); // a recompute reads anew
    // A view sum it carries without reading the view: the view made first,
    // so that the backward runs its functions before the view's, as the
    // plain step does (exec_grad_order.cpp).
    if (at::GradMode::is_enabled())
        for (int k : G.vsums_carried) materialize(M.view_sums[k].v);
    for (Node *n : G.prog) {
        Stack st;
        for (const Value *u : n->inputs()) st.push_back(materialize_in(g, u, local));
        dedupe_reads(g, st);
        if (n == G.main && G.clone_arg >= 0) st[G.clone_arg] = st[G.clone_arg].toTensor().clone();
        if (again && updates_running_stats(n, st))
            for (int a : {3, 4})
                if (st[a].isTensor() && st[a].toTensor().defined()) {
                    const at::Tensor &t = st[a].toTensor();
                    bool kept = false; // a BatchNorm run twice in the program: its first values are kept
                    for (auto &p : stats) kept = kept || p.first.unsafeGetTensorImpl() == t.unsafeGetTensorImpl();
                    if (kept) continue;
                    auto sh = M.stat_shadow.find(t.unsafeGetTensorImpl());
                    if (sh == M.stat_shadow.end()) { // not the model's own tensor: a copy in the step
                        stats.push_back({t, t.clone()});
                        continue;
                    }
                    at::AutoDispatchBelowADInplaceOrView below; // bookkeeping: no version bump
                    sh->second.copy_(t);
                    stats.push_back({t, sh->second});
                }
        auto r = M.rng_state.find(n);
        if (r != M.rng_state.end()) {
            if (!live_rng) {
                rng_set(M.cuda, r->second);
            } else if (again) {
                auto k = step_rng.find(n);
                if (k == step_rng.end()) fail(RK_EFAIL, "recompute of random " + where(n) + " before its first run");
                rng_set(M.cuda, k->second);
            } else {
                // First run: draw as the plain forward does, in the graph's order.
                int ix = M.node_index.at(n);
                if (ix < last_random)
                    fail(RK_EINPUT, "the schedule runs random " + where(n) + " for the first time after a random "
                                    "node that follows it in the model: its random numbers would differ from "
                                    "plain training");
                last_random = ix;
                PauseTracking pause; // bookkeeping, not the model's memory
                step_rng[n] = rng_get(M.cuda);
            }
        }
        try {
            // A 2-d pooling keeps only its input's shape (exec_pool_grad.cpp);
            // an in-place activation on the group's own data: its backward may
            // write into the group's incoming gradient; a ReLU whose result no
            // consumer keeps keeps its mask (exec_act_grad.cpp).
            const bool mask = M.act_mask.count(n) > 0;
            if (!run_pool_no_input(n, st) && (n == G.main || !run_act_inplace(n, st, mask)) &&
                !(mask && run_act_mask(n, st)))
                run_node(M, n, st);
        } catch (const c10::Error &e) {
            fail(RK_EFAIL, "running " + where(n) + " failed: " + e.what_without_backtrace());
        }
        for (size_t i = 0; i < st.size(); i++) local[n->output(i)] = std::move(st[i]);
    }
    std::vector<at::Tensor> out;
    for (const Value *v : G.outs) out.push_back(local.at(v).toTensor());
    local.clear();
    if (!stats.empty()) {
        // Below autograd's in-place layer: the backward saved these tensors,
        // and putting their values back must not bump their version.
        at::AutoDispatchBelowADInplaceOrView below;
        for (auto &p : stats) p.first.copy_(p.second);
    }
    if (restore_rng) rng_set(M.cuda, saved_rng);
    return out;
}

// Whether a tensor in t's layout can be made for the gradient: no two
// elements share memory, and the gaps between them (t is a slice of a larger
// gradient, e.g. a `cat` backward's piece seen through a transpose) add at
// most 1/32 of its elements — a piece of a `cat` along the last dim would
// take its whole buffer's bytes (a bidirectional LSTM's two directions), and
// goes on in the leaf's dense layout.
static bool layout_worth_keeping(const at::Tensor &t) {
    std::vector<std::pair<int64_t, int64_t>> d; // (stride, size) of the dims that count
    int64_t extent = 1;
    for (int64_t i = 0; i < t.dim(); i++)
        if (t.size(i) > 1) {
            d.push_back({t.stride(i), t.size(i)});
            extent += (t.size(i) - 1) * t.stride(i);
        }
    std::sort(d.begin(), d.end());
    int64_t span = 1; // the elements the inner dims cover
    for (const auto &e : d) {
        if (e.first < span) return false;
        span = e.first * e.second;
    }
    return extent - t.numel() <= t.numel() / 32;
}

// A gradient reaching a leaf as a view of a larger buffer (a piece of the
// incoming gradient of a `cat`, `stack` or `unbind` backward, which narrows or
// selects it) would be taken by the leaf's accumulator as it is, when its
// layout is the leaf's: the leaf's .grad would then hold the whole buffer,
// and forgetting the other pieces' gradients (and the buffer's own) would
// free nothing until the last piece goes.  The simulator counts each
// gradient by its own bytes, so such a piece becomes a copy of its own here
// (made while the buffer is alive, as the node's backward outputs are
// counted beside its inputs).  Any other gradient goes on as it is (undefined
// result: the hook leaves it alone); one in another layout is copied by the
// accumulator anyway.
static at::Tensor own_grad(const at::Tensor &leaf, const at::Tensor &gr) {
    if (!gr.defined() || !gr.has_storage() || gr.is_sparse() || !gr.is_non_overlapping_and_dense()) return {};
    if ((int64_t)gr.storage().nbytes() <= gr.numel() * (int64_t)gr.element_size()) return {};
    if (gr.strides() != leaf.strides() || gr.sizes() != leaf.sizes()) return {};
    return gr.clone(at::MemoryFormat::Preserve);
}

// Whether g's layout is t's on every dim of more than one element (the
// accumulator's gradient layout contract for a dense t).
static bool same_layout(const at::Tensor &g, const at::Tensor &t) {
    if (g.sizes() != t.sizes()) return false;
    for (int64_t i = 0; i < t.dim(); i++)
        if (t.size(i) > 1 && g.stride(i) != t.stride(i)) return false;
    return true;
}

// Whether g is dense and alone in its storage (from its first byte, no byte
// more): a view of those bytes in any other dense layout of its sizes fits.
bool alone_in_storage(const at::Tensor &g) {
    return g.defined() && g.layout() == at::kStrided && g.has_storage() && g.is_non_overlapping_and_dense() &&
           g.storage_offset() == 0 && (int64_t)g.storage().nbytes() == g.numel() * (int64_t)g.element_size();
}

// Whether another tensor holds g's bytes too (share_grad below): an addition
// into g in place would change that one as well.
bool storage_shared(const at::Tensor &g) {
    return g.defined() && g.has_storage() && g.storage().use_count() > 1;
}

// Whether g has elements on one address (zero strides: an expanded gradient).
bool overlapping(const at::Tensor &g) {
    if (!g.defined() || g.layout() != at::kStrided) return false;
    for (int64_t d = 0; d < g.dim(); d++)
        if (g.stride(d) == 0 && g.size(d) > 1) return true;
    return false;
}

// A gradient that reaches a leaf expanded — a `sum` over dims hands its
// incoming gradient on as `g.expand(sizes)`, zero strides over a few bytes —
// is what the plain step's input buffer holds as it is: the producer's
// backward reads it so, or the next gradient is added to it (into that one
// when it can, g + E).  The leaf's accumulator would copy it into the leaf's
// layout, a whole activation's bytes held until the producer's backward (the
// keep-all step above the plain one: `h.sum(1)` beside other readers of h).
// So it is kept (T.held_grad), as the output's gradient of the loss is
// (exec_run.cpp, sum_grad_to_leaf): the accumulator is handed a stand-in
// in the leaf's layout over the same few bytes, which it takes as .grad
// without reading it (it steals a tensor nobody else holds), and the
// post-accumulate hook (HeldGradBack) puts the expanded gradient back at
// once.  The simulator counts the whole gradient: the bytes not held go to
// unheld (the measured peak may be that much below the prediction).
static at::Tensor keep_expanded_grad(Part &T, const at::Tensor &gr, int64_t &unheld) {
    const at::Tensor &leaf = T.leaf;
    if (at::GradMode::is_enabled() || !gr.defined() || !gr.has_storage() || !overlapping(gr) ||
        leaf.grad().defined() || !leaf.is_non_overlapping_and_dense() || gr.sizes() != leaf.sizes() ||
        gr.scalar_type() != leaf.scalar_type() || gr.device() != leaf.device())
        return {};
    T.held_grad = gr;
    unheld += std::max<int64_t>(0, leaf.numel() * (int64_t)leaf.element_size() - (int64_t)gr.storage().nbytes());
    at::Tensor stand_in = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(gr.storage()), gr.key_set(), gr.dtype());
    stand_in.unsafeGetTensorImpl()->set_sizes_and_strides(leaf.sizes(), leaf.strides(), gr.storage_offset());
    return stand_in;
}

// A tensor of t's bytes, sizes and strides that is no view: it holds t's
// storage only (a view's base would keep the storage shared, and the
// executor then could not free the gradient once its backward's root
// function has run, FreeConsumedGrad).
static at::Tensor same_bytes(const at::Tensor &t, at::IntArrayRef sizes, at::IntArrayRef strides) {
    at::Tensor a = at::empty({0}, t.options());
    a.set_(t.storage(), t.storage_offset(), sizes, strides);
    return a;
}

// A gradient reaching a leaf (a node's output, read by the node whose
// backward runs) in another dense layout than the leaf's — a transposed or
// channels-last gradient, e.g. a pool's over a transposed input — is what
// the plain step hands the node's own backward as it is.  The leaf's
// accumulator would copy it into the leaf's layout (the gradient layout
// contract): a second buffer of its size at that op, which the plain step
// never holds.  So the gradient is kept (T.held_grad) and the accumulator is
// handed a view of the same bytes in the leaf's layout, which it takes
// without a copy; the post-accumulate hook (HeldGradBack) then puts the
// gradient back as the leaf's .grad.  A later gradient is added into it in
// place, as the accumulator does (variable_grad += new_grad), when the
// leaf's .grad is in such a layout.  Undefined: the accumulator does as it
// does.
// The references a gradient nobody else holds has in a leaf's hook (the
// engine's list and the hook's copy of it): the accumulator steals only those.
static const long hook_refs = 2;

static at::Tensor keep_grad_layout(Part &T, const at::Tensor &gr) {
    const at::Tensor &leaf = T.leaf;
    if (at::GradMode::is_enabled() || !leaf.is_non_overlapping_and_dense() || !alone_in_storage(gr) ||
        gr.scalar_type() != leaf.scalar_type() || gr.device() != leaf.device())
        return {};
    at::Tensor cur = leaf.grad();
    if (!cur.defined()) {
        if (same_layout(gr, leaf) || (long)gr.use_count() > hook_refs) return {};
        T.held_grad = gr.is_view() ? same_bytes(gr, gr.sizes(), gr.strides()) : gr;
    } else {
        if (same_layout(cur, leaf) || !alone_in_storage(cur) || storage_shared(cur) || cur.sizes() != gr.sizes())
            return {};
        cur.add_(gr);
        T.held_grad = cur;
        T.leaf.mutable_grad() = at::Tensor();
    }
    return same_bytes(T.held_grad, leaf.sizes(), leaf.strides());
}

// Dense strides for t's sizes with t's dims in the order of its strides
// (largest first; ties in dim order): the layout a sum with t as its first
// operand takes (TensorIterator orders dims by the operands' strides).
static std::vector<int64_t> dense_strides_in_order_of(const at::Tensor &t) {
    const int64_t n = t.dim();
    std::vector<int64_t> order(n);
    for (int64_t d = 0; d < n; d++) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        if (t.size(a) == 1 || t.size(b) == 1) return false;
        return t.stride(a) > t.stride(b);
    });
    std::vector<int64_t> st(n, 1);
    int64_t m = 1;
    for (int64_t k = n; k-- > 0;) {
        st[order[k]] = m;
        m *= std::max<int64_t>(t.size(order[k]), 1);
    }
    return st;
}

// A leaf's first gradient that is not dense (a cat's narrow of its
// gradient).  Autograd's input buffer holds it as it is, and sums the next
// gradient into that one, in place, when nothing else holds that one and it
// is dense (`var.add_(old)`: its layout; dgcnn's `repeat` after a cat and a
// permute), else into a new tensor (`old + var`: the layout of the piece's
// order; crm's ELU output read by a cat and a permute, whose ELU backward
// gives other bits on a permuted gradient).  The leaf's accumulator would
// make the piece contiguous and keep the next in its layout.  So the piece
// is copied into dense bytes of its order (held in that layout where it is
// not the leaf's), remembered (Part::first_piece), and the next gradient summed
// as the input buffer sums it (sum_after_first_piece).  Its layout is then
// the one the op's backward gets (grad_strides).  (The values are
// autograd's: the same sums.)
static at::Tensor first_grad_piece(Part &T, const at::Tensor &gr) {
    const at::Tensor &leaf = T.leaf;
    if (at::GradMode::is_enabled() || leaf.grad().defined() || gr.is_sparse() || !gr.has_storage() ||
        gr.is_non_overlapping_and_dense() || !leaf.is_non_overlapping_and_dense() || gr.sizes() != leaf.sizes() ||
        gr.scalar_type() != leaf.scalar_type() || gr.device() != leaf.device() || overlapping(gr))
        return {};
    at::Tensor t = at::empty_strided(leaf.sizes(), dense_strides_in_order_of(gr), leaf.options().requires_grad(false));
    t.copy_(gr);
    T.first_piece = c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr());
    T.grad_strides = t.strides().vec();
    if (same_layout(t, leaf)) return t; // (the accumulator takes it as it is)
    T.held_grad = t;
    return same_bytes(t, leaf.sizes(), leaf.strides());
}

// The gradient after a first piece (first_grad_piece): into itself when the
// input buffer would (dense, nobody else holding it, in another layout
// than the piece's), else left to keep_grad_layout / the accumulator, which
// add it into the piece's copy in place.
static at::Tensor sum_after_first_piece(Part &T, const at::Tensor &gr) {
    c10::intrusive_ptr<c10::TensorImpl> piece = T.first_piece.lock();
    if (!piece) return {};
    T.first_piece = c10::weak_intrusive_ptr<c10::TensorImpl>(c10::intrusive_ptr<c10::TensorImpl>());
    const at::Tensor &leaf = T.leaf;
    at::Tensor cur = leaf.grad();
    if (at::GradMode::is_enabled() || !cur.defined() || cur.unsafeGetTensorImpl() != piece.get() || !gr.defined() ||
        gr.sizes() != cur.sizes() || gr.scalar_type() != cur.scalar_type() || gr.device() != cur.device())
        return {};
    const bool stealable = gr.is_non_overlapping_and_dense() && (long)gr.use_count() <= hook_refs &&
                           gr.has_storage() && gr.storage().use_count() == 1;
    if (!stealable || gr.strides() == cur.strides() || storage_shared(cur)) return {};
    at::Tensor s = gr;
    s.add_(cur);
    T.held_grad = s.is_view() ? same_bytes(s, s.sizes(), s.strides()) : s;
    T.grad_strides = s.strides().vec();
    leaf.mutable_grad() = at::Tensor();
    return same_bytes(T.held_grad, leaf.sizes(), leaf.strides());
}

// A gradient that reaches a leaf while something else holds it too — an
// add's backward hands its incoming gradient to both of its inputs, one
// tensor twice — would be copied by the leaf's accumulator (it steals only a
// gradient nobody else holds), while the plain step hands that one tensor to
// both inputs' backward functions (hourglass: a skip connection's `u(b) + a`
// held its gradient twice, the keep-all peak 0.2 % above the plain step's).
// So the leaf is handed a tensor of the same bytes, which the accumulator
// takes as it is: both hold one buffer, freed when the last goes.  The
// simulator counts each leaf's gradient by its own bytes, so the step holds
// at most what it predicts.  A gradient added into a .grad whose bytes are
// shared so is added out of place (the accumulator would add in place, into
// the other holder's gradient too), as the plain step's input buffer adds
// into a gradient it does not hold alone.
// Only the gradient of a group that is one op (nothing merged after it, one
// output, no pieces) is shared: an in-place activation merged into its group
// writes its backward's result into the group's incoming gradient when
// nothing else holds it (exec_act_grad.cpp), which the tracer measured so;
// a shared gradient would make it allocate one more.
bool may_share_grad(const Group &G) {
    return G.main && G.prog.back() == G.main && G.outs.size() == 1 && G.clone_arg < 0 && G.pieces.empty() &&
           G.stack_reader < 0;
}

static at::Tensor share_grad(const Group &G, Part &T, const at::Tensor &gr, int64_t &shared_bytes) {
    const at::Tensor &leaf = T.leaf;
    if (at::GradMode::is_enabled() || !gr.defined()) return {};
    at::Tensor cur = leaf.grad();
    if (cur.defined()) {
        if (!storage_shared(cur) && !overlapping(cur)) return {};
        // The accumulator's variable_grad += new_grad, into the new gradient
        // when nobody else holds it (a + b is b + a, bit for bit), else out of
        // place; so too for an expanded .grad (keep_expanded_grad), into
        // which nothing can be added in place, as the plain step's buffer adds.
        // (into an expanded .grad's sum as the buffer adds: in the new one's layout)
        bool into_new = (long)gr.use_count() <= hook_refs && alone_in_storage(gr) && !storage_shared(gr) &&
                        (overlapping(cur) || gr.strides() == cur.strides()) && gr.scalar_type() == cur.scalar_type();
        at::Tensor sum = into_new ? gr.add_(cur) : cur + gr;
        T.leaf.mutable_grad() = at::Tensor();
        return sum;
    }
    if (!may_share_grad(G) || (long)gr.use_count() <= hook_refs || !alone_in_storage(gr) ||
        !leaf.is_non_overlapping_and_dense() ||
        !same_layout(gr, leaf) || gr.scalar_type() != leaf.scalar_type() || gr.device() != leaf.device())
        return {};
    shared_bytes += gr.numel() * (int64_t)gr.element_size();
    return same_bytes(gr, gr.sizes(), gr.strides());
}

namespace {
struct HeldGradBack : torch::autograd::PostAccumulateGradHook {
    Part *T;
    explicit HeldGradBack(Part *t) : T(t) {}
    void operator()(const torch::autograd::Variable &) override {
        if (!T->held_grad.defined()) return;
        T->leaf.mutable_grad() = std::move(T->held_grad);
        T->held_grad = at::Tensor();
    }
};
} // namespace

// An op's result whose storage is larger than the bytes its elements reach,
// and that nothing else holds: the bytes beyond are dropped (moved to a
// storage of the size reached, in place, so the tensor keeps its storage).
// A structured loss (`mse_loss` with a mean) allocates its unreduced output
// and returns the scalar in that storage: the plain step frees it with the
// scalar after the next op, while a node's data lives until its backward,
// 294 912 B where the chain counts 4 (unseen3's vqvae: measured above the
// prediction, keep-all above the plain step).
static void fit_storage(const at::Tensor &out) {
    if (!out.defined() || !out.has_storage() || out.numel() == 0 || out.storage().use_count() != 1) return;
    int64_t extent = out.storage_offset() + 1;
    for (int64_t d = 0; d < out.dim(); d++) {
        if (out.stride(d) < 0) return;
        extent += (out.size(d) - 1) * out.stride(d);
    }
    const size_t need = (size_t)extent * out.element_size();
    c10::StorageImpl *si = out.storage().unsafeGetStorageImpl();
    if (si->nbytes() <= need || si->data() == nullptr) return;
    at::Tensor bytes = at::empty({(int64_t)need}, out.options().dtype(at::kByte).requires_grad(false));
    {
        at::Tensor old = at::empty({0}, bytes.options());
        old.set_(out.storage(), 0, {(int64_t)need}, {1});
        bytes.copy_(old);
    }
    c10::StorageImpl *ni = bytes.storage().unsafeGetStorageImpl();
    c10::DataPtr dp = ni->set_data_ptr(c10::DataPtr(nullptr, ni->device()));
    ni->set_nbytes(0);
    si->set_data_ptr(std::move(dp)); // the old bytes go here
    si->set_nbytes(need);
}

// The hooks of a leaf that takes gradients (a group's output, or a view
// sum's, exec_grad_order.cpp): before its accumulator runs, the gradient in
// the layout the plain step would hand on (keep_expanded_grad, own_grad,
// keep_grad_layout, share_grad when G is given); after it, the kept gradient
// back as .grad.  T stays where it is for the step (the Runtime's vectors are
// sized once).
void Runtime::hook_leaf(Part &T, const Group *G) {
    Part *t = &T;
    T.leaf.register_hook([this, t, G](const at::Tensor &gr) -> at::Tensor {
        Part &P = *t;
        if (P.grad_strides.empty() && gr.defined() && !gr.is_sparse() && gr.has_storage() && layout_worth_keeping(gr))
            P.grad_strides = gr.strides().vec();
        at::Tensor expanded = keep_expanded_grad(P, gr, shared_grad_bytes);
        if (expanded.defined()) return expanded;
        at::Tensor own = own_grad(P.leaf, gr);
        if (own.defined()) return own;
        at::Tensor kept = sum_after_first_piece(P, gr);
        if (kept.defined()) return kept;
        kept = keep_grad_layout(P, gr);
        if (kept.defined()) return kept;
        kept = first_grad_piece(P, gr);
        if (kept.defined()) return kept;
        return G ? share_grad(*G, P, gr, shared_grad_bytes) : at::Tensor();
    });
    torch::autograd::impl::set_post_acc_grad_hooks(T.leaf, std::make_unique<HeldGradBack>(t));
}

static void reset_part(Part &P);

void Runtime::fwd(int g) {
    Group &G = M.groups[g];
    GState &S = gs[g];
    if (G.input_index >= 0) fail(RK_EINPUT, "a model input has no forward node");
    // Recomputing while the data is still present (a block re-run with its
    // output kept): the op regenerates the same bytes, so free the old copy
    // first, as the simulator counts no new memory for a present output.
    if (S.ran && S.p[0].canon && S.p[0].canon.unsafeGetStorageImpl()->nbytes() > 0) forget_data(g);
    // Likewise its phantom (the autograd graph of the last run, which the
    // new one replaces): else both graphs' saved tensors are held while the
    // op runs (a BatchNorm's saved mean and invstd, 128 B over the
    // prediction where whole-graph Checkmate recomputes it with its phantom
    // kept).
    if (S.ran)
        for (Part &P : S.p) P.proxy = at::Tensor();
    std::vector<at::Tensor> outs = exec_program(g);
    bool first = !S.ran;
    S.ran = true;
    S.freed_by_bwd = false;
    S.parts_done = 0; // a new autograd graph
    for (size_t k = 0; k < outs.size(); k++) {
        Part &P = S.p[k];
        const at::Tensor &out = outs[k];
        fit_storage(out);
        if (first) {
            P.leaf = out.detach();
            if (G.has_grad && G.out_rg[k]) {
                P.leaf.requires_grad_(true);
                // Remember the layout of the first gradient reaching the leaf (before
                // its accumulator copies it into the leaf's own layout), dense or not:
                // ViT's patch convolution gets its output's gradient as a slice of
                // the `cat`'s through transpose and flatten views, and its bias
                // gradient (a sum) on CUDA depends on those strides (bwd_roots).
                hook_leaf(P, &G);
            }
            P.canon = P.leaf.storage();
            if (G.has_grad) P.proxy = out;
            continue;
        }
        c10::Storage ns = out.storage();
        c10::StorageImpl *canon = P.canon.unsafeGetStorageImpl();
        c10::StorageImpl *fresh = ns.unsafeGetStorageImpl();
        if (fresh != canon) {
            if (canon->data() != nullptr || canon->nbytes() > 0) {
                // Data still present: the new copy is dropped, its storage aliases the old.
                fresh->set_data_ptr(c10::DataPtr(const_cast<void *>(static_cast<const void *>(canon->data())),
                                                 canon->device()));
                fresh->set_nbytes(canon->nbytes());
            } else {
                void *p = const_cast<void *>(static_cast<const void *>(fresh->data()));
                size_t nb = fresh->nbytes();
                c10::DataPtr owned = fresh->set_data_ptr(c10::DataPtr(p, fresh->device()));
                canon->set_data_ptr(std::move(owned));
                canon->set_nbytes(nb);
                for (auto &a : P.aliases)
                    if (a.unsafeGetStorageImpl() != fresh) {
                        a.unsafeGetStorageImpl()->set_data_ptr(c10::DataPtr(p, fresh->device()));
                        a.unsafeGetStorageImpl()->set_nbytes(nb);
                    }
            }
            P.aliases.push_back(ns);
        }
        if (G.has_grad) P.proxy = out;
    }
    // Outputs nothing reads, of an op without backward: gone now (Group::part_dead).
    for (size_t k = 0; k < G.part_dead.size() && k < S.p.size(); k++)
        if (G.part_dead[k]) reset_part(S.p[k]);
}

// Ones for the tracer's measurement of a backward, in the layout the
// output's gradient arrives in a step (recv_strides, else grad_strides, from
// the tracer's layout probe, probe_grad_layouts): a transposed gradient makes
// some backward kernels copy it first (a batched matmul's, col2im's, a
// repeat's, a channels-last convolution's of a contiguous gradient
// assembled from pieces), as they do in a step.
const std::vector<int64_t> &received_strides(const Part &P) {
    return P.recv_strides.empty() ? P.grad_strides : P.recv_strides;
}

static at::Tensor ones_as_received(const Part &P) {
    const std::vector<int64_t> &s = received_strides(P);
    if (s.empty() || P.leaf.strides() == at::IntArrayRef(s)) return at::ones_like(P.leaf);
    at::Tensor t = at::empty_strided(P.leaf.sizes(), s, P.leaf.options().requires_grad(false));
    t.fill_(1);
    return t;
}

void Runtime::bwd_roots(int g, std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads, bool ones) {
    Group &G = M.groups[g];
    GState &S = gs[g];
    for (size_t k = 0; k < S.p.size(); k++) {
        Part &P = S.p[k];
        if (!G.out_rg[k] || !P.proxy.defined() || !P.proxy.grad_fn()) continue;
        // An output nothing reads (an LM's LSTM h and c) gets no gradient in a
        // step, and its kernel then makes zeros for it (oneDNN's LSTM backward:
        // 2 x batch x hidden floats): the measurement gives it none either.
        if (ones && G.outs.size() > 1 && k < G.outs.size() && G.outs[k]->uses().empty()) continue;
        at::Tensor gr = ones ? ones_as_received(P) : P.leaf.grad();
        if (G.stack_reader >= 0) { // the stack's strided piece, as it is (exec_pieces.cpp)
            auto it = stack_grad.find(g);
            gr = ones ? stack_piece_ones(g) : it != stack_grad.end() ? it->second : at::Tensor();
            if (gr.defined() && !ones) P.leaf.mutable_grad() = gr;
        }
        if (!gr.defined()) continue; // as autograd: no gradient reached this output
        if (!ones && G.stack_reader < 0 && !P.grad_strides.empty() && gr.strides() != at::IntArrayRef(P.grad_strides)) {
            // Plain autograd sums a tensor's gradient contributions in the layout of
            // the first one (e.g. channels-last, through flatten + transpose views),
            // while a leaf's accumulator keeps the leaf's layout.  Same values, but
            // some backward kernels reduce in layout order (a convolution's bias
            // gradient): hand the op the plain step's layout, so results are bit-exact.
            // A slice's layout (not dense) takes the few bytes between its rows
            // (empty_strided: the smallest storage those strides reach; at most
            // 1/32 more, layout_worth_keeping), which the plain step holds too,
            // as its slice keeps the whole buffer.
            at::Tensor t = at::empty_strided(gr.sizes(), P.grad_strides, gr.options());
            t.copy_(gr);
            P.leaf.mutable_grad() = t;
            gr = t;
        }
        if (!ones && P.recv_strides.empty() && gr.sizes() == P.leaf.sizes() && gr.strides() != P.leaf.strides() &&
            gr.is_non_overlapping_and_dense())
            P.recv_strides = gr.strides().vec();
        roots.push_back(P.proxy);
        grads.push_back(gr);
    }
    if (roots.empty()) // no gradient arrived at all: zeros through the first output that takes one
        for (size_t k = 0; k < S.p.size(); k++)
            if (G.out_rg[k] && S.p[k].proxy.defined() && S.p[k].proxy.grad_fn()) {
                roots.push_back(S.p[k].proxy);
                grads.push_back(at::zeros_like(S.p[k].leaf));
                break;
            }
}

namespace {
// Post-hook on the root autograd function of a group's backward: once it has
// run, its input gradient is dead unless an output is that tensor or a view
// of it.  During the hook, two more references than the caller held before
// the call are autograd's own (torch 2.11: the gradient list run_backward
// makes, and the engine's `inputs` of the function); any other holder (an
// output that is the gradient or a view of it) keeps it, and so does another
// tensor sharing its storage (a leaf's accumulator may have kept a view of
// another node's gradient as it is).
//
// Before the root function runs, the same counts (the engine's `inputs` and
// run_backward's list) make the gradient donated (grad_donation): an
// in-place activation's backward may then write into it and move its bytes
// to its own result (exec_act_grad.cpp); those bytes count as freed here,
// as the simulator counts the node's gradient live through the node.
struct FreeConsumedGrad : torch::autograd::FunctionPostHook {
    at::Tensor g;
    size_t impl_refs = 0;
    // The holders the caller knows (the gradient list, this hook's, those it
    // names): with another holder (the one gradient an add's backward gave
    // both its inputs, share_grad), the bytes stay (scVI's `a * b + c * d`
    // summed: the other holder's backward read freed bytes, a crash).
    size_t own = 0;
    int64_t freed = 0;
    bool keep = false; // the gradient is the caller's after the backward (GradDonation.keep)
    const std::function<void()> *after = nullptr;
    // Passed on as a view: its bytes moved to the view's own storage,
    // watched until the backward ends (freed if gone by then).
    bool to_view = false; // allowed (the whole backward, its graph not kept)
    c10::weak_intrusive_ptr<c10::StorageImpl> watched{c10::intrusive_ptr<c10::StorageImpl>()};
    int64_t watched_bytes = 0;
    // The one output is a view of the gradient, and nothing but the
    // gradient's holders known (exclusive's counts) and that view hold it.
    bool moves_to_view(const torch::autograd::variable_list &outputs) const {
        if (!to_view || !g.defined() || !g.has_storage() || outputs.size() != 1) return false;
        const at::Tensor &o = outputs[0];
        if (!o.defined() || !o.has_storage() || o.is_same(g) || !o.storage().is_alias_of(g.storage())) return false;
        const bool based = o.is_view() && o._base().is_same(g); // the view's record of its base
        return impl_refs == own && g.use_count() == impl_refs + 2 + (based ? 1 : 0) &&
               g.storage().use_count() == 2 && o.layout() == at::kStrided;
    }
    bool exclusive() const {
        return g.defined() && g.has_storage() && impl_refs == own && g.use_count() == impl_refs + 2 &&
               g.storage().use_count() == 1;
    }
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &outputs,
                                              const torch::autograd::variable_list &) override {
        GradDonation &d = grad_donation();
        if (keep) { // the caller's gradient: nothing freed
        } else if (d.moved > 0) {
            freed = d.moved;
        } else if (exclusive()) {
            freed = (int64_t)g.storage().nbytes();
            g.storage().unsafeGetStorageImpl()->reset();
        } else if (moves_to_view(outputs)) {
            // The root function passed the gradient on as a view (a reshape
            // or permute: an einsum's output): its bytes move to a new
            // storage that only that view holds, so that they go when the
            // engine is done with it, as in the plain step (where nothing else
            // holds them); the gradient keeps an empty storage.
            c10::StorageImpl *si = g.storage().unsafeGetStorageImpl();
            size_t nb = si->nbytes();
            c10::DataPtr dp = si->set_data_ptr(c10::DataPtr(nullptr, si->device()));
            si->set_nbytes(0);
            c10::Storage ns(c10::Storage::use_byte_size_t(), nb, std::move(dp), si->allocator(), false);
            at::Tensor v = at::empty({0}, outputs[0].options());
            v.set_(ns, outputs[0].storage_offset(), outputs[0].sizes(), outputs[0].strides());
            watched = c10::weak_intrusive_ptr<c10::StorageImpl>(ns.getWeakStorageImpl());
            watched_bytes = (int64_t)nb;
            d = GradDonation();
            if (after && *after) (*after)();
            torch::autograd::variable_list out = outputs;
            out[0] = v;
            return out;
        }
        d = GradDonation();
        if (after && *after) (*after)();
        return outputs;
    }
};
// The caller's references are all known (`own`: the gradient list and the
// hook's, plus those it names, e.g. a leaf's .grad) when the gradient is donated.
struct DonateGrad : torch::autograd::FunctionPreHook {
    const FreeConsumedGrad *h = nullptr;
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &grads) override {
        grad_donation() = GradDonation();
        if (!grads.empty() && grads[0].defined() && h->exclusive() && grads[0].is_same(h->g)) {
            grad_donation().impl = h->g.unsafeGetTensorImpl();
            grad_donation().keep = h->keep;
        }
        return grads;
    }
};
} // namespace

int64_t Runtime::backward_consuming(const std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads,
                                    const std::function<void()> &after_root, size_t own_refs,
                                    const std::vector<at::Tensor> &inputs, bool consume, bool retain, size_t seeds) {
    if (roots.empty()) return 0;
    // The first part of a split backward neither frees nor donates the
    // gradient: the second part reads it.  But an in-place ReLU at its root
    // may write into it (GradDonation.keep).
    std::shared_ptr<torch::autograd::Node> fn = roots.size() == 1 + seeds ? roots[0].grad_fn() : nullptr;
    bool keep = !consume && fn && is_act_inplace_fn(fn.get());
    if (!consume && !keep) fn = nullptr;
    FreeConsumedGrad *h = nullptr;
    DonateGrad *donate = nullptr;
    uintptr_t key = 0;
    auto unhook = [&]() {
        grad_donation() = GradDonation();
        if (!h) return;
        fn->del_post_hook(key);
        auto &ph = fn->pre_hooks();
        for (size_t i = 0; i < ph.size(); i++)
            if (ph[i].get() == donate) {
                ph.erase(ph.begin() + (std::ptrdiff_t)i);
                break;
            }
    };
    if (fn) {
        auto hook = std::make_unique<FreeConsumedGrad>();
        h = hook.get();
        if (grads[0].defined() && grads[0].has_storage()) h->g = grads[0];
        h->impl_refs = h->g.defined() ? h->g.use_count() : 0;
        h->own = own_refs + 2; // + grads and h->g
        h->after = &after_root;
        h->keep = keep;
        h->to_view = consume && !retain;
        key = fn->add_post_hook(std::move(hook));
        auto pre = std::make_unique<DonateGrad>();
        pre->h = h;
        donate = pre.get();
        fn->add_pre_hook(std::move(pre));
    }
    int64_t freed = 0;
    ActivationPeak *ap = ActivationPeak::current; // a measured step: segments at each function
    if (ap) ap->hook_graph(roots);
    try {
        torch::autograd::backward(roots, grads, retain, /*create_graph=*/false, inputs);
    } catch (...) {
        if (ap) ap->unhook_graph();
        unhook();
        throw;
    }
    if (ap) ap->unhook_graph();
    if (h) freed = h->freed;
    if (h && h->watched_bytes > 0 && h->watched.expired()) freed = h->watched_bytes;
    unhook();
    return freed;
}

// Autograd functions that read no forward tensor: views and their likes
// (they keep sizes and strides), copies, sums and negations of the gradient,
// and the executor's own (exec_grad_order.cpp, exec_pieces.cpp).
static bool moves_gradient_only(const torch::autograd::Node *f) {
    static const std::unordered_set<std::string> names = {
        "SliceBackward0", "SelectBackward0", "NarrowBackward0", "ExpandBackward0", "PermuteBackward0",
        "TransposeBackward0", "TransposeBackward1", "TBackward0", "ViewBackward0", "UnsafeViewBackward0",
        "ReshapeAliasBackward0", "UnsqueezeBackward0", "UnsqueezeBackward1", "SqueezeBackward0", "SqueezeBackward1",
        "SqueezeBackward2", "AsStridedBackward0", "AliasBackward0", "SplitBackward0", "SplitWithSizesBackward0",
        "UnbindBackward0", "DiagonalBackward0", "ViewAsRealBackward0", "ViewAsComplexBackward0", "CloneBackward0",
        "ToCopyBackward0", "AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1", "NegBackward0",
        "rkx::SeedGrad"};
    return names.count(f->name()) || hands_no_gradient(f);
}

// Whether every function the backward of roots runs besides the root
// function (roots[0]'s) moves gradients only, up to the leaves'
// accumulators: then no forward tensor is read once the root function has
// run (TabNet's `x[:, :d] * sigmoid(x[:, d:])` written the other way round,
// a SwiGLU by slices: the mul's backward, then its slice's, which pads the
// gradient to the whole x's size; the plain step has freed what the mul
// saved by then).
static bool rest_reads_no_data(const std::vector<at::Tensor> &roots) {
    if (roots.empty() || !roots[0].grad_fn()) return false;
    const torch::autograd::Node *root = roots[0].grad_fn().get();
    std::unordered_set<const torch::autograd::Node *> seen{root};
    std::vector<const torch::autograd::Node *> todo;
    auto push = [&](const torch::autograd::Node *f) {
        if (f && !dynamic_cast<const torch::autograd::AccumulateGrad *>(f) && seen.insert(f).second) todo.push_back(f);
    };
    for (const torch::autograd::Edge &e : root->next_edges()) push(e.function.get());
    for (size_t i = 1; i < roots.size(); i++) push(roots[i].grad_fn().get());
    while (!todo.empty()) {
        const torch::autograd::Node *f = todo.back();
        todo.pop_back();
        if (!moves_gradient_only(f)) return false;
        for (const torch::autograd::Edge &e : f->next_edges()) push(e.function.get());
    }
    return true;
}

void Runtime::bwd(int g, bool data_used, BwdPart part, const std::vector<int> &forgotten_after) {
    Group &G = M.groups[g];
    GState &S = gs[g];
    if (!G.has_grad) fail(RK_EINPUT, "backward of a node without gradient");
    for (size_t k = 0; k < S.p.size(); k++)
        if (G.out_rg[k] && !S.p[k].proxy.defined())
            fail(RK_EINPUT, "backward of " + where(G.main) + " after its phantoms (autograd graph) were forgotten");
    // A part of a split backward: autograd restricted to that part's leaves;
    // the part that runs second is the gradient's last reader.
    std::vector<at::Tensor> inputs;
    bool last = true;
    if (part != BWD_ALL) {
        std::vector<at::Tensor> ps, xs;
        std::string why;
        if (!split_leaves(M, *this, g, ps, xs, &why))
            fail(RK_EINPUT, "the chain splits the backward of " + where(G.main) + " in two, but " + why +
                                ": trace the model again");
        if (S.parts_done & part)
            fail(RK_EINPUT, "the schedule runs the " + std::string(part == BWD_WEIGHT ? "weight" : "input") +
                                " part of the backward of " + where(G.main) + " twice on one forward");
        if (part == BWD_INPUT) add_carried_leaves(g, xs);
        inputs = part == BWD_WEIGHT ? ps : xs;
        last = (S.parts_done | part) == (BWD_WEIGHT | BWD_INPUT);
        S.parts_done |= part;
        data_used = false; // a split node's data stays until the schedule forgets it
    }
    std::vector<at::Tensor> roots, grads;
    if (!G.pieces.empty()) assemble_pieces(g); // its gradient, from its pieces'
    bwd_roots(g, roots, grads, false);
    // As the plain step: the data's last reader (the root function, e.g. the
    // ReLU after a BatchNorm) has run, so the data goes before the rest of the
    // backward (the BatchNorm's) runs.  A later read is refused (materialize).
    // So do the dependencies the schedule forgets right after this backward,
    // when nothing after the root function reads a forward tensor (decided
    // below, once the seeds are among the roots).  The simulator still counts
    // them through the node (a prediction that may be high, never low).
    const bool own = data_used && frees_data_in_bwd(g);
    std::vector<int> deps_early;
    std::function<void()> free_data = [this, g, own, &deps_early]() {
        if (own) {
            forget_data(g);
            gs[g].freed_by_bwd = true;
        }
        for (int d : deps_early) forget_data(d);
    };
    // The root gradient is the leaf's .grad (one more reference), forgotten
    // after this backward: an in-place activation may write into it.
    // The whole backward frees each function's saved tensors once it has run,
    // as the plain step does; a split backward's parts keep the graph (the
    // other part reads it; the tracer measures the parts so).
    size_t seeds = seed_roots(g, roots, grads, inputs, part != BWD_WEIGHT, false);
    if (part == BWD_ALL) {
        for (int d : forgotten_after)
            if (d != g && G.deps_real.count(d)) deps_early.push_back(d);
        if (!deps_early.empty() && !rest_reads_no_data(roots)) deps_early.clear();
    }
    backward_consuming(roots, grads, free_data, 1, inputs, last, /*retain=*/part != BWD_ALL && !last, seeds);
    if (part != BWD_WEIGHT) settle_dup_aliases(g);
    // Its gradient has no D-node of its own (its pieces' do): gone with them.
    if (!G.pieces.empty()) forget_grad(g);
    if (last)
        for (const Value *v : G.sums_read) {
            auto it = sum_left.find(v);
            if (it != sum_left.end() && --it->second <= 0) flush_static_sum(v);
        }
}

// Each later read of a dependency's leaf already among a node's arguments
// (or a list's items), as an alias leaf on the same bytes.  Parameters are
// left alone (their gradients meet in AccumulateGrad's one buffer, as the
// plain step's do), and so are tensors that need no gradient.
void Runtime::dedupe_reads(int g, Stack &st) {
    if (!at::GradMode::is_enabled()) return;
    if (param_impls.empty())
        for (const at::Tensor &p : params_of(M)) param_impls.insert(p.unsafeGetTensorImpl());
    std::unordered_set<const c10::TensorImpl *> seen;
    auto alias_of = [&](const at::Tensor &t) -> at::Tensor {
        if (!t.defined() || !t.is_leaf() || !t.requires_grad() || param_impls.count(t.unsafeGetTensorImpl()))
            return at::Tensor();
        if (seen.insert(t.unsafeGetTensorImpl()).second) return at::Tensor();
        at::Tensor a = t.detach().requires_grad_(true);
        dup_alias[g].push_back({t, a});
        return a;
    };
    for (IValue &v : st) {
        if (v.isTensor()) {
            at::Tensor a = alias_of(v.toTensor());
            if (a.defined()) v = a;
        } else if (v.isTensorList()) {
            c10::List<at::Tensor> l = v.toTensorList();
            bool changed = false;
            std::vector<at::Tensor> items;
            for (size_t i = 0; i < l.size(); i++) {
                at::Tensor t = l.get(i);
                at::Tensor a = alias_of(t);
                changed = changed || a.defined();
                items.push_back(a.defined() ? a : t);
            }
            if (changed) v = c10::List<at::Tensor>(items);
        }
    }
}

// After group g's backward: each alias's gradient added to its leaf's, in
// the order read, as the plain step adds each edge's.
void Runtime::settle_dup_aliases(int g) {
    auto it = dup_alias.find(g);
    if (it == dup_alias.end()) return;
    for (auto &la : it->second) {
        at::Tensor ag = la.second.grad();
        if (!ag.defined()) continue;
        la.second.mutable_grad() = at::Tensor();
        at::Tensor &lg = la.first.mutable_grad();
        if (!lg.defined()) lg = ag;
        else if (lg.use_count() == 1 && lg.storage().use_count() == 1 && !overlapping(lg)) lg.add_(ag); // as AccumulateGrad:
        else lg = lg + ag; // in place only into a buffer nobody else holds (a shared gradient)
    }
    dup_alias.erase(it);
}

// The gradient a static value's readers summed in its leaf, back through the
// value's own graph (kept: the next step runs it again), once, as the plain
// step's backward does when its last reader has given its part.
void Runtime::flush_static_sum(const Value *v) {
    auto it = sum_leaf.find(v);
    if (it == sum_leaf.end()) return;
    at::Tensor gr = sum_grad[v];
    sum_leaf.erase(it);
    sum_read.erase(v);
    sum_grad.erase(v);
    sum_left.erase(v);
    if (!gr.defined()) return;
    torch::autograd::backward({M.vi.at(v).sval.toTensor()}, {gr}, /*retain_graph=*/true);
}

void Runtime::flush_static_sums() {
    while (!sum_leaf.empty()) flush_static_sum(sum_leaf.begin()->first);
}

static void reset_part(Part &P) {
    if (!P.canon) return;
    P.canon.unsafeGetStorageImpl()->reset();
    for (auto &a : P.aliases) a.unsafeGetStorageImpl()->reset();
}

// The outputs the chain counts in its phantom (Group::part_in_phantom: sort's
// indices that nothing else reads) stay until the phantom goes.
void Runtime::forget_data(int g) {
    const std::vector<char> &ph = M.groups[g].part_in_phantom;
    for (size_t k = 0; k < gs[g].p.size(); k++)
        if (k >= ph.size() || !ph[k]) reset_part(gs[g].p[k]);
}

void Runtime::forget_phantom(int g) {
    const std::vector<char> &ph = M.groups[g].part_in_phantom;
    for (size_t k = 0; k < gs[g].p.size(); k++) {
        gs[g].p[k].proxy = at::Tensor();
        if (k < ph.size() && ph[k]) reset_part(gs[g].p[k]);
    }
    gs[g].parts_done = 0;
}

void Runtime::forget_grad(int g) {
    stack_grad.erase(g);
    for (auto &P : gs[g].p)
        if (P.leaf.defined()) P.leaf.mutable_grad() = at::Tensor();
}

} // namespace rkx
