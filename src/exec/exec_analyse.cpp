// exec_analyse.cpp — the node interpreter and rk-GB's analysis run: the
// inlined TorchScript graph runs once on the example inputs, node by node
// (prim::Constant / GetAttr / list and tuple constructs by hand, everything
// else through the node's registered operation), and each node is classified
// by what it produced: static, view, in-place, list construct, or a real op
// allocating one new tensor (a group).  Random nodes are found by the
// generator state they consume.  Also the error helpers every file uses.
#include <torch/script.h>

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "exec_internal.h"

namespace rkx {

[[noreturn]] void fail(rk_status st, const std::string &m) { throw RkErr{st, m}; }

std::string where(const Node *cn) {
    Node *n = const_cast<Node *>(cn);
    std::ostringstream s;
    s << n->kind().toQualString();
    if (n->outputs().size() > 0) s << " (%" << n->output(0)->debugName() << ")";
    auto flc = n->sourceRange().file_line_col();
    if (flc) s << " at " << std::get<0>(*flc) << ":" << std::get<1>(*flc);
    if (n->scope() && !n->scope()->isBlank()) s << " in " << n->scope()->namesFromRoot(".");
    return s.str();
}

static bool is_size_like(const Node *n) {
    static const c10::Symbol numel = c10::Symbol::fromQualString("aten::numel");
    auto k = n->kind();
    return k == aten::size || k == aten::dim || k == numel || k == prim::device || k == prim::dtype ||
           k == prim::layout || k == aten::is_floating_point || k == prim::requires_grad || k == aten::len;
}

void run_node(Model &M, const Node *n, Stack &st) {
    auto k = n->kind();
    if (k == prim::Constant) {
        auto v = torch::jit::toIValue(n->output());
        if (!v) fail(RK_EINPUT, "constant without a value: " + where(n));
        st.push_back(*v);
    } else if (k == prim::GetAttr) {
        IValue obj = st.back();
        st.pop_back();
        st.push_back(obj.toObject()->getAttr(n->s(c10::attr::name)));
    } else if (k == prim::ListConstruct) {
        // (libtorch's vararg_functions are not exported: the same few lines here.)
        size_t m = n->inputs().size();
        c10::impl::GenericList vals(n->output()->type()->expectRef<c10::ListType>().getElementType());
        vals.reserve(m);
        for (size_t i = st.size() - m; i < st.size(); i++) vals.push_back(std::move(st[i]));
        st.resize(st.size() - m);
        st.emplace_back(std::move(vals));
    } else if (k == prim::TupleConstruct) {
        size_t m = n->inputs().size();
        std::vector<IValue> elems(std::make_move_iterator(st.end() - m), std::make_move_iterator(st.end()));
        st.resize(st.size() - m);
        st.emplace_back(c10::ivalue::Tuple::create(std::move(elems)));
    } else if (k == prim::DictConstruct) { // a model returning a dict (keys and values alternate)
        size_t m = n->inputs().size();
        const auto &dt = n->output()->type()->expectRef<c10::DictType>();
        c10::impl::GenericDict d(dt.getKeyType(), dt.getValueType());
        for (size_t i = st.size() - m; i + 1 < st.size(); i += 2) d.insert_or_assign(st[i], st[i + 1]);
        st.resize(st.size() - m);
        st.emplace_back(std::move(d));
    } else if (k == prim::ListUnpack) {
        IValue l = st.back();
        st.pop_back();
        auto list = l.toListRef();
        if (list.size() != n->outputs().size())
            fail(RK_EINPUT, "list of " + std::to_string(list.size()) + " values unpacked into " +
                                std::to_string(n->outputs().size()) + ": " + where(n));
        for (const IValue &e : list) st.push_back(e);
    } else if (k == prim::TupleUnpack) {
        IValue t = st.back();
        st.pop_back();
        for (const IValue &e : t.toTupleRef().elements()) st.push_back(e);
    } else if (k == prim::If || k == prim::Loop) {
        fail(RK_EINPUT, "control flow is not supported (trace the model with torch.jit.trace): " + where(n));
    } else {
        auto it = M.ops.find(n);
        if (it == M.ops.end()) {
            if (!n->maybeOperator())
                fail(RK_EINPUT, "operation with no implementation the executor can run: " + where(n));
            it = M.ops.emplace(n, n->getOperation()).first;
        }
        it->second(st);
    }
}

/* A group for node n whose new tensors are the outputs `outs` (values vals). */
static Group group_of(Node *n, const std::vector<const Value *> &outs, const std::vector<at::Tensor> &vals,
                      bool random) {
    Group G;
    G.main = n;
    G.outs = outs;
    G.data = outs[0];
    for (size_t k = 0; k < vals.size(); k++) {
        const at::Tensor &t = vals[k];
        G.rg = G.rg || t.requires_grad();
        G.out_rg.push_back(t.requires_grad());
        G.bytes += t.numel() * t.element_size();
        G.part_bytes.push_back(t.numel() * t.element_size());
        // an output nothing reads (LSTM's h and c in an LM) never gets a gradient
        bool read = vals.size() == 1 || !outs[k]->uses().empty();
        if (t.requires_grad() && read) G.grad_bytes += t.numel() * t.element_size();
    }
    G.sizes = vals[0].sizes().vec();
    G.strides = vals[0].strides().vec();
    G.dtype = vals[0].scalar_type();
    G.op = n->kind().toUnqualString();
    G.nondet = random;
    return G;
}
static Group group_of(Node *n, const at::Tensor &t, bool random) { return group_of(n, {n->output()}, {t}, random); }

static const c10::StorageImpl *storage_of(const IValue &v) {
    if (!v.isTensor()) return nullptr;
    const at::Tensor &t = v.toTensor();
    if (!t.defined() || !t.has_storage()) return nullptr;
    return t.storage().unsafeGetStorageImpl();
}

void run_static_program(Model &M) {
    auto current = [&](const Value *u) -> const IValue & { // through tuples unpacked (static_unpacked)
        for (auto it = M.static_unpacked.find(u); it != M.static_unpacked.end(); it = M.static_unpacked.find(u))
            u = it->second;
        return M.vi.at(u).sval;
    };
    for (Node *n : M.static_program) {
        Stack st;
        for (const Value *u : n->inputs()) st.push_back(current(u));
        {
            at::AutoGradMode grad_mode(written_argument(n) < 0); // as the analysis ran it
            run_node(M, n, st);
        }
        for (size_t i = 0; i < st.size() && i < n->outputs().size(); i++) M.vi.at(n->output(i)).sval = st[i];
    }
    for (const auto &u : M.static_unpacked) M.vi.at(u.first).sval = current(u.first);
}

// Every tensor in an IValue (lists and tuples flattened).
void tensors_in(const IValue &v, std::vector<at::Tensor> &out) {
    if (v.isTensor()) {
        if (v.toTensor().defined()) out.push_back(v.toTensor());
    } else if (v.isTensorList()) {
        for (const at::Tensor &t : v.toTensorVector()) out.push_back(t);
    } else if (v.isList()) {
        for (const IValue &e : v.toListRef()) tensors_in(e, out);
    } else if (v.isTuple()) {
        for (const IValue &e : v.toTupleRef().elements()) tensors_in(e, out);
    }
}

// Owners of the storages a value may alias (Data/View: its owner; Cheap: its items').
void owners_of(Model &M, const Value *v, std::vector<int> &out) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return owners_of(M, I.alias, out);
    if (I.kind == VK::Data || I.kind == VK::View) out.push_back(I.owner);
    if (I.kind == VK::Cheap)
        for (const Value *u : I.def->inputs()) owners_of(M, u, out);
}

