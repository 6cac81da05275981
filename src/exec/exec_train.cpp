// exec_train.cpp — training sessions (rk_train_* in rk_exec.h): load the model,
// its chain and a schedule once, then run step after step: the step's inputs
// (a .npy stream or random), forward and backward as the schedule says (or
// the plain PyTorch step, the reference), a libtorch optimizer (SGD with
// momentum, Adam, AdamW), the measured activation peak of every step; save
// the trained model atomically; hash parameters and buffers for comparisons.
// State the plain forward changes once per step (BatchNorm running
// statistics and num_batches_tracked, the generator) changes once per step
// here too: see Runtime::exec_program and Model::static_program.
#include <torch/script.h>
#include <torch/optim.h>

#include <memory>
#include <sstream>

#include "exec_internal.h"
#include "rk_exec_torch.h"

struct rk_train {
    rkx::Model M;
    std::string model_path;
    uint64_t seed = 0;
    bool plain = true;
    std::vector<rk_op> ops;
    std::vector<rkx::ClassGraph> cgs;
    std::vector<at::Tensor> params;
    std::unique_ptr<torch::optim::Optimizer> opt;
    rk_train_options to{};
    std::vector<rkx::NpyStream> data;
    int steps = 0;
    int loss_op = -1;                   // index of the schedule's loss node
    at::Tensor rng_before;              // the generator's state when the session opened
    std::set<std::string> nondeterministic; // kernels without a deterministic implementation, all steps
    std::unique_ptr<rkx::Runtime> half; // a step split at the loss (rk_exec_torch.h), between its halves
};

