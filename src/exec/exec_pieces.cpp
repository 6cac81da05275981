// exec_pieces.cpp — data that the other nodes of its block read only through
// pieces (issue 21: swin_t's q, k, v, `select`s of a permuted view of one qkv
// Linear output; the items of a `split` / `chunk`, piece_op).  Autograd gives each
// piece's gradient to its SelectBackward, which runs late (those functions were made early in the forward, and the
// engine runs later-made functions first), so the whole data's gradient
// appears only after the attention's softmax and q @ k backwards.  A leaf's
// accumulator instead took the first piece's gradient (attn @ v's backward)
// as a zero-filled gradient of the whole qkv, held through those backwards:
// keep-all 2.2 % above the plain step on swin_t.
//
// Here each piece is read through DepositGrad, whose backward keeps the piece's
// gradient apart (Runtime::piece_grad; a piece read by several nodes, as
// swin_v2's q and k by F.normalize's norm and division, gets each reader's
// gradient added in place, as autograd sums them before SelectBackward);
// the owner's backward adds them into
// zeros of its data's shape (Runtime::assemble_pieces: disjoint pieces, so
// each element is its piece's value, as autograd's sum of zero-filled piece
// gradients gives), then runs.  The chain sees the same: each reader's
// backward produces its piece's gradient (a grad D-node of the piece's
// bytes, `g<j>_<op>_p<k>`), and the owner's backward uses them instead of
// its own gradient (exec_cdgraph.cpp); the tracer adds the assembled
// gradient to the owner's backward overhead (exec_measure.cpp).
//
// The other way round, a `stack`'s inputs that nothing else reads get their
// strided pieces of the stack's gradient as they are (find_stack_inputs).
#include <torch/script.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "exec_internal.h"

