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
//
// View sums.  A view of a node's whole data read by several nodes — a
// bidirectional GRU's two input projections read one `transpose(0, 1)` of
// its input (exec_rnn.cpp) — has one backward function in the plain step,
// whose buffer sums the readers' gradients before it hands them to the data's
// producer: G + T(g_rev + g_fw), where the executor added each to the data's
// leaf, (G + T(g_rev)) + T(g_fw), when other nodes read the data too (a
// BiGRU tagger concatenating the embedding to the GRU's output: the
// embedding's gradient off in the last bits).  Now (find_view_sums) such a
// view's readers but the last (the first in the forward, whose backward runs
// last) read a leaf on the view's bytes (Runtime::vsum_leaf), where their
// gradients add up as in that buffer (kept in the layout they come in, as
// the buffer keeps them); the last reader reads the view itself, and its
// backward gets one more root, handing the view's backward function the sum
// so far first (seed_view_sums): the buffer adds the last reader's gradient
// into it and the view's backward hands the whole on, as in the plain step.
// The chain gives the view's gradient a D-node of its own (g<j>_<op>_v<k>,
// exec_cdgraph.cpp): made by the readers' backwards, used by the last one's,
// which makes the data's gradient.
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include "exec_internal.h"

namespace rkx {

// Whether f is one of the executor's functions that hand their input no
// gradient (they keep it apart or write it into .grad themselves:
// SelectIntoGrad, exec_runtime.cpp; DepositGrad, exec_pieces.cpp).
bool hands_no_gradient(const torch::autograd::Node *f) {
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

// Appends to roots / grads a root whose backward is a SeedGrad handing g to edge.
void push_seed_root(std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads, at::Tensor g,
                    torch::autograd::Edge edge, const at::TensorOptions &options) {
    auto fn = std::make_shared<SeedGrad>();
    fn->g = std::move(g);
    fn->add_next_edge(std::move(edge));
    at::Tensor root = at::empty({0}, options.requires_grad(false));
    uint32_t nr = fn->add_input_metadata(root);
    torch::autograd::impl::set_gradient_edge(root, {std::move(fn), nr});
    roots.push_back(root);
    grads.push_back(at::empty({0}, root.options()));
}
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
        // A parameter's gradient so far is not .grad from now on (the measured
        // peak counts it until the sum is .grad again).
        if (ActivationPeak::current) ActivationPeak::current->grad_taken(leaf);
        at::Tensor g = leaf.grad();
        leaf.mutable_grad() = at::Tensor();
        push_seed_root(roots, grads, std::move(g), torch::autograd::impl::gradient_edge(leaf), leaf.options());
    }
    return seeds.size();
}

// ---------------------------------------------------------------- view sums

namespace {

// The values through which group c's program reads group d's data (its
// Data value, views of it), and whether through a list or tuple (Cheap).
void reads_of(Model &M, const Value *u, int d, std::set<const Value *> &via, std::set<const Value *> &in_list,
              bool listed) {
    u = resolve_alias(M, u);
    const VInfo &I = M.vi.at(u);
    if (I.kind == VK::Cheap) {
        for (const Value *x : I.def->inputs()) reads_of(M, x, d, via, in_list, true);
        return;
    }
    if ((I.kind == VK::Data || I.kind == VK::View) && I.owner == d) {
        via.insert(u);
        if (listed) in_list.insert(u);
    }
}

// A view op that shows each element of its input once.
bool whole_view_op(const Node *n) {
    static const std::set<std::string> ops = {"aten::transpose", "aten::permute", "aten::t", "aten::view",
                                              "aten::reshape", "aten::flatten", "aten::unsqueeze", "aten::squeeze",
                                              "aten::movedim", "aten::swapaxes", "aten::view_as", "aten::reshape_as",
                                              "aten::unflatten", "aten::numpy_T"};
    return ops.count(n->kind().toQualString()) > 0;
}

// A view op whose backward sums its gradient over the dims it broadcasts
// (an expand: a static context expanded over time, read by several nodes).
// Its readers' gradients must meet in its backward's buffer before that sum,
// even when nothing else reads the data: sum(g1) + sum(g2) is not sum(g1 +
// g2) in floating point (pytorch-forecasting's TFT: gradients off by 9e-5).
bool reducing_view_op(const Node *n) {
    static const std::set<std::string> ops = {"aten::expand", "aten::expand_as", "aten::broadcast_to"};
    return ops.count(n->kind().toQualString()) > 0;
}
} // namespace

