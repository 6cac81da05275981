// exec_act_grad.cpp — in-place activations whose backward writes the new
// gradient into the incoming one, and ReLU / ReLU6 that keep a mask instead of
// their result.  An in-place activation merged into its owner's group (`relu_`,
// `hardtanh_` = ReLU6, `leaky_relu_`, `sigmoid_`, `tanh_`) runs, in the
// executor, as a custom autograd function: the same forward kernel, the result
// saved (as ReluBackward0 saves it; `hardtanh_`'s HardtanhBackward0 saves a
// copy of its input, whose mask is the result's), and a backward that calls
// the out= form of the plain backward kernel with out = the incoming gradient
// when that gradient is donated (the group's root gradient, which nothing
// outside autograd holds: Runtime::backward_consuming checks the counts) and
// has the layout the plain kernel would give; the bytes then move to a new
// tensor that only the engine holds, so they go as soon as the next function
// consumed them.  Otherwise the plain kernel.  Same kernels, same values bit
// for bit.  docs/exec.md, "Activation gradients in place".
//
// ReLU and ReLU6 (`relu`, `relu_`, `relu6`, `hardtanh`, `hardtanh_`) whose
// result no consumer's backward keeps (it only feeds 2-d pools, adds, cat,
// means, ...: kept_by_no_consumer; the nodes are found once, M.act_mask) save
// instead the one-byte mask of the elements their backward zeroes (`y <= 0`;
// `y <= min || y >= max`), and their backward is dy with those elements
// +0.0: what threshold_backward / hardtanh_backward compute from y, bit for
// bit, with a quarter of a float32 result's bytes held.  LeakyReLU likewise
// with the mask of the elements its backward scales (`!(v > 0)`, v its input
// or in-place result): an out-of-place `leaky_relu` saves its input, which
// the mask replaces wherever nothing else reads that input (whoever keeps the
// result); the backward is `mask ? dy * slope : dy`, leaky_relu_backward's
// products, in float32 and float64.  docs/exec.md, "ReLU keeps a mask".
#include <torch/script.h>
#include <torch/csrc/autograd/custom_function.h>
#include <c10/core/StorageImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <set>

#include "exec_internal.h"

