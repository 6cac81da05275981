#!/usr/bin/env python3
"""tools/bench/train.py — many training steps through schedules (`rkmate
train`): for a GPT2 with dropout (tied weights) and a torchvision ResNet-50
(BatchNorm, width scaled by 0.25, 64x64 images), trace, solve rockmate / rotor / sqrt at a
fraction of the keep-all peak (default 50 %), train N steps of Adam (default
50) with each schedule and with the plain PyTorch step from the same seed,
and report: losses of every step and final parameters and buffers equal bit
for bit, measured peak per step (min / max, against the budget and the
prediction), memory allocated after each step (no growth), median step time.

usage: .venv/bin/python tools/bench/train.py --rkmate build/tools/rkmate/rkmate [--steps 50] [--budget 50]
Run it with the Python whose torch rkmate was built against."""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(*args, ok=(0,)):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode not in ok:
        sys.exit(f"{' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "build-bench", "bench-train"))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--budget", type=float, default=50, help="percent of the keep-all peak (default 50)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--models", default="gpt2,resnet50", help="comma-separated (default gpt2,resnet50)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    py, rk = sys.executable, a.rkmate
    models = {
        "gpt2": ["gpt2.py", "--layers", "4", "--width", "64", "--heads", "4", "--seq", "32", "--batch", "4",
                 "--vocab", "200", "--dropout", "0.1", "--tie-weights"],
        "resnet50": ["resnet.py", "--depth", "50", "--width-scale", "0.25", "--image", "64", "--batch", "4"],
    }
    models = {k: v for k, v in models.items() if k in a.models.split(",")}
    print(f"{'model':9} {'algo':9} {'budget':>9} {'pred':>9} {'peak min':>9} {'peak max':>9} {'max/bud':>7} "
          f"{'alloc 2..N':>12} {'ms/step':>8} {'equal':>5}")
    for name, spec in models.items():
        pt = os.path.join(a.out, name + ".pt")
        cmd = sh(py, os.path.join(ROOT, "tools", "models", spec[0]), "--out", pt, "--no-check", "--dtype", a.dtype,
                 *spec[1:]).stdout
        del cmd
        rkg = pt[:-3] + ".rkg"
        sh(rk, "trace", pt, "--input-file", pt[:-3] + ".inputs.pt", "-o", rkg, "--quiet", "--runs", "2")
        keep = pt[:-3] + ".keep.rks"
        sh(rk, "baseline", rkg, "--kind", "keep-all", "-o", keep)
        full = json.loads(sh(rk, "simulate", rkg, keep, "--json").stdout)["peak"]
        budget = int(full * a.budget / 100)

        def train(target):
            p = sh(rk, "train", pt, *target, "--chain", rkg, "--steps", str(a.steps), "--optimizer", "adam",
                   "--lr", "1e-3", "--json")
            lines = [json.loads(x) for x in p.stdout.splitlines()]
            return lines[:-1], lines[-1]

        ref_steps, ref = train(["--plain"])
        rows = [("plain", None, None, ref_steps, ref)]
        for algo in ("rockmate", "rotor", "sqrt"):
            rks = f"{pt[:-3]}.{algo}.rks"
            extra = ["--builtin-options"] if algo == "rockmate" else []
            b = budget
            p = sh(rk, "solve", rkg, "--budget", str(b), "--algo", algo, "-o", rks, "--quiet", *extra, ok=(0, 3))
            if p.returncode == 3:
                print(f"{name:9} {algo:9} no schedule at {b}: {p.stderr.strip()}")
                continue
            st, summ = train([rks])
            rows.append((algo, b, summ["predicted_peak"], st, summ))
        for algo, b, pred, st, summ in rows:
            peaks = [s["peak"] for s in st]
            allocs = sorted({s["allocated"] for s in st[1:]})
            equal = ([s["loss"] for s in st] == [s["loss"] for s in ref_steps] and
                     summ["params_hash"] == ref["params_hash"] and summ["buffers_hash"] == ref["buffers_hash"])
            ms = statistics.median(s["time_us"] for s in st[1:]) / 1000
            print(f"{name:9} {algo:9} {b or full:9d} {pred or 0:9d} {min(peaks):9d} {max(peaks):9d} "
                  f"{max(peaks) / (b or full):7.3f} {'/'.join(map(str, allocs)):>12} {ms:8.1f} "
                  f"{'yes' if equal else 'NO':>5}")
        print(f"{name}: keep-all peak {full}, {a.steps} steps, loss {ref_steps[0]['loss']:.6g} -> "
              f"{ref_steps[-1]['loss']:.6g}, params {ref['params_hash']}, buffers {ref['buffers_hash']}")


if __name__ == "__main__":
    main()
