// exec_pool_grad.cpp — 2-d pooling whose backward keeps no copy of its input.
// PyTorch's MaxPool2DWithIndicesBackward0 and AvgPool2DBackward0 save the
// pooling's input, yet their backward kernels read only its sizes and memory
// format: the gradient is scattered through the saved indices (max) or spread
// evenly (average).  Holding that input makes it live until the pooling's
// backward, so a schedule cannot drop it there (vgg11's floor: the first
// max-pool's 9 MiB input beside its gradients).  In the executor `max_pool2d`
// and `avg_pool2d` on a tensor requiring grad run as a custom autograd
// function: the same forward kernel (`max_pool2d_with_indices`, which
// `max_pool2d` itself calls when grad is required; `avg_pool2d`), the indices
// saved, and of the input only its sizes, dtype, device and suggested memory
// format.  The backward allocates the input gradient as the plain kernel's
// meta function would (those sizes, that memory format) and calls the same
// structured backward kernel's out= form with that tensor as both `self` and
// the output: the meta function takes sizes and memory format from `self`,
// the CPU and CUDA kernels zero the output (max) or write every element (avg)
// and never read `self`'s data.  Same kernels, same values bit for bit; the
// tracer's poison check (exec_measure.cpp) confirms that the input is not read.
// docs/exec.md, "Pooling without its input".
#include <torch/script.h>
#include <torch/csrc/autograd/custom_function.h>

#include "exec_internal.h"

namespace rkx {

namespace {

std::vector<int64_t> int_list(const IValue &v) { return v.toIntVector(); }

// The input gradient's tensor, allocated as the structured kernel's meta
// function allocates it from the saved input.
at::Tensor input_grad_like(torch::autograd::AutogradContext *ctx) {
    std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    auto fmt = (at::MemoryFormat)ctx->saved_data["format"].toInt();
    at::TensorOptions o = at::TensorOptions()
                              .dtype((at::ScalarType)ctx->saved_data["dtype"].toInt())
                              .device(ctx->saved_data["device"].toDevice());
    return at::empty(sizes, o.memory_format(fmt));
}

void save_input_shape(torch::autograd::AutogradContext *ctx, const at::Tensor &x) {
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["format"] = (int64_t)x.suggest_memory_format();
    ctx->saved_data["dtype"] = (int64_t)x.scalar_type();
    ctx->saved_data["device"] = x.device();
}

struct MaxPool2dNoInput : torch::autograd::Function<MaxPool2dNoInput> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, at::Tensor x, std::vector<int64_t> k,
                              std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d, bool ceil) {
        auto [y, ind] = at::max_pool2d_with_indices(x, k, s, p, d, ceil);
        save_input_shape(ctx, x);
        ctx->save_for_backward({ind});
        ctx->saved_data["k"] = k;
        ctx->saved_data["s"] = s;
        ctx->saved_data["p"] = p;
        ctx->saved_data["d"] = d;
        ctx->saved_data["ceil"] = ceil;
        return y;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor ind = ctx->get_saved_variables()[0];
        at::Tensor dx;
        if (go[0].defined()) {
            dx = input_grad_like(ctx);
            at::max_pool2d_with_indices_backward_out(
                dx, go[0], dx, ctx->saved_data["k"].toIntVector(), ctx->saved_data["s"].toIntVector(),
                ctx->saved_data["p"].toIntVector(), ctx->saved_data["d"].toIntVector(),
                ctx->saved_data["ceil"].toBool(), ind);
        }
        return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct AvgPool2dNoInput : torch::autograd::Function<AvgPool2dNoInput> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, at::Tensor x, std::vector<int64_t> k,
                              std::vector<int64_t> s, std::vector<int64_t> p, bool ceil, bool count_pad,
                              c10::optional<int64_t> divisor) {
        at::Tensor y = at::avg_pool2d(x, k, s, p, ceil, count_pad, divisor);
        save_input_shape(ctx, x);
        ctx->saved_data["k"] = k;
        ctx->saved_data["s"] = s;
        ctx->saved_data["p"] = p;
        ctx->saved_data["ceil"] = ceil;
        ctx->saved_data["count_pad"] = count_pad;
        ctx->saved_data["divisor"] = divisor ? IValue(*divisor) : IValue();
        return y;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list go) {
        at::Tensor dx;
        if (go[0].defined()) {
            dx = input_grad_like(ctx);
            const IValue &dv = ctx->saved_data["divisor"];
            c10::optional<int64_t> divisor = dv.isNone() ? c10::nullopt : c10::optional<int64_t>(dv.toInt());
            at::avg_pool2d_backward_out(dx, go[0], dx, ctx->saved_data["k"].toIntVector(),
                                        ctx->saved_data["s"].toIntVector(), ctx->saved_data["p"].toIntVector(),
                                        ctx->saved_data["ceil"].toBool(), ctx->saved_data["count_pad"].toBool(),
                                        divisor);
        }
        return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

} // namespace

bool run_pool_no_input(const Node *n, Stack &st) {
    static const c10::Symbol max_pool = c10::Symbol::fromQualString("aten::max_pool2d"),
                             avg_pool = c10::Symbol::fromQualString("aten::avg_pool2d");
    const bool is_max = n->kind() == max_pool, is_avg = n->kind() == avg_pool;
    if ((!is_max && !is_avg) || !at::GradMode::is_enabled()) return false;
    if (st.size() != (is_max ? 6u : 7u) || !st[0].isTensor()) return false;
    const size_t first_bool = is_max ? 5 : 4; // int lists before it, bools from it to 6
    for (size_t i = 1; i < 6; i++)
        if (i < first_bool ? !st[i].isIntList() : !st[i].isBool()) return false;
    if (is_avg && !st[6].isNone() && !st[6].isInt()) return false;
    const at::Tensor &x = st[0].toTensor();
    if (!x.defined() || !x.requires_grad() || !x.is_floating_point() || x.layout() != at::kStrided ||
        x.is_mkldnn() || x.is_quantized() || x.is_complex() || (x.dim() != 3 && x.dim() != 4))
        return false;
    at::Tensor y;
    if (is_max)
        y = MaxPool2dNoInput::apply(x, int_list(st[1]), int_list(st[2]), int_list(st[3]), int_list(st[4]),
                                    st[5].toBool());
    else
        y = AvgPool2dNoInput::apply(x, int_list(st[1]), int_list(st[2]), int_list(st[3]), st[4].toBool(),
                                    st[5].toBool(),
                                    st[6].isNone() ? c10::nullopt : c10::optional<int64_t>(st[6].toInt()));
    st.clear();
    st.push_back(y);
    return true;
}

} // namespace rkx
