/* rk_graph.h — public API of the graph module: CD-graphs (compute and data
 * nodes), chains of blocks, schedules, their file formats, the simulator that
 * replays a schedule, and the baseline schedules.
 *
 * It stands on the base layer (rk_base.h: status, errors, log, atomic files,
 * units), whose conventions it follows.
 *
 * The model (paper appendix "Inspection and backward nodes"):
 *  A block is a CD-graph.  Compute nodes (C-nodes) are forward, backward, or
 *  the single loss node; each has a time and a temporary memory overhead.
 *  Data nodes (D-nodes) are data (a tensor's .data), grad (.grad) or phantom
 *  (tensors saved for backward inside grad_fn); each has a size.  Edges go
 *  compute→data (the compute node produces the data) and data→compute (the
 *  compute node uses the data); a use edge is real (the data must be in
 *  memory), fake (only the shape is needed: not a memory dependency) or
 *  global (the data comes from the previous block; a memory dependency).
 *
 *  Every block graph has: inputs (data nodes with no producer; for every block
 *  but the first exactly one, the previous block's output), one output data
 *  node, one loss node that uses the output and produces the output's grad
 *  (`output_grad`), and for each input either its grad node (`input_grads`,
 *  produced by backward nodes) or none (-1) when the input needs no gradient.
 *
 *  A chain is a sequence of blocks; each block is an instance of a class (a
 *  graph); identical blocks share a class.  On the whole chain, block k+1's
 *  input is block k's output and block k+1's input grad is block k's output
 *  grad; the loss nodes of all blocks but the last do not exist at chain level
 *  (the rest of the chain stands in their place).  The last block's loss node
 *  is the real loss.
 *
 * Simulation semantics (the judge of every solver; see docs/formats.md):
 *  - initially the first block's inputs are in memory (and counted);
 *  - run C: every real/global use must be present (a grad must be complete:
 *    all its producers have run since it appeared); the memory at that step
 *    is live + size of C's outputs not already present + the step overhead
 *    of C (rk_cnode_step_overhead: its overhead, which a negative value can
 *    lower only by the gradients C alone produces, so never below live);
 *    C's outputs then become present (a grad output already
 *    present accumulates the contribution, no new memory; a forward output
 *    already present is recomputed in place, no new memory);
 *  - backward nodes and the loss run exactly once each;
 *  - forget D: D must be present; a grad must be complete;
 *  - at the end every backward node and the loss have run.
 *  Time is the sum of the times of the C-nodes run.
 */
#ifndef RK_GRAPH_H
#define RK_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include "rk_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ CD-graph */

typedef enum { RK_C_FWD = 0, RK_C_BWD = 1, RK_C_LOSS = 2 } rk_ckind;
typedef enum { RK_D_DATA = 0, RK_D_GRAD = 1, RK_D_PHANTOM = 2 } rk_dkind;
typedef enum { RK_EDGE_REAL = 0, RK_EDGE_FAKE = 1, RK_EDGE_GLOBAL = 2 } rk_edge_kind;

typedef struct {
    int data;             /* index of the data node used */
    rk_edge_kind kind;
} rk_use;

typedef struct {
    char *name;           /* unique among the graph's compute nodes */
    rk_ckind kind;
    double time;          /* microseconds, finite, >= 0 */
    int64_t overhead;     /* temporary bytes during the op; may be < 0: the
                             op writes outputs in the place of inputs it
                             consumes (rk_cnode_step_overhead) */
    int64_t grad_accum;   /* part of overhead (0 <= it <= max(overhead, 0)): weight
                             gradients added into .grad in place (a parameter
                             whose gradient another node gave first) */
    char *target;         /* name of the model node this belongs to (for the
                             executor); may be NULL */
    int n_uses;
    rk_use *uses;
    int n_outs;
    int *outs;            /* indices of produced data nodes */
} rk_cnode;

typedef struct {
    char *name;           /* unique among the graph's data nodes */
    rk_dkind kind;
    int64_t size;         /* bytes, >= 0 */
    char *target;         /* model node name, may be NULL */
    /* derived by rk_graph_finalize: */
    int n_producers;
    int *producers;       /* compute nodes producing it, increasing index */
    int n_users;
    int *users;           /* compute nodes using it (any edge kind) */
} rk_dnode;