namespace rkx {

// Per thread: the root function's pre-hook, the function and its post-hook
// run on the same engine thread (the caller's on CPU, the device's on CUDA),
// and sessions on other threads never see it.
GradDonation &grad_donation() {
    static thread_local GradDonation d;
    return d;
}

namespace {

enum ActKind : int64_t { ACT_RELU, ACT_HARDTANH, ACT_LEAKY, ACT_SIGMOID, ACT_TANH };

// dy may be written: the donated gradient, dense, covering its whole storage
// alone, in y's sizes, strides and dtype (so the out= kernel gives what the
// plain one would, in the layout it would).
bool may_write(const at::Tensor &dy, at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype,
               at::Device device) {
    GradDonation &d = grad_donation();
    if (!d.impl || dy.unsafeGetTensorImpl() != d.impl) return false;
    if (!dy.has_storage() || dy.is_sparse() || dy.layout() != at::kStrided || dy.is_mkldnn()) return false;
    if (!dy.is_non_overlapping_and_dense() || dy.storage_offset() != 0) return false;
    if (dy.sizes() != sizes || dy.strides() != strides || dy.scalar_type() != dtype || dy.device() != device)
        return false;
    const c10::Storage &s = dy.storage();
    return s.use_count() == 1 && s.data() != nullptr && (int64_t)s.nbytes() == dy.numel() * (int64_t)dy.element_size();
}

// dy's bytes as a new tensor (own storage, same layout); dy keeps an empty storage.
at::Tensor take_bytes(const at::Tensor &dy) {
    c10::StorageImpl *si = dy.storage().unsafeGetStorageImpl();
    size_t nb = si->nbytes();
    c10::DataPtr dp = si->set_data_ptr(c10::DataPtr(nullptr, si->device()));
    si->set_nbytes(0);
    c10::Storage ns(c10::Storage::use_byte_size_t(), nb, std::move(dp), si->allocator(), false);
    at::Tensor dx = at::empty({0}, dy.options());
    dx.set_(ns, 0, dy.sizes(), dy.strides());
    grad_donation().moved = (int64_t)nb;
    return dx;
}

// Whether writing the backward into dy may happen twice: ReLU's and ReLU6's
// zeroing is idempotent, so a split backward's first part may write into the
// gradient it keeps for the second (GradDonation.keep), which runs the same
// backward again on it; scaling (LeakyReLU) or sigmoid's and tanh's products
// are not.
bool backward_idempotent(int64_t kind) { return kind == ACT_RELU || kind == ACT_HARDTANH; }

// dy, written in place with the backward's result: the caller's still
// (GradDonation.keep: a split backward's first part), else its bytes moved to
// a new tensor that only the engine holds.
at::Tensor hand_on_written(const at::Tensor &dy) { return grad_donation().keep ? dy : take_bytes(dy); }

// The flat loops of the mask path, vectorized (at -O2 GCC does not by
// itself): the mask `p <= lo` (or `p <= lo || p >= hi`), and the gradient
// with the masked elements +0.0 as the bits of dy ANDed with all ones or
// zeros (exact, and as fast as threshold_backward's vectorized kernel).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize")
#endif
enum MaskRule { MASK_LE, MASK_OUTSIDE, MASK_NOT_GT }; // p <= lo; p <= lo || p >= hi; !(p > lo)
template <typename T> void mask_loop(const T *p, uint8_t *q, int64_t s, int64_t e, MaskRule r, T lo, T hi) {
    if (r == MASK_OUTSIDE)
        for (int64_t i = s; i < e; i++) q[i] = p[i] <= lo || p[i] >= hi;
    else if (r == MASK_NOT_GT)
        for (int64_t i = s; i < e; i++) q[i] = !(p[i] > lo);
    else
        for (int64_t i = s; i < e; i++) q[i] = p[i] <= lo;
}
template <typename U> void zero_loop(const U *g, const uint8_t *q, U *o, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; i++) o[i] = g[i] & (U)(U(0) - U(q[i] ^ 1));
}
// leaky_relu_backward's `v > 0 ? g : g * slope`, from the mask of !(v > 0)
template <typename T> void scale_loop(const T *g, const uint8_t *q, T *o, int64_t s, int64_t e, T slope) {
    for (int64_t i = s; i < e; i++) o[i] = q[i] ? g[i] * slope : g[i];
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// A dense CPU tensor of a floating type the flat loops below take: its
// elements are its storage's numel() elements from data_ptr, in its layout.
bool flat_cpu(const at::Tensor &t) {
    const at::ScalarType k = t.scalar_type();
    return t.device().is_cpu() && t.layout() == at::kStrided && t.is_non_overlapping_and_dense() &&
           (k == at::kFloat || k == at::kDouble || k == at::kHalf || k == at::kBFloat16);
}

// The elements of ReLU's (min 0) or ReLU6's (hardtanh: min a, max b) result
// y whose gradient the plain backward kernel zeroes: threshold_backward's
// `y <= 0`, hardtanh_backward's `y <= a || y >= b` (NaN in neither; the
// bounds in y's type, as the kernels compare), in y's layout; LeakyReLU's
// whose gradient it scales: `!(y > 0)` (NaN included, as the kernel's
// `y > 0 ? dy : dy * slope`).  On the CPU one flat loop over y's memory
// (at::le / logical_or are twice ReLU's time and allocate a temporary);
// elsewhere ATen's comparisons.
at::Tensor backward_mask(const at::Tensor &y, int64_t kind, const c10::Scalar &a, const c10::Scalar &b) {
    if (flat_cpu(y)) {
        at::Tensor m = at::empty_strided(y.sizes(), y.strides(), y.options().dtype(at::kBool));
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, y.scalar_type(), "backward_mask", [&] {
            const scalar_t *p = y.const_data_ptr<scalar_t>();
            uint8_t *q = reinterpret_cast<uint8_t *>(m.data_ptr<bool>());
            const MaskRule r = kind == ACT_RELU ? MASK_LE : kind == ACT_LEAKY ? MASK_NOT_GT : MASK_OUTSIDE;
            const scalar_t lo = r == MASK_OUTSIDE ? a.to<scalar_t>() : scalar_t(0);
            const scalar_t hi = r == MASK_OUTSIDE ? b.to<scalar_t>() : scalar_t(0);
            at::parallel_for(0, y.numel(), 32768,
                             [&](int64_t s, int64_t e) { mask_loop<scalar_t>(p, q, s, e, r, lo, hi); });
        });
        return m;
    }
    if (kind == ACT_RELU) return at::le(y, 0);
    if (kind == ACT_LEAKY) return at::logical_not(at::gt(y, 0));
    at::Tensor m = at::le(y, a);
    m.logical_or_(at::ge(y, b));
    return m;
}

// Whether LeakyReLU's mask path gives its backward bit for bit: float32 and
// float64, whose kernel multiplies in the element type (the reduced types
// multiply in float and round).
bool leaky_mask_exact(const at::Tensor &t) {
    return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
}

// LeakyReLU's backward from the mask: dy with the masked elements times the
// slope; into dy when in_place, else a new tensor (the layout as
// zero_masked's).  On the CPU, for dy laid out as the mask, one flat loop.
at::Tensor scale_masked(const at::Tensor &dy, const at::Tensor &m, const c10::Scalar &slope, bool in_place) {
    if (flat_cpu(dy) && leaky_mask_exact(dy) && m.device().is_cpu() && dy.sizes() == m.sizes() &&
        dy.strides() == m.strides()) {
        at::Tensor out = in_place ? dy : at::empty_strided(dy.sizes(), dy.strides(), dy.options());
        const uint8_t *q = reinterpret_cast<const uint8_t *>(m.const_data_ptr<bool>());
        AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "scale_masked", [&] {
            const scalar_t *g = dy.const_data_ptr<scalar_t>();
            scalar_t *o = out.data_ptr<scalar_t>();
            const scalar_t k = slope.to<scalar_t>();
            at::parallel_for(0, dy.numel(), 32768,
                             [&](int64_t s, int64_t e) { scale_loop<scalar_t>(g, q, o, s, e, k); });
        });
        return out;
    }
    at::Tensor r = at::where(m, dy * slope, dy);
    return in_place ? at::Tensor(dy).copy_(r) : r;
}

