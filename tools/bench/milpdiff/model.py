"""A small MILP model, its MPS writer (free or fixed MPS, with the many ways
the format can say the same thing), a free-MPS reader for files written by
rk_mps_write, and an independent check of a solution.

The model is the ground truth of a case: HiGHS gets it through passModel
(never through its own MPS reader), rkmate gets the MPS text.  So a
difference between the two also tests rkmate's reading of the file."""
import math

INF = math.inf


class Model:
    def __init__(self, name="P"):
        self.name = name
        self.maximize = False
        self.obj_const = 0.0
        # columns
        self.cname, self.lb, self.ub, self.cost, self.integer = [], [], [], [], []
        # rows: coefficient dicts {col: value}
        self.rname, self.rlo, self.rhi, self.rcoef = [], [], [], []

    @property
    def n(self):
        return len(self.cname)

    @property
    def m(self):
        return len(self.rname)

    def add_col(self, lb=0.0, ub=INF, cost=0.0, integer=False, name=None):
        j = self.n
        self.cname.append(name or f"x{j}")
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.cost.append(float(cost))
        self.integer.append(bool(integer))
        return j

    def add_row(self, coefs, lo=-INF, hi=INF, name=None):
        """coefs: {col: value} or list of (col, value); zero entries dropped,
        repeated columns summed."""
        d = {}
        items = coefs.items() if isinstance(coefs, dict) else coefs
        for j, v in items:
            d[j] = d.get(j, 0.0) + float(v)
        d = {j: v for j, v in d.items() if v != 0}
        i = self.m
        self.rname.append(name or f"r{i}")
        self.rlo.append(float(lo))
        self.rhi.append(float(hi))
        self.rcoef.append(d)
        return i

    def objective_of(self, x):
        return self.obj_const + math.fsum(c * v for c, v in zip(self.cost, x) if c)

    def kinds(self):
        return {"cols": self.n, "rows": self.m, "int": sum(self.integer),
                "nnz": sum(len(r) for r in self.rcoef)}


# ------------------------------------------------------------------ writer

def num(v):
    """Shortest text that reads back to exactly v."""
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    r = repr(float(v))
    return r


class MpsStyle:
    """How to write: chosen per case from a random generator, so that every
    form the reader must accept appears somewhere."""

    def __init__(self, rnd=None):
        self.fixed = False
        self.spaces_in_names = False
        self.two_per_line = False
        self.objsense_same_line = False
        self.objsense_word = "MAX"
        self.binary_without_bounds = False
        self.use_bv = False
        self.use_li_ui = False
        self.use_up_negative = False   # UP < 0 alone: lower bound -inf
        self.use_mi_pl = True
        self.range_forms = True
        self.set_names = ("RHS", "RNG", "BND")
        self.comments = False
        self.lower_case_bounds = False
        self.int_via_bounds = False
        if rnd is None:
            return
        self.fixed = rnd.random() < 0.25
        self.spaces_in_names = self.fixed and rnd.random() < 0.2
        self.two_per_line = rnd.random() < 0.4
        self.objsense_same_line = rnd.random() < 0.3
        self.objsense_word = rnd.choice(["MAX", "MAX", "MAXIMIZE"])
        self.binary_without_bounds = rnd.random() < 0.5
        self.use_bv = rnd.random() < 0.4
        self.use_li_ui = rnd.random() < 0.5
        self.use_up_negative = rnd.random() < 0.5
        self.comments = rnd.random() < 0.3
        self.lower_case_bounds = False  # not standard: HiGHS and CPLEX refuse it
        self.int_via_bounds = rnd.random() < 0.3
        self.set_names = rnd.choice([("RHS", "RNG", "BND"), ("B", "R", "BOUND"), ("rhs1", "rng1", "bnd1")])
        self.rnd = rnd

    def choice(self, seq):
        return self.rnd.choice(seq) if hasattr(self, "rnd") else seq[0]

    def coin(self, p):
        return self.rnd.random() < p if hasattr(self, "rnd") else False


