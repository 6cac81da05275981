"""The differential test: generate, write MPS, solve with rkmate (CLI) and
HiGHS (highspy), compare, check rkmate's solution independently, save every
disagreement as an MPS file plus a JSON file with both answers."""
import argparse
import json
import math
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from . import generators
from .model import MpsStyle, check_solution, read_free_mps, read_solution, write_mps, write_solution

ALL_FAMILIES = list(generators.FAMILIES) + ["checkmate"]
OBJ_TOL = 1e-6
FEAS_TOL = 1e-6


def obj_close(a, b, tol=OBJ_TOL):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


# ----------------------------------------------------------------- cases

def build_case(family, seed, workdir, gen_path):
    """The case's model, its MPS file and the written column names."""
    path = os.path.join(workdir, f"{family}_{seed}.mps")
    info = {}
    if family == "checkmate":
        if not gen_path:
            raise RuntimeError("family checkmate needs milp-diff-gen (--gen)")
        p = subprocess.run([gen_path, str(seed), path], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"milp-diff-gen {seed}: {p.stderr.strip()}")
        info = json.loads(p.stdout.strip().splitlines()[-1])
        model = read_free_mps(path)
        names = list(model.cname)
    else:
        r = random.Random(f"{family}:{seed}")
        model = generators.FAMILIES[family](r)
        info["transforms"] = generators.transform(r, model)
        model.name = family.upper()[:8]
        style = MpsStyle(random.Random(f"{family}:{seed}:style"))
        names = write_mps(model, path, style)
        info["format"] = "fixed" if style.fixed else "free"
    info.update(model.kinds())
    info["sense"] = "max" if model.maximize else "min"
    return model, path, names, info


def run_rkmate(rkmate, mps, sol, seed, threads, time_limit):
    cmd = [rkmate, "milp", mps, "--json", "-o", sol, "--quiet", "--time-limit", str(time_limit)]
    if threads:
        cmd += ["--threads", str(threads)]
    if seed:
        cmd += ["--seed", str(seed)]
    t0 = time.perf_counter()
    res = {"cmd": cmd, "seed": seed}
    if os.path.exists(sol):
        os.unlink(sol)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * time_limit + 30)
    except subprocess.TimeoutExpired:
        res.update(status="hang", rc=None, wall_s=time.perf_counter() - t0,
                   stderr=f"no answer {2 * time_limit + 30} s after a --time-limit of {time_limit} s")
        return res
    res["wall_s"] = time.perf_counter() - t0
    res["rc"] = p.returncode
    res["stderr"] = p.stderr[-2000:]
    js = None
    for ln in reversed(p.stdout.splitlines()):
        if ln.startswith("{"):
            try:
                js = json.loads(ln)
            except ValueError:
                pass
            break
    if js is None:
        res["status"] = "crash" if p.returncode < 0 or p.returncode not in (0, 1, 3) else "error"
        res["stdout"] = p.stdout[-2000:]
        return res
    res.update(js)
    if os.path.exists(sol):
        try:
            res["solution"] = read_solution(sol)
        except (ValueError, OSError) as e:
            res["solution_error"] = str(e)
    return res


