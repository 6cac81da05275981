#!/usr/bin/env python3
"""tools/bench/coverage.py — issue 21's coverage sweep: every model of
tools/models/coverage.py (other shapes and idioms than the zoo) through the
real `rkmate` binary, as TorchScript (.pt) and as a torch.export program
(.pt2, where export works): trace --verify, keep-everything (`--algo none`)
and rockmate at 50 % and at its floor, each run with `run --check`.  One row
per model and front end: trace (forward equal), keep-all ÷ plain (measured),
rockmate 50 % fits, the floor in % of the plain step's peak, gradients
(every run), measured = predicted, or the first error.

  .venv/bin/python tools/bench/coverage.py --rkmate build-h/tools/rkmate/rkmate [--models a,b] [--out DIR]
Writes DIR/coverage.md and DIR/coverage.json."""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COV = os.path.join(ROOT, "tools", "models", "coverage.py")


def sh(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def last_line(p):
    lines = [x for x in (p.stderr or "").strip().splitlines() if x.strip()]
    return lines[-1][:300] if lines else f"exit {p.returncode}"


def sweep(rk, model, inputs, chain, a):
    row = {}
    p = sh([rk, "trace", model, *inputs, "-o", chain, "--json", "--quiet", "--runs", "1", "--verify"])
    if p.returncode != 0:
        row["error"] = "trace: " + last_line(p)
        return row
    st = json.loads(p.stdout)
    row.update(blocks=st["blocks"], classes=st["classes"], nodes=st["nodes_simplified"],
               forward_equal=st.get("forward_equal"))
    runs = {}

    def solve_run(tag, algo, budget, extra=()):
        rks = f"{chain}.{tag}.rks"
        opts = ["--grid", a.grid, "--time-limit", a.time_limit] if algo == "rockmate" else []
        p = sh([rk, "solve", chain, "--budget", str(budget), "--algo", algo, "-o", rks, "--json", "--quiet",
                *opts, *extra])
        s = json.loads(p.stdout) if p.stdout.strip() else {}
        if p.returncode == 3:
            return None, s
        if p.returncode != 0:
            raise RuntimeError(f"solve {tag}: " + last_line(p))
        p = sh([rk, "run", model, rks, "--chain", chain, *inputs, "--check", "--json", "--iters", "1"])
        if p.returncode not in (0, 1) or not p.stdout.strip():
            raise RuntimeError(f"run {tag}: " + last_line(p))
        r = json.loads(p.stdout)
        runs[tag] = r
        return r, s

    try:
        keep, _ = solve_run("keep", "none", "1TB")
        row["plain"] = keep["baseline_peak"]
        row["keep_ratio"] = keep["measured_peak"] / keep["baseline_peak"]
        r50, _ = solve_run("rk50", "rockmate", "50%")
        row["rk50_fits"] = r50 is not None
        _, s = solve_run("probe", "rockmate", 1)
        fl = s.get("min_budget")
        if fl:
            row["floor_pct"] = fl / keep["baseline_peak"] * 100
            row["floor_cause"] = s.get("floor_cause")
            row["floor_node"] = s.get("floor_node")
            rf, _ = solve_run("floor", "rockmate", fl)
            row["floor_runs"] = rf is not None
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        row["error"] = str(e).splitlines()[0][:300]
    row["grads_equal"] = all(r["grads_equal"] and r["output_equal"] for r in runs.values())
    d = [r["measured_peak"] - r["predicted_peak"] for r in runs.values()]
    row["meas_minus_pred"] = [min(d), max(d)] if d else None
    row["runs"] = {k: {x: r.get(x) for x in ("measured_peak", "predicted_peak", "baseline_peak", "grads_equal",
                                              "max_abs_diff", "budget")} for k, r in runs.items()}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--out", default="/tmp/rkmate-coverage")
    ap.add_argument("--models", default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--grid", default="6x6")
    ap.add_argument("--time-limit", default="2")
    ap.add_argument("--no-pt2", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = a.models.split(",") if a.models else sh([sys.executable, COV, "--list"]).stdout.split()
    rows = []
    for n in names:
        t = time.time()
        pt = os.path.join(a.out, n + ".pt")
        p = sh([sys.executable, COV, "--model", n, "--out", pt, "--dtype", a.dtype, "--no-check"]
               + ([] if a.no_pt2 else ["--pt2"]))
        fronts = []
        if os.path.exists(pt):
            fronts.append(("pt", pt))
        else:
            rows.append({"model": n, "front": "pt", "error": "export: " + last_line(p)})
        if not a.no_pt2:
            if os.path.exists(pt[:-3] + ".pt2") and p.returncode == 0:
                fronts.append(("pt2", pt[:-3] + ".pt2"))
            else:
                rows.append({"model": n, "front": "pt2", "error": "torch.export: " + last_line(p)})
        for front, path in fronts:
            row = {"model": n, "front": front}
            row.update(sweep(a.rkmate, path, ["--input-file", pt[:-3] + ".inputs.pt"],
                             path[:-len(front) - 1] + "." + front + ".rkg", a))
            rows.append(row)
        sys.stderr.write(f"coverage: {n} done in {time.time() - t:.0f} s\n")
        with open(os.path.join(a.out, "coverage.json"), "w") as f:
            json.dump(rows, f, indent=1)
    out = ["| model | front | trace (fwd equal) | blocks | keep-all ÷ plain | rockmate 50 % | floor % | gradients |"
           " measured − predicted (B) | error |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "blocks" not in r:
            out.append(f"| {r['model']} | {r['front']} | refused | | | | | | | {r.get('error', '')} |")
            continue
        out.append(f"| {r['model']} | {r['front']} | {'ok' if r['forward_equal'] else 'DIFFER'} | {r['blocks']} | "
                   f"{r.get('keep_ratio', float('nan')):.3f} | {'yes' if r.get('rk50_fits') else 'no'} | "
                   f"{r.get('floor_pct', float('nan')):.0f} ({r.get('floor_cause')} of {r.get('floor_node')}) | "
                   f"{'equal' if r['grads_equal'] else 'DIFFER'} | "
                   f"{r['meas_minus_pred']} | {r.get('error', '')} |")
    md = "\n".join(out) + "\n"
    with open(os.path.join(a.out, "coverage.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
