#!/usr/bin/env python3
"""Tests of the rkmate Python package (python/rkmate, built into
BUILD/python): rkmate.plan's predictions and schedule; rkmate.optimize's
module trained in an ordinary loop with torch.optim gives the same losses,
final parameters and BatchNorm statistics bit for bit as the plain module
trained from the same seed (a BN + dropout conv net, a tiny GPT2 with
dropout and tied weights; Adam and SGD; rotor and rockmate at 50 %); the
README's example runs as written.  Run by run_exec_tests.sh with the Python
whose torch rkmate was built against."""
import copy
import os
import re
import subprocess
import sys
import unittest

import torch

from bn_net import BnDropNet  # tests/exec/bn_net.py

ROOT = os.environ.get("RKMATE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("RKMATE_BUILD_ROOT", os.path.join(ROOT, "build"))
PKG = os.path.join(BUILD, "python")
sys.path.insert(0, PKG)
sys.path.insert(0, os.path.join(ROOT, "tools", "models"))
import rkmate  # noqa: E402

STEPS = 10


def train(m, batches, make_opt):
    opt = make_opt(m.parameters())
    torch.manual_seed(1)
    losses = []
    for x in batches:
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


class Base(unittest.TestCase):
    def check_same_training(self, model, batches, make_opt, algo):
        ref = copy.deepcopy(model)
        ref_losses = train(ref, batches, make_opt)
        m = rkmate.optimize(model, batches[0], budget="50%", algo=algo)
        self.assertIsInstance(m, torch.nn.Module)
        self.assertLessEqual(m.plan.predicted_peak, m.plan.budget)
        losses = train(m, batches, make_opt)
        self.assertEqual(losses, ref_losses, algo)
        self.assertNotEqual(losses[0], losses[-1])
        for (n, a), (_, b) in zip(ref.state_dict().items(), model.state_dict().items()):
            self.assertTrue(torch.equal(a, b), f"{algo}: {n} differs")
        return m


class TestBnDropout(Base):
    def test_adam_rotor_and_rockmate(self):
        g = torch.Generator().manual_seed(3)
        batches = [torch.randn(4, 3, 16, 16, dtype=torch.float64, generator=g) for _ in range(STEPS)]
        for algo in ("rotor", "rockmate"):
            torch.manual_seed(0)
            model = BnDropNet().double()
            self.check_same_training(model, batches, lambda ps: torch.optim.Adam(ps, lr=1e-2), algo)

    def test_plan(self):
        torch.manual_seed(0)
        model = BnDropNet()
        x = torch.randn(4, 3, 16, 16)
        before = copy.deepcopy(model.state_dict())
        rng = torch.get_rng_state()
        p = rkmate.plan(model, x, budget="50%", algo="rotor")
        self.assertTrue(torch.equal(rng, torch.get_rng_state()))
        for n, t in model.state_dict().items():
            self.assertTrue(torch.equal(t, before[n]), n)  # the trace's forward left no trace
        self.assertEqual(p.budget, p.keep_all_peak // 2)
        self.assertLessEqual(p.predicted_peak, p.budget)
        self.assertGreater(p.predicted_time, p.baseline_time)  # it recomputes
        self.assertEqual(len(p.schedule["ops"]), p.n_ops)
        self.assertIn("rotor", repr(p))
        with self.assertRaisesRegex(RuntimeError, "rkmate: solving"):
            rkmate.plan(model, x, budget="1000B", algo="rotor")

    def test_wrong_input_shape(self):
        torch.manual_seed(0)
        m = rkmate.optimize(BnDropNet(), torch.randn(4, 3, 16, 16), budget="50%", algo="rotor")
        with self.assertRaisesRegex(RuntimeError, "input 0: expected"):
            m(torch.randn(2, 3, 16, 16)).sum().backward()


class TestGPT2(Base):
    def test_sgd(self):
        import gpt2
        g = torch.Generator().manual_seed(4)
        batches = [torch.randint(0, 50, (2, 16), generator=g) for _ in range(STEPS)]
        torch.manual_seed(0)
        model = gpt2.GPT2(vocab=50, seq=16, width=32, heads=2, layers=3, dropout=0.1, tie_weights=True).double()
        self.check_same_training(model, batches,
                                 lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3), "rotor")


class TestReadme(unittest.TestCase):
    def test_example_runs_as_written(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            text = f.read()
        code = re.search(r"<!-- python example -->\s*```python\n(.*?)```", text, re.S).group(1)
        env = dict(os.environ, PYTHONPATH=PKG)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("rkmate.Plan(", p.stdout)


class TestCpuMemory(unittest.TestCase):
    """The tracer's counting CPU allocator through the package's operators
    (tools/bench/split_bwd.py measures with it): a tensor's bytes show in
    the current count while it lives and in the peak after it is freed."""

    def test_counts(self):
        rkmate._load()  # the operator library
        ops = torch.ops.rkmate
        ops.count_cpu_memory()
        ops.cpu_reset_peak()
        before = ops.cpu_bytes(False)
        t = torch.empty(1 << 20, dtype=torch.uint8)
        self.assertEqual(ops.cpu_bytes(False) - before, 1 << 20)
        del t
        self.assertEqual(ops.cpu_bytes(False), before)
        self.assertGreaterEqual(ops.cpu_bytes(True) - before, 1 << 20)


if __name__ == "__main__":
    unittest.main(verbosity=2)