def judge_rkmate(model, names, rk, hs):
    """Problems of one rkmate answer against HiGHS's (empty list: agree).
    Returns (verdict, problems) with verdict agree, disagree or unresolved."""
    probs = []
    st = rk.get("status")
    if st in ("hang", "crash", "error") or st not in ("optimal", "infeasible", "unbounded", "time_limit"):
        return "disagree", [f"rkmate {st} (exit {rk.get('rc')}): {rk.get('stderr', '').strip()[-300:]}"]
    # rkmate's own solution, whatever HiGHS says
    x = None
    if rk.get("solution") is not None:
        sol = rk["solution"]
        missing = [nm for nm in names if nm not in sol]
        if missing:
            probs.append(f"solution file lacks {len(missing)} columns (first {missing[0]!r})")
        else:
            x = [sol[nm] for nm in names]
    if st == "optimal" or (st == "time_limit" and x is not None):
        if x is None:
            probs.append(f"status {st} but no solution written: {rk.get('solution_error', rk.get('stderr', '').strip()[-200:])}")
        else:
            bad = check_solution(model, x, FEAS_TOL)
            if bad:
                probs.append(f"rkmate's solution is infeasible: {'; '.join(bad[:4])}" +
                             (f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""))
            ox = model.objective_of(x)
            if rk.get("objective") is None or not obj_close(ox, rk["objective"]):
                probs.append(f"reported objective {rk.get('objective')} but the solution's is {ox!r}")
    hst = hs["status"]
    sign = -1.0 if model.maximize else 1.0  # compare as minimisation
    x_ok = x is not None and not any("infeasible" in p_ or "objective" in p_ for p_ in probs)
    if st == "time_limit" or hst in ("time_limit", "error"):
        # one side unresolved: still check what can be checked
        if st == "time_limit" and hst == "optimal":
            opt = hs["objective"]
            tol = OBJ_TOL * max(1.0, abs(opt))
            if x_ok and sign * rk["objective"] < sign * opt - tol:
                probs.append(f"rkmate's incumbent {rk['objective']!r} beats HiGHS's optimum {opt!r}")
            b = rk.get("bound")
            if b is not None and sign * b > sign * opt + tol:
                probs.append(f"rkmate's bound {b!r} is beyond the optimum {opt!r}")
        if st == "time_limit" and hst == "infeasible" and x_ok:
            probs.append("HiGHS says infeasible, rkmate holds a feasible point")
        if hst == "time_limit" and st == "optimal" and rk.get("objective") is not None:
            v = rk["objective"]
            hb, hi = hs.get("bound"), hs.get("objective")
            tol = OBJ_TOL * max(1.0, abs(v))
            if hb is not None and math.isfinite(hb) and sign * v < sign * hb - tol:
                probs.append(f"rkmate's optimum {v!r} beats HiGHS's proven bound {hb!r}")
            if hi is not None and math.isfinite(hi) and hs.get("x_ok") and sign * v > sign * hi + tol:
                probs.append(f"rkmate's optimum {v!r} is worse than HiGHS's incumbent {hi!r}")
        if hst == "time_limit" and st == "infeasible" and hs.get("x_ok"):
            probs.append("rkmate says infeasible, HiGHS holds a feasible point")
        if hst == "error" and probs:
            probs.append(f"HiGHS: {hs.get('note')}")
        return ("disagree" if probs else "unresolved"), probs
    if st != hst:
        probs.append(f"status: rkmate {st}, HiGHS {hst}")
    elif st == "optimal":
        if rk.get("objective") is None or not obj_close(rk["objective"], hs["objective"]):
            probs.append(f"objective: rkmate {rk.get('objective')!r}, HiGHS {hs['objective']!r}")
        b = rk.get("bound")
        if b is not None:
            tol = OBJ_TOL * max(1.0, abs(hs["objective"]))
            if sign * b > sign * hs["objective"] + tol:
                probs.append(f"rkmate's bound {b!r} is beyond the optimum {hs['objective']!r}")
    return ("disagree" if probs else "agree"), probs