// What view p (of group d's data) is made from: its source input, or where
// that is a list (`broadcast_tensors([y, t])`), the list's one item that is
// d's data or a view of it (null if none or several).
const Value *view_source(Model &M, const Value *p, int d) {
    const VInfo &P = M.vi.at(resolve_alias(M, p));
    if (!P.def || P.src < 0) return nullptr;
    const Value *q = resolve_alias(M, P.def->input(P.src));
    const VInfo &Q = M.vi.at(q);
    if (Q.kind != VK::Cheap || !Q.def ||
        (Q.def->kind() != prim::ListConstruct && Q.def->kind() != prim::TupleConstruct))
        return q;
    const Value *item = nullptr;
    for (const Value *u : Q.def->inputs()) {
        u = resolve_alias(M, u);
        const VInfo &U = M.vi.at(u);
        if ((U.kind == VK::Data || U.kind == VK::View) && U.owner == d) {
            if (item) return nullptr;
            item = u;
        }
    }
    return item;
}

namespace {
// A view op showing part of its input (a slice): several readers' gradients
// meet in its backward's buffer before it pads them to the data's shape
// (TFT's queries `attn_input[:, enc_len:]`, read by one Linear per head,
// beside the keys and values read whole: gradients off by 3e-8).  (Not a
// `select`: a select of the data is SelectIntoGrad's, exec_runtime.cpp.)
bool part_view_op(const Node *n) {
    static const std::set<std::string> ops = {"aten::slice", "aten::narrow"};
    return ops.count(n->kind().toQualString()) > 0;
}

// The reducing view of group d's data that w is made from (w itself, or a
// view of it: the slices of an expanded context), or null.
const Value *reducing_view_below(Model &M, const Value *w, int d) {
    for (const Value *p = resolve_alias(M, w); p;) {
        const VInfo &P = M.vi.at(p);
        if (P.kind != VK::View || P.owner != d || !P.def || P.src < 0) return nullptr;
        if (reducing_view_op(P.def) && P.rg) return p;
        p = view_source(M, p, d);
    }
    return nullptr;
}

// The view of group d's data that w is made from, applied to the data itself
// (w, or what w's chain of views starts from: the transpose that an item of
// `broadcast_tensors([y, t])` is made from), or null.
const Value *first_view_below(Model &M, const Value *w, int d) {
    for (const Value *p = resolve_alias(M, w); p;) {
        const VInfo &P = M.vi.at(p);
        if (P.kind != VK::View || P.owner != d || !P.def || P.src < 0) return nullptr;
        const Value *q = view_source(M, p, d);
        if (!q) return nullptr;
        const VInfo &Q = M.vi.at(q);
        if (Q.kind == VK::Data) return Q.owner == d ? p : nullptr;
        p = q;
    }
    return nullptr;
}

} // namespace

