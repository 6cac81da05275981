"""HiGHS (highspy) as the oracle: the model is passed as arrays (never
through HiGHS's MPS reader), one thread, gaps 1e-9.  "Infeasible or
unbounded" (and "unbounded", which HiGHS may say from presolve alone) is
settled by solving the same problem with a zero objective: feasible means
unbounded (rational data: a feasible MILP whose relaxation has a ray is
unbounded), infeasible means infeasible."""
import math
import os
import sys
import time

import numpy as np

import highspy

from .model import INF


def _lp(model, zero_objective=False):
    lp = highspy.HighsLp()
    n, m = model.n, model.m
    lp.num_col_ = n
    lp.num_row_ = m
    big = highspy.kHighsInf

    def f(v):
        return big if v == INF else (-big if v == -INF else v)

    lp.col_cost_ = np.array([0.0] * n if zero_objective else model.cost, dtype=np.float64)
    lp.col_lower_ = np.array([f(v) for v in model.lb], dtype=np.float64)
    lp.col_upper_ = np.array([f(v) for v in model.ub], dtype=np.float64)
    lp.row_lower_ = np.array([f(v) for v in model.rlo], dtype=np.float64)
    lp.row_upper_ = np.array([f(v) for v in model.rhi], dtype=np.float64)
    lp.offset_ = 0.0 if zero_objective else model.obj_const
    lp.sense_ = highspy.ObjSense.kMaximize if model.maximize and not zero_objective else highspy.ObjSense.kMinimize
    cols = [[] for _ in range(n)]
    for i, d in enumerate(model.rcoef):
        for j, v in d.items():
            cols[j].append((i, v))
    start, index, value = [0], [], []
    for j in range(n):
        for i, v in sorted(cols[j]):
            index.append(i)
            value.append(v)
        start.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=np.float64)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = m
    if any(model.integer):
        lp.integrality_ = [highspy.HighsVarType.kInteger if t else highspy.HighsVarType.kContinuous
                           for t in model.integer]
    return lp


_banner_done = False


def _new_highs():
    """A Highs object; the first one of a process prints HiGHS's banner on
    file descriptor 1, which is sent to /dev/null (our stdout is the report)."""
    global _banner_done
    if _banner_done:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as dn:
            os.dup2(dn.fileno(), 1)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _banner_done = True
    return h


def _run(model, time_limit, zero_objective=False, variant=None):
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("random_seed", 0)
    for k, v in (variant or {}).items():
        h.setOptionValue(k, v)
    st = h.passModel(_lp(model, zero_objective))
    if st == highspy.HighsStatus.kError:
        raise RuntimeError("HiGHS rejected the model")
    h.run()
    ms = h.getModelStatus()
    info = h.getInfo()
    x = None
    sol = h.getSolution()
    if sol.value_valid:
        x = list(sol.col_value)
    return h, ms, info, x


# HiGHS's own answer is checked too: when rkmate's answer disagrees and
# rkmate's point is certified (certify_point), HiGHS is run again with these
# settings; one of them agreeing with rkmate means HiGHS's default answer was
# wrong (counted as "HiGHS wrong", not as rkmate's disagreement).
VARIANTS = [{"presolve": "off"}, {"random_seed": 1}, {"random_seed": 2}]


def certify_point(model, x, time_limit=10.0):
    """A point of the model built from x: the integer columns fixed at x
    rounded, the continuous ones re-solved by HiGHS's LP; returns (objective,
    point) when that point satisfies every bound and row to 1e-9, else None."""
    from .model import Model, check_solution
    fixed = Model(model.name)
    fixed.__dict__.update({k: (list(v) if isinstance(v, list) else v) for k, v in model.__dict__.items()})
    for j in range(model.n):
        if model.integer[j]:
            if not math.isfinite(x[j]):
                return None
            v = float(round(x[j]))
            if v < model.lb[j] or v > model.ub[j]:
                return None
            fixed.lb[j] = fixed.ub[j] = v
    fixed.integer = [False] * model.n
    try:
        _, ms, info, y = _run(fixed, time_limit)
    except Exception:  # noqa: BLE001
        return None
    if ms != highspy.HighsModelStatus.kOptimal or y is None:
        return None
    y = [float(round(v)) if model.integer[j] else v for j, v in enumerate(y)]
    if check_solution(model, y, 1e-9):
        return None
    return model.objective_of(y), y


def solve(model, time_limit=20.0, variant=None):
    """Returns {status, objective, bound, x, time_s, note}; status is one of
    optimal, infeasible, unbounded, time_limit, error."""
    t0 = time.perf_counter()
    MS = highspy.HighsModelStatus
    try:
        h, ms, info, x = _run(model, time_limit, variant=variant)
    except Exception as e:  # noqa: BLE001 - the oracle failing is reported, not raised
        return {"status": "error", "objective": None, "bound": None, "x": None,
                "time_s": time.perf_counter() - t0, "note": f"HiGHS failed: {e}"}
    note = ms.name if hasattr(ms, "name") else str(ms)
    res = {"status": "error", "objective": None, "bound": None, "x": None, "note": note}
    if ms == MS.kOptimal:
        res.update(status="optimal", objective=info.objective_function_value,
                   bound=info.mip_dual_bound if any(model.integer) else info.objective_function_value,
                   x=x)
    elif ms == MS.kInfeasible:
        res["status"] = "infeasible"
    elif ms in (MS.kUnbounded, MS.kUnboundedOrInfeasible):
        left = max(1.0, time_limit - (time.perf_counter() - t0))
        try:
            _, ms2, _, _ = _run(model, left, zero_objective=True, variant=variant)
        except Exception as e:  # noqa: BLE001
            ms2 = None
            res["note"] += f"; feasibility run failed: {e}"
        if ms2 == MS.kOptimal:
            res["status"] = "unbounded"
            res["note"] += "; zero-objective run feasible"
        elif ms2 == MS.kInfeasible:
            res["status"] = "infeasible"
            res["note"] += "; zero-objective run infeasible"
        elif ms2 == MS.kTimeLimit:
            res["status"] = "time_limit"
        else:
            res["note"] += f"; zero-objective run {ms2}"
    elif ms == MS.kTimeLimit:
        res["status"] = "time_limit"
        if x is not None and info.primal_solution_status == 2 and math.isfinite(info.objective_function_value):
            res["objective"] = info.objective_function_value
            res["x"] = x
        if any(model.integer) and math.isfinite(info.mip_dual_bound):
            res["bound"] = info.mip_dual_bound
    res["time_s"] = time.perf_counter() - t0
    if variant:
        res["variant"] = variant
    return res
