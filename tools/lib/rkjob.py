"""Steps shared by the main job (tools/lib/main_job.py) and the executor
benchmark (tools/bench/exec.py): run a command, export a model with PyTorch
and trace it with `rkmate trace`, and measure the plain step beside the
keep-everything schedule."""
import json
import os
import subprocess
import sys


def sh(cmd, **kw):
    """Run cmd; exit with its stderr unless it succeeded (0) or found no schedule (3)."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode not in (0, 3):
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p


def export_and_trace(rk, py, exporter, out_dir, name, root, trace_opts=()):
    """Export a model (exporter: the script and its arguments, relative to root)
    to out_dir/name.pt and trace it to out_dir/name.rkg; returns the model
    path, the chain path and the input options the exporter printed."""
    model = os.path.join(out_dir, name + ".pt")
    out = sh([py, *exporter, "--out", model], cwd=root).stdout
    toks = next(l for l in out.splitlines() if l.startswith("rkmate trace")).split()
    inputs = []
    for i, t in enumerate(toks):
        if t in ("--input", "--input-file"):
            inputs += [t, toks[i + 1]]
    chain = os.path.join(out_dir, name + ".rkg")
    sh([rk, "trace", model, *inputs, *trace_opts, "-o", chain, "--quiet"])
    return model, chain, inputs


def keep_all_run(rk, model, chain, inputs, out_dir, name, run_opts):
    """Solve without a budget (keep everything) and run it: the JSON of
    `rkmate run`, whose baseline_* fields are the plain PyTorch step's."""
    keep = os.path.join(out_dir, name + "_none.rks")
    sh([rk, "solve", chain, "--budget", "1TB", "--algo", "none", "-o", keep, "--quiet"])
    return json.loads(sh([rk, "run", model, keep, "--chain", chain, *inputs, *run_opts, "--json"]).stdout)
