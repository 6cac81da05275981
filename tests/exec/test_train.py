#!/usr/bin/env python3
"""End-to-end tests of `rkmate train` (training sessions of src/exec/rk_exec.h):
many steps with an optimizer through a schedule give the same losses, final
parameters and buffers (BatchNorm running statistics) bit for bit as plain
training (`rkmate train --plain`) from the same seed, for rockmate, rotor and
sqrt schedules, on a small ResNet-like model with BatchNorm and dropout and
on a tiny GPT2 with dropout and tied weights; the plain SGD run equals a
Python torch.optim loop on the same TorchScript module; the measured peak
stays within the budget (+5 %) and does not grow over the steps; --data .npy
streams, bad --data (exit 2 with a message), --save (atomic, loads in
PyTorch, no partial file when killed); models returning a tuple, a list or a
dict train as plain training does, the loss over every output.  Run by run_exec_tests.sh with the
Python whose torch rkmate was built against."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch

from bn_net import BnDropNet  # tests/exec/bn_net.py
from rk_cli import RKMATE, rk  # tests/exec/rk_cli.py

ROOT = os.environ.get("RKMATE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tools", "models")
TMP = tempfile.mkdtemp(prefix="rkmate-train-")
SLACK = 0.05
STEPS = "10"


def train(model, sched, rkg, *extra):
    """(per-step JSON lines, summary) of `rkmate train --json`."""
    target = ["--plain"] if sched is None else [sched]
    p = rk("train", model, *target, "--chain", rkg, "--json", "--steps", STEPS, *extra, check=0)
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    return lines[:-1], lines[-1]


def export_bn():
    path = os.path.join(TMP, "bn.pt")
    torch.manual_seed(0)
    m = BnDropNet().double().train()
    torch.jit.trace(m, torch.randn(4, 3, 16, 16, dtype=torch.float64), check_trace=False).save(path)
    return path, ["--input", "4x3x16x16:float64"]


def export_gpt2():
    path = os.path.join(TMP, "gpt2.pt")
    p = subprocess.run([sys.executable, os.path.join(MODELS, "gpt2.py"), "--out", path, "--no-check",
                        "--layers", "3", "--width", "32", "--heads", "2", "--seq", "16", "--batch", "2",
                        "--vocab", "50", "--dtype", "float64", "--tie-weights"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return path, ["--input", "2x16:int64"]


def export_zoo(name):
    """A small tools/models/zoo.py model (float64, batch 4) and its --input-file."""
    path = os.path.join(TMP, name + ".pt")
    p = subprocess.run([sys.executable, os.path.join(MODELS, "zoo.py"), "--model", name, "--out", path,
                        "--dtype", "float64", "--no-check", "--batch", "4"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return path, ["--input-file", path[:-3] + ".inputs.pt"]


def prepare(model, inputs):
    """The chain, and rockmate / rotor schedules at 50 % of the keep-all peak
    plus sqrt's (at its own smallest budget when 50 % is too small)."""
    rkg = model[:-3] + ".rkg"
    rk("trace", model, *inputs, "-o", rkg, "--quiet", "--runs", "1", check=0)
    keep = model[:-3] + ".keep.rks"
    rk("baseline", rkg, "--kind", "keep-all", "-o", keep, check=0)
    full = json.loads(rk("simulate", rkg, keep, "--json", check=0).stdout)["peak"]
    budget = full // 2
    out = {}
    for algo in ("rockmate", "rotor", "sqrt"):
        rks = f"{model[:-3]}.{algo}.rks"
        extra = ["--builtin-options"] if algo == "rockmate" else []
        p = rk("solve", rkg, "--budget", str(budget), "--algo", algo, "-o", rks, "--quiet", *extra)
        if p.returncode == 3 and algo == "sqrt":
            p = rk("solve", rkg, "--budget", str(full), "--algo", algo, "-o", rks, "--quiet", check=0)
            out[algo] = (rks, full)
            continue
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        out[algo] = (rks, budget)
    return rkg, out


