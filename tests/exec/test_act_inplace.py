#!/usr/bin/env python3
"""End-to-end tests of the in-place activation backward (src/exec/exec_act_grad.cpp,
docs/exec.md "Activation gradients in place"): an in-place activation merged into
its owner's node (relu_ after a convolution, BatchNorm + relu_, ReLU6 = hardtanh_,
leaky_relu_, sigmoid_, tanh_) writes its gradient into the node's incoming one when
that gradient is donated and dense.  Each model is traced and run with real
schedules (keep everything, recompute everything, rockmate at the smallest budget):
gradients and output equal to the plain PyTorch step bit for bit, the measured peak
equal to the simulator's prediction, and the node's traced backward overhead no
longer holds the new gradient.  Also the cases that must not write (the gradient
shared with a residual branch, the loss sum's expanded gradient) and one training
step with BatchNorm statistics.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import check_peak, check_trains_as_plain, rk, schedules  # tests/exec/rk_cli.py

TMP = tempfile.mkdtemp(prefix="rkmate-act-")
F = torch.nn.functional


class ConvRelu(torch.nn.Module):
    """conv + relu_ twice (each relu_ joins its convolution's node), a 1x1 conv out."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        x = F.relu(self.c1(x), inplace=True)
        x = F.relu(self.c2(x), inplace=True)
        return self.c3(x)


class BnRelu(torch.nn.Module):
    """conv, BatchNorm + relu_, conv, BatchNorm + ReLU6(inplace) (hardtanh_), conv."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c3 = nn.Conv2d(8, 4, 1)
        self.r6 = nn.ReLU6(inplace=True)

    def forward(self, x):
        x = F.relu(self.b1(self.c1(x)), inplace=True)
        x = self.r6(self.b2(self.c2(x)))
        return self.c3(x)


class Others(torch.nn.Module):
    """Linear + sigmoid_, + tanh_, + leaky_relu_, and a GELU (out of place: its own node)."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.ModuleList([torch.nn.Linear(64, 64) for _ in range(4)] + [torch.nn.Linear(64, 4)])

    def forward(self, x):
        x = self.l[0](x).sigmoid_()
        x = self.l[1](x).tanh_()
        x = F.leaky_relu(self.l[2](x), 0.1, inplace=True)
        x = F.gelu(self.l[3](x))
        return self.l[4](x)


class Residual(torch.nn.Module):
    """a = relu_(l1(h)); s = a + h: the add's backward hands the SAME gradient to
    both branches (a's and h's accumulators, one of which takes it as .grad), then
    ResNet's order, b += s; relu_(b): the ReLU is its node's root and writes into
    the node's gradient, which the add_'s backward then hands to both branches."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.ModuleList([torch.nn.Linear(64, 64) for _ in range(3)] + [torch.nn.Linear(64, 4)])

    def forward(self, x):
        h = self.l[0](x)
        a = F.relu(self.l[1](h), inplace=True)
        s = a + h
        b = self.l[2](s)
        b += s
        b = F.relu(b, inplace=True)
        return self.l[3](b)


class ReluOut(torch.nn.Module):
    """The output is a relu_'s: its gradient is the loss sum's scalar expanded (no
    bytes, not dense): the backward falls back to the plain kernel."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.ModuleList([torch.nn.Linear(64, 64) for _ in range(2)])

    def forward(self, x):
        return F.relu(self.l[1](F.relu(self.l[0](x))), inplace=True)


def export(module, name, shape):
    torch.manual_seed(0)
    path = os.path.join(TMP, name + ".pt")
    m = module.double().train()
    torch.jit.trace(m, (torch.randn(*shape, dtype=torch.float64),), check_trace=False).save(path)
    inputs = ["--input", "x".join(map(str, shape)) + ":float64"]
    rkg = os.path.join(TMP, name + ".rkg")
    p = rk("trace", path, *inputs, "-o", rkg, "--verify", "--json", "--quiet", "--runs", "1", check=0)
    assert json.loads(p.stdout)["forward_equal"], p.stdout
    with open(rkg) as f:
        return path, inputs, rkg, json.load(f)


def bwd_node(chain, op):
    """(backward compute node, its data node) of the first node whose name ends with op."""
    for cls in chain["classes"]:
        data = {d["name"]: d for d in cls["data"]}
        for c in cls["compute"]:
            if c["kind"] == "bwd" and c["name"].endswith(op):
                return c, data["d" + c["name"][1:]], data.get("p" + c["name"][1:])
    raise AssertionError(f"no backward node *{op}")


class ActBase(unittest.TestCase):
    def schedules(self, rkg):
        """keep-all, recompute-all and rockmate (built-in options) at its smallest budget."""
        return schedules(rkg, "--builtin-options")

    def check_runs(self, path, inputs, rkg, exact=True):
        res = []
        for rks in self.schedules(rkg):
            p = rk("run", path, rks, "--chain", rkg, *inputs, "--check", "--json", "--iters", "1", check=0)
            r = json.loads(p.stdout)
            self.assertTrue(r["grads_equal"] and r["output_equal"], f"{rks}: {r}")
            self.assertEqual(r["grads_differing"], 0, r)
            if exact:
                check_peak(self, r, 64, rks)   # 64: the loss scalars
            else:
                self.assertLessEqual(r["measured_peak"], r["predicted_peak"] + 64, f"{rks}: {r}")
            res.append(r)
        return res


class TestConvRelu(ActBase):
    def test_conv_relu(self):
        path, inputs, rkg, chain = export(ConvRelu(), "conv_relu", (2, 3, 16, 16))
        runs = self.check_runs(path, inputs, rkg)
        self.assertLess(runs[0]["measured_peak"], runs[0]["baseline_peak"], runs[0])  # keep-all < plain


class TestBnRelu(ActBase):
    def test_bn_relu_and_relu6(self):
        path, inputs, rkg, chain = export(BnRelu(), "bn_relu", (2, 3, 16, 16))
        for cls in chain["classes"]:
            data = {x["name"]: x for x in cls["data"]}
            for c in cls["compute"]:
                if c["kind"] == "bwd" and "batch_norm" in c["name"]:
                    d = data["d" + c["name"][1:]]
                    self.assertLess(c["overhead"], d["size"] // 2, (c, d))
                    # hardtanh_ kept its result, not a copy of its input (HardtanhBackward0's)
                    p = data.get("p" + c["name"][1:])
                    self.assertLess(p["size"] if p else 0, d["size"] // 2, (p, d))
        self.check_runs(path, inputs, rkg)

    def test_training_step_bn_statistics(self):
        path, inputs, rkg, _ = export(BnRelu(), "bn_relu_train", (2, 3, 16, 16))
        rks = self.schedules(rkg)[1]   # recompute-all: BatchNorm runs again before each backward
        check_trains_as_plain(self, path, rkg, rks)


class TestOthers(ActBase):
    def test_sigmoid_tanh_leaky_gelu(self):
        path, inputs, rkg, chain = export(Others(), "act_others", (16, 64))
        for cls in chain["classes"]:
            data = {x["name"]: x for x in cls["data"]}
            for c in cls["compute"]:
                if c["kind"] == "bwd" and c["name"].endswith("_linear") and c["name"] != "b4_linear":
                    d = data["d" + c["name"][1:]]
                    if c["name"] != "b3_linear":   # linear 3 is followed by GELU, out of place
                        self.assertLess(c["overhead"], d["size"] // 2, (c, d))
        negative = [c for cls in chain["classes"] for c in cls["compute"] if c["kind"] == "bwd" and c["overhead"] < 0]
        self.assertGreaterEqual(len(negative), 2, negative)   # tanh_'s and leaky_relu_'s linears
        self.check_runs(path, inputs, rkg)


class TestNoWrite(ActBase):
    def test_residual_shared_gradient(self):
        path, inputs, rkg, chain = export(Residual(), "residual", (16, 64))
        # linear + add_ + relu_: the ReLU's gradient goes into the node's incoming one, so
        # the node never holds that, its new gradients and the ReLU's output at once: a
        # negative overhead (the simulator lowers the step by the gradients it alone makes)
        ovs = [c["overhead"] for cls in chain["classes"] for c in cls["compute"] if c["kind"] == "bwd"]
        self.assertTrue(any(o < 0 for o in ovs), ovs)
        self.check_runs(path, inputs, rkg)

    def test_memory_log(self):
        # `run --memory-log`: one row per op of the schedule (marks apart), the
        # simulator's bytes beside the measured ones; their largest are the peaks
        path, inputs, rkg, _ = export(Residual(), "residual_log", (16, 64))
        for rks in self.schedules(rkg)[:2]:
            with open(rks) as f:
                n_ops = len(json.load(f)["ops"])
            log = rks + ".tsv"
            p = rk("run", path, rks, "--chain", rkg, *inputs, "--json", "--iters", "1", "--memory-log", log, check=0)
            r = json.loads(p.stdout)
            with open(log) as f:
                lines = [x.rstrip("\n").split("\t") for x in f if not x.startswith("#")]
            head, rows = lines[0], [dict(zip(lines[0], x)) for x in lines[1:]]
            self.assertEqual(head[:4], ["op", "kind", "block", "node"], head)
            self.assertLessEqual(len(rows), n_ops)
            self.assertGreater(len(rows), 0)
            runs = [x for x in rows if x["kind"] == "run"]
            self.assertEqual(max(int(x["predicted_step"]) for x in runs), r["predicted_peak"], rows)
            self.assertLessEqual(abs(max(int(x["measured_step"]) for x in rows) - r["measured_peak"]), 64, (r, rows))
            # after each op, what is held: never above the prediction (shared gradients below it)
            for x in rows:
                self.assertLessEqual(int(x["measured_live"]), int(x["predicted_live"]) + 64, x)
        # never over an input file
        before = open(rkg, "rb").read()
        p = rk("run", path, rks, "--chain", rkg, *inputs, "--memory-log", rkg)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("refusing to write", p.stderr)
        self.assertEqual(open(rkg, "rb").read(), before)
        # nor into a directory, nor where no file can be made (before the step runs)
        for bad, why in ((TMP, "is a directory"), (os.path.join(TMP, "no", "such", "x.tsv"), "cannot write")):
            p = rk("run", path, rks, "--chain", rkg, *inputs, "--memory-log", bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(why, p.stderr)
            self.assertEqual(p.stdout, "")

    def test_expanded_output_gradient(self):
        path, inputs, rkg, _ = export(ReluOut(), "relu_out", (16, 64))
        # The output's gradient is the expanded scalar: the plain kernel allocates the new
        # gradient, which the trace (a dense gradient) did not count; the chain counts the
        # output's gradient whole, which the run does not allocate: never above the prediction.
        self.check_runs(path, inputs, rkg, exact=False)


if __name__ == "__main__":
    unittest.main(verbosity=2)
