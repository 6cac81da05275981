#!/usr/bin/env python3
"""End-to-end tests of a convolution's / Linear's backward in two parts
(src/exec/exec_split_bwd.cpp, docs/exec.md "A backward in two parts"): the
tracer splits such a node's backward into its weight part `b<j>_<op>w` (no
output in the chain) and its input part `b<j>_<op>` (its input's shape only)
where the input part sheds data the block can drop; `--no-split-bwd` keeps the
old chain.  A conv + BatchNorm + ReLU + dropout residual CNN and a residual MLP,
float32 and float64: keep-all, recompute-all and rockmate at the smallest budget
run with gradients and output equal to the plain step bit for bit and the
measured peak equal to the simulator's prediction; the split chain's smallest
budget is below the unsplit one's; the simulator and solvers take the parts in
either order; two training steps equal plain training.  Groups with an in-place
ReLU merged in (VGG's conv + relu_) split too.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import check_peak, check_trains_as_plain, min_budget, rk, schedules  # tests/exec/rk_cli.py

TMP = tempfile.mkdtemp(prefix="rkmate-split-")
F = torch.nn.functional


class ResCnn(torch.nn.Module):
    """stem conv + BN + ReLU, two residual blocks x + BN(conv(dropout(ReLU(BN(conv(x)))))),
    a linear head over the pooled features: the second convolution's input (the
    dropout's output) is read by nothing else's backward, so its input part sheds it."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem, self.bn = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(4)])
        self.b = nn.ModuleList([nn.BatchNorm2d(16) for _ in range(4)])
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        for i in (0, 2):
            h = self.drop(torch.relu(self.b[i](self.c[i](x))))
            x = x + self.b[i + 1](self.c[i + 1](h))
        return self.head(x.mean((2, 3)))