typedef struct {
    int n_c, n_d;
    rk_cnode *c;
    rk_dnode *d;
    int n_inputs;
    int *inputs;          /* data nodes that are block inputs */
    int *input_grads;     /* n_inputs entries; -1 = no gradient */
    int output;           /* data node */
    int output_grad;      /* grad node produced by the loss */
    int loss;             /* index of the loss compute node */
    /* derived by rk_graph_finalize: */
    int *topo;            /* n_c compute indices in a topological order
                             (forward nodes, loss, backward nodes; ties by
                             index) */
    int finalized;
    /* builder bookkeeping */
    int cap_c, cap_d;
} rk_graph;

/* Builder.  Nodes are appended; indices are returned (or -1 on OOM). */
RK_API void rk_graph_init(rk_graph *g);
RK_API void rk_graph_free(rk_graph *g);
RK_API int rk_graph_add_data(rk_graph *g, const char *name, rk_dkind kind, int64_t size);
RK_API int rk_graph_add_compute(rk_graph *g, const char *name, rk_ckind kind,
                         double time, int64_t overhead);
/* The overhead the simulator adds to a step running compute node c of a
 * finalized graph: max(overhead, -S), S = the bytes of the gradients only c
 * produces (always new when c runs, as it runs once): a negative overhead
 * says c writes those outputs in the place of inputs it consumes (an
 * activation's backward writing into its incoming gradient); a forward's is
 * max(overhead, 0). */
RK_API int64_t rk_cnode_step_overhead(const rk_graph *g, int c);
RK_API rk_status rk_graph_add_use(rk_graph *g, int c, int d, rk_edge_kind kind);
RK_API rk_status rk_graph_add_out(rk_graph *g, int c, int d);
RK_API rk_status rk_graph_set_target(rk_graph *g, int is_compute, int idx, const char *target);
/* Declare an input (and its grad node or -1). */
RK_API rk_status rk_graph_add_input(rk_graph *g, int d, int grad);
/* Set output, output_grad and the loss node (the loss's use/out edges are
 * added by the caller like any others). */
RK_API void rk_graph_set_output(rk_graph *g, int output, int output_grad, int loss);

/* Validate and compute derived fields.  `where` prefixes messages (e.g.
 * "chain.rkg: class 2").  Checks: names unique, edges in range, sizes >= 0,
 * times finite and >= 0, exactly one loss node which uses the output and
 * produces output_grad, every data node has a producer or is an input (and
 * inputs have none), acyclic, forward nodes use no grad data, backward nodes
 * produce only grads. */
RK_API rk_status rk_graph_finalize(rk_graph *g, const char *where, rk_error *err);

RK_API int rk_graph_find_compute(const rk_graph *g, const char *name); /* -1 if none */
RK_API int rk_graph_find_data(const rk_graph *g, const char *name);
/* Deep copy (finalized if src is). */
RK_API rk_status rk_graph_copy(rk_graph *dst, const rk_graph *src);

RK_API const char *rk_ckind_name(rk_ckind k);
RK_API const char *rk_dkind_name(rk_dkind k);
RK_API const char *rk_edge_kind_name(rk_edge_kind k);

/* --------------------------------------------------------------- chain */

typedef struct {
    char *name;
    int cls;              /* index into chain->classes */
} rk_block;

typedef struct {
    int n_classes;
    rk_graph *classes;
    int n_blocks;
    rk_block *blocks;
    char *model;          /* free text: where the chain came from; may be NULL */
    char *device;         /* "cpu", "cuda", ... may be NULL */
    int64_t plain_peak;   /* activation peak of the plain PyTorch step (forward +
                           * backward, no recomputation) measured by `rkmate
                           * trace`, the chain inputs included: what a percentage
                           * budget ("50%") is a percentage of; 0 = unknown */
    /* Memory outside every budget (budgets are activation memory, as in the
     * paper), recorded by `rkmate trace`; 0 = unknown: */
    int64_t param_bytes;      /* the model's parameters */
    int64_t param_grad_bytes; /* their gradients (parameters that require grad) */
    int64_t buffer_bytes;     /* its buffers (BatchNorm running statistics, ...) */
} rk_chain;

