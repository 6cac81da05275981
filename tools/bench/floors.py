#!/usr/bin/env python3
"""floors.py — rockmate's smallest budget (the floor) and feasibility at a few
budgets on chain files, for one rkmate build or two (before / after), as a
markdown table.  With --rotor, also rotor's overhead beside rockmate's at each
budget (rockmate must never be slower).

    floors.py --rkmate B/tools/rkmate/rkmate [--base OLD/rkmate] [--rotor]
              [--grid 6x6 --time-limit 2] [--fractions 30,50] M.rkg ...

Each number is `rkmate solve M.rkg --budget 1 --json` (min_budget,
plain_peak) and `rkmate solve M.rkg --budget P% --json` (exit 0 = fits), with
the grid settings given (the zoo's by default)."""
import argparse
import json
import os
import subprocess
import sys


def solve(rk, chain, budget, grid, tl, algo="rockmate"):
    cmd = [rk, "solve", chain, "--budget", budget, "--algo", algo, "--json", "--quiet"]
    if algo == "rockmate":
        cmd += ["--grid", grid, "--time-limit", str(tl)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"floors: {' '.join(cmd)}: no JSON (exit {p.returncode}): {p.stderr.strip()[:300]}")
    return p.returncode, d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--base", help="another rkmate build: its floor first (before → after)")
    ap.add_argument("--grid", default="6x6")
    ap.add_argument("--time-limit", type=float, default=2)
    ap.add_argument("--fractions", default="30")
    ap.add_argument("--rotor", action="store_true", help="rockmate vs rotor overhead at each fraction")
    ap.add_argument("chains", nargs="+")
    a = ap.parse_args()
    fr = [int(x) for x in a.fractions.split(",")]
    builds = ([a.base] if a.base else []) + [a.rkmate]
    head = ["model", "floor " + (" → ".join(["before", "after"]) if a.base else ""), "floor node (cause)"]
    head += [f"{f} % " + ("before → after" if a.base else "fits") for f in fr]
    if a.rotor:
        head += [f"overhead @{f} % rockmate / rotor" for f in fr]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    bad = 0
    for ch in a.chains:
        name = os.path.basename(ch).rsplit(".", 1)[0]
        floors, fits, node = [], {f: [] for f in fr}, ""
        for rk in builds:
            _, d = solve(rk, ch, "1", a.grid, a.time_limit)
            pp = d.get("plain_peak") or 0
            mb = d.get("min_budget")
            floors.append(f"{100.0 * mb / pp:.2f} %" if mb and pp else "?")
            node = f"{d.get('floor_node', '?')} ({d.get('floor_cause', '?')})"
            for f in fr:
                rc, _ = solve(rk, ch, f"{f}%", a.grid, a.time_limit)
                fits[f].append("yes" if rc == 0 else "no")
        row = [name, " → ".join(floors), node] + [" → ".join(fits[f]) for f in fr]
        if a.rotor:
            for f in fr:
                rc1, d1 = solve(a.rkmate, ch, f"{f}%", a.grid, a.time_limit)
                rc2, d2 = solve(a.rkmate, ch, f"{f}%", a.grid, a.time_limit, "rotor")
                o1 = d1.get("overhead") if rc1 == 0 else None
                o2 = d2.get("overhead") if rc2 == 0 else None
                if o2 is not None and (o1 is None or o1 > o2 + 1e-9):
                    bad += 1
                row.append(f"{'none' if o1 is None else f'{100 * o1:.1f} %'} / {'none' if o2 is None else f'{100 * o2:.1f} %'}")
        print("| " + " | ".join(row) + " |", flush=True)
    if a.rotor:
        print(f"\nrockmate slower than rotor (or infeasible where rotor fits): {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
