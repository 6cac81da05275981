"""common.py — shared code of the model exporters in tools/models/.

Owns: the common command line (--out, --dtype, --seed, --threads, --no-check),
making example inputs, tracing a model in train mode with torch.jit.trace,
checking the traced graph (no control flow left), writing the model, its
example inputs (PATH.inputs.pt: torch.save of the list of tensors, which
`rkmate trace --input-file` reads; PATH.inputs.txt: their specs) and a
metadata file (PATH.meta.json), reloading the file for a forward+backward
self-check, optionally the torch.export program (--pt2: PATH.pt2), and printing
the `rkmate trace ...` command on stdout.

Everything except that one command line goes to stderr, so that
`cmd=$(python3 gpt2.py --out m.pt)` captures exactly the command.
"""

import argparse
import json
import os
import sys
import time
import warnings

try:
    import torch
except ImportError:  # pragma: no cover - message for the wrong interpreter
    sys.stderr.write(
        "error: this Python (%s) has no torch; run the exporters with the project's "
        "virtual environment (.venv/bin/python, made by tools/test or tools/run)\n" % sys.executable)
    sys.exit(2)

DTYPES = {"float32": torch.float32, "float64": torch.float64}
DTYPE_NAMES = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32",
    torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}
NAME_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}
CONTROL_FLOW = ("prim::If", "prim::Loop")


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def die(msg, code=2):
    sys.stderr.write("error: " + msg + "\n")
    sys.exit(code)


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    if v <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return v


def nonneg_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer >= 0, got %r" % text)
    if v < 0:
        raise argparse.ArgumentTypeError("expected an integer >= 0, got %r" % text)
    return v


