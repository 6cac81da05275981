// exec_device.cpp — the device layer of src/exec: where memory and time are
// measured and random state lives, on CPU or CUDA.  A CPU allocator that
// counts current and peak bytes (libtorch has one per process), the CUDA
// caching allocator's statistics, the generators' states (saved before a
// random node, restored before its recompute), device selection, copies
// kept out of the measurements, and a step's activation peak with parameter
// gradients left out (ActivationPeak, backward_measured).  Every RK_TORCH_CUDA line of src/exec but
// rk_exec_cuda_available is here.
#include <torch/script.h>
#include <torch/version.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/function.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#ifdef RK_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <ATen/cuda/CUDAContext.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>

#include "exec_internal.h"
#include "rk_exec_torch.h"

namespace rkx {

// "<kernel> does not have a deterministic implementation, but you set
// 'torch.use_deterministic_algorithms(True, warn_only=True)'. ..." (ATen's
// Context::alertNotDeterministic).
static const char NONDETERMINISTIC[] = " does not have a deterministic implementation";

NondeterminismWatch::NondeterminismWatch(std::set<std::string> *into)
    : kernels(into ? *into : own), prev(c10::WarningUtils::get_warning_handler()) {
    c10::WarningUtils::set_warning_handler(this);
}

NondeterminismWatch::~NondeterminismWatch() { c10::WarningUtils::set_warning_handler(prev); }

void NondeterminismWatch::process(const c10::Warning &w) {
    const std::string &m = w.msg();
    size_t at = m.find(NONDETERMINISTIC);
    if (at != std::string::npos && at > 0 && m.find(' ') >= at) { // one word before it: the kernel
        kernels.insert(m.substr(0, at));
        return;
    }
    if (prev) prev->process(w);
}

void NondeterminismWatch::copy_names(char *out, size_t size) const {
    std::string s;
    for (const auto &k : kernels) s += (s.empty() ? "" : " ") + k;
    if (s.size() >= size && size > 5) s = s.substr(0, size - 5) + " ...";
    snprintf(out, size, "%s", s.c_str());
}

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

// ------------------------------------------------------ tracking allocator

namespace {

// A CPU allocator over c10::alloc_cpu/free_cpu that counts current and peak
// bytes.  A 64-byte header before each block holds its size and whether it is
// counted (allocations made while paused are not: copies kept for --check).
// raw_deleter is implemented because oneDNN allocates through raw_allocate.
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

} // namespace

void install_allocator() {
    static bool done = false;
    if (done) return;
    c10::SetCPUAllocator(&TrackingAllocator::get(), 100);
    done = true;
}

} // namespace rkx

RK_API void rk_exec_count_cpu_memory(void) { rkx::install_allocator(); }
RK_API int64_t rk_exec_cpu_bytes(bool peak) {
    return peak ? rkx::TrackingAllocator::get().peak.load() : rkx::TrackingAllocator::get().cur.load();
}
RK_API void rk_exec_cpu_reset_peak(void) { rkx::TrackingAllocator::get().reset_peak(); }

