#!/usr/bin/env python3
"""highs_run.py MODEL.mps[.gz] [TIME_LIMIT] — HiGHS (the peer of rkmate's
MILP solver in the benchmarks: 1 thread, default gaps) on one model; prints
one JSON object: status (optimal, infeasible, unbounded, time_limit, error),
objective, bound, nodes, time_s.  time_s is HiGHS's own read + solve time,
measured in this process (no Python start-up, which favours HiGHS by a few
tenths of a second against rkmate's whole-process times).  Run with the
project's venv python (highspy from PyPI)."""
import gzip
import json
import math
import os
import shutil
import sys
import tempfile
import time

import highspy


def plain_mps(src, tmp):
    """src itself, or for a .gz file its text unpacked into the folder tmp
    (HiGHS reads .gz itself only in some builds)."""
    if not src.endswith(".gz"):
        return src
    path = os.path.join(tmp, os.path.basename(src)[:-3])
    with gzip.open(src, "rb") as f, open(path, "wb") as g:
        shutil.copyfileobj(f, g)
    return path


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    limit = float(sys.argv[2]) if len(sys.argv) == 3 else 0
    with tempfile.TemporaryDirectory() as tmp:
        path = plain_mps(src, tmp)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        if limit > 0:
            h.setOptionValue("time_limit", limit)
        t0 = time.perf_counter()
        ok = h.readModel(path) == highspy.HighsStatus.kOk
        if ok:
            h.run()
        t = time.perf_counter() - t0
    out = {"status": "error", "objective": None, "bound": None, "nodes": None, "time_s": t}
    if ok:
        ms = h.getModelStatus()
        info = h.getInfo()
        names = {
            highspy.HighsModelStatus.kOptimal: "optimal",
            highspy.HighsModelStatus.kInfeasible: "infeasible",
            highspy.HighsModelStatus.kUnbounded: "unbounded",
            highspy.HighsModelStatus.kUnboundedOrInfeasible: "unbounded_or_infeasible",
            highspy.HighsModelStatus.kTimeLimit: "time_limit",
        }
        out["status"] = names.get(ms, str(ms))
        if out["status"] in ("optimal", "time_limit"):
            out["objective"] = info.objective_function_value
            b = getattr(info, "mip_dual_bound", None)
            out["bound"] = b if b is not None and math.isfinite(b) else None
            out["nodes"] = getattr(info, "mip_node_count", None)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