def run_case(task):
    family, seed, opts = task
    generators.SCALE = opts.get("scale", 1.0)
    t0 = time.perf_counter()
    out = {"family": family, "seed": seed}
    work = tempfile.mkdtemp(prefix="milpdiff_")
    try:
        try:
            model, path, names, info = build_case(family, seed, work, opts["gen"])
        except Exception as e:  # noqa: BLE001 - a generator failure is a harness failure
            out.update(verdict="gen-error", problems=[f"generator: {e}"], time_s=time.perf_counter() - t0)
            return out
        out["info"] = info
        from . import oracle
        hs = oracle.solve(model, opts["time_limit"])
        out["highs"] = {k: v for k, v in hs.items() if k != "x"}
        if hs.get("x") is not None:
            bad = check_solution(model, hs["x"], FEAS_TOL)
            hs["x_ok"] = not bad
            if bad:
                out["highs"]["solution_violations"] = bad[:5]
        rks, verdicts, problems = [], [], []
        for s in range(max(1, opts["seeds"])):
            sol = os.path.join(work, f"sol{s}.txt")
            rk = run_rkmate(opts["rkmate"], path, sol, s, opts["threads"], opts["time_limit"])
            v, p = judge_rkmate(model, names, rk, hs)
            rk["verdict"], rk["problems"] = v, p
            rks.append(rk)
            verdicts.append(v)
            problems += [f"seed {s}: {q}" for q in p]
        if "disagree" in verdicts:
            alt = highs_refuted(model, names, rks, hs, opts["time_limit"])
            if alt is not None:
                # HiGHS's default answer is refuted by a certified point of
                # rkmate's, and HiGHS with other settings agrees with rkmate
                out["highs_alternative"] = {k: v for k, v in alt.items() if k != "x"}
                verdicts = ["highs-wrong"]
        verdict = ("highs-wrong" if "highs-wrong" in verdicts else "disagree" if "disagree" in verdicts
                   else "unresolved" if "unresolved" in verdicts else "agree")
        out["verdict"] = verdict
        out["problems"] = problems
        out["rkmate"] = [{k: v for k, v in rk.items() if k not in ("solution", "cmd")} for rk in rks]
        out["rk_status"] = rks[0].get("status")
        out["time_s"] = time.perf_counter() - t0
        if verdict in ("disagree", "highs-wrong"):
            save_case(opts["save"], family, seed, path, names, model, hs, rks, out, opts)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def highs_refuted(model, names, rks, hs, time_limit):
    """When rkmate claims better than HiGHS (a better optimum, or a point
    where HiGHS says infeasible) and rkmate's point is certified (integers
    rounded and fixed, the rest re-solved, every row to 1e-9), HiGHS is run
    with other settings; the first answer every rkmate run agrees with is
    returned (HiGHS's default answer was wrong), else None."""
    from . import oracle
    sign = -1.0 if model.maximize else 1.0
    refuted = False
    for rk in rks:
        if rk.get("status") not in ("optimal", "time_limit") or not rk.get("solution"):
            continue
        if any(nm not in rk["solution"] for nm in names):
            continue
        cert = oracle.certify_point(model, [rk["solution"][nm] for nm in names])
        if cert is None:
            continue
        v = cert[0]
        if hs["status"] == "infeasible":
            refuted = True
        elif hs["status"] == "optimal" and sign * v < sign * hs["objective"] - OBJ_TOL * max(1.0, abs(v)):
            refuted = True
    if not refuted:
        return None
    for var in oracle.VARIANTS:
        alt = oracle.solve(model, time_limit, variant=var)
        if alt["status"] in ("optimal", "infeasible", "unbounded") and \
                all(judge_rkmate(model, names, rk, alt)[0] == "agree" for rk in rks):
            return alt
    return None


