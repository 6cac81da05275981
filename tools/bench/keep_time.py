#!/usr/bin/env python3
"""keep_time.py — the time of rkmate's schedule without recomputation against
the plain PyTorch step (issue 21, item 1: keep-all time ≤ plain + 1 %).

Reads a zoo bench directory (tools/bench/zoo.py --out DIR: per model
M/M.pt, M/M.inputs.pt, M/M.rkg and M/M.rkg.none.rks, the `solve --algo none`
schedule) and runs `rkmate run M.pt M.rkg.none.rks --chain M.rkg --iters N
--json` --repeat times per model.  `rkmate run` alternates the plain step and
the schedule's step in one process (plain, schedule, plain, ...; both with the
same activation-peak hooks) and reports the median of each; the ratio of one
run is schedule ÷ plain, so machine drift between runs cancels within a run.
Prints, per model, the median, min and max of the per-run ratios.  Not a test:
times move with the load (run it on a quiet machine, or at nice 0 beside
nothing else)."""
import argparse
import json
import os
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--zoo", required=True, help="a tools/bench/zoo.py --out directory")
    ap.add_argument("--models", default=None, help="comma-separated (default: every model directory there)")
    ap.add_argument("--iters", type=int, default=10, help="steps of each kind per run (default 10)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model (default 3)")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(
        d for d in os.listdir(a.zoo) if os.path.isfile(os.path.join(a.zoo, d, d + ".rkg.none.rks")))
    print("| model | plain step ms (median) | keep-all ÷ plain: median | min | max |")
    print("| --- | --- | --- | --- | --- |")
    for n in names:
        d = os.path.join(a.zoo, n)
        ratios, plain = [], []
        for _ in range(a.repeat):
            p = subprocess.run([a.rkmate, "run", os.path.join(d, n + ".pt"), os.path.join(d, n + ".rkg.none.rks"),
                                "--chain", os.path.join(d, n + ".rkg"), "--input-file", os.path.join(d, n + ".inputs.pt"),
                                "--iters", str(a.iters), "--json"], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"keep_time: {n}: rkmate run exited {p.returncode}: {p.stderr.strip()[-300:]}")
            j = json.loads(p.stdout)
            ratios.append(j["measured_time"] / j["baseline_time"])
            plain.append(j["baseline_time"] / 1000)
        print(f"| {n} | {statistics.median(plain):.1f} | {statistics.median(ratios):.3f} | {min(ratios):.3f} | "
              f"{max(ratios):.3f} |", flush=True)


if __name__ == "__main__":
    main()
