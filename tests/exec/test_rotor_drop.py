#!/usr/bin/env python3
"""End-to-end test of rk-Rotor's early frees at block boundaries (docs/rk-rotor.md,
"The subproblem and its memory"): a block's output is freed once the next block's
backward is done even when its own backward reads it (its forward rebuilds it),
and a block whose input is freed right after its backward forgets that input
after its last real use inside the backward (the input part of a split
convolution reads only its shape).  On a residual CNN traced by `rkmate trace`,
rockmate's schedule at the smallest budget holds such forgets, and `rkmate run
--check` gives gradients and output equal to the plain step bit for bit and the
measured peak equal to the simulator's prediction.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import check_peak, rk, schedules  # tests/exec/rk_cli.py

TMP = tempfile.mkdtemp(prefix="rkmate-drop-")


class Cnn(torch.nn.Module):
    """stem conv + BN + ReLU, three conv + BN + ReLU blocks, a pooled linear head."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem, self.bn = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(3)])
        self.b = nn.ModuleList([nn.BatchNorm2d(16) for _ in range(3)])
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        for c, b in zip(self.c, self.b):
            x = torch.relu(b(c(x)))
        return self.head(x.mean((2, 3)))


def boundary_forgets(chain, sched):
    """(block inputs forgotten inside their block's backward, block outputs
    forgotten right after a later block's backward) in the schedule."""
    cls = [b["class"] for b in chain["blocks"]]
    inputs = [{i["data"] for i in c["inputs"]} for c in chain["classes"]]
    outputs = [c["output"] for c in chain["classes"]]
    in_bwd, prev, n_in, n_out = None, None, 0, 0
    for op in sched["ops"]:
        if op[0] == "mark" and op[2] == "bwd_begin":
            in_bwd = op[1]
        elif op[0] == "mark" and op[2] == "bwd_end":
            in_bwd = None
        elif op[0] == "forget":
            if op[1] == in_bwd and op[2] in inputs[cls[op[1]]]:
                n_in += 1
            if (op[2] == outputs[cls[op[1]]] and prev and prev[0] == "mark" and prev[2] == "bwd_end"
                    and prev[1] > op[1]):
                n_out += 1
        prev = op
    return n_in, n_out


class TestBoundaryFrees(unittest.TestCase):
    def test_floor_runs_exactly(self):
        torch.manual_seed(0)
        path = os.path.join(TMP, "cnn.pt")
        torch.jit.trace(Cnn().train(), (torch.randn(4, 3, 24, 24),), check_trace=False).save(path)
        inputs = ["--input", "4x3x24x24:float32"]
        rkg = os.path.join(TMP, "cnn.rkg")
        rk("trace", path, *inputs, "-o", rkg, "--quiet", "--runs", "1", check=0)
        # rockmate's plan at its smallest budget (without whole-graph Checkmate
        # beside it, whose schedule would replace the plan's where cheaper)
        rks = schedules(rkg, "--whole-graph", "0")[2]
        with open(rkg) as f:
            chain = json.load(f)
        with open(rks) as f:
            sched = json.load(f)
        n_in, n_out = boundary_forgets(chain, sched)
        self.assertGreater(n_in, 0, "no block input forgotten inside its backward")
        self.assertGreater(n_out, 0, "no block output freed after a later block's backward")
        p = rk("run", path, rks, "--chain", rkg, *inputs, "--check", "--json", "--iters", "1", check=0)
        r = json.loads(p.stdout)
        self.assertTrue(r["grads_equal"] and r["output_equal"], r)
        self.assertEqual(r["grads_differing"], 0, r)
        check_peak(self, r, 64, rks)


if __name__ == "__main__":
    unittest.main()