class ResMlp(torch.nn.Module):
    """x + Linear(GELU(Linear(x))) twice: the second Linear reads the GELU's output."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.inp = nn.Linear(64, 128)
        self.l = nn.ModuleList([nn.Linear(128, 256) if i % 2 == 0 else nn.Linear(256, 128) for i in range(4)])
        self.out = nn.Linear(128, 8)

    def forward(self, x):
        x = self.inp(x)
        for i in (0, 2):
            x = x + self.l[i + 1](F.gelu(self.l[i](x)))
        return self.out(x)


def export(module, name, shape, dtype):
    torch.manual_seed(0)
    path = os.path.join(TMP, name + ".pt")
    m = module.to(dtype).train()
    torch.jit.trace(m, (torch.randn(*shape, dtype=dtype),), check_trace=False).save(path)
    inputs = ["--input", "x".join(map(str, shape)) + ":" + str(dtype).split(".")[-1]]
    return path, inputs


def trace(path, inputs, rkg, *extra):
    p = rk("trace", path, *inputs, "-o", rkg, "--json", "--quiet", "--runs", "1", *extra, check=0)
    with open(rkg) as f:
        return json.loads(p.stdout), json.load(f)


def split_nodes(chain):
    """(weight part, input part, the class's data kinds by name) of the chain's classes."""
    out = []
    for cls in chain["classes"]:
        by = {c["name"]: c for c in cls["compute"]}
        kinds = {d["name"]: d["kind"] for d in cls["data"]}
        for c in cls["compute"]:
            if c["kind"] == "bwd" and c["name"].endswith("w") and c["name"][:-1] in by:
                out.append((c, by[c["name"][:-1]], kinds))
    return out


def floor(rkg):
    return min_budget(rkg)


class SplitBase(unittest.TestCase):
    def schedules(self, rkg):
        """keep-all, recompute-all and rockmate at its smallest budget."""
        return schedules(rkg)

    def check_runs(self, path, inputs, rkg):
        for rks in self.schedules(rkg):
            p = rk("run", path, rks, "--chain", rkg, *inputs, "--check", "--json", "--iters", "1", check=0)
            r = json.loads(p.stdout)
            self.assertTrue(r["grads_equal"] and r["output_equal"], f"{rks}: {r}")
            self.assertEqual(r["grads_differing"], 0, r)
            # measured = predicted, up to the loss scalars (as test_act_inplace.py)
            check_peak(self, r, 64, rks)

    def model(self, module, name, shape, dtype):
        path, inputs = export(module, name, shape, dtype)
        rkg, rkg_ns = os.path.join(TMP, name + ".rkg"), os.path.join(TMP, name + ".whole.rkg")
        st, chain = trace(path, inputs, rkg)
        st_ns, chain_ns = trace(path, inputs, rkg_ns, "--no-split-bwd")
        pairs = split_nodes(chain)
        self.assertGreater(len(pairs), 0, "no backward split")
        self.assertEqual(st["split_bwd"], len(pairs))
        self.assertEqual(st["split_bwd_unequal"], 0)
        self.assertEqual(split_nodes(chain_ns), [])
        self.assertEqual(st_ns["split_bwd"], 0)
        for w, x, kinds in pairs:
            self.assertEqual(w["outs"], [])                       # parameter gradients: outside the chain
            self.assertTrue(x["outs"], x)                         # the input gradient
            xdata = [u for u in w["uses"] if isinstance(u, str) and kinds[u] == "data"]
            self.assertTrue(xdata, w)                             # the weight part reads x
            fake = {u["data"] for u in x["uses"] if isinstance(u, dict) and u["kind"] == "fake"}
            self.assertTrue(set(xdata) <= fake, (w, x))           # the input part its shape only
        self.check_runs(path, inputs, rkg)
        self.assertLess(floor(rkg), floor(rkg_ns))
        return path, inputs, rkg, chain

    def check_trains_as_plain(self, path, rkg):
        """Two Adam steps with rockmate's schedule at the floor, as plain training's."""
        check_trains_as_plain(self, path, rkg, self.schedules(rkg)[2])


class TestCnn(SplitBase):
    def test_float32(self):
        self.model(ResCnn(), "cnn32", (4, 3, 16, 16), torch.float32)

    def test_float64(self):
        self.model(ResCnn(), "cnn64", (4, 3, 16, 16), torch.float64)


class TestMlp(SplitBase):
    def test_float32(self):
        self.model(ResMlp(), "mlp32", (32, 64), torch.float32)

    def test_float64(self):
        self.model(ResMlp(), "mlp64", (32, 64), torch.float64)


class ChunkCnn(torch.nn.Module):
    """ShuffleNet's unit: the second half of a channel chunk (a strided view)
    into a 1x1 convolution, concatenated back.  The convolution's kernel copies
    its strided input (reading its bytes), so that backward must stay whole:
    splitting it let the tracer's emptied-storage check read freed memory
    (rkmate trace crashed on shufflenet_v2_x1_0)."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem, self.bn = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c1, self.c2 = nn.Conv2d(8, 8, 1), nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        a, b = x.chunk(2, dim=1)
        x = torch.cat([a, F.relu(self.c1(b))], dim=1)
        return self.c2(F.gelu(x)).sum(dim=(2, 3))


class TestStridedInput(SplitBase):
    def test_chunk_input_stays_whole(self):
        path, inputs = export(ChunkCnn(), "chunk32", (4, 3, 16, 16), torch.float32)
        rkg = os.path.join(TMP, "chunk32.rkg")
        st, chain = trace(path, inputs, rkg)
        # the stem's input is the model input, c1's is the chunk: only c2 is split
        self.assertEqual(st["split_bwd"], 1, st)
        self.assertEqual(len(split_nodes(chain)), 1)
        self.check_runs(path, inputs, rkg)


class SummedTokens(torch.nn.Module):
    """Two Linears over tokens (3-d inputs: a view of the gradient at the root
    of each backward), the first one's input also summed whole: the split
    Linear's input part, run second, held its output's gradient to its end
    (the graph kept for a part that is never run again), one activation
    beside the input gradient and its sum with the summed input's: keep-all
    1.25 x the plain step."""

    def __init__(self, d=64):
        super().__init__()
        nn = torch.nn
        self.l, self.m, self.o = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, 4)

    def forward(self, x):
        h = torch.tanh(self.l(x))
        g = torch.tanh(self.m(h))
        return self.o(g.sum(1)) + h.sum((1, 2)).unsqueeze(1)


class TestLastPart(SplitBase):
    def test_last_part_frees_the_gradient(self):
        path, inputs = export(SummedTokens(), "tokens", (8, 128, 64), torch.float32)
        rkg = os.path.join(TMP, "tokens.rkg")
        trace(path, inputs, rkg)
        self.check_runs(path, inputs, rkg)
        keep = self.schedules(rkg)[0]
        r = json.loads(rk("run", path, keep, "--chain", rkg, *inputs, "--check", "--json", "--iters", "2",
                          check=0).stdout)
        self.assertLessEqual(r["measured_peak"], r["baseline_peak"], r)


