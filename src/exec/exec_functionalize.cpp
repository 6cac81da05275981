// exec_functionalize.cpp — in-place writes through a view whose original is
// read again.  rk-GB runs an in-place op inside the program of the group that
// owns the data it writes (the paper's rule), or, when another op read that
// data since it was made (or the data is a model input), on a copy of its
// argument; the copy changes nothing the original's later readers see, so
// such a model was refused ("... whose original is read again later").
// PyTorch runs it: `h[:, 1:] += 0.5 * h[:, :-1].detach()` then reading `h`.
//
// This pass rewrites those ops (on activations; on a model input they stay
// refused) before the analysis, as functionalization does: the written data's
// root (the tensor the view chain starts from) is cloned right before the op,
// the view chain is replayed on the clone, the op writes the clone's view, and
// every later use of the root or of a value derived from it by views (or by
// lists holding them) uses the clone or the same chain replayed on it.  The
// forward values are those of the plain step; so are the gradients (the
// clone's backward passes its gradient through unchanged; the op's backward
// through the view is libtorch's CopySlices on the clone, as it is on the
// original in the plain step).  The cost is one copy of the root, held while
// the clone is (docs/exec.md).
#include <torch/script.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <map>
#include <set>

#include "exec_internal.h"

namespace rkx {

namespace {

using torch::jit::Graph;

// The input of n that output i may share data with (a view, an in-place op's
// result), by n's schema; -1 when none (a new tensor, or no schema).
int alias_input(const Node *n, size_t i) {
    const c10::FunctionSchema *sch = n->maybeSchema();
    if (!sch || i >= sch->returns().size()) return -1;
    const c10::AliasInfo *ra = sch->returns()[i].alias_info();
    if (!ra) return -1;
    std::set<c10::Symbol> sets(ra->beforeSets().begin(), ra->beforeSets().end());
    for (const c10::AliasInfo &c : ra->containedTypes()) sets.insert(c.beforeSets().begin(), c.beforeSets().end());
    for (size_t j = 0; j < sch->arguments().size() && j < n->inputs().size(); j++) {
        const c10::AliasInfo *a = sch->arguments()[j].alias_info();
        if (!a) continue;
        for (const c10::Symbol &s : a->beforeSets())
            if (sets.count(s)) return (int)j;
    }
    return -1;
}

bool is_container(const Node *n) {
    auto k = n->kind();
    return k == prim::ListConstruct || k == prim::TupleConstruct;
}

bool is_unpack(const Node *n) { return n->kind() == prim::ListUnpack || n->kind() == prim::TupleUnpack; }

// The value whose data v is, or is a view of: back through views, in-place
// results and list elements.
Value *root_of(Value *v) {
    for (;;) {
        Node *d = v->node();
        if (is_unpack(d)) {
            Node *c = d->input(0)->node();
            v = is_container(c) && v->offset() < c->inputs().size() ? c->input(v->offset()) : d->input(0);
            continue;
        }
        int j = alias_input(d, v->offset());
        if (j < 0) return v;
        v = d->input(j);
    }
}

// The node of g's top-level block that holds u (u itself, or the node whose
// sub-block holds it); nullptr for the return node.
Node *top_level(Graph &g, Node *u) {
    while (u->owningBlock() != g.block()) u = u->owningBlock()->owningNode();
    return u == g.return_node() ? nullptr : u;
}

bool size_only(const Node *n) {
    static const std::set<std::string> kinds = {"aten::size", "aten::dim", "aten::numel", "aten::len", "prim::device",
                                                "prim::dtype", "aten::sym_size", "aten::sym_numel"};
    return kinds.count(n->kind().toQualString()) > 0;
}

struct Family {
    std::set<Value *> members; // the root and what is derived from it by views, in-place ops and lists
    // the values' users that read or write the data (not those that only make another member)
    std::vector<std::pair<Node *, Value *>> uses; // (user, the member it uses)
};

Family family_of(Value *root) {
    Family F;
    std::vector<Value *> todo{root};
    F.members.insert(root);
    while (!todo.empty()) {
        Value *v = todo.back();
        todo.pop_back();
        for (const torch::jit::Use &u : v->uses()) {
            F.uses.push_back({u.user, v});
            for (Value *o : u.user->outputs()) {
                if (F.members.count(o)) continue;
                bool member = is_container(u.user) || root_of(o) == root;
                if (member) {
                    F.members.insert(o);
                    todo.push_back(o);
                }
            }
        }
    }
    return F;
}

// Does `u` read the family's data (not only derive a member or size from it)?
bool reads_data(const Family &F, Node *u, Value *v) {
    if (size_only(u)) return false;
    int w = written_argument(u);
    if (w >= 0 && u->input(w) == v) {
        for (size_t i = 0; i < u->inputs().size(); i++)
            if ((int)i != w && F.members.count(u->input(i))) return true;
        return false; // writes it (another in-place op on the family)
    }
    for (Value *o : u->outputs())
        if (!F.members.count(o)) return true;
    return false;
}

void rewrite(Graph &g, Node *n, int w, Value *root, const Family &F) {
    // The clone and, before n, the written value's chain on it.
    torch::jit::WithInsertPoint guard(n);
    Value *none = g.insertConstant(IValue());
    Node *c = g.create(c10::Symbol::fromQualString("aten::clone"), {root, none});
    c->setSourceRange(n->sourceRange());
    c->setScope(n->scope());
    g.insertNode(c);
    c->output()->setType(root->type());
    std::map<Value *, Value *> pre{{root, c->output()}}, post{{root, c->output()}};
    std::function<Value *(Value *, std::map<Value *, Value *> &)> replay = [&](Value *v, std::map<Value *, Value *> &m) {
        auto it = m.find(v);
        if (it != m.end()) return it->second;
        Node *d = v->node();
        int dw = written_argument(d);
        if (dw >= 0 && alias_input(d, v->offset()) == dw) // an earlier in-place op's result: the clone has its write
            return m[v] = replay(d->input(dw), m);
        for (Value *x : d->inputs())
            if (F.members.count(x)) replay(x, m);
        Node *copy = g.createClone(d, [&](Value *x) { auto f = m.find(x); return f != m.end() ? f->second : x; });
        g.insertNode(copy);
        for (size_t i = 0; i < d->outputs().size(); i++) m[d->output(i)] = copy->output(i);
        return m.at(v);
    };
    n->replaceInput(w, replay(n->input(w), pre));
    // After n, later uses of members made before it: the same chain on the clone.
    Node *cursor = n;
    std::vector<std::pair<Node *, Value *>> later;
    for (const auto &[u, v] : F.uses) {
        Node *top = top_level(g, u);
        if (v->node() == n || v->node()->isAfter(n)) continue; // made at or after n
        if (top && !top->isAfter(n)) continue;
        later.push_back({u, v});
    }
    for (const auto &[u, v] : later) {
        Value *nv;
        {
            torch::jit::WithInsertPoint after(cursor->next());
            nv = replay(v, post);
            if (nv != c->output()) cursor = nv->node()->isAfter(cursor) ? nv->node() : cursor;
        }
        for (size_t i = 0; i < u->inputs().size(); i++)
            if (u->input(i) == v) u->replaceInput(i, nv);
    }
}

} // namespace

int functionalize_view_writes(Model &M) {
    Graph &g = *M.graph;
    int rewritten = 0;
    std::vector<Node *> nodes(g.nodes().begin(), g.nodes().end());
    for (Node *n : nodes) {
        int w = written_argument(n);
        if (w < 0 || n->outputs().size() != 1) continue;
        Value *root = root_of(n->input(w));
        if (!root->type()->cast<c10::TensorType>()) continue;
        // Not on a model input (the plain step writes the caller's tensor, which
        // every later run would then read: still refused), nor on parameters,
        // buffers or constants (refused or run once per step by the analysis).
        Node *rd = root->node();
        if (rd == g.param_node() || rd->kind() == prim::GetAttr || rd->kind() == prim::Constant) continue;
        Family F = family_of(root);
        bool before = false, after = false;
        for (const auto &[u, v] : F.uses) {
            if (u == n) continue;
            Node *top = top_level(g, u);
            if (!top || top->isAfter(n)) {
                // a later use of the original (or of a view made before n);
                // readers of n's result read the copy the analysis makes
                if (v->node() != n && !v->node()->isAfter(n)) after = true;
                continue;
            }
            if (top != n && reads_data(F, u, v)) before = true;
        }
        if (!before || !after) continue;
        rewrite(g, n, w, root, F);
        rewritten++;
    }
    return rewritten;
}

} // namespace rkx