RK_API void rk_chain_init(rk_chain *ch);
RK_API void rk_chain_free(rk_chain *ch);
/* Append a class (takes ownership of *g's contents; *g is reset). */
RK_API int rk_chain_add_class(rk_chain *ch, rk_graph *g);
RK_API int rk_chain_add_block(rk_chain *ch, const char *name, int cls);
/* Validate the chain: every class finalized; at least one block; blocks
 * after the first have exactly one input, whose size equals the previous
 * block's output size and whose grad node exists (the chain must be
 * trainable through every boundary) with the size of the previous block's
 * output grad. */
RK_API rk_status rk_chain_validate(const rk_chain *ch, const char *where, rk_error *err);

/* Whole-chain view: global numbering of compute and data nodes.
 * Global data ids: block k's local data d maps to data_base[k] + d, except
 * that block k+1's input maps to block k's output and block k+1's input grad
 * to block k's output grad.  Non-last blocks' loss nodes map to -1. */
typedef struct {
    int n_blocks;
    int *c_base;          /* n_blocks + 1 */
    int *d_base;          /* n_blocks + 1 */
    int n_c, n_d;         /* global counts (loss nodes of non-last blocks are
                             counted in c numbering but marked absent) */
    int *d_map;           /* d_base[k] + local -> global data id */
    int *c_present;       /* n_c: 0 for non-last loss nodes */
    int64_t *d_size;      /* per global data id */
    int *d_block;         /* owning block of a global data id */
    int *d_local;         /* local index in its owning block */
} rk_chain_index;

RK_API rk_status rk_chain_index_build(const rk_chain *ch, rk_chain_index *ix, rk_error *err);
RK_API void rk_chain_index_free(rk_chain_index *ix);

/* ------------------------------------------------------------ schedule */

typedef enum {
    RK_OP_RUN = 0,        /* run compute node `node` of block `block` */
    RK_OP_FORGET = 1,     /* forget data node `node` of block `block` */
    RK_OP_MARK = 2        /* a block-level marker, no effect on memory */
} rk_op_kind;

typedef enum {
    RK_MARK_FWD_BEGIN = 0, RK_MARK_FWD_END = 1,
    RK_MARK_BWD_BEGIN = 2, RK_MARK_BWD_END = 3
} rk_mark_kind;

typedef struct {
    rk_op_kind kind;
    int block;            /* block index in the chain (0 for block-level) */
    int node;             /* local compute (RUN) or data (FORGET) index;
                             for MARK: the rk_mark_kind */
    int option;           /* MARK: the block option used (-1: none; 0: no
                             saving); ignored otherwise */
} rk_op;

typedef struct {
    int n_ops, cap_ops;
    rk_op *ops;
    char *algo;           /* "rockmate", "rotor", ... may be NULL */
    int64_t budget;       /* bytes; -1 if none */
    int64_t predicted_peak;
    double predicted_time; /* microseconds */
} rk_schedule;

RK_API void rk_schedule_init(rk_schedule *s);
RK_API void rk_schedule_free(rk_schedule *s);
RK_API rk_status rk_schedule_push(rk_schedule *s, rk_op_kind kind, int block, int node, int option);
RK_API rk_status rk_schedule_append(rk_schedule *dst, const rk_schedule *src);
RK_API void rk_schedule_set_algo(rk_schedule *s, const char *algo);

/* ------------------------------------------------------------ file I/O */

/* .rkg chain file and .rks schedule file, versioned JSON (docs/formats.md).
 * Readers name the file, the line/column or JSON path / node, and what was
 * expected.  Writers write a temporary file in the same folder and rename
 * it, so no partial file ever appears; they refuse to write over `protect`
 * (may be NULL) when it is the same file. */
