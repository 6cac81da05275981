#!/usr/bin/env python3
"""End-to-end test of side inputs (docs/exec.md, "Blocks"): a model input read
after the first block — a label read only by the loss, a conditioning vector
added in every layer, a batch size read from an input's shape — does not keep
the chain one block.  The chain is cut at the 1-separators the other edges
allow, later blocks read the input outside their graph, block 0 holds it until
its last node's backward (after every later block's), and every schedule —
keep-all, recompute-all, rockmate at its smallest budget, rotor at half the
plain peak — runs with output and gradients equal to the plain step bit for bit
and its measured peak at its prediction; a schedule trains as the plain step.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import check_runs_equal, check_trains_as_plain, rk, schedules  # tests/exec/rk_cli.py

TMP = tempfile.mkdtemp(prefix="rkmate-side-")
nn = torch.nn


class LabelledMlp(nn.Module):
    """Eight Linear + ReLU layers and a head; the loss per sample reads the labels."""

    def __init__(self, d=128, layers=8):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
        self.head = nn.Linear(d, 10)

    def forward(self, x, y):
        for lin in self.layers:
            x = torch.relu(lin(x))
        return nn.functional.cross_entropy(self.head(x), y, reduction="none")


class Conditioned(nn.Module):
    """A timestep-like conditioning vector c added to every layer's input (read by
    every block, so recomputing any block reads it again); the output reshaped
    by the batch size read from c's shape."""

    def __init__(self, d=128, layers=6):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])

    def forward(self, x, c):
        for lin, norm in zip(self.layers, self.norms):
            x = x + torch.tanh(lin(norm(x + c)))
        return x.reshape(c.shape[0], -1) * 2


class TestSideInputs(unittest.TestCase):
    def trace(self, name, model, xs):
        torch.manual_seed(0)
        path, inputs, rkg = (os.path.join(TMP, name + e) for e in (".pt", ".inputs.pt", ".rkg"))
        torch.jit.trace(model.train(), xs, check_trace=False).save(path)
        torch.save(list(xs), inputs)
        p = rk("trace", path, "--input-file", inputs, "-o", rkg, "--verify", "--json", "--quiet", "--runs", "1",
               check=0)
        self.assertTrue(json.loads(p.stdout)["forward_equal"], p.stdout)
        with open(rkg) as f:
            chain = json.load(f)
        return path, inputs, rkg, chain

    def check(self, name, model, xs, min_blocks):
        path, inputs, rkg, chain = self.trace(name, model, xs)
        # one block before side inputs: the late read was an edge over every node
        self.assertGreaterEqual(len(chain["blocks"]), min_blocks, [b["name"] for b in chain["blocks"]])
        runs = schedules(rkg)
        rotor = os.path.join(TMP, name + ".rotor.rks")
        p = rk("solve", rkg, "--budget", "50%", "--algo", "rotor", "-o", rotor, "--json", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)  # (rotor fits nothing on a one-block chain)
        check_runs_equal(self, name, path, rkg, inputs, runs + [rotor])
        check_trains_as_plain(self, path, rkg, runs[2])
        return chain

    def test_label_read_by_the_loss_only(self):
        torch.manual_seed(0)
        x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))
        self.check("labels", LabelledMlp(), (x, y), 8)

    def test_input_read_by_every_block(self):
        torch.manual_seed(0)
        x, c = torch.randn(16, 128), torch.randn(16, 128)
        chain = self.check("cond", Conditioned(), (x, c), 6)
        # the layers after the first are one class: the side input named the same in each
        self.assertLess(len(chain["classes"]), len(chain["blocks"]) - 2, [b["class"] for b in chain["blocks"]])


if __name__ == "__main__":
    unittest.main()