def _names(model, style):
    """Column and row names as written (unique, fit fixed MPS's 8 characters)."""
    if style.fixed:
        cn = [("C %d" if style.spaces_in_names and j % 3 == 1 else "C%d") % j for j in range(model.n)]
        rn = [("R %d" if style.spaces_in_names and i % 4 == 2 else "R%d") % i for i in range(model.m)]
        if max(map(len, cn + rn), default=0) > 8:
            raise ValueError("too many columns/rows for fixed MPS names")
        return cn, rn, "COST"
    return list(model.cname), list(model.rname), "obj"


def _fixed_line(f1, f2, f3, f4, f5="", f6=""):
    """Fixed MPS: fields at columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61."""
    if len(f4) > 12 or len(f6) > 12 or len(f2) > 8 or len(f3) > 8 or len(f5) > 8:
        raise ValueError("field too wide for fixed MPS")
    s = " " + f"{f1:<2}" + " " + f"{f2:<8}" + "  " + f"{f3:<8}" + "  " + f"{f4:>12}"
    if f5:
        s += "   " + f"{f5:<8}" + "  " + f"{f6:>12}"
    return s.rstrip()


def write_mps(model, path, style=None):
    """Write model as MPS; returns the written column names (in order), which
    rkmate's -o solution file uses.  A model that does not fit fixed MPS
    (long numbers, many names) is written free."""
    style = style or MpsStyle()
    if style.fixed:
        try:
            return _write_mps(model, path, style)
        except ValueError:
            style.fixed = False
            style.spaces_in_names = False
    return _write_mps(model, path, style)


