"""rk_cli.py — the `rkmate` binary as the exec tests call it: RKMATE (from the
environment, as meson passes it), rk(), which runs it and checks the exit
status when asked, and the solves several tests make of a chain: its smallest
rockmate budget and the schedules keep-all, recompute-all and rockmate there;
check_peak(), the measured peak against the prediction; check_runs_equal(),
those schedules run against the plain step."""
import json
import os
import subprocess

RKMATE = os.environ.get("RKMATE", "rkmate")


def rk(*args, check=None):
    p = subprocess.run([RKMATE, *args], capture_output=True, text=True)
    if check is not None and p.returncode != check:
        raise AssertionError(f"rkmate {' '.join(args)} exited {p.returncode}, expected {check}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def min_budget(rkg, *opts):
    """The chain's smallest rockmate budget (`solve --budget 1` exits 3 and says it)."""
    p = rk("solve", rkg, "--budget", "1", "--json", "--quiet", *opts)
    if p.returncode != 3:
        raise AssertionError(f"rkmate solve {rkg} --budget 1 exited {p.returncode}, expected 3\n{p.stderr}")
    return json.loads(p.stdout)["min_budget"]


def schedules(rkg, *opts):
    """keep-all, recompute-all and rockmate (with opts) at its smallest budget:
    the paths of the three schedules written beside the chain."""
    out = []
    for algo in ("none", "recompute-all"):
        rks = f"{rkg}.{algo}.rks"
        rk("solve", rkg, "--budget", str(10**12), "--algo", algo, "-o", rks, "--quiet", check=0)
        out.append(rks)
    rks = f"{rkg}.floor.rks"
    rk("solve", rkg, "--budget", str(min_budget(rkg, *opts)), *opts, "-o", rks, "--quiet", check=0)
    out.append(rks)
    return out


def check_peak(tc, r, slack=64, what=""):
    """The measured peak is the prediction, within `slack` (the loss scalars); where
    the step handed a gradient on to a second holder as the same buffer
    (shared_grad_bytes: an add's backward gives one gradient to both inputs, as plain
    autograd does), which the simulator counts once per holder, it may be below it
    by up to those bytes; never above."""
    tc.assertLessEqual(r["measured_peak"], r["predicted_peak"] + slack, f"{what}: {r}")
    shared = r["shared_grad_bytes"]
    tc.assertGreaterEqual(r["measured_peak"], r["predicted_peak"] - slack - shared, f"{what}: {r}")


def check_trains_as_plain(tc, path, rkg, rks):
    """Two Adam steps with the schedule rks and two of plain training, each
    `rkmate train --json`: parameters and buffers equal bit for bit."""
    out = {}
    for what in (["--plain"], [rks]):
        p = rk("train", path, *what, "--chain", rkg, "--json", "--steps", "2", "--optimizer", "adam", check=0)
        out[what[0]] = json.loads(p.stdout.splitlines()[-1])
    tc.assertEqual(out["--plain"]["params_hash"], out[rks]["params_hash"])
    tc.assertEqual(out["--plain"]["buffers_hash"], out[rks]["buffers_hash"])


def check_runs_equal(tc, name, path, rkg, inputs, rks_list, peak=None):
    """`run --check --iters 2` of each schedule (the first is keep-all): output
    and gradients equal to the plain step's bit for bit, the measured peak
    checked by peak(r, what) (default check_peak), and keep-all no higher
    than the plain step."""
    for i, rks in enumerate(rks_list):
        p = rk("run", path, rks, "--chain", rkg, "--input-file", inputs, "--check", "--json", "--iters", "2",
               check=0)
        r = json.loads(p.stdout)
        what = f"{name} {os.path.basename(rks)}"
        tc.assertTrue(r["output_equal"], (what, r))
        tc.assertEqual(r["grads_differing"], 0, (what, r["grads_differing_names"]))
        tc.assertTrue(r["grads_equal"], (what, r))
        if peak:
            peak(r, what)
        else:
            check_peak(tc, r, what=what)
        if i == 0:
            tc.assertLessEqual(r["measured_peak"], r["baseline_peak"], (what, r))
