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
} rk_trace_stats;

/* Trace the model into a chain (classes measured on their first block). */
RK_API rk_status rk_exec_trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st, rk_error *err);

typedef enum { RK_LOSS_SUM = 0, RK_LOSS_MEAN = 1 } rk_loss_kind;

typedef struct {
    int iters;                   /* timed iterations of each step (default 3); peak is the max */
    int check;                   /* compare gradients and output with the plain step */
    rk_loss_kind loss;
} rk_run_options;

typedef struct {
    int64_t measured_peak;       /* bytes of activations (params and their grads excluded),
                                    the first block's inputs included as in the simulator */
    int64_t baseline_peak;       /* same for the plain step (module forward + autograd) */
    double measured_time;        /* microseconds, median over iterations */
    double baseline_time;
    int checked;
    int grads_equal;             /* every parameter gradient and the output are equal */
    int output_equal;
    double max_abs_diff;         /* over parameter gradients and the output */
    double max_rel_diff;
    double loss;                 /* the loss value of the schedule's step */
    int n_params;
    int64_t input_bytes;
} rk_run_result;

/* Run schedule `s` (already validated by rk_simulate) on the model, whose
 * chain `ch` must be what rk_exec_trace produces for the same options. */
RK_API rk_status rk_exec_run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                      const rk_run_options *ro, rk_run_result *res, rk_error *err);

/* Nonzero when this build's libtorch has CUDA and a device is present. */
RK_API int rk_exec_cuda_available(void);

#ifdef __cplusplus
}
#endif
#endif
