#!/usr/bin/env python3
"""Loading a model needs little memory (issue 18: a model whose training step
does not fit must still load).  rk-GB's analysis run, which every command
makes of the whole model on its example inputs, keeps no autograd graph and,
for `run` / `train`, no value after its last use: `run --json` reports what it
held at its peak (`analysis_peak`).  A 6-layer GPT2: that peak stays under a
quarter of the plain step's activation peak (the old analysis run held the
whole forward and its autograd graph: 1.6 times the plain peak), the schedule
still runs with gradients equal bit for bit within its predicted peak, and the trace's chain is the same
as a trace that keeps the block outputs (trace --verify: forward equal)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rk_cli import rk  # noqa: E402

ROOT = os.environ.get("RKMATE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))


class TestLoadMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rkmate-load-")
        cls.model = os.path.join(cls.tmp, "gpt2.pt")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "models", "gpt2.py"), "--out", cls.model,
                        "--layers", "6", "--width", "64", "--heads", "2", "--seq", "64", "--batch", "4",
                        "--vocab", "100", "--no-check"], check=True, capture_output=True)
        cls.inputs = ["--input-file", cls.model[:-3] + ".inputs.pt"]
        cls.chain = os.path.join(cls.tmp, "gpt2.rkg")
        cls.trace = json.loads(rk("trace", cls.model, *cls.inputs, "-o", cls.chain, "--verify", "--json", "--quiet",
                                  "--runs", "1", check=0).stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_trace_reports_it(self):
        self.assertTrue(self.trace["forward_equal"])
        self.assertGreater(self.trace["analysis_peak"], 0)

    def test_run_loads_in_little_memory(self):
        rks = os.path.join(self.tmp, "floor.rks")
        budget = str(self.trace["plain_peak"] // 2)
        rk("solve", self.chain, "--budget", budget, "-o", rks, "--quiet", check=0)
        r = json.loads(rk("run", self.model, rks, "--chain", self.chain, *self.inputs, "--check", "--json",
                          "--iters", "1", check=0).stdout)
        self.assertTrue(r["grads_equal"] and r["output_equal"], r)
        self.assertLessEqual(r["measured_peak"], r["predicted_peak"])  # (exactness: the other exec tests)
        self.assertGreater(r["analysis_peak"], 0)
        self.assertLess(r["analysis_peak"], r["baseline_peak"] / 4, r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
