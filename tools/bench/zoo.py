"""Driver of tools/bench/zoo (run by the Python that has torch): issue 21's
model zoo.  For each model of tools/models/zoo.py: export it, trace it, run
the plain PyTorch step beside the keep-everything schedule (the plain peak
P, keep-all ÷ plain, gradients equal), solve rockmate, rotor and sqrt(n) at
budgets that are fractions of P (`--budget F%` means F % of the plain step's
activation peak everywhere), record which fit and their predicted overhead,
the smallest budget rockmate reaches, and run rockmate at 50 % (measured peak
and overhead, gradients equal).  One training step (rkmate train, Adam) with
rockmate's schedule at 50 % (keep-all when none fits) against the plain step:
parameters and buffers (BatchNorm running statistics) equal bit for bit.
Optionally whole-graph Checkmate at 50 %.  The summary's "50 % where the
floor is not a weight gradient" leaves out the models where one node that
computes weight gradients needs more than 50 % by itself (`solve`'s
floor_cause grad_accumulation or weight_gradient_temporaries, floor_bytes
above half the plain peak): no schedule can reach 50 % there.
Writes zoo.md (the table), zoo.json (every number) and zoo.svg (predicted
overhead against budget, one panel per model)."""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(ROOT, "tools", "models", "zoo.py")


