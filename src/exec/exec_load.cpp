// exec_load.cpp — loading: the example inputs (random from --seed, or a
// torch.save file users write), the TorchScript module (torch.jit.trace(...)
// .save of any torch 2.x) with its forward graph inlined, and the whole
// front-end pass that turns it into a Model (analysis run, simplified graph,
// blocks, classes); also the plain PyTorch step the executor is compared with.
#include <torch/script.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "exec_internal.h"

namespace rkx {

// ------------------------------------------------------------- input specs

static at::ScalarType parse_dtype(const std::string &s) {
    static const std::map<std::string, at::ScalarType> m = {
        {"float32", at::kFloat}, {"float", at::kFloat},       {"float64", at::kDouble}, {"double", at::kDouble},
        {"float16", at::kHalf},  {"bfloat16", at::kBFloat16}, {"int64", at::kLong},     {"int32", at::kInt},
        {"int16", at::kShort},   {"int8", at::kChar},         {"uint8", at::kByte},     {"bool", at::kBool}};
    auto it = m.find(s);
    if (it == m.end()) fail(RK_EINPUT, "unknown dtype '" + s + "' (expected float32, float64, int64, ...)");
    return it->second;
}

struct InputSpec {
    std::vector<int64_t> shape;
    at::ScalarType dtype;
};

static InputSpec parse_spec(const std::string &text) {
    auto c = text.rfind(':');
    if (c == std::string::npos) fail(RK_EINPUT, "--input '" + text + "': expected SHAPE:DTYPE such as 4x64:int64");
    InputSpec sp;
    sp.dtype = parse_dtype(text.substr(c + 1));
    std::string sh = text.substr(0, c);
    size_t i = 0;
    while (i < sh.size()) {
        size_t j = i;
        while (j < sh.size() && isdigit((unsigned char)sh[j])) j++;
        if (j == i || (j < sh.size() && sh[j] != 'x' && sh[j] != ','))
            fail(RK_EINPUT, "--input '" + text + "': shape must be sizes joined by 'x', such as 4x64");
        sp.shape.push_back(std::stoll(sh.substr(i, j - i)));
        i = j + 1;
        if (j + 1 == sh.size()) fail(RK_EINPUT, "--input '" + text + "': shape ends with a separator");
    }
    return sp;
}

// "4x64:int64": a tensor as --input writes it.
static std::string spec_text(const at::Tensor &t) {
    static const std::map<at::ScalarType, std::string> names = {
        {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kHalf, "float16"}, {at::kBFloat16, "bfloat16"},
        {at::kLong, "int64"},    {at::kInt, "int32"},      {at::kShort, "int16"},  {at::kChar, "int8"},
        {at::kByte, "uint8"},    {at::kBool, "bool"}};
    std::string s;
    for (int64_t d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
    auto it = names.find(t.scalar_type());
    return s + ":" + (it != names.end() ? it->second : std::string(c10::toString(t.scalar_type())));
}

// The tensors of a torch.save file: a tensor, or a list or tuple of tensors
// (what `torch.save([x, y], "inputs.pt")` writes; libtorch >= 2 reads the zip
// format of every torch.save since 1.6).
static std::vector<at::Tensor> read_input_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(RK_EINPUT, path + ": cannot open the input file");
    std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (buf.size() < 4 || buf[0] != 'P' || buf[1] != 'K')
        fail(RK_EINPUT, path + ": not a torch.save file (expected the zip archive torch.save writes, holding a "
                               "tensor or a list of tensors)");
    IValue v;
    try {
        v = torch::jit::pickle_load(buf);
    } catch (const c10::Error &e) {
        fail(RK_EINPUT, path + ": cannot read it as a torch.save file: " + e.what_without_backtrace());
    } catch (const std::exception &e) {
        fail(RK_EINPUT, path + ": cannot read it as a torch.save file: " + e.what());
    }
    std::vector<IValue> items;
    if (v.isTensor()) items.push_back(v);
    else if (v.isList()) for (const IValue &e : v.toListRef()) items.push_back(e);
    else if (v.isTuple()) for (const IValue &e : v.toTupleRef().elements()) items.push_back(e);
    else fail(RK_EINPUT, path + ": holds a " + v.tagKind() + "; expected a tensor or a list or tuple of tensors");
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < items.size(); i++) {
        if (!items[i].isTensor() || !items[i].toTensor().defined())
            fail(RK_EINPUT, path + ": item " + std::to_string(i) + " is a " + items[i].tagKind() +
                                ", not a tensor");
        out.push_back(items[i].toTensor().detach().to(at::kCPU).contiguous());
    }
    if (out.empty()) fail(RK_EINPUT, path + ": holds no tensor");
    if (out.size() > RK_EXEC_MAX_INPUTS)
        fail(RK_EINPUT, path + ": " + std::to_string(out.size()) + " tensors, at most " +
                            std::to_string(RK_EXEC_MAX_INPUTS) + " inputs are supported");
    return out;
}