namespace rkx {

PauseTracking::PauseTracking() : old(TrackingAllocator::get().paused.exchange(true)) {}
PauseTracking::~PauseTracking() { TrackingAllocator::get().paused.store(old); }

// ------------------------------------------------------ memory and time

// On CUDA, the bytes the tensors requested (the caching allocator's
// requested_bytes), as the CPU's allocator counts them and as the chain sizes
// its data: the allocator's own rounding (to 512 B) and the blocks it hands
// out whole when the rest would be under 1 MiB (allocated_bytes: swin_v2_t's
// Linear output of 3.4 MiB took a cached 3.9 MiB block, 575 KiB that no
// prediction from tensor sizes sees) depend on what the step freed before;
// they come on top, in the reserved bytes reported apart (docs/gpu.md).
int64_t Mem::bytes(bool peak) const {
#ifdef RK_TORCH_CUDA
    if (M.cuda) {
        auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(M.dev.index());
        return peak ? st.requested_bytes[0].peak : st.requested_bytes[0].current;
    }
#endif
    return peak ? TrackingAllocator::get().peak.load() : TrackingAllocator::get().cur.load();
}

void Mem::reset_peak(bool synchronize) const {
    if (synchronize) sync();
#ifdef RK_TORCH_CUDA
    if (M.cuda) {
        c10::cuda::CUDACachingAllocator::resetPeakStats(M.dev.index());
        return;
    }
#endif
    TrackingAllocator::get().reset_peak();
}

int64_t Mem::reserved_peak() const {
#ifdef RK_TORCH_CUDA
    if (M.cuda) return c10::cuda::CUDACachingAllocator::getDeviceStats(M.dev.index()).reserved_bytes[0].peak;
#endif
    return 0;
}

void Mem::release_cache() const {
#ifdef RK_TORCH_CUDA
    if (M.cuda) {
        sync();
        c10::cuda::CUDACachingAllocator::emptyCache();
    }
#endif
}

void Mem::sync() const {
#ifdef RK_TORCH_CUDA
    if (M.cuda) c10::cuda::device_synchronize();
#endif
}

double Mem::now() const {
    sync();
    return now_us();
}

// ------------------------------------------------------ generator state

static at::Generator device_generator(bool cuda) {
#ifdef RK_TORCH_CUDA
    if (cuda) return at::cuda::detail::getDefaultCUDAGenerator();
#endif
    (void)cuda;
    return at::detail::getDefaultCPUGenerator();
}

// The state is a tensor (5056 bytes for the CPU generator) that the executor
// holds around each random node to put the caller's state back: bookkeeping
// the plain step does not have, so the tracking allocator does not count it
// (it set keep-all's peak 28 % above the plain step's at a dropout of a small
// MLP, tools/models/coverage.py ce_inside).
at::Tensor rng_get(bool cuda) {
    auto gen = device_generator(cuda);
    std::lock_guard<std::mutex> lock(gen.mutex());
    PauseTracking p;
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

// ------------------------------------------------------ activation peaks

// Bytes of the parameters' gradients that exist now (numel x element size:
// a gradient autograd took as it came may be a view sharing a storage).
int64_t param_grad_bytes_now(const std::vector<at::Tensor> &ps) {
    int64_t n = 0;
    for (const auto &p : ps)
        if (p.grad().defined()) n += p.grad().numel() * p.grad().element_size();
    return n;
}

ActivationPeak *ActivationPeak::current = nullptr;

ActivationPeak::ActivationPeak(const Mem &a, const std::vector<at::Tensor> &params) : A(a) {
    for (const auto &p : params)
        if (p.requires_grad() && p.is_leaf()) ps.push_back(p);
    grads = param_grad_bytes_now(ps);
    // AccumulateGrad runs these before it takes the gradient (or adds it).
    for (size_t i = 0; i < ps.size(); i++)
        hooks.push_back(ps[i].register_hook([this, i](const at::Tensor &g) {
            if (!ps[i].grad().defined() && g.defined()) grads += g.numel() * g.element_size();
            return at::Tensor(); // the gradient as it is (and not held: autograd still takes it)
        }));
    A.reset_peak();
    at_reset = A.cur();
    best = at_reset - grads;
    current = this;
}

void ActivationPeak::boundary(bool passes_on) {
    int64_t p = A.peak();
    op_raw_peak = std::max(op_raw_peak, p);
    reserved = std::max(reserved, A.reserved_peak());
    if (passes_on && open) {
        open_peak = std::max(open_peak, p); // part of the segment it passes on from
    } else {
        if (open) best = std::max(best, open_peak - grads + open_bias);
        open = true;
        open_peak = p;
        open_bias = bias;
    }
    A.reset_peak(false);
    at_reset = A.cur();
}

void ActivationPeak::grad_taken(const at::Tensor &p) {
    if (!p.grad().defined()) return;
    for (const at::Tensor &q : ps)
        if (q.is_same(p)) grads -= p.grad().numel() * p.grad().element_size();
}

int64_t ActivationPeak::take_op_peak() {
    int64_t p = std::max(op_raw_peak, A.peak());
    op_raw_peak = A.cur();
    return p - param_grad_bytes_now(ps);
}

namespace {
// A function that hands its gradient on as it came, or as a view of it, or
// into .grad: its segment is part of the one before it, whose gradients it
// carries (an addmm's weight gradient reaches .grad through `t()`).  The
// name without its overload number.
bool passes_grads_on(const std::string &name) {
    static const std::set<std::string> on = {
        "torch::autograd::AccumulateGrad", "TBackward", "ViewBackward", "UnsafeViewBackward",
        "ReshapeAliasBackward", "PermuteBackward", "TransposeBackward", "SqueezeBackward",
        "UnsqueezeBackward", "AliasBackward", "ExpandBackward", "ViewAsRealBackward",
        "ViewAsComplexBackward", "CloneBackward", "NumpyTBackward"};
    size_t e = name.size();
    while (e > 0 && std::isdigit((unsigned char)name[e - 1])) e--;
    return on.count(name.substr(0, e)) > 0;
}

struct SegmentEnd : torch::autograd::FunctionPostHook {
    ActivationPeak *ap;
    bool passes_on;
    SegmentEnd(ActivationPeak *a, bool on) : ap(a), passes_on(on) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &outputs,
                                              const torch::autograd::variable_list &) override {
        ap->boundary(passes_on);
        return outputs;
    }
};
} // namespace

void ActivationPeak::hook_graph(const std::vector<at::Tensor> &roots) {
    std::vector<torch::autograd::Node *> todo;
    std::set<torch::autograd::Node *> seen;
    auto add = [&](const std::shared_ptr<torch::autograd::Node> &fn) {
        if (!fn || !seen.insert(fn.get()).second) return;
        fn_hooks.push_back({fn, fn->add_post_hook(std::make_unique<SegmentEnd>(this, passes_grads_on(fn->name())))});
        todo.push_back(fn.get());
    };
    for (const auto &r : roots) add(r.grad_fn());
    while (!todo.empty()) {
        torch::autograd::Node *fn = todo.back();
        todo.pop_back();
        for (const auto &e : fn->next_edges()) add(e.function);
    }
}

void ActivationPeak::unhook_graph() {
    for (auto &h : fn_hooks) h.first->del_post_hook(h.second);
    fn_hooks.clear(); // the graph is not held after its backward
}

void ActivationPeak::unhook() {
    for (size_t i = 0; i < hooks.size(); i++) ps[i].remove_hook(hooks[i]);
    hooks.clear();
    unhook_graph();
    if (current == this) current = nullptr;
}

int64_t ActivationPeak::finish() {
    boundary();
    if (open) best = std::max(best, open_peak - grads + open_bias);
    open = false;
    unhook();
    return best;
}

ActivationPeak::~ActivationPeak() { unhook(); }

void backward_measured(const at::Tensor &loss) {
    ActivationPeak *ap = ActivationPeak::current;
    if (ap) ap->hook_graph({loss});
    try {
        loss.backward();
    } catch (...) {
        if (ap) ap->unhook_graph();
        throw;
    }
    if (ap) ap->unhook_graph();
}

// ------------------------------------------------------ device selection

static std::string torch_version_text() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
           std::to_string(TORCH_VERSION_PATCH);
}

