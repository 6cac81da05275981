// exec_internal.h — what src/exec's C++ files share (not installed): errors,
// the model as rk-GB sees it (values, groups = one allocation each, blocks,
// classes), the device layer (memory counters, generators), the executor's
// runtime state and the CD-graph mapping.  Which file does what:
//   exec_device.cpp   CPU tracking allocator, CUDA caching-allocator statistics,
//                     generator states, copies kept out of the measurements
//   exec_load.cpp     input specs and input files, loading the TorchScript
//                     module, the plain PyTorch step
//   exec_export.cpp   torch.export archives (.pt2) rebuilt as such a module
//   exec_rnn.cpp      LSTM/GRU/RNN nodes rewritten into their time steps
//   exec_analyse.cpp  the node interpreter and the analysis run (node kinds)
//   exec_blocks.cpp   simplified graph, 1-separator blocks, identical classes
//   exec_cdgraph.cpp  the CD-graph of a block
//   exec_measure.cpp  rk_exec_trace: measuring the classes, writing the chain
//   exec_runtime.cpp  the executor's per-node operations (run, backward, forget)
//   exec_grad_order.cpp  a leaf that one op's backward reaches several times:
//                     its gradient so far added first, as the plain step adds
//   exec_split_bwd.cpp  a convolution's / Linear's backward in two parts (weight, input)
//   exec_pieces.cpp   data read by other nodes only through pieces (q, k, v of one
//                     qkv output): each piece's gradient apart until the owner's backward
//   exec_run.cpp      rk_exec_run: a schedule beside the plain step; the C API
//   exec_train.cpp    rk_train_*: a training session (many steps, an optimizer)
//   exec_train_data.cpp  .npy input streams for training (--data)
// docs/exec.md describes the method.
#ifndef RK_EXEC_INTERNAL_H
#define RK_EXEC_INTERNAL_H

#include <torch/script.h>
#include <torch/csrc/autograd/function.h>
#include <functional>

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rk_exec.h"

