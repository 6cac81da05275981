#!/usr/bin/env python3
"""End-to-end test of nn.GRUCell and nn.LSTMCell modules (src/exec/exec_rnn.cpp,
issue 21: the models users bring).  torch.jit.trace records a cell module's
call as ATen's cell code: Linear projections, `unsafe_chunk` of the gates and
in-place ops (add_, sigmoid_, tanh_, mul_) on its pieces, which autograd does
not track as views.  rkmate refused those ("in-place operation on a piece of
aten::unsafe_chunk"): a slot-attention model (GRUCell) and a
pointer-generator decoder (LSTMCell) of the tenth sweep.  The trace now
rewrites exactly that code into the out-of-place steps the RNN layers use
(`rnn_cells` in `trace --json`).  Each model here, float32 and float64, with
and without biases: keep-all, recompute-all and rockmate at its smallest
budget give the plain step's gradients bit for bit, keep-all holds no more
than the plain step, the measured peak is never above the prediction, and
two Adam steps train as the plain step.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import check_runs_equal, check_trains_as_plain, rk, schedules  # tests/exec/rk_cli.py

TMP = tempfile.mkdtemp(prefix="rkmate-cells-")
nn = torch.nn


class CellLoop(nn.Module):
    """A cell unrolled over the sequence, its input from a Linear + tanh, a head
    over the stacked states (a decoder's shape)."""

    def __init__(self, cell, bias=True, d=24, hidden=32):
        super().__init__()
        self.lstm = cell == "lstm"
        self.inp = nn.Linear(d, d)
        self.cell = (nn.LSTMCell if self.lstm else nn.GRUCell)(d, hidden, bias=bias)
        self.head = nn.Linear(hidden, 4)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.cell.hidden_size, dtype=x.dtype)
        c = torch.zeros_like(h)
        outs = []
        for t in range(x.shape[1]):
            xt = torch.tanh(self.inp(x[:, t]))
            if self.lstm:
                h, c = self.cell(xt, (h, c))
            else:
                h = self.cell(xt, h)
            outs.append(h)
        return self.head(torch.stack(outs, 1)) + (c.sum(1, keepdim=True)[:, None] if self.lstm else 0)


class TestRnnCells(unittest.TestCase):
    def check_model(self, name, model, x, steps):
        torch.manual_seed(0)
        path, inputs, rkg = (os.path.join(TMP, name + e) for e in (".pt", ".inputs.pt", ".rkg"))
        torch.jit.trace(model.train(), (x,), check_trace=False).save(path)
        torch.save([x], inputs)
        p = rk("trace", path, "--input-file", inputs, "-o", rkg, "--json", "--quiet", "--runs", "1", "--verify",
               check=0)
        st = json.loads(p.stdout)
        self.assertEqual(st["rnn_cells"], steps, st)
        self.assertTrue(st["forward_equal"], st)
        keep, *others = schedules(rkg)

        def peak(r, what):
            # never above the prediction; below it by up to the shared
            # gradients and one weight gradient: the readers of a weight in one
            # block are each counted as adding a temporary to its .grad, where
            # the first one's becomes .grad (the cell's steps)
            self.assertLessEqual(r["measured_peak"], r["predicted_peak"] + 64, (what, r))
            w_grad = 8 * 4 * 32 * (32 + 1)  # (float64 LSTM's weight_hh and bias_hh)
            self.assertGreaterEqual(r["measured_peak"], r["predicted_peak"] - 64 - r["shared_grad_bytes"] - w_grad,
                                    (what, r))

        check_runs_equal(self, name, path, rkg, inputs, [keep] + others, peak)
        check_trains_as_plain(self, path, rkg, keep)

    def test_gru_cell(self):
        for dtype in (torch.float32, torch.float64):
            torch.manual_seed(1)
            self.check_model("gru_%s" % str(dtype)[6:], CellLoop("gru").to(dtype), torch.randn(4, 6, 24, dtype=dtype), 6)

    def test_lstm_cell(self):
        for dtype in (torch.float32, torch.float64):
            torch.manual_seed(2)
            self.check_model("lstm_%s" % str(dtype)[6:], CellLoop("lstm").to(dtype), torch.randn(4, 5, 24, dtype=dtype),
                             5)

    def test_cells_without_biases(self):
        torch.manual_seed(3)
        self.check_model("gru_nb", CellLoop("gru", bias=False), torch.randn(4, 4, 24), 4)
        torch.manual_seed(4)
        self.check_model("lstm_nb", CellLoop("lstm", bias=False), torch.randn(4, 4, 24), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
