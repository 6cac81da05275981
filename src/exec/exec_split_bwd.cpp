// exec_split_bwd.cpp — a convolution's or Linear's backward in two parts
// (issue 21): which groups' backward can be split (one autograd function with
// parameter edges and input edges), the leaves each part restricts autograd
// to, and the tracer's checks that the parts give the one call's gradients bit
// for bit and that the input part reads its inputs' shapes only.  The weight
// part runs the group's backward with autograd restricted to the parameters
// (the function then asks its kernel for no input gradient), the input part
// restricted to the dependencies' leaves, so that the input x may be dropped
// between them.  docs/exec.md, "A backward in two parts".
#include <torch/script.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <c10/core/StorageImpl.h>

#include "exec_internal.h"

namespace rkx {

namespace {
using FnPtr = std::shared_ptr<torch::autograd::Node>;

// Functions whose backward is a reshape of the gradient (a view when it is
// contiguous): both parts run them, at no cost.
bool view_fn(const std::string &n) {
    return n == "ViewBackward0" || n == "UnsafeViewBackward0" || n == "ReshapeAliasBackward0";
}
// One call computing weight (and bias) and input gradients, each only when asked.
bool two_part_fn(const std::string &n) {
    return n == "ConvolutionBackward0" || n == "ConvolutionBackward1" || n == "AddmmBackward0" || n == "MmBackward0";
}

// The leaves (AccumulateGrad variables) reachable from fn.
void leaves_of(const FnPtr &fn, std::vector<at::Tensor> &out, std::set<const torch::autograd::Node *> &seen) {
    if (!fn || !seen.insert(fn.get()).second) return;
    if (auto *acc = dynamic_cast<torch::autograd::AccumulateGrad *>(fn.get())) {
        out.push_back(acc->variable);
        return;
    }
    for (const auto &e : fn->next_edges()) leaves_of(e.function, out, seen);
}
} // namespace

bool split_leaves(Model &M, Runtime &R, int g, std::vector<at::Tensor> &params, std::vector<at::Tensor> &ins,
                  std::string *why) {
    params.clear();
    ins.clear();
    auto no = [&](const std::string &w) {
        if (why) *why = w;
        params.clear();
        ins.clear();
        return false;
    };
    const Group &G = M.groups[g];
    const GState &S = R.gs[g];
    if (!G.has_grad || S.p.size() != 1 || !S.p[0].proxy.defined() || !S.p[0].proxy.grad_fn())
        return no("it has no single output with an autograd graph");
    FnPtr fn = S.p[0].proxy.grad_fn();
    while (fn && view_fn(fn->name()) && fn->next_edges().size() == 1) fn = fn->next_edges()[0].function;
    // An in-place activation merged into the group (VGG's and SqueezeNet's
    // convolution + relu_): its backward, element-wise from the saved result
    // or mask, runs in both parts before the convolution's part — a ReLU's in
    // the first into the kept incoming gradient (GradDonation.keep), in the
    // second again, changing nothing; another activation's in the first into
    // a new tensor.
    if (fn && is_act_inplace_fn(fn.get()) && fn->next_edges().size() == 1 && fn->next_edges()[0].function)
        fn = fn->next_edges()[0].function;
    if (!fn || !two_part_fn(fn->name()))
        return no("its autograd graph is not one convolution or matrix product (" +
                  (fn ? fn->name() : std::string("none")) + ")");
    // The dependencies' leaves: what the input part gives a gradient to.
    std::set<const c10::TensorImpl *> dep;
    for (const std::set<int> *ds : {&G.deps_real, &G.deps_shape})
        for (int d : *ds)
            for (const Part &P : R.gs[d].p)
                if (P.leaf.defined() && P.leaf.requires_grad()) dep.insert(P.leaf.unsafeGetTensorImpl());
    auto da = R.dup_alias.find(g); // a dependency read twice: its alias too
    if (da != R.dup_alias.end())
        for (auto &la : da->second) dep.insert(la.second.unsafeGetTensorImpl());
    for (int k : G.vsums_read) { // a view sum's leaf (exec_grad_order.cpp)
        auto vp = R.vsum_part.find(k);
        if (vp != R.vsum_part.end() && vp->second.leaf.defined()) dep.insert(vp->second.leaf.unsafeGetTensorImpl());
    }
    std::set<const c10::TensorImpl *> have;
    for (const auto &e : fn->next_edges()) {
        if (!e.function) continue;
        std::vector<at::Tensor> ls;
        std::set<const torch::autograd::Node *> seen;
        leaves_of(e.function, ls, seen);
        int n_dep = 0;
        for (auto &l : ls) n_dep += dep.count(l.unsafeGetTensorImpl()) ? 1 : 0;
        if (n_dep > 0 && n_dep < (int)ls.size())
            return no("an edge of its " + fn->name() + " leads to parameters and inputs at once");
        if (n_dep > 0) {
            // The input part may drop x only if its kernel never touches x's
            // bytes.  A kernel given a strided view (a channel slice from
            // chunk/split, a transpose) copies it to a contiguous tensor first,
            // reading the data (no value of the gradient depends on it, so the
            // poison check cannot see it, and an emptied storage would be read):
            // x must be a leaf itself, or a reshape of one, and dense.
            FnPtr f = e.function;
            while (f && view_fn(f->name()) && f->next_edges().size() == 1) f = f->next_edges()[0].function;
            auto *acc = f ? dynamic_cast<torch::autograd::AccumulateGrad *>(f.get()) : nullptr;
            if (!acc)
                return no("its input is a strided view (" + (f ? f->name() : std::string("none")) +
                          "): its kernel copies it, reading its data");
            const at::Tensor &v = acc->variable;
            if (!v.is_contiguous() && !v.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                !v.is_contiguous(at::MemoryFormat::ChannelsLast3d))
                return no("its input is not dense: its kernel copies it, reading its data");
        }
        for (auto &l : ls)
            if (have.insert(l.unsafeGetTensorImpl()).second) (n_dep > 0 ? ins : params).push_back(l);
    }
    if (params.empty() || ins.empty())
        return no(params.empty() ? "it gives no parameter a gradient" : "it gives no input a gradient");
    return true;
}

namespace {
// The leaves' gradients after a backward restricted to `inputs` (from none).
std::vector<at::Tensor> grads_after(const std::vector<at::Tensor> &roots, const std::vector<at::Tensor> &grads,
                                    const std::vector<at::Tensor> &inputs, const std::vector<at::Tensor> &leaves) {
    for (auto l : leaves) l.mutable_grad() = at::Tensor();
    torch::autograd::backward(roots, grads, /*retain_graph=*/true, /*create_graph=*/false, inputs);
    std::vector<at::Tensor> r;
    for (auto l : leaves) {
        r.push_back(l.grad().defined() ? l.grad().clone() : at::Tensor());
        l.mutable_grad() = at::Tensor();
    }
    return r;
}

bool same(const at::Tensor &a, const at::Tensor &b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return a.sizes() == b.sizes() && a.strides() == b.strides() && a.scalar_type() == b.scalar_type() &&
           at::equal(a, b);
}
} // namespace

bool split_parts_equal(const std::vector<at::Tensor> &roots, const std::vector<at::Tensor> &grads,
                       const std::vector<at::Tensor> &params, const std::vector<at::Tensor> &ins) {
    std::vector<at::Tensor> all = params;
    all.insert(all.end(), ins.begin(), ins.end());
    std::vector<at::Tensor> whole = grads_after(roots, grads, all, all);
    std::vector<at::Tensor> w = grads_after(roots, grads, params, all);
    std::vector<at::Tensor> x = grads_after(roots, grads, ins, all);
    for (size_t i = 0; i < all.size(); i++) {
        const at::Tensor &part = i < params.size() ? w[i] : x[i];
        const at::Tensor &other = i < params.size() ? x[i] : w[i];
        if (!same(whole[i], part) || other.defined()) return false;
    }
    return true;
}

bool input_part_reads(Model &M, Runtime &R, int g, const std::vector<at::Tensor> &roots,
                      const std::vector<at::Tensor> &grads, const std::vector<at::Tensor> &ins) {
    const Group &G = M.groups[g];
    std::vector<c10::StorageImpl *> sis;
    for (const std::set<int> *ds : {&G.deps_real, &G.deps_shape})
        for (int d : *ds)
            for (Part &P : R.gs[d].p) {
                if (!P.leaf.defined() || !P.canon) continue;
                if (!P.leaf.is_floating_point()) return true; // indices: not poisoned, counted as read
                sis.push_back(P.canon.unsafeGetStorageImpl());
            }
    std::vector<at::Tensor> ref = grads_after(roots, grads, ins, ins);
    // Run the input part with the dependencies' bytes replaced (by NaN bytes,
    // or by nothing: an empty storage, as forget_data leaves it).
    auto differs = [&](bool empty) {
        struct Saved {
            c10::StorageImpl *si;
            c10::DataPtr dp;
            size_t nb;
        };
        std::vector<Saved> saved;
        std::vector<at::Tensor> bufs;
        for (c10::StorageImpl *si : sis) {
            size_t nb = si->nbytes();
            if (empty) {
                saved.push_back(Saved{si, si->set_data_ptr(c10::DataPtr(nullptr, si->device())), nb});
                si->set_nbytes(0);
            } else {
                at::Tensor buf = at::empty({(int64_t)nb}, at::TensorOptions().dtype(at::kByte).device(si->device()))
                                     .fill_(255);
                bufs.push_back(buf);
                saved.push_back(Saved{si, si->set_data_ptr(c10::DataPtr(buf.data_ptr(), si->device())), nb});
            }
        }
        bool diff = false;
        try {
            std::vector<at::Tensor> got = grads_after(roots, grads, ins, ins);
            for (size_t i = 0; i < ref.size() && !diff; i++) diff = !same(ref[i], got[i]);
        } catch (const c10::Error &) {
            diff = true; // it failed without them: it reads them
        }
        for (auto &p : saved) {
            p.si->set_data_ptr(std::move(p.dp));
            p.si->set_nbytes(p.nb);
        }
        return diff;
    };
    return differs(false) || differs(true);
}

} // namespace rkx
