#!/usr/bin/env python3
"""memlog_sweep.py — op-by-op exactness over a zoo bench's output: for every
model directory that `tools/bench/zoo.py --out DIR` wrote (MODEL.pt,
MODEL.inputs.pt, MODEL.rkg and the schedules beside it), run the keep-all and
rockmate-50 % schedules with `rkmate run --memory-log` and print, per run, the
measured peak less the predicted one and the op that stepped furthest above
its prediction (bytes, op index, block, node).  docs/exec.md, "Gradient
layouts split classes", and docs/zoo.md say what it found.

    .venv/bin/python tools/bench/memlog_sweep.py --rkmate RKMATE DIR [DIR ...]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rkmate", required=True, help="the rkmate binary (rkmate-torch beside it)")
    ap.add_argument("--schedules", default="none,rockmate.50", help="schedule suffixes (MODEL.rkg.S.rks)")
    ap.add_argument("dirs", nargs="+", help="zoo.py --out directories")
    a = ap.parse_args()
    logs = tempfile.mkdtemp(prefix="rkmate-memlog-")
    for d in a.dirs:
        for m in sorted(glob.glob(os.path.join(d, "*", ""))):
            n = os.path.basename(m.rstrip("/"))
            pt, inp, rkg = (os.path.join(m, n + x) for x in (".pt", ".inputs.pt", ".rkg"))
            if not os.path.exists(rkg):
                continue
            for s in a.schedules.split(","):
                rks = f"{rkg}.{s}.rks"
                if not os.path.exists(rks):
                    continue
                log = os.path.join(logs, f"{n}.{s}.tsv")
                p = subprocess.run([a.rkmate, "run", pt, rks, "--chain", rkg, "--input-file", inp, "--iters", "1",
                                    "--json", "--memory-log", log], capture_output=True, text=True)
                if p.returncode:
                    print(f"{n:28s} {s:12s} exit {p.returncode}: {p.stderr.strip()[-300:]}", flush=True)
                    continue
                r = json.loads(p.stdout)
                with open(log) as f:
                    rows = [x.rstrip("\n").split("\t") for x in f if not x.startswith("#")][1:]
                worst = max(rows, key=lambda x: int(x[5]) - int(x[4]))
                print(f"{n:28s} {s:12s} peak measured-predicted {r['measured_peak'] - r['predicted_peak']:>9d}  "
                      f"worst op {int(worst[5]) - int(worst[4]):>9d} B at op {worst[0]} block {worst[2]} {worst[3]}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
