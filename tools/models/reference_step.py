#!/usr/bin/env python3
"""reference_step.py — one plain training step of a TorchScript model, the
reference that rkmate's executor is compared against.

Loads MODEL.pt (torch.jit.load), puts it in train mode, seeds the default
generators with --seed right before the forward (so dropout draws the same
masks as any run that seeds the same way), runs forward, loss = output.sum()
(for tuples: the sum of the sums of the floating-point outputs), backward, and
with --save-grads OUT.pt saves (torch.save) a dict:

  "outputs":      list of output tensors (detached, on CPU)
  "loss":         0-d tensor
  "param_names":  names of all parameters, in named_parameters() order
  "grads":        dict name -> gradient (parameters that got a gradient)
  "no_grad":      names of parameters that got none
  "buffers":      dict name -> buffer after the step (batch-norm running stats move)
  "inputs":       the input tensors used
  "seed", "device", "torch", "step_seconds"

By default the module runs with torch.jit.optimized_execution(False): the graph
interpreter runs op by op and autograd records each op exactly as eager
PyTorch does, which is what an op-by-op executor reproduces bit for bit.
--optimized uses the default (profiling) graph executor instead.

Inputs (in this order of preference): --inputs FILE (torch.save of a tensor
or a list of tensors, as rkmate's --input-file), else
MODEL.inputs.pt written by the exporters if it matches --input, else random
tensors from --seed (floats: standard normal; integers: uniform in
[0, --int-high)). Prints the step time, and the step's peak memory above the
memory held before it on CUDA (not measured on CPU).
"""

import argparse
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch, die, log  # noqa: E402