def _write_mps(model, path, style):
    cn, rn, objn = _names(model, style)
    rb, rgb, bb = style.set_names
    out = []

    def line(f1, f2, f3="", f4="", f5="", f6=""):
        if style.fixed:
            out.append(_fixed_line(f1, f2, f3, f4, f5, f6))
        else:
            out.append("    " + "  ".join(x for x in (f1, f2, f3, f4, f5, f6) if x != ""))

    if style.comments:
        out.append("* generated by tools/bench/milp-diff")
    out.append(f"NAME          {model.name}" if not style.fixed else f"NAME          {model.name[:8]}")
    if model.maximize:
        if style.objsense_same_line:
            out.append(f"OBJSENSE {style.objsense_word}")
        else:
            out.append("OBJSENSE")
            out.append(f"    {style.objsense_word}")
    elif style.coin(0.1):
        out.append("OBJSENSE")
        out.append("    MIN")
    out.append("ROWS")
    out.append(f" N  {objn}")
    # row type and RHS / RANGES entries
    rtype, rhs, rng = [], [], []
    for i in range(model.m):
        lo, hi = model.rlo[i], model.rhi[i]
        if lo == hi:
            t, r, g = "E", lo, None
        elif lo == -INF and hi == INF:
            t, r, g = "N", None, None
        elif lo == -INF:
            t, r, g = "L", hi, None
        elif hi == INF:
            t, r, g = "G", lo, None
        else:
            # the row reads back as rhs +- |R|: the model takes exactly that
            # (w = hi - lo may round), so both solvers see the same row
            w = hi - lo
            form = style.choice(["E+", "E-", "L", "G", "L-", "G-"]) if style.range_forms else "G"
            if form == "E+":
                t, r, g = "E", lo, w
            elif form == "E-":
                t, r, g = "E", hi, -w
            elif form in ("L", "L-"):
                t, r, g = "L", hi, (w if form == "L" else -w)
            else:
                t, r, g = "G", lo, (w if form == "G" else -w)
            if form in ("E+", "G", "G-"):
                model.rhi[i] = lo + w
            else:
                model.rlo[i] = hi - w
        rtype.append(t)
        rhs.append(r)
        rng.append(g)
        out.append(f" {t}  {rn[i]}")
    # free rows (N) after the objective would be dropped by readers: the
    # generators never make them, but keep the model consistent
    out.append("COLUMNS")
    cols_rows = [[] for _ in range(model.n)]
    for i, d in enumerate(model.rcoef):
        for j, v in d.items():
            cols_rows[j].append((i, v))
    bents = [_bound_entries(model, j, style) for j in range(model.n)]
    # an integer column whose BOUNDS say LI/UI/BV is integer without a marker
    marked = [model.integer[j] and not (style.int_via_bounds and
                                        any(t in ("LI", "UI", "BV") for t, _ in bents[j]))
              for j in range(model.n)]
    in_int = False
    marker = 0

    def marker_line(tag):
        if style.fixed:
            out.append(_fixed_line("", "MARKER", "'MARKER'", "", tag, ""))
        else:
            out.append(f"    M{marker}  'MARKER'  {tag}")

    for j in range(model.n):
        if marked[j] != in_int:
            in_int = marked[j]
            marker_line("'INTORG'" if in_int else "'INTEND'")
            marker += 1
        ents = []
        if model.cost[j] != 0 or not cols_rows[j]:
            ents.append((objn, model.cost[j]))
        ents += [(rn[i], v) for i, v in sorted(cols_rows[j], key=lambda t: t[0])]
        k = 0
        while k < len(ents):
            if style.two_per_line and k + 1 < len(ents) and style.coin(0.7):
                line("", cn[j], ents[k][0], num(ents[k][1]), ents[k + 1][0], num(ents[k + 1][1]))
                k += 2
            else:
                line("", cn[j], ents[k][0], num(ents[k][1]))
                k += 1
    if in_int:
        marker_line("'INTEND'")
    out.append("RHS")
    ents = []
    if model.obj_const != 0:
        ents.append((objn, -model.obj_const))
    for i in range(model.m):
        if rhs[i] is not None and (rhs[i] != 0 or style.coin(0.1)):
            ents.append((rn[i], rhs[i]))
    _pairs(line, style, rb, ents)
    rents = [(rn[i], rng[i]) for i in range(model.m) if rng[i] is not None]
    if rents:
        out.append("RANGES")
        _pairs(line, style, rgb, rents)
    out.append("BOUNDS")
    for j in range(model.n):
        for t, v in bents[j]:
            if style.lower_case_bounds:
                t = t.lower()
            line(t, bb, cn[j], "" if v is None else num(v))
    out.append("ENDATA")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return cn


def _pairs(line, style, setname, ents):
    k = 0
    while k < len(ents):
        if style.two_per_line and k + 1 < len(ents) and style.coin(0.6):
            line("", setname, ents[k][0], num(ents[k][1]), ents[k + 1][0], num(ents[k + 1][1]))
            k += 2
        else:
            line("", setname, ents[k][0], num(ents[k][1]))
            k += 1


def _bound_entries(model, j, style):
    """BOUNDS lines of column j (type, value or None); the reader's defaults
    are [0, inf) for continuous and, for an integer column with no BOUNDS
    line at all, [0, 1]."""
    lb, ub, it = model.lb[j], model.ub[j], model.integer[j]
    if lb == ub:
        return [("FX", lb)]
    if it and lb == 0 and ub == 1:
        if style.binary_without_bounds:
            return []
        if style.use_bv:
            return [("BV", None)]
        return [("UP", 1.0)] if style.coin(0.5) else [("LO", 0.0), ("UP", 1.0)]
    ents = []
    if lb == -INF and ub == INF:
        if style.coin(0.3) and style.use_mi_pl:
            return [("MI", None), ("PL", None)]
        return [("FR", None)]
    if lb == -INF:
        if ub < 0 and style.use_up_negative:
            return [("UI" if it and style.use_li_ui else "UP", ub)]
        ents.append(("MI", None))
    elif lb != 0 or (ub < 0):
        ents.append(("LI" if it and style.use_li_ui else "LO", lb))
    elif style.coin(0.15):
        ents.append(("LO", 0.0))
    if ub != INF:
        ents.append(("UI" if it and style.use_li_ui else "UP", ub))
    elif it and not ents:
        ents.append(("PL", None))
    elif style.coin(0.1):
        ents.append(("PL", None))
    if it and not ents:
        ents.append(("PL", None))
    if style.coin(0.3):
        ents.reverse() if not (lb == -INF and ub < 0) else None
    return ents


