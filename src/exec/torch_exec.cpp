// torch_exec.cpp — everything in rkmate that touches libtorch, behind the C
// API of rk_exec.h: the rk-GB tracing front end (TorchScript graph -> node
// kinds by running -> simplified graph with one allocation per node ->
// 1-separator blocks -> identical-block classes -> measured CD-graphs) and the
// rk-Exec executor (a schedule run as a real training step with per-node
// autograd graphs, compared with the plain PyTorch step).  docs/exec.md
// describes the method; the comments here say how each piece maps onto it.
#include <torch/script.h>
#include <torch/version.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/core/StorageImpl.h>
#ifdef RK_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "rk_exec.h"

using torch::jit::Node;
using torch::jit::Value;
using torch::jit::Stack;
using c10::IValue;
namespace prim = c10::prim;
namespace aten = c10::aten;

namespace {

// ---------------------------------------------------------------- errors

struct RkErr {
    rk_status st;
    std::string msg;
};

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

// ------------------------------------------------------ tracking allocator

// A CPU allocator over c10::alloc_cpu/free_cpu that counts current and peak
// bytes.  A 64-byte header before each block holds its size and whether it is
// counted (allocations made while paused are not: copies kept for --check).
// raw_deleter is implemented because oneDNN allocates through raw_allocate.
// It is process-wide by nature (libtorch has one CPU allocator).
struct TrackingAllocator final : public c10::Allocator {
    static constexpr size_t kHeader = 64;
    std::atomic<int64_t> cur{0}, peak{0};
    std::atomic<bool> paused{false};