class TestPartsOrder(unittest.TestCase):
    def test_either_order_in_the_solvers(self):
        """The input part before the weight part (x then stays to the end): the
        simulator and every solver still give valid schedules (the solve replays
        each one), and a phantom is forgotten between the parts only when the
        forward runs again before the second."""
        path, inputs = export(ResMlp(), "order", (32, 64), torch.float64)
        rkg = os.path.join(TMP, "order.rkg")
        _, chain = trace(path, inputs, rkg)
        for cls in chain["classes"]:
            comp = cls["compute"]
            for i in range(len(comp) - 1):
                if comp[i]["kind"] == "bwd" and comp[i]["name"] == comp[i + 1]["name"] + "w":
                    comp[i], comp[i + 1] = comp[i + 1], comp[i]
        swapped = os.path.join(TMP, "order.swapped.rkg")
        with open(swapped, "w") as f:
            json.dump(chain, f)
        fl, fs = floor(rkg), floor(swapped)
        self.assertGreaterEqual(fs, fl)  # x stays through the input part now
        for algo in ("rockmate", "rotor", "checkmate", "recompute-all"):
            for c in (rkg, swapped):
                rks = f"{c}.{algo}.rks"
                p = rk("solve", c, "--budget", str(10**12 if algo == "recompute-all" else 2 * fs), "--algo", algo,
                       "-o", rks, "--quiet")
                self.assertEqual(p.returncode, 0, (algo, c, p.stderr))
                with open(rks) as f:
                    ops = json.load(f)["ops"]
                # per block: once a part ran, its phantom is forgotten only after
                # the other part, or the forward runs again before the other part
                for w, x, _ in split_nodes(chain):
                    ph, fwd = "p" + x["name"][1:], "f" + x["name"][1:]
                    done, stale = {}, set()
                    for k, op in enumerate(ops):
                        if op[0] == "run" and op[2] == fwd:
                            done.pop(op[1], None)
                            stale.discard(op[1])
                        if op[0] == "run" and op[2] in (w["name"], x["name"]):
                            self.assertNotIn(op[1], stale, (algo, c, k))
                            done.setdefault(op[1], set()).add(op[2])
                        if op[0] == "forget" and op[2] == ph and len(done.pop(op[1], ())) == 1:
                            stale.add(op[1])
                p = rk("simulate", c, rks, "--json")
                self.assertEqual(p.returncode, 0, (algo, c, p.stderr))


class ReluInPlaceCnn(torch.nn.Module):
    """VGG's features: conv + ReLU(inplace=True), a max pool after the first
    (that ReLU keeps a mask: docs/exec.md "ReLU keeps a mask"), then two more."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c = nn.ModuleList([nn.Conv2d(3 if i == 0 else 16, 16, 3, padding=1) for i in range(3)])
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c[0](x), inplace=True), 2)
        for conv in self.c[1:]:
            x = F.relu(conv(x), inplace=True)
        return self.head(x.mean((2, 3)))


class TestReluInPlace(SplitBase):
    """A group with an in-place ReLU merged in (VGG's conv + relu_): the ReLU's
    backward runs in both parts, in place into the kept gradient in the first
    (GradDonation.keep: zeroing the same elements again in the second changes
    nothing), so neither part holds a second gradient-sized tensor, and the
    split passes the tracer's checks.  Split: the head and the two convolutions
    after the first (the first reads the model input); before, the head only."""

    def run_model(self, name, dtype, train):
        path, inputs = export(ReluInPlaceCnn(), name, (4, 3, 16, 16), dtype)
        rkg, rkg_ns = os.path.join(TMP, name + ".rkg"), os.path.join(TMP, name + ".whole.rkg")
        st, chain = trace(path, inputs, rkg)
        trace(path, inputs, rkg_ns, "--no-split-bwd")
        self.assertEqual(st["split_bwd"], 3, st)
        self.assertEqual(len(split_nodes(chain)), 3)
        self.assertEqual(st["split_bwd_unequal"], 0, st)
        self.check_runs(path, inputs, rkg)
        self.assertLessEqual(floor(rkg), floor(rkg_ns))
        if train:
            self.check_trains_as_plain(path, rkg)

    def test_cnn_float32(self):
        self.run_model("relu_cnn32", torch.float32, train=False)

    def test_cnn_float64(self):
        self.run_model("relu_cnn64", torch.float64, train=True)


class TestTrain(SplitBase):
    def test_two_steps_equal_plain(self):
        path, inputs = export(ResCnn(), "train", (4, 3, 16, 16), torch.float32)
        rkg = os.path.join(TMP, "train.rkg")
        _, chain = trace(path, inputs, rkg)
        self.assertTrue(split_nodes(chain))
        self.check_trains_as_plain(path, rkg)


if __name__ == "__main__":
    unittest.main(verbosity=2)