def save_case(save_dir, family, seed, path, names, model, hs, rks, out, opts):
    os.makedirs(save_dir, exist_ok=True)
    name = f"{family}_{seed}"
    dst = os.path.join(save_dir, name + ".mps")
    shutil.copyfile(path, dst)
    if hs.get("x") is not None:
        write_solution(os.path.join(save_dir, name + ".highs.sol"), names, hs["x"])
    for rk in rks:
        if rk.get("solution") is not None:
            with open(os.path.join(save_dir, f"{name}.rkmate-seed{rk['seed']}.sol"), "w") as f:
                for nm in names:
                    if nm in rk["solution"]:
                        f.write(f"{nm} {rk['solution'][nm]!r}\n")
    rec = {
        "name": name,
        "family": family,
        "seed": seed,
        "info": out.get("info"),
        "sense": "max" if model.maximize else "min",
        "verdict": out["verdict"],
        "problems": out["problems"],
        "highs": out["highs"],
        "highs_alternative": out.get("highs_alternative"),
        "rkmate": out["rkmate"],
        "rkmate_command": " ".join(["rkmate", "milp", dst] + rk_args(rks[0]["cmd"])),
        "rkmate_commands": [" ".join(["rkmate", "milp", dst] + rk_args(rk["cmd"])) for rk in rks
                            if rk.get("verdict") == "disagree"],
        "reproduce": f"tools/bench/milp-diff --case {family}:{seed} --rkmate {opts['rkmate']}"
                     + (f" --seeds-per-instance {opts['seeds']}" if opts["seeds"] > 1 else "")
                     + (f" --threads {opts['threads']}" if opts["threads"] != 1 else "")
                     + (f" --scale {opts['scale']:g}" if opts.get("scale", 1.0) != 1.0 else ""),
    }
    with open(os.path.join(save_dir, name + ".json"), "w") as f:
        json.dump(rec, f, indent=1, default=str)
        f.write("\n")


def rk_args(cmd):
    a = list(cmd[3:])
    if "-o" in a:
        k = a.index("-o")
        a[k + 1] = "SOLUTION.txt"
    return a


# ----------------------------------------------------------------- main

def find_rkmate(root):
    for env in ("RKMATE",):
        if os.environ.get(env):
            return os.environ[env]
    broot = os.environ.get("RKMATE_BUILD_ROOT")
    cands = ([os.path.join(broot, "tools/rkmate/rkmate")] if broot else []) + [
        os.path.join(root, d, "tools/rkmate/rkmate") for d in ("build", "build-release", "build-diff")]
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("rkmate")


def find_gen(rkmate, root):
    if os.environ.get("RKMATE_MILP_DIFF_GEN"):
        return os.environ["RKMATE_MILP_DIFF_GEN"]
    cands = []
    if rkmate:
        b = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(rkmate))))
        cands.append(os.path.join(b, "tools/bench/milp-diff-gen/milp-diff-gen"))
    if os.environ.get("RKMATE_BUILD_ROOT"):
        cands.append(os.path.join(os.environ["RKMATE_BUILD_ROOT"], "tools/bench/milp-diff-gen/milp-diff-gen"))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return None