std::vector<at::Tensor> make_inputs(const rk_exec_options *o) {
    std::vector<InputSpec> specs;
    for (int i = 0; i < o->n_inputs; i++) specs.push_back(parse_spec(o->inputs[i]));
    if (o->input_file) {
        std::vector<at::Tensor> out = read_input_file(o->input_file);
        if (!specs.empty()) { // --input given too: it must describe the file
            bool same = specs.size() == out.size();
            for (size_t i = 0; same && i < out.size(); i++)
                same = out[i].sizes().vec() == specs[i].shape && out[i].scalar_type() == specs[i].dtype;
            if (!same) {
                std::string have;
                for (auto &t : out) have += (have.empty() ? "" : " ") + spec_text(t);
                fail(RK_EINPUT, std::string(o->input_file) + " holds " + have + ", not what --input says");
            }
        }
        return out;
    }
    if (specs.empty()) fail(RK_EINPUT, "no inputs: give --input SHAPE:DTYPE or --input-file INPUTS.pt");
    std::vector<at::Tensor> out;
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(o->seed + 1000003);
    for (auto &sp : specs) {
        at::TensorOptions to = at::TensorOptions().dtype(sp.dtype);
        if (at::isFloatingType(sp.dtype))
            out.push_back(at::randn(sp.shape, g, at::TensorOptions().dtype(at::kDouble)).to(sp.dtype));
        else if (sp.dtype == at::kBool)
            out.push_back(at::randint(0, 2, sp.shape, g, at::TensorOptions().dtype(at::kLong)).to(at::kBool));
        else
            out.push_back(at::randint(0, 10, sp.shape, g, to));
    }
    return out;
}

// -------------------------------------------------------------- the model

// A model traced on the CPU and run on a GPU: torch.jit.trace recorded the
// device of every tensor forward creates (an RNN's zero first state,
// torch.zeros / arange / ones in the user's code) as a `cpu` constant, and
// tensors the code captured as constants of the graph.  Run as they are, they
// would make CPU tensors beside the GPU's ("Input and hidden tensors are not
// at the same device").  On a GPU, every CPU device constant of every method
// of the module and its submodules is taken as the run device, and every
// captured tensor that is not a scalar is moved there (a 0-dim CPU tensor
// mixes with GPU tensors as it is).  A model that moves data to the CPU on
// purpose inside forward runs it on the GPU instead (docs/exec.md, "Devices").
static void move_device_constants(torch::jit::Graph &g, torch::jit::Block *b, const c10::Device &dev) {
    std::vector<torch::jit::Node *> cpu;
    for (torch::jit::Node *n : b->nodes()) {
        for (torch::jit::Block *sub : n->blocks()) move_device_constants(g, sub, dev);
        if (n->kind() != prim::Constant || n->outputs().size() != 1) continue;
        auto v = torch::jit::toIValue(n->output());
        if (!v) continue;
        if ((v->isDevice() && v->toDevice().is_cpu()) ||
            (v->isTensor() && v->toTensor().defined() && v->toTensor().dim() > 0 && v->toTensor().is_cpu()))
            cpu.push_back(n);
    }
    for (torch::jit::Node *n : cpu) {
        auto v = *torch::jit::toIValue(n->output());
        torch::jit::WithInsertPoint at(n);
        torch::jit::Value *moved = v.isDevice() ? g.insertConstant(IValue(dev))
                                                : g.insertConstant(IValue(v.toTensor().to(dev)));
        moved->setType(n->output()->type());
        n->output()->replaceAllUsesWith(moved);
        n->destroy();
    }
}

static void move_device_constants(torch::jit::Module &module, const c10::Device &dev) {
    std::set<const torch::jit::Graph *> seen;
    for (const auto &m : module.modules())
        for (const auto &method : m.get_methods()) {
            std::shared_ptr<torch::jit::Graph> g = method.graph();
            if (seen.insert(g.get()).second) move_device_constants(*g, g->block(), dev);
        }
}

