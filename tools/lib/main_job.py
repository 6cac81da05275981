"""The main job of tools/run: export a small GPT2 with PyTorch, trace it once
with `rkmate trace`, solve it with rockmate, rotor and sqrt(n) at 75 %, 50 %
and 30 % of the plain step's measured activation peak, run every schedule as
a real training step (`rkmate run --check`) and print predicted and measured
peak and time beside the plain PyTorch step.  The same GPT2 captured by
torch.export (`--pt2`: torch.export.save) is traced and run too, at 50 %."""
import json
import os
import sys
import tempfile

from rkjob import export_and_trace, keep_all_run, sh


def main():
    rk, py, root = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as d:
        print("exporting and tracing a 4-layer GPT2 (width 128, seq 64, batch 4, dropout on) ...", file=sys.stderr)
        model, chain, inputs = export_and_trace(rk, py, ["tools/models/gpt2.py", "--layers", "4", "--width", "128",
                                                         "--heads", "4", "--seq", "64", "--batch", "4", "--pt2"],
                                                d, "gpt2", root)
        base = keep_all_run(rk, model, chain, inputs, d, "gpt2", ["--check"])
        plain_peak, plain_time = base["baseline_peak"], base["baseline_time"]
        mib = lambda b: f"{b / 2**20:8.2f} MiB"
        print(f"GPT2, 4 layers: {sh([rk, 'show', chain]).stdout.splitlines()[0]}")
        print(f"{'budget':>14}  {'algo':9} {'pred. peak':>12} {'meas. peak':>12} {'pred. ms':>9} {'meas. ms':>9} "
              f"{'overhead':>9}  gradients")
        print(f"{'plain PyTorch':>14}  {'':9} {'':>12} {mib(plain_peak):>12} {'':>9} {plain_time / 1000:9.2f} "
              f"{'':>9}  (reference)")
        row = lambda label, algo, r: print(
            f"{label:>14}  {algo:9} {mib(r['predicted_peak']):>12} {mib(r['measured_peak']):>12} "
            f"{r['predicted_time'] / 1000:9.2f} {r['measured_time'] / 1000:9.2f} "
            f"{100 * (r['measured_time'] / r['baseline_time'] - 1):8.1f}%  {'equal' if r['grads_equal'] else 'DIFFER'}")
        row("100 %", "none", base)
        for frac in (0.75, 0.5, 0.3):
            budget = int(plain_peak * frac)
            for i, algo in enumerate(("rockmate", "rotor", "sqrt")):
                label = f"{int(frac * 100)} % " + mib(budget).strip() if i == 0 else ""
                sp = os.path.join(d, f"{algo}_{int(frac * 100)}.rks")
                s = sh([rk, "solve", chain, "--budget", str(budget), "--algo", algo, "-o", sp, "--quiet",
                        "--grid", "6x6", "--time-limit", "2"])
                if s.returncode == 3:
                    print(f"{label:>14}  {algo:9} {'no schedule fits':>12}")
                    continue
                row(label, algo, json.loads(sh([rk, "run", model, sp, "--chain", chain, *inputs, "--check",
                                                "--json"]).stdout))
        # The torch.export program of the same model (rkmate's ATen front end).
        pt2 = model[:-3] + ".pt2"
        chain2 = os.path.join(d, "gpt2_export.rkg")
        sh([rk, "trace", pt2, *inputs, "-o", chain2, "--quiet"])
        budget = int(plain_peak * 0.5)
        sp = os.path.join(d, "export_rockmate_50.rks")
        s = sh([rk, "solve", chain2, "--budget", str(budget), "--algo", "rockmate", "-o", sp, "--quiet",
                "--grid", "6x6", "--time-limit", "2"])
        print(f"torch.export: {sh([rk, 'show', chain2]).stdout.splitlines()[0]}")
        if s.returncode == 3:
            print(f"{'50 % (.pt2)':>14}  {'rockmate':9} {'no schedule fits':>12}")
        else:
            row("50 % (.pt2)", "rockmate", json.loads(sh([rk, "run", pt2, sp, "--chain", chain2, *inputs, "--check",
                                                           "--json"]).stdout))


if __name__ == "__main__":
    main()