def parse_args(argv, root):
    ap = argparse.ArgumentParser(
        prog="milp-diff",
        description="Differential test of `rkmate milp` against HiGHS on generated MILPs "
                    "(families: " + ", ".join(ALL_FAMILIES) + ").")
    ap.add_argument("--count", type=int, default=1200, help="total cases, spread evenly over the families (default 1200)")
    ap.add_argument("--families", default=",".join(ALL_FAMILIES), help="comma-separated families (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="base seed (default 0): case k of a family has seed SEED*1000000+k")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--rkmate", default=None, help="rkmate binary (default: $RKMATE, then build*/tools/rkmate/rkmate)")
    ap.add_argument("--gen", default=None, help="milp-diff-gen binary (family checkmate; default: beside the rkmate build)")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per solve, both solvers (default 20)")
    ap.add_argument("--threads", type=int, default=1,
                    help="--threads passed to rkmate (default 1, so that --jobs bounds the cores used; "
                         "0: rkmate's own default, all cores)")
    ap.add_argument("--seeds-per-instance", type=int, default=1, metavar="K",
                    help="also run rkmate with --seed 1..K-1 on every instance; each must agree")
    ap.add_argument("--save", default=None, help="folder for disagreements (default milp-diff-failures/ in the source root)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the upper ends of the generators' size ranges (default 1; 2: larger, slower cases)")
    ap.add_argument("--case", action="append", default=[], metavar="FAMILY:SEED",
                    help="run just these cases (repeatable), printing their details")
    ap.add_argument("--extra-case", action="append", default=[], metavar="FAMILY:SEED",
                    help="run these cases too, besides the --count generated ones (known regressions)")
    ap.add_argument("--report", default=None, help="write the per-family counts as JSON to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a = ap.parse_args(argv)
    a.rkmate = a.rkmate or find_rkmate(root)
    if not a.rkmate or not os.access(a.rkmate, os.X_OK):
        ap.error("no rkmate binary found: build it (ninja -C build) or pass --rkmate")
    a.rkmate = os.path.abspath(a.rkmate)
    a.gen = a.gen or find_gen(a.rkmate, root)
    a.save = a.save or os.path.join(root, "milp-diff-failures")
    fams = [f for f in a.families.split(",") if f]
    for f in fams:
        if f not in ALL_FAMILIES:
            ap.error(f"unknown family '{f}' (known: {', '.join(ALL_FAMILIES)})")
    if "checkmate" in fams and not a.gen:
        print("milp-diff: milp-diff-gen not found (build tools/bench/milp-diff-gen or pass --gen): "
              "family checkmate left out", file=sys.stderr)
        fams.remove("checkmate")
    a.fams = fams
    return a


def tasks_of(a):
    opts = {"rkmate": a.rkmate, "gen": a.gen, "time_limit": a.time_limit, "threads": a.threads,
            "seeds": a.seeds_per_instance, "save": a.save, "scale": a.scale}
    def parse(cases):
        out = []
        for c in cases:
            fam, _, s = c.partition(":")
            if fam not in ALL_FAMILIES or not s.isdigit():
                raise SystemExit(f"milp-diff: a case is FAMILY:SEED, got '{c}'")
            out.append((fam, int(s), opts))
        return out

    if a.case:
        return parse(a.case)
    nf = len(a.fams)
    out = []
    for k in range(a.count):
        fam = a.fams[k % nf]
        out.append((fam, a.seed * 1000000 + k // nf, opts))
    return out + [t for t in parse(a.extra_case) if t[:2] not in {o[:2] for o in out}]


def main(argv, root):
    a = parse_args(argv, root)
    tasks = tasks_of(a)
    t0 = time.time()
    stats = {}
    disagreements = []
    unresolved = []
    highs_wrong = []
    gen_errors = []
    progress = not a.quiet and sys.stderr.isatty()

    def account(res):
        if a.case and not a.quiet:
            print(json.dumps(res, indent=1, default=str))
        f = res["family"]
        s = stats.setdefault(f, {"cases": 0, "agree": 0, "disagree": 0, "unresolved": 0, "time_s": 0.0,
                                 "optimal": 0, "infeasible": 0, "unbounded": 0, "searched": 0,
                                 "highs-wrong": 0})
        s["cases"] += 1
        s["time_s"] += res.get("time_s", 0.0)
        v = res["verdict"]
        if v == "gen-error":
            gen_errors.append(res)
            s["disagree"] += 1
            return
        s[v] += 1
        rk0 = (res.get("rkmate") or [{}])[0]
        if (rk0.get("nodes") or 0) > 1:
            s["searched"] += 1
        hst = res.get("highs", {}).get("status")
        if hst in ("optimal", "infeasible", "unbounded"):
            s[hst] += 1
        if v == "disagree":
            disagreements.append(res)
        if v == "unresolved":
            unresolved.append(res)
        if v == "highs-wrong":
            highs_wrong.append(res)

    if a.jobs > 1 and len(tasks) > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(a.jobs) as pool:
            for k, res in enumerate(pool.imap_unordered(run_case, tasks, chunksize=1)):
                account(res)
                _progress(progress, k + 1, len(tasks), len(disagreements), t0, res)
    else:
        for k, t in enumerate(tasks):
            res = run_case(t)
            account(res)
            _progress(progress, k + 1, len(tasks), len(disagreements), t0, res)
    if progress:
        sys.stderr.write("\n")
    wall = time.time() - t0
    print_report(stats, wall, a)
    for res in unresolved:
        rs = ", ".join(str(r.get("status")) for r in res.get("rkmate", []))
        print(f"unresolved {res['family']}:{res['seed']}: rkmate {rs}, HiGHS {res.get('highs', {}).get('status')}"
              f" ({res.get('time_s', 0):.1f} s)")
    for res in highs_wrong:
        alt = res.get("highs_alternative", {})
        print(f"HiGHS wrong {res['family']}:{res['seed']}: HiGHS (default settings) {res['highs'].get('status')} "
              f"{res['highs'].get('objective')}, rkmate's point certified; HiGHS {alt.get('variant')} "
              f"{alt.get('status')} {alt.get('objective')} agrees with rkmate (saved)")
    for res in disagreements + gen_errors:
        print(f"DISAGREE {res['family']}:{res['seed']}: " + " | ".join(res.get("problems", []))[:600])
        if res["verdict"] != "gen-error":
            print(f"   saved: {os.path.join(a.save, res['family'] + '_' + str(res['seed']))}.mps/.json")
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"wall_s": wall, "families": stats, "rkmate": a.rkmate, "count": len(tasks),
                       "seed": a.seed, "seeds_per_instance": a.seeds_per_instance, "threads": a.threads,
                       "disagreements": [f"{r['family']}:{r['seed']}" for r in disagreements + gen_errors]},
                      f, indent=1)
            f.write("\n")
    return 1 if (disagreements or gen_errors) else 0


def _progress(on, k, n, nd, t0, res):
    if not on:
        return
    sys.stderr.write(f"\r  {k}/{n} cases, {nd} disagreements, {time.time() - t0:.0f} s  ")
    sys.stderr.flush()


def print_report(stats, wall, a):
    hdr = f"{'family':<10} {'cases':>6} {'agree':>6} {'disagree':>8} {'unresolved':>10} {'opt':>6} {'infeas':>6} {'unbd':>5} {'nodes>1':>7} {'hs-wrong':>8} {'time_s':>8}"
    print(f"milp-diff: rkmate {a.rkmate}, {a.seeds_per_instance} rkmate seed(s) per instance, "
          f"{a.threads or 'default'} rkmate thread(s), time limit {a.time_limit:g} s, {a.jobs} job(s)"
          + (f", sizes x{a.scale:g}" if a.scale != 1.0 else ""))
    print(hdr)
    tot = {k: 0 for k in ("cases", "agree", "disagree", "unresolved", "optimal", "infeasible", "unbounded", "searched",
                          "highs-wrong")}
    tt = 0.0
    for f in ALL_FAMILIES:
        if f not in stats:
            continue
        s = stats[f]
        print(f"{f:<10} {s['cases']:>6} {s['agree']:>6} {s['disagree']:>8} {s['unresolved']:>10} "
              f"{s['optimal']:>6} {s['infeasible']:>6} {s['unbounded']:>5} {s['searched']:>7} {s['highs-wrong']:>8} {s['time_s']:>8.1f}")
        for k in tot:
            tot[k] += s[k]
        tt += s["time_s"]
    print(f"{'total':<10} {tot['cases']:>6} {tot['agree']:>6} {tot['disagree']:>8} {tot['unresolved']:>10} "
          f"{tot['optimal']:>6} {tot['infeasible']:>6} {tot['unbounded']:>5} {tot['searched']:>7} {tot['highs-wrong']:>8} {tt:>8.1f}")
    print(f"(opt/infeas/unbd: HiGHS's status; nodes>1: rkmate branched; hs-wrong: HiGHS's default answer refuted "
          f"by a certified point of rkmate's and HiGHS with other settings agreeing with rkmate (not a failure); "
          f"time_s: both solvers and the generator, summed over cases; "
          f"wall {wall:.1f} s)")