# ------------------------------------------------------------------ reader

def read_free_mps(path):
    """Free MPS as rk_mps_write writes it (and the usual variants): one RHS,
    RANGES and BOUNDS set; extra N rows dropped."""
    m = Model()
    sec = None
    rows = {}
    obj = None
    row_type = {}
    cols = {}
    in_int = False
    bound_seen = set()
    rhs_set = rng_set = bnd_set = None
    with open(path) as f:
        for raw in f:
            if not raw.strip() or raw.startswith("*"):
                continue
            tok = raw.split()
            if not raw[0].isspace():
                sec = tok[0].upper()
                if sec == "NAME" and len(tok) > 1:
                    m.name = tok[1]
                if sec in ("OBJSENSE", "OBJSENS") and len(tok) > 1:
                    m.maximize = tok[1].upper().startswith("MAX")
                continue
            if sec in ("OBJSENSE", "OBJSENS"):
                m.maximize = tok[0].upper().startswith("MAX")
            elif sec == "ROWS":
                t, name = tok[0].upper(), tok[1]
                if t == "N":
                    if obj is None:
                        obj = name
                    row_type[name] = "N"
                    continue
                rows[name] = m.add_row({}, name=name)
                row_type[name] = t
                i = rows[name]
                if t == "E":
                    m.rlo[i] = m.rhi[i] = 0.0
                elif t == "L":
                    m.rhi[i] = 0.0
                elif t == "G":
                    m.rlo[i] = 0.0
            elif sec == "COLUMNS":
                if len(tok) >= 3 and tok[1] == "'MARKER'":
                    in_int = tok[2] == "'INTORG'"
                    continue
                name = tok[0]
                if name not in cols:
                    cols[name] = m.add_col(0, INF, 0, in_int, name=name)
                j = cols[name]
                for k in range(1, len(tok) - 1, 2):
                    r, v = tok[k], float(tok[k + 1])
                    if r == obj:
                        m.cost[j] += v
                    elif r in rows:
                        d = m.rcoef[rows[r]]
                        d[j] = d.get(j, 0.0) + v
            elif sec == "RHS":
                ents = tok[1:] if len(tok) % 2 == 1 else tok
                if len(tok) % 2 == 1:
                    rhs_set = rhs_set or tok[0]
                    if tok[0] != rhs_set:
                        continue
                for k in range(0, len(ents) - 1, 2):
                    r, v = ents[k], float(ents[k + 1])
                    if r == obj:
                        m.obj_const = -v
                    elif r in rows:
                        i = rows[r]
                        t = row_type[r]
                        if t == "E":
                            m.rlo[i] = m.rhi[i] = v
                        elif t == "L":
                            m.rhi[i] = v
                        elif t == "G":
                            m.rlo[i] = v
            elif sec == "RANGES":
                ents = tok[1:] if len(tok) % 2 == 1 else tok
                if len(tok) % 2 == 1:
                    rng_set = rng_set or tok[0]
                    if tok[0] != rng_set:
                        continue
                for k in range(0, len(ents) - 1, 2):
                    r, R = ents[k], float(ents[k + 1])
                    i = rows[r]
                    t = row_type[r]
                    if t == "E":
                        rhs = m.rlo[i]
                        if R >= 0:
                            m.rhi[i] = rhs + R
                        else:
                            m.rlo[i] = rhs + R
                    elif t == "L":
                        m.rlo[i] = m.rhi[i] - abs(R)
                    elif t == "G":
                        m.rhi[i] = m.rlo[i] + abs(R)
            elif sec == "BOUNDS":
                t = tok[0].upper()
                if t in ("FR", "MI", "PL", "BV") and len(tok) == 2:
                    name, v = tok[1], None
                elif t in ("FR", "MI", "PL", "BV") and len(tok) == 3:
                    name, v = tok[2], None
                    bnd_set = bnd_set or tok[1]
                    if tok[1] != bnd_set:
                        continue
                else:
                    name, v = tok[-2], float(tok[-1])
                    if len(tok) == 4:
                        bnd_set = bnd_set or tok[1]
                        if tok[1] != bnd_set:
                            continue
                j = cols[name]
                if v is not None and abs(v) >= 1e30:
                    v = math.copysign(INF, v)
                bound_seen.add(j)
                if t in ("UP", "UI"):
                    m.ub[j] = v
                    if v < 0 and m.lb[j] == 0 and ("lb", j) not in bound_seen:
                        m.lb[j] = -INF
                    if t == "UI":
                        m.integer[j] = True
                elif t in ("LO", "LI"):
                    m.lb[j] = v
                    bound_seen.add(("lb", j))
                    if t == "LI":
                        m.integer[j] = True
                elif t == "FX":
                    m.lb[j] = m.ub[j] = v
                    bound_seen.add(("lb", j))
                elif t == "FR":
                    m.lb[j], m.ub[j] = -INF, INF
                    bound_seen.add(("lb", j))
                elif t == "MI":
                    m.lb[j] = -INF
                    bound_seen.add(("lb", j))
                elif t == "PL":
                    m.ub[j] = INF
                elif t == "BV":
                    m.lb[j], m.ub[j], m.integer[j] = 0.0, 1.0, True
                    bound_seen.add(("lb", j))
    for j in range(m.n):
        if m.integer[j] and j not in bound_seen:
            m.ub[j] = 1.0
    return m