def sh(cmd, ok=(0,), timeout=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode not in ok:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def models_list():
    return sh([sys.executable, ZOO, "--list"]).stdout.split()


def first_models():
    """The issue's first 22 (zoo.py --list --first); none for another models script."""
    if os.path.abspath(ZOO) != os.path.join(ROOT, "tools", "models", "zoo.py"):
        return set()
    return set(sh([sys.executable, ZOO, "--list", "--first"]).stdout.split())


class Zoo:
    def __init__(self, a):
        self.a = a
        self.rk = a.rkmate
        self.dev = ["--device", a.device] if a.device else []  # trace, run and train on it

    def solve(self, chain, algo, budget, out, extra=()):
        """(json or None when infeasible, rc)."""
        # rockmate: --explain, so that a solve below the floor says what its peak holds (floor_explain)
        opts = ["--grid", self.a.grid, "--time-limit", self.a.time_limit, "--explain"] if algo == "rockmate" else []
        if algo == "rockmate" and self.a.grid_time:
            opts += ["--grid-time", self.a.grid_time]
        t = time.time()
        p = sh([self.rk, "solve", chain, "--budget", str(budget), "--algo", algo, "-o", out, "--json", "--quiet",
                *opts, *extra], ok=(0, 3), timeout=self.a.solve_timeout)
        r = json.loads(p.stdout) if p.stdout.strip() else {}
        r["wall_s"] = time.time() - t
        return (r if p.returncode == 0 else None), r

    def run(self, model, rks, chain, inputs):
        p = sh([self.rk, "run", model, rks, "--chain", chain, *inputs, "--check", "--json", "--iters",
                str(self.a.iters), *self.dev], ok=(0, 1))
        try:  # exit 1 with a report: a check failed; without one: the run failed (the model's row says so)
            return json.loads(p.stdout)
        except ValueError:
            raise RuntimeError(f"rkmate run failed ({p.returncode}): {rks}\n{p.stderr.strip()}") from None

    def train_equal(self, model, rks, chain):
        """One Adam step with the schedule and one plain, each in its own process:
        (params equal, buffers equal, how many distinct results each side gave
        when they were run again), or None.  Where the two differ, both run twice
        more and their most frequent results are compared: a float32 step whose
        matrix products MKL splits over threads can give one of a few results from
        one process to the next, the plain step's as the schedule's (docs/exec.md,
        "Limits")."""
        def one(extra):
            p = sh([self.rk, "train", model, *extra, "--chain", chain, "--steps", "1", "--json", "--quiet",
                    *self.dev], ok=(0, 1, 2))
            if p.returncode != 0:
                return None
            try:
                r = json.loads(p.stdout.strip().splitlines()[-1])
                return r["params_hash"], r["buffers_hash"]
            except (ValueError, IndexError, KeyError):  # not the summary line rkmate writes: no answer
                return None
        rk, plain = [one([rks])], [one(["--plain"])]
        if rk[0] is None or plain[0] is None:
            return None
        if rk[0] == plain[0]:
            return True, True, None
        for _ in range(2):
            rk.append(one([rks]))
            plain.append(one(["--plain"]))
        rk, plain = [h for h in rk if h], [h for h in plain if h]
        mode = lambda hs: collections.Counter(hs).most_common(1)[0][0]
        a, b = mode(rk), mode(plain)
        return a[0] == b[0], a[1] == b[1], {"schedule": len(set(rk)), "plain": len(set(plain)), "runs": len(rk)}

    @staticmethod
    def error_line(text):
        """The line of a failed command's stderr that says what went wrong: the last
        `...Error: ...` line (a traceback may end with frames after it, as
        torch.jit.save's does), else the last line."""
        lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
        said = [x for x in lines if re.search(r"(Error|Exception|error)\b:", x)]
        return (said or lines or ["(no message)"])[-1]

    def model(self, name):
        a = self.a
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        mp = os.path.join(d, name + ".pt")
        row = {"model": name}
        exp = [sys.executable, ZOO, "--model", name, "--out", mp, "--image", str(a.image), "--batch", str(a.batch),
               "--no-check"]
        try:
            sh(exp)
        except RuntimeError as e:
            row["error"] = "export: " + self.error_line(str(e))
            return row
        inputs = ["--input-file", mp[:-3] + ".inputs.pt"]
        chain = mp[:-3] + ".rkg"
        t = time.time()
        p = sh([self.rk, "trace", mp, *inputs, "-o", chain, "--json", "--quiet", "--runs", str(a.runs), *self.dev],
               ok=(0, 1, 2))
        if p.returncode != 0:
            row["error"] = "trace: " + self.error_line(p.stderr)
            return row
        st = json.loads(p.stdout)
        row.update(blocks=st["blocks"], classes=st["classes"], nodes=st["nodes_simplified"], trace_s=time.time() - t)
        keep, _ = self.solve(chain, "none", "1TB", chain + ".none.rks")
        r = self.run(mp, chain + ".none.rks", chain, inputs)
        keep_run = r
        P = r["baseline_peak"]
        row.update(plain=P, keep_all=r["measured_peak"], keep_all_pred=r["predicted_peak"],
                   keep_ratio=r["measured_peak"] / P, keep_time=r["predicted_time"],
                   keep_time_ratio=r["measured_time"] / r["baseline_time"],
                   plain_time=r["baseline_time"], grads_keep=r["grads_equal"],
                   plain_repeatable=r.get("plain_repeatable"),
                   nondeterministic=r.get("nondeterministic_kernels", ""))
        base_t = keep["predicted_time"]
        row["solves"] = {}
        for algo in a.algos:
            for f in a.fractions:
                b = int(P * f / 100)
                s, raw = self.solve(chain, algo, b, f"{chain}.{algo}.{f}.rks")
                row["solves"][f"{algo}@{f}"] = {
                    "fits": s is not None, "budget": b, "wall_s": raw["wall_s"],
                    # (ok*: no block plan fits; not a one-block chain's cheaper Checkmate schedule)
                    "whole_graph": bool(s and s.get("whole_graph") and
                                        s.get("whole_graph_why", "no block plan fits") == "no block plan fits"),
                    "overhead": (s["predicted_time"] / base_t - 1) * 100 if s else None,
                    "min_budget": raw.get("min_budget"), "raw": None if s else raw}
        # the smallest budget rockmate reaches (exact: what solve reports below
        # its floor; from the lowest infeasible fraction, else a solve at 1 byte)
        low = [v for k, v in row["solves"].items() if k.startswith("rockmate@") and not v["fits"]]
        raw = {"min_budget": low[0]["min_budget"], "floor_node": None} if low else None
        for k, v in sorted(row["solves"].items()):
            if k.startswith("rockmate@") and not v["fits"] and v.get("raw"):
                raw = v["raw"]
        if raw is None or not raw.get("min_budget"):
            _, raw = self.solve(chain, "rockmate", 1, chain + ".floor.rks")
        if raw.get("min_budget"):
            row["floor"] = raw["min_budget"]
            row["floor_pct"] = raw["min_budget"] / P * 100
            if raw.get("floor_node"):
                row["floor_node"] = raw["floor_node"]
                row["floor_cause"] = raw.get("floor_cause")
                row["floor_bytes"] = raw.get("floor_bytes")  # that node's own need: no schedule fits below
            e = raw.get("floor_explain")
            if e and e.get("node"):  # the smallest schedule's peak: the node's own need and what is held across it
                row["floor_peak"] = {"node": e["node"], "phase": e["phase"], "block": e["block"],
                                     "own": e["read"] + e["made"] + e["temporary"], "temporary": e["temporary"],
                                     "held": e["held"] + e["shape_only"]}
        s = row["solves"].get("rockmate@50")
        if s and s["fits"]:
            r = self.run(mp, f"{chain}.rockmate.50.rks", chain, inputs)
            row.update(rk50_measured=r["measured_peak"], rk50_pred_over=s["overhead"],
                       rk50_meas_over=(r["measured_time"] / r["baseline_time"] - 1) * 100,
                       grads_rk50=r["grads_equal"])
            if r.get("plain_repeatable") is False:
                row["plain_repeatable"] = False
            kernels = set(row["nondeterministic"].split()) | set(r.get("nondeterministic_kernels", "").split())
            row["nondeterministic"] = " ".join(sorted(kernels))
        st = self.train_equal(mp, f"{chain}.rockmate.50.rks" if s and s["fits"] else chain + ".none.rks", chain)
        if st is not None:
            row.update(train_params_equal=st[0], train_buffers_equal=st[1])
            if st[2]:
                row["train_varied"] = st[2]
        row.update(param_bytes=keep_run.get("param_bytes"), buffer_bytes=keep_run.get("buffer_bytes"))
        if a.checkmate:
            b = int(P * 0.5)
            s, raw = self.solve(chain, "checkmate", b, chain + ".cm.rks", ["--time-limit", a.time_limit])
            row["checkmate50"] = (s["predicted_time"] / base_t - 1) * 100 if s else None
        return row


def mib(x):
    return f"{x / 2**20:.1f}"


def grads_equal(r):
    """keep-all's gradients, and rockmate's at 50 % where it ran, equal the plain step's."""
    return bool(r["grads_keep"] and r.get("grads_rk50", True))


def not_repeatable(r):
    """The plain step gave other gradients when run twice, or ran kernels
    PyTorch says have no deterministic implementation on the device."""
    return r.get("plain_repeatable") is False or bool(r.get("nondeterministic"))


def table(rows, fractions, algos):
    fr = "/".join(str(f) for f in fractions)
    out = ["| model | blocks/classes | plain MiB (keep-all) | keep-all ÷ plain | rockmate " + fr +
           " % | rotor " + fr + " % | smallest rockmate budget | overhead @50 % predicted/measured, rockmate vs rotor vs sqrt |"
           " gradients | one training step: params, BN stats |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | — | — | — | — | — | — | {r['error']} | — | — |")
            continue
        fits = lambda al: "/".join(("ok*" if r["solves"][f"{al}@{f}"].get("whole_graph") else "ok")
                                   if r["solves"].get(f"{al}@{f}", {}).get("fits") else "no" for f in fractions)
        ov = lambda al: (f"{r['solves'][al + '@50']['overhead']:.1f}"
                         if r["solves"].get(al + "@50", {}).get("fits") else "none fits")
        meas = f"/{r['rk50_meas_over']:.1f}" if "rk50_meas_over" in r else ""
        floor = f"{r['floor_pct']:.0f} %" if "floor_pct" in r else "?"
        if r.get("floor_cause"):  # what of the floor node's bytes is largest
            what = {"inputs": "inputs", "outputs": "outputs", "temporaries": "temporaries",
                    "weight_gradient_temporaries": "weight-gradient temporaries",
                    "grad_accumulation": "weight-gradient accumulation"}.get(r["floor_cause"], r["floor_cause"])
            floor += f" ({what} of {r['floor_node']})"
        if r.get("floor_peak"):  # at the floor, the peak: the node's own need + what the schedule holds across it
            fp, pct = r["floor_peak"], lambda v: v / r["plain"] * 100
            floor += (f"; peak at {fp['node']} {fp['phase']}: own {pct(fp['own']):.0f} % "
                      f"(temporary {pct(fp['temporary']):.0f} %), held {pct(fp['held']):.0f} %")
        g = "equal" if grads_equal(r) else "**DIFFER**"
        if g != "equal" and not_repeatable(r):  # no bit-for-bit reference: the plain step differs from itself
            g += " (the plain step is not repeatable" + (
                f": {r['nondeterministic']} has no deterministic kernel" if r.get("nondeterministic") else "") + ")"
        if "train_params_equal" not in r:
            tr = "—"
        else:
            tr = ("equal" if r["train_params_equal"] else "**DIFFER**") + ", " + (
                ("equal" if r["train_buffers_equal"] else "**DIFFER**") if r.get("buffer_bytes") else "no buffers")
            v = r.get("train_varied")
            if v:  # the first pair differed: both ran again, their most frequent results compared
                tr += (f" (first pair differed; in {v['runs']} processes each the schedule gave {v['schedule']}, "
                       f"the plain step {v['plain']} distinct results: most frequent compared)")
        out.append(f"| {r['model']} | {r['blocks']}/{r['classes']} | {mib(r['plain'])} ({mib(r['keep_all'])}) | "
                   f"{r['keep_ratio']:.3f} | {fits('rockmate')} | {fits('rotor') if 'rotor' in algos else '—'} | "
                   f"{floor} | {ov('rockmate')}{meas} vs {ov('rotor') if 'rotor' in algos else '—'} vs "
                   f"{ov('sqrt') if 'sqrt' in algos else '—'} | {g} | {tr} |")
    out.append("")
    out.append("ok*: no plan over the blocks' options fits; rockmate's schedule is whole-graph Checkmate's "
               "(`--whole-graph`, default 4 s; docs/ilp.md). The smallest rockmate budget is its block plans'.")
    return "\n".join(out) + "\n"


def svg(rows, fractions, algos, path):
    """Predicted overhead (%) against budget (% of the plain peak), a panel per model."""
    rows = [r for r in rows if "error" not in r]
    cols, W, H, pad = 4, 220, 160, 30
    n = max(1, len(rows))
    nr = (n + cols - 1) // cols
    colors = {"rockmate": "#d62728", "rotor": "#1f77b4", "sqrt": "#2ca02c", "checkmate": "#9467bd"}
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * W}" height="{nr * H + 20}" '
          'font-family="sans-serif" font-size="10">']
    for i, r in enumerate(rows):
        x0, y0 = (i % cols) * W + pad, (i // cols) * H + 20
        w, h = W - pad - 10, H - pad - 20
        ovs = [s["overhead"] for s in r["solves"].values() if s["overhead"] is not None]
        top = max([10.0] + ovs) * 1.1
        el.append(f'<text x="{x0}" y="{y0 - 5}">{r["model"]}</text>')
        el.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#888"/>')
        el.append(f'<text x="{x0}" y="{y0 + h + 12}">{min(fractions)} %</text>'
                  f'<text x="{x0 + w - 25}" y="{y0 + h + 12}">{max(fractions)} %</text>'
                  f'<text x="{x0 - 28}" y="{y0 + 8}">{top:.0f} %</text>')
        lo, hi = min(fractions), max(fractions)
        for al in algos:
            pts = []
            for f in sorted(fractions):
                s = r["solves"].get(f"{al}@{f}")
                if s and s["overhead"] is not None:
                    px = x0 + (f - lo) / max(1, hi - lo) * w
                    py = y0 + h - s["overhead"] / top * h
                    pts.append(f"{px:.1f},{py:.1f}")
            if pts:
                el.append(f'<polyline fill="none" stroke="{colors.get(al, "#000")}" points="{" ".join(pts)}"/>')
                for p in pts:
                    x, y = p.split(",")
                    el.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{colors.get(al, "#000")}"/>')
    for j, al in enumerate(algos):
        el.append(f'<text x="{10 + j * 80}" y="{nr * H + 15}" fill="{colors.get(al, "#000")}">{al}</text>')
    el.append("</svg>")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(el) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rkmate", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "build-bench", "bench-zoo"))
    ap.add_argument("--models", default=None, help="comma-separated names (default: every model of the script)")
    ap.add_argument("--models-script", default=None,
                    help="the exporter with zoo.py's options and --list (default tools/models/zoo.py; "
                         "tools/models/unseen.py: issue 21's sweep of models nobody tuned for)")
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N for trace, run and train (default: rkmate's)")
    ap.add_argument("--image", type=int, default=96)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--iters", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1, help="rkmate trace --runs")
    ap.add_argument("--grid", default="6x6")
    ap.add_argument("--time-limit", default="2")
    ap.add_argument("--grid-time", default=None,
                    help="rockmate's --grid-time (wall-clock box, not deterministic; default: the solver's own "
                         "deterministic work box)")
    ap.add_argument("--solve-timeout", type=float, default=600, help="seconds before a solve is given up")
    ap.add_argument("--fractions", default="75,50,30")
    ap.add_argument("--algos", default="rockmate,rotor,sqrt")
    ap.add_argument("--checkmate", action="store_true", help="also whole-graph Checkmate at 50 %%")
    ap.add_argument("--from-json", action="store_true", help="only rewrite zoo.md and zoo.svg from OUT/zoo.json")
    a = ap.parse_args()
    a.fractions = [int(f) for f in a.fractions.split(",")]
    a.algos = a.algos.split(",")
    global ZOO
    if a.models_script:
        ZOO = os.path.abspath(a.models_script)
    os.makedirs(a.out, exist_ok=True)
    if a.from_json:
        with open(os.path.join(a.out, "zoo.json")) as f:
            rows = json.load(f)
        write_outputs(a, rows)
        return
    names = a.models.split(",") if a.models else models_list()
    z = Zoo(a)
    rows = []
    for n in names:
        t = time.time()
        try:
            row = z.model(n)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            row = {"model": n, "error": str(e).strip().splitlines()[-1][:200]}
        row["bench_s"] = time.time() - t
        rows.append(row)
        sys.stderr.write(f"zoo: {n} done in {row['bench_s']:.0f} s\n")
        with open(os.path.join(a.out, "zoo.json.tmp"), "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(os.path.join(a.out, "zoo.json.tmp"), os.path.join(a.out, "zoo.json"))
    write_outputs(a, rows)


def summary(rows, fractions, algos):
    """The issue's bars counted over the rows, for the first 22 models (zoo.py
    --list --first) and for those added after them, apart."""
    first = first_models()
    out = ["| set | models | keep-all ÷ plain ≤ 1.001 | gradients equal | one training step equal | "
           + " | ".join(f"rockmate at {f} %" for f in fractions)
           + " | 50 % where the floor is not a weight gradient | rockmate ≤ rotor (pairs) |",
           "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in fractions) + " | --- | --- |"]
    for label, keep in (("first 22", lambda n: n in first), ("added", lambda n: n not in first),
                        ("all", lambda n: True)):
        rs = [r for r in rows if keep(r["model"])]
        if not rs:
            continue
        ok = [r for r in rs if "error" not in r]
        fits = lambda r, al, f: bool(r["solves"].get(f"{al}@{f}", {}).get("fits"))
        keep_ok = sum(r["keep_ratio"] <= 1.001 for r in ok)
        grads = sum(grads_equal(r) for r in ok)
        unrepeatable = sum(not_repeatable(r) and not grads_equal(r) for r in ok)
        grads_text = f"{grads}/{len(ok)}" + (f" ({unrepeatable} differing: plain step not repeatable)"
                                              if unrepeatable else "")
        trained = [r for r in ok if "train_params_equal" in r]
        train_ok = sum(bool(r["train_params_equal"] and (r.get("train_buffers_equal", True)
                                                         or not r.get("buffer_bytes"))) for r in trained)
        by_f = [sum(fits(r, "rockmate", f) for r in ok) for f in fractions]
        # exempt: one node computing weight gradients needs more than half the
        # plain peak by itself (its accumulation into .grad, or the kernel's
        # temporaries of a node making no activation gradient)
        weight_floor = lambda r: (r.get("floor_cause") in ("grad_accumulation", "weight_gradient_temporaries")
                                  and (r.get("floor_bytes") or 0) > 0.5 * r["plain"])
        not_w = [r for r in ok if not weight_floor(r)]
        half = sum(fits(r, "rockmate", 50) for r in not_w)
        pairs = better = 0
        if "rotor" in algos:
            for r in ok:
                for f in fractions:
                    rk, ro = r["solves"].get(f"rockmate@{f}", {}), r["solves"].get(f"rotor@{f}", {})
                    if not ro.get("fits"):
                        continue
                    pairs += 1
                    better += bool(rk.get("fits") and rk["overhead"] <= ro["overhead"] + 1e-9)
        out.append(f"| {label} | {len(rs)} ({len(rs) - len(ok)} failed) | {keep_ok}/{len(ok)} | {grads_text} | "
                   f"{train_ok}/{len(trained)} | " + " | ".join(f"{c}/{len(ok)}" for c in by_f)
                   + f" | {half}/{len(not_w)} | " + (f"{better}/{pairs}" if "rotor" in algos else "—") + " |")
    return "\n".join(out) + "\n"


def write_outputs(a, rows):
    md = table(rows, a.fractions, a.algos) + "\n" + summary(rows, a.fractions, a.algos)
    with open(os.path.join(a.out, "zoo.md.tmp"), "w") as f:
        f.write(md)
    os.replace(os.path.join(a.out, "zoo.md.tmp"), os.path.join(a.out, "zoo.md"))
    svg(rows, a.fractions, a.algos + (["checkmate"] if a.checkmate else []), os.path.join(a.out, "zoo.svg"))
    print(md)


if __name__ == "__main__":
    main()
