"""Driver of tools/bench/exec (run by the Python that has torch): exports
the models, traces them with rkmate, solves each budget with each
algorithm, runs every schedule as a real training step (`rkmate run
--check --json`) and reports measured peaks and times against the plain
PyTorch step measured in the same process."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from rkjob import export_and_trace, keep_all_run, sh  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "build-bench", "bench-exec"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smaller models")
    ap.add_argument("--grid", default="10x10", help="rk-Checkmate grid for rockmate (default 10x10)")
    ap.add_argument("--time-limit", default="5", help="seconds per rk-Checkmate ILP (default 5)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]: trace and run there")
    ap.add_argument("--models", default="gpt2,resnet", help="comma-separated: gpt2, resnet (default both)")
    ap.add_argument("--gpt2", metavar="L,W,H,S,B", default=None,
                    help="GPT2 shape: layers, width, heads, sequence, batch (default from --layers/--quick; "
                         "GPT2-medium is 24,1024,16; GPT2-large 36,1280,20)")
    ap.add_argument("--resnet", metavar="DEPTH,IMAGE,BATCH", default="18,64,4", help="ResNet shape (default 18,64,4)")
    ap.add_argument("--fractions", default="1,0.75,0.5,0.3",
                    help="budgets as fractions of the plain step's activation peak (default 1,0.75,0.5,0.3)")
    ap.add_argument("--algos", default="sqrt,rotor,rockmate", help="default sqrt,rotor,rockmate")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rk = a.rkmate
    py = sys.executable
    if a.gpt2:
        L, W, H, S, B = (int(v) for v in a.gpt2.split(","))
    else:
        L, W, H, S, B = a.layers, 256 if not a.quick else 128, 4, 128 if not a.quick else 64, 4
    depth, image, rbatch = (int(v) for v in a.resnet.split(","))
    # Big models: no CPU self-check in the exporter (the trace's --verify-like
    # check is the run's own --check against the plain step).
    big = ["--no-check"] if a.device != "cpu" else []
    all_models = {
        "gpt2": ["tools/models/gpt2.py", "--layers", str(L), "--width", str(W), "--heads", str(H), "--seq", str(S),
                 "--batch", str(B), *big],
        "resnet": ["tools/models/resnet.py", "--depth", str(depth), "--image", str(image), "--batch", str(rbatch),
                   *big],
    }
    models = {m: all_models[m] for m in a.models.split(",")}
    fractions = [float(f) for f in a.fractions.split(",")]
    algos = a.algos.split(",")
    device = [] if a.device == "cpu" else ["--device", a.device]
    devname = a.device
    if a.device != "cpu":
        import torch
        devname = torch.cuda.get_device_name(0)
    print(f"device: {devname}", flush=True)
    rows = []
    for name, cmd in models.items():
        try:
            model_rows(a, rk, py, name, cmd, device, fractions, algos, rows, devname)
        except SystemExit as e:  # a failed export/trace/plain step: say so, go on with the next model
            print(f"{name}: {e}", flush=True)
            rows.append(dict(model=name, algo="pytorch", fraction=1.0, budget=None, feasible=False,
                             error=str(e).splitlines()[0][:200]))
            report(a, devname, rows)
    report(a, devname, rows, final=True)


def model_rows(a, rk, py, name, cmd, device, fractions, algos, rows, devname):
    """Export, trace and run one model at every budget and algorithm, appending
    to rows (and rewriting the report after each, so a cut run keeps them)."""
    mp, chain, inputs = export_and_trace(rk, py, cmd, a.out, name, ROOT, device)
    inputs = inputs + device
    # the plain step and keep-everything schedule give the reference peak
    base = keep_all_run(rk, mp, chain, inputs, a.out, name, ["--iters", str(a.iters)])
    plain_peak, plain_time = base["baseline_peak"], base["baseline_time"]
    rows.append(dict(model=name, algo="pytorch", fraction=1.0, budget=None, feasible=True,
                     predicted_peak=None, measured_peak=plain_peak, measured_time=plain_time,
                     reserved=base.get("baseline_reserved"), overhead=0.0, grads_equal=True))
    print(f"{name}: plain step {plain_time/1000:.2f} ms, activation peak {plain_peak/2**20:.1f} MiB", flush=True)
    for f in fractions:
        budget = int(plain_peak * f)
        for algo in algos:
            sp = os.path.join(a.out, f"{name}_{algo}_{int(f*100)}.rks")
            s = sh([rk, "solve", chain, "--budget", str(budget), "--algo", algo, "--json", "-o", sp,
                    "--quiet", "--grid", a.grid, "--time-limit", a.time_limit])
            res = json.loads(s.stdout) if s.stdout.strip() else {"feasible": False}
            if not res.get("feasible"):
                rows.append(dict(model=name, algo=algo, fraction=f, budget=budget, feasible=False))
                continue
            p = subprocess.run([rk, "run", mp, sp, "--chain", chain, *inputs, "--iters", str(a.iters),
                                "--check", "--json"], capture_output=True, text=True)
            # exit 1 with a report: the check found differing gradients
            r = json.loads(p.stdout) if p.returncode in (0, 1) and p.stdout.lstrip().startswith("{") else None
            if r is None:
                err = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
                print(f"  {name} {int(f*100)}% {algo}: run failed ({p.returncode}): {err}", flush=True)
                rows.append(dict(model=name, algo=algo, fraction=f, budget=budget, feasible=False, error=err))
                report(a, devname, rows)
                continue
            rows.append(dict(model=name, algo=algo, fraction=f, budget=budget, feasible=True,
                             predicted_peak=r["predicted_peak"], measured_peak=r["measured_peak"],
                             measured_time=r["measured_time"], plain_time=r["baseline_time"],
                             reserved=r.get("measured_reserved"),
                             overhead=r["measured_time"] / r["baseline_time"] - 1,
                             grads_equal=r["grads_equal"], max_abs_diff=r.get("max_abs_diff"),
                             grads_differing=r.get("grads_differing"), plain_repeatable=r.get("plain_repeatable")))
            print(f"  {name} {int(f*100)}% {algo}: predicted {r['predicted_peak']/2**20:.1f} MiB, measured "
                  f"{r['measured_peak']/2**20:.1f} MiB, {r['measured_time']/1000:.2f} ms vs plain "
                  f"{r['baseline_time']/1000:.2f} ms, grads {grads_cell(r)}", flush=True)
            report(a, devname, rows)


def report(a, devname, rows, final=False):
    """results.json, exec.md and the plot from the rows so far; the console table at the end."""
    json.dump(dict(device=devname, rows=rows), open(os.path.join(a.out, "results.json"), "w"), indent=1)
    write_md(a, devname, rows)
    if not final:
        return
    print(f"{'model':8} {'budget':>7} {'algo':9} {'pred. peak':>12} {'meas. peak':>12} {'step ms':>9} "
          f"{'overhead':>9} grads")
    for r in rows:
        if not r["feasible"]:
            print(f"{r['model']:8} {int(r['fraction']*100):6d}% {r['algo']:9} {r.get('error', 'infeasible'):>12}")
            continue
        pp = f"{r['predicted_peak']/2**20:10.1f}Mi" if r.get("predicted_peak") else f"{'':>12}"
        print(f"{r['model']:8} {int(r['fraction']*100):6d}% {r['algo']:9} {pp} "
              f"{r['measured_peak']/2**20:10.1f}Mi {r['measured_time']/1000:9.2f} {100*r['overhead']:8.1f}% "
              f"{'equal' if r['grads_equal'] else 'DIFFERENT'}")
    print(f"table: {os.path.join(a.out, 'exec.md')}")


def grads_cell(r):
    if r["grads_equal"]:
        return "equal"
    why = ""
    if r.get("plain_repeatable") is False:
        why = ", the plain step itself is not repeatable"
    elif r.get("plain_repeatable") is True:
        why = ", the plain step is repeatable"
    n = r.get("grads_differing")
    return f"DIFFER (max abs {r.get('max_abs_diff', 0):.2g}" + (f", {n} gradients" if n is not None else "") + why + ")"


def write_md(a, devname, rows):
    md = [f"Device: {devname}.  Budgets are fractions of the plain step's activation peak; peaks are the "
          "allocator's allocated bytes of activations (parameters and their gradients apart); reserved is the "
          "whole step's reserved device memory (CUDA, parameters included).", "",
          "| model | budget | algo | predicted MiB | measured MiB | reserved MiB | step ms | overhead | gradients |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        b = "plain" if r["algo"] == "pytorch" else f"{int(round(r['fraction'] * 100))} %"
        if not r["feasible"]:
            what = f"failed: {r['error']}" if r.get("error") else "no schedule"
            md.append(f"| {r['model']} | {b} | {r['algo']} | {what} | | | | | |")
            continue
        pp = f"{r['predicted_peak'] / 2**20:.1f}" if r.get("predicted_peak") else ""
        rs = f"{r['reserved'] / 2**20:.0f}" if r.get("reserved") else ""
        md.append(f"| {r['model']} | {b} | {r['algo']} | {pp} | {r['measured_peak'] / 2**20:.1f} | {rs} | "
                  f"{r['measured_time'] / 1000:.2f} | {100 * r['overhead']:+.1f} % | "
                  f"{grads_cell(r)} |")
    open(os.path.join(a.out, "exec.md"), "w").write("\n".join(md) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        models = list(dict.fromkeys(r["model"] for r in rows))
        algos = list(dict.fromkeys(r["algo"] for r in rows if r["algo"] != "pytorch"))
        fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
        axes = axes[0]
        for ax, name in zip(axes, models):
            for algo, mark in zip(algos, "^sx"):
                pts = [(r["measured_peak"] / 2**20, 100 * r["overhead"]) for r in rows
                       if r["model"] == name and r["algo"] == algo and r["feasible"]]
                if pts:
                    ax.plot(*zip(*sorted(pts)), marker=mark, label=algo)
            plain = [r for r in rows if r["model"] == name and r["algo"] == "pytorch"][0]
            if plain.get("measured_peak"):
                ax.axvline(plain["measured_peak"] / 2**20, color="gray", ls="--", label="plain PyTorch peak")
            ax.set_xlabel("measured peak activation memory (MiB)")
            ax.set_ylabel("overhead vs plain step (%)")
            ax.set_title(f"{name} ({devname})")
            ax.legend()
        fig.tight_layout()
        png = os.path.join(a.out, "exec.png")
        fig.savefig(png, dpi=100)
        plt.close(fig)
        print(f"plot: {png}")
    except ImportError:
        print("(matplotlib missing: no plot)")


if __name__ == "__main__":
    main()