class TrainBase(unittest.TestCase):
    def check_equal_to_plain(self, model, rkg, scheds, *opt):
        ref_steps, ref = train(model, None, rkg, *opt)
        for algo, (rks, budget) in scheds.items():
            steps, summ = train(model, rks, rkg, *opt)
            self.assertEqual([s["loss"] for s in steps], [s["loss"] for s in ref_steps], algo)
            self.assertEqual(summ["params_hash"], ref["params_hash"], algo)
            self.assertEqual(summ["buffers_hash"], ref["buffers_hash"], algo)
            self.assertEqual(summ["nondeterministic_kernels"], "", algo)  # CPU: none (exec_cuda: named)
            peaks = [s["peak"] for s in steps]
            for pk in peaks:
                self.assertLessEqual(pk, budget * (1 + SLACK), f"{algo}: peak {pk} over budget {budget}")
            self.assertEqual(max(peaks), peaks[0], f"{algo}: the peak grows over the steps: {peaks}")
            self.assertEqual(len({s["allocated"] for s in steps[1:]}), 1, f"{algo}: memory grows: {steps}")
        self.assertNotEqual(ref_steps[0]["loss"], ref_steps[-1]["loss"])  # it trains
        return ref


class TestBnDropout(TrainBase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.inputs = export_bn()
        cls.rkg, cls.scheds = prepare(cls.model, cls.inputs)

    def test_adam(self):
        ref = self.check_equal_to_plain(self.model, self.rkg, self.scheds, "--optimizer", "adam", "--lr", "1e-2")
        # BatchNorm's running statistics moved (the buffers hash is not the file's).
        _, zero = train(self.model, None, self.rkg, "--optimizer", "sgd", "--lr", "1e-300", "--steps", "1")
        self.assertNotEqual(zero["buffers_hash"], ref["buffers_hash"])

    def test_sgd_momentum_equals_python_loop(self):
        """--plain is plain training: a Python torch.optim.SGD loop on the same
        module, same data, same seed gives the same parameters and statistics."""
        x = np.random.default_rng(1).standard_normal((3, 4, 3, 16, 16))
        data = os.path.join(TMP, "bn_x.npy")
        np.save(data, x)
        out = os.path.join(TMP, "bn_sgd.pt")
        opt = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "1e-3",
               "--data", data, "--loss", "sum"]
        self.check_equal_to_plain(self.model, self.rkg, {"rotor": self.scheds["rotor"]}, *opt)
        train(self.model, self.scheds["rockmate"][0], self.rkg, *opt, "--save", out)
        m = torch.jit.load(self.model)
        torch.manual_seed(0)
        sgd = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
        for i in range(int(STEPS)):
            sgd.zero_grad()  # set_to_none=True, as the executor does
            m(torch.from_numpy(x[i % 3])).sum().backward()
            sgd.step()
        saved = torch.jit.load(out)
        for (n, a), (_, b) in zip(m.state_dict().items(), saved.state_dict().items()):
            self.assertTrue(torch.equal(a, b), n)
        self.assertEqual([f for f in os.listdir(TMP) if ".tmp" in f], [])


