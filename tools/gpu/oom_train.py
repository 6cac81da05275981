#!/usr/bin/env python3
"""tools/gpu/oom_train.py — a model whose plain training step does not fit,
trained with rkmate's schedule (issue 18, item 5).  Exports a GPT2 shape,
traces it on the device, solves rockmate at a fraction of the keep-everything
peak, and caps the process's device memory (`--memory-cap`, as
torch.cuda.set_per_process_memory_fraction) at what that schedule needs:
parameters, their gradients and Adam's two moments (4 × the parameters), the
schedule's predicted activation peak, and --slack for the cuBLAS workspace and
the allocator's rounding.  Then, with the same seed and random data:
  1. `rkmate train --plain --memory-cap CAP`: the plain PyTorch step must fail
     (out of memory);
  2. `rkmate train SCHEDULE --memory-cap CAP`: rkmate's schedule trains;
  3. `rkmate train --plain` without the cap (the device has room for it):
     losses and the parameters' hash after the steps must equal run 2's.
Prints a markdown table and writes DIR/oom_train.json.
  oom_train.py --rkmate BIN [--gpt2 L,W,H,S,B] [--fraction 0.3] [--steps 2] [--slack 1GiB] [--out DIR]"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from rkjob import export_and_trace  # noqa: E402

GIB = 2 ** 30


def train(rk, model, chain, inputs, sched, steps, cap):
    cmd = [rk, "train", model, *([sched] if sched else ["--plain"]), "--chain", chain, *inputs,
           "--steps", str(steps), "--json", "--quiet"] + (["--memory-cap", str(cap)] if cap else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    err = (p.stderr.strip().splitlines() or [""])[-1]
    return p.returncode, lines, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpt2", default="12,768,12,512,8", metavar="L,W,H,S,B")
    ap.add_argument("--fraction", type=float, default=0.3, help="rockmate's budget, of the keep-all peak")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--slack", type=float, default=1.0, help="GiB above the parameters, optimizer and budget")
    ap.add_argument("--out", default=os.path.join(ROOT, "build-gpu", "oom-train"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rk, dev = a.rkmate, ["--device", a.device]
    L, W, H, S, B = a.gpt2.split(",")
    name = f"gpt2_{L}x{W}_s{S}_b{B}"
    model, chain, inputs = export_and_trace(rk, sys.executable, ["tools/models/gpt2.py", "--layers", L, "--width", W,
                                                                 "--heads", H, "--seq", S, "--batch", B, "--no-check"],
                                            a.out, name, ROOT, dev)
    inputs = inputs + dev
    keep = json.loads(subprocess.run([rk, "solve", chain, "--budget", "1TB", "--algo", "none", "--json", "--quiet"],
                                     capture_output=True, text=True).stdout)
    sched = os.path.join(a.out, name + "_rockmate.rks")
    budget = int(keep["predicted_peak"] * a.fraction)
    s = subprocess.run([rk, "solve", chain, "--budget", str(budget), "--json", "--quiet", "-o", sched,
                        "--grid", "10x10", "--time-limit", "2"], capture_output=True, text=True)
    sol = json.loads(s.stdout)
    if not sol.get("feasible") and sol.get("min_budget"):  # below the floor: the smallest budget that works
        budget = sol["min_budget"]
        s = subprocess.run([rk, "solve", chain, "--budget", str(budget), "--json", "--quiet", "-o", sched,
                            "--grid", "10x10", "--time-limit", "2"], capture_output=True, text=True)
        sol = json.loads(s.stdout)
    params = sol["param_bytes"]
    cap = 4 * params + int(sol["predicted_peak"] * 1.05) + int(a.slack * GIB)
    rep = dict(model=name, params=params, keep_all_predicted=keep["predicted_peak"], budget=budget,
               predicted=sol["predicted_peak"], cap=cap, plain_need_estimate=4 * params + keep["predicted_peak"])
    print(json.dumps(rep), flush=True)
    runs = {}
    for key, sc, c in (("plain_capped", None, cap), ("rockmate_capped", sched, cap), ("plain", None, 0)):
        code, lines, err = train(rk, model, chain, inputs, sc, a.steps, c)
        summ = lines[-1] if lines and "params_hash" in lines[-1] else {}
        runs[key] = dict(exit=code, error=err if code else "", losses=[l["loss"] for l in lines if "step" in l],
                         max_peak=summ.get("max_peak"), params_hash=summ.get("params_hash"),
                         allocated=summ.get("allocated_last"), optimizer_bytes=summ.get("optimizer_bytes"),
                         step_ms=[round(l["time_us"] / 1000, 2) for l in lines if "step" in l])
        print(key, json.dumps(runs[key])[:800], flush=True)
    rep["runs"] = runs
    rc, rr, pp = runs["plain_capped"], runs["rockmate_capped"], runs["plain"]
    rep["plain_capped_out_of_memory"] = rc["exit"] != 0 and "out of memory" in rc["error"].lower()
    rep["rockmate_trained"] = rr["exit"] == 0
    rep["same_as_uncapped_plain"] = rr["exit"] == 0 and pp["exit"] == 0 and rr["params_hash"] == pp["params_hash"] \
        and rr["losses"] == pp["losses"]
    with open(os.path.join(a.out, "oom_train.json"), "w") as f:
        json.dump(rep, f, indent=1)
    print(f"\n| run | device memory cap | exit | activation peak | losses | parameters after {a.steps} steps |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key, r in runs.items():
        capt = f"{cap / GIB:.2f} GiB" if "capped" in key else "none"
        pk = f"{r['max_peak'] / GIB:.2f} GiB" if r["max_peak"] else "—"
        out = "out of memory" if key == "plain_capped" and rep["plain_capped_out_of_memory"] else r["error"][:80]
        print(f"| {key} | {capt} | {r['exit']} {out} | {pk} | {r['losses']} | {r['params_hash']} |")
    print(f"\nplain step OOM under the cap: {rep['plain_capped_out_of_memory']}; rockmate trained: "
          f"{rep['rockmate_trained']}; equal to the uncapped plain step bit for bit: {rep['same_as_uncapped_plain']}")
    return 0 if rep["plain_capped_out_of_memory"] and rep["rockmate_trained"] else 1


if __name__ == "__main__":
    sys.exit(main())