void load_model(Model &M, const rk_exec_options *o, bool for_tracing) {
    M.keep_block_outputs = for_tracing;
    select_device(M, o->device, o->memory_cap);
    install_allocator();
    // Op by op, as the executor runs: the plain step must run the same kernels,
    // on the graph as saved.  The profiling executor without optimization runs
    // it as it is; the legacy executor (profiling mode off) turned 0-dim tensor
    // constants into scalars, so `NumToTensor(x[0].numel()) * 0.9189` (a traced
    // `math.log(2 * math.pi) / 2 * x[0].numel()`) ran in float32, not in double
    // as the saved graph, Python's own run of it and the eager model do: the
    // plain step's output was 1 ulp off (unseen3's realnvp log-likelihood).
    torch::jit::setGraphExecutorOptimize(false);
    torch::jit::getProfilingMode() = true;
    std::string path = o->model_path;
    if (is_export_archive(path)) {
        M.module = load_exported(path); // torch.export.save: one node per ATen call
    } else {
        try {
            M.module = torch::jit::load(o->model_path);
        } catch (const c10::Error &e) {
            fail(RK_EINPUT, path + ": cannot load the TorchScript model (torch.jit.trace(...).save) or "
                                   "torch.export archive (torch.export.save): " + e.what_without_backtrace());
        }
    }
    if (M.cuda) move_device_constants(M.module, M.dev); // before the copy: the plain step runs the module
    M.graph = M.module.get_method("forward").graph()->copy();
    // With graph-executor optimization off (for the plain step to run the
    // same kernels), Inline goes one call level at a time: repeat.
    for (int round = 0; round < 1000; round++) {
        bool calls = false;
        for (const Node *n : M.graph->nodes())
            if (n->kind() == prim::CallMethod || n->kind() == prim::CallFunction) calls = true;
        if (!calls) break;
        torch::jit::Inline(*M.graph);
    }
    if (M.cuda) M.module.to(M.dev);
    M.inputs = make_inputs(o);
    for (auto &t : M.inputs) t = t.to(M.dev);
    Mem A(M);
    A.reset_peak();
    int64_t before = A.cur();
    rng_seed(M.cuda, o->seed);
    expand_rnns(M);
    M.st.n_functionalized = functionalize_view_writes(M);
    analyse(M);
    build_structure(M);
    find_pieces(M);
    find_view_sums(M);
    find_phantom_parts(M);
    find_act_masks(M);
    find_static_sums(M);
    classify_blocks(M);
    // Keep only the blocks' outputs of the analysis run: tracing measures a
    // block from its input without running the blocks before it.
    for (size_t b = 0; for_tracing && b + 1 < M.block_end.size(); b++) {
        int g = M.order[M.block_end[b] - 1];
        for (const Value *v : M.groups[g].outs) // (on a device, moved to the host after their last use)
            M.block_output[g].push_back(M.env.at(v).toTensor().detach().to(M.dev));
    }
    M.env.clear();
    M.st.analysis_peak = A.peak() - before;
    make_stat_shadows(M);
}

std::vector<at::Tensor> params_of(Model &M) {
    std::vector<at::Tensor> ps;
    for (const at::Tensor &p : M.module.parameters()) ps.push_back(p);
    return ps;
}

void param_memory(Model &M, int64_t *params, int64_t *grads, int64_t *buffers) {
    *params = *grads = *buffers = 0;
    for (const at::Tensor &p : M.module.parameters()) {
        int64_t b = p.numel() * p.element_size();
        *params += b;
        if (p.requires_grad()) *grads += b;
    }
    for (const at::Tensor &b : M.module.buffers()) *buffers += b.numel() * b.element_size();
}

// PyTorch 2.x's optimizer.zero_grad() (set_to_none=True): every gradient is
// undefined at the start of a step, so AccumulateGrad takes the first
// contribution as .grad (no copy, no temporary) and adds later ones in place.
void clear_param_grads(std::vector<at::Tensor> &ps) {
    for (auto &p : ps)
        if (p.grad().defined()) p.mutable_grad() = at::Tensor();
}

// The plain module's forward (seeded as every step is).
at::Tensor plain_forward(Model &M, uint64_t seed) {
    std::vector<IValue> args(M.inputs.begin(), M.inputs.end());
    rng_seed(M.cuda, seed);
    IValue r = M.module.forward(args);
    return join_outputs(r);
}

} // namespace rkx
