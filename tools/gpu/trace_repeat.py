#!/usr/bin/env python3
"""tools/gpu/trace_repeat.py — is tracing on a device deterministic enough?
Traces one model N times (default 3) on the device, compares the chains
(sizes and overheads must be equal; the spread of node times), solves rockmate
and rotor at fractions of the keep-everything peak on every chain, and says
whether the schedules' operations are the same and how far their predicted times lie apart.
Prints a summary and writes DIR/trace_repeat.json.
  trace_repeat.py --rkmate BIN [--device cuda] [--gpt2 L,W,H,S,B | --resnet D,I,B] [--times 3]
                  [--fractions 0.5,0.3] [--out DIR]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from rkjob import sh  # noqa: E402


def nodes(chain):
    with open(chain) as f:
        c = json.load(f)
    out = {}
    for k, cl in enumerate(c["classes"]):
        for n in cl["compute"]:
            out[(k, n["name"])] = (n.get("time", 0.0), n.get("overhead", 0))
        for d in cl["data"]:
            out[(k, "size:" + d["name"])] = (0.0, d.get("size", 0))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpt2", default=None, metavar="L,W,H,S,B")
    ap.add_argument("--resnet", default=None, metavar="DEPTH,IMAGE,BATCH")
    ap.add_argument("--times", type=int, default=3)
    ap.add_argument("--fractions", default="0.5,0.3")
    ap.add_argument("--out", default=os.path.join(ROOT, "build-gpu", "trace-repeat"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rk, py = a.rkmate, sys.executable
    if a.resnet:
        D, I, B = a.resnet.split(",")
        exporter = ["tools/models/resnet.py", "--depth", D, "--image", I, "--batch", B, "--no-check"]
        name = f"resnet{D}_{I}_b{B}"
    else:
        L, W, H, S, B = (a.gpt2 or "12,768,12,512,8").split(",")
        exporter = ["tools/models/gpt2.py", "--layers", L, "--width", W, "--heads", H, "--seq", S, "--batch", B,
                    "--no-check"]
        name = f"gpt2_{L}x{W}_s{S}_b{B}"
    model = os.path.join(a.out, name + ".pt")
    out = sh([py, *exporter, "--out", model], cwd=ROOT).stdout
    toks = next(l for l in out.splitlines() if l.startswith("rkmate trace")).split()
    inputs = sum(([t, toks[i + 1]] for i, t in enumerate(toks) if t in ("--input", "--input-file")), [])
    chains = []
    for k in range(a.times):
        ch = os.path.join(a.out, f"{name}_{k}.rkg")
        sh([rk, "trace", model, *inputs, "--device", a.device, "-o", ch, "--quiet"])
        chains.append(ch)
    ref = nodes(chains[0])
    same_memory, spreads = True, []
    for ch in chains[1:]:
        other = nodes(ch)
        if set(other) != set(ref) or any(other[k][1] != ref[k][1] for k in ref):
            same_memory = False
    all_nodes = [nodes(c) for c in chains]
    for key in ref:
        ts = [n[key][0] for n in all_nodes if key in n]
        if len(ts) == len(chains) and max(ts) > 0 and not key[1].startswith("size:"):
            spreads.append((max(ts) - min(ts)) / max(statistics.median(ts), 1e-9))
    keep = json.loads(sh([rk, "solve", chains[0], "--budget", "1TB", "--algo", "none", "--json", "--quiet"]).stdout)
    rep = dict(model=name, device=a.device, traces=a.times, same_sizes_and_overheads=same_memory,
               node_time_spread_median=statistics.median(spreads) if spreads else None,
               node_time_spread_max=max(spreads) if spreads else None, solves=[])
    for f in (float(x) for x in a.fractions.split(",")):
        budget = str(int(keep["predicted_peak"] * f))
        for algo in ("rockmate", "rotor"):
            scheds, times = [], []
            for k, ch in enumerate(chains):
                sp = os.path.join(a.out, f"{name}_{algo}_{int(f * 100)}_{k}.rks")
                p = subprocess.run([rk, "solve", ch, "--budget", budget, "--algo", algo, "--json", "--quiet",
                                    "-o", sp, "--grid", "10x10", "--time-limit", "2"], capture_output=True, text=True)
                r = json.loads(p.stdout) if p.stdout.strip() else {}
                if r.get("feasible"):
                    scheds.append(sp)
                    times.append(r["predicted_time"])
            ops = [json.load(open(s))["ops"] for s in scheds]
            same = len(scheds) == len(chains) and all(o == ops[0] for o in ops[1:])
            row = dict(fraction=f, algo=algo, feasible=len(scheds), same_schedule=same,
                       predicted_time_spread=(max(times) - min(times)) / min(times) if times else None)
            rep["solves"].append(row)
            print(json.dumps(row), flush=True)
    print(json.dumps({k: v for k, v in rep.items() if k != "solves"}), flush=True)
    with open(os.path.join(a.out, "trace_repeat.json"), "w") as f:
        json.dump(rep, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
