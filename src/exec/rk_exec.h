/* rk_exec.h — public C API of the libtorch part of rkmate (built against
 * libtorch 2.x: PyPI's torch 2.11 in the project's .venv): the rk-GB tracing
 * front end (TorchScript model or torch.export program -> measured chain of CD-graphs) and the rk-Exec
 * executor (run a schedule as a real training step, check its gradients and
 * measure its memory and time against the plain PyTorch step).
 *
 * Everything is deterministic given the model file, the input specs, the
 * input file (if any) and the seed: `rk_exec_run` re-traces the model the same
 * way `rk_exec_trace` did and checks that the result matches the chain, so
 * that schedule operations on the chain's nodes map back to model nodes.
 * See docs/exec.md.
 *
 * libtorch keeps process-wide state (the CPU allocator, the default generator,
 * thread pools): these calls install a tracking CPU allocator on first use and
 * must not run concurrently in one process.
 */
#ifndef RK_EXEC_H
#define RK_EXEC_H

#include <stdint.h>
#include "rk_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RK_EXEC_MAX_INPUTS 16

typedef struct {
    const char *model_path;      /* TorchScript file (torch.jit.trace(...).save), or a
                                    torch.export.save archive (.pt2, static shapes) */
    int n_inputs;
    const char *inputs[RK_EXEC_MAX_INPUTS]; /* "4x64:int64", "2x3x32x32:float32" */
    const char *input_file;      /* NULL, or a torch.save file of a tensor or a list/tuple of
                                    tensors: the inputs (the exporters' PATH.inputs.pt);
                                    inputs[], if any, must then describe them */
    const char *device;          /* "cpu" (default), "cuda" or "cuda:N" */
    uint64_t seed;               /* seeds random inputs (when no input file) and the
                                    generator before each step (dropout) */
    int measure_runs;            /* timed runs per compute node (median); 0 = default 3; fewer when a
                                    node takes long */
    int measure;                 /* != 0: measure times and memory (trace); 0: structure only */
    int progress;                /* != 0: progress lines on stderr */
    int verify;                  /* trace: also run the plain module and every block's
                                    forward, and compare the outputs bit for bit */
    int no_split_bwd;            /* trace: keep every backward whole (by default a convolution's or
                                    Linear's backward is split in two nodes, weight part and input
                                    part, where its gradients stay bit-exact; docs/exec.md) */
    int64_t memory_cap;          /* CUDA: > 0 caps the caching allocator at this many bytes of the
                                    device (setMemoryFraction, as torch.cuda.
                                    set_per_process_memory_fraction): a step needing more fails
                                    with "out of memory"; 0: no cap.  Refused on the CPU */
} rk_exec_options;

typedef struct {
    int nodes_inlined;           /* nodes of the inlined TorchScript graph */
    int nodes_ops;               /* of which operations (no prim::Constant / GetAttr) */
    int nodes_dynamic;           /* of which operations on activations (depending on the
                                    inputs' data or shape): the forward graph rk-GB simplifies */
    int nodes_simplified;        /* compute nodes after simplification (one per allocation) */
    int n_views, n_inplace, n_sizes, n_static, n_cheap;
    int n_blocks, n_classes;
    int forward_equal;           /* the blocks run forward in order reproduce the
                                    module's output bit for bit (-1: not verified) */
    double max_forward_diff;
    double seconds;              /* whole trace, wall clock */
    int rnn_expanded;            /* aten::lstm/gru/rnn_tanh/rnn_relu nodes rewritten into their time steps */
    int rnn_steps;               /* of which time steps (per node: the sequence length) */
    int rnn_layered;             /* such nodes split into their layers only (float32 LSTM on CPU: oneDNN) */
    int rnn_kept;                /* such nodes kept whole */
    int rnn_cells;               /* nn.GRUCell / nn.LSTMCell calls (ATen's cell code: in-place ops on
                                    unsafe_chunk pieces) rewritten into out-of-place steps */
    char rnn_warning[640];       /* "" or the first node layered or kept, and why its time steps cannot be
                                    separated bit-exactly */
    int split_bwd;               /* backward nodes (of the classes' CD-graphs) split in two parts */
    int split_bwd_unequal;       /* nodes that could be split but whose parts' gradients differ from
                                    the one call's bit for bit: kept whole */
    char split_warning[512];     /* "" or the first such node */
    int64_t analysis_peak;       /* bytes the analysis run (rk-GB's one run of the whole model on the
                                    example inputs, which every command loading a model makes) held at
                                    its peak on the device, beyond the parameters and inputs */
    int n_functionalized;        /* in-place ops writing (through views) data read before and again
                                    after them: rewritten to write a copy, which later readers read
                                    (one more allocation each; docs/exec.md) */
    char nondeterministic_kernels[512]; /* "" or the kernels PyTorch said have no deterministic
                                    implementation on this device while the trace ran the model
                                    (as rk_run_result.nondeterministic_kernels) */
} rk_trace_stats;