# ------------------------------------------------------------- solutions

def read_solution(path):
    """rkmate's -o file: 'name value' per line (a name may hold spaces)."""
    vals = {}
    with open(path) as f:
        for ln in f:
            ln = ln.rstrip("\n")
            if not ln.strip():
                continue
            name, _, v = ln.rpartition(" ")
            vals[name] = float(v)
    return vals


def write_solution(path, names, x):
    with open(path, "w") as f:
        for nm, v in zip(names, x):
            f.write(f"{nm} {repr(float(v)) if v != 0 else '0'}\n")


def check_solution(model, x, tol=1e-6):
    """Independent feasibility check: bounds, integrality, rows (tolerance
    scaled by the row's size).  Returns a list of violation strings (empty
    when x is feasible)."""
    bad = []
    for j in range(model.n):
        v = x[j]
        if not math.isfinite(v):
            bad.append(f"column {model.cname[j]} = {v}")
            continue
        if v < model.lb[j] - tol * max(1.0, abs(model.lb[j])):
            bad.append(f"column {model.cname[j]} = {v!r} < lower bound {model.lb[j]}")
        if v > model.ub[j] + tol * max(1.0, abs(model.ub[j])):
            bad.append(f"column {model.cname[j]} = {v!r} > upper bound {model.ub[j]}")
        if model.integer[j] and abs(v - round(v)) > tol:
            bad.append(f"integer column {model.cname[j]} = {v!r}")
    for i in range(model.m):
        terms = [a * x[j] for j, a in model.rcoef[i].items()]
        act = math.fsum(terms)
        scale = max([1.0] + [abs(t) for t in terms])
        lo, hi = model.rlo[i], model.rhi[i]
        if lo > -INF and act < lo - tol * max(scale, abs(lo)):
            bad.append(f"row {model.rname[i]}: activity {act!r} < {lo}")
        if hi < INF and act > hi + tol * max(scale, abs(hi)):
            bad.append(f"row {model.rname[i]}: activity {act!r} > {hi}")
        if len(bad) > 20:
            break
    return bad
