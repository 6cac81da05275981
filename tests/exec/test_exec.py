#!/usr/bin/env python3
"""End-to-end tests of rkmate's libtorch part (rkmate trace / run): export small
models with tools/models (GPT2 with dropout, ResNet, nn.Transformer, RegNet,
MLP-Mixer), trace them, check the blocks reproduce the module's output bit for
bit and the chain's structure, then run schedules (keep everything,
recomputing ones, rk-Rotor and rockmate at several budgets) and check that the
gradients equal the plain PyTorch step bit for bit in float64, that the
measured peak stays within the budget (+5 % documented slack) and within 1 %
of the simulator's prediction.  Also inputs from torch.save files, --device
cuda without a GPU, the torch.export front end (the same models saved with
torch.export.save, .pt2), and the rules for bad input.

Run by tests/exec/run_exec_tests.sh with the Python whose torch rkmate was
built against (the project's .venv: models are saved by the torch that loads
them); skipped (exit 77) when rkmate-torch is not built."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

RKMATE = os.environ.get("RKMATE", "rkmate")
ROOT = os.environ.get("RKMATE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tools", "models")
TMP = tempfile.mkdtemp(prefix="rkmate-exec-")
SLACK = 0.05   # documented allocator slack (docs/exec.md)
PRED_TOL = 0.01


def run(*args, check=None):
    p = subprocess.run([RKMATE, *args], capture_output=True, text=True)
    if check is not None and p.returncode != check:
        raise AssertionError(f"rkmate {' '.join(args)} exited {p.returncode}, expected {check}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def export(script, name, *args):
    out = os.path.join(TMP, name + ".pt")
    if not os.path.exists(out):
        p = subprocess.run([sys.executable, os.path.join(MODELS, script), "--out", out, "--no-check", *args],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError(f"{script} failed: {p.stderr}")
    with open(out[:-3] + ".inputs.txt") as f:
        specs = f.read().split()
    inputs = []
    for s in specs:
        inputs += ["--input", s]
    inputs += ["--input-file", out[:-3] + ".inputs.pt"]   # torch.save of the list of inputs
    return out, inputs


def trace(model, inputs):
    rkg = model[:-3] + ".rkg"
    if not os.path.exists(rkg):
        p = run("trace", model, *inputs, "-o", rkg, "--json", "--quiet", "--runs", "2", "--verify", check=0)
        with open(rkg + ".stats", "w") as f:
            f.write(p.stdout)
    with open(rkg + ".stats") as f:
        stats = json.loads(f.read())
    with open(rkg) as f:
        chain = json.load(f)
    return rkg, stats, chain


def solve(rkg, algo, budget):
    """Solve with src/solve.  rockmate uses its built-in block options (keep all,
    asap, none) so that these executor tests do not depend on the MILP."""
    rks = os.path.join(TMP, f"{os.path.basename(rkg)}.{algo}.{budget}.rks")
    extra = ["--builtin-options"] if algo == "rockmate" else []
    p = run("solve", rkg, "--budget", str(budget), "--algo", algo, "-o", rks, "--json", "--quiet", *extra)
    if p.returncode == 3:
        return None, None
    if p.returncode != 0:
        raise AssertionError(f"solve {algo} {budget}: {p.stderr}")
    return rks, json.loads(p.stdout)


class ExecBase(unittest.TestCase):
    def trace_verify_run_3x8(self, module, name):
        """Trace module (float64, train mode, one 3x8 input) with --verify:
        the blocks reproduce its forward; keep-all and recompute-all run with
        the plain step's gradients."""
        import torch
        path = os.path.join(TMP, name + ".pt")
        torch.jit.trace(module.double().train(), (torch.randn(3, 8, dtype=torch.float64),), check_trace=False).save(path)
        rkg = os.path.join(TMP, name + ".rkg")
        p = run("trace", path, "--input", "3x8:float64", "-o", rkg, "--verify", "--json", "--quiet", check=0)
        self.assertTrue(json.loads(p.stdout)["forward_equal"])
        for algo in ("none", "recompute-all"):
            rks, _ = solve(rkg, algo, 10**12)
            self.check_run(path, ["--input", "3x8:float64"], rkg, rks)

    def check_run(self, model, inputs, rkg, rks, budget=None):
        p = run("run", model, rks, "--chain", rkg, *inputs, "--check", "--json", "--iters", "1", check=0)
        r = json.loads(p.stdout)
        self.assertTrue(r["grads_equal"], f"{rks}: gradients differ: {r}")
        self.assertTrue(r["output_equal"], f"{rks}: output differs: {r}")
        self.assertEqual(r["max_abs_diff"], 0)
        self.assertEqual(r["grads_differing"], 0, r)
        # --iters 1: the plain step ran twice (warm-up and measured) and is
        # deterministic on the CPU
        self.assertIs(r["plain_repeatable"], True, r)
        pred, meas = r["predicted_peak"], r["measured_peak"]
        # Never above the prediction; below it by more than 1 % only where the
        # trace over-measures a node: GPT2's attention matmul (att @ v, v a
        # split view of the fused QKV output) is predicted 32 kB (23 %) above
        # what its backward holds, which shows since weight gradients left
        # the activation peak (its recompute-all peak moved there).
        self.assertLessEqual(meas - pred, PRED_TOL * pred, f"{rks}: measured {meas} vs predicted {pred}")
        self.assertGreaterEqual(meas, 0.75 * pred, f"{rks}: measured {meas} vs predicted {pred}")
        if budget is not None:
            self.assertLessEqual(meas, budget * (1 + SLACK), f"{rks}: measured {meas} over budget {budget}")
        return r


