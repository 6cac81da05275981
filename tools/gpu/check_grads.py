#!/usr/bin/env python3
"""tools/gpu/check_grads.py — why a schedule's gradients differ from the plain
step on a device: for each model (GPT2 and ResNet shapes, as tools/bench/exec.py
exports them), trace it there (--verify: the blocks' forward against the
module's), run keep-everything and the given algorithms' schedules with
`rkmate run --check --json --iters 2`, and print what the check says (output
and gradients equal, the plain step repeatable, which parameters differ and by
how much) with the kernel warnings rkmate's libtorch printed (a kernel with no
deterministic implementation).  Writes DIR/check_grads.json.
  check_grads.py --rkmate BIN [--device cuda] [--gpt2 L,W,H,S,B] [--resnet D,I,B]
                 [--algos none,rockmate] [--fraction 0.5] [--out DIR]"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from rkjob import export_and_trace  # noqa: E402


def warnings_of(text):
    seen = []
    for line in text.splitlines():
        if ("arn" in line or "determinis" in line) and line.strip() not in seen:
            seen.append(line.strip())
    return seen[:12]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpt2", action="append", default=[], metavar="L,W,H,S,B")
    ap.add_argument("--resnet", action="append", default=[], metavar="DEPTH,IMAGE,BATCH")
    ap.add_argument("--algos", default="none")
    ap.add_argument("--fraction", type=float, default=0.5, help="budget of the other algorithms (of keep-all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build-gpu", "check-grads"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    py, rk, dev = sys.executable, a.rkmate, ["--device", a.device]
    models = []
    for s in a.gpt2:
        L, W, H, S, B = s.split(",")
        models.append((f"gpt2_{L}x{W}_s{S}_b{B}", ["tools/models/gpt2.py", "--layers", L, "--width", W, "--heads", H,
                                                   "--seq", S, "--batch", B, "--no-check"]))
    for s in a.resnet:
        D, I, B = s.split(",")
        models.append((f"resnet{D}_{I}_b{B}", ["tools/models/resnet.py", "--depth", D, "--image", I, "--batch", B,
                                              "--no-check"]))
    results = []
    for name, cmd in models:
        try:
            mp, chain, inputs = export_and_trace(rk, py, cmd, a.out, name, ROOT, dev + ["--verify"])
        except SystemExit as e:
            print(f"{name}: export/trace failed: {str(e)[-400:]}", flush=True)
            results.append(dict(model=name, error=str(e)[-400:]))
            continue
        keep = json.loads(subprocess.run([rk, "solve", chain, "--budget", "1TB", "--algo", "none", "--json",
                                          "--quiet"], capture_output=True, text=True).stdout)
        for algo in a.algos.split(","):
            budget = "1TB" if algo == "none" else str(int(keep["predicted_peak"] * a.fraction))
            sp = os.path.join(a.out, f"{name}_{algo}.rks")
            s = subprocess.run([rk, "solve", chain, "--budget", budget, "--algo", algo, "-o", sp, "--quiet"],
                               capture_output=True, text=True)
            if s.returncode != 0:
                print(f"{name} {algo}: solve exit {s.returncode}", flush=True)
                continue
            p = subprocess.run([rk, "run", mp, sp, "--chain", chain, *inputs, *dev, "--check", "--json",
                                "--iters", "2"], capture_output=True, text=True)
            r = json.loads(p.stdout) if p.stdout.lstrip().startswith("{") else {}
            row = dict(model=name, algo=algo, exit=p.returncode, warnings=warnings_of(p.stderr),
                       **{k: r.get(k) for k in ("output_equal", "grads_equal", "plain_repeatable", "grads_differing",
                                                "max_abs_diff", "max_rel_diff", "predicted_peak", "measured_peak",
                                                "baseline_peak", "grads_differing_names")})
            if not r:
                row["error"] = p.stderr.strip()[-600:]
            results.append(row)
            print(json.dumps(row)[:1500], flush=True)
            with open(os.path.join(a.out, "check_grads.json"), "w") as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
