#!/usr/bin/env python3
"""Fast slice of the differential test of `rkmate milp` against HiGHS
(tools/bench/milp-diff): a few hundred generated MILPs over every family
(knapsacks, lot-sizing, fixed-charge networks, set covering / packing /
partitioning, big-M scheduling, free and negative integer columns, ranged
rows, maximisation, rk-Checkmate ILPs), each solved by rkmate and by HiGHS;
statuses and objectives must agree (1e-6) and rkmate's solution must be
feasible and match its objective.  Fails on any disagreement (saved under
the build folder's milp-diff-failures/ as MPS + JSON); skipped (77) only
when highspy cannot be imported.

The harness runs under the project's virtual environment: $RKMATE_PYTHON,
else $RKMATE_SOURCE_ROOT/.venv/bin/python.  Argument: the milp-diff-gen
binary (family checkmate)."""
import os
import subprocess
import sys

SKIP = 77

# Cases that once disagreed (milp-diff-failures/FINDINGS.txt), run besides the
# slice: eqknap:8 and ranged:10001381 (rows left 1e-6..1e-5 off, the objective
# gaining from it), ranged:2000440, ranged:10001321 and unbdray:50/90/99
# ("unbounded" for integer-infeasible MILPs whose relaxation has a ray), and
# sched:10001278, where HiGHS's default answer is wrong and rkmate's right
# (must come out as "HiGHS wrong", not as a failure).
REGRESSIONS = ["eqknap:8", "ranged:10001381", "ranged:2000440", "ranged:10001321", "unbdray:50", "unbdray:90",
               "unbdray:99", "sched:10001278"]


def main():
    root = os.environ.get("RKMATE_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    build = os.environ.get("RKMATE_BUILD_ROOT") or os.getcwd()
    rkmate = os.environ.get("RKMATE")
    gen = sys.argv[1] if len(sys.argv) > 1 else None
    py = os.environ.get("RKMATE_PYTHON") or os.path.join(root, ".venv", "bin", "python")
    if not os.access(py, os.X_OK):
        print(f"SKIP: no Python with highspy ({py} missing; tools/test creates the venv)")
        return SKIP
    p = subprocess.run([py, "-c", "import highspy, numpy"], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"SKIP: highspy cannot be imported by {py}: {p.stderr.strip().splitlines()[-1:]}")
        return SKIP
    if not rkmate or not os.access(rkmate, os.X_OK):
        print(f"FAIL: no rkmate binary (RKMATE={rkmate!r})")
        return 1
    save = os.path.join(build, "milp-diff-failures")
    count = int(os.environ.get("RKMATE_MILP_DIFF_COUNT", "600"))
    cmd = [py, "-m", "milpdiff", "--count", str(count), "--jobs", "2", "--seed", "0",
           "--rkmate", rkmate, "--save", save, "--time-limit", "10", "--quiet"]
    if gen:
        cmd += ["--gen", gen]
    for c in REGRESSIONS:
        cmd += ["--extra-case", c]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "tools", "bench") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env)
    if p.returncode != 0:
        print(f"FAIL: rkmate and HiGHS disagree (exit {p.returncode}); cases saved in {save}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