// dy with the masked elements +0.0 and the others dy's, as threshold_backward
// / hardtanh_backward give them; into `out` when defined (dy itself, in
// place), else a new tensor in the layout TensorIterator gives the plain
// kernel (the mask has y's strides).  On the CPU, for dy laid out as the
// mask, one flat loop over its bits (at::where and masked_fill are ten times
// slower than threshold_backward there); else ATen's where / masked_fill_.
at::Tensor zero_masked(const at::Tensor &dy, const at::Tensor &m, bool in_place) {
    if (flat_cpu(dy) && m.device().is_cpu() && dy.sizes() == m.sizes() && dy.strides() == m.strides()) {
        at::Tensor out = in_place ? dy : at::empty_strided(dy.sizes(), dy.strides(), dy.options());
        const uint8_t *q = reinterpret_cast<const uint8_t *>(m.const_data_ptr<bool>());
        auto run = [&](auto zero) { // zero: an unsigned integer of the element's width
            using U = decltype(zero);
            const U *g = static_cast<const U *>(dy.const_data_ptr());
            U *o = static_cast<U *>(out.data_ptr());
            at::parallel_for(0, dy.numel(), 32768, [&](int64_t s, int64_t e) { zero_loop<U>(g, q, o, s, e); });
        };
        switch (dy.element_size()) {
        case 8: run(uint64_t(0)); break;
        case 4: run(uint32_t(0)); break;
        default: run(uint16_t(0)); break;
        }
        return out;
    }
    if (in_place) {
        at::Tensor out = dy;
        return out.masked_fill_(m, 0);
    }
    return at::where(m, at::zeros({}, dy.options()), dy);
}

// The backward from the mask: zeroed elements (ReLU, ReLU6) or scaled ones (LeakyReLU).
at::Tensor apply_mask(const at::Tensor &dy, const at::Tensor &m, int64_t kind, const c10::Scalar &slope,
                      bool in_place) {
    return kind == ACT_LEAKY ? scale_masked(dy, m, slope, in_place) : zero_masked(dy, m, in_place);
}

// Save what the backward needs: y itself, or only its mask and layout.
void save_result(torch::autograd::AutogradContext *ctx, const at::Tensor &y, int64_t kind, const c10::Scalar &a,
                 const c10::Scalar &b, bool mask) {
    ctx->saved_data["kind"] = kind;
    ctx->saved_data["a"] = a;
    ctx->saved_data["b"] = b;
    ctx->saved_data["mask"] = mask;
    if (mask) {
        ctx->saved_data["sizes"] = y.sizes().vec();
        ctx->saved_data["strides"] = y.strides().vec();
        ctx->saved_data["dtype"] = (int64_t)y.scalar_type();
    }
    ctx->save_for_backward({mask ? backward_mask(y, kind, a, b) : y});
}