class TestGPT2(ExecBase):
    @classmethod
    def setUpClass(cls):
        common = ["--width", "32", "--heads", "2", "--seq", "16", "--batch", "2", "--vocab", "50",
                  "--dtype", "float64"]
        cls.m1, cls.i1 = export("gpt2.py", "gpt2_l1", "--layers", "1", *common)
        cls.m3, cls.i3 = export("gpt2.py", "gpt2_l3", "--layers", "3", "--pt2", *common)
        cls.r1, cls.s1, cls.c1 = trace(cls.m1, cls.i1)
        cls.r3, cls.s3, cls.c3 = trace(cls.m3, cls.i3)

    def test_forward_bit_exact(self):
        self.assertTrue(self.s1["forward_equal"])
        self.assertTrue(self.s3["forward_equal"])

    def test_blocks_grow_2n_classes_constant(self):
        self.assertEqual(self.s3["blocks"] - self.s1["blocks"], 4)
        self.assertEqual(self.s3["classes"], self.s1["classes"])
        self.assertLessEqual(self.s3["blocks"], 2 * 3 + 6)

    def test_data_sizes(self):
        # Block 0's input: 2x16 int64 token ids; the last block's output: 2x16x50 float64 logits.
        c0 = self.c3["classes"][self.c3["blocks"][0]["class"]] if isinstance(self.c3["blocks"][0], dict) else None
        first = self.c3["classes"][0]
        sizes = {d["name"]: d["size"] for d in first["data"]}
        self.assertEqual(sizes["in0"], 2 * 16 * 8)
        last_cls = self.c3["classes"][-1]
        out = [d for d in last_cls["data"] if d["name"] == last_cls["output"]][0]
        self.assertEqual(out["size"], 2 * 16 * 50 * 8)
        for cls in self.c3["classes"]:
            for d in cls["data"]:
                if d["kind"] in ("data", "grad"):
                    self.assertEqual(d["size"] % 8, 0, d)
        del c0

    def test_keep_all_and_recompute_schedules(self):
        for algo in ("none", "sqrt", "recompute-all"):
            rks, _ = solve(self.r3, algo, 10**12)
            self.check_run(self.m3, self.i3, self.r3, rks)

    def test_rockmate_budgets(self):
        _, keep = solve(self.r3, "none", 10**12)
        full = keep["predicted_peak"]
        ran = 0
        for frac in (1.0, 0.75, 0.5, 0.35):
            budget = int(full * frac)
            for algo in ("rockmate", "rotor"):
                rks, sol = solve(self.r3, algo, budget)
                if rks is None:
                    continue
                self.check_run(self.m3, self.i3, self.r3, rks, budget)
                ran += 1
        self.assertGreaterEqual(ran, 4)

    def test_chain_of_another_model_refused(self):
        rks, _ = solve(self.r1, "none", 10**12)
        p = run("run", self.m3, rks, "--chain", self.r1, *self.i3)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("chain", p.stderr)

    def test_invalid_schedule_refused(self):
        rks, _ = solve(self.r1, "none", 10**12)
        with open(rks) as f:
            s = json.load(f)
        # Drop the first operation that runs something: the rest then uses missing data.
        ops = s["ops"]
        for i, op in enumerate(ops):
            if isinstance(op, dict) and op.get("op", op.get("kind")) in ("run", "compute"):
                del ops[i]
                break
            if isinstance(op, list) and op and op[0] in ("run", "compute", "R"):
                del ops[i]
                break
        else:
            self.skipTest("unknown schedule layout")
        bad = os.path.join(TMP, "bad.rks")
        with open(bad, "w") as f:
            json.dump(s, f)
        p = run("run", self.m1, bad, "--chain", self.r1, *self.i1)
        self.assertEqual(p.returncode, 2, p.stderr)


    def test_loss_mean(self):
        rks, _ = solve(self.r1, "recompute-all", 10**12)
        # No --input: the inputs, input file and seed recorded in the chain are used.
        p = run("run", self.m1, rks, "--chain", self.r1, "--check", "--json", "--loss", "mean",
                "--iters", "1", check=0)
        self.assertTrue(json.loads(p.stdout)["grads_equal"])

    def test_optimize(self):
        p = run("optimize", self.m1, *self.i1, "--budget", "70%", "--algo", "rotor", "--check", "--json",
                "--runs", "1", "--iters", "1", check=0)
        r = json.loads(p.stdout)
        self.assertTrue(r["grads_equal"])
        self.assertLessEqual(r["measured_peak"], r["budget"] * (1 + SLACK))
        # 70 % of the plain step's activation peak (measured when tracing, and again by run)
        self.assertLessEqual(abs(r["budget"] - 0.7 * r["baseline_peak"]), 0.01 * r["baseline_peak"])

    def test_optimize_solve_options_and_json_when_nothing_fits(self):
        p = run("optimize", self.m1, *self.i1, "--budget", "1%", "--grid", "3x3", "--time-limit", "1",
                "--threads", "1", "--slots", "200", "--json", "--runs", "1", check=3)
        r = json.loads(p.stdout)
        self.assertFalse(r["feasible"])
        self.assertGreater(r["min_budget"], r["budget"])
        self.assertEqual(r["budget"], r["plain_peak"] // 100)
        h = run("optimize", "--help", check=0).stdout
        for opt in ("--input", "--input-file", "--device", "--seed", "--runs", "--verify", "--budget", "--algo",
                    "--slots", "--threads", "--grid", "--time-limit", "--export-mps", "--builtin-options",
                    "--no-fallback", "--verbose", "--iters", "--check", "--loss", "--json", "--quiet",
                    "--chain-out", "-o"):
            self.assertIn(opt, h)


class TestTransformer(ExecBase):
    """nn.Transformer: two inputs, many views and size nodes, no separator in the decoder."""

    @classmethod
    def setUpClass(cls):
        cls.m, cls.i = export("transformer.py", "transformer", "--pt2", "--encoder-layers", "1", "--decoder-layers", "1",
                              "--d-model", "16", "--heads", "2", "--ffn", "32", "--src-seq", "8", "--tgt-seq", "8",
                              "--batch", "2", "--dtype", "float64")
        cls.r, cls.s, cls.c = trace(cls.m, cls.i)

    def test_forward_and_schedules(self):
        self.assertTrue(self.s["forward_equal"])
        for algo in ("none", "recompute-all"):
            rks, _ = solve(self.r, algo, 10**12)
            self.check_run(self.m, self.i, self.r, rks)


class TestResNet(ExecBase):
    @classmethod
    def setUpClass(cls):
        cls.m, cls.i = export("resnet.py", "resnet18", "--pt2", "--depth", "18", "--width-scale", "0.25", "--image", "32",
                              "--batch", "2", "--dtype", "float64")
        cls.r, cls.s, cls.c = trace(cls.m, cls.i)

    def test_forward_and_inplace(self):
        self.assertTrue(self.s["forward_equal"])
        self.assertGreater(self.s["inplace"], 0)   # relu_ / add_ merged into their owners
        self.assertGreater(self.s["blocks"], 5)

    def test_schedules(self):
        for algo in ("none", "sqrt"):
            rks, _ = solve(self.r, algo, 10**12)
            self.check_run(self.m, self.i, self.r, rks)
        _, keep = solve(self.r, "none", 10**12)
        p = run("solve", self.r, "--budget", "1", "--algo", "rockmate", "--json", "--quiet", "--builtin-options")
        minb = json.loads(p.stdout).get("min_budget", -1) if p.returncode == 3 and p.stdout else -1
        for budget in sorted({keep["predicted_peak"], max(minb, 1), (keep["predicted_peak"] + max(minb, 1)) // 2}):
            rks, _ = solve(self.r, "rockmate", budget)
            if rks:
                self.check_run(self.m, self.i, self.r, rks, budget)


class TestInplace(ExecBase):
    """In-place ops: on an input they run on a copy; on a view of data read
    again later they join the data's node; on a view of data read both before
    and after, they are refused."""

    def test_inplace_on_input_and_view(self):
        import torch
        F = torch.nn.functional

        class A(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                x = F.relu(x, inplace=True)
                v = self.l(x).view(-1)
                v = F.dropout(v, 0.3, True, True)
                return v.view(3, 8) * 2

        self.trace_verify_run_3x8(A(), "inplace")

    def test_inplace_on_view_read_later(self):
        """relu_ on a slice of h, then h read again: merged into h's node, the
        reader sees the modified data, as in PyTorch."""
        import torch

        class B(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                h = self.l(x)
                h[:, :4].relu_()
                return h * 3

        self.trace_verify_run_3x8(B(), "inplace_b")

    def test_inplace_on_view_read_before_and_after(self):
        """An op reads h, then relu_ writes a slice of h, then h is read again
        (refused before): rewritten to write a clone of h, which the later
        reader reads (exec_functionalize.cpp); forward bit for bit, gradients
        equal with keep-all and recompute-all."""
        import torch

        class C(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                h = self.l(x)
                s = h + 1
                h[:, :4].relu_()
                return h * s

        self.trace_verify_run_3x8(C(), "inplace_c")
        p = run("trace", os.path.join(TMP, "inplace_c.pt"), "--input", "3x8:float64", "-o",
                os.path.join(TMP, "inplace_c2.rkg"), "--json", "--quiet", check=0)
        self.assertEqual(json.loads(p.stdout)["functionalized"], 1)

    def test_inplace_on_input_view_read_after_refused(self):
        """relu_ on a slice of a model input that is read again: the plain
        step writes the caller's tensor, so rkmate refuses it, naming the op
        and its later reader, and writes no chain."""
        import torch

        class D(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                s = self.l(x)
                x[:, :4].relu_()
                return self.l(x) * s

        path = os.path.join(TMP, "inplace_d.pt")
        torch.jit.trace(D().train(), (torch.randn(3, 8),), check_trace=False).save(path)
        p = run("trace", path, "--input", "3x8:float32", "-o", os.path.join(TMP, "d.rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("aten::relu_", p.stderr)
        self.assertIn("read again", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(TMP, "d.rkg")))


class TestWeightGradients(ExecBase):
    """Parameter gradients start as none (PyTorch 2.x's zero_grad()): the
    first contribution becomes .grad (no temporary), a second one to a shared
    parameter is added in place (a temporary, grad_accum in the chain)."""

    def export_3xd(self, module, name, d):
        import torch
        path = os.path.join(TMP, name + ".pt")
        torch.jit.trace(module.double().train(), (torch.randn(3, d, dtype=torch.float64),), check_trace=False).save(path)
        inputs = ["--input", f"3x{d}:float64"]
        rkg = os.path.join(TMP, name + ".rkg")
        run("trace", path, *inputs, "-o", rkg, "--quiet", "--runs", "1", check=0)
        with open(rkg) as f:
            return path, inputs, rkg, json.load(f)

    def bwd_nodes(self, chain, op):
        return [c for g in chain["classes"] for c in g["compute"] if c["kind"] == "bwd" and c["name"].endswith(op)]

    def test_large_linear_weight_gradient_is_not_a_temporary(self):
        """A VGG-like head: Linear(4096, 64)'s weight gradient (2 MiB, 16x the
        input) used to be a temporary of its backward and set the floor."""
        import torch

        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(4096, 64)
                self.fc2 = torch.nn.Linear(64, 8)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x * 2)))

        path, inputs, rkg, chain = self.export_3xd(Head(), "vgg_head", 4096)
        wbytes = 4096 * 64 * 8
        for c in self.bwd_nodes(chain, "linear"):
            self.assertLess(c["overhead"], wbytes // 4, c)   # the stolen .grad is not counted
            self.assertNotIn("grad_accum", c)
        self.assertLess(chain["plain_peak"], wbytes // 4)     # .grad is not activation memory
        p = run("solve", rkg, "--budget", "1", "--json", "--quiet", check=3)
        r = json.loads(p.stdout)
        self.assertLess(r["min_budget"], wbytes // 4)   # was > 2 MiB: the temporary set the floor
        self.assertEqual(r["floor_cause"], "inputs", r)
        self.assertEqual(r["floor_grad_accum"], 0)
        self.assertIn("its inputs", p.stderr)
        for algo in ("none", "recompute-all"):
            rks, _ = solve(rkg, algo, 10**12)
            self.check_run(path, inputs, rkg, rks)
        b = json.loads(run("solve", rkg, "--budget", "1", "--json", "--quiet", "--builtin-options", check=3).stdout)
        rks, _ = solve(rkg, "rockmate", b["min_budget"])
        self.check_run(path, inputs, rkg, rks, b["min_budget"])

    def test_shared_weight_second_contribution_accumulates(self):
        """One Linear applied twice: the later use's backward runs first and
        its gradient becomes .grad; the earlier use's is added in place, a
        temporary of the weight's size (grad_accum) that sets the floor."""
        import torch

        class Shared(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(64, 64)

            def forward(self, x):
                return self.l(torch.tanh(self.l(x * 2))) * 3

        path, inputs, rkg, chain = self.export_3xd(Shared(), "shared_w", 64)
        wb = (64 * 64 + 64) * 8   # weight and bias
        accs = [c.get("grad_accum", 0) for c in self.bwd_nodes(chain, "linear")]
        self.assertEqual(sorted(accs), [0, wb], accs)
        p = run("solve", rkg, "--budget", "1", "--json", "--quiet", check=3)
        r = json.loads(p.stdout)
        self.assertEqual(r["floor_cause"], "grad_accumulation", r)
        self.assertEqual(r["floor_grad_accum"], wb)
        self.assertIn("added into .grad in place", p.stderr)
        for algo in ("none", "recompute-all"):
            rks, _ = solve(rkg, algo, 10**12)
            self.check_run(path, inputs, rkg, rks)


class TestGradientBuffers(ExecBase):
    """A gradient the plain step never allocates: that of the loss `sum()`
    (its scalar expanded to the output's shape)."""

    def export_3x8(self, module, name):
        import torch
        path = os.path.join(TMP, name + ".pt")
        torch.jit.trace(module.double().train(), (torch.randn(3, 8, dtype=torch.float64),), check_trace=False).save(path)
        rkg = os.path.join(TMP, name + ".rkg")
        run("trace", path, "--input", "3x8:float64", "-o", rkg, "--quiet", "--runs", "1", check=0)
        return path, ["--input", "3x8:float64"], rkg

    def test_sum_loss_gradient_not_allocated(self):
        """A large output whose own backward does not need its gradient dense
        (cat's backward narrows it, each piece added to a small one): the plain step never allocates the 96 KiB gradient of
        `sum()`; the schedule took it as the output leaf's .grad, a copy (2x
        the plain peak).  With `mean` both allocate it (MeanBackward)."""
        import torch

        class Wide(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                h = torch.tanh(self.l(x))
                return torch.cat([h] * 512, 1)

        path, inputs, rkg = self.export_3x8(Wide(), "wide_out")
        out_bytes = 3 * 8 * 512 * 8
        rks, _ = solve(rkg, "none", 10**12)
        res = {}
        for loss in ("sum", "mean"):
            p = run("run", path, rks, "--chain", rkg, *inputs, "--check", "--json", "--iters", "1", "--loss", loss,
                    check=0)
            r = res[loss] = json.loads(p.stdout)
            self.assertTrue(r["grads_equal"] and r["output_equal"], r)
            self.assertLessEqual(r["measured_peak"], r["baseline_peak"], r)
            self.assertLessEqual(r["measured_peak"], r["predicted_peak"] + 64, r)   # loss scalars
        self.assertLess(res["sum"]["measured_peak"], 1.5 * out_bytes, res)
        self.assertGreater(res["mean"]["measured_peak"], 2 * out_bytes, res)
        # the chain counts the output's gradient whole (mean makes it): pessimistic by it for sum
        self.assertLessEqual(res["sum"]["measured_peak"], res["sum"]["predicted_peak"] - out_bytes + 64, res)


class TestMixer(ExecBase):
    """MLP-Mixer: token-mixing transposes (views) and a patch convolution."""

    @classmethod
    def setUpClass(cls):
        cls.m, cls.i = export("mixer.py", "mixer", "--pt2", "--layers", "2", "--image", "16", "--patch", "4",
                              "--channels", "16", "--token-hidden", "8", "--channel-hidden", "32",
                              "--batch", "2", "--dropout", "0.1", "--dtype", "float64")
        cls.r, cls.s, cls.c = trace(cls.m, cls.i)

    def test_forward_and_schedules(self):
        self.assertTrue(self.s["forward_equal"])
        self.assertGreater(self.s["blocks"], 3)
        for algo in ("none", "sqrt", "recompute-all"):
            rks, _ = solve(self.r, algo, 10**12)
            self.check_run(self.m, self.i, self.r, rks)
        _, keep = solve(self.r, "none", 10**12)
        budget = keep["predicted_peak"] // 2
        rks, _ = solve(self.r, "rockmate", budget)
        if rks:
            self.check_run(self.m, self.i, self.r, rks, budget)


class TestRegNet(ExecBase):
    """torchvision RegNet: grouped convolutions, squeeze-excitation, in-place ReLU and
    training-mode BatchNorm."""

    @classmethod
    def setUpClass(cls):
        cls.m, cls.i = export("regnet.py", "regnet", "--pt2", "--arch", "regnet_x_400mf", "--image", "32", "--batch", "2",
                              "--dtype", "float64")
        cls.r, cls.s, cls.c = trace(cls.m, cls.i)

    def test_forward_and_schedules(self):
        self.assertTrue(self.s["forward_equal"])
        self.assertGreater(self.s["inplace"], 0)
        for algo in ("none", "sqrt"):
            rks, _ = solve(self.r, algo, 10**12)
            self.check_run(self.m, self.i, self.r, rks)


class TestTorchExport(ExecBase):
    """The torch.export front end: the same models saved with torch.export.save
    (PATH.pt2, written by the exporters' --pt2) are traced and run like their
    TorchScript files, gradients equal bit for bit."""

    MODELS = [("gpt2_l3", TestGPT2, "m3", "i3"), ("transformer", TestTransformer, "m", "i"),
              ("resnet18", TestResNet, "m", "i"), ("mixer", TestMixer, "m", "i"), ("regnet", TestRegNet, "m", "i")]

    def program(self, cls, mattr, iattr):
        if not hasattr(cls, mattr):
            cls.setUpClass()
        m, i = getattr(cls, mattr), getattr(cls, iattr)
        pt2 = m[:-3] + ".pt2"
        self.assertTrue(os.path.exists(pt2), pt2)
        rkg = os.path.join(TMP, os.path.basename(m)[:-3] + ".pt2.rkg")
        p = run("trace", pt2, *i, "-o", rkg, "--json", "--quiet", "--runs", "1", "--verify", check=0)
        return pt2, i, rkg, json.loads(p.stdout)

    def test_models(self):
        for name, cls, mattr, iattr in self.MODELS:
            with self.subTest(model=name):
                pt2, i, rkg, st = self.program(cls, mattr, iattr)
                self.assertTrue(st["forward_equal"], f"{name}: {st}")
                for algo in ("none", "recompute-all"):
                    rks, _ = solve(rkg, algo, 10**12)
                    self.check_run(pt2, i, rkg, rks)

    def test_gpt2_same_chain_and_budgets(self):
        pt2, i, rkg, st = self.program(TestGPT2, "m3", "i3")
        _, ts, _ = trace(TestGPT2.m3, TestGPT2.i3)
        # One node per allocation either way: the same simplified graph and blocks.
        for k in ("nodes_simplified", "blocks", "classes"):
            self.assertEqual(st[k], ts[k], k)
        _, keep = solve(rkg, "none", 10**12)
        for frac in (0.6, 0.4):
            budget = int(keep["predicted_peak"] * frac)
            rks, _ = solve(rkg, "rockmate", budget)
            if rks:
                self.check_run(pt2, i, rkg, rks, budget)

    def test_bad_archive(self):
        # A torch.export archive whose graph is not valid JSON: refused, file and record named.
        import zipfile
        pt2 = self.program(TestGPT2, "m3", "i3")[0]
        bad = os.path.join(TMP, "bad.pt2")
        with zipfile.ZipFile(pt2) as src, zipfile.ZipFile(bad, "w") as dst:
            for item in src.infolist():
                data = src.read(item.filename)
                if item.filename.endswith("models/model.json"):
                    data = data[: len(data) // 2]
                dst.writestr(item, data)
        p = run("trace", bad, "--input", "2x4:float32", "-o", os.path.join(TMP, "bad.rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("bad.pt2", p.stderr)
        self.assertIn("model.json", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(TMP, "bad.rkg")))


class TestInputFile(ExecBase):
    """--input-file takes what users save with torch.save (a tensor or a list of
    tensors); --input, when also given, must describe it."""

    def test_torch_save_inputs(self):
        import torch
        m, i = export("gpt2.py", "gpt2_tiny", "--layers", "1", "--width", "16", "--heads", "2", "--seq", "8",
                      "--batch", "1", "--vocab", "20")
        pt = m[:-3] + ".inputs.pt"
        rkg = os.path.join(TMP, "file_only.rkg")
        # The file alone gives shapes and dtypes.
        run("trace", m, "--input-file", pt, "-o", rkg, "--quiet", "--runs", "1", check=0)
        rks, _ = solve(rkg, "recompute-all", 10**12)
        # run without inputs: the chain records the input file.
        p = run("run", m, rks, "--chain", rkg, "--check", "--json", "--iters", "1", check=0)
        self.assertTrue(json.loads(p.stdout)["grads_equal"])
        # A single tensor saved on its own (not in a list) is one input.
        one = os.path.join(TMP, "one_tensor.pt")
        torch.save(torch.load(pt)[0], one)
        p = run("run", m, rks, "--chain", rkg, "--input-file", one, "--check", "--json", "--iters", "1", check=0)
        self.assertTrue(json.loads(p.stdout)["grads_equal"])
        # --input that does not describe the file is refused.
        p = run("trace", m, "--input", "1x9:int64", "--input-file", pt, "-o", os.path.join(TMP, "y.rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("1x8:int64", p.stderr)
        # Not a torch.save file: refused, named.
        raw = os.path.join(TMP, "raw.bin")
        with open(raw, "wb") as f:
            f.write(bytes(64))
        p = run("trace", m, "--input-file", raw, "-o", os.path.join(TMP, "z.rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("raw.bin", p.stderr)
        self.assertIn("torch.save", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(TMP, "z.rkg")))


class TestCudaRefused(unittest.TestCase):
    """--device cuda on a machine without a GPU: a clear message and exit 2
    (the CUDA code itself is compiled in whenever the libtorch has CUDA)."""

    def test_no_gpu(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is present: tests/exec/test_exec_cuda.py runs on it")
        m, i = export("gpt2.py", "gpt2_tiny", "--layers", "1", "--width", "16", "--heads", "2", "--seq", "8",
                      "--batch", "1", "--vocab", "20")
        p = run("trace", m, *i, "--device", "cuda", "-o", os.path.join(TMP, "cuda.rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--device cuda", p.stderr)
        self.assertTrue("no CUDA device is available" in p.stderr or "has no CUDA" in p.stderr, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(TMP, "cuda.rkg")))


class TestBadInput(unittest.TestCase):
    def test_missing_input_spec(self):
        m, _ = export("gpt2.py", "gpt2_tiny", "--layers", "1", "--width", "16", "--heads", "2", "--seq", "8",
                      "--batch", "1", "--vocab", "20")
        p = run("trace", m, "-o", os.path.join(TMP, "x.rkg"))
        self.assertEqual(p.returncode, 2)
        p = run("trace", m, "--input", "1x8:int64", "--input", "1x8:int64", "-o", os.path.join(TMP, "x.rkg"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("input", p.stderr)
        p = run("trace", m, "--input", "1x8:complex7", "-o", os.path.join(TMP, "x.rkg"))
        self.assertEqual(p.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(TMP, "x.rkg")))

    def test_not_a_model(self):
        bad = os.path.join(TMP, "garbage.pt")
        with open(bad, "w") as f:
            f.write("not a model\n")
        p = run("trace", bad, "--input", "2:float32", "-o", os.path.join(TMP, "g.rkg"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("garbage.pt", p.stderr)

    def refused_model(self, forward, name, script):
        """Save a one-Linear module whose forward is `forward` (scripted or
        traced) and trace it; rkmate must refuse it with exit 2.  Returns the
        message."""
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(4, 4)

        M.forward = forward
        path = os.path.join(TMP, name + ".pt")
        mod = torch.jit.script(M()) if script else torch.jit.trace(M(), torch.randn(2, 4))
        mod.save(path)
        p = run("trace", path, "--input", "2x4:float32", "-o", os.path.join(TMP, name + ".rkg"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        return p.stderr

    def test_export_refuses_custom_backward_and_hooks(self):
        # torch.export inlines a custom autograd.Function's forward and drops
        # its backward (a gradient reversal layer trained with its sign
        # flipped, unseen11's dann_grl); torch.jit.trace and torch.export both
        # drop a tensor's gradient hook: tools/models/common.export refuses both
        import argparse

        import torch
        sys.path.insert(0, MODELS)
        import common

        class Reverse(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return -g

        class Head(torch.nn.Module):
            def __init__(self, how):
                super().__init__()
                self.how, self.f, self.d = how, torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)

            def forward(self, x):
                h = torch.relu(self.f(x))
                if self.how == "function":
                    h = Reverse.apply(h)
                elif self.how == "penalty":  # (unseen13's wgan_gp: an internal AssertionError of the trace)
                    s = self.d(h)
                    g, = torch.autograd.grad(s, h, grad_outputs=torch.ones_like(s), create_graph=True)
                    h = h + g.pow(2)
                else:
                    h = h * 1.0
                    h.register_hook(lambda g: -g)
                return self.d(h).pow(2).mean()

        for how, said in (("function", "torch.autograd.Function"), ("hook", "Tensor.register_hook"),
                          ("penalty", "runs a backward")):
            out = os.path.join(TMP, "lost_" + how + ".pt")
            args = argparse.Namespace(out=out, dtype="float32", seed=0, threads=None, pt2=False, no_check=True)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                common.export(Head(how), [torch.randn(4, 8)], args, "lost_" + how, {})
            self.assertEqual(e.exception.code, 1, err.getvalue())
            self.assertIn(said, err.getvalue())
            self.assertFalse(os.path.exists(out))
            self.assertFalse(os.path.exists(out + ".tmp"))

    def test_export_inlines_checkpoint(self):
        # torch.utils.checkpoint (unseen12's linformer_ckpt, HF / timm with
        # gradient checkpointing on): torch.jit.trace records its
        # torch.autograd.Function as a Python call that torch.jit.save cannot
        # write; the exporter calls the checkpointed function directly (rkmate
        # chooses what to recompute), for both variants, however the model
        # imported it, and the saved model's gradients are the eager model's
        import argparse

        import torch
        import torch.utils.checkpoint
        from torch.utils.checkpoint import checkpoint
        sys.path.insert(0, MODELS)
        import common

        class Net(torch.nn.Module):
            def __init__(self, reentrant):
                super().__init__()
                self.reentrant = reentrant
                self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
                self.drop = torch.nn.Dropout(0.5)

            def block(self, h, scale=1.0):
                return self.drop(torch.tanh(self.a(h))) * scale

            def forward(self, x):
                if self.reentrant:
                    h = checkpoint(self.block, x, use_reentrant=True)
                else:
                    h = checkpoint(self.block, x, scale=2.0, use_reentrant=False)
                h = torch.utils.checkpoint.checkpoint_sequential([self.b, torch.nn.ReLU()], 2, h,
                                                                 use_reentrant=self.reentrant)
                return h.pow(2).mean()

        generator = torch.utils.checkpoint._checkpoint_without_reentrant_generator
        for reentrant in (True, False):
            name = "ckpt_%s" % ("reentrant" if reentrant else "nonreentrant")
            out = os.path.join(TMP, name + ".pt")
            args = argparse.Namespace(out=out, dtype="float32", seed=0, threads=None, pt2=False, no_check=False)
            torch.manual_seed(1)
            model = Net(reentrant).train()
            x = torch.randn(4, 8, requires_grad=True)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                meta = common.export(model, [x.detach()], args, name, {})
            self.assertIn("inlined", err.getvalue())
            self.assertEqual(meta["checkpoints_inlined"], 2, err.getvalue())  # the last segment is not checkpointed
            self.assertIs(torch.utils.checkpoint._checkpoint_without_reentrant_generator, generator)
            traced = torch.jit.load(out)
            self.assertNotIn("prim::PythonOp", str(traced.inlined_graph))
            for m in (model, traced):  # (a reentrant checkpoint refuses autograd.grad)
                x.grad = None
                for p in m.parameters():
                    p.grad = None
                torch.manual_seed(7)
                loss = m(x)
                loss.backward()
                grads = [x.grad] + [p.grad for p in m.parameters()]
                if m is model:
                    eager = (loss, grads)
            self.assertTrue(torch.equal(loss, eager[0]), (loss, eager[0]))
            for g, e in zip(grads, eager[1]):
                self.assertTrue(torch.equal(g, e), name)

    def test_export_warns_of_cumulative_batchnorm(self):
        # BatchNorm(momentum=None): the trace keeps one factor (docs/exec.md,
        # "What torch.jit.trace fixes silently"); the exporter says so and
        # records it in the meta file's data_dependent_fixed
        import argparse

        import torch
        sys.path.insert(0, MODELS)
        import common

        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, momentum=None),
                                    torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
        out = os.path.join(TMP, "cumbn.pt")
        args = argparse.Namespace(out=out, dtype="float32", seed=0, threads=None, pt2=False, no_check=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            common.export(model.train(), [torch.randn(2, 3, 8, 8)], args, "cumbn", {})
        self.assertIn("BatchNorm(momentum=None)", err.getvalue())
        with open(out[:-3] + ".meta.json") as f:
            meta = json.load(f)
        self.assertTrue(any("momentum=None" in w for w in meta["data_dependent_fixed"]), meta)

    def test_control_flow_named(self):
        def forward(self, x):
            y = self.l(x)
            if bool(y.sum() > 0):
                y = y * 2
            return y

        self.assertIn("not supported", self.refused_model(forward, "cf", script=True))

    def test_backward_in_forward_named(self):
        # a scripted gradient penalty (unseen13's wgan_gp): aten::grad in the
        # graph; it failed with autograd's advice to pass allow_unused=True
        import torch

        def forward(self, x):
            y = self.l(x)
            g = torch.autograd.grad([y.sum()], [x], create_graph=True)[0]
            assert g is not None
            return y + g.pow(2).sum()

        err = self.refused_model(forward, "gp_script", script=True)
        self.assertIn("runs a backward", err)
        self.assertIn("aten::grad", err)
        self.assertNotIn("allow_unused", err)

    def test_output_without_gradient(self):
        def forward(self, x):
            y = self.l(x)
            return y.argmax(1), y.detach()

        self.assertIn("no floating-point tensor that requires grad",
                      self.refused_model(forward, "nograd_out", script=False))

    def test_inplace_on_unsafe_chunk_refused(self):
        # Pieces of unsafe_chunk are not views to autograd: an in-place op on
        # one gave other gradients than the plain step (max abs diff 3.05, even
        # keeping everything) before it was refused.
        import torch

        def forward(self, x):
            a, b = torch.unsafe_chunk(self.l(x), 2, 1)
            a.sigmoid_()
            return a * b

        msg = self.refused_model(forward, "unsafe_chunk", script=False)
        self.assertIn("aten::unsafe_chunk", msg)
        self.assertIn("sigmoid_", msg)


if __name__ == "__main__":
    try:
        rc = unittest.main(exit=False, verbosity=2).result
        ok = rc.wasSuccessful()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(0 if ok else 1)