/* Trace the model into a chain (classes measured on their first block). */
RK_API rk_status rk_exec_trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st, rk_error *err);

typedef enum { RK_LOSS_SUM = 0, RK_LOSS_MEAN = 1 } rk_loss_kind;

typedef struct {
    int iters;                   /* timed iterations of each step (default 3); peak is the max */
    int check;                   /* compare gradients and output with the plain step */
    rk_loss_kind loss;
    /* Op by op (`rkmate run --memory-log`): NULL, or s->n_ops entries each, filled from the
       last timed iteration as the measured peak is (activation bytes, the first block's inputs
       included): op_step[i] the highest while op i ran, op_live[i] what is held after it;
       -1 for marks.  Beside rk_simulate_ops' op_step and op_live they show where a step
       leaves its prediction. */
    int64_t *op_step, *op_live;
} rk_run_options;

typedef struct {
    int64_t measured_peak;       /* bytes of activations (params and their grads excluded),
                                    the first block's inputs included as in the simulator */
    int64_t baseline_peak;       /* same for the plain step (module forward + autograd) */
    int64_t measured_reserved;   /* CUDA: the caching allocator's reserved bytes at their peak
                                    in the warm-up step, started from an emptied cache (all
                                    device memory the step held from the driver, parameters
                                    included); 0 on the CPU */
    int64_t baseline_reserved;   /* same for the plain step */
    double measured_time;        /* microseconds, median over iterations */
    double baseline_time;
    int checked;
    int grads_equal;             /* every parameter gradient and the output are equal */
    int output_equal;
    double max_abs_diff;         /* over parameter gradients and the output */
    double max_rel_diff;
    int grads_differing;         /* how many parameter gradients differ */
    int plain_repeatable;        /* the plain step run twice gives the same gradients and
                                    output bit for bit (1), not (0: the device's kernels are
                                    not deterministic there), not known (-1: one iteration) */
    char grads_differing_names[1024]; /* "" or the differing parameters' names, in the module's
                                    order, space-separated, each with its largest absolute
                                    difference ("h.0.attn.c_attn.weight:3.7e-09"), cut short
                                    with "..." */
    char nondeterministic_kernels[512]; /* "" or the kernels that PyTorch said, while the plain
                                    step or the schedule ran, have no deterministic implementation
                                    on this device (CUDA, where rkmate asks for deterministic
                                    ones: "adaptive_avg_pool2d_backward_cuda"), space-separated,
                                    cut short with "...": gradients may then differ from run to
                                    run, the plain step's own included */
    int64_t analysis_peak;       /* bytes the model's loading (rk-GB's analysis run) held at its peak
                                    on the device (rk_trace_stats.analysis_peak) */
    double loss;                 /* the loss value of the schedule's step */
    int n_params;
    int64_t input_bytes;
    /* Outside the activation peaks above (and outside every budget): */
    int64_t param_bytes;         /* the model's parameters */
    int64_t param_grad_bytes;    /* their gradients (parameters that require grad) */
    int64_t buffer_bytes;        /* buffers (BatchNorm running statistics, ...) */
    int64_t shared_grad_bytes;   /* gradients the schedule's step handed to a second holder as the
                                    same buffer (an add's backward gives one gradient to both
                                    inputs, as plain autograd does), or kept expanded as the plain
                                    step holds it (a `sum`'s gradient: a few bytes, not the
                                    activation's): the simulator counts each holder's whole
                                    gradient, so the measured peak may be below the prediction by
                                    up to this; 0: the prediction is the step's */
} rk_run_result;

/* Run schedule `s` (already validated by rk_simulate) on the model, whose
 * chain `ch` must be what rk_exec_trace produces for the same options. */
RK_API rk_status rk_exec_run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                      const rk_run_options *ro, rk_run_result *res, rk_error *err);