bool owned_by(Model &M, const Value *v, int g) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return owned_by(M, I.alias, g);
    return (I.kind == VK::Data || I.kind == VK::View) && I.owner == g;
}

// Does a group's program, at a node between positions a and b (exclusive),
// read the data of group o (not only its shape)?
// Is v (through views and list unpacking) a piece of unsafe_chunk /
// unsafe_split / unsafe_split_with_sizes?  Autograd does not track those
// pieces as views of their argument, so an in-place op on one is invisible
// to the backward of the op that made it: rkmate's per-node backward would
// give other gradients than PyTorch's (silently), so such graphs are refused.
static const Node *unsafe_piece_source(const Value *v) {
    for (int hop = 0; v && hop < 64; hop++) {
        const Node *d = v->node();
        std::string k = d->kind().toQualString();
        if (k == "aten::unsafe_chunk" || k == "aten::unsafe_split" || k == "aten::unsafe_split_with_sizes") return d;
        if (k == "prim::ListUnpack" || k == "aten::__getitem__" || k == "prim::TupleUnpack") {
            v = d->input(0);
            continue;
        }
        return nullptr;
    }
    return nullptr;
}

static bool read_between(Model &M, int o, int a, int b) {
    for (int gi = 0; gi < (int)M.groups.size(); gi++) {
        if (gi == o) continue;
        std::set<const Value *> local;
        for (Node *n : M.groups[gi].prog) {
            int k = M.node_index.at(n);
            if (k > a && k < b)
                for (const Value *u : n->inputs()) {
                    if (local.count(u)) continue;
                    std::set<int> real, shape;
                    collect_deps(M, u, real, shape, false);
                    if (real.count(o)) return true;
                }
            for (const Value *x : n->outputs()) local.insert(x);
        }
    }
    return false;
}


// The floating-point tensors requiring grad in a model's output (a tensor, or
// tuples, lists and dicts of them, depth first, dicts in insertion order): the
// graph's values (analysis) ...
static void loss_values(Model &M, const Value *v, std::vector<const Value *> &out) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return loss_values(M, I.alias, out);
    if (I.kind == VK::Cheap) {
        bool dict = I.def->kind() == prim::DictConstruct;
        for (size_t i = dict ? 1 : 0; i < I.def->inputs().size(); i += dict ? 2 : 1)
            loss_values(M, I.def->input(i), out);
        return;
    }
    if (I.kind == VK::Static) return;
    const IValue &x = M.env.at(v);
    if (x.isTensor() && x.toTensor().defined() && x.toTensor().is_floating_point() && x.toTensor().requires_grad())
        out.push_back(v);
}

