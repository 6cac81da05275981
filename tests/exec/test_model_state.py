#!/usr/bin/env python3
"""End-to-end tests of issue 21 on the module's state across steps and on
gradients that never arrive (defects found by tools/models/unseen5.py):

- a value computed from a parameter's `.detach()` (a quantisation scale,
  `w.detach().abs().amax(...)`) depends on no input: the analysis run made
  it a static value once, so after the first optimizer step every schedule
  used the first step's value (training differed from the second step on);
- (and a module applied twice, whose second num_batches_tracked += 1
  reads the buffer through a tuple the traced call returns: that write
  must stay once per call);
- a buffer written in place by the forward (a hand spectral norm's
  `u.copy_(u_new)`, one power iteration per step): the step rewrote it with
  the analysis run's value every step, and `run --check` let the plain step
  advance it before the schedule ran (every schedule "differed");
- a router Linear read only through `topk`'s indices (a mixture of depths):
  plain autograd gives it no gradient (None), the executor gave it zeros,
  which AdamW's weight decay moves;
- two equal blocks (one class) whose inputs have equal sizes but another
  layout (a transposed patch embedding, then a `scatter_add`'s contiguous
  output): the class measured on the first said the router's backward does
  not read the input; run on the second, the executor freed the input before
  that backward read it (libtorch: "its data is not allocated yet");
- a random tensor of a constant shape (`torch.rand(32) > 0.5`, noise of a
  fixed size: no input read) was a static value the analysis run drew once:
  every step reused that draw, where the plain forward draws again;
- a random op whose result nothing reads (a no-grad KV-cache pass's last
  attention with dropout) was left out of the chain, but the plain step
  draws for it: every later dropout of a step differed;
- `rkmate train` drew integer inputs as 0-9 (a token type past a 2-row
  embedding: every step failed) and printed a NaN loss as `nan` (no JSON).

Each runs `rkmate run --check` (gradients equal bit for bit) and compares
parameter and buffer hashes of `rkmate train` with the plain training.

Run by tests/exec/run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import tempfile
import unittest

import torch

from rk_cli import rk

TMP = tempfile.mkdtemp(prefix="rkmate-state-")
nn = torch.nn
F = nn.functional


class DetachedScale(nn.Module):
    """A weight divided by a scale computed from its detach (fake quantisation's)."""

    def __init__(self, detach_first=True):
        super().__init__()
        self.detach_first = detach_first
        self.lin, self.out = nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        w = self.lin.weight
        scale = w.detach().abs().amax(1, keepdim=True) if self.detach_first else w.abs().amax(1, keepdim=True).detach()
        return self.out(torch.tanh(F.linear(x, w / scale, self.lin.bias)))


class SpectralLinear(nn.Linear):
    """nn.utils.spectral_norm by hand: one power iteration per forward, u written in place."""

    def __init__(self, i, o):
        super().__init__(i, o)
        self.register_buffer("u", F.normalize(torch.randn(o), dim=0))

    def forward(self, x):
        wd = self.weight.detach()
        v = F.normalize(torch.mv(wd.t(), self.u), dim=0)
        u = F.normalize(torch.mv(wd, v), dim=0)
        self.u.copy_(u)
        return F.linear(x, self.weight / torch.dot(u, torch.mv(self.weight, v)), self.bias)


class Spectral(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(2)])
        self.sn = SpectralLinear(32, 32)
        self.b = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(2)])

    def forward(self, x):
        return self.b(torch.tanh(self.sn(self.a(x))))


class DeadRouter(nn.Module):
    """Mixture of depths without the gate: each block's router scores the
    tokens, topk keeps the indices only, the chosen tokens go through a
    Linear and are added back by scatter_add."""

    def __init__(self, d=48, k=18, blocks=2):
        super().__init__()
        self.k = k
        self.inp = nn.Linear(12, d)
        self.r = nn.ModuleList(nn.Linear(d, 1) for _ in range(blocks))
        self.b = nn.ModuleList(nn.Linear(d, d) for _ in range(blocks))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.inp(x)
        d = x.shape[-1]
        for r, blk in zip(self.r, self.b):
            _, idx = r(x).squeeze(-1).topk(self.k, dim=1)
            ie = idx.unsqueeze(-1).expand(-1, -1, d)
            x = x.scatter_add(1, ie, blk(x.gather(1, ie)))
        return self.head(x.mean(1))


class GatedRouterTransposed(nn.Module):
    """Two equal gated-router blocks; the first reads a transposed patch
    embedding (plus a position parameter), the second a scatter_add's output."""

    def __init__(self, d=8, n=16, blocks=2):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 2, 2)
        self.pos = nn.Parameter(torch.zeros(1, n, d))
        self.r = nn.ModuleList(nn.Linear(d, 1) for _ in range(blocks))
        self.b = nn.ModuleList(nn.Linear(d, d) for _ in range(blocks))
        self.register_buffer("idx", torch.tensor([[1, 3, 5, 7], [0, 2, 4, 6]]))

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2) + self.pos
        d = x.shape[-1]
        ie = self.idx.unsqueeze(-1).expand(-1, -1, d)
        for r, blk in zip(self.r, self.b):
            w = r(x).squeeze(-1).gather(1, self.idx)
            x = x.scatter_add(1, ie, blk(x.gather(1, ie)) * torch.sigmoid(w).unsqueeze(-1))
        return F.relu(x)


