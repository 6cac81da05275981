// exec_rnn.cpp — RNN layers as their time steps.  A TorchScript
// `aten::lstm` / `aten::gru` / `aten::rnn_tanh` / `aten::rnn_relu` node runs
// every layer and every time step inside one op, so rk-GB would see one node
// holding all the saved activations.  Where ATen's CPU implementation of the
// op is itself a sequence of ATen ops (aten/src/ATen/native/RNN.cpp:
// `_rnn_impl` / `_lstm_impl`, `FullLayer` with the input projection
// `linear_ih` over all steps, `FullBidirectionalLayer`, `LSTMCell`,
// `GRUCell`, `SimpleCell`), the node is rewritten into those same ops in the
// same order, so the forward values and the gradients are bit-equal to the
// plain step's, which runs the fused op.  Where the plain step runs another
// kernel (oneDNN's LSTM for float32 / bfloat16 / float16 on CPU, cuDNN on
// CUDA), or a form this file does not rewrite (packed sequences, LSTM
// projections, arguments that are not constants), the node is kept whole and
// the reason is reported (rk_trace_stats.rnn_warning).
#include <torch/script.h>
#include <ATen/Context.h>

#include "exec_internal.h"

namespace rkx {

namespace {

enum class Cell { LSTM, GRU, TANH, RELU };

// Inserts ops at the graph's insertion point, each carrying the RNN node's
// source place and scope (for messages and module names).
struct Emit {
    torch::jit::Graph &g;
    Node *meta;
    Value *op(c10::Symbol s, std::vector<torch::jit::NamedValue> args) {
        Value *v = g.insert(s, args);
        v->node()->copyMetadata(meta);
        return v;
    }
    std::vector<Value *> unpack(Value *list, size_t n) {
        Node *u = g.insertNode(g.createListUnpack(list, n));
        u->copyMetadata(meta);
        return u->outputs().vec();
    }
    Value *list(const std::vector<Value *> &vs) {
        Node *l = g.insertNode(g.createList(c10::TensorType::get(), vs));
        l->copyMetadata(meta);
        return l->output();
    }
};

struct Weights {
    Value *w_ih, *w_hh, *b_ih, *b_hh; // biases: None constants when the layer has none
};

// The cells below are ATen's with one change: ATen's cells run in-place ops
// (sigmoid_, add_, mul_) on the gates' unsafe_chunk pieces, which autograd
// does not track as views of the gates, so the executor, which reads them as
// views of the gates' node, would lose them in that node's backward; here
// they are their out-of-place forms (same kernels on the same strided
// inputs, same values, the same backward formulas; the products and sums
// that now read contiguous inputs are exactly rounded on every path).
// In-place ops on whole tensors are kept.

// LSTMCell::operator() with the input projection precomputed (x = linear_ih(input)[t]).
void lstm_step(Emit &e, Value *x, Value *&h, Value *&c, const Weights &w) {
    Value *gates = e.op(aten::add_, {e.op(aten::linear, {h, w.w_hh, w.b_hh}), x});
    std::vector<Value *> ch = e.unpack(e.op(aten::unsafe_chunk, {gates, 4, 1}), 4);
    Value *ingate = e.op(aten::sigmoid, {ch[0]});
    Value *forgetgate = e.op(aten::sigmoid, {ch[1]});
    Value *cellgate = e.op(aten::tanh, {ch[2]});
    Value *outgate = e.op(aten::sigmoid, {ch[3]});
    Value *fc = e.op(aten::mul, {forgetgate, c});
    Value *cy = e.op(aten::add_, {fc, e.op(aten::mul, {ingate, cellgate})});
    h = e.op(aten::mul, {outgate, e.op(aten::tanh, {cy})});
    c = cy;
}

// GRUCell::operator() with the input projection precomputed.  ATen adds
// and applies sigmoid_ on the reset and input gates' pieces in place; here
// the two sums are one out-of-place add over both pieces, whose two halves
// get sigmoid: the sigmoids read rows of `hidden` strided elements as in
// ATen (a contiguous input would let the kernel take other vectorised and
// scalar paths, whose results differ in the last bit).  ATen's mul_ of the
// new gate's hidden piece by the reset gate keeps a copy of that piece for
// the reset gate's gradient, and the gates keep the hidden projection's
// buffer; here the gates are their own tensors, so the piece is copied
// (clone) and the product reads the copy: nothing keeps the buffer of
// 3 x hidden (it kept it beside the gates: keep-all 6 % above the plain step
// on a float32 GRU whose peak is after the layer).
void gru_step(Emit &e, Value *x, Value *&h, const Weights &w, int64_t hidden) {
    std::vector<Value *> ig = e.unpack(e.op(aten::unsafe_chunk, {x, 3, 1}), 3);
    Value *hgl = e.op(aten::linear, {h, w.w_hh, w.b_hh});
    std::vector<Value *> hg = e.unpack(e.op(aten::unsafe_chunk, {hgl, 3, 1}), 3);
    hg[2] = e.op(aten::clone, {hg[2]});
    Value *rz_pre = e.op(aten::add, {e.op(aten::narrow, {hgl, 1, 0, 2 * hidden}), e.op(aten::narrow, {x, 1, 0, 2 * hidden})});
    std::vector<Value *> rz = e.unpack(e.op(aten::unsafe_chunk, {rz_pre, 2, 1}), 2);
    Value *reset_gate = e.op(aten::sigmoid, {rz[0]});
    Value *input_gate = e.op(aten::sigmoid, {rz[1]});
    Value *new_gate = e.op(aten::tanh_, {e.op(aten::add, {ig[2], e.op(aten::mul, {hg[2], reset_gate})})});
    h = e.op(aten::add_, {e.op(aten::mul_, {e.op(aten::sub, {h, new_gate}), input_gate}), new_gate});
}

// SimpleCell::operator(): nonlinearity(linear_hh(h).add_(x)).
void simple_step(Emit &e, Value *x, Value *&h, const Weights &w, Cell cell) {
    Value *pre = e.op(aten::add_, {e.op(aten::linear, {h, w.w_hh, w.b_hh}), x});
    h = e.op(cell == Cell::TANH ? aten::tanh : aten::relu, {pre});
}

struct Plan {
    Node *n;
    Cell cell;
    int64_t steps;  // sequence length
    int64_t hidden; // hidden size
    bool onednn;    // float32 LSTM on CPU: per layer, as oneDNN runs it (mkldnn_rnn_layer)
    // The node's constant arguments (inputs 3-8 of aten::lstm/gru/rnn_*).
    bool has_biases, train, bidirectional, batch_first;
    int64_t layers;
    double dropout;
    int dirs() const { return bidirectional ? 2 : 1; }
};

bool rnn_kind(const Node *n, Cell &cell) {
    auto k = n->kind();
    if (k == aten::lstm) cell = Cell::LSTM;
    else if (k == aten::gru) cell = Cell::GRU;
    else if (k == aten::rnn_tanh) cell = Cell::TANH;
    else if (k == aten::rnn_relu) cell = Cell::RELU;
    else return false;
    return true;
}

template <class T> bool const_arg(const Node *n, size_t i, T &out) {
    auto v = torch::jit::toIValue(n->input(i));
    if (!v) return false;
    out = v->to<T>();
    return true;
}

// Why node n (values of the analysis pre-run in env) cannot be rewritten
// bit-equal to its plain kernel; empty when it can.  Fills the plan.
std::string check(Model &M, Node *n, Cell cell, const std::unordered_map<const Value *, IValue> &env, Plan &p) {
    const c10::FunctionSchema *sch = n->maybeSchema();
    if (!sch || sch->overload_name() != "input")
        return "a packed sequence (pack_padded_sequence) runs as one op";
    if (M.cuda) return "on CUDA the plain step runs cuDNN's fused kernel, which separate ATen ops do not reproduce";
    bool &has_biases = p.has_biases, &train = p.train, &bidirectional = p.bidirectional,
         &batch_first = p.batch_first;
    int64_t &layers = p.layers;
    double &dropout = p.dropout;
    if (!const_arg(n, 3, has_biases) || !const_arg(n, 4, layers) || !const_arg(n, 5, dropout) ||
        !const_arg(n, 6, train) || !const_arg(n, 7, bidirectional) || !const_arg(n, 8, batch_first))
        return "its layer count, bias, dropout, training, direction or batch_first argument is not a constant";
    Node *params = n->input(2)->node();
    if (params->kind() != prim::ListConstruct) return "its weights are not a list of module parameters";
    int64_t per = (has_biases ? 4 : 2), dirs = bidirectional ? 2 : 1;
    if ((int64_t)params->inputs().size() != layers * dirs * per)
        return cell == Cell::LSTM ? "an LSTM with projections (proj_size > 0) is not rewritten"
                                  : "unexpected number of weights";
    if (cell == Cell::LSTM && n->input(1)->node()->kind() != prim::ListConstruct)
        return "its initial state (h0, c0) is not a list construct";
    const IValue &in = env.at(n->input(0));
    if (!in.isTensor() || in.toTensor().dim() != 3 || in.toTensor().numel() == 0)
        return "its input is not a non-empty 3-d tensor";
    const at::Tensor &x = in.toTensor();
    p.steps = x.size(batch_first ? 1 : 0);
    const IValue &w_hh = env.at(params->input(1));
    if (!w_hh.isTensor() || w_hh.toTensor().dim() != 2) return "its weights are not 2-d tensors";
    p.hidden = w_hh.toTensor().size(1);
    if (cell == Cell::LSTM && at::hasMKLDNN() && at::globalContext().userEnabledMkldnn()) {
        auto dt = x.scalar_type();
        if (dt == at::kBFloat16 || dt == at::kHalf)
            return std::string("on CPU, ") + c10::toString(dt) +
                   " LSTMs may run oneDNN's kernel in the plain step, depending on the processor";
        // ATen's lstm runs oneDNN's kernel, one mkldnn_rnn_layer call per
        // layer and direction (aten/src/ATen/native/mkldnn/RNN.cpp,
        // mkldnn_rnn): the node becomes those calls; inside a layer oneDNN
        // sums over the time steps in its own order, which no split reproduces.
        if (dt == at::kFloat) p.onednn = true;
    }
    return "";
}

// A float32 LSTM on CPU: oneDNN's mkldnn_rnn as ATen runs it, one
// mkldnn_rnn_layer (output, h, c, workspace) per layer and direction.
void rewrite_onednn(Model &M, const Plan &p) {
    Node *n = p.n;
    auto &g = *M.graph;
    torch::jit::WithInsertPoint guard(n);
    Emit e{g, n};
    const bool has_biases = p.has_biases, train = p.train, bidirectional = p.bidirectional,
               batch_first = p.batch_first;
    const int64_t layers = p.layers;
    const double dropout = p.dropout;
    const int dirs = p.dirs();
    Node *params = n->input(2)->node(), *hl = n->input(1)->node();
    Value *input = batch_first ? e.op(aten::transpose, {n->input(0), 0, 1}) : n->input(0);
    input = e.op(aten::contiguous, {input});
    Value *hx = e.op(aten::contiguous, {hl->input(0)}), *cx = e.op(aten::contiguous, {hl->input(1)});
    Value *no_sizes = g.insertConstant(IValue(std::vector<int64_t>{}));
    std::vector<Value *> hys, cys;
    Value *layer_input = input;
    size_t per = has_biases ? 4 : 2;
    for (int64_t l = 0; l < layers; l++) {
        std::vector<Value *> outs;
        for (int d = 0; d < dirs; d++) {
            int64_t idx = l * dirs + d;
            Value *w0 = params->input((size_t)idx * per), *w1 = params->input((size_t)idx * per + 1);
            Value *w2 = has_biases ? params->input((size_t)idx * per + 2) : e.op(aten::zeros_like, {w0});
            Value *w3 = has_biases ? params->input((size_t)idx * per + 3) : e.op(aten::zeros_like, {w1});
            Value *tup = e.op(aten::mkldnn_rnn_layer,
                              {layer_input, w0, w1, w2, w3, e.op(aten::select, {hx, 0, idx}),
                               e.op(aten::select, {cx, 0, idx}), d > 0, no_sizes, 2 /* ideep::rnn_kind::LSTM */,
                               p.hidden, layers, has_biases, bidirectional, batch_first, train});
            Node *tn = tup->node(); // the 4 results packed by Graph::insert
            if (tn->kind() != prim::TupleConstruct || tn->inputs().size() != 4)
                fail(RK_EFAIL, "mkldnn_rnn_layer did not insert as 4 results: " + where(n));
            outs.push_back(tn->input(0));
            hys.push_back(tn->input(1));
            cys.push_back(tn->input(2));
            tn->destroy();
        }
        layer_input = dirs == 1 ? outs[0] : e.op(aten::cat, {e.list(outs), -1});
        if (dropout != 0 && train && l < layers - 1) layer_input = e.op(aten::dropout, {layer_input, dropout, true});
    }
    Value *hy = n->outputs()[1]->hasUses() ? e.op(aten::stack, {e.list(hys), 0}) : nullptr;
    Value *cy = n->outputs()[2]->hasUses() ? e.op(aten::stack, {e.list(cys), 0}) : nullptr;
    Value *out = batch_first ? e.op(aten::transpose, {layer_input, 0, 1}) : layer_input;
    n->output(0)->replaceAllUsesWith(out);
    if (hy) n->output(1)->replaceAllUsesWith(hy);
    if (cy) n->output(2)->replaceAllUsesWith(cy);
    n->destroy();
    for (Node *l : {params, hl})
        if (l->kind() == prim::ListConstruct && !l->output()->hasUses()) l->destroy();
}

// Rewrite node n into its layers and time steps (the plan checked).
void rewrite(Model &M, const Plan &p) {
    if (p.onednn) return rewrite_onednn(M, p);
    Node *n = p.n;
    auto &g = *M.graph;
    torch::jit::WithInsertPoint guard(n);
    Emit e{g, n};
    const bool has_biases = p.has_biases, train = p.train, batch_first = p.batch_first;
    const int64_t layers = p.layers;
    const double dropout = p.dropout;
    const int dirs = p.dirs();
    Node *params = n->input(2)->node();
    Value *none = g.insertConstant(IValue());
    std::vector<Weights> ws;
    for (size_t i = 0; i < params->inputs().size(); i += has_biases ? 4 : 2)
        ws.push_back({params->input(i), params->input(i + 1), has_biases ? params->input(i + 2) : none,
                      has_biases ? params->input(i + 3) : none});
    size_t total = (size_t)(layers * dirs);
    Value *input = batch_first ? e.op(aten::transpose, {n->input(0), 0, 1}) : n->input(0);
    std::vector<Value *> hx, cx;
    if (p.cell == Cell::LSTM) {
        Node *hl = n->input(1)->node();
        hx = e.unpack(e.op(aten::unbind, {hl->input(0), 0}), total);
        cx = e.unpack(e.op(aten::unbind, {hl->input(1), 0}), total);
    } else {
        hx = e.unpack(e.op(aten::unbind, {n->input(1), 0}), total);
    }
    std::vector<Value *> final_h(total), final_c(total);
    Value *layer_input = input;
    for (int64_t l = 0; l < layers; l++) {
        std::vector<Value *> dir_out;
        for (int d = 0; d < dirs; d++) {
            size_t idx = (size_t)(l * dirs + d);
            const Weights &w = ws[idx];
            Value *xw = e.op(aten::linear, {layer_input, w.w_ih, w.b_ih});
            Value *h = hx[idx], *c = p.cell == Cell::LSTM ? cx[idx] : nullptr;
            std::vector<Value *> outs;
            for (int64_t s = 0; s < p.steps; s++) {
                // ATen unbinds xw; one select per step here: a step's backward
                // then sends xw one zero-filled gradient (select_backward), not
                // a zero slice per other step stacked (unbind's backward).
                Value *x = e.op(aten::select, {xw, 0, d ? p.steps - 1 - s : s});
                if (p.cell == Cell::LSTM) lstm_step(e, x, h, c, w);
                else if (p.cell == Cell::GRU) gru_step(e, x, h, w, p.hidden);
                else simple_step(e, x, h, w, p.cell);
                outs.push_back(h);
            }
            if (d) std::reverse(outs.begin(), outs.end());
            final_h[idx] = h;
            final_c[idx] = c;
            dir_out.push_back(e.op(aten::stack, {e.list(outs), 0}));
        }
        layer_input = dirs == 1 ? dir_out[0] : e.op(aten::cat, {e.list(dir_out), 2});
        if (dropout != 0 && train && l < layers - 1) layer_input = e.op(aten::dropout, {layer_input, dropout, true});
    }
    // Only what is read: the final states of an LM are usually dropped.
    Value *hy = n->outputs()[1]->hasUses() ? e.op(aten::stack, {e.list(final_h), 0}) : nullptr;
    Value *cy = p.cell == Cell::LSTM && n->outputs()[2]->hasUses() ? e.op(aten::stack, {e.list(final_c), 0}) : nullptr;
    Value *out = batch_first ? e.op(aten::transpose, {layer_input, 0, 1}) : layer_input;
    n->output(0)->replaceAllUsesWith(out);
    if (hy) n->output(1)->replaceAllUsesWith(hy);
    if (cy) n->output(2)->replaceAllUsesWith(cy);
    Node *hl = n->input(1)->node();
    n->destroy();
    for (Node *l : {params, hl})
        if (l->kind() == prim::ListConstruct && !l->output()->hasUses()) l->destroy();
}

} // namespace

// The values of the graph's nodes up to `last` on the example inputs, without
// autograd, leaving the generator and the module's buffers (BatchNorm
// statistics) as they were (empty when the inputs do not match the graph's).
static void pre_run(Model &M, const Node *last, std::unordered_map<const Value *, IValue> &env) {
    at::NoGradGuard ng;
    at::Tensor rng = rng_get(M.cuda);
    std::vector<std::pair<at::Tensor, at::Tensor>> bufs;
    for (const at::Tensor &b : M.module.buffers()) bufs.push_back({b, b.clone()});
    auto ins = M.graph->inputs();
    env[ins[0]] = M.module._ivalue();
    for (size_t i = 1; i < ins.size() && i - 1 < M.inputs.size(); i++) env[ins[i]] = M.inputs[i - 1];
    if (ins.size() - 1 == M.inputs.size()) {
        for (Node *n : M.graph->nodes()) {
            Stack st;
            for (const Value *u : n->inputs()) st.push_back(env.at(u));
            try {
                run_node(M, n, st);
            } catch (const c10::Error &err) {
                fail(RK_EINPUT, "running " + where(n) + " on the example inputs failed: " +
                                    err.what_without_backtrace());
            }
            for (size_t i = 0; i < st.size() && i < n->outputs().size(); i++) env[n->output(i)] = st[i];
            if (n == last) break;
        }
    }
    rng_set(M.cuda, rng);
    for (auto &b : bufs) b.first.copy_(b.second);
}

// ------------------------------------------------ nn.GRUCell / nn.LSTMCell
// torch.jit.trace records a cell module's call as ATen's cell code (RNN.cpp,
// GRUCell / LSTMCell::operator()): Linear projections, `unsafe_chunk` of the
// gates and in-place ops (add_, sigmoid_, tanh_, mul_) on its pieces, which
// autograd does not track as views of the gates (analyse() refuses in-place
// ops on such pieces).  Where the graph is exactly that code, it becomes
// gru_step / lstm_step above: the same kernels on the same strided pieces,
// bit-equal values and gradients, as for aten::gru / aten::lstm layers.

namespace {

// The node using v, when v has exactly one use.
Node *only_use(const Value *v) { return v->uses().size() == 1 ? v->uses()[0].user : nullptr; }

bool is_int_const(const Value *v, int64_t want) {
    auto x = torch::jit::toIValue(v);
    return x && ((x->isInt() && x->toInt() == want) || (x->isDouble() && x->toDouble() == (double)want));
}

// v is piece k of `unsafe_chunk(src, n, 1)` unpacked by a ListUnpack (the
// list read by nothing else): its chunk and unpack nodes.
bool unsafe_piece(Value *v, int64_t n, size_t k, Node *&chunk, Node *&unpack) {
    Node *u = v->node();
    if (u->kind() != prim::ListUnpack || u->outputs().size() != (size_t)n || u->output(k) != v) return false;
    Node *c = u->input(0)->node();
    if (c->kind() != aten::unsafe_chunk || !is_int_const(c->input(1), n) || !is_int_const(c->input(2), 1) ||
        only_use(c->output()) != u)
        return false;
    for (const Value *o : u->outputs())
        if (o->uses().size() != 1) return false;
    chunk = c;
    unpack = u;
    return true;
}

bool op_is(const Node *n, c10::Symbol k, const Value *a0, const Value *a1 = nullptr) {
    return n && n->kind() == k && n->input(0) == a0 && (!a1 || (n->inputs().size() > 1 && n->input(1) == a1)) &&
           (k != aten::add_ && k != aten::add && k != aten::sub ? true : is_int_const(n->input(2), 1));
}

// The tensor a chain of prim::GetAttr from the module yields (a parameter).
bool attr_tensor(Model &M, const Value *v, at::Tensor &out) {
    std::vector<std::string> names;
    while (v != M.graph->inputs()[0]) {
        const Node *n = v->node();
        if (n->kind() != prim::GetAttr) return false;
        names.push_back(n->s(c10::attr::name));
        v = n->input(0);
    }
    IValue x = M.module._ivalue();
    for (size_t i = names.size(); i-- > 0;) {
        if (!x.isObject()) return false;
        auto obj = x.toObject();
        if (!obj->type()->hasAttribute(names[i])) return false;
        x = obj->getAttr(names[i]);
    }
    if (!x.isTensor()) return false;
    out = x.toTensor();
    return true;
}

void destroy_all(std::initializer_list<Node *> ns) {
    for (Node *n : ns) n->destroy();
}

// GRUCell::operator(): from the hidden projection's unsafe_chunk c2; *gone:
// the input projection's chunk, destroyed with the cell.
bool rewrite_gru_cell(Model &M, Node *c2, Node **gone) {
    Node *H = c2->input(0)->node();
    if (H->kind() != aten::linear || only_use(H->output()) != c2 || !is_int_const(c2->input(1), 3) ||
        !is_int_const(c2->input(2), 1))
        return false;
    Node *u2 = only_use(c2->output());
    if (!u2 || u2->kind() != prim::ListUnpack || u2->outputs().size() != 3) return false;
    Node *chunk2, *unpack2;
    if (!unsafe_piece(u2->output(0), 3, 0, chunk2, unpack2)) return false;
    Value *hx = H->input(0), *h_r = u2->output(0), *h_z = u2->output(1), *h_n = u2->output(2);
    Node *A1 = only_use(h_r), *A2 = only_use(h_z), *M1 = only_use(h_n);
    if (!op_is(A1, aten::add_, h_r) || !op_is(A2, aten::add_, h_z)) return false;
    Node *c1, *u1, *c1b, *u1b, *c1c, *u1c;
    if (!unsafe_piece(A1->input(1), 3, 0, c1, u1) || !unsafe_piece(A2->input(1), 3, 1, c1b, u1b) || c1b != c1)
        return false;
    Value *i_n = u1->output(2);
    Node *S1 = only_use(A1->output()), *S2 = only_use(A2->output());
    if (!op_is(S1, aten::sigmoid_, A1->output()) || !op_is(S2, aten::sigmoid_, A2->output())) return false;
    if (!op_is(M1, aten::mul_, h_n, S1->output()) || only_use(S1->output()) != M1) return false;
    Node *A3 = only_use(M1->output());
    if (!op_is(A3, aten::add, i_n, M1->output()) || !unsafe_piece(i_n, 3, 2, c1c, u1c)) return false;
    Node *T = only_use(A3->output());
    if (!op_is(T, aten::tanh_, A3->output()) || T->output()->uses().size() != 2) return false;
    Node *SUB = nullptr, *OUT = nullptr;
    for (const auto &use : T->output()->uses())
        if (use.user->kind() == aten::sub) SUB = use.user;
        else OUT = use.user;
    if (!op_is(SUB, aten::sub, hx, T->output())) return false;
    Node *M2 = only_use(SUB->output());
    if (!op_is(M2, aten::mul_, SUB->output(), S2->output()) || only_use(S2->output()) != M2) return false;
    if (!op_is(OUT, aten::add_, M2->output(), T->output()) || only_use(M2->output()) != OUT) return false;
    at::Tensor w_hh;
    if (!attr_tensor(M, H->input(1), w_hh) || w_hh.dim() != 2 || w_hh.size(0) != 3 * w_hh.size(1)) return false;
    auto &g = *M.graph;
    Value *X = c1->input(0), *h = hx;
    {
        torch::jit::WithInsertPoint guard(OUT);
        Emit e{g, OUT};
        Weights w{nullptr, H->input(1), nullptr, H->input(2)};
        gru_step(e, X, h, w, w_hh.size(1));
    }
    OUT->output()->replaceAllUsesWith(h);
    destroy_all({OUT, M2, SUB, T, A3, M1, S2, A2, S1, A1, u2, c2, H, u1, c1});
    *gone = c1;
    return true;
}

// LSTMCell::operator(): from the gates' unsafe_chunk c.
bool rewrite_lstm_cell(Model &M, Node *c) {
    Node *G = c->input(0)->node();
    if (G->kind() != aten::add_ || only_use(G->output()) != c || !is_int_const(G->input(2), 1)) return false;
    Node *H = G->input(0)->node();
    if (H->kind() != aten::linear || only_use(H->output()) != G) return false;
    Node *u = only_use(c->output()), *chunk, *unpack;
    if (!u || !unsafe_piece(u->output(0), 4, 0, chunk, unpack) || chunk != c) return false;
    Node *S0 = only_use(u->output(0)), *S1 = only_use(u->output(1)), *T2 = only_use(u->output(2)),
         *S3 = only_use(u->output(3));
    if (!op_is(S0, aten::sigmoid_, u->output(0)) || !op_is(S1, aten::sigmoid_, u->output(1)) ||
        !op_is(T2, aten::tanh_, u->output(2)) || !op_is(S3, aten::sigmoid_, u->output(3)))
        return false;
    Node *MIC = only_use(S0->output()), *MFC = only_use(S1->output()), *HOUT = only_use(S3->output());
    if (!op_is(MIC, aten::mul, S0->output(), T2->output()) || only_use(T2->output()) != MIC) return false;
    if (!MFC || MFC->kind() != aten::mul || MFC->input(0) != S1->output()) return false;
    Node *CY = only_use(MFC->output());
    if (!op_is(CY, aten::add_, MFC->output(), MIC->output()) || only_use(MIC->output()) != CY) return false;
    if (!HOUT || HOUT->kind() != aten::mul || HOUT->input(0) != S3->output()) return false;
    Node *TC = HOUT->input(1)->node();
    if (!op_is(TC, aten::tanh, CY->output()) || only_use(TC->output()) != HOUT) return false;
    at::Tensor w_hh;
    if (!attr_tensor(M, H->input(1), w_hh) || w_hh.dim() != 2 || w_hh.size(0) != 4 * w_hh.size(1)) return false;
    auto &g = *M.graph;
    Value *X = G->input(1), *h = H->input(0), *cc = MFC->input(1);
    {
        torch::jit::WithInsertPoint guard(CY);
        Emit e{g, CY};
        Weights w{nullptr, H->input(1), nullptr, H->input(2)};
        lstm_step(e, X, h, cc, w);
    }
    HOUT->output()->replaceAllUsesWith(h);
    CY->output()->replaceAllUsesWith(cc);
    destroy_all({HOUT, TC, CY, MFC, MIC, S3, T2, S1, S0, u, c, G, H});
    return true;
}

} // namespace

static void expand_rnn_cells(Model &M) {
    std::vector<Node *> chunks;
    for (Node *n : M.graph->nodes())
        if (n->kind() == aten::unsafe_chunk) chunks.push_back(n);
    std::set<Node *> gone; // (a GRU cell's input chunk, destroyed with it, may come later in the list)
    for (Node *c : chunks) {
        if (gone.count(c)) continue;
        Node *c1 = nullptr;
        if ((is_int_const(c->input(1), 3) && rewrite_gru_cell(M, c, &c1)) ||
            (is_int_const(c->input(1), 4) && rewrite_lstm_cell(M, c)))
            M.st.rnn_cells++;
        if (c1) gone.insert(c1);
    }
}

void expand_rnns(Model &M) {
    expand_rnn_cells(M);
    std::vector<Node *> rnns;
    Cell cell;
    for (Node *n : M.graph->nodes())
        if (rnn_kind(n, cell)) rnns.push_back(n);
    if (rnns.empty()) return;
    // The sequence length and dtype come from the values: run the graph up
    // to the last RNN node once.
    std::unordered_map<const Value *, IValue> env;
    pre_run(M, rnns.back(), env);
    std::vector<Plan> todo;
    for (Node *n : rnns) {
        Plan p{}; // zeroed; n and cell here, the rest by rnn_kind() and check()
        p.n = n;
        p.cell = Cell::LSTM;
        rnn_kind(n, p.cell);
        std::string why = env.count(n->input(0)) ? check(M, n, p.cell, env, p) : "the model's inputs do not reach it";
        if (!why.empty()) {
            M.st.rnn_kept++;
            if (!M.st.rnn_warning[0])
                snprintf(M.st.rnn_warning, sizeof M.st.rnn_warning, "%s kept whole (one node, no recomputation "
                         "inside): %s", where(n).c_str(), why.c_str());
            continue;
        }
        if (p.onednn) {
            M.st.rnn_layered++;
            if (!M.st.rnn_warning[0])
                snprintf(M.st.rnn_warning, sizeof M.st.rnn_warning, "%s split into its layers only (one node "
                         "per layer and direction, no recomputation inside a layer): on CPU, float32 LSTMs run "
                         "oneDNN's kernel (mkldnn_rnn_layer) in the plain step, whose sums over the time steps "
                         "separate ATen ops do not reproduce bit for bit (float64 is expanded into its steps)",
                         where(n).c_str());
        } else {
            M.st.rnn_expanded++;
            M.st.rnn_steps += (int)p.steps;
        }
        todo.push_back(p);
    }
    env.clear();
    M.ops.clear(); // the pre-run's operations (nodes destroyed below)
    for (const Plan &p : todo) rewrite(M, p);
}

} // namespace rkx