/* ------------------------------------------------------------ training
 *
 * A training session: the model, its chain and a schedule are loaded once,
 * then every rk_train_step runs one training step on the step's inputs
 * (the schedule holds for any inputs of the traced shapes): forward and
 * backward as the schedule says (or the plain PyTorch step when the
 * schedule is NULL: the reference), the gradients land in the model's
 * parameters, and a libtorch optimizer steps them.  The generator is seeded
 * once (options' seed) when the session opens; BatchNorm running statistics
 * are updated once per step and a recomputed random node (dropout) draws the
 * same numbers as its first run, so a session with a schedule and one
 * without give equal losses, parameters and buffers bit for bit.  Sessions
 * share libtorch's process-wide state: run one step at a time. */

typedef enum {
    RK_OPTIM_SGD = 0, RK_OPTIM_ADAM = 1, RK_OPTIM_ADAMW = 2,
    RK_OPTIM_NONE = 3            /* the caller steps the parameters (rk_exec_torch.h) */
} rk_optim_kind;

typedef struct {
    rk_optim_kind optimizer;
    double lr;                   /* learning rate (> 0) */
    double weight_decay;         /* SGD and Adam: L2 added to the gradient; AdamW: decoupled */
    double momentum;             /* SGD only */
    rk_loss_kind loss;           /* loss = sum or mean of the model's output */
    int n_data;                  /* 0: random inputs, drawn at each step from the seed and the step
                                    number (values as rk_exec_options' random inputs) */
    const char *data[RK_EXEC_MAX_INPUTS]; /* one .npy file per model input (numpy.save of an array of
                                    shape (K, *input shape), the input's dtype, little-endian, C order):
                                    step i (from 0) reads item i mod K */
    int keep_generator;          /* nonzero: the session does not seed the generator, and leaves it
                                    as it was before rk_train_open (the caller seeds) */
} rk_train_options;

typedef struct {
    int step;                    /* steps done, this one included */
    double loss;
    double time_us;              /* forward + backward + optimizer step, wall clock */
    int64_t peak;                /* peak activation bytes of the forward and backward (as
                                    rk_run_result.measured_peak: parameters, gradients and
                                    optimizer state excluded, the inputs included) */
    int64_t allocated;           /* all bytes allocated after the step (parameters, gradients,
                                    optimizer state, data): constant from the second step on */
    /* Outside the activation peak (and outside every budget): */
    int64_t param_bytes;         /* the model's parameters */
    int64_t param_grad_bytes;    /* their gradients */
    int64_t buffer_bytes;        /* buffers (BatchNorm running statistics, ...) */
    int64_t optimizer_bytes;     /* the optimizer's state after the step (Adam's two moments,
                                    SGD's momentum buffers) */
    char nondeterministic_kernels[256]; /* "" or the kernels PyTorch said, during this step or an
                                    earlier one of the session, have no deterministic implementation
                                    on this device (as rk_run_result.nondeterministic_kernels): the
                                    steps' results may then differ from run to run */
} rk_train_step_result;

typedef struct rk_train rk_train;

/* Open a session.  `s` (NULL for plain training) is replayed by the
 * simulator first and refused when invalid; `ch` must be the model's chain
 * (as for rk_exec_run).  Bad data files (unreadable, not .npy, dtype or
 * shape other than the model's inputs, truncated) are RK_EINPUT. */
RK_API rk_status rk_train_open(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                        const rk_train_options *to, rk_train **out, rk_error *err);
/* One training step. */
RK_API rk_status rk_train_step(rk_train *t, rk_train_step_result *r, rk_error *err);
/* Write the model with its current parameters and buffers, in the format it
 * was loaded from (TorchScript; a torch.export archive cannot be written:
 * RK_EINPUT), atomically: a failed or killed save leaves no partial file. */
RK_API rk_status rk_train_save(rk_train *t, const char *path, rk_error *err);
/* FNV-1a hashes of the parameters' and of the buffers' bytes (names and
 * values, module order): equal hashes mean bit-identical states. */
RK_API rk_status rk_train_digest(rk_train *t, uint64_t *params, uint64_t *buffers, rk_error *err);
RK_API void rk_train_free(rk_train *t);

/* Nonzero when this build's libtorch has CUDA and a device is present. */
RK_API int rk_exec_cuda_available(void);

#ifdef __cplusplus
}
#endif
#endif
