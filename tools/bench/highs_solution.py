#!/usr/bin/env python3
"""highs_solution.py MODEL.mps[.gz] OUT.sol — solve a MILP with HiGHS (the
independent oracle, 1 thread, gaps 1e-9) and write its optimal solution in
rkmate's solution format ('name value' lines, as `rkmate milp -o` writes and
`--debug-solution` reads).  Run with the project's venv python (highspy)."""
import os
import sys
import tempfile

import highspy

from highs_run import plain_mps


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        path = plain_mps(src, tmp)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("mip_rel_gap", 1e-9)
        h.setOptionValue("mip_abs_gap", 1e-9)
        if h.readModel(path) != highspy.HighsStatus.kOk:
            sys.exit(f"{src}: HiGHS cannot read it")
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            sys.exit(f"{src}: HiGHS status {h.getModelStatus()}")
        lp = h.getLp()
        x = h.getSolution().col_value
        tmp_out = out + ".tmp"
        with open(tmp_out, "w") as f:
            f.write(f"# HiGHS {h.version()} optimum {h.getInfo().objective_function_value!r}\n")
            for name, v in zip(lp.col_names_, x):
                f.write(f"{name} {v!r}\n")
        os.replace(tmp_out, out)
        print(f"{os.path.basename(src)}: {h.getInfo().objective_function_value!r}")


if __name__ == "__main__":
    main()
