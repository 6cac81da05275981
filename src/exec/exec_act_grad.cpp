// exec_act_grad.cpp — in-place activations whose backward writes the new
// gradient into the incoming one.  An in-place activation merged into its
// owner's group (`relu_`, `hardtanh_` = ReLU6, `leaky_relu_`, `sigmoid_`,
// `tanh_`) runs, in the executor, as a custom autograd function: the same
// forward kernel, the result saved (as ReluBackward0 saves it; `hardtanh_`'s
// HardtanhBackward0 saves a copy of its input, whose mask is the result's), and
// a backward that calls the out= form of the plain backward kernel with out =
// the incoming gradient when that gradient is donated (the group's root
// gradient, which nothing outside autograd holds: Runtime::backward_consuming
// checks the counts) and has the layout the plain kernel would give; the bytes
// then move to a new tensor that only the engine holds, so they go as soon as
// the next function consumed them.  Otherwise the plain kernel.  Same kernels,
// same values bit for bit.  docs/exec.md, "Activation gradients in place".
#include <torch/script.h>
#include <torch/csrc/autograd/custom_function.h>
#include <c10/core/StorageImpl.h>

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
bool may_write(const at::Tensor &dy, const at::Tensor &y) {
    GradDonation &d = grad_donation();
    if (!d.impl || dy.unsafeGetTensorImpl() != d.impl) return false;
    if (!dy.has_storage() || dy.is_sparse() || dy.layout() != at::kStrided || dy.is_mkldnn()) return false;
    if (!dy.is_non_overlapping_and_dense() || dy.storage_offset() != 0) return false;
    if (dy.sizes() != y.sizes() || dy.strides() != y.strides() || dy.scalar_type() != y.scalar_type() ||
        dy.device() != y.device())
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

struct ActGradInPlace : torch::autograd::Function<ActGradInPlace> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, at::Tensor x, int64_t kind, c10::Scalar a,
                              c10::Scalar b) {
        switch (kind) {
        case ACT_RELU: at::relu_(x); break;
        case ACT_HARDTANH: at::hardtanh_(x, a, b); break;
        case ACT_LEAKY: at::leaky_relu_(x, a); break;
        case ACT_SIGMOID: at::sigmoid_(x); break;
        default: at::tanh_(x); break;
        }
        ctx->mark_dirty({x});
        ctx->save_for_backward({x});
        ctx->saved_data["kind"] = kind;
        ctx->saved_data["a"] = a;
        ctx->saved_data["b"] = b;
        return x;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor y = ctx->get_saved_variables()[0];
        const at::Tensor &dy = go[0];
        int64_t kind = ctx->saved_data["kind"].toInt();
        c10::Scalar a = ctx->saved_data["a"].toScalar(), b = ctx->saved_data["b"].toScalar();
        at::Tensor dx;
        if (dy.defined() && may_write(dy, y)) {
            at::Tensor out = dy; // out= aliases the incoming gradient fully (TensorIterator allows it)
            switch (kind) {
            case ACT_RELU: at::threshold_backward_out(out, dy, y, 0); break;
            case ACT_HARDTANH: at::hardtanh_backward_out(out, dy, y, a, b); break;
            case ACT_LEAKY: at::leaky_relu_backward_out(out, dy, y, a, true); break;
            case ACT_SIGMOID: at::sigmoid_backward_out(out, dy, y); break;
            default: at::tanh_backward_out(out, dy, y); break;
            }
            dx = take_bytes(dy);
        } else if (dy.defined()) {
            switch (kind) {
            case ACT_RELU: dx = at::threshold_backward(dy, y, 0); break;
            case ACT_HARDTANH: dx = at::hardtanh_backward(dy, y, a, b); break;
            case ACT_LEAKY: dx = at::leaky_relu_backward(dy, y, a, true); break;
            case ACT_SIGMOID: dx = at::sigmoid_backward(dy, y); break;
            default: dx = at::tanh_backward(dy, y); break;
            }
        }
        return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

} // namespace

bool run_act_inplace(const Node *n, Stack &st) {
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
    at::Tensor y = ActGradInPlace::apply(x, (int64_t)it->second, a, b);
    st.clear();
    st.push_back(y);
    return true;
}

} // namespace rkx
