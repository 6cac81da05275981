#!/usr/bin/env python3
"""split_bwd.py — what a convolution's or Linear's backward needs when it runs
in two parts (issue 21: a node's backward in parts), measured per module.

For every nn.Conv2d / nn.Linear of a zoo model (tools/models/zoo.py, the same
sizes as the zoo: --image, --batch), the module's input as the forward saw it
is kept, and the module's backward is run three times on it with
torch.autograd.grad: all gradients (what autograd's ConvolutionBackward /
AddmmBackward does in a step: one call), the weight and bias gradients only
(`inputs=` the parameters: the output_mask asks for no input gradient), and
the input gradient only.  Each run's temporary is measured as `rkmate trace`
measures a node's overhead: the peak of the tracer's counting CPU allocator
(src/exec/exec_device.cpp's, loaded from rkmate's operator library --ops, so
oneDNN's scratch buffers count) less the memory before the call and less the
gradients it returns.  The parts' gradients are checked bit for bit against
the one-call ones.

Writes JSON (--out): one record per module call with the input, output and
input-gradient bytes, the three temporaries and the three times (median of
--runs); `chain_whatif.py --split-bwd` reads it.  Not a test: a benchmark
measurement (times move with the load)."""
import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import torch  # noqa: E402

class TracerMemory:
    """The tracer's counting CPU allocator (src/exec/exec_device.cpp), through
    the Python package's operators (BUILD/python/rkmate/_rkmate_ops.so)."""

    def __init__(self, ops_lib):
        torch.ops.load_library(ops_lib)
        self.ops = torch.ops.rkmate
        self.ops.count_cpu_memory()

    def cur(self):
        return self.ops.cpu_bytes(False)

    def peak(self):
        return self.ops.cpu_bytes(True)

    def reset_peak(self):
        self.ops.cpu_reset_peak()


def nbytes(t):
    return t.numel() * t.element_size()


def measure(mod, x, mt, runs):
    """Temporaries and times of mod's backward at input x: all, weight+bias, input."""
    params = [p for p in mod.parameters() if p.requires_grad]
    xr = x.detach().clone().requires_grad_(x.requires_grad)
    y = mod(xr)
    g = torch.Generator().manual_seed(1)
    dy = torch.randn(y.shape, generator=g, dtype=y.dtype)
    parts = {"all": params + ([xr] if xr.requires_grad else []), "w": params}
    if xr.requires_grad:
        parts["x"] = [xr]
    rec = {"x": nbytes(x), "y": nbytes(y), "dx": nbytes(x) if xr.requires_grad else 0}
    res = {}
    for name, ins in parts.items():
        temp, times = None, []
        for r in range(max(runs, 1) + 1):
            c0 = mt.cur()
            mt.reset_peak()
            t = time.perf_counter()
            gr = torch.autograd.grad(y, ins, dy, retain_graph=True)
            t = time.perf_counter() - t
            if r == 0:
                temp = mt.peak() - c0 - sum(nbytes(q) for q in gr)
            else:
                times.append(t * 1e6)
            res[name] = gr if r == 0 else res[name]
            del gr
        rec["temp_" + name] = temp
        rec["time_" + name] = statistics.median(times)
    # The parts give the same gradients as the one call, bit for bit.
    got = list(res["w"]) + (list(res["x"]) if "x" in res else [])
    rec["equal"] = len(got) == len(res["all"]) and all(torch.equal(a, b) for a, b in zip(got, res["all"]))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a zoo model name (tools/models/zoo.py --list)")
    ap.add_argument("--image", type=int, default=96)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per part (median)")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--ops", default=os.path.join(HERE, "..", "..", "build-test", "python", "rkmate", "_rkmate_ops.so"),
                    help="rkmate's operator library, built with the libtorch part (default: build-test's)")
    a = ap.parse_args()
    mt = TracerMemory(a.ops)
    import zoo  # tools/models/zoo.py
    torch.manual_seed(a.seed)
    model, inputs = zoo.build(a.model, argparse.Namespace(seed=a.seed, image=a.image, batch=a.batch), torch.float32)
    model.train()
    seen = []

    def hook(mod, args, out):
        if args and isinstance(args[0], torch.Tensor):
            seen.append((mod, args[0].detach().clone().requires_grad_(args[0].requires_grad)))

    names, handles = {}, []
    for n, m in model.named_modules():
        if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
            handles.append(m.register_forward_hook(hook))
            names[m] = n
    inputs = [t.requires_grad_(False) for t in inputs]
    out = model(*inputs)
    del out
    for h in handles:
        h.remove()
    recs = []
    for mod, x in seen:
        r = measure(mod, x, mt, a.runs)
        r.update(module=names[mod], kind="linear" if isinstance(mod, torch.nn.Linear) else "conv")
        recs.append(r)
        print(f"{r['module']:40s} x {r['x']:>10} y {r['y']:>10} temp all/w/x {r['temp_all']:>10} {r['temp_w']:>10} "
              f"{r.get('temp_x', '-'):>10}  equal {r['equal']}", file=sys.stderr)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"model": a.model, "image": a.image, "batch": a.batch, "modules": recs}, f, indent=1)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