def probability(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a probability in [0, 1), got %r" % text)
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError("expected a probability in [0, 1), got %r" % text)
    return v


def positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive number, got %r" % text)
    if not v > 0:
        raise argparse.ArgumentTypeError("expected a positive number, got %r" % text)
    return v


def make_parser(description, default_out):
    """The options every exporter has; each script adds its model-size flags."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=default_out, metavar="PATH.pt",
                   help="TorchScript file to write (default %(default)s); the example inputs go "
                        "to PATH.inputs.{pt,bin,txt} and metadata to PATH.meta.json")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32",
                   help="parameter and floating-point input dtype (default %(default)s)")
    p.add_argument("--seed", type=nonneg_int, default=0,
                   help="seed of parameters, example inputs and the traced run (default %(default)s)")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="torch intra-op threads while exporting (default: torch's choice)")
    p.add_argument("--pt2", action="store_true",
                   help="also write PATH.pt2: torch.export.export(model, inputs) saved with "
                        "torch.export.save, which `rkmate trace PATH.pt2` reads too")
    p.add_argument("--no-check", action="store_true",
                   help="skip reloading the file and running forward+backward on it")
    return p


def save_atomic(obj, path):
    """torch.save(obj, path), written atomically (PATH.tmp, then renamed).
    libtorch 2.x reads these files (torch::jit::pickle_load), so rkmate's
    --input-file takes them as they are."""
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def spec_of(t):
    """'4x64:int64' for a tensor (a 0-d tensor is ':float32')."""
    return "x".join(str(s) for s in t.shape) + ":" + DTYPE_NAMES[t.dtype]


def parse_spec(text):
    """'4x64:int64' -> ((4, 64), torch.int64); raises ValueError naming what was expected."""
    if ":" not in text:
        raise ValueError("input %r: expected SHAPE:DTYPE such as 4x64:int64" % text)
    shape_s, dtype_s = text.rsplit(":", 1)
    if dtype_s not in NAME_DTYPES:
        raise ValueError("input %r: unknown dtype %r (expected one of %s)"
                         % (text, dtype_s, ", ".join(sorted(NAME_DTYPES))))
    shape = []
    if shape_s:
        for part in shape_s.split("x"):
            if not part.isdigit():
                raise ValueError("input %r: shape must be sizes joined by 'x', such as 4x64" % text)
            shape.append(int(part))
    return tuple(shape), NAME_DTYPES[dtype_s]


def token_ids(shape, vocab, generator):
    return torch.randint(0, vocab, shape, dtype=torch.int64, generator=generator)


def float_input(shape, dtype, generator):
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)


def input_generator(seed):
    """Inputs come from their own generator so they do not depend on how many
    random numbers the parameter initialisation drew."""
    g = torch.Generator()
    g.manual_seed(seed + 1000003)
    return g


def setup(args):
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if not args.out.endswith(".pt"):
        die("--out %s: expected a path ending in .pt" % args.out)
    d = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(d):
        die("--out %s: directory %s does not exist" % (args.out, d))


def python_op_nodes(graph):
    """The Python functions (prim::PythonOp) a traced graph still calls, by
    name: torch.jit.save cannot write them."""
    return sorted({n.pyname() for n in graph.nodes() if n.kind() == "prim::PythonOp"})


def control_flow_nodes(graph):
    """Names and source places of prim::If / prim::Loop nodes, nested blocks included."""
    found = []

    def walk(block_nodes):
        for n in block_nodes:
            if n.kind() in CONTROL_FLOW:
                found.append("%s at %s" % (n.kind(), n.sourceRange().strip().splitlines()[0]
                                             if n.sourceRange().strip() else "?"))
            for b in n.blocks():
                walk(b.nodes())

    walk(graph.nodes())
    return found


def inlined_graph(module):
    """A copy of the forward graph with every method call inlined.  Inlining
    needs the graph executor's optimization switch on: with it off
    (torch.jit.optimized_execution(False), C++ setGraphExecutorOptimize(false))
    the pass leaves prim::CallMethod nodes in place, and so it does, even with
    the switch on, once the module has run with it off (the methods' cached
    graphs are then the un-inlined ones)."""
    with torch.jit.optimized_execution(True):
        g = module.graph.copy()
        torch._C._jit_pass_inline(g)
    calls = [n.kind() for n in g.nodes() if n.kind() in ("prim::CallMethod", "prim::CallFunction")]
    if calls:
        die("inlining left %d %s node(s)" % (len(calls), calls[0]), 1)
    return g


def node_count(module):
    """Nodes of the inlined forward graph (top level; no nested blocks after tracing)."""
    return len(list(inlined_graph(module).nodes()))


def kind_histogram(graph):
    h = {}
    for n in graph.nodes():
        h[n.kind()] = h.get(n.kind(), 0) + 1
    return dict(sorted(h.items(), key=lambda kv: (-kv[1], kv[0])))


def outputs_of(result):
    """Flatten a model output (tensor, tuple/list of tensors, nested) into a list of tensors."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(outputs_of(r))
        return out
    if isinstance(result, dict):
        out = []
        for k in sorted(result):
            out.extend(outputs_of(result[k]))
        return out
    raise TypeError("model output of type %s is not a tensor or tuple of tensors" % type(result))


def plain_loss(result):
    """loss = output.sum() (for tuples: sum of sums), as reference_step.py does."""
    outs = [o for o in outputs_of(result) if o.is_floating_point()]
    if not outs:
        raise ValueError("model has no floating-point output to differentiate")
    loss = outs[0].sum()
    for o in outs[1:]:
        loss = loss + o.sum()
    return loss


def write_inputs(path_pt, inputs):
    """PATH.inputs.pt (torch.save of the list of input tensors, read by
    `rkmate trace --input-file` and by torch.load) and PATH.inputs.txt (one
    line: the specs, space-separated, e.g. '4x64:int64')."""
    base = path_pt[:-3]
    save_atomic([t.detach().clone().contiguous() for t in inputs], base + ".inputs.pt")
    with open(base + ".inputs.txt.tmp", "w") as f:
        f.write(" ".join(spec_of(t) for t in inputs) + "\n")
    os.replace(base + ".inputs.txt.tmp", base + ".inputs.txt")
    return [base + ".inputs.pt", base + ".inputs.txt"]


def trace_command(path_pt, inputs):
    """The rkmate command that traces the model on the exported inputs."""
    rkg = path_pt[:-3] + ".rkg"
    parts = ["rkmate", "trace", path_pt]
    for t in inputs:
        parts += ["--input", spec_of(t)]
    parts += ["--input-file", path_pt[:-3] + ".inputs.pt", "-o", rkg]
    return " ".join(parts)


def self_check(path_pt, inputs, seed):
    """Reload the file, run one forward+backward with plain autograd, check grads exist."""
    m = torch.jit.load(path_pt)
    # Inline before running: once a method has run with optimization off, its
    # cached graph is the un-inlined one and inlining leaves prim::CallMethod.
    bad = control_flow_nodes(inlined_graph(m))
    if bad:
        die("self-check: reloaded graph has control flow: %s" % "; ".join(bad), 1)
    m.train()
    torch.manual_seed(seed)
    with torch.jit.optimized_execution(False):
        out = m(*inputs)
        loss = plain_loss(out)
        loss.backward()
    params = list(m.named_parameters())
    missing = [n for n, p in params if p.requires_grad and p.grad is None]
    if missing:
        log("warning: %d parameter(s) got no gradient, e.g. %s" % (len(missing), missing[0]))
    if not torch.isfinite(loss).item():
        die("self-check: loss is not finite (%s)" % loss.item(), 1)
    return loss.item(), len(params), missing


def export_program(model, inputs, args):
    """PATH.pt2: the model captured by torch.export (train mode, same seed as the
    trace), saved with torch.export.save; written atomically."""
    path = args.out[:-3] + ".pt2"
    torch.manual_seed(args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, tuple(inputs))
    tmp = path + ".tmp"
    torch.export.save(ep, tmp)
    os.replace(tmp, path)
    log("%s: torch.export program saved to %s" % (os.path.basename(args.out), path))
    return path


class LostInCapture:
    """Around a capture (torch.jit.trace, which runs the forward once): what the
    forward does that neither torch.jit.trace nor torch.export keeps, in .names: a
    custom torch.autograd.Function's backward (the trace records a Python call,
    which torch.jit.save refuses; torch.export inlines its forward and drops its
    backward: a gradient reversal layer then trains with the sign flipped) and a
    tensor's gradient hook (register_hook: dropped by both).

    torch.utils.checkpoint is inlined instead (its count in .checkpoint): the
    checkpointed function is called directly, as without checkpointing, since
    rkmate chooses what to recompute itself.  Both of its variants are caught
    wherever the model imported `checkpoint` from: the reentrant one by its
    CheckpointFunction.apply, the non-reentrant one by the module-level
    generator that `checkpoint` looks up when called (its saved-tensor hooks
    and its _NoopSaveInputs are then never made).  The forward's values are
    the same (a checkpointed forward runs once, under no_grad, with the same
    random numbers), and so are the gradients."""

    class Refused(Exception):
        """Raised inside the capture by what cannot be captured at all."""

    def __enter__(self):
        import torch.utils.checkpoint as ckpt
        import torch.autograd as autograd_module
        self.names = []
        self.checkpoint = 0
        self.apply = torch.autograd.Function.__dict__["apply"]
        self.hook = torch.Tensor.register_hook
        self.ckpt_module = ckpt
        self.ckpt_generator = getattr(ckpt, "_checkpoint_without_reentrant_generator", None)
        apply, hook, names = self.apply, self.hook, self.names

        def spy_apply(cls, *a, **k):
            if cls.__module__.startswith("torch.utils.checkpoint") and cls.__name__ == "CheckpointFunction":
                self.checkpoint += 1
                run_function, _preserve_rng_state, *args = a
                return run_function(*args)
            if not cls.__module__.startswith("torch."):
                names.append("torch.autograd.Function %s.%s" % (cls.__module__, cls.__qualname__))
            return apply.__func__(cls, *a, **k)

        def no_checkpoint_context(*a, **k):
            # checkpoint(use_reentrant=False) runs next(gen), the function,
            # next(gen): nothing is set up around the function
            self.checkpoint += 1
            yield

        if self.ckpt_generator is not None:
            ckpt._checkpoint_without_reentrant_generator = no_checkpoint_context

        # A backward inside the forward (torch.autograd.grad or .backward():
        # a WGAN-GP gradient penalty, a double backward) cannot be traced; the
        # trace itself fails with an internal AssertionError ("unexpected
        # sym_eq ..." where grad_outputs are given).  Both call the
        # module-level _make_grads and _engine_run_backward, however the model
        # imported them.
        self.autograd_module = autograd_module
        self.autograd_saved = {n: getattr(autograd_module, n) for n in ("_make_grads", "_engine_run_backward")
                               if hasattr(autograd_module, n)}

        def no_backward_in_forward(*a, **k):
            raise LostInCapture.Refused(
                "the model's forward runs a backward (torch.autograd.grad or Tensor.backward: a gradient "
                "penalty, a double backward), which torch.jit.trace cannot record, and a step with rkmate has "
                "one backward, of the loss; compute that term outside the exported model")

        for n in self.autograd_saved:
            setattr(autograd_module, n, no_backward_in_forward)

        def spy_hook(t, fn):
            names.append("Tensor.register_hook(%s)" % getattr(fn, "__qualname__", type(fn).__name__))
            return hook(t, fn)

        torch.autograd.Function.apply = classmethod(spy_apply)
        torch.Tensor.register_hook = spy_hook
        return self

    def __exit__(self, *exc):
        torch.autograd.Function.apply = self.apply
        torch.Tensor.register_hook = self.hook
        if self.ckpt_generator is not None:
            self.ckpt_module._checkpoint_without_reentrant_generator = self.ckpt_generator
        for n, f in self.autograd_saved.items():
            setattr(self.autograd_module, n, f)
        self.names = sorted(set(self.names))
        return False


def export(model, inputs, args, name, config):
    """Trace `model` (already in train mode and the right dtype) on `inputs`,
    write everything, print the trace command on stdout; returns the metadata."""
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # check_trace=False: dropout makes a second run differ, which the checker
        # would report as a (spurious) mismatch.  strict=False: models may
        # return a dict or a list (rkmate's loss sums every floating output).
        try:
            with LostInCapture() as lost:
                traced = torch.jit.trace(model, tuple(inputs), check_trace=False, strict=False)
        except LostInCapture.Refused as e:
            die("%s: %s" % (name, e), 1)
    if lost.checkpoint:
        log("%s: %d torch.utils.checkpoint call%s inlined (the checkpointed layers are traced as if called "
            "directly): rkmate chooses what to recompute itself" % (name, lost.checkpoint,
                                                                      "" if lost.checkpoint == 1 else "s"))
    if lost.names:
        die("%s: the model's forward uses %s: torch.jit.trace and torch.export keep no custom backward "
            "and no gradient hook, so the exported model would train without them (write the "
            "backward's effect as tensor ops in the forward, e.g. a gradient reversal as "
            "`x.detach() * (1 + a) - a * x`)" % (name, ", ".join(lost.names)), 1)
    trace_s = time.perf_counter() - t0
    tracer_warnings = sorted(set("%s:%d: %s: %s" % (os.path.basename(w.filename), w.lineno,
                                                    w.category.__name__,
                                                    str(w.message).splitlines()[0].split(". ")[0])
                                 for w in caught))
    for w in tracer_warnings:
        log("tracer warning: " + w)
    # What torch.jit.trace silently fixes: a Python bool/int/float/index taken
    # from a tensor (an `if` on data, a data-dependent shape or loop count) is
    # recorded as the constant the example inputs gave; the saved model then
    # always takes that branch, whatever its inputs.
    fixed = [w for w in tracer_warnings if "TracerWarning" in w and
             any(k in w for k in ("Python boolean", "Python integer", "Python float", "Python index",
                                  "Iterating over a tensor", "Python value"))]
    for w in fixed:
        log("WARNING: the trace fixed a data-dependent value as a constant (the saved model always does what "
            "the example inputs did): " + w)
    # BatchNorm(momentum=None) averages cumulatively with the factor
    # 1 / num_batches_tracked, a Python float of a buffer: the trace keeps the
    # traced call's factor, used at every step (no TracerWarning says so).
    cumulative = [n or type(m).__name__ for n, m in model.named_modules()
                  if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training and m.momentum is None
                  and m.track_running_stats]
    for n in cumulative:
        w = ("%s: BatchNorm(momentum=None) keeps a cumulative average with factor 1 / num_batches_tracked; the "
             "trace fixed the traced call's factor, which the saved model uses at every step (give it a momentum)"
             % n)
        fixed.append(w)
        log("WARNING: the trace fixed a data-dependent value as a constant: " + w)
    graph = inlined_graph(traced)
    bad = control_flow_nodes(graph)
    if bad:
        die("traced graph of %s still has control flow: %s" % (name, "; ".join(bad)), 1)
    py = python_op_nodes(graph)
    if py:
        die("%s: the traced forward calls Python functions (%s), which torch.jit.save cannot write"
            % (name, ", ".join(py)), 1)

    # The model is written last (renamed from PATH.pt.tmp once everything else
    # is there), so a failed export leaves no PATH.pt behind.
    tmp = args.out + ".tmp"
    try:
        traced.save(tmp)
    except BaseException:
        if os.path.exists(tmp):  # (a failed save leaves part of the file)
            os.unlink(tmp)
        raise
    save_s = time.perf_counter() - t0 - trace_s
    # Count nodes on the reloaded file, as libtorch will see it (saving pools
    # constants, so the in-memory traced graph can have a few more).
    g = inlined_graph(torch.jit.load(tmp))
    nodes = len(list(g.nodes()))
    meta = {
        "model": name,
        "config": config,
        "dtype": args.dtype,
        "seed": args.seed,
        "inputs": [spec_of(t) for t in inputs],
        "parameters": n_params,
        "nodes_inlined": nodes,
        "node_kinds": kind_histogram(g),
        "trace_seconds": round(trace_s, 4),
        "save_seconds": round(save_s, 4),
        "file_bytes": os.path.getsize(tmp),
        "tracer_warnings": tracer_warnings,
        "data_dependent_fixed": fixed,
        "checkpoints_inlined": lost.checkpoint,
        "torch": str(torch.__version__),
        "train_mode": True,
    }
    try:
        write_inputs(args.out, inputs)
        if not args.no_check:
            t1 = time.perf_counter()
            reread = torch.load(args.out[:-3] + ".inputs.pt")
            loss, _, missing = self_check(tmp, reread, args.seed)
            meta["check_seconds"] = round(time.perf_counter() - t1, 4)
            meta["check_loss"] = loss
            meta["params_without_grad"] = missing
        with open(args.out[:-3] + ".meta.json.tmp", "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        os.replace(args.out[:-3] + ".meta.json.tmp", args.out[:-3] + ".meta.json")
    except BaseException:
        os.unlink(tmp)
        raise
    os.replace(tmp, args.out)
    if getattr(args, "pt2", False):
        export_program(model, inputs, args)

    log("%s: %d parameters, %d nodes (inlined), traced in %.2f s, saved %d bytes to %s%s"
        % (name, n_params, nodes, trace_s, meta["file_bytes"], args.out,
           "" if args.no_check else ", reload+forward+backward ok in %.2f s" % meta["check_seconds"]))
    print(trace_command(args.out, inputs))
    sys.stdout.flush()
    return meta


def model_set_main(argv, description, default_out, names, build, image=96, batch=4, keeps_dtype=()):
    """The main of a model-set exporter (zoo.py, coverage.py, unseen.py): `--list` prints
    `names`, otherwise `--model NAME [--image N] [--batch N]` and the common options
    export `build(name, args, dtype)` -> (model, inputs).  Models in `keeps_dtype`
    fix their own dtype (not cast to --dtype).  Returns the exit code."""
    if "--list" in argv:
        print("\n".join(names))
        return 0
    p = make_parser(description, default_out)
    p.add_argument("--model", required=True, help="model name (--list shows them)")
    p.add_argument("--image", type=positive_int, default=image, help="image side (default %(default)s)")
    p.add_argument("--batch", type=positive_int, default=batch, help="batch size (default %(default)s)")
    args = p.parse_args(argv)
    setup(args)
    dtype = DTYPES[args.dtype]
    model, inputs = build(args.model, args, dtype)
    if args.model not in keeps_dtype:
        model = model.to(dtype)
    export(model, inputs, args, args.model, {"model": args.model, "image": args.image, "batch": args.batch})
    return 0