class TestGPT2(TrainBase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.inputs = export_gpt2()
        cls.rkg, cls.scheds = prepare(cls.model, cls.inputs)

    def test_adamw(self):
        self.check_equal_to_plain(self.model, self.rkg, self.scheds, "--optimizer", "adamw", "--lr", "1e-2",
                                  "--weight-decay", "0.1")

    def test_data_stream(self):
        tok = np.random.default_rng(2).integers(0, 50, size=(5, 2, 16), dtype=np.int64)
        data = os.path.join(TMP, "tok.npy")
        np.save(data, tok)
        self.check_equal_to_plain(self.model, self.rkg, {"rockmate": self.scheds["rockmate"]}, "--data", data)
        _, a = train(self.model, None, self.rkg, "--data", data)
        _, b = train(self.model, None, self.rkg, "--data", "random")
        self.assertNotEqual(a["params_hash"], b["params_hash"])  # the data is used

    def test_bad_data(self):
        rks = self.scheds["rockmate"][0]
        cases = {
            "float.npy": (np.zeros((3, 2, 16)), "dtype"),
            "shape.npy": (np.zeros((3, 2, 15), dtype=np.int64), "shape"),
            "noitem.npy": (np.zeros((0, 2, 16), dtype=np.int64), "no item"),
        }
        for name, (arr, word) in cases.items():
            path = os.path.join(TMP, name)
            np.save(path, arr)
            p = rk("train", self.model, rks, "--chain", self.rkg, "--data", path, "--steps", "1")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(path, p.stderr)
            self.assertIn(word, p.stderr)
        trunc = os.path.join(TMP, "trunc.npy")
        np.save(trunc, np.zeros((3, 2, 16), dtype=np.int64))
        with open(trunc, "r+b") as f:
            f.truncate(os.path.getsize(trunc) - 8)
        junk = os.path.join(TMP, "junk.npy")
        with open(junk, "w") as f:
            f.write("not numpy\n")
        for path, word in ((trunc, "truncated"), (junk, "not a .npy"), (os.path.join(TMP, "none.npy"), "cannot open")):
            p = rk("train", self.model, rks, "--chain", self.rkg, "--data", path, "--steps", "1")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)
        for args in (["--optimizer", "lbfgs"], ["--lr", "0"], ["--steps", "0"], ["--data", trunc, "--data", "random"]):
            p = rk("train", self.model, rks, "--chain", self.rkg, *args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn("rkmate train:", p.stderr)

    def test_killed_run_leaves_no_save(self):
        out = os.path.join(TMP, "killed.pt")
        proc = subprocess.Popen([RKMATE, "train", self.model, self.scheds["rotor"][0], "--chain", self.rkg,
                                 "--steps", "100000", "--save", out, "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        proc.stdout.readline()  # one step done
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(TMP) if f.startswith("killed")], [])
        p = rk("train", self.model, "--plain", "--chain", self.rkg, "--save", self.model)
        self.assertEqual(p.returncode, 2)  # never over an input


class TestMultiOutput(TrainBase):
    """tools/models/zoo.py's MultiOut returning (y, topk values), [y, topk,
    max values] or {'y', 'top', 'arg' (int64 argmax)}: `train --plain` joins
    the outputs as the traced chain does (cat of the flattened floating-point
    outputs, docs/exec.md), so rockmate (at 90 %: its smallest budget is
    85.5 %) and recompute-all schedules train them to the same losses,
    parameters and buffers bit for bit."""

    def check_model(self, name):
        model, inputs = export_zoo(name)
        rkg = model[:-3] + ".rkg"
        rk("trace", model, *inputs, "-o", rkg, "--quiet", "--runs", "1", check=0)
        scheds = {}
        for algo, budget in (("rockmate", "90%"), ("recompute-all", str(1 << 40))):
            rks = f"{model[:-3]}.{algo}.rks"
            extra = ["--builtin-options"] if algo == "rockmate" else []
            rk("solve", rkg, "--budget", budget, "--algo", algo, "-o", rks, "--quiet", *extra, check=0)
            peak = json.loads(rk("simulate", rkg, rks, "--json", check=0).stdout)["peak"]
            scheds[algo] = (rks, peak)
        ref = self.check_equal_to_plain(model, rkg, scheds, "--optimizer", "adam", "--lr", "1e-2")
        return model, rkg, ref

    def test_tuple_list_dict(self):
        refs = {n: self.check_model(n) for n in ("tuple_out", "list_out", "dict_out")}
        # the dict's int64 argmax is left out of the loss: it trains as the tuple does
        self.assertEqual(refs["dict_out"][2]["params_hash"], refs["tuple_out"][2]["params_hash"])
        self.assertNotEqual(refs["list_out"][2]["params_hash"], refs["tuple_out"][2]["params_hash"])
        # the plain loss is the sum over every floating-point output, as in PyTorch
        model, rkg, _ = refs["dict_out"]
        x = np.random.default_rng(3).standard_normal((1, 4, 32))
        data = os.path.join(TMP, "multi_x.npy")
        np.save(data, x)
        steps, _ = train(model, None, rkg, "--data", data, "--steps", "1", "--loss", "sum")
        out = torch.jit.load(model)(torch.from_numpy(x[0]))
        expect = torch.cat([out["y"].flatten(), out["top"].flatten()]).sum().item()
        self.assertEqual(steps[0]["loss"], expect)


if __name__ == "__main__":
    unittest.main(verbosity=2)
