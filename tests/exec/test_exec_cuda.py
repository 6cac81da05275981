#!/usr/bin/env python3
"""rkmate trace / run on a GPU (--device cuda): a small GPT2 with dropout is
traced on the device and its schedules (keep everything, recompute everything,
rotor at half the keep-everything peak) run beside the plain PyTorch step on
the device, gradients compared bit for bit.  Then three models of the zoo
exported on the CPU and traced on the GPU: an LSTM language model and an
unrolled LSTM cell (their forward creates zero states: CPU device constants in
the TorchScript graph, taken as the GPU), and a ViT (attention whose
memory-efficient backward is nondeterministic), each kept whole and at half
the plain step's peak, gradients equal.  And a model whose backward runs a
kernel without a deterministic implementation: rkmate names it.  Exit 77 (meson's "skipped") when
this torch sees no CUDA device or rkmate's libtorch part has no CUDA; the CPU
machines then only check (in test_exec.py) that --device cuda is refused with
exit 2.  Run by run_exec_tests.sh with the Python of the build's torch."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

RKMATE = os.environ.get("RKMATE", "rkmate")
ROOT = os.environ.get("RKMATE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))


def rk(*args):
    p = subprocess.run([RKMATE, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: rkmate {' '.join(args)} exited {p.returncode}\n{p.stderr}\n{p.stdout}")
    return p.stdout


def zoo_model(tmp, name):
    model = os.path.join(tmp, name + ".pt")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "models", "zoo.py"), "--model", name, "--out", model,
                    "--image", "96", "--batch", "2", "--no-check"], check=True, capture_output=True)
    inputs = ["--input-file", model[:-3] + ".inputs.pt", "--device", "cuda"]
    chain = model[:-3] + ".rkg"
    st = json.loads(rk("trace", model, *inputs, "-o", chain, "--verify", "--json", "--quiet"))
    assert st["forward_equal"], f"{name}: blocks do not reproduce the module's output on the GPU: {st}"
    for algo, budget in (("none", "1TB"), ("rockmate", "50%")):
        rks = os.path.join(tmp, f"{name}.{algo}.rks")
        p = subprocess.run([RKMATE, "solve", chain, "--budget", budget, "--algo", algo, "-o", rks, "--quiet"],
                           capture_output=True, text=True)
        if p.returncode == 3:
            print(f"ok: {name} {algo} at {budget}: no schedule fits")
            continue
        r = json.loads(rk("run", model, rks, "--chain", chain, *inputs, "--check", "--json", "--iters", "1"))
        assert r["grads_equal"] and r["output_equal"], f"{name} {algo}: gradients differ on the GPU: {r}"
        print(f"ok: {name} {algo} at {budget}: gradients equal, measured peak {r['measured_peak']}")


def nondeterministic_kernel_named(tmp):
    """A model whose backward runs a CUDA kernel without a deterministic
    implementation (adaptive average pooling that enlarges its input: the
    backward adds with atomics): rkmate run names the kernel, in --json and in
    words, instead of printing PyTorch's warning at every step."""
    import torch

    class Up(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.pool = torch.nn.AdaptiveAvgPool2d(7)
            self.fc = torch.nn.Linear(8 * 49, 10)

        def forward(self, x):
            y = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 4)  # 12x12 -> 3x3
            return self.fc(torch.flatten(self.pool(y), 1))

    model = os.path.join(tmp, "up.pt")
    torch.jit.trace(Up().eval(), torch.randn(2, 3, 12, 12)).save(model)
    inputs = ["--input", "2x3x12x12:float32", "--device", "cuda"]
    chain = os.path.join(tmp, "up.rkg")
    rk("trace", model, *inputs, "-o", chain, "--quiet")
    rks = os.path.join(tmp, "up.none.rks")
    rk("solve", chain, "--budget", "1TB", "--algo", "none", "-o", rks, "--quiet")
    # exit 1 where the gradients differ: this kernel may make them differ
    p = subprocess.run([RKMATE, "run", model, rks, "--chain", chain, *inputs, "--check", "--json", "--iters", "2"],
                       capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    r = json.loads(p.stdout)
    assert "adaptive_avg_pool2d_backward_cuda" in r["nondeterministic_kernels"].split(), r
    p = subprocess.run([RKMATE, "run", model, rks, "--chain", chain, *inputs, "--check", "--iters", "1"],
                       capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    assert "without a deterministic implementation on this device ran (adaptive_avg_pool2d_backward_cuda)" in p.stdout, p.stdout
    assert "does not have a deterministic implementation" not in p.stderr, p.stderr  # named once, not per step
    # train: named once over the steps (summary --json and one note), not a warning per call
    p = subprocess.run([RKMATE, "train", model, "--plain", "--chain", chain, *inputs, "--steps", "3", "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    summ = json.loads(p.stdout.strip().splitlines()[-1])
    assert summ["nondeterministic_kernels"].split() == ["adaptive_avg_pool2d_backward_cuda"], summ
    assert p.stderr.count("kernels without a deterministic implementation") == 1, p.stderr
    assert "does not have a deterministic implementation" not in p.stderr, p.stderr
    print(f"ok: adaptive_avg_pool2d's backward named as nondeterministic (plain step repeatable: "
          f"{r['plain_repeatable']}, gradients equal: {r['grads_equal']})")


def main():
    import torch
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="rkmate-cuda-")
    try:
        model = os.path.join(tmp, "gpt2.pt")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "models", "gpt2.py"), "--out", model,
                        "--layers", "2", "--width", "64", "--heads", "2", "--seq", "32", "--batch", "2",
                        "--vocab", "100", "--no-check"], check=True, capture_output=True)
        inputs = ["--input-file", model[:-3] + ".inputs.pt", "--device", "cuda"]
        chain = os.path.join(tmp, "gpt2.rkg")
        p = subprocess.run([RKMATE, "trace", model, *inputs, "-o", chain, "--verify", "--json", "--quiet"],
                           capture_output=True, text=True)
        if p.returncode == 2 and "has no CUDA" in p.stderr:
            print("rkmate's libtorch part was built without CUDA: skipped")
            return 77
        if p.returncode != 0:
            sys.exit(f"FAIL: trace --device cuda: {p.stderr}")
        st = json.loads(p.stdout)
        assert st["forward_equal"], f"blocks do not reproduce the module's output on the GPU: {st}"
        keep = json.loads(rk("solve", chain, "--budget", "1TB", "--algo", "none", "--json", "--quiet",
                             "-o", os.path.join(tmp, "none.rks")))
        half = keep["predicted_peak"] // 2
        runs = [("none", "1TB"), ("recompute-all", "1TB"), ("rotor", str(half))]
        for algo, budget in runs:
            rks = os.path.join(tmp, algo + ".rks")
            p = subprocess.run([RKMATE, "solve", chain, "--budget", budget, "--algo", algo, "-o", rks, "--quiet"],
                               capture_output=True, text=True)
            if p.returncode == 3:
                continue
            r = json.loads(rk("run", model, rks, "--chain", chain, *inputs, "--check", "--json", "--iters", "2"))
            assert r["grads_equal"] and r["output_equal"], f"{algo}: gradients differ on the GPU: {r}"
            # The caching allocator rounds blocks up to 512 bytes: a little slack.
            assert abs(r["measured_peak"] - r["predicted_peak"]) <= 0.05 * r["predicted_peak"] + 65536, r
            print(f"ok: {algo} at {budget}: measured peak {r['measured_peak']} predicted {r['predicted_peak']}")
        for name in ("lstm_lm", "lstmcell", "vit"):
            zoo_model(tmp, name)
        nondeterministic_kernel_named(tmp)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