    static TrackingAllocator &get() {
        static TrackingAllocator a;
        return a;
    }
    static void release(void *p) {
        if (!p) return;
        char *base = static_cast<char *>(p) - kHeader;
        int64_t n = reinterpret_cast<int64_t *>(base)[0];
        int64_t counted = reinterpret_cast<int64_t *>(base)[1];
        if (counted) get().cur.fetch_sub(n);
        c10::free_cpu(base);
    }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    // libtorch >= 2.3: allocate is not const and copy_data is required.
    void copy_data(void *dest, const void *src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
    c10::DataPtr allocate(size_t n) override {
#else
    c10::DataPtr allocate(size_t n) const override {
#endif
        auto *self = const_cast<TrackingAllocator *>(this);
        char *base = static_cast<char *>(c10::alloc_cpu(n + kHeader));
        bool counted = !paused.load();
        reinterpret_cast<int64_t *>(base)[0] = (int64_t)n;
        reinterpret_cast<int64_t *>(base)[1] = counted ? 1 : 0;
        if (counted) {
            int64_t now = self->cur.fetch_add((int64_t)n) + (int64_t)n;
            int64_t pk = self->peak.load();
            while (now > pk && !self->peak.compare_exchange_weak(pk, now)) {
            }
        }
        void *p = base + kHeader;
        return {p, p, &TrackingAllocator::release, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &TrackingAllocator::release; }
    void reset_peak() { peak.store(cur.load()); }
};

void install_allocator() {
    static bool done = false;
    if (done) return;
    c10::SetCPUAllocator(&TrackingAllocator::get(), 100);
    done = true;
}

struct PauseTracking {
    bool old;
    PauseTracking() : old(TrackingAllocator::get().paused.exchange(true)) {}
    ~PauseTracking() { TrackingAllocator::get().paused.store(old); }
};

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --------------------------------------------------------- generator state

// The generator random ops draw from: the CPU one, or the CUDA device's.
at::Generator device_generator(bool cuda) {
#ifdef RK_TORCH_CUDA
    if (cuda) return at::cuda::detail::getDefaultCUDAGenerator();
#endif
    (void)cuda;
    return at::detail::getDefaultCPUGenerator();
}
at::Tensor rng_get(bool cuda) {
    auto gen = device_generator(cuda);
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get_state();
}
void rng_set(bool cuda, const at::Tensor &s) {
    auto gen = device_generator(cuda);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s);
}
void rng_seed(bool cuda, uint64_t seed) {
    for (bool c : {false, cuda}) {
        auto gen = device_generator(c);
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_current_seed(seed);
    }
}

// ------------------------------------------------------------- input specs

at::ScalarType parse_dtype(const std::string &s) {
    static const std::map<std::string, at::ScalarType> m = {
        {"float32", at::kFloat}, {"float", at::kFloat},   {"float64", at::kDouble}, {"double", at::kDouble},
        {"float16", at::kHalf},  {"bfloat16", at::kBFloat16}, {"int64", at::kLong}, {"int32", at::kInt},
        {"int16", at::kShort},   {"int8", at::kChar},     {"uint8", at::kByte},     {"bool", at::kBool}};
    auto it = m.find(s);
    if (it == m.end()) fail(RK_EINPUT, "unknown dtype '" + s + "' (expected float32, float64, int64, ...)");
    return it->second;
}

struct InputSpec {
    std::vector<int64_t> shape;
    at::ScalarType dtype;
};

InputSpec parse_spec(const std::string &text) {
    auto c = text.rfind(':');
    if (c == std::string::npos)
        fail(RK_EINPUT, "--input '" + text + "': expected SHAPE:DTYPE such as 4x64:int64");
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

std::vector<at::Tensor> make_inputs(const rk_exec_options *o) {
    std::vector<InputSpec> specs;
    for (int i = 0; i < o->n_inputs; i++) specs.push_back(parse_spec(o->inputs[i]));
    std::vector<at::Tensor> out;
    if (o->input_file) {
        std::ifstream f(o->input_file, std::ios::binary);
        if (!f) fail(RK_EINPUT, std::string(o->input_file) + ": cannot open the input file");
        std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        std::string path = o->input_file;
        if (path.size() > 3 && path.compare(path.size() - 3, 3, ".pt") == 0)
            fail(RK_EINPUT, path + ": --input-file takes the raw data of the inputs (the exporters' "
                                   "PATH.inputs.bin), not a torch.save file");
        size_t off = 0;
        for (size_t i = 0; i < specs.size(); i++) {
            at::Tensor t = at::empty(specs[i].shape, at::TensorOptions().dtype(specs[i].dtype));
            size_t n = t.numel() * t.element_size();
            if (off + n > buf.size())
                fail(RK_EINPUT, std::string(o->input_file) + ": " + std::to_string(buf.size()) +
                                    " bytes, too short for input " + std::to_string(i) + " (" + o->inputs[i] +
                                    ", needs bytes up to " + std::to_string(off + n) + ")");
            memcpy(t.data_ptr(), buf.data() + off, n);
            off += n;
            out.push_back(t);
        }
        if (off != buf.size())
            fail(RK_EINPUT, std::string(o->input_file) + ": " + std::to_string(buf.size()) +
                                " bytes but the --input specs describe " + std::to_string(off));
        return out;
    }
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

// ------------------------------------------------------------- the model

// Value classes after running the graph once.
enum class VK {
    Static,  // does not depend on the model inputs' data (constants, params, sizes)
    Data,    // a group's data: the real op's output, or an in-place result on it
    View,    // a view (alias) of some group's data, computed lazily from its source
    Cheap,   // list/tuple construct holding dynamic values: inlined into users
};

struct VInfo {
    VK kind = VK::Static;
    int owner = -1;           // Data/View: group owning the storage
    Node *def = nullptr;      // View/Cheap: the defining node
    int src = -1;             // View: the input of def that is aliased
    const Value *alias = nullptr; // unpack of a Cheap construct: the value it stands for
    IValue sval;              // Static: the value
};

struct Group {
    int input_index = -1;     // >= 0: model input (no program)
    Node *main = nullptr;
    std::vector<Node *> prog; // cheap constructs, main, in-place ops (in node order)
    const Value *data = nullptr;
    std::set<int> deps_real, deps_shape;
    bool rg = false, has_grad = false, nondet = false;
    std::vector<int64_t> sizes;
    at::ScalarType dtype = at::kFloat;
    int64_t bytes = 0;
    std::string op;
    int pos = -1;             // topological position (inputs: -1)
    int block = -1, local = -1;
    std::vector<int> consumers;
    int clone_arg = -1;       // in-place op on a view or input: run on a copy of this argument
    int clone_owner = -1;     // the group owning the original
};

struct Model {
    bool cuda = false;
    c10::Device dev{c10::DeviceType::CPU};
    torch::jit::Module module;
    std::shared_ptr<torch::jit::Graph> graph;
    std::vector<at::Tensor> inputs;
    std::unordered_map<const Value *, VInfo> vi;
    std::unordered_map<const Node *, int> node_index;
    std::unordered_map<const Node *, at::Tensor> rng_state; // before each random node
    std::vector<Group> groups;
    std::vector<int> order;   // non-input groups in topological order
    const Value *output = nullptr;
    int out_group = -1;
    // blocks: ranges of `order`
    std::vector<int> block_begin, block_end;   // [begin, end) positions
    std::vector<int> block_class;
    std::vector<std::string> class_canon;
    std::vector<int> class_rep;                // first block of each class
    rk_trace_stats st{};
    std::unordered_map<const Node *, torch::jit::Operation> ops;
    std::unordered_map<const Value *, IValue> env;  // values of the analysis run (freed after it)
    std::unordered_map<int, at::Tensor> block_output; // analysis-run data of each block's output
};

// Memory and time on the model's device: the tracking allocator on CPU, the
// caching allocator's statistics on CUDA (whose blocks are rounded to 512 B).
struct Mem {
    const Model &M;
    explicit Mem(const Model &m) : M(m) {}
    // Bytes allocated now, or their peak since the last reset_peak.
    int64_t bytes(bool peak) const {
#ifdef RK_TORCH_CUDA
        if (M.cuda) {
            auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(M.dev.index());
            return peak ? st.allocated_bytes[0].peak : st.allocated_bytes[0].current;
        }
#endif
        return peak ? TrackingAllocator::get().peak.load() : TrackingAllocator::get().cur.load();
    }
    int64_t cur() const { return bytes(false); }
    int64_t peak() const { return bytes(true); }
    void reset_peak() const {
        sync();
#ifdef RK_TORCH_CUDA
        if (M.cuda) {
            c10::cuda::CUDACachingAllocator::resetPeakStats(M.dev.index());
            return;
        }
#endif
        TrackingAllocator::get().reset_peak();
    }
    void sync() const {
#ifdef RK_TORCH_CUDA
        if (M.cuda) c10::cuda::device_synchronize();
#endif
    }
    double now() const {
        sync();
        return now_us();
    }
};

// A copy on the CPU kept out of the measurements (for --check and --verify).
at::Tensor keep_copy(const at::Tensor &t) {
    PauseTracking p;
    if (!t.defined()) return t;
    return t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

bool is_size_like(const Node *n) {
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

const c10::StorageImpl *storage_of(const IValue &v) {
    if (!v.isTensor()) return nullptr;
    const at::Tensor &t = v.toTensor();
    if (!t.defined() || !t.has_storage()) return nullptr;
    return t.storage().unsafeGetStorageImpl();
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
        G.sizes = M.inputs[i - 1].sizes().vec();
        G.dtype = M.inputs[i - 1].scalar_type();
        G.bytes = M.inputs[i - 1].numel() * M.inputs[i - 1].element_size();
        G.op = "input";
        VInfo I;
        I.kind = VK::Data;
        I.owner = (int)M.groups.size();
        M.vi[ins[i]] = I;
        M.groups.push_back(G);
    }
    for (Node *n : g.nodes()) {
        if (n->kind() != prim::Constant && n->kind() != prim::GetAttr) M.st.nodes_ops++;
        Stack st;
        bool dyn = false;
        for (const Value *u : n->inputs()) {
            st.push_back(env.at(u));
            if (M.vi.at(u).kind != VK::Static) dyn = true;
        }
        if (dyn) M.st.nodes_dynamic++;
        if (n->isNondeterministic()) M.rng_state[n] = rng_get(M.cuda);
        try {
            run_node(M, n, st);
        } catch (const c10::Error &e) {
            fail(RK_EINPUT, "running " + where(n) + " on the example inputs failed: " + e.what_without_backtrace());
        }
        if (st.size() != n->outputs().size())
            fail(RK_EFAIL, "operation left " + std::to_string(st.size()) + " values for " +
                               std::to_string(n->outputs().size()) + " outputs: " + where(n));
        for (size_t i = 0; i < st.size(); i++) env[n->output(i)] = st[i];
        auto k = n->kind();
        if (!dyn || is_size_like(n)) {
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
        if (k == prim::ListConstruct || k == prim::TupleConstruct) {
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
            }
            M.st.n_cheap++;
            continue;
        }
        // In-place: an argument the schema marks as written.
        int written = -1;
        if (const c10::FunctionSchema *sch = n->maybeSchema()) {
            for (size_t i = 0; i < sch->arguments().size() && i < n->inputs().size(); i++) {
                const c10::AliasInfo *a = sch->arguments()[i].alias_info();
                if (a && a->isWrite()) written = (int)i;
            }
        }
        if (written >= 0) {
            const Value *t = n->input(written);
            const VInfo &TI = M.vi.at(t);
            if (TI.kind == VK::Static)
                fail(RK_EINPUT, "in-place operation writes a parameter, buffer or constant with data computed "
                                "from the inputs: " + where(n));
            if (TI.kind == VK::Cheap) fail(RK_EINPUT, "in-place operation on a list is not supported: " + where(n));
            if (n->outputs().size() != 1)
                fail(RK_EINPUT, "in-place operation with several outputs: " + where(n));
            std::vector<int> own;
            owners_of(M, t, own);
            if (own.empty()) fail(RK_EFAIL, "in-place operation on data without an owner: " + where(n));
            if (TI.kind != VK::Data || TI.alias || M.groups[own[0]].input_index >= 0) {
                // On a view or on a model input: run it on a copy of its argument, as
                // a new node (one allocation); nothing may read the original later
                // (checked in build_structure).
                Group G;
                G.main = n;
                G.data = n->output();
                G.clone_arg = written;
                G.clone_owner = own[0];
                const at::Tensor &ot = st[0].toTensor();
                G.rg = ot.requires_grad();
                G.sizes = ot.sizes().vec();
                G.dtype = ot.scalar_type();
                G.bytes = ot.numel() * ot.element_size();
                G.op = n->kind().toUnqualString();
                G.nondet = n->isNondeterministic();
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
            Group &O = M.groups[TI.owner];
            O.prog.push_back(n);
            if (n->isNondeterministic()) O.nondet = true;
            VInfo I;
            I.kind = VK::Data;
            I.owner = TI.owner;
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
        if (n->outputs().size() != 1 || !st[0].isTensor() || !st[0].toTensor().defined())
            fail(RK_EINPUT, "operation producing several new tensors is not supported (one allocation per "
                            "node): " + where(n));
        // A real node: a new group.
        Group G;
        G.main = n;
        G.data = n->output();
        const at::Tensor &t = st[0].toTensor();
        G.rg = t.requires_grad();
        G.sizes = t.sizes().vec();
        G.dtype = t.scalar_type();
        G.bytes = t.numel() * t.element_size();
        G.op = n->kind().toUnqualString();
        G.nondet = n->isNondeterministic();
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
        VInfo I;
        I.kind = VK::Data;
        I.owner = (int)M.groups.size();
        M.vi[n->output()] = I;
        M.groups.push_back(G);
    }
    // The output.
    const Value *out = g.outputs()[0];
    while (true) {
        const VInfo &I = M.vi.at(out);
        if (I.alias) { out = I.alias; continue; }
        if (I.kind == VK::Cheap && I.def->inputs().size() == 1) { out = I.def->input(0); continue; }
        break;
    }
    const VInfo &OI = M.vi.at(out);
    if (OI.kind == VK::Cheap)
        fail(RK_EINPUT, "the model returns " + std::to_string(OI.def->inputs().size()) +
                            " values; rkmate needs a model that returns one tensor (wrap it)");
    if (OI.kind == VK::Static) fail(RK_EINPUT, "the model's output does not depend on its inputs");
    if (!env.at(out).isTensor() || !env.at(out).toTensor().is_floating_point())
        fail(RK_EINPUT, "the model's output is not a floating-point tensor");
    M.output = out;
    M.out_group = OI.owner;
    if (!M.groups[M.out_group].rg) fail(RK_EINPUT, "the model's output does not require grad");
    // Keep the static values only (the run's activations are freed here).
}

// Dependencies of a value used by a group: real (the data is read) and shape-only.
void collect(Model &M, const Value *v, std::set<int> &real, std::set<int> &shape, bool as_shape) {
    const VInfo &I = M.vi.at(v);
    if (I.alias) return collect(M, I.alias, real, shape, as_shape);
    switch (I.kind) {
    case VK::Static: return;
    case VK::Cheap:
        for (const Value *u : I.def->inputs()) collect(M, u, real, shape, as_shape);
        return;
    case VK::Data: (as_shape ? shape : real).insert(I.owner); return;
    case VK::View:
        for (size_t j = 0; j < I.def->inputs().size(); j++)
            collect(M, I.def->input(j), real, shape, as_shape || (int)j != I.src);
        return;
    }
}

void build_structure(Model &M) {
    int ng = (int)M.groups.size();
    // Dependencies.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        std::set<const Value *> local;
        for (Node *n : G.prog) {
            for (const Value *u : n->inputs())
                if (!local.count(u)) collect(M, u, G.deps_real, G.deps_shape, false);
            for (const Value *o : n->outputs()) local.insert(o);
        }
        G.deps_real.erase(gi);
        G.deps_shape.erase(gi);
        for (int d : G.deps_real) G.deps_shape.erase(d);
    }
    // In-place ordering: nobody else may read the owner between its main node and the in-place node.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        if (!G.main || G.prog.back() == G.main) continue;
        int a = M.node_index[G.main];
        for (Node *ip : G.prog) {
            int b = M.node_index[ip];
            if (b <= a) continue;
            for (int hj = 0; hj < ng; hj++) {
                if (hj == gi || !M.groups[hj].main) continue;
                int m = M.node_index[M.groups[hj].main];
                if (m > a && m < b && M.groups[hj].deps_real.count(gi))
                    fail(RK_EINPUT, "in-place operation on data read by another operation before it is not "
                                    "supported: " + where(ip) + " (read by " + where(M.groups[hj].main) + ")");
            }
        }
    }
    // An in-place op run on a copy: nothing may read the original after it.
    for (int gi = 0; gi < ng; gi++) {
        Group &G = M.groups[gi];
        if (G.clone_arg < 0) continue;
        int p = M.node_index[G.main];
        for (int hj = 0; hj < ng; hj++) {
            const Group &H = M.groups[hj];
            if (hj == gi || !H.main || M.node_index[H.main] <= p) continue;
            if (H.deps_real.count(G.clone_owner) || H.deps_shape.count(G.clone_owner))
                fail(RK_EINPUT, "in-place operation on a view or an input whose original is read again later is "
                                "not supported: " + where(G.main) + " (read by " + where(H.main) + ")");
        }
        if (M.out_group == G.clone_owner)
            fail(RK_EINPUT, "in-place operation on a view of the model's output: " + where(G.main));
    }
    // Live groups: ancestors of the output group.
    std::vector<char> live(ng, 0);
    std::vector<int> stack{M.out_group};
    live[M.out_group] = 1;
    while (!stack.empty()) {
        int g = stack.back();
        stack.pop_back();
        for (auto *ds : {&M.groups[g].deps_real, &M.groups[g].deps_shape})
            for (int d : *ds)
                if (!live[d]) { live[d] = 1; stack.push_back(d); }
    }
    // Topological order by main-node position.
    std::vector<int> indeg(ng, 0);
    for (int g = 0; g < ng; g++) {
        if (!live[g] || M.groups[g].input_index >= 0) continue;
        for (auto *ds : {&M.groups[g].deps_real, &M.groups[g].deps_shape})
            for (int d : *ds) {
                M.groups[d].consumers.push_back(g);
                if (M.groups[d].input_index < 0) indeg[g]++;
            }
    }
    using P = std::pair<int, int>;
    std::priority_queue<P, std::vector<P>, std::greater<P>> q;
    for (int g = 0; g < ng; g++)
        if (live[g] && M.groups[g].input_index < 0 && indeg[g] == 0) q.push({M.node_index[M.groups[g].main], g});
    while (!q.empty()) {
        int g = q.top().second;
        q.pop();
        M.groups[g].pos = (int)M.order.size();
        M.order.push_back(g);
        for (int c : M.groups[g].consumers)
            if (--indeg[c] == 0) q.push({M.node_index[M.groups[c].main], c});
    }
    int nlive = 0;
    for (int g = 0; g < ng; g++) nlive += live[g] && M.groups[g].input_index < 0;
    if ((int)M.order.size() != nlive)
        fail(RK_EINPUT, "the simplified graph has a cycle (an in-place operation on data that depends on it)");
    M.st.nodes_simplified = (int)M.order.size();
    // Which groups receive a gradient: reverse propagation from the output.
    M.groups[M.out_group].has_grad = true;
    for (int i = (int)M.order.size() - 1; i >= 0; i--) {
        Group &G = M.groups[M.order[i]];
        if (!G.has_grad) continue;
        for (int d : G.deps_real)
            if (M.groups[d].rg) M.groups[d].has_grad = true;
    }
    for (auto &G : M.groups)
        if (G.input_index >= 0) G.has_grad = false; // inputs get no gradient
    // 1-separators: position i is a cut when no edge jumps over it.
    int m = (int)M.order.size();
    std::vector<int> maxcons(ng, -1);
    for (int g = 0; g < ng; g++)
        for (int c : M.groups[g].consumers) maxcons[g] = std::max(maxcons[g], M.groups[c].pos);
    int reach = -1;
    for (int g = 0; g < ng; g++)
        if (M.groups[g].input_index >= 0) reach = std::max(reach, maxcons[g]);
    int begin = 0;
    for (int i = 0; i < m; i++) {
        int g = M.order[i];
        if (i == m - 1 || (reach <= i && M.groups[g].has_grad)) {
            M.block_begin.push_back(begin);
            M.block_end.push_back(i + 1);
            begin = i + 1;
        }
        reach = std::max(reach, maxcons[g]);
    }
    if (M.order[m - 1] != M.out_group) fail(RK_EFAIL, "the output node is not last in the simplified graph");
    for (size_t b = 0; b < M.block_begin.size(); b++)
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            M.groups[M.order[i]].block = (int)b;
            M.groups[M.order[i]].local = i - M.block_begin[b];
        }
}

// Anonymized canonical text of a block: same ops, constants, shapes, dtypes
// and parameter shapes in the same places give the same text.
std::string ivalue_text(const IValue &v) {
    std::ostringstream s;
    if (v.isTensor()) {
        const at::Tensor &t = v.toTensor();
        if (!t.defined()) return "T()";
        s << "T" << t.sizes() << t.strides() << c10::toString(t.scalar_type()) << (t.requires_grad() ? "g" : "");
        return s.str();
    }
    if (v.isObject()) return "obj";
    if (v.isList()) {
        s << "[";
        for (const IValue &e : v.toListRef()) s << ivalue_text(e) << ",";
        s << "]";
        return s.str();
    }
    if (v.isTuple()) {
        s << "(";
        for (const IValue &e : v.toTupleRef().elements()) s << ivalue_text(e) << ",";
        s << ")";
        return s.str();
    }
    s.precision(17);
    s << v;
    return s.str();
}

std::string value_text(Model &M, const Value *v, int block, const std::map<const Value *, int> &local) {
    auto it = local.find(v);
    if (it != local.end()) return "L" + std::to_string(it->second);
    const VInfo &I = M.vi.at(v);
    if (I.alias) return value_text(M, I.alias, block, local);
    switch (I.kind) {
    case VK::Static: return ivalue_text(I.sval);
    case VK::Cheap: {
        std::string s = "[";
        for (const Value *u : I.def->inputs()) s += value_text(M, u, block, local) + ",";
        return s + "]";
    }
    case VK::Data: {
        const Group &O = M.groups[I.owner];
        if (O.block == block) return "g" + std::to_string(O.local);
        return "in";
    }
    case VK::View: {
        std::string s = std::string(I.def->kind().toQualString()) + "(";
        for (const Value *u : I.def->inputs()) s += value_text(M, u, block, local) + ",";
        s += ")";
        for (size_t i = 0; i < I.def->outputs().size(); i++)
            if (I.def->output(i) == v) s += ":" + std::to_string(i);
        return s;
    }
    }
    return "?";
}

void classify_blocks(Model &M) {
    std::map<std::string, int> cls;
    for (size_t b = 0; b < M.block_begin.size(); b++) {
        std::ostringstream s;
        if (b == 0) s << "first;";
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            const Group &G = M.groups[M.order[i]];
            std::map<const Value *, int> local;
            s << "{" << G.rg << G.has_grad << c10::toString(G.dtype) << at::IntArrayRef(G.sizes);
            for (Node *n : G.prog) {
                s << n->kind().toQualString() << "(";
                for (const Value *u : n->inputs()) s << value_text(M, u, (int)b, local) << ",";
                s << ")";
                for (const Value *o : n->outputs()) local.emplace(o, (int)local.size());
            }
            s << "}";
        }
        if (b + 1 == M.block_begin.size()) s << ";last";
        auto it = cls.find(s.str());
        if (it == cls.end()) {
            it = cls.emplace(s.str(), (int)M.class_canon.size()).first;
            M.class_canon.push_back(s.str());
            M.class_rep.push_back((int)b);
        }
        M.block_class.push_back(it->second);
    }
    M.st.n_blocks = (int)M.block_begin.size();
    M.st.n_classes = (int)M.class_canon.size();
}

// --------------------------------------------------------------- runtime

// Per group: the proxy (output with its grad_fn: the phantoms), the detached
// leaf (the data, stable for the whole step so that views and saved tensors
// keep pointing at it) and the storages that ever held its data: forgetting
// frees the canonical storage and clears every alias; recomputing moves the
// new data into the canonical storage, so every view and every saved tensor
// of other nodes sees it again without being rebuilt.
struct GState {
    at::Tensor proxy, leaf;
    c10::Storage canon;
    std::vector<c10::Storage> aliases;
    bool ran = false;
};

struct Runtime {
    Model &M;
    std::vector<GState> gs;
    std::unordered_map<const Value *, IValue> cache; // materialized views
    explicit Runtime(Model &m) : M(m), gs(m.groups.size()) {
        for (auto &G : M.groups)
            if (G.input_index >= 0) {
                GState &S = gs[&G - &M.groups[0]];
                S.leaf = M.inputs[G.input_index];
                S.canon = S.leaf.storage();
                S.ran = true;
            }
    }

    IValue materialize(const Value *v) {
        const VInfo &I = M.vi.at(v);
        if (I.alias) return materialize(I.alias);
        switch (I.kind) {
        case VK::Static: return I.sval;
        case VK::Data: {
            GState &S = gs[I.owner];
            if (!S.ran)
                fail(RK_EINPUT, "the schedule uses the data of " +
                                    (M.groups[I.owner].main ? where(M.groups[I.owner].main) : std::string("an input")) +
                                    " before computing it");
            return S.leaf;
        }
        case VK::Cheap: {
            Stack st;
            for (const Value *u : I.def->inputs()) st.push_back(materialize(u));
            run_node(M, I.def, st);
            return st[0];
        }
        case VK::View: {
            auto it = cache.find(v);
            if (it != cache.end()) return it->second;
            Stack st;
            for (const Value *u : I.def->inputs()) st.push_back(materialize(u));
            run_node(M, I.def, st);
            for (size_t i = 0; i < st.size(); i++) cache[I.def->output(i)] = st[i];
            return cache.at(v);
        }
        }
        return IValue();
    }

    // Run a group's program on the current inputs; returns its output (with grad_fn).
    at::Tensor exec_program(int g) {
        Group &G = M.groups[g];
        at::Tensor saved_rng;
        if (G.nondet) saved_rng = rng_get(M.cuda);
        std::unordered_map<const Value *, IValue> local;
        for (Node *n : G.prog) {
            Stack st;
            for (const Value *u : n->inputs()) {
                auto it = local.find(u);
                st.push_back(it != local.end() ? it->second : materialize(u));
            }
            if (n == G.main && G.clone_arg >= 0) st[G.clone_arg] = st[G.clone_arg].toTensor().clone();
            auto r = M.rng_state.find(n);
            if (r != M.rng_state.end()) rng_set(M.cuda, r->second);
            try {
                run_node(M, n, st);
            } catch (const c10::Error &e) {
                fail(RK_EFAIL, "running " + where(n) + " failed: " + e.what_without_backtrace());
            }
            for (size_t i = 0; i < st.size(); i++) local[n->output(i)] = std::move(st[i]);
        }
        at::Tensor out = local.at(G.data).toTensor();
        local.clear();
        if (G.nondet) rng_set(M.cuda, saved_rng);
        return out;
    }

    void fwd(int g) {
        Group &G = M.groups[g];
        GState &S = gs[g];
        if (G.input_index >= 0) fail(RK_EINPUT, "a model input has no forward node");
        // Recomputing while the data is still present (a block re-run with its
        // output kept): the op regenerates the same bytes, so free the old copy
        // first, as the simulator counts no new memory for a present output.
        if (S.ran && S.canon && S.canon.unsafeGetStorageImpl()->nbytes() > 0) forget_data(g);
        at::Tensor out = exec_program(g);
        if (!S.ran) {
            S.leaf = out.detach();
            if (G.has_grad) S.leaf.requires_grad_(true);
            S.canon = S.leaf.storage();
            S.ran = true;
            if (G.has_grad) S.proxy = out;
            return;
        }
        c10::Storage ns = out.storage();
        c10::StorageImpl *canon = S.canon.unsafeGetStorageImpl();
        c10::StorageImpl *fresh = ns.unsafeGetStorageImpl();
        if (fresh != canon) {
            if (canon->data() != nullptr || canon->nbytes() > 0) {
                // Data still present: the new copy is dropped, its storage aliases the old.
                fresh->set_data_ptr(c10::DataPtr(const_cast<void *>(static_cast<const void *>(canon->data())),
                                                 canon->device()));
                fresh->set_nbytes(canon->nbytes());
            } else {
                void *p = const_cast<void *>(static_cast<const void *>(fresh->data()));
                size_t nb = fresh->nbytes();
                c10::DataPtr owned = fresh->set_data_ptr(c10::DataPtr(p, fresh->device()));
                canon->set_data_ptr(std::move(owned));
                canon->set_nbytes(nb);
                for (auto &a : S.aliases)
                    if (a.unsafeGetStorageImpl() != fresh) {
                        a.unsafeGetStorageImpl()->set_data_ptr(c10::DataPtr(p, fresh->device()));
                        a.unsafeGetStorageImpl()->set_nbytes(nb);
                    }
            }
            S.aliases.push_back(ns);
        }
        if (G.has_grad) S.proxy = out;
    }

    void bwd(int g) {
        Group &G = M.groups[g];
        GState &S = gs[g];
        if (!G.has_grad) fail(RK_EINPUT, "backward of a node without gradient");
        if (!S.proxy.defined())
            fail(RK_EINPUT, "backward of " + where(G.main) + " after its phantoms (autograd graph) were forgotten");
        at::Tensor gr = S.leaf.grad();
        if (!gr.defined()) gr = at::zeros_like(S.leaf);
        if (S.proxy.grad_fn()) torch::autograd::backward({S.proxy}, {gr}, /*retain_graph=*/true);
    }

    void forget_data(int g) {
        GState &S = gs[g];
        if (!S.canon) return;
        S.canon.unsafeGetStorageImpl()->reset();
        for (auto &a : S.aliases) a.unsafeGetStorageImpl()->reset();
    }
    void forget_phantom(int g) { gs[g].proxy = at::Tensor(); }
    void forget_grad(int g) {
        if (gs[g].leaf.defined()) gs[g].leaf.mutable_grad() = at::Tensor();
    }
};

// Saved-tensor detection: reference counts of a tensor and of its storage.
struct RefSnap {
    at::Tensor t;
    size_t impl_refs, storage_refs;
    int owner;
};

// ------------------------------------------------------------ CD-graphs

struct CMapEntry { int kind; int local; };      // kind: 0 fwd, 1 bwd, 2 loss
struct DMapEntry { int kind; int local; };      // kind: 0 data, 1 phantom, 2 grad; local < 0: input -1-i

struct Measure {
    double fwd_time = 0, bwd_time = 0;
    int64_t fwd_over = 0, bwd_over = 0, phantom = 0;
    bool saved_self = true;
    std::set<int> saved_deps; // groups whose data the backward reads
};

struct ClassGraph {
    std::vector<CMapEntry> cmap;
    std::vector<DMapEntry> dmap;
};

// Block inputs: the model inputs (block 0) or the previous block's output.
std::vector<int> block_inputs(Model &M, int b) {
    std::vector<int> r;
    if (b == 0) {
        for (size_t g = 0; g < M.groups.size(); g++)
            if (M.groups[g].input_index >= 0) r.push_back((int)g);
    } else {
        r.push_back(M.order[M.block_end[b - 1] - 1]);
    }
    return r;
}

std::string sanitize(const std::string &s) {
    std::string r;
    for (char c : s) r += (isalnum((unsigned char)c) || c == '_') ? c : '_';
    return r;
}

// Build the CD-graph of block b (measures may be null: structure only).
void build_class_graph(Model &M, int b, const std::vector<Measure> *meas, double loss_time, rk_graph *gr,
                       ClassGraph &cg) {
    rk_graph_init(gr);
    std::vector<int> ins = block_inputs(M, b);
    std::map<int, int> in_idx; // group -> input position
    for (size_t i = 0; i < ins.size(); i++) in_idx[ins[i]] = (int)i;
    int first = M.block_begin[b], end = M.block_end[b], m = end - first;
    std::vector<int> din(ins.size()), dgin(ins.size(), -1);
    auto add_d = [&](const std::string &name, rk_dkind k, int64_t size, int kind, int local) {
        int d = rk_graph_add_data(gr, name.c_str(), k, size);
        if (d < 0) fail(RK_ENOMEM, "out of memory");
        cg.dmap.push_back({kind, local});
        rk_graph_set_target(gr, 0, d, local >= 0 ? ("g" + std::to_string(local)).c_str()
                                                 : ("in" + std::to_string(-1 - local)).c_str());
        return d;
    };
    auto add_c = [&](const std::string &name, rk_ckind k, double t, int64_t o, int kind, int local) {
        int c = rk_graph_add_compute(gr, name.c_str(), k, t, o);
        if (c < 0) fail(RK_ENOMEM, "out of memory");
        cg.cmap.push_back({kind, local});
        if (local >= 0) rk_graph_set_target(gr, 1, c, ("g" + std::to_string(local)).c_str());
        return c;
    };
    for (size_t i = 0; i < ins.size(); i++) {
        const Group &I = M.groups[ins[i]];
        din[i] = add_d("in" + std::to_string(i), RK_D_DATA, I.bytes, 0, -1 - (int)i);
        if (I.has_grad) dgin[i] = add_d("in" + std::to_string(i) + ".grad", RK_D_GRAD, I.bytes, 2, -1 - (int)i);
        rk_graph_add_input(gr, din[i], dgin[i]);
    }
    std::vector<int> dd(m), dp(m, -1), dg(m, -1);
    for (int j = 0; j < m; j++) {
        const Group &G = M.groups[M.order[first + j]];
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        dd[j] = add_d("d" + nm, RK_D_DATA, G.bytes, 0, j);
        if (G.has_grad) {
            dp[j] = add_d("p" + nm, RK_D_PHANTOM, meas ? (*meas)[j].phantom : 0, 1, j);
            dg[j] = add_d("g" + nm, RK_D_GRAD, G.bytes, 2, j);
        }
    }
    auto data_of = [&](int grp) -> int {
        auto it = in_idx.find(grp);
        if (it != in_idx.end()) return din[it->second];
        const Group &H = M.groups[grp];
        if (H.block != b) fail(RK_EFAIL, "block " + std::to_string(b) + " uses data of another block");
        return dd[H.local];
    };
    auto grad_of = [&](int grp) -> int {
        auto it = in_idx.find(grp);
        if (it != in_idx.end()) return dgin[it->second];
        return dg[M.groups[grp].local];
    };
    for (int j = 0; j < m; j++) {
        const Group &G = M.groups[M.order[first + j]];
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        int c = add_c("f" + nm, RK_C_FWD, meas ? (*meas)[j].fwd_time : 0, meas ? (*meas)[j].fwd_over : 0, 0, j);
        for (int d : G.deps_real) rk_graph_add_use(gr, c, data_of(d), RK_EDGE_REAL);
        for (int d : G.deps_shape) rk_graph_add_use(gr, c, data_of(d), RK_EDGE_FAKE);
        rk_graph_add_out(gr, c, dd[j]);
        if (dp[j] >= 0) rk_graph_add_out(gr, c, dp[j]);
    }
    int dout = dd[m - 1];
    int loss = add_c("loss", RK_C_LOSS, loss_time, 0, 2, -1);
    rk_graph_add_use(gr, loss, dout, RK_EDGE_REAL);
    rk_graph_add_out(gr, loss, dg[m - 1]);
    rk_graph_set_output(gr, dout, dg[m - 1], loss);
    for (int j = m - 1; j >= 0; j--) {
        const Group &G = M.groups[M.order[first + j]];
        if (!G.has_grad) continue;
        std::string nm = std::to_string(j) + "_" + sanitize(G.op);
        const Measure *me = meas ? &(*meas)[j] : nullptr;
        int c = add_c("b" + nm, RK_C_BWD, me ? me->bwd_time : 0, me ? me->bwd_over : 0, 1, j);
        rk_graph_add_use(gr, c, dg[j], RK_EDGE_REAL);
        rk_graph_add_use(gr, c, dp[j], RK_EDGE_REAL);
        rk_graph_add_use(gr, c, dd[j], (!me || me->saved_self) ? RK_EDGE_REAL : RK_EDGE_FAKE);
        for (int d : G.deps_real) {
            bool saved = !me || me->saved_deps.count(d);
            rk_graph_add_use(gr, c, data_of(d), saved ? RK_EDGE_REAL : RK_EDGE_FAKE);
            if (M.groups[d].has_grad) rk_graph_add_out(gr, c, grad_of(d));
        }
    }
}

// -------------------------------------------------------------- loading

void load_model(Model &M, const rk_exec_options *o) {
    if (o->device && strcmp(o->device, "cpu") != 0) {
        std::string d = o->device;
        if (d.compare(0, 4, "cuda") != 0)
            fail(RK_EINPUT, "--device " + d + ": expected cpu or cuda");
#ifdef RK_TORCH_CUDA
        if (!torch::cuda::is_available())
            fail(RK_EINPUT, "--device " + d + ": no CUDA device is available");
        M.cuda = true;
        M.dev = c10::Device(d == "cuda" ? std::string("cuda:0") : d);
#else
        fail(RK_EINPUT, "--device " + d + ": this build's libtorch has no CUDA (cpu only)");
#endif
    }
    install_allocator();
    torch::jit::setGraphExecutorOptimize(false);
    torch::jit::getProfilingMode() = false;
    try {
        M.module = torch::jit::load(o->model_path);
    } catch (const c10::Error &e) {
        fail(RK_EINPUT, std::string(o->model_path) + ": cannot load the TorchScript model: " +
                            e.what_without_backtrace());
    }
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
    rng_seed(M.cuda, o->seed);
    analyse(M);
    build_structure(M);
    classify_blocks(M);
    // Keep only the blocks' outputs of the analysis run: tracing measures a
    // block from its input without running the blocks before it.
    for (size_t b = 0; b + 1 < M.block_end.size(); b++) {
        int g = M.order[M.block_end[b] - 1];
        M.block_output[g] = M.env.at(M.groups[g].data).toTensor().detach();
    }
    M.env.clear();
}

std::vector<at::Tensor> params_of(Model &M) {
    std::vector<at::Tensor> ps;
    for (const at::Tensor &p : M.module.parameters()) ps.push_back(p);
    return ps;
}

void zero_param_grads(std::vector<at::Tensor> &ps) {
    for (auto &p : ps)
        if (p.requires_grad()) {
            if (p.grad().defined()) p.mutable_grad().zero_();
            else p.mutable_grad() = at::zeros_like(p);
        }
}

at::Tensor plain_forward(Model &M, uint64_t seed) {
    std::vector<IValue> args(M.inputs.begin(), M.inputs.end());
    rng_seed(M.cuda, seed);
    IValue r = M.module.forward(args);
    if (r.isTuple() && r.toTupleRef().elements().size() == 1) r = r.toTupleRef().elements()[0];
    if (!r.isTensor()) fail(RK_EINPUT, "the model does not return one tensor");
    return r.toTensor();
}

// ------------------------------------------------------------------ trace

// Safety net for fake dependencies: run the node's backward once normally and
// once with the data of every dependency believed unread (not saved) replaced
// by NaN bytes; if any gradient changes, those dependencies are real.
void poison_check(Model &M, Runtime &R, int g, Measure &me, const at::Tensor &gr,
                  const std::vector<at::Tensor> &in_leaves) {
    Group &G = M.groups[g];
    GState &S = R.gs[g];
    std::vector<int> fake;
    for (int d : G.deps_real)
        if (!me.saved_deps.count(d) && at::isFloatingType(M.groups[d].dtype)) fake.push_back(d);
    bool self_fake = !me.saved_self && at::isFloatingType(G.dtype);
    if (fake.empty() && !self_fake) return;
    std::vector<at::Tensor> params;
    for (Node *n : G.prog)
        for (const Value *u : n->inputs()) {
            const VInfo &I = M.vi.at(u);
            if (I.kind == VK::Static && I.sval.isTensor()) {
                const at::Tensor &t = I.sval.toTensor();
                if (t.defined() && t.is_leaf() && t.requires_grad()) params.push_back(t);
            }
        }
    auto once = [&]() {
        for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
        for (auto &p : params) p.mutable_grad() = at::zeros_like(p);
        torch::autograd::backward({S.proxy}, {gr}, true);
        std::vector<at::Tensor> r;
        for (auto &l : in_leaves) r.push_back(l.grad().defined() ? l.grad().clone() : at::Tensor());
        for (auto &p : params) r.push_back(p.grad().clone());
        return r;
    };
    if (!S.proxy.grad_fn()) return;
    std::vector<at::Tensor> ref = once();
    std::vector<int> who = fake;
    if (self_fake) who.push_back(g);
    std::vector<std::pair<c10::StorageImpl *, c10::DataPtr>> saved;
    std::vector<at::Tensor> bufs;
    for (int d : who) {
        c10::StorageImpl *si = R.gs[d].canon.unsafeGetStorageImpl();
        at::Tensor buf =
            at::empty({(int64_t)si->nbytes()}, at::TensorOptions().dtype(at::kByte).device(si->device())).fill_(255);
        bufs.push_back(buf);
        saved.push_back({si, si->set_data_ptr(c10::DataPtr(buf.data_ptr(), si->device()))});
    }
    std::vector<at::Tensor> got = once();
    for (auto &p : saved) p.first->set_data_ptr(std::move(p.second));
    bool same = true;
    for (size_t i = 0; i < ref.size(); i++)
        if (ref[i].defined() != got[i].defined() || (ref[i].defined() && !at::equal(ref[i], got[i]))) same = false;
    if (!same) {
        for (int d : fake) me.saved_deps.insert(d);
        if (self_fake) me.saved_self = true;
    }
    for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
}

void trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st) {
    double t0 = now_us(); // wall clock of the whole trace
    Model M;
    load_model(M, o);
    Mem A(M);
    auto params = params_of(M);
    zero_param_grads(params);
    // Reference output of the plain module.
    at::Tensor ref;
    if (o->verify) {
        at::Tensor r = plain_forward(M, o->seed);
        ref = keep_copy(r);
    }
    int runs = o->measure_runs > 0 ? o->measure_runs : 3;
    const double cap_us = 0.3e6; // stop timing a node after this much time (>= 1 run)
    std::vector<std::vector<Measure>> meas(M.class_canon.size());
    std::vector<char> is_rep(M.block_begin.size(), 0);
    for (size_t c = 0; c < M.class_rep.size(); c++) {
        is_rep[M.class_rep[c]] = 1;
        meas[c].resize(M.block_end[M.class_rep[c]] - M.block_begin[M.class_rep[c]]);
    }
    Runtime R(M);
    double loss_time = 0;
    size_t nb = M.block_begin.size();
    // Without --verify the forward stops after the last block that is measured.
    size_t last_needed = 0;
    for (int r : M.class_rep) last_needed = std::max(last_needed, (size_t)r);
    // Without --verify only the measured blocks run, each from its input as
    // the analysis run computed it.
    bool all = o->verify || !o->measure;
    size_t nrun = all ? nb : last_needed + 1;
    for (size_t b = 0; b < nrun; b++) {
        if (!all && !is_rep[b]) continue;
        if (b > 0) {
            int sep = M.order[M.block_end[b - 1] - 1];
            GState &S = R.gs[sep];
            if (!S.ran) {
                S.leaf = M.block_output.at(sep).detach();
                if (M.groups[sep].has_grad) S.leaf.requires_grad_(true);
                S.canon = S.leaf.storage();
                S.ran = true;
            }
        }
        if (o->progress)
            fprintf(stderr, "\rrkmate trace: block %zu/%zu, %zu classes   ", b + 1, nb, M.class_canon.size());
        bool measure = o->measure && is_rep[b];
        for (int i = M.block_begin[b]; i < M.block_end[b]; i++) {
            int g = M.order[i];
            Group &G = M.groups[g];
            if (!measure) {
                R.fwd(g);
                continue;
            }
            Measure &me = meas[M.block_class[b]][G.local];
            // Materialize the inputs first so that views exist before the snapshot.
            std::vector<RefSnap> snaps;
            {
                std::set<const Value *> local;
                for (Node *n : G.prog) {
                    for (const Value *u : n->inputs()) {
                        if (local.count(u)) continue;
                        IValue v = R.materialize(u);
                        std::vector<int> own;
                        owners_of(M, u, own);
                        std::vector<at::Tensor> ts;
                        tensors_in(v, ts);
                        for (auto &t : ts)
                            for (int ow : own) snaps.push_back({t, 0, 0, ow});
                    }
                    for (const Value *x : n->outputs()) local.insert(x);
                }
            }
            // Leaves' grad accumulators hold their tensor: create them first so
            // that only saved tensors raise the reference counts.
            std::vector<std::shared_ptr<torch::autograd::Node>> accs;
            for (auto &s : snaps)
                if (s.t.is_leaf() && s.t.requires_grad()) accs.push_back(torch::autograd::impl::grad_accumulator(s.t));
            for (auto &s : snaps) {
                s.impl_refs = s.t.use_count();
                s.storage_refs = s.t.has_storage() ? s.t.storage().use_count() : 0;
            }
            int64_t c0 = A.cur();
            A.reset_peak();
            R.fwd(g);
            int64_t c1 = A.cur(), pk = A.peak();
            GState &S = R.gs[g];
            int64_t alloc = S.leaf.has_storage() ? (int64_t)S.leaf.storage().nbytes() : 0;
            me.phantom = std::max<int64_t>(0, c1 - c0 - alloc);
            me.fwd_over = pk - c1;
            for (auto &s : snaps) {
                size_t ir = s.t.use_count(), sr = s.t.has_storage() ? s.t.storage().use_count() : 0;
                if (ir > s.impl_refs || sr > s.storage_refs) me.saved_deps.insert(s.owner);
            }
            // The proxy, the leaf and the canonical Storage hold it; more holders are saved outputs.
            me.saved_self = G.has_grad && S.leaf.has_storage() && S.leaf.storage().use_count() > 3;
            snaps.clear();
            std::vector<double> ts;
            double spent = 0;
            for (int r = 0; r < runs && (r == 0 || spent < cap_us); r++) {
                double a = A.now();
                at::Tensor x = R.exec_program(g);
                double e = A.now() - a;
                ts.push_back(e);
                spent += e;
            }
            me.fwd_time = median(ts);
            if (G.has_grad) {
                at::Tensor gr = at::ones_like(S.leaf);
                std::vector<at::Tensor> in_leaves;
                for (int d : G.deps_real)
                    if (M.groups[d].has_grad) in_leaves.push_back(R.gs[d].leaf);
                auto reset = [&]() {
                    for (auto &l : in_leaves) l.mutable_grad() = at::Tensor();
                };
                reset();
                std::vector<double> tb;
                double spentb = 0;
                for (int r = 0; r <= runs && (r <= 1 || spentb < cap_us); r++) {
                    A.reset_peak();
                    double a = A.now();
                    if (S.proxy.grad_fn()) torch::autograd::backward({S.proxy}, {gr}, true);
                    double e = A.now() - a;
                    int64_t b1 = A.cur(), bp = A.peak();
                    if (r == 0) me.bwd_over = bp - b1;
                    else { tb.push_back(e); spentb += e; }
                    reset();
                }
                me.bwd_time = median(tb);
                poison_check(M, R, g, me, gr, in_leaves);
            }
        }
    }
    if (o->progress) fprintf(stderr, "\n");
    // The loss node: the reduction of the output (timed once, tiny).
    if (R.gs[M.out_group].ran) {
        at::Tensor outv = R.materialize(M.output).toTensor();
        double a = A.now();
        at::Tensor l = outv.sum();
        loss_time = A.now() - a;
    }
    st->forward_equal = -1;
    st->max_forward_diff = 0;
    if (o->verify) { // bit-exact forward check
        at::Tensor outv = R.materialize(M.output).toTensor();
        at::Tensor mine = keep_copy(outv);
        PauseTracking p;
        st->forward_equal = mine.sizes() == ref.sizes() && at::equal(mine, ref);
        st->max_forward_diff =
            mine.sizes() == ref.sizes() ? (mine.to(at::kDouble) - ref.to(at::kDouble)).abs().max().item<double>() : INFINITY;
    }
    // The chain.
    rk_chain_init(out);
    for (size_t c = 0; c < M.class_canon.size(); c++) {
        rk_graph gr;
        ClassGraph cg;
        build_class_graph(M, M.class_rep[c], o->measure ? &meas[c] : nullptr, loss_time, &gr, cg);
        rk_error e;
        char where_buf[64];
        snprintf(where_buf, sizeof where_buf, "class %zu", c);
        rk_status s = rk_graph_finalize(&gr, where_buf, &e);
        if (s != RK_OK) {
            rk_graph_free(&gr);
            fail(RK_EFAIL, std::string("internal error building the CD-graph: ") + e.msg);
        }
        rk_chain_add_class(out, &gr);
    }
    for (size_t b = 0; b < nb; b++) rk_chain_add_block(out, ("b" + std::to_string(b)).c_str(), M.block_class[b]);
    std::ostringstream desc;
    desc << o->model_path;
    for (int i = 0; i < o->n_inputs; i++) desc << " --input " << o->inputs[i];
    if (o->input_file) desc << " --input-file " << o->input_file;
    desc << " --seed " << o->seed;
    out->model = strdup(desc.str().c_str());
    out->device = strdup(M.cuda ? "cuda" : "cpu");
    rk_error e;
    if (rk_chain_validate(out, "traced chain", &e) != RK_OK)
        fail(RK_EFAIL, std::string("internal error: ") + e.msg);
    M.st.forward_equal = st->forward_equal;
    M.st.max_forward_diff = st->max_forward_diff;
    *st = M.st;
    st->seconds = (now_us() - t0) * 1e-6;
}

// -------------------------------------------------------------------- run

void run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s, const rk_run_options *ro,
         rk_run_result *res) {
    Model M;
    load_model(M, o);
    // The chain must be what tracing this model gives.
    size_t nb = M.block_begin.size();
    if ((size_t)ch->n_blocks != nb || (size_t)ch->n_classes != M.class_canon.size())
        fail(RK_EINPUT, "the chain (" + std::to_string(ch->n_blocks) + " blocks, " + std::to_string(ch->n_classes) +
                            " classes) is not this model's (" + std::to_string(nb) + " blocks, " +
                            std::to_string(M.class_canon.size()) + " classes): trace it again with the same inputs");
    std::vector<ClassGraph> cgs(M.class_canon.size());
    for (size_t c = 0; c < M.class_canon.size(); c++) {
        rk_graph gr;
        build_class_graph(M, M.class_rep[c], nullptr, 0, &gr, cgs[c]);
        const rk_graph &fg = ch->classes[c];
        bool same = fg.n_c == gr.n_c && fg.n_d == gr.n_d;
        for (int i = 0; same && i < gr.n_c; i++) same = !strcmp(fg.c[i].name, gr.c[i].name);
        for (int i = 0; same && i < gr.n_d; i++) same = !strcmp(fg.d[i].name, gr.d[i].name);
        rk_graph_free(&gr);
        if (!same)
            fail(RK_EINPUT, "class " + std::to_string(c) + " of the chain does not match this model's graph: trace "
                            "it again with the same model and inputs");
    }
    for (size_t b = 0; b < nb; b++)
        if (ch->blocks[b].cls != M.block_class[b])
            fail(RK_EINPUT, "block " + std::to_string(b) + " of the chain has another class than this model's");
    Mem A(M);
    auto params = params_of(M);
    int64_t input_bytes = 0;
    for (auto &t : M.inputs) input_bytes += t.numel() * t.element_size();
    res->input_bytes = input_bytes;
    res->n_params = (int)params.size();
    int iters = ro->iters > 0 ? ro->iters : 3;
    std::vector<double> tp, tr;
    int64_t peak_plain = 0, peak_rk = 0;
    std::vector<at::Tensor> ref_grads, ref_out_v;
    at::Tensor ref_out, rk_out;
    std::vector<at::Tensor> rk_grads;
    double loss_value = 0;
    for (int it = 0; it <= iters; it++) { // iteration 0 warms up
        // Plain step: module forward + autograd backward.
        zero_param_grads(params);
        {
            int64_t base = A.cur();
            A.reset_peak();
            double a = A.now();
            at::Tensor y = plain_forward(M, o->seed);
            at::Tensor l = ro->loss == RK_LOSS_MEAN ? y.mean() : y.sum();
            l.backward();
            double e = A.now() - a;
            int64_t pk = A.peak() - base + input_bytes;
            if (it > 0) { tp.push_back(e); peak_plain = std::max(peak_plain, pk); }
            if (it == 0 && ro->check) {
                PauseTracking p;
                ref_out = keep_copy(y);
                for (auto &q : params) ref_grads.push_back(keep_copy(q.grad()));
            }
        }
        // The schedule (on fresh inputs: the plain step may have written them).
        {
            auto fresh = make_inputs(o);
            for (size_t i = 0; i < M.inputs.size(); i++) M.inputs[i] = fresh[i].to(M.dev);
        }
        zero_param_grads(params);
        {
            int64_t base = A.cur();
            A.reset_peak();
            double a = A.now();
            {
                Runtime R(M);
                for (int i = 0; i < s->n_ops; i++) {
                    const rk_op &op = s->ops[i];
                    if (op.kind == RK_OP_MARK) continue;
                    if (op.block < 0 || (size_t)op.block >= nb) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad block");
                    const ClassGraph &cg = cgs[M.block_class[op.block]];
                    int first = M.block_begin[op.block];
                    if (op.kind == RK_OP_RUN) {
                        if (op.node < 0 || op.node >= (int)cg.cmap.size()) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad node");
                        const CMapEntry &e = cg.cmap[op.node];
                        if (e.kind == 0) R.fwd(M.order[first + e.local]);
                        else if (e.kind == 1) R.bwd(M.order[first + e.local]);
                        else {
                            if ((size_t)op.block != nb - 1) fail(RK_EINPUT, "schedule runs the loss of a block that is not last");
                            at::Tensor y = R.materialize(M.output).toTensor();
                            at::Tensor l = ro->loss == RK_LOSS_MEAN ? y.mean() : y.sum();
                            loss_value = l.item<double>();
                            if (it == 0 && ro->check) {
                                PauseTracking p;
                                rk_out = keep_copy(y);
                            }
                            l.backward();
                        }
                    } else if (op.kind == RK_OP_FORGET) {
                        if (op.node < 0 || op.node >= (int)cg.dmap.size()) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad data node");
                        const DMapEntry &e = cg.dmap[op.node];
                        int grp = e.local >= 0 ? M.order[first + e.local] : block_inputs(M, op.block)[-1 - e.local];
                        if (e.kind == 0) R.forget_data(grp);
                        else if (e.kind == 1) R.forget_phantom(grp);
                        else R.forget_grad(grp);
                    }
                }
            }
            double e = A.now() - a;
            int64_t pk = A.peak() - base + input_bytes;
            if (it > 0) { tr.push_back(e); peak_rk = std::max(peak_rk, pk); }
            if (it == 0 && ro->check) {
                PauseTracking p;
                for (auto &q : params) rk_grads.push_back(keep_copy(q.grad()));
            }
        }
        // Inputs may have been forgotten by the schedule: make them again.
        auto fresh = make_inputs(o);
        for (size_t i = 0; i < M.inputs.size(); i++) M.inputs[i] = fresh[i].to(M.dev);
    }
    res->measured_peak = peak_rk;
    res->baseline_peak = peak_plain;
    res->measured_time = median(tr);
    res->baseline_time = median(tp);
    res->loss = loss_value;
    if (ro->check) {
        PauseTracking p;
        res->checked = 1;
        bool eq = true;
        double mad = 0, mrd = 0;
        auto cmp = [&](const at::Tensor &x, const at::Tensor &y) {
            if (!x.defined() || !y.defined()) {
                if (x.defined() != y.defined()) eq = false;
                return;
            }
            if (x.sizes() != y.sizes()) { eq = false; mad = INFINITY; return; }
            if (!at::equal(x, y)) eq = false;
            at::Tensor xd = x.to(at::kDouble), yd = y.to(at::kDouble);
            double ad = (xd - yd).abs().max().item<double>();
            double sc = yd.abs().max().item<double>();
            mad = std::max(mad, ad);
            if (sc > 0) mrd = std::max(mrd, ad / sc);
        };
        for (size_t i = 0; i < params.size(); i++) cmp(rk_grads[i], ref_grads[i]);
        bool geq = eq;
        eq = true;
        if (!rk_out.defined()) eq = false;
        else cmp(rk_out, ref_out);
        res->output_equal = eq;
        res->grads_equal = geq && eq;
        res->max_abs_diff = mad;
        res->max_rel_diff = mrd;
    }
}

template <class F> rk_status guarded(rk_error *err, F f) {
    try {
        f();
        return RK_OK;
    } catch (const RkErr &e) {
        rk_fail(err, e.st, "%s", e.msg.c_str());
        return e.st;
    } catch (const c10::Error &e) {
        rk_fail(err, RK_EFAIL, "libtorch: %s", e.what_without_backtrace());
        return RK_EFAIL;
    } catch (const std::bad_alloc &) {
        rk_fail(err, RK_ENOMEM, "out of memory");
        return RK_ENOMEM;
    } catch (const std::exception &e) {
        rk_fail(err, RK_EFAIL, "%s", e.what());
        return RK_EFAIL;
    }
}

} // namespace

extern "C" rk_status rk_exec_trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st, rk_error *err) {
    rk_trace_stats tmp{};
    rk_status s = guarded(err, [&] { trace(o, out, &tmp); });
    if (st) *st = tmp;
    return s;
}

extern "C" rk_status rk_exec_run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                                 const rk_run_options *ro, rk_run_result *res, rk_error *err) {
    *res = rk_run_result{};
    return guarded(err, [&] { run(o, ch, s, ro, res); });
}

extern "C" int rk_exec_cuda_available(void) {
#ifdef RK_TORCH_CUDA
    return torch::cuda::is_available() ? 1 : 0;
#else
    return 0;
#endif
}