// ... and the plain module's result (the same walk on values).
static void loss_tensors(const IValue &v, std::vector<at::Tensor> &out) {
    if (v.isTensor()) {
        const at::Tensor &t = v.toTensor();
        if (t.defined() && t.is_floating_point() && t.requires_grad()) out.push_back(t);
    } else if (v.isTuple()) {
        for (const IValue &e : v.toTupleRef().elements()) loss_tensors(e, out);
    } else if (v.isList()) {
        for (const IValue &e : v.toListRef()) loss_tensors(e, out);
    } else if (v.isGenericDict()) {
        for (const auto &kv : v.toGenericDict()) loss_tensors(kv.value(), out);
    }
}

at::Tensor join_outputs(const IValue &r) {
    std::vector<at::Tensor> ts;
    loss_tensors(r, ts);
    if (ts.empty()) fail(RK_EINPUT, "the model returns no floating-point tensor that requires grad");
    if (ts.size() == 1) return ts[0];
    std::vector<at::Tensor> flat;
    for (auto &t : ts) flat.push_back(at::flatten(t, 0, -1));
    return at::cat(flat, 0);
}

// A model returning several tensors (tuple, list, dict): its output for
// rkmate is cat(flatten(o) for each floating-point output requiring grad), so
// the loss (sum or mean) covers every output; appended to the graph, the plain
// step does the same (join_outputs).  True when nodes were added.
static bool loss_output(Model &M) {
    auto &g = *M.graph;
    const Value *out = g.outputs()[0];
    const VInfo &I = M.vi.at(out);
    bool container = I.kind == VK::Cheap || (I.alias && M.vi.at(I.alias).kind == VK::Cheap);
    if (!container) return false;
    std::vector<const Value *> items;
    loss_values(M, out, items);
    if (items.empty()) fail(RK_EINPUT, "the model returns no floating-point tensor that requires grad");
    if (items.size() == 1) {
        M.output = items[0];
        return false;
    }
    torch::jit::WithInsertPoint guard(g.return_node());
    std::vector<Value *> flat;
    for (const Value *v : items) flat.push_back(g.insert(aten::flatten, {const_cast<Value *>(v), 0, -1}));
    Value *lst = g.insertNode(g.createList(c10::TensorType::get(), flat))->output();
    M.output = g.insert(aten::cat, {lst, 0});
    return true;
}

// The analysis run holds no autograd graph and, on a device, no value past
// its last use, so that it needs little more than the largest layer's data:
// a model whose training step does not fit in the device's memory can still
// be loaded (issue 18).  Every activation the run keeps is a detached tensor (a
// leaf) carrying the requires-grad flag autograd gave it, so the next node
// computes its own flag as in the real graph but keeps nothing of the graph
// behind it; in-place nodes run without grad mode (autograd refuses in-place
// writes into leaves that require grad) and their result requires grad when
// any floating-point input does, as autograd would make it.
// v with every tensor t it holds (alone, in a tensor list or a tuple) replaced by f(t); generic lists
// and dicts of constructs keep their elements (their inputs are the run's own values).
static IValue map_tensors(const IValue &v, const std::function<at::Tensor(const at::Tensor &)> &f) {
    if (v.isTensor()) return f(v.toTensor());
    if (v.isTensorList()) {
        c10::List<at::Tensor> l;
        const c10::List<at::Tensor> in = v.toTensorList();
        for (size_t i = 0; i < in.size(); i++) l.push_back(f(in.get(i)));
        return l;
    }
    if (v.isTuple()) {
        std::vector<IValue> e;
        for (const IValue &x : v.toTupleRef().elements()) e.push_back(map_tensors(x, f));
        return c10::ivalue::Tuple::create(std::move(e));
    }
    return v;
}

static IValue leaf_of(const IValue &v) {
    return map_tensors(v, [](const at::Tensor &t) {
        if (!t.defined()) return t;
        at::Tensor d = t.detach();
        if (t.requires_grad()) d.requires_grad_(true);
        return d;
    });
}

// What stays of a value nothing reads any more: when tracing on a device, a
// copy on the host (the blocks' outputs are taken from the run's values once
// the blocks are known); otherwise a tensor on the meta device (its shape,
// dtype and flag, no data).
static IValue retire(const IValue &v, bool to_host) {
    return map_tensors(v, [to_host](const at::Tensor &t) {
        if (!t.defined() || t.is_meta() || (to_host && t.is_cpu())) return t;
        at::Tensor h = to_host ? t.detach().to(at::kCPU)
                               : at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
        if (t.requires_grad()) h.requires_grad_(true);
        return h;
    });
}

// The argument n's schema marks as written (the last such), or -1.
int written_argument(const Node *n) {
    int written = -1;
    if (const c10::FunctionSchema *sch = n->maybeSchema())
        for (size_t i = 0; i < sch->arguments().size() && i < n->inputs().size(); i++) {
            const c10::AliasInfo *a = sch->arguments()[i].alias_info();
            if (a && a->isWrite()) written = (int)i;
        }
    return written;
}

// The values that depend on the model's inputs' data: the graph's inputs
// other than the module, and the outputs of every op (not a size query, a
// constant or an attribute) reading one; one pass in graph order.
static std::unordered_set<const Value *> input_dependent(const torch::jit::Graph &g) {
    std::unordered_set<const Value *> dep;
    for (const Value *v : g.inputs())
        if (!v->type()->cast<c10::ClassType>()) dep.insert(v);
    for (const Node *n : g.nodes()) {
        if (n->kind() == prim::Constant || n->kind() == prim::GetAttr || is_size_like(n)) continue;
        bool d = false;
        for (const Value *u : n->inputs()) d = d || dep.count(u);
        if (d)
            for (const Value *o : n->outputs()) dep.insert(o);
    }
    return dep;
}

