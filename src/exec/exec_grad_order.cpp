// exec_grad_order.cpp — the order in which a leaf's gradient contributions
// add up, where one op's backward gives the leaf several of them.
//
// The plain step sums every gradient reaching a tensor in one input buffer of
// its producer's backward, in the order they arrive: G (what the backwards run
// so far gave), then each contribution, one by one, into G in place.  The
// executor reads the tensor as a leaf whose .grad holds G, and runs one
// node's backward at a time.  When that node is an op whose own autograd
// graph reads the input more than once — `nn.RMSNorm` (`aten::rms_norm`:
// `x.pow(2)` and `x * ...`), `F.cosine_similarity`, `F.triplet_margin_loss` —
// those reads' gradients g1, g2 meet in the leaf accumulator's input buffer
// first, which then adds their sum to G: G + (g1 + g2), where the plain step
// has (G + g1) + g2.  Floating-point addition is not associative: a
// Llama-style residual stream read by an RMSNorm and an add got gradients
// off in the last bits.  Parameters alike (`F.cosine_similarity(h,
// prototypes)` beside another reader of the prototypes): what the other
// nodes gave is the plain step's accumulator buffer so far.
//
// So the backward of such a node gets one more root: a function of the
// executor's (SeedGrad) whose only edge is the leaf's accumulator, holding G
// (taken from .grad, which stays empty meanwhile).  It is the newest function,
// so the engine runs it first; it hands G over and lets go of it, so G is the
// accumulator's buffer alone, each read's gradient is added into it in place
// as in the plain step (no gradient more is held), and the accumulator takes
// the sum as .grad.  A leaf read once by the op, or without a gradient yet,
// stays as it was: two terms add the same in any order.  The tracer measures
// each backward so (exec_measure.cpp).
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include "exec_internal.h"

namespace rkx {

// Whether f is one of the executor's functions that hand their input no
// gradient (they keep it apart or write it into .grad themselves:
// SelectIntoGrad, exec_runtime.cpp; DepositGrad, exec_pieces.cpp).
static bool hands_no_gradient(const torch::autograd::Node *f) {
    const std::string n = f->name();
    return n.find("SelectIntoGrad") != std::string::npos || n.find("DepositGrad") != std::string::npos;
}

// The number of edges from roots' autograd graph into each leaf accumulator
// (the accumulators themselves have no edges further) that carry a gradient.
static std::unordered_map<torch::autograd::Node *, int> edges_into_leaves(const std::vector<at::Tensor> &roots) {
    std::unordered_map<torch::autograd::Node *, int> n;
    std::unordered_set<torch::autograd::Node *> seen;
    std::vector<torch::autograd::Node *> todo;
    for (const at::Tensor &r : roots)
        if (r.grad_fn() && seen.insert(r.grad_fn().get()).second) todo.push_back(r.grad_fn().get());
    while (!todo.empty()) {
        torch::autograd::Node *f = todo.back();
        todo.pop_back();
        if (hands_no_gradient(f)) continue;
        for (const torch::autograd::Edge &e : f->next_edges()) {
            torch::autograd::Node *to = e.function.get();
            if (!to) continue;
            if (dynamic_cast<torch::autograd::AccumulateGrad *>(to)) n[to]++;
            else if (seen.insert(to).second) todo.push_back(to);
        }
    }
    return n;
}

namespace {
// A root of a backward call that hands one leaf's accumulator its gradient so
// far, once, keeping no reference to it.
struct SeedGrad : torch::autograd::Node {
    at::Tensor g;
    std::string name() const override { return "rkx::SeedGrad"; }
    torch::autograd::variable_list apply(torch::autograd::variable_list &&) override {
        torch::autograd::variable_list out;
        out.push_back(std::move(g));
        g = at::Tensor();
        return out;
    }
};
} // namespace

size_t Runtime::seed_leaf_grads(std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads,
                                const std::vector<at::Tensor> &inputs) {
    if (roots.empty()) return 0;
    std::vector<at::Tensor> seeds;
    for (const auto &kv : edges_into_leaves(roots)) {
        if (kv.second < 2) continue;
        at::Tensor leaf = static_cast<torch::autograd::AccumulateGrad *>(kv.first)->variable;
        if (!leaf.defined() || !leaf.grad().defined()) continue;
        if (!inputs.empty()) {
            bool among = false;
            for (const at::Tensor &i : inputs) among = among || i.is_same(leaf);
            if (!among) continue;
        }
        seeds.push_back(leaf);
    }
    for (at::Tensor &leaf : seeds) {
        auto fn = std::make_shared<SeedGrad>();
        // A parameter's gradient so far is not .grad from now on (the measured
        // peak counts it until the sum is .grad again).
        if (ActivationPeak::current) ActivationPeak::current->grad_taken(leaf);
        fn->g = leaf.grad();
        leaf.mutable_grad() = at::Tensor();
        fn->add_next_edge(torch::autograd::impl::gradient_edge(leaf));
        at::Tensor root = at::empty({0}, leaf.options().requires_grad(false));
        uint32_t nr = fn->add_input_metadata(root);
        torch::autograd::impl::set_gradient_edge(root, {std::move(fn), nr});
        roots.push_back(root);
        grads.push_back(at::empty({0}, root.options()));
    }
    return seeds.size();
}

} // namespace rkx