// The backward from the saved mask: written into dy when it is donated
// (then moved to a new tensor), else a new tensor.
at::Tensor masked_backward(torch::autograd::AutogradContext *ctx, const at::Tensor &dy, const at::Tensor &m) {
    const int64_t kind = ctx->saved_data["kind"].toInt();
    const c10::Scalar a = ctx->saved_data["a"].toScalar();
    if ((!grad_donation().keep || backward_idempotent(kind)) &&
        may_write(dy, ctx->saved_data["sizes"].toIntVector(), ctx->saved_data["strides"].toIntVector(),
                  (at::ScalarType)ctx->saved_data["dtype"].toInt(), m.device())) {
        apply_mask(dy, m, kind, a, true);
        return hand_on_written(dy);
    }
    return apply_mask(dy, m, kind, a, false);
}

struct ActGradInPlace : torch::autograd::Function<ActGradInPlace> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, at::Tensor x, int64_t kind, c10::Scalar a,
                              c10::Scalar b, bool mask) {
        switch (kind) {
        case ACT_RELU: at::relu_(x); break;
        case ACT_HARDTANH: at::hardtanh_(x, a, b); break;
        case ACT_LEAKY: at::leaky_relu_(x, a); break;
        case ACT_SIGMOID: at::sigmoid_(x); break;
        default: at::tanh_(x); break;
        }
        ctx->mark_dirty({x});
        save_result(ctx, x, kind, a, b, mask);
        return x;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor y = ctx->get_saved_variables()[0];
        const at::Tensor &dy = go[0];
        int64_t kind = ctx->saved_data["kind"].toInt();
        c10::Scalar a = ctx->saved_data["a"].toScalar(), b = ctx->saved_data["b"].toScalar();
        at::Tensor dx;
        if (dy.defined() && ctx->saved_data["mask"].toBool()) {
            dx = masked_backward(ctx, dy, y);
        } else if (dy.defined() && (!grad_donation().keep || backward_idempotent(kind)) &&
                   may_write(dy, y.sizes(), y.strides(), y.scalar_type(), y.device())) {
            at::Tensor out = dy; // out= aliases the incoming gradient fully (TensorIterator allows it)
            switch (kind) {
            case ACT_RELU: at::threshold_backward_out(out, dy, y, 0); break;
            case ACT_HARDTANH: at::hardtanh_backward_out(out, dy, y, a, b); break;
            case ACT_LEAKY: at::leaky_relu_backward_out(out, dy, y, a, true); break;
            case ACT_SIGMOID: at::sigmoid_backward_out(out, dy, y); break;
            default: at::tanh_backward_out(out, dy, y); break;
            }
            dx = hand_on_written(dy);
        } else if (dy.defined()) {
            switch (kind) {
            case ACT_RELU: dx = at::threshold_backward(dy, y, 0); break;
            case ACT_HARDTANH: dx = at::hardtanh_backward(dy, y, a, b); break;
            case ACT_LEAKY: dx = at::leaky_relu_backward(dy, y, a, true); break;
            case ACT_SIGMOID: dx = at::sigmoid_backward(dy, y); break;
            default: dx = at::tanh_backward(dy, y); break;
            }
        }
        return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// Out-of-place ReLU / ReLU6 keeping the mask of its result (only built when
// no consumer keeps the result: M.act_mask), LeakyReLU the mask of its input
// (only built when nothing else reads the input).
struct ActMask : torch::autograd::Function<ActMask> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, at::Tensor x, int64_t kind, c10::Scalar a,
                              c10::Scalar b) {
        at::Tensor y = kind == ACT_RELU ? at::relu(x) : kind == ACT_LEAKY ? at::leaky_relu(x, a) : at::hardtanh(x, a, b);
        save_result(ctx, kind == ACT_LEAKY ? x : y, kind, a, b, true);
        return y;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor dx;
        if (go[0].defined())
            dx = apply_mask(go[0], ctx->get_saved_variables()[0], ctx->saved_data["kind"].toInt(),
                            ctx->saved_data["a"].toScalar(), false);
        return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// Whether no consumer's backward keeps v's bytes: every use (through
// reshapes and a dropout that may return v itself) is a 2-d pool (run as
// exec_pool_grad.cpp's functions: indices and shape only), an add or sub
// (nothing saved), a mean or sum (sizes only), a dropout in training (its
// mask only), or a cat / stack of a list.
// A model output, an unused value or any other consumer: false.
bool kept_by_no_consumer(const Value *v, int depth) {
    static const std::set<std::string> saves_none = {"aten::max_pool2d", "aten::avg_pool2d", "aten::add",
                                                     "aten::sub", "aten::mean", "aten::sum"};
    static const std::set<std::string> passes = {"aten::flatten", "aten::view",    "aten::reshape",
                                                 "aten::squeeze", "aten::unsqueeze", "aten::dropout"};
    if (depth > 16 || v->uses().empty()) return false;
    for (const torch::jit::Use &u : v->uses()) {
        const std::string k = u.user->kind().toQualString();
        if (saves_none.count(k) && (u.offset == 0 || (u.offset == 1 && (k == "aten::add" || k == "aten::sub"))))
            continue;
        // dropout in training (a constant true): a new tensor, only its mask saved
        if (k == "aten::dropout" && u.offset == 0 && u.user->inputs().size() == 3) {
            c10::optional<IValue> train = torch::jit::toIValue(u.user->input(2));
            if (train && train->isBool() && train->toBool()) continue;
        }
        if (passes.count(k) && u.offset == 0 && u.user->outputs().size() == 1 &&
            kept_by_no_consumer(u.user->output(), depth + 1))
            continue;
        if (k == "prim::ListConstruct" && u.user->outputs().size() == 1 && !u.user->output()->uses().empty()) {
            bool joined = true;
            for (const torch::jit::Use &w : u.user->output()->uses()) {
                const std::string j = w.user->kind().toQualString();
                joined = joined && w.offset == 0 && (j == "aten::cat" || j == "aten::stack");
            }
            if (joined) continue;
        }
        return false;
    }
    return true;
}

// Whether v is read by nothing but its one use and holds bytes nobody else
// keeps: made by an op that saves neither its result nor a view of it for
// its own backward (a convolution, a matrix product, a normalisation, an
// add, ...), through reshapes each read once.
bool read_once_fresh(const Value *v, int depth) {
    static const std::set<std::string> fresh = {
        "aten::_convolution", "aten::conv1d",     "aten::conv2d",        "aten::conv3d",     "aten::linear",
        "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::batch_norm",
        "aten::layer_norm",   "aten::group_norm", "aten::instance_norm", "aten::add",        "aten::sub",
        "aten::mul",          "aten::div",        "aten::matmul",        "aten::addmm",      "aten::mm",
        "aten::bmm",          "aten::cat",        "aten::avg_pool2d",    "aten::max_pool2d", "aten::adaptive_avg_pool2d",
        "aten::upsample_nearest2d", "aten::upsample_bilinear2d"};
    static const std::set<std::string> reshapes = {"aten::flatten", "aten::view", "aten::reshape", "aten::squeeze",
                                                   "aten::unsqueeze"};
    if (depth > 16 || v->uses().size() != 1) return false;
    const Node *p = v->node();
    const std::string k = p->kind().toQualString();
    if (reshapes.count(k)) return p->inputs().size() > 0 && read_once_fresh(p->input(0), depth + 1);
    return fresh.count(k) > 0 && p->outputs().size() == 1;
}

// A LeakyReLU's negative slope, when it is a constant >= 0 (an in-place one
// saves its result, whose sign is its input's only then).
bool slope_not_negative(const Node *n) {
    if (n->inputs().size() != 2) return false;
    c10::optional<IValue> s = torch::jit::toIValue(n->input(1));
    return s && (s->isDouble() || s->isInt()) && s->toScalar().toDouble() >= 0;
}

// Whether n is a ReLU / ReLU6 whose result no consumer keeps (for an
// in-place one, whose input value nothing else reads either: it would see
// the result), or an out-of-place LeakyReLU whose input nothing else reads
// (it saves that input), or an in-place one as ReLU's.
bool keeps_mask(const Node *n) {
    const std::string k = n->kind().toQualString();
    if (n->outputs().size() != 1) return false;
    if (k == "aten::leaky_relu")
        return n->inputs().size() == 2 && read_once_fresh(n->input(0), 0);
    if (k == "aten::leaky_relu_" && !slope_not_negative(n)) return false;
    if (k == "aten::relu_" || k == "aten::hardtanh_" || k == "aten::leaky_relu_")
        return n->inputs().size() > 0 && n->input(0)->uses().size() == 1 && kept_by_no_consumer(n->output(), 0);
    return (k == "aten::relu" || k == "aten::relu6" || k == "aten::hardtanh") && kept_by_no_consumer(n->output(), 0);
}

} // namespace