// An in-place op that fills its argument with random draws.
static bool random_fill(const Node *w) {
    static const std::set<std::string> fills = {"aten::bernoulli_", "aten::uniform_",   "aten::normal_",
                                                "aten::exponential_", "aten::random_", "aten::cauchy_",
                                                "aten::log_normal_", "aten::geometric_"};
    return fills.count(w->kind().toQualString()) > 0 || w->isNondeterministic();
}

// A tensor factory (`torch.zeros(B, C, ...)`, `x.new_zeros`, `torch.empty`,
// ...) into which, directly or through views, an in-place op writes data
// computed from the inputs (`out[:, :, :m] = einsum(...)`: a Fourier neural
// operator's modes), or random draws (`torch.empty(32).bernoulli_(p)`: new
// ones every step).  Without input data it would be a constant, and such a
// write is refused; so it is an activation, made anew each step: a group with
// no dependencies, which the writes join (as on any activation).
static bool factory_written_with_data(const Node *n, const std::unordered_set<const Value *> &dep) {
    static const std::set<std::string> factories = {
        "aten::zeros",      "aten::ones",      "aten::full",      "aten::empty",    "aten::empty_strided",
        "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like", "aten::new_zeros",
        "aten::new_ones",   "aten::new_full",  "aten::new_empty"};
    static const std::set<std::string> views = {
        "aten::slice",   "aten::select",  "aten::narrow",    "aten::view",      "aten::reshape",
        "aten::transpose", "aten::permute", "aten::unsqueeze", "aten::squeeze",   "aten::diagonal",
        "aten::t",       "aten::unflatten", "aten::as_strided", "aten::view_as_real", "aten::view_as_complex",
        "aten::flatten", "aten::expand",  "aten::movedim",   "aten::unfold"};
    if (n->outputs().size() != 1 || !factories.count(n->kind().toQualString())) return false;
    std::vector<const Value *> todo = {n->output()};
    for (size_t i = 0; i < todo.size() && i < 4096; i++)
        for (const torch::jit::Use &u : todo[i]->uses()) {
            const Node *w = u.user;
            if (written_argument(w) == (int)u.offset) {
                if (random_fill(w)) return true; // new draws every step (`torch.empty(32).bernoulli_(p)`)
                for (size_t j = 0; j < w->inputs().size(); j++)
                    if (j != u.offset && dep.count(w->input(j))) return true;
            } else if (u.offset == 0 && w->outputs().size() == 1 && views.count(w->kind().toQualString())) {
                todo.push_back(w->output());
            }
        }
    return false;
}

// Values the end of the run still reads: the graph's outputs and, through
// list / tuple / dict constructs and unpacks, what they are made of.
static void mark_kept(const Value *v, std::set<const Value *> &kept) {
    if (!kept.insert(v).second) return;
    const Node *d = v->node();
    auto k = d->kind();
    if (k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::DictConstruct || k == prim::ListUnpack ||
        k == prim::TupleUnpack)
        for (const Value *u : d->inputs()) mark_kept(u, kept);
}