def load_inputs(args, specs):
    if args.inputs:
        path = args.inputs
        if not os.path.exists(path):
            die("--inputs %s: no such file" % path)
        try:
            loaded = torch.load(path)
        except Exception as e:  # noqa: BLE001 - report any unpickling failure as bad input
            die("--inputs %s: cannot load: %s" % (path, str(e).splitlines()[0]))
        if isinstance(loaded, torch.Tensor):
            loaded = [loaded]
        if not isinstance(loaded, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in loaded):
            die("--inputs %s: expected a tensor or a list of tensors" % path)
        loaded = list(loaded)
        if specs and [(tuple(t.shape), t.dtype) for t in loaded] != specs:
            die("--inputs %s holds %s but --input says %s"
                % (path, " ".join(common.spec_of(t) for t in loaded), " ".join(args.input)))
        return loaded, path
    beside = args.model[:-3] + ".inputs.pt" if args.model.endswith(".pt") else None
    if beside and os.path.exists(beside):
        loaded = torch.load(beside)
        if not specs or [(tuple(t.shape), t.dtype) for t in loaded] == specs:
            return list(loaded), beside
        log("note: %s does not match --input; generating random inputs" % beside)
    if not specs:
        die("no inputs: give --input SHAPE:DTYPE (and optionally --inputs FILE)")
    g = torch.Generator()
    g.manual_seed(args.seed + 1000003)
    out = []
    for shape, dtype in specs:
        if dtype.is_floating_point:
            out.append(torch.randn(shape, generator=g, dtype=torch.float64).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.randint(0, 2, shape, generator=g).to(torch.bool))
        else:
            out.append(torch.randint(0, args.int_high, shape, generator=g, dtype=dtype))
    return out, "random (seed %d)" % args.seed


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_step(m, inputs, seed, device):
    torch.manual_seed(seed)
    sync(device)
    t0 = time.perf_counter()
    out = m(*inputs)
    loss = common.plain_loss(out)
    loss.backward()
    sync(device)
    return out, loss, time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", metavar="MODEL.pt", help="TorchScript module (torch.jit.trace(...).save)")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE:DTYPE",
                   help="an input, e.g. 4x64:int64 (repeat for each input, in order)")
    p.add_argument("--inputs", metavar="FILE", help="input tensors: a torch.save file (a tensor or a list of tensors)")
    p.add_argument("--seed", type=common.nonneg_int, default=0,
                   help="torch.manual_seed before the forward (default %(default)s)")
    p.add_argument("--int-high", type=common.positive_int, default=100,
                   help="random integer inputs are in [0, this) (default %(default)s)")
    p.add_argument("--save-grads", metavar="OUT.pt", help="write outputs, loss and gradients here")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default %(default)s)")
    p.add_argument("--threads", type=common.positive_int, default=None,
                   help="torch intra-op threads (default: torch's choice)")
    p.add_argument("--repeat", type=common.nonneg_int, default=0,
                   help="extra timed steps after the saved one; the median is reported (default 0)")
    p.add_argument("--optimized", action="store_true",
                   help="use the optimizing graph executor instead of op-by-op execution")
    args = p.parse_args(argv)

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    specs = []
    for s in args.input:
        try:
            specs.append(common.parse_spec(s))
        except ValueError as e:
            die("--input " + str(e))
    if not os.path.exists(args.model):
        die("%s: no such file" % args.model)
    try:
        device = torch.device(args.device)
    except RuntimeError as e:
        die("--device %s: %s" % (args.device, e))
    if device.type == "cuda" and not torch.cuda.is_available():
        die("--device %s: this torch has no usable CUDA device" % args.device)
    if args.save_grads and os.path.abspath(args.save_grads) in (os.path.abspath(args.model),
                                                                 os.path.abspath(args.inputs or "")):
        die("--save-grads %s would overwrite an input" % args.save_grads)

    try:
        m = torch.jit.load(args.model, map_location=device)
    except Exception as e:  # noqa: BLE001
        die("%s: cannot load as TorchScript: %s" % (args.model, str(e).splitlines()[0]))
    m.train()
    inputs, source = load_inputs(args, specs)
    inputs_dev = [t.to(device) for t in inputs]
    for pr in m.parameters():
        pr.grad = None

    mem = None
    with torch.jit.optimized_execution(args.optimized):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
        try:
            out, loss, step_s = one_step(m, inputs_dev, args.seed, device)
        except (RuntimeError, ValueError, TypeError) as e:
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            die("%s: the training step failed on inputs %s: %s"
                % (args.model, " ".join(common.spec_of(t) for t in inputs), lines[-1] if lines else e), 1)
        if device.type == "cuda":
            mem = torch.cuda.max_memory_allocated(device) - base
        outputs = [o.detach().cpu().clone() for o in common.outputs_of(out)]
        names = [n for n, _ in m.named_parameters()]
        grads = {n: pr.grad.detach().cpu().clone() for n, pr in m.named_parameters() if pr.grad is not None}
        buffers = {n: b.detach().cpu().clone() for n, b in m.named_buffers()}
        times = []
        for _ in range(args.repeat):
            for pr in m.parameters():
                pr.grad = None
            times.append(one_step(m, inputs_dev, args.seed, device)[2])

    result = {
        "outputs": outputs,
        "loss": loss.detach().cpu().clone(),
        "param_names": names,
        "grads": grads,
        "no_grad": [n for n in names if n not in grads],
        "buffers": buffers,
        "inputs": [t.clone() for t in inputs],
        "seed": args.seed,
        "device": str(device),
        "torch": str(torch.__version__),
        "step_seconds": step_s,
    }
    if args.save_grads:
        common.save_atomic(result, args.save_grads)

    print("model: %s" % args.model)
    print("inputs: %s from %s" % (" ".join(common.spec_of(t) for t in inputs), source))
    print("outputs: %s" % " ".join(common.spec_of(o) for o in outputs))
    print("loss: %.9g" % loss.item())
    print("gradients: %d of %d parameters%s" % (len(grads), len(names),
                                                "" if not result["no_grad"] else
                                                " (none for %s)" % ", ".join(result["no_grad"][:5])))
    print("step time: %.6f s (first step, %s%s)" % (step_s, device, "" if args.optimized else ", op by op"))
    if times:
        print("step time median of %d more: %.6f s" % (len(times), statistics.median(times)))
    if mem is None:
        print("peak activation memory: not measured on %s" % device.type)
    else:
        print("peak activation memory: %d bytes above the %d held before the step "
              "(activations, temporaries and parameter gradients)" % (mem, base))
    if args.save_grads:
        print("saved: %s" % args.save_grads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