namespace rkx {

// The analysis run of load_model ran the forward once (BatchNorm updated its
// running statistics): put the file's buffers back.
static void reset_buffers(rk_train &T) {
    torch::jit::Module fresh = is_export_archive(T.model_path) ? load_exported(T.model_path)
                                                                : torch::jit::load(T.model_path);
    std::map<std::string, at::Tensor> file;
    for (const auto &b : fresh.named_buffers()) file[b.name] = b.value;
    at::NoGradGuard ng;
    for (const auto &b : T.M.module.named_buffers()) {
        auto it = file.find(b.name);
        if (it == file.end() || !it->second.sizes().equals(b.value.sizes()))
            fail(RK_EFAIL, "buffer " + b.name + " differs between two loads of " + T.model_path);
        b.value.copy_(it->second);
    }
}

static void make_optimizer(rk_train &T) {
    const rk_train_options &o = T.to;
    if (!(o.lr > 0)) fail(RK_EINPUT, "the learning rate must be > 0");
    if (!(o.weight_decay >= 0)) fail(RK_EINPUT, "the weight decay must be >= 0");
    if (!(o.momentum >= 0) || o.momentum >= 1) fail(RK_EINPUT, "the momentum must be in [0, 1)");
    std::vector<at::Tensor> ps;
    for (auto &p : T.params)
        if (p.requires_grad()) ps.push_back(p);
    switch (o.optimizer) {
    case RK_OPTIM_SGD:
        T.opt = std::make_unique<torch::optim::SGD>(
            ps, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
        break;
    case RK_OPTIM_ADAM:
        T.opt = std::make_unique<torch::optim::Adam>(ps, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
        break;
    case RK_OPTIM_ADAMW:
        T.opt = std::make_unique<torch::optim::AdamW>(ps,
                                                      torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
        break;
    default: fail(RK_EINPUT, "unknown optimizer " + std::to_string((int)o.optimizer));
    }
}

static void open_session(rk_train &T, const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                         const rk_train_options *to) {
    if (!o || !o->model_path || !ch || !to) fail(RK_EINPUT, "rk_train_open: missing options, model or chain");
    T.model_path = o->model_path;
    T.seed = o->seed;
    T.to = *to;
    if (to->n_data < 0 || to->n_data > RK_EXEC_MAX_INPUTS) fail(RK_EINPUT, "bad number of data files");
    select_device(T.M, o->device, o->memory_cap);
    T.rng_before = rng_get(T.M.cuda);
    load_model(T.M, o);
    T.cgs = match_chain(T.M, ch);
    if (s) {
        T.plain = false;
        T.ops.assign(s->ops, s->ops + s->n_ops);
        for (int i = 0; i < s->n_ops && T.loss_op < 0; i++) {
            const rk_op &op = s->ops[i];
            if (op.kind == RK_OP_RUN && op.block >= 0 && op.block < ch->n_blocks) {
                const ClassGraph &cg = T.cgs[T.M.block_class[op.block]];
                if (op.node >= 0 && op.node < (int)cg.cmap.size() && cg.cmap[op.node].kind == 2) T.loss_op = i;
            }
        }
        if (T.loss_op < 0) fail(RK_EINPUT, "the schedule never runs the loss node");
    }
    reset_buffers(T);
    T.params = params_of(T.M);
    if (to->n_data > 0) {
        if ((size_t)to->n_data != T.M.inputs.size())
            fail(RK_EINPUT, "the model takes " + std::to_string(T.M.inputs.size()) + " input(s), " +
                                std::to_string(to->n_data) + " data file(s) given (one .npy per input)");
        for (int i = 0; i < to->n_data; i++) {
            if (!to->data[i]) fail(RK_EINPUT, "data file " + std::to_string(i) + " missing");
            T.data.push_back(npy_open(to->data[i], T.M.inputs[i], i));
        }
    }
    for (int i = 0; i < to->n_data; i++) T.to.data[i] = nullptr; // the paths live in T.data
    if (to->optimizer != RK_OPTIM_NONE) make_optimizer(T);
    if (to->keep_generator) rng_set(T.M.cuda, T.rng_before);
    else rng_seed(T.M.cuda, o->seed); // the analysis run drew from the generator: start as plain training would
}

// Step i's inputs: item i of the data streams, or random values drawn from
// (seed, i) for the floating-point inputs; integer and boolean ones (token
// ids, attention masks, labels with -100, EmbeddingBag offsets) are the
// example's: random values broke their ranges and structure (ids 0-9 put a
// token type past a 2-row embedding, a mask of 0-9 made (1 - m) * finfo.min
// infinite and the loss NaN).
static std::vector<at::Tensor> step_inputs(rk_train &T, int i) {
    std::vector<at::Tensor> in;
    if (!T.data.empty()) {
        for (auto &d : T.data) in.push_back(npy_read(d, i));
        return in;
    }
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(T.seed * 1000003 + 7919 + (uint64_t)i);
    for (auto &like : T.M.inputs) {
        at::ScalarType dt = like.scalar_type();
        auto sh = like.sizes();
        if (at::isFloatingType(dt)) in.push_back(at::randn(sh, g, at::TensorOptions().dtype(at::kDouble)).to(dt));
        else in.push_back(like.clone());
    }
    return in;
}

// Bytes of the optimizer's state tensors (every libtorch optimizer rkmate opens).
static int64_t optimizer_bytes(torch::optim::Optimizer &opt) {
    int64_t n = 0;
    auto add = [&](const at::Tensor &t) {
        if (t.defined()) n += t.numel() * t.element_size();
    };
    for (auto &kv : opt.state()) {
        torch::optim::OptimizerParamState *st = kv.second.get();
        if (auto *a = dynamic_cast<torch::optim::AdamParamState *>(st)) {
            add(a->exp_avg());
            add(a->exp_avg_sq());
            add(a->max_exp_avg_sq());
        } else if (auto *w = dynamic_cast<torch::optim::AdamWParamState *>(st)) {
            add(w->exp_avg());
            add(w->exp_avg_sq());
            add(w->max_exp_avg_sq());
        } else if (auto *s = dynamic_cast<torch::optim::SGDParamState *>(st)) {
            add(s->momentum_buffer());
        }
    }
    return n;
}

static void train_step(rk_train &T, rk_train_step_result *r) {
    Model &M = T.M;
    Mem A(M);
    NondeterminismWatch watch(&T.nondeterministic);
    std::vector<at::Tensor> in = step_inputs(T, T.steps);
    int64_t input_bytes = 0;
    for (size_t i = 0; i < in.size(); i++) {
        M.inputs[i] = in[i].to(M.dev);
        input_bytes += in[i].numel() * in[i].element_size();
    }
    in.clear();
    clear_param_grads(T.params);
    int64_t base = A.cur();
    ActivationPeak ap(A, T.params); // .grad is not activation memory
    double t0 = A.now();
    double loss = 0;
    if (T.plain) {
        std::vector<IValue> args(M.inputs.begin(), M.inputs.end());
        // tuples, lists and dicts joined as the analysis joins them (the
        // loss over every floating-point output requiring grad)
        at::Tensor y = join_outputs(M.module.forward(args));
        at::Tensor l = T.to.loss == RK_LOSS_MEAN ? y.mean() : y.sum();
        y = at::Tensor();
        loss = l.item<double>();
        backward_measured(l);
    } else {
        run_static_program(M);
        rk_schedule s{};
        s.n_ops = (int)T.ops.size();
        s.ops = T.ops.data();
        Runtime R(M);
        R.live_rng = true;
        loss = run_schedule_ops(M, T.cgs, &s, T.to.loss, R, nullptr);
    }
    int64_t peak = ap.finish() - base + input_bytes;
    if (!T.opt) fail(RK_EINPUT, "this session has no optimizer (RK_OPTIM_NONE): step it with rk_exec_torch.h");
    T.opt->step();
    double t1 = A.now();
    T.steps++;
    r->step = T.steps;
    r->loss = loss;
    r->time_us = t1 - t0;
    r->peak = peak;
    r->allocated = A.cur();
    param_memory(M, &r->param_bytes, &r->param_grad_bytes, &r->buffer_bytes);
    r->optimizer_bytes = optimizer_bytes(*T.opt);
    watch.copy_names(r->nondeterministic_kernels, sizeof r->nondeterministic_kernels);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_tensors(const std::vector<std::pair<std::string, at::Tensor>> &ts) {
    PauseTracking pause;
    uint64_t h = 1469598103934665603ull;
    for (auto &nt : ts) {
        h = fnv(h, nt.first.data(), nt.first.size() + 1);
        at::Tensor c = nt.second.detach().to(at::kCPU).contiguous();
        h = fnv(h, c.data_ptr(), (size_t)(c.numel() * c.element_size()));
    }
    return h;
}

static void digest(rk_train &T, uint64_t *p, uint64_t *b) {
    std::vector<std::pair<std::string, at::Tensor>> ps, bs;
    for (const auto &x : T.M.module.named_parameters()) ps.push_back({x.name, x.value});
    for (const auto &x : T.M.module.named_buffers()) bs.push_back({x.name, x.value});
    if (p) *p = hash_tensors(ps);
    if (b) *b = hash_tensors(bs);
}

static void save(rk_train &T, const char *path) {
    if (!path) fail(RK_EINPUT, "no path to save the model to");
    if (is_export_archive(T.model_path))
        fail(RK_EINPUT, T.model_path + " is a torch.export archive: rkmate cannot write that format (train the "
                                        "TorchScript model, torch.jit.trace(...).save, to save it)");
    std::ostringstream os;
    {
        PauseTracking pause;
        T.M.module.save(os);
    }
    std::string bytes = os.str();
    rk_error e;
    e.msg[0] = 0;
    rk_status st = rk_write_file_atomic(path, bytes.data(), bytes.size(), &e);
    if (st != RK_OK) fail(st, e.msg);
}

// ------------------------------------------------ a step split at the loss

static void put_inputs(rk_train &T, const std::vector<at::Tensor> &in) {
    Model &M = T.M;
    if (in.size() != M.inputs.size())
        fail(RK_EINPUT, "the model takes " + std::to_string(M.inputs.size()) + " input(s), got " +
                            std::to_string(in.size()));
    for (size_t i = 0; i < in.size(); i++) {
        const at::Tensor &x = in[i], &like = M.inputs[i];
        if (!x.defined() || x.sizes() != like.sizes() || x.scalar_type() != like.scalar_type())
            fail(RK_EINPUT, "input " + std::to_string(i) + ": expected " + c10::toString(like.scalar_type()) + " " +
                                c10::str(like.sizes()) + " (the traced shape), got " +
                                (x.defined() ? std::string(c10::toString(x.scalar_type())) + " " + c10::str(x.sizes())
                                             : std::string("nothing")));
        // A copy: the schedule may forget (free) an input's data.
        M.inputs[i] = x.detach().to(M.dev, /*non_blocking=*/false, /*copy=*/true);
    }
}

at::Tensor forward_half(rk_train &T, const std::vector<at::Tensor> &in) {
    Model &M = T.M;
    at::AutoGradMode grad(true); // called from an autograd.Function's forward (no grad there)
    T.half.reset();
    put_inputs(T, in);
    for (auto &p : T.params) p.mutable_grad() = at::Tensor();
    if (T.plain) fail(RK_EINPUT, "a session without a schedule cannot split a step");
    run_static_program(M);
    rk_schedule s{};
    s.n_ops = (int)T.ops.size();
    s.ops = T.ops.data();
    T.half = std::make_unique<Runtime>(M);
    T.half->live_rng = true;
    run_schedule_ops(M, T.cgs, &s, T.to.loss, *T.half, nullptr, 0, T.loss_op);
    // A copy: the schedule frees the output's data during the backward.
    return T.half->materialize(M.output).toTensor().detach().clone();
}

std::vector<at::Tensor> backward_half(rk_train &T, const at::Tensor &grad_out) {
    Model &M = T.M;
    if (!T.half) fail(RK_EINPUT, "backward without a forward (or twice)");
    at::AutoGradMode grad(true); // recomputations build autograd graphs
    at::Tensor g = grad_out.to(M.dev);
    rk_schedule s{};
    s.n_ops = (int)T.ops.size();
    s.ops = T.ops.data();
    run_schedule_ops(M, T.cgs, &s, T.to.loss, *T.half, nullptr, T.loss_op, -1, &g);
    T.half.reset();
    std::vector<at::Tensor> grads;
    for (auto &p : T.params) {
        grads.push_back(p.grad());
        p.mutable_grad() = at::Tensor();
    }
    return grads;
}

} // namespace rkx

// ------------------------------------------------ rk_exec_torch.h

static void rethrow(rk_status st, const rk_error &e) {
    if (st != RK_OK) throw std::runtime_error(std::string("rkmate: ") + e.msg);
}

at::Tensor rk_train_forward(rk_train *t, const std::vector<at::Tensor> &inputs) {
    rk_error e;
    e.msg[0] = 0;
    at::Tensor y;
    rethrow(rkx::guarded(&e, [&] { y = rkx::forward_half(*t, inputs); }), e);
    return y;
}

std::vector<at::Tensor> rk_train_backward(rk_train *t, const at::Tensor &grad_out) {
    rk_error e;
    e.msg[0] = 0;
    std::vector<at::Tensor> g;
    rethrow(rkx::guarded(&e, [&] { g = rkx::backward_half(*t, grad_out); }), e);
    return g;
}

std::vector<std::pair<std::string, at::Tensor>> rk_train_tensors(rk_train *t, bool buffers) {
    std::vector<std::pair<std::string, at::Tensor>> out;
    if (buffers)
        for (const auto &b : t->M.module.named_buffers()) out.push_back({b.name, b.value});
    else
        for (const auto &p : t->M.module.named_parameters()) out.push_back({p.name, p.value});
    return out;
}

extern "C" rk_status rk_train_open(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                                   const rk_train_options *to, rk_train **out, rk_error *err) {
    *out = nullptr;
    if (s && ch) {
        rk_sim_result sim;
        rk_status st = rk_simulate(ch, s, &sim, err);
        if (st != RK_OK) return st;
    }
    rk_train *t = nullptr;
    rk_status st = rkx::guarded(err, [&] {
        auto T = std::make_unique<rk_train>();
        rkx::open_session(*T, o, ch, s, to);
        t = T.release();
    });
    *out = t;
    return st;
}

extern "C" rk_status rk_train_step(rk_train *t, rk_train_step_result *r, rk_error *err) {
    *r = rk_train_step_result{};
    return rkx::guarded(err, [&] { rkx::train_step(*t, r); });
}

extern "C" rk_status rk_train_save(rk_train *t, const char *path, rk_error *err) {
    return rkx::guarded(err, [&] { rkx::save(*t, path); });
}

extern "C" rk_status rk_train_digest(rk_train *t, uint64_t *params, uint64_t *buffers, rk_error *err) {
    return rkx::guarded(err, [&] { rkx::digest(*t, params, buffers); });
}

extern "C" void rk_train_free(rk_train *t) { delete t; }