namespace rkx {

using torch::jit::Node;
using torch::jit::Stack;
using torch::jit::Value;
using c10::IValue;
namespace prim = c10::prim;
namespace aten = c10::aten;

// ---------------------------------------------------------------- errors

// Library code reports through rk_status: a failure is thrown as RkErr inside
// the C++ code and turned into the status and message at the C API (guarded).
struct RkErr {
    rk_status st;
    std::string msg;
};
[[noreturn]] void fail(rk_status st, const std::string &m);
// Run f at a C API entry point: exceptions become the status and err's message.
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
// "aten::relu (%x) at code/__torch__.py:11 in model.layer1": a node for messages.
std::string where(const Node *n);

double now_us();
double median(std::vector<double> v);

// ------------------------------------------------------ the model

// Value classes after running the graph once.
enum class VK {
    Static, // does not depend on the model inputs' data (constants, params, sizes)
    Data,   // a group's data: the real op's output, or an in-place result on it
    View,   // a view (alias) of some group's data, computed lazily from its source
    Cheap,  // list/tuple construct holding dynamic values: inlined into users
};

struct VInfo {
    VK kind = VK::Static;
    int owner = -1;               // Data/View: group owning the storage
    Node *def = nullptr;          // View/Cheap: the defining node
    int src = -1;                 // View: the input of def that is aliased
    const Value *alias = nullptr; // unpack of a Cheap construct, or an in-place op's result: the value it stands for
    int part = 0;                 // Data: which of the owner's outputs (ops returning several tensors)
    bool rg = true;               // View: whether a gradient can flow through it (not a `detach`)
    std::vector<int64_t> sizes;   // View: its sizes in the analysis run (a tensor view; else empty)
    IValue sval;                  // Static: the value
};

// One node of the simplified graph: one allocation, its program (the list
// constructs feeding it, the real op, the in-place ops on its data).
struct Group {
    int input_index = -1; // >= 0: model input (no program)
    Node *main = nullptr;
    std::vector<Node *> prog;
    const Value *data = nullptr;       // outs[0]
    std::vector<const Value *> outs;   // the new tensors main produces (LSTM: output, h, c), one storage each
    std::vector<char> out_rg;          // which of them require grad
    int64_t grad_bytes = 0;            // bytes of the outputs that require grad (the gradient's size)
    std::set<int> deps_real, deps_shape;
    std::set<int> deps_grad;           // of deps_real, those read through a path that carries a gradient
    bool rg = false, has_grad = false, nondet = false;
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides; // of outs[0] (its layout: a transposed result reads otherwise)
    at::ScalarType dtype = at::kFloat;
    int64_t bytes = 0;
    std::string op;
    int pos = -1; // topological position (inputs: -1)
    int block = -1, local = -1;
    std::vector<int> consumers;
    int clone_arg = -1;   // in-place op on a view or input: run on a copy of this argument
    int clone_owner = -1; // the group owning the original
    // Read by the other nodes of its block only through pieces (select, slice,
    // split, chunk, unbind of it or of a view of it; exec_pieces.cpp): the
    // piece values, in graph order, their bytes and the nodes reading each
    // (F.normalize's norm and division both read q: their gradients add up).
    std::vector<const Value *> pieces;
    std::vector<int64_t> piece_bytes;
    std::vector<std::vector<int>> piece_readers;
    // Read only by a `stack` or `cat` (not along dim 0) whose backward hands
    // it a strided piece of the result's gradient (exec_pieces.cpp): that
    // piece is kept as it is (a view), as autograd passes it on.  The
    // stack's (cat's) group, this input's index in it (its offset along the
    // dim), the dim, its length along the dim (a cat's; -1: a stack's
    // select); its gradient's bytes in the chain (the whole gradient for the
    // input whose backward runs last, 0 for the others).
    int stack_reader = -1, stack_index = -1;
    int64_t stack_dim = 0, stack_len = -1, stack_grad_bytes = -1;
    bool stack_input_kept = false; // (of a stack group) some input's gradient is kept so
    // Read only by a `sum` over some dims (stack_reader is that sum): its
    // gradient is SumBackward's expand of the sum's, kept as it is (a view of
    // the sum's gradient, no bytes of its own), as autograd passes it on.
    // The reduced dims (sorted) and keepdim, to make it again from ones.
    bool sum_input = false, sum_keepdim = false;
    std::vector<int64_t> sum_dims;
    std::vector<const Value *> sums_read; // the Model's static_sums its program reads
    // An op returning several tensors (torch.sort, cummax, max(dim), an
    // LSTM layer): the bytes of each, and which of them no other node reads
    // (sort's indices when only its values are used) and so are no part of
    // its data in the chain but of its phantom: what its backward saves of
    // them is held until the backward, as autograd holds it, and the rest
    // goes with the data's readers (find_phantom_parts, exec_blocks.cpp).
    std::vector<int64_t> part_bytes;
    std::vector<char> part_in_phantom;
    int64_t phantom_part_bytes = 0;
    // Of a group without a gradient, the outputs nothing reads (topk's
    // values when only its indices are used): freed at the end of its
    // forward, as autograd frees them, and no part of its data.
    std::vector<char> part_dead;
    int64_t dead_part_bytes = 0;
    // The view sums (Model::view_sums) of its data, those it reads, and
    // those whose sum its backward adds in without reading the view.
    std::vector<int> vsums_owned, vsums_read, vsums_carried;
};

// A view of a node's data whose readers' gradients the plain step sums in
// the view's backward buffer before they join the data's gradient (a whole
// view read by two nodes or more, a slice, an expand), or whose one reader's
// gradient joins it after another reader's that the executor's order puts
// later; a step does the same (exec_grad_order.cpp).
struct ViewSum {
    const Value *v = nullptr; // the view
    int owner = -1;           // the group whose data it is a view of
    std::vector<int> readers; // the groups reading it, in topological order
    std::set<int> reads_other; // of the readers, those that read the owner's data otherwise too
    int64_t bytes = 0;
    // The group whose backward hands the sum to the view's backward: the
    // first reader (its backward runs last), or a node reading the data
    // otherwise between the view and its readers (the plain step's view
    // backward runs after that node's), which then makes the view first.
    int carrier = -1;
    // The reader reading the view itself (the others read a leaf on its
    // bytes), or -1 when the carrier is not a reader.
    int viewer() const { return carrier == readers.front() ? carrier : -1; }
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
    std::vector<int> order; // non-input groups in topological order
    const Value *output = nullptr;
    int out_group = -1;
    // blocks: ranges [begin, end) of `order`
    std::vector<int> block_begin, block_end;
    std::vector<int> block_class;
    std::vector<std::string> class_canon;
    std::vector<int> class_rep; // first block of each class
    rk_trace_stats st{};
    bool keep_block_outputs = false; // load_model's for_tracing
    std::unordered_map<const Node *, torch::jit::Operation> ops;
    std::unordered_map<const Value *, IValue> env;    // values of the analysis run (freed after it)
    std::unordered_map<int, std::vector<at::Tensor>> block_output; // analysis-run data of each block's output
    // Each group's parts' Part::grad_strides as an earlier step's Runtime
    // learned them (a Runtime starts from them and leaves its own): a later
    // step knows the plain step's layout before the first gradient arrives
    // (bwd_roots, exec_runtime.cpp).
    std::vector<std::vector<std::vector<int64_t>>> grad_layouts;
    // A copy's place for each BatchNorm-like node's running statistics, made
    // with the model (make_stat_shadows, exec_runtime.cpp): a recompute keeps
    // their values there and puts them back, without allocating in the step.
    std::unordered_map<const c10::TensorImpl *, at::Tensor> stat_shadow;
    // The ReLU / ReLU6 nodes that keep a mask instead of their result (no
    // consumer keeps it: find_act_masks, exec_act_grad.cpp), found once with
    // the model; the block classes and every program run read this set.
    std::unordered_set<const Node *> act_mask;
    // Static values whose backward sums over elements (an `expand` of a
    // parameter: a Perceiver's latents, DETR's queries) read by several
    // groups, with the number of groups reading each (find_static_sums,
    // exec_analyse.cpp).  The plain step adds their gradients from every
    // reader before that sum; a step does the same through one leaf per
    // value (Runtime::sum_leaf), whose gradient goes back once.
    std::map<const Value *, int> static_sums;
    // Static views of those values (DETR's queries transposed for a Linear):
    // the value each is a view of; a step makes them from its leaf, so that
    // their readers' gradients join the sum too.
    std::map<const Value *, const Value *> static_sum_views;
    // The static nodes that read the module's state (parameters, buffers),
    // in node order, the in-place ones (BatchNorm's num_batches_tracked += 1,
    // a hand spectral norm's u.copy_(...)) included: the plain forward
    // computes them every step, from the parameters of that step; a step of
    // a schedule runs them first (run_static_program), so that no static
    // value is the analysis run's after an optimizer step.  Random ones are
    // left out (their draws would move the step's generator).
    std::vector<Node *> static_program;
    // Static values unpacked from a tuple or list of mixed items (a buffer a
    // submodule returned with an activation): the item each stands for.
    std::unordered_map<const Value *, const Value *> static_unpacked;
    std::unordered_map<const Value *, int> piece_owner; // piece value -> the group whose data it is a piece of
    std::vector<ViewSum> view_sums;                     // (find_view_sums, exec_grad_order.cpp)
    std::unordered_map<const Value *, int> view_sum_of; // view -> its index there
};

// ------------------------------------------------------ device layer

// The tracking CPU allocator is installed once per process (before loading).
void install_allocator();
// Allocations made while one of these lives are not counted (copies for --check).
struct PauseTracking {
    bool old;
    PauseTracking();
    ~PauseTracking();
};

// While one of these lives, the warnings PyTorch gives for a kernel without a
// deterministic implementation (under setDeterministicAlgorithms(true,
// warn_only), which --device cuda sets) are collected by kernel name instead
// of printed; every other warning goes on to the handler that was there.  The
// autograd engine replays its worker threads' warnings on the thread that
// called backward, so a backward kernel is seen too.  The names go into
// `into` when given (a training session's, over its steps), else its own set.
struct NondeterminismWatch : c10::WarningHandler {
    std::set<std::string> own;
    std::set<std::string> &kernels;
    c10::WarningHandler *prev;
    explicit NondeterminismWatch(std::set<std::string> *into = nullptr);
    ~NondeterminismWatch() override;
    void process(const c10::Warning &w) override;
    // the names, space-separated and sorted ("" for none), into out (cut short with " ...")
    void copy_names(char *out, size_t size) const;
};

// Memory and time on the model's device: the tracking allocator on CPU, the
// caching allocator's statistics on CUDA (whose blocks are rounded to 512 B).
struct Mem {
    const Model &M;
    explicit Mem(const Model &m) : M(m) {}
    int64_t bytes(bool peak) const; // allocated now, or their peak since reset_peak
    int64_t cur() const { return bytes(false); }
    int64_t peak() const { return bytes(true); }
    // synchronize = false: the allocator's statistics are kept on the host at
    // each allocation, so a reset between two autograd functions needs none.
    void reset_peak(bool synchronize = true) const;
    // The device allocator's reserved bytes (CUDA caching allocator: segments
    // held from the driver) at their peak since reset_peak; 0 on the CPU.
    int64_t reserved_peak() const;
    // Gives cached, unused device memory back (CUDA), so that the next
    // reserved_peak counts what one step reserves; nothing on the CPU.
    void release_cache() const;
    void sync() const;
    double now() const; // microseconds, after a device synchronisation
};

// The generator random ops draw from (CPU, or the model's CUDA device).
at::Tensor rng_get(bool cuda);
void rng_set(bool cuda, const at::Tensor &s);
void rng_seed(bool cuda, uint64_t seed);
// "cpu" / "cuda[:N]": sets M.cuda and M.dev; refuses cuda without a device.
void select_device(Model &M, const char *device, int64_t memory_cap);
// A copy on the CPU kept out of the measurements (for --check and --verify).
at::Tensor keep_copy(const at::Tensor &t);

// ------------------------------------------------------ activation peaks (exec_device.cpp)

// Bytes of the parameter gradients defined now.
int64_t param_grad_bytes_now(const std::vector<at::Tensor> &ps);
// The activation peak of a step whose parameter gradients start as none: the
// allocator's peak minus the parameter gradients `.grad` holds, each counted
// as .grad from the backward function that computed it.  The step is cut into
// segments at the end of every autograd function (hook_graph: post-hooks on
// the functions a backward will run) and before every schedule op
// (boundary()); the segments of functions that hand gradients on (views'
// backward, AccumulateGrad: passes_grads_on) join the one before, and a
// segment's peak counts minus the gradients held when it ends, so a weight
// gradient that reaches .grad through view functions only (an addmm's,
// through `t()`) is not an activation while it is in flight, one added into
// .grad in place stays a temporary, and a gradient that reaches .grad later
// is not taken off an earlier peak (a segment used to stay open until one
// allocated: the unseen gnn's plain peak was 5 % low).  One at a time
// (`current`).
struct ActivationPeak {
    static ActivationPeak *current;
    const Mem &A;
    std::vector<at::Tensor> ps;
    std::vector<unsigned> hooks;
    std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> fn_hooks;
    int64_t grads = 0, best = 0, open_peak = 0, at_reset = 0;
    int64_t bias = 0, open_bias = 0; // added to segments from now on (tracing: data the executor frees)
    int64_t reserved = 0;            // Mem::reserved_peak over the whole step (CUDA)
    bool open = false;
    ActivationPeak(const Mem &a, const std::vector<at::Tensor> &params); // resets the peak
    ~ActivationPeak();
    // The end of a segment; passes_on: of a function that hands gradients on
    // (its segment joins the open one, see passes_grads_on).
    void boundary(bool passes_on = false);
    // Around one backward call: post-hooks on the functions it will run.
    void hook_graph(const std::vector<at::Tensor> &roots);
    void unhook_graph();
    int64_t finish(); // the peak (absolute allocator bytes, less .grad); removes the hooks
    // Op by op (rk_run_options.op_step): the allocator's highest bytes since
    // the last call, less the parameters' gradients that exist now.
    int64_t take_op_peak();
    // Parameter p's .grad is about to be taken away (a seeded root's gradient,
    // exec_grad_order.cpp): from now on those bytes are not .grad.
    void grad_taken(const at::Tensor &p);
  private:
    int64_t op_raw_peak = 0;
    void unhook();
};
// loss.backward(), cut into segments when a step is measured.
void backward_measured(const at::Tensor &loss);

// ------------------------------------------------------ loading (exec_load.cpp)

std::vector<at::Tensor> make_inputs(const rk_exec_options *o);
// Load, inline, analyse, simplify, cut into blocks and classify.
// for_tracing: the blocks' outputs of the analysis run are kept (M.block_output,
// for the tracer's measurements); otherwise its values are dropped after their
// last use (run, train: they need the structure only).
void load_model(Model &M, const rk_exec_options *o, bool for_tracing = false);
std::vector<at::Tensor> params_of(Model &M);
// Bytes of the parameters, of those that require grad (their gradients), of the buffers.
void param_memory(Model &M, int64_t *params, int64_t *grads, int64_t *buffers);
// Parameter gradients set to none, as PyTorch 2.x's zero_grad() does.
void clear_param_grads(std::vector<at::Tensor> &ps);
at::Tensor plain_forward(Model &M, uint64_t seed);

// ------------------------------------------------------ torch.export (exec_export.cpp)

// A torch.export.save archive (models/model.json inside)?
bool is_export_archive(const std::string &path);
// The exported program as a module whose forward has one node per ATen call.
torch::jit::Module load_exported(const std::string &path);

// ------------------------------------------------------ RNNs (exec_rnn.cpp)

// Rewrite each aten::lstm / gru / rnn_tanh / rnn_relu node into the ATen ops
// its plain kernel runs, time step by time step, where that is bit-exact;
// other such nodes stay whole, counted and explained in M.st (rnn_*).
void expand_rnns(Model &M);

// ------------------------------------------------------ in-place writes (exec_functionalize.cpp)

// Rewrite each in-place op that writes (through views) data read by another
// op before it and read again after it, or a model input read again after it:
// the op writes a clone of that data, and later readers read the clone.
// Returns how many were rewritten.
int functionalize_view_writes(Model &M);

// ------------------------------------------------------ analysis (exec_analyse.cpp)

void run_node(Model &M, const Node *n, Stack &st);
void tensors_in(const IValue &v, std::vector<at::Tensor> &out);
void owners_of(Model &M, const Value *v, std::vector<int> &out);
// Is v (through aliases) group g's data or a view of it?
bool owned_by(Model &M, const Value *v, int g);
void analyse(Model &M);
// The argument n's schema marks as written (the last such), or -1.
int written_argument(const Node *n);
// The plain module's result as one tensor: itself, or for tuples, lists and
// dicts cat(flatten(o)) of the floating-point outputs requiring grad, as the
// analysis joins them (the loss covers every output).
at::Tensor join_outputs(const IValue &r);

// ------------------------------------------------------ blocks (exec_blocks.cpp)

// Groups whose data a value reads (real) or whose shape only (shape), through views and lists.
// Run Model::static_program (before a step of a schedule): every static
// value made from the module's state made again from this step's state,
// the static in-place writes done once.
void run_static_program(Model &M);
void collect_deps(Model &M, const Value *v, std::set<int> &real, std::set<int> &shape, bool as_shape,
                  std::set<int> *grad = nullptr, bool no_grad = false);
void build_structure(Model &M);
// Group::part_in_phantom of every group (after build_structure: blocks and
// gradients known).
void find_phantom_parts(Model &M);
void classify_blocks(Model &M);

// ------------------------------------------------------ runtime (exec_runtime.cpp)

// Per group: the proxy (output with its grad_fn: the phantoms), the detached
// leaf (the data, stable for the whole step so that views and saved tensors
// keep pointing at it) and the storages that ever held its data.
struct Part {
    at::Tensor proxy, leaf;
    c10::Storage canon;
    std::vector<c10::Storage> aliases;
    // Strides of the first gradient that reached the leaf (when non-overlapping
    // and dense): the layout autograd's engine would hand the op's backward.
    std::vector<int64_t> grad_strides;
    // Strides of the gradient the op's backward received (bwd_roots), where
    // dense and not the leaf's own: the first gradient may be a piece that
    // is not dense (a cat's narrow), and autograd's sum with the next one
    // permuted (dgcnn's repeat, after a cat and a permute); the tracer
    // measures the backward on ones in this layout (ones_as_received).
    std::vector<int64_t> recv_strides;
    // A gradient kept in its own layout while the leaf's accumulator runs
    // (exec_runtime.cpp, keep_grad_layout): put back as the leaf's .grad by
    // the post-accumulate hook.
    at::Tensor held_grad;
    // The leaf's first gradient, a piece that was not dense (copied in that
    // piece's order): the next one is summed as autograd's
    // input buffer sums it (sum_after_first_piece, exec_runtime.cpp): that
    // copy, while it is the leaf's .grad.
    c10::weak_intrusive_ptr<c10::TensorImpl> first_piece{c10::intrusive_ptr<c10::TensorImpl>()};
};
// Whether g is dense and alone in its storage (from its first byte, no byte
// more): a gradient that holds nothing but itself (exec_runtime.cpp).
bool alone_in_storage(const at::Tensor &g);
// The layout a part's gradient arrives in a step, from the tracer's layout
// probe (recv_strides, else grad_strides; empty: unknown) (exec_runtime.cpp).
const std::vector<int64_t> &received_strides(const Part &P);
// Whether f is one of the executor's functions that hand their input no
// gradient (SelectIntoGrad, DepositGrad) (exec_grad_order.cpp).
bool hands_no_gradient(const torch::autograd::Node *f);
// Whether g has elements on one address (zero strides): an expanded
// gradient kept as .grad, into which nothing is added in place (exec_runtime.cpp).
bool overlapping(const at::Tensor &g);
// Whether another tensor holds g's bytes too: a gradient two leaves share
// (exec_runtime.cpp, share_grad), into which nothing may add in place.
bool storage_shared(const at::Tensor &g);
// One Part per output of the group's op (one for most ops; LSTM: 3).
struct GState {
    std::vector<Part> p;
    bool ran = false;
    bool freed_by_bwd = false; // its backward freed its data (nothing may read it until a recompute)
    unsigned char parts_done = 0; // split backward: parts run on the current autograd graph (BwdPart bits)
};

// A group's backward whole, or one of its two parts (exec_split_bwd.cpp).
enum BwdPart : unsigned char { BWD_ALL = 0, BWD_WEIGHT = 1, BWD_INPUT = 2 };

struct Runtime {
    Model &M;
    std::vector<GState> gs;
    std::unordered_map<const Value *, IValue> cache; // materialized views
    // Training (live_rng): a random node's first run draws from the generator
    // as the plain forward does (its state before is kept in step_rng), a
    // recompute replays that state; without it, every run replays the state
    // the analysis run recorded (one step seeded like the plain one).
    bool live_rng = false;
    std::unordered_map<const Node *, at::Tensor> step_rng;
    int last_random = -1; // graph index of the last random node run first
    // The gradients of pieces (exec_pieces.cpp) that their reader's backward
    // made, kept apart until the owner's backward adds them into its gradient.
    std::map<const Value *, at::Tensor> piece_grad;
    // The strided pieces of a stack's gradient kept for its inputs (by group),
    // and (tracing) the whole buffers the measured pieces are views of.
    std::map<int, at::Tensor> stack_grad;
    // Bytes of gradients handed to a leaf as a buffer another holder has too
    // (exec_runtime.cpp, share_grad): the simulator counts them once per leaf;
    // and those an expanded gradient kept as it is does not hold (keep_expanded_grad).
    int64_t shared_grad_bytes = 0;
    std::vector<at::Tensor> stack_buffers;
    // This step's leaf for each of M.static_sums its readers read (read
    // through DepositGrad, kind SUM: sum_read), the gradient its readers'
    // backwards gave (sum_grad, added as autograd's input buffer adds), and
    // the readers whose backward has not run yet; when none is left (or the
    // step ends) the summed gradient goes back through the value's own graph.
    std::unordered_map<const Value *, at::Tensor> sum_leaf, sum_read, sum_grad;
    std::unordered_map<const Value *, int> sum_left;
    at::Tensor wrap_sum(const Value *v, const at::Tensor &leaf);
    void deposit_sum(const Value *v, const at::Tensor &g);
    void flush_static_sum(const Value *v);
    void flush_static_sums();
    // A node reading one dependency's leaf more than once (`n * n`,
    // `cat([x, x])`) reads it the second time on as an alias leaf (by group:
    // the leaf, its alias, in the order read): the plain step adds each such
    // edge's gradient to the ones before one by one, where one backward
    // would add them together first (exec_runtime.cpp, dedupe_reads).
    std::map<int, std::vector<std::pair<at::Tensor, at::Tensor>>> dup_alias;
    std::unordered_set<const c10::TensorImpl *> param_impls; // filled on first use
    void dedupe_reads(int g, Stack &st);
    void settle_dup_aliases(int g);
    // Each leaf that roots' graph reaches by two edges or more and that has a
    // gradient already (parameters too; among inputs, when given): its .grad
    // handed to the backward by a root of its own, first, so that the edges'
    // gradients add to it one by one, as in the plain step
    // (exec_grad_order.cpp).  Returns how many roots were appended.
    size_t seed_leaf_grads(std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads,
                           const std::vector<at::Tensor> &inputs);
    // View sums (exec_grad_order.cpp): the leaf a reader other than the last
    // reads instead of the view (its gradients add up in its .grad), by view
    // sum; for the last reader's backward, a root handing the view's backward
    // that sum first (traced: zeros of the view's shape).  Returns how many
    // roots were appended.
    std::map<int, Part> vsum_part;
    at::Tensor vsum_leaf(int k);
    size_t seed_view_sums(int g, std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads, bool traced,
                          int64_t *traced_bytes = nullptr);
    void forget_vsum_grad(int k);
    // The leaves of the data whose view sums group g carries, added to a
    // split backward's input part's inputs (the view's backward reaches them).
    void add_carried_leaves(int g, std::vector<at::Tensor> &inputs);
    // Both, for group g's backward (view sums unless view_sums is false: a
    // split backward's weight part): how many roots were appended.
    size_t seed_roots(int g, std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads,
                      const std::vector<at::Tensor> &inputs, bool view_sums, bool traced,
                      int64_t *traced_bytes = nullptr) {
        // (view sums first: a carrier's view is one more way into the data's leaf)
        size_t n = view_sums ? seed_view_sums(g, roots, grads, traced, traced_bytes) : 0;
        return n + seed_leaf_grads(roots, grads, inputs);
    }
    // The hooks of a leaf that takes gradients (exec_runtime.cpp).
    void hook_leaf(Part &T, const Group *G);
    bool made_on_vsum_leaf(int g, const Value *v);
    explicit Runtime(Model &m);
    ~Runtime(); // leaves the layouts it learned in Model::grad_layouts
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;
    // A piece as its reader sees it: its gradient goes to piece_grad.
    at::Tensor wrap_piece(const Value *v, const at::Tensor &t);
    void deposit_piece(const Value *v, const at::Tensor &g);
    // Group g's gradient from its pieces' (zeros elsewhere, in the layout the
    // plain step's engine gives: pieces_grad_strides, by group), as its leaf's .grad.
    void assemble_pieces(int g);
    std::map<int, std::vector<int64_t>> pieces_layout;
    std::vector<int64_t> pieces_grad_strides(int g);
    void forget_piece(const Value *v) { piece_grad.erase(v); }
    // Group g's data as a stack reads it: its gradient goes to stack_grad.
    at::Tensor wrap_stack_input(int g, const at::Tensor &leaf);
    void deposit_stack_grad(int g, const at::Tensor &gr);
    // Tracing: ones in the layout the stack's backward gives group g (a view of a whole buffer).
    at::Tensor stack_piece_ones(int g);
    IValue materialize(const Value *v);
    // The group's program on the current inputs: its outputs (with grad_fn).
    std::vector<at::Tensor> exec_program(int g);
    void fwd(int g);
    // free_data: the chain's backward of g really uses g's data (present).
    // part: the whole backward, or one part of a split one (the part that
    // runs second consumes the gradient; neither frees g's data).
    // forgotten_after: the groups whose data the schedule forgets right after
    // this backward; those g reads go once the root function has run, when
    // nothing the backward runs after it reads a forward tensor (as autograd
    // frees them in the plain step: rest_reads_no_data, exec_runtime.cpp).
    void bwd(int g, bool free_data = false, BwdPart part = BWD_ALL, const std::vector<int> &forgotten_after = {});
    void forget_data(int g);
    void forget_phantom(int g);
    void forget_grad(int g);
    [[noreturn]] void fail_freed_by_bwd(int g) const;
    // The outputs that get a gradient and their gradients (zeros when none
    // arrived at all) for the group's backward.
    void bwd_roots(int g, std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads, bool ones);
    // Backward from the roots.  `retain` keeps the graph's saved tensors (the
    // tracer's timing runs); without it each autograd function's saved tensors
    // are freed as soon as it has run, as the plain step's backward frees them
    // (a matmul's copies of its operands before its input gradients are made).
    // A single root's gradient is freed
    // as soon as the first autograd function has consumed it, as the plain
    // step frees it (unless that function passed it on, itself or a view);
    // returns the bytes freed so.
    // after_root, when given, runs right after the root function (and the
    // gradient's free): the executor frees the group's own data there, the
    // tracer's measurement splits the peak there.
    // The gradient is donated to the root function (an in-place activation
    // may write into it, exec_act_grad.cpp) when the caller holds it only in
    // `grads` and in own_refs more places that it drops after the call, and
    // nothing else does (reference counts just before the root function).
    // inputs: autograd restricted to these leaves (a split backward's part);
    // consume = false: the gradient stays whole (the first part of a split
    // backward: the second reads it), nothing is donated or freed (returns 0).
    // When the root function passed the gradient on as a view (a reshape or
    // permute at the root: an einsum's output), whole and without keeping
    // the graph, its bytes move to a storage of that view's own, so that
    // they go when the engine's views of them go, as in the plain step;
    // counted as freed if they are gone by the end.
    // seeds: the last roots hand leaves their gradient so far
    // (seed_leaf_grads), they are not the group's: its root is roots[0] when
    // it has one.
    static int64_t backward_consuming(const std::vector<at::Tensor> &roots, std::vector<at::Tensor> &grads,
                                      const std::function<void()> &after_root = nullptr, size_t own_refs = 0,
                                      const std::vector<at::Tensor> &inputs = {}, bool consume = true,
                                      bool retain = true, size_t seeds = 0);
    // Whether group g's backward frees its own data after the root function:
    // one output (one root), so that root's function is the last writer of
    // the data, the only function that can have saved it (autograd's version
    // check), and no other node's backward reads it after g's.  Not when the
    // output is a view (an in-place op on a view, e.g. `relu_` after a Linear
    // on a 3-d input, whose result is a view of addmm's): its root function is
    // the view's, and the function that saved the data (ReluBackward0, inside
    // CopySlices) runs after it — freed there, it would read freed memory.
    bool frees_data_in_bwd(int g) const {
        return gs[g].p.size() == 1 && gs[g].p[0].canon && !(gs[g].p[0].proxy.defined() && gs[g].p[0].proxy.is_view());
    }