bool run_act_inplace(const Node *n, Stack &st, bool mask) {
    static const std::map<std::string, ActKind> kinds = {{"aten::relu_", ACT_RELU},
                                                         {"aten::hardtanh_", ACT_HARDTANH},
                                                         {"aten::leaky_relu_", ACT_LEAKY},
                                                         {"aten::sigmoid_", ACT_SIGMOID},
                                                         {"aten::tanh_", ACT_TANH}};
    auto it = kinds.find(n->kind().toQualString());
    if (it == kinds.end() || st.empty() || !st[0].isTensor() || !at::GradMode::is_enabled()) return false;
    size_t nargs = it->second == ACT_HARDTANH ? 3 : it->second == ACT_LEAKY ? 2 : 1;
    if (st.size() != nargs) return false;
    for (size_t i = 1; i < nargs; i++)
        if (!st[i].isScalar()) return false;
    const at::Tensor &x = st[0].toTensor();
    if (!x.defined() || !x.requires_grad() || x.is_leaf() || x.is_view() || !x.is_floating_point() ||
        x.layout() != at::kStrided || x.is_mkldnn() || x.is_complex())
        return false;
    c10::Scalar a = nargs > 1 ? st[1].toScalar() : c10::Scalar(0), b = nargs > 2 ? st[2].toScalar() : c10::Scalar(0);
    if (it->second == ACT_LEAKY && !leaky_mask_exact(x)) mask = false;
    at::Tensor y = ActGradInPlace::apply(x, (int64_t)it->second, a, b, mask);
    st.clear();
    st.push_back(y);
    return true;
}