RK_API rk_status rk_chain_read(const char *path, rk_chain *ch, rk_error *err);
RK_API rk_status rk_chain_write(const char *path, const rk_chain *ch, rk_error *err);
RK_API rk_status rk_schedule_read(const char *path, const rk_chain *ch, rk_schedule *s, rk_error *err);
RK_API rk_status rk_schedule_write(const char *path, const rk_chain *ch, const rk_schedule *s, rk_error *err);

/* Checkmate/Moccasin networkx node-link JSON → one-block chain. */
RK_API rk_status rk_import_checkmate(const char *path, rk_chain *ch, rk_error *err);

/* ----------------------------------------------------------- simulator */

typedef struct {
    int64_t peak;         /* bytes */
    int peak_op;          /* index of the op where the peak happens */
    double time;          /* microseconds: sum of compute times run */
    double time_at_peak;  /* microseconds elapsed when the peak happens */
    double baseline_time; /* every compute node once (no recomputation) */
    double overhead;      /* time / baseline_time - 1 */
    int64_t final_live;   /* bytes live after the last op */
    int n_runs, n_forgets;
} rk_sim_result;

/* Replay a chain-level schedule.  RK_EINPUT with a message naming the op
 * index, block, node and the rule broken when the schedule is invalid. */
RK_API rk_status rk_simulate(const rk_chain *ch, const rk_schedule *s, rk_sim_result *res, rk_error *err);
/* rk_simulate, and op by op (each array NULL, or s->n_ops entries): op_step[i]
 * the bytes while op i runs (a compute node: what is live, its new outputs and
 * its overhead; a forget or a mark: what is live before it), op_live[i] the
 * bytes live after it.  The peak is the largest op_step of a compute node (or
 * the inputs). */
RK_API rk_status rk_simulate_ops(const rk_chain *ch, const rk_schedule *s, rk_sim_result *res, int64_t *op_step,
                                 int64_t *op_live, rk_error *err);

/* Block-level replay, used for options: replay `ops` (their `block` field is
 * ignored) on graph g, continuing from state `st` (made by
 * rk_block_state_init: only the inputs present).  `st` holds the state after
 * the ops; st->peak is the highest memory seen since init, st->time the sum
 * of the times of the nodes run.  `where` prefixes error messages. */
typedef struct {
    char *present;        /* n_d flags */
    int *contrib;         /* n_d: producers run for grads */
    char *ran_once;       /* n_c: backward/loss ran */
    int64_t live;
    int64_t peak;
    int peak_op;          /* op index (counted across calls) of the peak */
    int n_ops_done;
    double time;
} rk_block_state;

RK_API rk_status rk_block_state_init(rk_block_state *st, const rk_graph *g);
RK_API void rk_block_state_free(rk_block_state *st);
/* Reset the peak to the current live memory (to measure a phase). */
RK_API void rk_block_state_reset_peak(rk_block_state *st);
RK_API rk_status rk_block_replay(const rk_graph *g, rk_block_state *st, const rk_op *ops, int n_ops,
                          const char *where, rk_error *err);
/* RK_EINPUT unless every backward node and the loss have run. */
RK_API rk_status rk_block_check_complete(const rk_graph *g, const rk_block_state *st, const char *where, rk_error *err);

/* ------------------------------------------------------- block options */

/* A block option: how one block runs its forward and its backward.
 * Contract (checked by rk_option_evaluate):
 *  - fwd ops start with only the inputs present, run forward nodes only and
 *    leave the inputs and the output present; what else stays present is the
 *    option's saved set;
 *  - bwd ops start with inputs + saved set + output + output_grad present,
 *    run every backward node exactly once (and any forward recomputation),
 *    and end with exactly the inputs and the input grads present.
 *  Option 0 of the DP ("no saving") is the forward that keeps nothing but
 *  the output; it has no bwd ops.
 */
typedef struct {
    int n_fwd, n_bwd;
    rk_op *fwd;           /* block field 0 */
    rk_op *bwd;
    /* filled by rk_option_evaluate: */
    double fwd_time, bwd_time;
    int64_t fwd_peak;     /* absolute peak during fwd, inputs included */
    int64_t saved;        /* bytes present after fwd, excluding inputs and output */
    int64_t bwd_peak;     /* absolute peak during bwd, starting from
                             inputs + saved + output + output_grad */
    int64_t input_size;   /* sum of input sizes */
    int64_t output_size;
} rk_option;