class SharedNorm(nn.Module):
    """One BatchNorm1d applied to two views (VICReg's projector and its
    batch-normalised embeddings): its num_batches_tracked += 1 twice a step,
    the second through a tuple the traced submodule call returns."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 8))
        self.bn = nn.BatchNorm1d(8, affine=False)

    def forward(self, x):
        z1, z2 = self.proj(x), self.proj(torch.flip(x, (1,)))
        return self.bn(z1).T @ self.bn(z2)


class FixedShapeNoise(nn.Module):
    """Random tensors of constant shapes, no input read: `torch.randn(4, 32)`
    noise added to an activation, a `torch.rand(32) > 0.5` channel mask, a
    `torch.empty(16).bernoulli_(0.7)` one (a factory filled in place), and
    dropout between (its draws interleaved with theirs)."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = F.dropout(torch.relu(self.l1(x) + torch.randn(4, 32)), 0.2, True)
        return self.l2(h * (torch.rand(32) > 0.5).float()) * torch.empty(16).bernoulli_(0.7)


class DeadDropoutBranch(nn.Module):
    """A no-grad pass whose last attention (dropout_p > 0) nothing reads (a
    KV-cache prompt pass: only its keys are used), then dropout: TorchScript
    keeps the dead attention because it draws."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 48), nn.Linear(16, 16)

    def forward(self, x):
        with torch.no_grad():
            q, k, v = self.a(x).chunk(3, -1)
            unused = self.b(F.scaled_dot_product_attention(q, k, v, dropout_p=0.1))  # noqa: F841
        h = F.dropout(self.b(x), 0.2, True) + k
        return self.b(torch.relu(h))


class TokenTypes(nn.Module):
    """Token ids, a 2-row token-type embedding and a bool padding mask: integer
    inputs whose ranges random values break."""

    def __init__(self):
        super().__init__()
        self.tok, self.typ = nn.Embedding(50, 16), nn.Embedding(2, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, ids, types, mask):
        h = (self.tok(ids) + self.typ(types)).masked_fill(~mask.unsqueeze(-1), 0.0)
        return self.out(torch.tanh(h))


class NanLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(16, 16)

    def forward(self, x):
        return torch.log(-torch.relu(self.l(x)) - 1.0)  # NaN everywhere


class TestModelState(unittest.TestCase):
    def traced(self, name, model, x):
        torch.manual_seed(0)
        path, inputs, rkg = (os.path.join(TMP, name + e) for e in (".pt", ".inputs.pt", ".rkg"))
        xs = x if isinstance(x, tuple) else (x,)
        torch.jit.trace(model.train(), xs, check_trace=False).save(path)
        torch.save(list(xs), inputs)
        rk("trace", path, "--input-file", inputs, "-o", rkg, "--quiet", "--runs", "1", check=0)
        out = []
        for algo in ("none", "recompute-all"):
            rks = f"{rkg}.{algo}.rks"
            rk("solve", rkg, "--budget", str(10**12), "--algo", algo, "-o", rks, "--quiet", check=0)
            out.append(rks)
        return path, inputs, rkg, out

    def check_run(self, path, inputs, rkg, rks):
        p = rk("run", path, rks, "--chain", rkg, "--input-file", inputs, "--check", "--json", "--iters", "2", check=0)
        r = json.loads(p.stdout)
        self.assertTrue(r["grads_equal"] and r["output_equal"], (rks, r))
        self.assertEqual(r["grads_differing"], 0, r)
        self.assertLessEqual(r["measured_peak"], r["predicted_peak"] + 8, r)

    def check_trains(self, path, rkg, schedules, optimizer, steps=3):
        out = {}
        for what in [["--plain"]] + [[s] for s in schedules]:
            p = rk("train", path, *what, "--chain", rkg, "--json", "--quiet", "--steps", str(steps), "--optimizer",
                   optimizer, "--lr", "0.5" if optimizer == "sgd" else "0.01", check=0)
            out[what[0]] = json.loads(p.stdout.splitlines()[-1])
        for s in schedules:
            for key in ("params_hash", "buffers_hash"):
                self.assertEqual(out["--plain"][key], out[s][key], (s, key, out["--plain"], out[s]))

    def test_detached_parameter_value_trains_as_plain(self):
        for first in (True, False):
            path, inputs, rkg, rks = self.traced("scale%d" % first, DetachedScale(first), torch.randn(8, 16))
            for s in rks:
                self.check_run(path, inputs, rkg, s)
            self.check_trains(path, rkg, rks, "sgd")

    def test_buffer_written_by_the_forward(self):
        path, inputs, rkg, rks = self.traced("spectral", Spectral(), torch.randn(16, 32))
        for s in rks:
            self.check_run(path, inputs, rkg, s)
        self.check_trains(path, rkg, rks, "sgd", steps=2)

    def test_module_applied_twice_counts_twice(self):
        path, inputs, rkg, rks = self.traced("shared_norm", SharedNorm(), torch.randn(16, 16))
        for s in rks:
            self.check_run(path, inputs, rkg, s)
        self.check_trains(path, rkg, rks, "adam", steps=2)

    def test_no_gradient_through_indices(self):
        # AdamW's weight decay moves a parameter whose gradient is zeros, not one without
        path, inputs, rkg, rks = self.traced("router", DeadRouter(), torch.randn(4, 36, 12))
        for s in rks:
            self.check_run(path, inputs, rkg, s)
        self.check_trains(path, rkg, rks, "adamw")
        with open(rkg) as f:
            names = [c["name"] for cl in json.load(f)["classes"] for c in cl["compute"]]
        self.assertFalse(any(n.startswith("b") and n.endswith("_topk") for n in names), names)

    def test_random_values_of_no_input_drawn_every_step(self):
        # a random node that reads no input was a static value drawn once by
        # the analysis run: every step reused it (training differed from the
        # second step on, the first step's gradients equal)
        path, inputs, rkg, rks = self.traced("noise", FixedShapeNoise(), torch.randn(4, 16))
        for s in rks:
            self.check_run(path, inputs, rkg, s)
        self.check_trains(path, rkg, rks, "sgd")

    def test_dead_random_op_still_draws(self):
        # the dead attention's dropout was left out of the chain: the plain
        # step drew for it, a step did not, so every later dropout differed
        path, inputs, rkg, rks = self.traced("dead_dropout", DeadDropoutBranch(), torch.randn(4, 8, 16))
        for s in rks:
            self.check_run(path, inputs, rkg, s)
        self.check_trains(path, rkg, rks, "adam")

    def test_train_keeps_integer_inputs(self):
        # train drew integer inputs as 0-9: a token type of 9 indexed a 2-row
        # embedding (every step failed); now the example's ids, types and mask
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, 50, (4, 12), generator=g)
        types = (torch.arange(12) >= 6).long().expand(4, 12).contiguous()
        mask = torch.ones(4, 12, dtype=torch.bool)
        mask[:, 10:] = False
        path, inputs, rkg, rks = self.traced("types", TokenTypes(), (ids, types, mask))
        self.check_trains(path, rkg, rks, "adam", steps=2)

    def test_train_json_without_nan(self):
        # a NaN loss was printed as `nan`, which is no JSON: each line parses, the loss is null
        path, inputs, rkg, rks = self.traced("nan", NanLoss(), torch.randn(4, 16))
        p = rk("train", path, rks[0], "--chain", rkg, "--json", "--quiet", "--steps", "2", check=0)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        self.assertIsNone(lines[0]["loss"], lines[0])
        self.assertIsNone(lines[-1]["last_loss"], lines[-1])

    def test_embedding_max_norm_refused_clearly(self):
        # the renorm writes the weight with rows the input picks: refused with what to do, no chain written
        torch.manual_seed(0)
        path, inputs, rkg = (os.path.join(TMP, "maxnorm" + e) for e in (".pt", ".inputs.pt", ".rkg"))
        m = nn.Sequential(nn.Embedding(20, 8, max_norm=1.0), nn.Linear(8, 2)).train()
        ids = torch.randint(0, 20, (4, 6))
        torch.jit.trace(m, (ids,), check_trace=False).save(path)
        torch.save([ids], inputs)
        p = rk("trace", path, "--input-file", inputs, "-o", rkg, check=2)
        self.assertIn("max_norm", p.stderr)
        self.assertIn("embedding_renorm_", p.stderr)
        self.assertFalse(os.path.exists(rkg))

    def test_where_of_a_mask_refused_clearly(self):
        # torch.where(mask) (HF Mixtral's expert dispatch): index lists sized by the data
        class Dispatch(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = nn.Linear(8, 8)

            def forward(self, x):
                h = self.l(x)
                i, j = torch.where(h > 0)
                return h[i, j].sum().reshape(1) + h.sum()

        torch.manual_seed(0)
        path, inputs, rkg = (os.path.join(TMP, "wheremask" + e) for e in (".pt", ".inputs.pt", ".rkg"))
        x = torch.randn(4, 8)
        torch.jit.trace(Dispatch(), (x,), check_trace=False).save(path)
        torch.save([x], inputs)
        p = rk("trace", path, "--input-file", inputs, "-o", rkg, check=2)
        self.assertIn("aten::where", p.stderr)
        self.assertIn("sizes depend on the data", p.stderr)
        self.assertFalse(os.path.exists(rkg))

    def test_equal_blocks_inputs_of_another_layout(self):
        path, inputs, rkg, rks = self.traced("layout", GatedRouterTransposed(), torch.randn(2, 3, 8, 8))
        for s in rks:
            self.check_run(path, inputs, rkg, s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