void select_device(Model &M, const char *device, int64_t memory_cap) {
    if (memory_cap < 0) fail(RK_EINPUT, "--memory-cap: expected a positive number of bytes");
    if (!device || strcmp(device, "cpu") == 0) {
        if (memory_cap > 0) fail(RK_EINPUT, "--memory-cap caps a CUDA device's memory: it needs --device cuda");
        // On the CPU too: `index_put_(..., accumulate=True)` (the backward of
        // `x[idx]` with repeated indices: a graph net's messages `h[row]`)
        // adds with atomics on several threads unless deterministic
        // algorithms are asked for, so the plain step itself differed from
        // run to run (unseen9's graph_net: gcn.weight by 7e-9); with them it
        // adds serially, in the plain step as in the schedule.  (A kernel
        // without a deterministic variant only warns: nondeterministic_kernels.)
        at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
        return;
    }
    std::string d = device;
    if (d.compare(0, 4, "cuda") != 0) fail(RK_EINPUT, "--device " + d + ": expected cpu or cuda");
#ifdef RK_TORCH_CUDA
    if (!torch::cuda::is_available())
        fail(RK_EINPUT, "--device " + d + ": no CUDA device is available (this build's libtorch " +
                             torch_version_text() + " has CUDA, but no GPU or driver was found)");
    M.cuda = true;
    M.dev = c10::Device(d == "cuda" ? std::string("cuda:0") : d);
    // Gradients are compared bit for bit with the plain step run in the same
    // process: ask for deterministic kernels (cuDNN's deterministic algorithms,
    // no autotuning, ATen's deterministic variants where they exist — a kernel
    // without one only warns).  Plain step and schedule run under the same
    // settings, so timings compare like with like.
    // cuBLAS is deterministic with a fixed workspace configuration (read when
    // its first handle is made; a user's own setting is kept).
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
    // scaled_dot_product_attention: the flash, memory-efficient and cuDNN
    // backends' backwards are nondeterministic unless determinism is strict
    // (each says "... defaults to a non-deterministic algorithm" under
    // warn_only; strict would make every kernel without a deterministic
    // variant an error, adaptive average pooling's backward among them): off,
    // so that attention runs the math backend, in the plain step as in the
    // schedule.  Without this a ViT's gradients (float32: the memory-efficient
    // backend) differed from the plain step's even with nothing recomputed
    // (docs/gpu.md, "Fourth GPU session").
    at::globalContext().setSDPUseFlash(false);
    at::globalContext().setSDPUseMemEfficient(false);
    at::globalContext().setSDPUseCuDNN(false);
    if (memory_cap > 0) { // as torch.cuda.set_per_process_memory_fraction(cap / total)
        // the caching allocator is made on the first CUDA allocation (lazy init, as Python's
        // _lazy_init before set_per_process_memory_fraction): make one
        (void)at::empty({1}, at::TensorOptions().device(M.dev).dtype(at::kByte));
        size_t total_b = at::cuda::getDeviceProperties(M.dev.index())->totalGlobalMem;
        if ((uint64_t)memory_cap > (uint64_t)total_b)
            fail(RK_EINPUT, "--memory-cap " + std::to_string(memory_cap) + ": more than the device's " +
                                std::to_string(total_b) + " bytes");
        c10::cuda::CUDACachingAllocator::setMemoryFraction((double)memory_cap / (double)total_b, M.dev.index());
    }
#else
    (void)memory_cap;
    (void)M;
    fail(RK_EINPUT, "--device " + d + ": this build's libtorch " + torch_version_text() + " has no CUDA (cpu only)");
#endif
}

at::Tensor keep_copy(const at::Tensor &t) {
    PauseTracking p;
    if (!t.defined()) return t;
    return t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

} // namespace rkx