RK_API void rk_option_free(rk_option *o);
RK_API rk_status rk_option_copy(rk_option *dst, const rk_option *src);
/* Replay fwd then (if n_bwd > 0) loss + bwd on g, check the contract and fill
 * the statistics. */
RK_API rk_status rk_option_evaluate(const rk_graph *g, rk_option *o, rk_error *err);

/* Built-in options of any block graph.  keep_all: forward in topological
 * order keeping everything; backward freeing each data as soon as no later
 * op needs it.  none: forward freeing as soon as possible, keeping only the
 * output; no bwd ops.  asap: forward and backward freeing as soon as
 * possible without recomputation, keeping only what backward needs. */
RK_API rk_status rk_option_keep_all(const rk_graph *g, rk_option *o, rk_error *err);
RK_API rk_status rk_option_none(const rk_graph *g, rk_option *o, rk_error *err);
RK_API rk_status rk_option_asap(const rk_graph *g, rk_option *o, rk_error *err);
/* Checkpointing inside the block (option_segments.c): the forward nodes cut
 * into k segments of about equal bytes; the forward keeps the last
 * segment's results and, unless lean, what a later segment's forward reads
 * (lean: only the inputs and the output); the backward takes the segments
 * last to first, each making again what its backward nodes read and the
 * forward did not keep (from what it kept), then running them; every data
 * forgotten as soon as its next touch is a re-production.  k = 1 (not lean)
 * is the asap option; k is capped at the number of forward nodes. */
RK_API rk_status rk_option_segments(const rk_graph *g, int k, int lean, rk_option *o, rk_error *err);

/* ----------------------------------------------- baseline chain schedules */

/* keep-everything: every forward once, nothing forgotten until backward has
 * used it (maximum peak, no recomputation).  free-asap: every node once, each
 * data forgotten right after its last use (minimum peak without
 * recomputation). */
RK_API rk_status rk_schedule_keep_all(const rk_chain *ch, rk_schedule *s, rk_error *err);
RK_API rk_status rk_schedule_free_asap(const rk_chain *ch, rk_schedule *s, rk_error *err);

/* Sum of every compute node's time once (no recomputation), microseconds. */
RK_API double rk_chain_baseline_time(const rk_chain *ch);

/* ------------------------------------------- graphs from op descriptions */

/* One forward op of a block described compactly; rk_graph_from_specs makes
 * its forward node, data node (and phantom node when phantom_size > 0), its
 * backward node and the grad nodes.  in[k] = -1 is the block input, else the
 * index of an earlier op.  The block output is the last op's data. */
typedef struct {
    const char *name;
    int n_in;
    int in[4];
    int64_t out_size, phantom_size;
    double fwd_time, bwd_time;
    int64_t fwd_overhead, bwd_overhead;
    unsigned bwd_needs_input;  /* bit k: backward uses input k's data (real
                                  edge); otherwise a fake (shape) edge */
    int bwd_needs_output;      /* backward uses the op's own output data */
} rk_op_spec;

/* Build a finalized block graph: one input of `input_size` bytes (with a
 * grad node when input_has_grad), nodes named "<name>" (data), "fwd_<name>",
 * "bwd_<name>", "<name>.grad", "<name>.phantom"; the loss is "loss". */
RK_API rk_status rk_graph_from_specs(rk_graph *g, int64_t input_size, int input_has_grad, const rk_op_spec *ops, int n,
                              rk_error *err);

/* The built-in example: a GPT-like chain (embedding block, then per layer an
 * attention block and an MLP block, then a head block) with sizes for
 * `batch` x `seq` tokens of width `width` in float32 and times in
 * microseconds modelled on a CPU. */
RK_API rk_status rk_chain_example(rk_chain *ch, int layers, int batch, int seq, int width, rk_error *err);

#ifdef __cplusplus
}
#endif
#endif