void find_view_sums(Model &M) {
    // Views that other views are made from: their readers' gradients do not all meet at their backward.
    std::set<const Value *> sources;
    for (const auto &kv : M.vi)
        if (kv.second.kind == VK::View && kv.second.def && kv.second.src >= 0 && !kv.second.alias)
            sources.insert(resolve_alias(M, kv.second.def->input(kv.second.src)));
    for (int d : M.order) {
        Group &D = M.groups[d];
        if (!D.has_grad || D.input_index >= 0 || D.outs.size() != 1 || !D.pieces.empty() || D.stack_reader >= 0 ||
            D.block < 0)
            continue;
        // (a block's output is the next block's input: its readers are there)
        const int rblock = M.order[M.block_end[D.block] - 1] == d ? D.block + 1 : D.block;
        std::map<int, std::set<const Value *>> via; // consumer -> what it reads d through
        std::set<const Value *> in_list;
        for (int c : D.consumers) {
            const Group &C = M.groups[c];
            if (!C.has_grad || !C.deps_grad.count(d)) continue;
            std::set<const Value *> local;
            for (Node *n : C.prog) {
                for (const Value *u : n->inputs())
                    if (!local.count(u)) reads_of(M, u, d, via[c], in_list, false);
                for (const Value *o : n->outputs()) local.insert(o);
            }
        }
        // Each read's view whose backward the readers' gradients meet in: a
        // reducing view it is made from; else the whole view of the data its
        // chain starts from, when nothing but this reader reads the views
        // made from that one (a view read by two readers sums their gradients
        // first); else the read's own view, a whole view nothing is made from.
        std::map<const Value *, int> n_readers;
        for (auto &cv : via)
            for (const Value *w : cv.second) n_readers[w]++;
        std::set<const Value *> shared_below; // first views some of whose derived views several read
        for (auto &kv : n_readers) {
            const Value *b = first_view_below(M, kv.first, d);
            if (b && b != kv.first && kv.second > 1) shared_below.insert(b);
        }
        auto meets_at = [&](const Value *w) -> const Value * {
            const VInfo &W = M.vi.at(w);
            if (W.kind != VK::View || !W.rg || !W.def) return nullptr;
            if (const Value *r = reducing_view_below(M, w, d)) return r;
            const Value *b = first_view_below(M, w, d);
            if (b && b != w && n_readers[w] == 1 && !shared_below.count(b) && M.vi.at(b).rg &&
                whole_view_op(M.vi.at(b).def))
                return b;
            if (!whole_view_op(W.def)) // (a slice read by several: their sum meets in its backward too)
                return part_view_op(W.def) && !sources.count(w) ? w : nullptr;
            // (a first view whose derived views are read by one reader each: theirs meet here too)
            if (b == w && !shared_below.count(w)) return w;
            return sources.count(w) ? nullptr : w;
        };
        std::map<const Value *, const Value *> meet; // each read's meets_at (null: none, or through a list)
        std::map<int, std::vector<int>> readers_by_node; // (by the view's node index: graph order)
        std::map<int, const Value *> view_at;
        for (auto &cv : via)
            for (const Value *x : cv.second) {
                const Value *w = meet[x] = in_list.count(x) ? nullptr : meets_at(x);
                if (!w) continue;
                int at = M.node_index.at(M.vi.at(w).def);
                auto &rs = readers_by_node[at];
                if (std::find(rs.begin(), rs.end(), cv.first) == rs.end()) rs.push_back(cv.first);
                view_at[at] = w;
            }
        // Where the plain step adds each read's gradient to the data's: at
        // the backward of the view applied to the data (made at that view's
        // node), or of the node reading the data itself.
        auto read_at = [&](int c, const Value *x) -> int {
            if (M.vi.at(x).kind == VK::View) {
                const Value *b = first_view_below(M, x, d);
                const Node *def = M.vi.at(b ? b : x).def;
                return def ? M.node_index.at(def) : -1;
            }
            return M.groups[c].main ? M.node_index.at(M.groups[c].main) : -1;
        };
        for (auto &rn : readers_by_node) {
            const Value *w = view_at.at(rn.first);
            std::vector<int> rs = rn.second;
            std::sort(rs.begin(), rs.end(), [&](int a, int b) { return M.groups[a].pos < M.groups[b].pos; });
            // The carrier: the plain step runs the view's backward after those
            // of every node reading the data made after the view (the engine
            // runs functions newest first); the executor runs backwards in
            // reverse topological order, so the first of those nodes carries it
            // (the TFT's queries, a slice made before the values' Linear
            // reads the data: the slice's gradient joined before the values').
            const int at_w = read_at(rs.front(), w);
            const bool reducing = reducing_view_op(M.vi.at(w).def), part = part_view_op(M.vi.at(w).def);
            int carrier = rs.front(), terms = 0;
            std::set<const Value *> met;
            for (auto &cv : via)
                for (const Value *x : cv.second) {
                    const Value *m = meet.at(x);
                    terms += m ? (int)met.insert(m).second : 1;
                    if (m == w) continue;
                    const Group &C = M.groups[cv.first];
                    if (read_at(cv.first, x) > at_w && C.pos < M.groups[carrier].pos && C.block == rblock)
                        carrier = cv.first;
                }
            // A slice's or an expand's backward makes a new tensor, the data's
            // gradient or the sum: the plain step makes it after the backward
            // of every node made after the view, reader of the data or not (a
            // residual `x[:, -T:]` taken where a gate's Linear and GLU are
            // made: the executor made a padded gradient of x with the add's
            // backward, held through the gate's backwards).
            if (part || reducing)
                for (int i = M.block_begin[rblock]; i < M.block_end[rblock]; i++) {
                    const Group &C = M.groups[M.order[i]];
                    if (C.pos >= M.groups[carrier].pos) break;
                    if (C.has_grad && C.main && M.node_index.at(C.main) > at_w) {
                        carrier = M.order[i];
                        break;
                    }
                }
            // (one reader: only when its gradient joins in another place, and
            // for a view that makes no tensor, three terms or more: two add
            // the same in either order)
            if (rs.size() < 2 && (carrier == rs.front() || (terms < 3 && !part && !reducing))) continue;
            const int64_t wbytes = bytes_of(M, w, d);
            bool ok = reducing || part ? wbytes > 0 : wbytes == D.grad_bytes;
            for (int c : rs) ok = ok && M.groups[c].block == rblock;
            if (!ok) continue;
            ViewSum S;
            S.v = w;
            S.owner = d;
            S.readers = rs;
            S.bytes = reducing || part ? wbytes : D.grad_bytes; // (its backward's buffer: the expanded gradient, the slice's)
            bool others = false; // does the data's gradient get anything else?
            for (auto &cv : via) {
                bool reader = std::find(rs.begin(), rs.end(), cv.first) != rs.end();
                size_t through_w = 0;
                for (const Value *x : cv.second) through_w += meet.at(x) == w;
                bool other = cv.second.size() > (reader ? through_w : 0u);
                if (reader && other) S.reads_other.insert(cv.first);
                others = others || other;
            }
            // (the sum is all the gradient: the same in any order, but where a
            // slice's padded gradient is made)
            if (!others && !reducing && !(part && carrier != rs.front())) continue;
            S.carrier = carrier;
            int k = (int)M.view_sums.size();
            M.view_sum_of[w] = k;
            D.vsums_owned.push_back(k);
            for (int c : rs) M.groups[c].vsums_read.push_back(k);
            if (carrier != rs.front()) M.groups[carrier].vsums_carried.push_back(k);
            M.view_sums.push_back(std::move(S));
        }
    }
}