// Step 1 and 2 of rk-GB: run the whole graph once, classify every node by
// what its outputs alias, and build the groups (one per allocation).
void analyse(Model &M) {
    auto &g = *M.graph;
    std::unordered_map<const Value *, IValue> &env = M.env;
    int idx = 0;
    for (const Node *n : g.nodes()) M.node_index[n] = idx++;
    M.st.nodes_inlined = idx;
    auto ins = g.inputs();
    if ((int)ins.size() - 1 != (int)M.inputs.size())
        fail(RK_EINPUT, "the model's forward takes " + std::to_string((int)ins.size() - 1) + " input(s), " +
                            std::to_string(M.inputs.size()) + " --input given");
    env[ins[0]] = M.module._ivalue();
    M.vi[ins[0]] = VInfo{};
    M.vi[ins[0]].sval = env[ins[0]];
    for (size_t i = 1; i < ins.size(); i++) {
        env[ins[i]] = M.inputs[i - 1];
        Group G;
        G.input_index = (int)i - 1;
        G.data = ins[i];
        G.outs = {ins[i]};
        G.out_rg = {0};
        G.sizes = M.inputs[i - 1].sizes().vec();
        G.strides = M.inputs[i - 1].strides().vec();
        G.dtype = M.inputs[i - 1].scalar_type();
        G.bytes = M.inputs[i - 1].numel() * M.inputs[i - 1].element_size();
        G.op = "input";
        VInfo I;
        I.kind = VK::Data;
        I.owner = (int)M.groups.size();
        M.vi[ins[i]] = I;
        M.groups.push_back(G);
    }
    // Values past their last use are retired (see retire), unless tracing on the CPU (where the block
    // outputs are taken from the run's values, in the same memory).
    std::set<const Value *> kept;
    for (const Value *v : g.outputs()) mark_kept(v, kept);
    std::vector<std::pair<int, const Value *>> last_use; // (index of the last reader, value)
    bool to_host = M.keep_block_outputs;
    if (M.cuda || !M.keep_block_outputs) {
        for (const Node *n : g.nodes())
            for (const Value *v : n->outputs()) {
                if (kept.count(v)) continue;
                int last = M.node_index.at(n);
                for (const torch::jit::Use &u : v->uses()) {
                    auto it = M.node_index.find(u.user);
                    last = it == M.node_index.end() ? INT32_MAX : std::max(last, it->second);
                }
                if (last != INT32_MAX) last_use.push_back({last, v});
            }
        std::sort(last_use.begin(), last_use.end(),
                  [](const auto &a, const auto &b) { return a.first < b.first; });
    }
    size_t next_dead = 0;
    const std::unordered_set<const Value *> on_inputs = input_dependent(g); // factory_written_with_data
    std::unordered_set<const Value *> state_values; // parameters, buffers and the static values made from them
    // Two passes: the model's nodes, then (for a model returning several
    // tensors) the nodes that join them into one output (loss_output).
    for (int pass = 0; pass < 2; pass++) {
    std::vector<Node *> pending;
    for (Node *n : g.nodes())
        if (!M.node_index.count(n) || pass == 0) pending.push_back(n);
    for (Node *n : pending) M.node_index.emplace(n, idx++);
    for (Node *n : pending) {
        if (n->kind() != prim::Constant && n->kind() != prim::GetAttr) M.st.nodes_ops++;
        for (int here = M.node_index.at(n); next_dead < last_use.size() && last_use[next_dead].first < here;
             next_dead++) {
            auto it = env.find(last_use[next_dead].second);
            if (it != env.end() && M.vi.count(it->first) && M.vi.at(it->first).kind != VK::Static)
                it->second = retire(it->second, to_host);
        }
        Stack st;
        const int written = written_argument(n);
        const bool inplace = written >= 0;
        bool dyn = false, input_rg = false;
        for (const Value *u : n->inputs()) {
            st.push_back(env.at(u));
            if (M.vi.at(u).kind != VK::Static) dyn = true;
            if (!inplace) continue;
            std::vector<at::Tensor> ts;
            tensors_in(st.back(), ts);
            for (const at::Tensor &t : ts) input_rg = input_rg || (t.defined() && t.requires_grad());
        }
        if (dyn) M.st.nodes_dynamic++;
        // Random nodes: those TorchScript marks nondeterministic (dropout,
        // bernoulli, ...) and any other that consumes generator state (e.g.
        // scaled_dot_product_attention with dropout_p > 0): the state before
        // them is what a recompute restores.
        bool interp = n->kind() == prim::Constant || n->kind() == prim::GetAttr ||
                      n->kind() == prim::ListConstruct || n->kind() == prim::TupleConstruct ||
                      n->kind() == prim::DictConstruct ||
                      n->kind() == prim::ListUnpack || n->kind() == prim::TupleUnpack;
        at::Tensor rng_before;
        if (!interp) rng_before = rng_get(M.cuda);
        // A backward inside the forward (a scripted gradient penalty): refused
        // by name before it runs, which would fail with autograd's own advice
        // (allow_unused=True), wrong here.
        if (n->kind().toQualString() == std::string("aten::grad") ||
            n->kind().toQualString() == std::string("aten::backward"))
            fail(RK_EINPUT, "the model's forward runs a backward (" + where(n) +
                                ": a gradient penalty, a double backward); a step with rkmate has one backward, of "
                                "the loss: compute that term outside the model");
        try {
            at::AutoGradMode grad_mode(at::GradMode::is_enabled() && !inplace);
            run_node(M, n, st);
        } catch (const c10::Error &e) {
            fail(RK_EINPUT, "running " + where(n) + " on the example inputs failed: " + e.what_without_backtrace());
        }
        bool random = n->isNondeterministic();
        if (!random && rng_before.defined()) random = !at::equal(rng_before, rng_get(M.cuda));
        if (random) M.rng_state[n] = rng_before;
        // A random node of no input (`torch.rand(32) > p`, a mask of a fixed
        // shape) draws again every step of the plain forward, from the
        // generator as it is there: an activation without dependencies, run
        // in the schedule's forward as dropout is, not a value kept from
        // this run (a second training step reused the first's draw).
        if (random && !dyn) {
            dyn = true;
            M.st.nodes_dynamic++;
        }
        if (st.size() != n->outputs().size())
            fail(RK_EFAIL, "operation left " + std::to_string(st.size()) + " values for " +
                               std::to_string(n->outputs().size()) + " outputs: " + where(n));
        if (inplace && input_rg && st.size() == 1 && st[0].isTensor() && st[0].toTensor().defined() &&
            st[0].toTensor().is_floating_point() && !st[0].toTensor().requires_grad())
            st[0].toTensor().requires_grad_(true); // a leaf of this run: as autograd would flag the result
        // (static values keep their autograd graph: group_params finds the parameters behind them)
        for (size_t i = 0; i < st.size(); i++) env[n->output(i)] = dyn ? leaf_of(st[i]) : st[i];
        if (n->outputs().empty()) continue; // a check without a result (torch.export's metadata asserts)
        auto k = n->kind();
        if ((!dyn || is_size_like(n)) && !(!dyn && factory_written_with_data(n, on_inputs))) {
            // Static, unless it is a real op producing a tensor that requires
            // grad (e.g. a position embedding of a constant arange): that is
            // an activation and becomes a group with no dependencies.
            bool real_rg = false;
            if (dyn == false && n->outputs().size() == 1 && st[0].isTensor() && st[0].toTensor().defined() &&
                st[0].toTensor().requires_grad() && k != prim::GetAttr && k != prim::Constant) {
                const c10::StorageImpl *s = storage_of(st[0]);
                bool alias = false;
                for (const Value *u : n->inputs()) {
                    std::vector<at::Tensor> ts;
                    tensors_in(env.at(u), ts);
                    for (auto &t : ts)
                        if (t.has_storage() && t.storage().unsafeGetStorageImpl() == s) alias = true;
                }
                real_rg = !alias;
            }
            if (!real_rg) {
                // state read again every step (a buffer written in place, a
                // value computed from a parameter's detach, ...)
                bool reads_state = false;
                for (const Value *u : n->inputs()) reads_state = reads_state || state_values.count(u);
                if (k == prim::GetAttr && st.size() == 1 && st[0].isTensor()) state_values.insert(n->output());
                else if (reads_state && !dyn) {
                    for (const Value *o : n->outputs()) state_values.insert(o);
                    if (!random) M.static_program.push_back(n);
                }
                if (is_size_like(n)) M.st.n_sizes++;
                else if (k != prim::Constant && k != prim::GetAttr) M.st.n_static++;
                for (size_t i = 0; i < st.size(); i++) {
                    VInfo I;
                    I.sval = st[i];
                    M.vi[n->output(i)] = I;
                }
                continue;
            }
        }
        if (k == prim::ListConstruct || k == prim::TupleConstruct || k == prim::DictConstruct) {
            VInfo I;
            I.kind = VK::Cheap;
            I.def = n;
            M.vi[n->output()] = I;
            M.st.n_cheap++;
            continue;
        }
        if ((k == prim::ListUnpack || k == prim::TupleUnpack) && M.vi.at(n->input(0)).kind == VK::Cheap) {
            const Node *c = M.vi.at(n->input(0)).def;
            for (size_t i = 0; i < n->outputs().size(); i++) {
                VInfo I = M.vi.at(c->input(i));
                if (!I.alias && I.kind != VK::Static) I.alias = c->input(i);
                M.vi[n->output(i)] = I;
                if (state_values.count(c->input(i))) { // (a buffer a submodule returned in a tuple)
                    state_values.insert(n->output(i));
                    M.static_unpacked[n->output(i)] = c->input(i);
                }
            }
            M.st.n_cheap++;
            continue;
        }
        // In-place: an argument the schema marks as written.
        if (inplace) {
            const Value *t = n->input(written);
            const VInfo &TI = M.vi.at(t);
            if (TI.kind == VK::Static && n->kind() == aten::embedding_renorm_)
                fail(RK_EINPUT, "nn.Embedding(max_norm=...) / F.embedding(..., max_norm=...) renormalises the "
                                "weight's rows that the input reads, in place, in every forward: a parameter written "
                                "with data computed from the inputs is not supported (renormalise outside the model, "
                                "e.g. torch.embedding_renorm_(emb.weight, ids, max_norm, 2) under torch.no_grad() "
                                "before each step, and trace it without max_norm): " + where(n));
            if (TI.kind == VK::Static)
                fail(RK_EINPUT, "in-place operation writes a parameter, buffer or constant with data computed "
                                "from the inputs: " + where(n));
            if (TI.kind == VK::Cheap) fail(RK_EINPUT, "in-place operation on a list is not supported: " + where(n));
            if (n->outputs().size() != 1)
                fail(RK_EINPUT, "in-place operation with several outputs: " + where(n));
            if (const Node *u = unsafe_piece_source(t))
                fail(RK_EINPUT, "in-place operation on a piece of " + std::string(u->kind().toQualString()) +
                                    " (not tracked as a view by autograd, so recomputing or differentiating it "
                                    "node by node would change the gradients; use chunk/split, or the "
                                    "out-of-place op): " + where(n));
            std::vector<int> own;
            owners_of(M, t, own);
            if (own.empty()) fail(RK_EFAIL, "in-place operation on data without an owner: " + where(n));
            const Group &O = M.groups[own[0]];
            // Another op read the owner's data since it was made: PyTorch lets
            // it (when that op saved nothing), but merging this op into the
            // owner's program would change what that op reads.
            bool read_before = O.input_index < 0 && read_between(M, own[0], M.node_index.at(O.main), M.node_index.at(n));
            if (O.input_index >= 0 || read_before) {
                // On a model input, or on data read before: run it on a copy of
                // its argument, as a new node (one allocation); later readers use
                // its result; nothing may read the original later (checked in
                // build_structure).
                Group G = group_of(n, st[0].toTensor(), random);
                G.clone_arg = written;
                G.clone_owner = own[0];
                for (const Value *u : n->inputs()) {
                    const VInfo &UI = M.vi.at(u);
                    if (UI.kind == VK::Cheap && !UI.alias) G.prog.push_back(UI.def);
                }
                G.prog.push_back(n);
                VInfo I;
                I.kind = VK::Data;
                I.owner = (int)M.groups.size();
                M.vi[n->output()] = I;
                M.groups.push_back(G);
                M.st.n_inplace++;
                continue;
            }
            // Otherwise the op joins the owner's program (on its data or on a
            // view of it: the paper's rule, it runs before the owner's detach);
            // its result stands for its argument.
            Group &OW = M.groups[own[0]];
            OW.prog.push_back(n);
            if (input_rg && OW.outs.size() == 1 && !OW.rg) {
                // data that requires grad written into an owner that did not
                // (a factory's zeros): the owner's output now does
                OW.rg = true;
                OW.out_rg[0] = true;
                OW.grad_bytes = OW.bytes; // as group_of counts a gradient: its one output's bytes
                auto e = env.find(OW.outs[0]); // later readers of this run see it require grad
                if (e != env.end() && e->second.isTensor() && e->second.toTensor().is_leaf() &&
                    !e->second.toTensor().requires_grad())
                    e->second.toTensor().requires_grad_(true);
            }
            if (random) OW.nondet = true;
            VInfo I = TI; // same kind as its argument (so that readers count as dynamic)
            I.alias = t;
            M.vi[n->output()] = I;
            M.st.n_inplace++;
            continue;
        }
        // Which dynamic inputs could the outputs alias?
        std::vector<std::pair<const c10::StorageImpl *, int>> in_st; // storage, input index
        std::vector<const c10::StorageImpl *> static_st;
        for (size_t i = 0; i < n->inputs().size(); i++) {
            std::vector<at::Tensor> ts;
            tensors_in(env.at(n->input(i)), ts);
            bool isdyn = M.vi.at(n->input(i)).kind != VK::Static;
            for (auto &t : ts)
                if (t.has_storage()) {
                    if (isdyn) in_st.push_back({t.storage().unsafeGetStorageImpl(), (int)i});
                    else static_st.push_back(t.storage().unsafeGetStorageImpl());
                }
        }
        int n_tensor_out = 0, n_alias = 0, n_static_alias = 0, src = -1;
        bool non_tensor = false;
        for (size_t i = 0; i < st.size(); i++) {
            std::vector<at::Tensor> ts;
            tensors_in(st[i], ts);
            if (ts.empty() && !st[i].isTensor() && !st[i].isNone()) non_tensor = true;
            for (auto &t : ts) {
                n_tensor_out++;
                const c10::StorageImpl *s = t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
                bool al = false;
                for (auto &p : in_st)
                    if (p.first == s) {
                        al = true;
                        if (src < 0) src = p.second;
                    }
                if (al) n_alias++;
                else if (std::find(static_st.begin(), static_st.end(), s) != static_st.end()) n_static_alias++;
            }
        }
        if (non_tensor)
            fail(RK_EINPUT, "a non-tensor value computed from tensor data (data-dependent control or shape) "
                            "is not supported: " + where(n));
        if (n_tensor_out > 0 && n_alias == n_tensor_out) {
            std::vector<int> own;
            owners_of(M, n->input(src), own);
            if (own.empty()) fail(RK_EFAIL, "view without an owner: " + where(n));
            for (size_t i = 0; i < st.size(); i++) {
                VInfo I;
                I.kind = VK::View;
                I.owner = own[0];
                I.def = n;
                I.src = src;
                // (a view of data an in-place op writes later can require grad
                // without this run knowing: only a detach is known not to)
                I.rg = k != aten::detach;
                if (st[i].isTensor()) I.sizes = st[i].toTensor().sizes().vec();
                M.vi[n->output(i)] = I;
            }
            M.st.n_views++;
            continue;
        }
        if (n_tensor_out > 0 && n_static_alias == n_tensor_out) { // e.g. expand_as(buffer, activation)
            for (size_t i = 0; i < st.size(); i++) {
                VInfo I;
                I.sval = st[i];
                M.vi[n->output(i)] = I;
            }
            M.st.n_static++;
            continue;
        }
        // A real node: a new group, owning every new tensor the op returns
        // (LSTM: output, h, c; topk: values, indices), one storage each.
        std::vector<const Value *> outs;
        std::vector<at::Tensor> vals;
        std::set<const c10::StorageImpl *> seen;
        for (size_t i = 0; i < st.size(); i++) {
            if (st[i].isNone() || (st[i].isTensor() && !st[i].toTensor().defined())) continue;
            if (!st[i].isTensor()) {
                // torch.where(mask) / nonzero(as_tuple=True): index lists whose length is the data's
                const std::string k = n->kind().toQualString();
                const bool data_sized = k == "aten::where" || k == "aten::nonzero_numpy";
                fail(RK_EINPUT, "an operation returning a list of new tensors is not supported: " + where(n) +
                                    (data_sized ? " (index lists whose sizes depend on the data; "
                                                  "mask.nonzero().unbind(1) gives the same indices from one tensor, "
                                                  "but a schedule is planned for the example's sizes)"
                                                : ""));
            }
            const c10::StorageImpl *s = storage_of(st[i]);
            if (n_alias > 0 || n_static_alias > 0 || !s || !seen.insert(s).second)
                fail(RK_EINPUT, "an operation returning new tensors and views (or tensors sharing storage) "
                                "together is not supported: " + where(n));
            outs.push_back(n->output(i));
            vals.push_back(st[i].toTensor());
        }
        if (outs.empty()) fail(RK_EINPUT, "an operation on activations that returns no tensor: " + where(n));
        Group G = group_of(n, outs, vals, random);
        // Cheap constructs feeding the main node go into its program.
        std::vector<Node *> pre;
        std::function<void(const Value *)> addpre = [&](const Value *u) {
            const VInfo &UI = M.vi.at(u);
            if (UI.kind == VK::Cheap && !UI.alias) {
                for (const Value *w : UI.def->inputs()) addpre(w);
                if (std::find(pre.begin(), pre.end(), UI.def) == pre.end()) pre.push_back(UI.def);
            }
        };
        for (const Value *u : n->inputs()) addpre(u);
        G.prog = pre;
        G.prog.push_back(n);
        for (size_t i = 0; i < n->outputs().size(); i++) {
            VInfo I;
            auto it = std::find(outs.begin(), outs.end(), n->output(i));
            if (it != outs.end()) {
                I.kind = VK::Data;
                I.owner = (int)M.groups.size();
                I.part = (int)(it - outs.begin());
            } else {
                I.sval = st[i]; // None / undefined
            }
            M.vi[n->output(i)] = I;
        }
        M.groups.push_back(G);
    }
    if (pass == 0 && loss_output(M)) continue;
    break;
    }
    // The output.
    const Value *out = M.output ? M.output : g.outputs()[0];
    while (true) {
        const VInfo &I = M.vi.at(out);
        if (I.alias) { out = I.alias; continue; }
        if (I.kind == VK::Cheap && I.def->inputs().size() == 1) { out = I.def->input(0); continue; }
        break;
    }
    const VInfo &OI = M.vi.at(out);
    if (OI.kind == VK::Cheap) fail(RK_EFAIL, "the model's outputs were not joined into one tensor");
    if (OI.kind == VK::Static) fail(RK_EINPUT, "the model's output does not depend on its inputs");
    if (!env.at(out).isTensor() || !env.at(out).toTensor().is_floating_point())
        fail(RK_EINPUT, "the model's output is not a floating-point tensor");
    M.output = out;
    M.out_group = OI.owner;
    if (!M.groups[M.out_group].rg) fail(RK_EINPUT, "the model's output does not require grad");
    // Keep the static values only (the run's activations are freed here).
}