void find_act_masks(Model &M) {
    M.act_mask.clear();
    for (const Group &G : M.groups)
        for (const Node *n : G.prog)
            if (keeps_mask(n)) M.act_mask.insert(n);
}

bool run_act_mask(const Node *n, Stack &st) {
    // relu6 is hardtanh(x, 0, 6) (its composite implementation calls it)
    static const c10::Symbol relu = c10::Symbol::fromQualString("aten::relu"),
                             relu6 = c10::Symbol::fromQualString("aten::relu6"),
                             hardtanh = c10::Symbol::fromQualString("aten::hardtanh"),
                             leaky = c10::Symbol::fromQualString("aten::leaky_relu");
    const bool is_relu = n->kind() == relu, is_relu6 = n->kind() == relu6, is_leaky = n->kind() == leaky;
    if ((!is_relu && !is_relu6 && !is_leaky && n->kind() != hardtanh) || !at::GradMode::is_enabled()) return false;
    const size_t nargs = is_relu || is_relu6 ? 1u : is_leaky ? 2u : 3u;
    if (st.size() != nargs || !st[0].isTensor()) return false;
    for (size_t i = 1; i < nargs; i++)
        if (!st[i].isScalar()) return false;
    const at::Tensor &x = st[0].toTensor();
    int64_t kind = is_relu ? ACT_RELU : is_leaky ? ACT_LEAKY : ACT_HARDTANH;
    if (!x.defined() || !x.requires_grad() || !x.is_floating_point() || x.layout() != at::kStrided || x.is_mkldnn())
        return false;
    if (is_leaky && !leaky_mask_exact(x)) return false;
    c10::Scalar a = nargs > 1 ? st[1].toScalar() : c10::Scalar(0),
                b = nargs == 3 ? st[2].toScalar() : c10::Scalar(is_relu6 ? 6 : 0);
    at::Tensor y = ActMask::apply(x, kind, a, b);
    st.clear();
    st.push_back(y);
    return true;
}

bool is_act_inplace_fn(const torch::autograd::Node *fn) {
    return dynamic_cast<const torch::autograd::CppNode<ActGradInPlace> *>(fn) != nullptr;
}

} // namespace rkx