namespace rkx {

const Value *resolve_alias(Model &M, const Value *v) {
    while (M.vi.at(v).alias) v = M.vi.at(v).alias;
    return v;
}

namespace {

// `select`, and the items of a `split` / `chunk` / `unbind` list (a
// ConvLSTM's gates, torch.split of one convolution: each gate's reader made
// a zero-filled gradient of the whole convolution output through
// SplitBackward, keep-all 0.65 % above the plain step on unseen3's convlstm;
// GPT2's fused QKV).
bool piece_op(const Node *n) {
    static const std::set<std::string> lists = {"aten::split", "aten::split_with_sizes", "aten::chunk",
                                                "aten::unsafe_split", "aten::unsafe_chunk", "aten::unbind"};
    return n->kind() == aten::select || lists.count(n->kind().toQualString()) > 0;
}

// v (a view of group d's data) replayed on `base` instead of the data, with
// constant arguments only (else false).  On a meta tensor: v's shape, without
// the analysis run's values (run and train drop them).
bool replay(Model &M, const Value *v, const IValue &base, int d, IValue &out) {
    v = resolve_alias(M, v);
    const VInfo &I = M.vi.at(v);
    if (I.kind == VK::Data && I.owner == d) {
        out = base;
        return true;
    }
    if (I.kind == VK::Static) {
        out = I.sval;
        return true;
    }
    if (I.kind != VK::View || !I.def || I.src < 0) return false;
    Stack st;
    for (size_t j = 0; j < I.def->inputs().size(); j++) {
        IValue x;
        if ((int)j == I.src ? !replay(M, I.def->input(j), base, d, x) : !replay(M, I.def->input(j), IValue(), -2, x))
            return false;
        st.push_back(x);
    }
    try {
        run_node(M, I.def, st);
    } catch (...) {
        return false;
    }
    for (size_t i = 0; i < I.def->outputs().size() && i < st.size(); i++)
        if (I.def->output(i) == v) {
            out = st[i];
            return true;
        }
    return false;
}

} // namespace

// The bytes of v, a view of group d's data (-1: unknown).
int64_t bytes_of(Model &M, const Value *v, int d) {
    const Group &D = M.groups[d];
    at::Tensor base = at::empty(D.sizes, at::TensorOptions().dtype(D.dtype).device(at::kMeta));
    IValue r;
    if (!replay(M, v, base, d, r) || !r.isTensor()) return -1;
    return r.toTensor().numel() * (int64_t)r.toTensor().element_size();
}

namespace {

// Is v, a view of group d's data, a piece of it: made by a piece op (or an
// item of a split/chunk/unbind list), smaller than the data, and not a
// `select` of the data itself (SelectIntoGrad's case, exec_runtime.cpp)?
bool is_piece(Model &M, const Value *v, int d) {
    const VInfo &I = M.vi.at(v);
    if (I.kind != VK::View || I.owner != d || !I.def) return false;
    const Node *def = I.def;
    bool piece = piece_op(def);
    if (!piece && (def->kind() == prim::ListUnpack || def->kind() == prim::TupleUnpack) && I.src >= 0) {
        const VInfo &L = M.vi.at(resolve_alias(M, def->input(I.src)));
        piece = L.kind == VK::View && L.def && piece_op(L.def);
    }
    if (!piece) return false;
    if (def->kind() == aten::select && I.src >= 0) {
        const VInfo &S = M.vi.at(resolve_alias(M, def->input(I.src)));
        if (S.kind == VK::Data && S.owner == d) return false;
    }
    int64_t n = bytes_of(M, v, d);
    return n >= 0 && n < M.groups[d].bytes;
}

// Group c's read of value v: false if it reads d's data other than through
// pieces; the pieces it reads are added to `out`.
bool read_through_pieces(Model &M, const Value *v, int d, std::set<const Value *> &out) {
    v = resolve_alias(M, v);
    const VInfo &I = M.vi.at(v);
    switch (I.kind) {
    case VK::Static: return true;
    case VK::Cheap:
        for (const Value *u : I.def->inputs())
            if (!read_through_pieces(M, u, d, out)) return false;
        return true;
    case VK::Data: return I.owner != d;
    case VK::View: {
        if (I.owner != d) return true; // its other inputs are shapes only
        // The piece nearest to v on its chain of views down to d's data.
        for (const Value *p = v;;) {
            if (is_piece(M, p, d)) {
                out.insert(p);
                return true;
            }
            const VInfo &P = M.vi.at(p);
            if (P.kind != VK::View || P.src < 0) return false;
            p = resolve_alias(M, P.def->input(P.src));
        }
    }
    }
    return false;
}

// The gradient reaching x goes to the runtime as it is, none to x: a piece's
// (kind PIECE, key its Value: piece_grad), a strided piece of a stack's
// gradient that the stack's backward hands one of its inputs (kind STACK, key
// the input's group: stack_grad), or a static sum's reader's (kind SUM, key
// its Value: sum_grad).
struct DepositGrad : torch::autograd::Function<DepositGrad> {
    enum Kind : int64_t { PIECE, STACK, SUM };
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, int64_t rt, int64_t kind,
                              int64_t key) {
        ctx->saved_data["rt"] = rt;
        ctx->saved_data["kind"] = kind;
        ctx->saved_data["key"] = key;
        return x.view_as(x);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        auto *R = reinterpret_cast<Runtime *>(ctx->saved_data["rt"].toInt());
        int64_t key = ctx->saved_data["key"].toInt();
        if (go[0].defined()) {
            int64_t kind = ctx->saved_data["kind"].toInt();
            if (kind == PIECE) R->deposit_piece(reinterpret_cast<const Value *>(key), go[0]);
            else if (kind == SUM) R->deposit_sum(reinterpret_cast<const Value *>(key), go[0]);
            else R->deposit_stack_grad((int)key, go[0]);
        }
        return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// A group that is one convolution: its backward makes the incoming gradient
// contiguous (in the memory format it runs in) before anything reads it, so
// a contiguous copy gives the same bits, and holds only its piece, where a
// kept view holds the whole `cat` gradient (a U-Net's up-convolutions, cat
// with their skips: the floor 29 → 32 % and a 30 % solve 2.8 → 9.7 s with
// the views).
static bool backward_takes_contiguous(const Group &E) {
    static const std::set<std::string> convs = {
        "aten::_convolution", "aten::convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
        "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"};
    return E.main && E.prog.back() == E.main && convs.count(E.main->kind().toQualString()) > 0;
}

// A `stack` or `cat` (group s) along a dim other than 0, its items, and
// for a cat each item's offset and length along the dim (all items Data or
// views of that rank: Res2Net's first scale, a chunk of the input cat-ed as
// it is, beside convolved scales whose BatchNorm the plain step hands a
// strided gradient; otherwise, e.g. an empty tensor skipped by cat, false).
struct StackItems {
    bool cat = false;
    int64_t dim = 0;
    std::vector<const Value *> items;
    std::vector<int64_t> off, len;
};
static bool stack_items(Model &M, int s, StackItems &T) {
    const Group &S = M.groups[s];
    if (!S.has_grad || !S.main || S.prog.back() != S.main || S.outs.size() != 1) return false;
    T.cat = S.main->kind() == aten::cat;
    if (!T.cat && S.main->kind() != aten::stack) return false;
    const VInfo &DI = M.vi.at(resolve_alias(M, S.main->input(1)));
    const VInfo &LI = M.vi.at(resolve_alias(M, S.main->input(0)));
    if (DI.kind != VK::Static || !DI.sval.isInt() || LI.kind != VK::Cheap || !LI.def ||
        LI.def->kind() != prim::ListConstruct)
        return false;
    int64_t rank = (int64_t)S.sizes.size();
    T.dim = DI.sval.toInt();
    if (T.dim < 0) T.dim += rank;
    if (T.dim <= 0 || T.dim >= rank) return false; // along dim 0 the pieces are dense: a leaf takes them as they are
    T.items.clear();
    for (const Value *u : LI.def->inputs()) T.items.push_back(resolve_alias(M, u));
    T.off.assign(T.items.size(), 0);
    T.len.assign(T.items.size(), -1);
    if (!T.cat) return true;
    int64_t at = 0;
    for (size_t i = 0; i < T.items.size(); i++) {
        const VInfo &I = M.vi.at(T.items[i]);
        const std::vector<int64_t> *sz = I.kind == VK::Data && I.part == 0 ? &M.groups[I.owner].sizes
                                         : I.kind == VK::View                ? &I.sizes
                                                                             : nullptr;
        if (!sz || sz->size() != (size_t)rank) return false;
        T.off[i] = at;
        T.len[i] = (*sz)[T.dim];
        at += T.len[i];
    }
    return at == S.sizes[T.dim];
}

// The group whose data item i of T (of stack s) is, when its gradient is
// that strided piece as it is (read by the stack only, once, directly, and
// its backward not one that makes it contiguous first); else -1.
static int strided_piece_owner(Model &M, int s, const StackItems &T, size_t i) {
    const VInfo &I = M.vi.at(T.items[i]);
    if (I.kind != VK::Data || I.owner == s || std::count(T.items.begin(), T.items.end(), T.items[i]) != 1) return -1;
    const Group &E = M.groups[I.owner];
    if (!E.has_grad || E.input_index >= 0 || E.outs.size() != 1 || E.consumers.size() != 1 || !E.pieces.empty() ||
        E.stack_reader >= 0)
        return -1;
    if (T.cat && backward_takes_contiguous(E)) return -1;
    return I.owner;
}

// The inputs of a `stack` (or `cat`) along a dim other than 0 that nothing
// else reads: the backward hands each a strided (non-dense) piece of the
// result's gradient (a select; a cat's: a narrow), which autograd passes on
// as it is, while a leaf's accumulator makes it contiguous, and a Linear's
// bias gradient or a BatchNorm's then sums in another order (moe_dense:
// experts' outputs stacked on the last dim, gradients differing in the last
// bit; an attention U-Net's BatchNorm whose output is cat with the skip on
// the channels: 44 of 54 gradients off by up to 9e-5).  Kept as views, the
// pieces hold the whole gradient until the last of them is forgotten: the
// chain counts that whole gradient on the input whose backward runs last
// (the first in the graph), 0 on the others, and the stack's backward does
// not count it twice.
void find_stack_inputs(Model &M) {
    for (int s : M.order) {
        Group &S = M.groups[s];
        StackItems T;
        if (!stack_items(M, s, T)) continue;
        int last = -1;
        for (size_t i = 0; i < T.items.size(); i++) {
            int e = strided_piece_owner(M, s, T, i);
            if (e < 0 || M.groups[e].block != S.block) continue; // (a block's input: build_structure cuts not there)
            Group &E = M.groups[e];
            E.stack_reader = s;
            E.stack_index = T.cat ? (int)T.off[i] : (int)i;
            E.stack_len = T.len[i];
            E.stack_dim = T.dim;
            E.stack_grad_bytes = 0;
            S.stack_input_kept = true;
            if (last < 0 || E.pos < M.groups[last].pos) last = e;
        }
        if (last >= 0) M.groups[last].stack_grad_bytes = S.grad_bytes;
    }
}

} // namespace

bool read_as_a_strided_piece(Model &M, int g) {
    const Group &G = M.groups[g];
    if (G.consumers.size() != 1) return false;
    StackItems T;
    if (!stack_items(M, G.consumers[0], T)) return false;
    for (size_t i = 0; i < T.items.size(); i++)
        if (strided_piece_owner(M, G.consumers[0], T, i) == g) return true;
    return false;
}

// The inputs of a `sum` over some dims that nothing else reads: SumBackward
// hands each an expand (stride 0) of the sum's gradient, which autograd
// passes on as it is to the input's own backward; a leaf's accumulator made
// it a dense gradient of the input's size, held until that backward
// (sigmoid(conv(x)).sum(-1): keep-all 1.23 x the plain step; unseen5's
// fakequant, a window attention's (a * win).sum(2): 1.108).  Kept as the
// expand (through the stack machinery: Group::stack_reader, sum_input), the
// chain counts the sum's gradient's bytes on it, not twice at the sum's
// backward.  Only a group that is one op (an in-place activation merged
// after it writes into its incoming gradient), read directly (a view's
// backward would copy), by a sum without a dtype that is not the model's
// output (whose gradient a sum loss gives as an expand of one scalar, which
// the chain counts as the output's bytes); in its block or as the block's
// input (the boundary's gradient D-node then has the sum's bytes).
static void find_sum_inputs(Model &M) {
    for (int s : M.order) {
        Group &S = M.groups[s];
        if (!S.has_grad || !S.main || S.prog.back() != S.main || S.outs.size() != 1 || S.main->kind() != aten::sum ||
            S.main->inputs().size() != 4 || S.stack_reader >= 0 || !S.pieces.empty() || s == M.out_group)
            continue; // (the model's output: a sum loss's gradient is already an expand, sum_grad_to_leaf)
        const VInfo &DI = M.vi.at(resolve_alias(M, S.main->input(1)));
        const VInfo &KI = M.vi.at(resolve_alias(M, S.main->input(2)));
        const VInfo &TI = M.vi.at(resolve_alias(M, S.main->input(3)));
        if (DI.kind != VK::Static || !DI.sval.isIntList() || KI.kind != VK::Static || !KI.sval.isBool() ||
            TI.kind != VK::Static || !TI.sval.isNone())
            continue;
        const VInfo &I = M.vi.at(resolve_alias(M, S.main->input(0)));
        if (I.kind != VK::Data || I.part != 0 || I.owner == s) continue;
        Group &E = M.groups[I.owner];
        if (!E.has_grad || E.input_index >= 0 || E.outs.size() != 1 || E.consumers.size() != 1 ||
            !E.pieces.empty() || E.stack_reader >= 0 || !E.main || E.prog.back() != E.main || E.clone_arg >= 0 ||
            E.dtype != S.dtype)
            continue;
        std::vector<int64_t> dims = DI.sval.toIntVector();
        const int64_t rank = (int64_t)E.sizes.size();
        bool ok = !dims.empty();
        for (int64_t &d : dims) {
            if (d < 0) d += rank;
            ok = ok && d >= 0 && d < rank;
        }
        std::sort(dims.begin(), dims.end());
        if (!ok || std::adjacent_find(dims.begin(), dims.end()) != dims.end()) continue;
        E.stack_reader = s;
        E.sum_input = true;
        E.sum_dims = dims;
        E.sum_keepdim = KI.sval.toBool();
        E.stack_grad_bytes = S.grad_bytes;
        S.stack_input_kept = true;
    }
}

// Group d's readers of its pieces when every group that reads its data with
// a gradient reads it only through pieces (and at least one does): each
// piece's readers in the order they run, in `reader`; else false.
bool read_only_through_pieces(Model &M, int d, std::map<const Value *, std::vector<int>> &reader) {
    const Group &D = M.groups[d];
    reader.clear();
    if (!D.has_grad || D.outs.size() != 1) return false;
    bool any = false;
    for (int c : D.consumers) {
        const Group &C = M.groups[c];
        if (!C.has_grad || !C.deps_real.count(d)) continue;
        std::set<const Value *> ps, local;
        for (Node *n : C.prog) {
            for (const Value *u : n->inputs())
                if (!local.count(u) && !read_through_pieces(M, u, d, ps)) return false;
            for (const Value *o : n->outputs()) local.insert(o);
        }
        for (const Value *p : ps) {
            if (reader[p].empty() || reader[p].back() != c) reader[p].push_back(c);
            any = true;
        }
    }
    return any;
}

bool read_only_through_split_items(Model &M, int d) {
    std::map<const Value *, std::vector<int>> reader;
    if (!read_only_through_pieces(M, d, reader)) return false;
    for (auto &r : reader)
        if (M.vi.at(r.first).def->kind() == aten::select) return false;
    return true;
}

void find_pieces(Model &M) {
    find_stack_inputs(M);
    find_sum_inputs(M);
    for (int d : M.order) {
        Group &D = M.groups[d];
        if (D.block < 0 || M.order[M.block_end[D.block] - 1] == d) continue;
        std::map<const Value *, std::vector<int>> reader; // a piece's readers (each reads it once)
        if (!read_only_through_pieces(M, d, reader)) continue;
        bool ok = true;
        for (auto &r : reader)
            for (int c : r.second) ok = ok && M.groups[c].block == D.block;
        if (!ok) continue;
        std::vector<std::pair<int, const Value *>> byorder;
        for (auto &r : reader) byorder.push_back({M.node_index.at(r.first->node()), r.first});
        std::sort(byorder.begin(), byorder.end());
        for (auto &x : byorder) {
            D.pieces.push_back(x.second);
            D.piece_bytes.push_back(bytes_of(M, x.second, d));
            D.piece_readers.push_back(reader.at(x.second));
            M.piece_owner[x.second] = d;
        }
    }
}

at::Tensor Runtime::wrap_piece(const Value *v, const at::Tensor &t) {
    if (!at::GradMode::is_enabled() || !t.requires_grad()) return t;
    return DepositGrad::apply(t, (int64_t)reinterpret_cast<intptr_t>(this), DepositGrad::PIECE,
                              (int64_t)reinterpret_cast<intptr_t>(v));
}

at::Tensor Runtime::wrap_stack_input(int g, const at::Tensor &leaf) {
    if (!at::GradMode::is_enabled() || !leaf.requires_grad()) return leaf;
    return DepositGrad::apply(leaf, (int64_t)reinterpret_cast<intptr_t>(this), DepositGrad::STACK, (int64_t)g);
}

at::Tensor Runtime::wrap_sum(const Value *v, const at::Tensor &leaf) {
    return DepositGrad::apply(leaf, (int64_t)reinterpret_cast<intptr_t>(this), DepositGrad::SUM,
                              (int64_t)reinterpret_cast<intptr_t>(v));
}

// As autograd's input buffer adds a tensor's gradients: the first as it came
// (its layout: a transposed reader's gives the reduction in the backward of
// the `expand` its order), then into it in place where nothing else holds it
// and it is dense, else out of place.  A leaf's accumulator made the first
// contiguous (the expand's value is not dense): DETR's queries' gradient
// differed in the last bits.
void Runtime::deposit_sum(const Value *v, const at::Tensor &g) {
    at::Tensor &s = sum_grad[v];
    if (!s.defined()) {
        s = g;
        return;
    }
    bool inplace = s.is_non_overlapping_and_dense() && s.use_count() == 1 && s.has_storage() &&
                   s.storage().use_count() == 1 && !s.is_sparse();
    if (inplace) s.add_(g);
    else s = s + g;
}

void Runtime::deposit_stack_grad(int g, const at::Tensor &gr) {
    at::Tensor &s = stack_grad[g];
    s = s.defined() ? s + gr : gr; // a second backward of the stack on one forward: added
}

at::Tensor Runtime::stack_piece_ones(int g) {
    const Group &E = M.groups[g];
    const Group &S = M.groups[E.stack_reader];
    // In the layout the reader's gradient has in a step (the layout probe's,
    // else its data's): a piece of a channels-last `cat`'s gradient is not
    // dense, and some backwards copy it first (upsample_bilinear2d's: the
    // contiguous buffer's piece missed that copy, and a schedule ran
    // 294 912 B over its budget on unseen13's SegFormer-like decoder).
    const Part &RP = gs[E.stack_reader].p[0];
    std::vector<int64_t> st = received_strides(RP);
    if (st.empty() && RP.leaf.defined()) st = RP.leaf.strides().vec();
    const at::TensorOptions opts = gs[g].p[0].leaf.options().requires_grad(false);
    at::Tensor buf = st.size() == S.sizes.size() ? at::empty_strided(S.sizes, st, opts).fill_(1) : at::ones(S.sizes, opts);
    stack_buffers.push_back(buf);
    if (E.sum_input) { // SumBackward's expand of the sum's gradient
        at::Tensor t = buf;
        if (!E.sum_keepdim)
            for (int64_t d : E.sum_dims) t = t.unsqueeze(d);
        return t.expand(E.sizes);
    }
    return E.stack_len < 0 ? buf.select(E.stack_dim, E.stack_index) : buf.narrow(E.stack_dim, E.stack_index, E.stack_len);
}

void Runtime::deposit_piece(const Value *v, const at::Tensor &g) {
    at::Tensor &s = piece_grad[v];
    if (s.defined()) { // a second backward of its reader on one forward: added
        if (storage_shared(s)) s = s + g; // a leaf's gradient too (share_grad): not in place
        else s.add_(g);
        return;
    }
    // Kept as it is when it owns its bytes alone; else a copy of its own (a
    // view of a larger gradient would hold all of it).
    bool own = alone_in_storage(g) && g.storage().use_count() == 1 && g.use_count() <= 2;
    s = own ? g : g.clone(at::MemoryFormat::Contiguous);
}

namespace {
// v's chain of views applied to `base` instead of group d's data.
IValue on_base(Runtime &R, const Value *v, const at::Tensor &base, int d) {
    Model &M = R.M;
    v = resolve_alias(M, v);
    const VInfo &I = M.vi.at(v);
    if (I.kind == VK::Data && I.owner == d) return base;
    if (I.kind != VK::View) return R.materialize(v);
    Stack st;
    for (size_t j = 0; j < I.def->inputs().size(); j++)
        st.push_back((int)j == I.src ? on_base(R, I.def->input(j), base, d) : R.materialize(I.def->input(j)));
    run_node(M, I.def, st);
    for (size_t i = 0; i < I.def->outputs().size(); i++)
        if (I.def->output(i) == v) return st[i];
    fail(RK_EFAIL, "piece not found among its node's outputs: " + where(I.def));
}
} // namespace

// The strides of the gradient the plain step's engine gives group g's data
// from its pieces alone: each piece's backward makes zeros of its source's
// shape (SelectBackward, SplitBackward's cat), summed there, then the
// source's chain of views goes back to the data (a transpose's backward
// hands a transposed gradient: Hyena's filter `h.transpose(0, 1).reshape(2,
// D, L)` read as k[0] and k[1]).  The owner's backward reads its gradient in
// that layout, and so sums it in the plain step's order (a bias gradient's
// reduction over rows).  Found by autograd on a meta tensor of the data's
// shape (no bytes); empty when that fails or the result is not dense.
std::vector<int64_t> Runtime::pieces_grad_strides(int g) {
    auto it = pieces_layout.find(g);
    if (it != pieces_layout.end()) return it->second;
    std::vector<int64_t> strides;
    Group &G = M.groups[g];
    const at::Tensor &leaf = gs[g].p[0].leaf;
    try {
        at::AutoGradMode grad_mode(true);
        at::Tensor probe = at::empty_strided(leaf.sizes(), leaf.strides(),
                                             leaf.options().device(at::kMeta).requires_grad(false));
        probe.requires_grad_(true);
        std::vector<at::Tensor> outs, seeds;
        for (const Value *v : G.pieces) {
            IValue iv = on_base(*this, v, probe, g);
            if (!iv.isTensor() || !iv.toTensor().requires_grad()) continue;
            outs.push_back(iv.toTensor());
            seeds.push_back(at::zeros(outs.back().sizes(), outs.back().options().requires_grad(false)));
        }
        if (!outs.empty()) {
            auto r = torch::autograd::grad(outs, {probe}, seeds, /*retain_graph=*/false, /*create_graph=*/false,
                                           /*allow_unused=*/true);
            if (!r.empty() && r[0].defined() && r[0].sizes() == leaf.sizes() &&
                r[0].is_non_overlapping_and_dense())
                strides = r[0].strides().vec();
        }
    } catch (const std::exception &) {
        strides.clear(); // (contiguous, as before)
    }
    pieces_layout[g] = strides;
    return strides;
}

void Runtime::assemble_pieces(int g) {
    Group &G = M.groups[g];
    Part &P = gs[g].p[0];
    bool any = false;
    for (const Value *v : G.pieces) any = any || piece_grad.count(v);
    if (!any) return; // no gradient reached any piece: as autograd, none
    std::vector<int64_t> layout = pieces_grad_strides(g);
    at::NoGradGuard no_grad;
    at::Tensor whole = P.leaf.grad();
    if (!whole.defined())
        whole = layout.empty() ? at::zeros(P.leaf.sizes(), P.leaf.options().requires_grad(false))
                               : at::empty_strided(P.leaf.sizes(), layout, P.leaf.options().requires_grad(false)).zero_();
    else if (storage_shared(whole)) whole = whole.clone(at::MemoryFormat::Preserve); // not into another's (share_grad)
    else if (overlapping(whole)) whole = whole.clone(at::MemoryFormat::Contiguous); // expanded (keep_expanded_grad)
    // Later pieces first, as the engine runs their backward functions.
    for (size_t k = G.pieces.size(); k-- > 0;) {
        auto it = piece_grad.find(G.pieces[k]);
        if (it == piece_grad.end()) continue;
        on_base(*this, G.pieces[k], whole, g).toTensor().add_(it->second);
        piece_grad.erase(it);
    }
    P.leaf.mutable_grad() = whole;
}

} // namespace rkx