// The static value that the static value u is a view of, when u's node has
// one tensor input, static, whose storage u shares (a transpose of an
// expanded parameter); nullptr otherwise.
static const Value *static_view_src(Model &M, const Value *u) {
    const VInfo &I = M.vi.at(u);
    if (I.kind != VK::Static || !I.sval.isTensor() || !I.sval.toTensor().defined()) return nullptr;
    const Node *n = u->node();
    if (n->kind() == prim::Constant || n->kind() == prim::GetAttr) return nullptr;
    const Value *src = nullptr;
    for (const Value *w : n->inputs()) {
        while (M.vi.at(w).alias) w = M.vi.at(w).alias;
        const VInfo &W = M.vi.at(w);
        if (W.kind != VK::Static) return nullptr;
        if (!W.sval.isTensor()) continue;
        if (src) return nullptr; // two tensor inputs
        src = w;
    }
    if (!src) return nullptr;
    const at::Tensor &t = I.sval.toTensor(), &b = M.vi.at(src).sval.toTensor();
    if (!b.defined() || !t.has_storage() || !b.has_storage() || !t.storage().is_alias_of(b.storage())) return nullptr;
    return src;
}

// Static values that require grad, made by an `expand` (a reduction in the
// backward), and read by two or more groups' programs, directly or through
// static views of them (static_view_src): M.static_sums, M.static_sum_views.
void find_static_sums(Model &M) {
    static const std::set<std::string> reduces = {"aten::expand", "aten::expand_as", "aten::broadcast_to"};
    M.static_sums.clear();
    M.static_sum_views.clear();
    for (Group &G : M.groups) G.sums_read.clear();
    for (size_t g = 0; g < M.groups.size(); g++) {
        Group &G = M.groups[g];
        for (const Node *n : G.prog)
            for (const Value *r : n->inputs()) {
                while (M.vi.at(r).alias) r = M.vi.at(r).alias;
                std::vector<const Value *> chain; // r and the static values it is a view of, up to u
                const Value *u = r;
                for (int depth = 0; depth < 64; depth++) {
                    const Value *src = static_view_src(M, u);
                    if (!src || reduces.count(u->node()->kind().toQualString())) break;
                    chain.push_back(u);
                    u = src;
                }
                const VInfo &I = M.vi.at(u);
                if (I.kind != VK::Static || !I.sval.isTensor() || !reduces.count(u->node()->kind().toQualString()))
                    continue;
                const at::Tensor &t = I.sval.toTensor();
                if (!t.defined() || !t.requires_grad() || !t.grad_fn()) continue;
                for (const Value *w : chain) M.static_sum_views[w] = u;
                if (std::find(G.sums_read.begin(), G.sums_read.end(), u) == G.sums_read.end()) {
                    G.sums_read.push_back(u);
                    M.static_sums[u]++;
                }
            }
    }
    for (auto it = M.static_sums.begin(); it != M.static_sums.end();)
        it = it->second >= 2 ? std::next(it) : M.static_sums.erase(it);
    for (auto it = M.static_sum_views.begin(); it != M.static_sum_views.end();)
        it = M.static_sums.count(it->second) ? std::next(it) : M.static_sum_views.erase(it);
    for (Group &G : M.groups)
        G.sums_read.erase(std::remove_if(G.sums_read.begin(), G.sums_read.end(),
                                         [&](const Value *v) { return !M.static_sums.count(v); }),
                          G.sums_read.end());
}

} // namespace rkx