at::Tensor Runtime::vsum_leaf(int k) {
    Part &P = vsum_part[k];
    if (!P.leaf.defined()) {
        at::Tensor v = materialize(M.view_sums[k].v).toTensor();
        P.leaf = v.detach().requires_grad_(true);
        P.canon = P.leaf.storage();
        hook_leaf(P, nullptr);
    }
    return P.leaf;
}

size_t Runtime::seed_view_sums(int g, std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads, bool traced,
                               int64_t *traced_bytes) {
    size_t n = 0;
    std::vector<int> ks = M.groups[g].vsums_read;
    ks.insert(ks.end(), M.groups[g].vsums_carried.begin(), M.groups[g].vsums_carried.end());
    for (int k : ks) {
        const ViewSum &S = M.view_sums[k];
        if (S.carrier != g) continue;
        at::Tensor sum;
        auto it = vsum_part.find(k);
        if (traced) { // the other readers' sum, as zeros (the tracer measures one backward)
            at::Tensor v = materialize(S.v).toTensor();
            sum = at::zeros(v.sizes(), v.options().requires_grad(false));
            if (traced_bytes) *traced_bytes += sum.numel() * (int64_t)sum.element_size();
        } else if (it != vsum_part.end() && it->second.leaf.defined() && it->second.leaf.grad().defined()) {
            sum = it->second.leaf.grad();
            it->second.leaf.mutable_grad() = at::Tensor();
        }
        if (!sum.defined()) continue;
        at::Tensor v = materialize(S.v).toTensor();
        if (!v.grad_fn()) continue; // (no gradient flows through it this step)
        push_seed_root(roots, grads, std::move(sum), torch::autograd::Edge(v.grad_fn(), v.output_nr()), v.options());
        n++;
    }
    return n;
}

void Runtime::add_carried_leaves(int g, std::vector<at::Tensor> &inputs) {
    for (int k : M.groups[g].vsums_carried)
        for (const Part &P : gs[M.view_sums[k].owner].p) {
            if (!P.leaf.defined() || !P.leaf.requires_grad()) continue;
            bool among = false;
            for (const at::Tensor &i : inputs) among = among || i.is_same(P.leaf);
            if (!among) inputs.push_back(P.leaf);
        }
}

void Runtime::forget_vsum_grad(int k) {
    auto it = vsum_part.find(k);
    if (it == vsum_part.end()) return;
    it->second.held_grad = at::Tensor();
    if (it->second.leaf.defined()) it->second.leaf.mutable_grad() = at::Tensor();
}

// ---------------------------------------------------------------- static sums in the chain

std::vector<BlockStaticSum> block_static_sums(Model &M, int b) {
    std::vector<BlockStaticSum> r;
    std::map<const Value *, size_t> at;
    for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
        const int g = M.order[i];
        if (!M.groups[g].has_grad) continue;
        for (const Value *v : M.groups[g].sums_read) {
            auto it = at.find(v);
            if (it == at.end()) {
                it = at.emplace(v, r.size()).first;
                BlockStaticSum S;
                S.v = v;
                const at::Tensor &t = M.vi.at(v).sval.toTensor();
                S.bytes = t.numel() * (int64_t)t.element_size();
                r.push_back(S);
            }
            r[it->second].readers.push_back(g);
        }
    }
    // Only a sum all of whose readers are in this block (else its buffer stays outside the chain).
    std::vector<BlockStaticSum> out;
    for (BlockStaticSum &S : r) {
        auto n = M.static_sums.find(S.v);
        if (n == M.static_sums.end() || (int)S.readers.size() != n->second || S.readers.size() < 2) continue;
        std::sort(S.readers.begin(), S.readers.end(),
                  [&](int a, int c) { return M.groups[a].pos < M.groups[c].pos; });
        out.push_back(std::move(S));
    }
    return out;
}

} // namespace rkx