  private:
    IValue materialize_in(int g, const Value *v, std::unordered_map<const Value *, IValue> &local);
};

// ------------------------------------------------------ activation gradients in place (exec_act_grad.cpp)
// fn is the backward of an in-place activation run by run_act_inplace (an
// element-wise function of the incoming gradient and the saved result or mask).
bool is_act_inplace_fn(const torch::autograd::Node *fn);

// The gradient a backward call donates: its root function's incoming
// gradient, when nothing outside autograd holds it (set by
// Runtime::backward_consuming just before the root function runs, cleared
// after it); moved: the bytes an in-place activation's backward took from it.
// keep: the first part of a split backward, whose root is an in-place ReLU or
// ReLU6 (is_act_inplace_fn): its backward may write into the gradient, which
// the caller keeps for the second part (whose ReLU backward, zeroing the same
// elements again, then leaves it as it is: idempotent), instead of making a
// new tensor the size of the gradient in the first part.
struct GradDonation {
    const c10::TensorImpl *impl = nullptr;
    int64_t moved = 0;
    bool keep = false;
};
GradDonation &grad_donation();
// Run n, an in-place activation merged into its owner's group (relu_,
// hardtanh_, leaky_relu_, sigmoid_, tanh_ on a tensor requiring grad), as the
// autograd function whose backward writes into a donated gradient (saving the
// mask instead of the result when n is in M.act_mask: mask); false (st
// untouched) for any other node.
bool run_act_inplace(const Node *n, Stack &st, bool mask);
// Run n, an out-of-place `relu`, `relu6` or `hardtanh` of M.act_mask on a
// tensor requiring grad, as the autograd function that saves the one-byte
// mask of the elements its backward zeroes instead of the result
// (run_act_inplace does the same for relu_ / hardtanh_); false (st
// untouched) otherwise.
bool run_act_mask(const Node *n, Stack &st);
// M.act_mask: the ReLU / ReLU6 nodes whose result no consumer's backward
// keeps; called by load_model before the blocks are classified (a block's
// class text names them: equal bodies may differ in their consumers).
void find_act_masks(Model &M);
void find_static_sums(Model &M);
// Model::view_sums (exec_grad_order.cpp), after find_pieces.
void find_view_sums(Model &M);
// The static sums (Model::static_sums) all of whose readers are in block b,
// their readers in topological order (the first one's backward runs last
// and flushes the sum): the chain gives each sum's buffer a grad D-node
// (s<k>) made by the readers' backwards and used by the last one's
// (exec_grad_order.cpp); a sum read across blocks stays outside the chain.
struct BlockStaticSum {
    const Value *v = nullptr;
    std::vector<int> readers;
    int64_t bytes = 0;
};
std::vector<BlockStaticSum> block_static_sums(Model &M, int b);
// v, or the value it stands for (VInfo::alias), followed to the end (exec_pieces.cpp).
const Value *resolve_alias(Model &M, const Value *v);
// What view p of group d's data is made from: its source input, or the one
// item of a list source that is d's data or a view of it (exec_grad_order.cpp).
const Value *view_source(Model &M, const Value *p, int d);
// The bytes of v, a view of group d's data (-1: unknown; exec_pieces.cpp).
int64_t bytes_of(Model &M, const Value *v, int d);

// Whether group g's leaf may take a gradient another leaf holds too (an
// add's backward hands both inputs one tensor: exec_runtime.cpp, share_grad):
// one-op groups only.  A block's input group decides whether its first
// backward's gradient is copied, so it is part of the block's class.
bool may_share_grad(const Group &G);

// ------------------------------------------------------ pooling without its input (exec_pool_grad.cpp)

// Run n, `max_pool2d` or `avg_pool2d` on a tensor requiring grad (grad mode
// on), as the autograd function that saves the indices and the input's shape
// but not the input; false (st untouched) for any other node.
bool run_pool_no_input(const Node *n, Stack &st);

// M.stat_shadow: a tensor like each running statistic (arguments 3 and 4) of
// the BatchNorm-like nodes in training mode whose statistics are the model's
// own (static) tensors; called by load_model, before any step.
void make_stat_shadows(Model &M);

// ------------------------------------------------------ CD-graphs (exec_cdgraph.cpp)

// kind: 0 fwd, 1 bwd (whole), 2 loss, 3 bwd's weight part, 4 bwd's input part
struct CMapEntry { int kind; int local; };
// kind: 0 data, 1 phantom, 2 grad, 3 a piece's gradient (piece: its index), 4 a view sum's
// gradient (piece: its index in the owner's vsums_owned), 5 a static sum's buffer (local: its
// last reader; the flush after that reader's backward frees it); local < 0: input -1-i
struct DMapEntry { int kind; int local; int piece = -1; };

struct Measure {
    double fwd_time = 0, bwd_time = 0;
    int64_t fwd_over = 0, bwd_over = 0, phantom = 0;
    bool saved_self = true;
    std::set<int> saved_deps; // groups whose data the backward reads
    // The backward in two parts (exec_split_bwd.cpp): the weight part's and
    // the input part's time and overhead (the input part reads no dependency's data).
    bool split = false;
    double w_time = 0, x_time = 0;
    int64_t w_over = 0, x_over = 0;
};

struct ClassGraph {
    std::vector<CMapEntry> cmap;
    std::vector<DMapEntry> dmap;
    // by compute node: a backward (or a part) that really uses its node's own
    // data in the chain (so the data is present whenever it runs, and may be
    // freed during it)
    std::vector<char> bwd_reads_self;
    // by local node: its backward is split in two (weight part, input part)
    std::vector<char> split;
};

// Block inputs: the model inputs (block 0) or the previous block's output.
std::vector<int> block_inputs(Model &M, int b);
// Side inputs: the model inputs a block after the first reads (a label read
// only by the loss).  In the chain they are block 0's inputs, held until the
// backward of block 0's last node, which runs after every later block's.
std::vector<int> side_inputs(const Model &M);
// An op's name as the CD-graph's node names carry it (non-alphanumerics -> '_').
std::string sanitize(const std::string &s);
// The CD-graph of block b (measures may be null: structure only; then
// cg.split, if sized, says which local nodes' backward is split).
void build_class_graph(Model &M, int b, const std::vector<Measure> *meas, double loss_time, rk_graph *gr,
                       ClassGraph &cg);

// ------------------------------------------------------ split backward (exec_split_bwd.cpp)

// Group g's backward can run in two parts: its autograd graph is one
// convolution / Linear function (ConvolutionBackward0/1, AddmmBackward0,
// MmBackward0, below views of its result only) whose edges go either to
// parameters only or to the group's dependencies only, with at least one of
// each.  Fills the leaves of the weight part (parameters) and of the input
// part (the dependencies' leaves); false (and why) otherwise.
bool split_leaves(Model &M, Runtime &R, int g, std::vector<at::Tensor> &params, std::vector<at::Tensor> &ins,
                  std::string *why = nullptr);
// Tracing: the weight part's gradients (autograd restricted to params) and
// the input part's (to ins) equal the whole backward's, bit for bit (the
// leaves' .grad are cleared before and after each run).
bool split_parts_equal(const std::vector<at::Tensor> &roots, const std::vector<at::Tensor> &grads,
                       const std::vector<at::Tensor> &params, const std::vector<at::Tensor> &ins);
// Tracing: whether the input part reads its dependencies' data (a NaN
// poison of their bytes, then their storage emptied as the executor's
// forget_data does, change its gradients or make it fail).
bool input_part_reads(Model &M, Runtime &R, int g, const std::vector<at::Tensor> &roots,
                      const std::vector<at::Tensor> &grads, const std::vector<at::Tensor> &ins);

// ------------------------------------------------------ pieces (exec_pieces.cpp)

// After build_structure: the groups read only through pieces (Group::pieces)
// and the inputs of a stack whose gradient piece is kept (Group::stack_reader).
void find_pieces(Model &M);
// Whether every reader of group d's data that takes a gradient reads it
// only through pieces; each piece's readers in `reader`.
bool read_only_through_pieces(Model &M, int d, std::map<const Value *, std::vector<int>> &reader);
// The same, all pieces items of a split / chunk / unbind (build_structure
// does not cut a block there: the next block's input gradient would be one
// zero-filled buffer from its first item's backward on).
bool read_only_through_split_items(Model &M, int d);
// Whether group g's data is an item of the one `cat`/`stack` (along a dim
// other than 0) that reads it, whose backward hands it a strided piece of
// its gradient, which its own backward takes as it is (exec_pieces.cpp):
// kept so only within a block, as a block's input it would be made dense.
bool read_as_a_strided_piece(Model &M, int g);

// ------------------------------------------------------ training data (exec_train_data.cpp)

// One .npy input stream: items of the model input's shape and dtype.
struct NpyStream {
    std::string path;
    at::ScalarType dtype = at::kFloat;
    std::vector<int64_t> item_shape;
    int64_t items = 0, item_bytes = 0;
    uint64_t offset = 0; // of the first item
};
// Open and check (header, dtype, shape (K, *like's shape), size) for model input `input`.
NpyStream npy_open(const std::string &path, const at::Tensor &like, int input);
// Item i mod K.
at::Tensor npy_read(const NpyStream &s, int64_t i);

// ------------------------------------------------------ the two jobs

void trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st);
void run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s, const rk_run_options *ro,
         rk_run_result *res);

// Shared by rk_exec_run and training sessions (exec_run.cpp): check that the
// chain is this model's and map its classes' nodes onto the model's groups;
// run a (simulated) schedule's operations [from, to) (to < 0: all) with R,
// returning the loss value (and a copy of the output in *out when out is not
// null); with grad_out, the loss node backpropagates that gradient of the
// output instead (the loss was computed by the caller).
std::vector<ClassGraph> match_chain(Model &M, const rk_chain *ch);
double run_schedule_ops(Model &M, const std::vector<ClassGraph> &cgs, const rk_schedule *s, rk_loss_kind loss,
                        Runtime &R, at::Tensor *out, int from = 0, int to = -1,
                        const at::Tensor *grad_out = nullptr, std::vector<int64_t> *op_step = nullptr,
                        std::vector<int64_t> *op_live = nullptr);

} // namespace rkx

#endif
