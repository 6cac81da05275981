"""Seeded generators of structured MILP families.  Each generator takes a
random.Random and returns a Model; the same (family, seed) always gives the
same model and the same MPS text.  Sizes vary per case and stay small enough
that HiGHS and rkmate finish in well under a second on most cases.  Some
families make infeasible and unbounded cases on purpose."""
import math

from .model import INF, Model


# ------------------------------------------------------------ helpers

SCALE = 1.0  # --scale: upper ends of the size draws are multiplied by this


def _rint(r, lo, hi):
    return r.randint(lo, hi)


def _size(r, lo, hi):
    """A size in [lo, hi*SCALE] (the same draw as _rint when SCALE is 1)."""
    return r.randint(lo, max(lo, int(round(hi * SCALE))))


def _sparse_row(r, n, k):
    return sorted(r.sample(range(n), min(n, k)))


# ------------------------------------------------------------ families

def gen_gknap(r):
    """General-integer (bounded, non-binary) multi-knapsack, maximised:
    weakly / strongly correlated profits, some columns with a positive
    lower bound, a few continuous columns."""
    m = Model("GKNAP")
    m.maximize = True
    corr = r.choice(["none", "weak", "strong"])
    n = _size(r, 4, {"none": 45, "weak": 30, "strong": 20}[corr])
    k = r.choice([1, 1, 2, 3])
    W = [[_rint(r, 1, 60) for _ in range(n)] for _ in range(k)]
    u = [r.choice([2, 3, 5, 8, 12, 20]) if r.random() < 0.85 else 1 for _ in range(n)]
    for j in range(n):
        w = W[0][j]
        if corr == "none":
            p = _rint(r, 1, 60)
        elif corr == "weak":
            p = max(1, w + _rint(r, -10, 10))
        else:
            p = w + 10
        lb = _rint(r, 1, 2) if r.random() < 0.1 else 0
        m.add_col(lb, max(lb, u[j]), p, True)
    nc = _rint(r, 0, 3) if r.random() < 0.3 else 0
    for _ in range(nc):
        m.add_col(0, _rint(r, 1, 10) if r.random() < 0.8 else INF, r.choice([1, 2, 3, 0.5, 1.5]), False)
    for i in range(k):
        tot = sum(W[i][j] * u[j] for j in range(n))
        cap = int(tot * r.uniform(0.15, 0.6))
        coefs = {j: W[i][j] for j in range(n)}
        for c in range(n, n + nc):
            coefs[c] = r.choice([1, 2, 5, 0.5])
        # a lower-bounded column may make the row infeasible: keep it honest
        cap = max(cap, sum(W[i][j] * m.lb[j] for j in range(n)) + (0 if r.random() < 0.97 else -1))
        m.add_row(coefs, hi=cap)
    if r.random() < 0.2:  # a cardinality row with a range
        lo = _rint(r, 0, 2)
        m.add_row({j: 1 for j in range(n)}, lo=lo, hi=lo + _rint(r, 2, 2 * n))
    return m


def gen_eqknap(r):
    """Equality knapsacks over bounded general integers, minimised: planted
    feasible ones, parity-infeasible ones (even coefficients, odd right-hand
    side) and unplanted ones (often infeasible)."""
    m = Model("EQKNAP")
    kind = r.choices(["planted", "parity", "random"], [6, 2, 2])[0]
    n = _size(r, 3, 12) if kind == "planted" else _size(r, 3, 7)
    rows = 1 if r.random() < 0.7 else 2
    for j in range(n):
        lb = 0 if r.random() < 0.8 else _rint(r, -4, -1)
        ub = lb + r.choice([1, 2, 3, 5, 8, 15])
        m.add_col(lb, ub, _rint(r, -20, 30), True)
    if r.random() < 0.3:
        m.add_col(0, _rint(r, 1, 5), r.choice([1, 3, 0.25]), False)
    x0 = [_rint(r, int(m.lb[j]), int(m.ub[j])) for j in range(n)]
    for i in range(rows):
        a = [_rint(r, 1, 40) * (1 if r.random() < 0.8 else -1) for _ in range(n)]
        if kind == "parity" and i == 0:
            a = [2 * v for v in a]
            b = 2 * _rint(r, 1, 30) + 1
        elif kind == "planted":
            b = sum(a[j] * x0[j] for j in range(n))
        else:
            hi = sum(abs(v) * 3 for v in a)
            b = _rint(r, 1, max(2, hi // 2))
        coefs = {j: a[j] for j in range(n)}
        if m.n > n and i == 0 and kind != "parity":
            coefs[n] = r.choice([1, 2, 0.5])  # a continuous slack with a small range
        m.add_row(coefs, lo=b, hi=b)
    return m


def gen_lotsize(r):
    """Capacitated (multi-item) lot-sizing with set-up binaries: inventory
    balance equalities, x_kt <= M y_kt with a tight or a loose M, a shared
    capacity with set-up times; sometimes integer batches, sometimes a tight
    capacity that makes it infeasible."""
    m = Model("LOTSIZE")
    K = r.choice([1, 1, 2, 3])
    T = _size(r, 3, 14 if K == 1 else 8)
    d = [[_rint(r, 0, 30) for _ in range(T)] for _ in range(K)]
    s0 = [_rint(r, 0, 10) if r.random() < 0.3 else 0 for _ in range(K)]
    totd = sum(map(sum, d))
    cap = [_rint(r, max(1, (4 * totd) // (5 * T)), max(2, 3 * totd // T + 10)) for _ in range(T)]
    integer_x = r.random() < 0.3
    setup_time = [_rint(r, 0, 5) for _ in range(K)]
    x, y, s = {}, {}, {}
    for k in range(K):
        for t in range(T):
            x[k, t] = m.add_col(0, INF, _rint(r, 1, 8), integer_x, name=f"x{k}_{t}")
            y[k, t] = m.add_col(0, 1, _rint(r, 20, 200), True, name=f"y{k}_{t}")
            s[k, t] = m.add_col(0, INF if r.random() < 0.9 else _rint(r, 10, 60),
                                _rint(r, 1, 4) * r.choice([1, 1, 0.5]), False, name=f"s{k}_{t}")
    for k in range(K):
        for t in range(T):
            coefs = {x[k, t]: 1, s[k, t]: -1}
            if t > 0:
                coefs[s[k, t - 1]] = 1
            rhs = d[k][t] - (s0[k] if t == 0 else 0)
            m.add_row(coefs, lo=rhs, hi=rhs, name=f"bal{k}_{t}")
            rem = sum(d[k][t:])
            M = min(cap[t], rem) if r.random() < 0.4 else max(cap[t], totd)
            if M == 0:
                M = 1
            m.add_row({x[k, t]: 1, y[k, t]: -M}, hi=0, name=f"vub{k}_{t}")
    for t in range(T):
        coefs = {}
        for k in range(K):
            coefs[x[k, t]] = 1
            if setup_time[k]:
                coefs[y[k, t]] = setup_time[k]
        m.add_row(coefs, hi=cap[t], name=f"cap{t}")
    if r.random() < 0.15:  # at most so many set-ups (may be infeasible)
        m.add_row({y[k, t]: 1 for k in range(K) for t in range(T)}, hi=_rint(r, 1, K * T // 2 + 1))
    return m


def gen_fixnet(r):
    """Fixed-charge network flow (fixnet6's structure): arc flows with
    x <= u y, flow conservation at every node (equalities), fixed costs on
    the y.  Loose or tight u, sometimes integer flows; unmet demand makes
    some cases infeasible."""
    m = Model("FIXNET")
    nn = _size(r, 4, 16)
    arcs = set()
    order = list(range(nn))
    r.shuffle(order)
    for a, b in zip(order, order[1:]):  # a path through every node, both ways
        arcs.add((a, b))
        if r.random() < 0.7:
            arcs.add((b, a))
    target = int(nn * r.uniform(1.5, 3.5))
    tries = 0
    while len(arcs) < target and tries < 1000:
        a, b = r.sample(range(nn), 2)
        arcs.add((a, b))
        tries += 1
    arcs = sorted(arcs)
    ns = _rint(r, 1, max(1, nn // 3))
    nodes = list(range(nn))
    r.shuffle(nodes)
    src, snk = nodes[:ns], nodes[ns:ns + _rint(r, 1, max(1, nn - ns - 1))]
    b = [0] * nn
    for t in snk:
        dem = _rint(r, 1, 25)
        b[t] -= dem
        b[r.choice(src)] += dem
    total = sum(v for v in b if v > 0)
    integer_flow = r.random() < 0.25
    loose = r.random() < 0.5
    x, y = {}, {}
    for (a, c) in arcs:
        u = total if loose else _rint(r, max(1, total // 4), total + 5)
        x[a, c] = m.add_col(0, INF if r.random() < 0.5 else u, _rint(r, 0, 10), integer_flow, name=f"x{a}_{c}")
        y[a, c] = m.add_col(0, 1, _rint(r, 5, 100), True, name=f"y{a}_{c}")
        m.add_row({x[a, c]: 1, y[a, c]: -u}, hi=0, name=f"vub{a}_{c}")
    for v in range(nn):
        coefs = {}
        for (a, c) in arcs:
            if a == v:
                coefs[x[a, c]] = coefs.get(x[a, c], 0) + 1
            if c == v:
                coefs[x[a, c]] = coefs.get(x[a, c], 0) - 1
        if coefs:
            m.add_row(coefs, lo=b[v], hi=b[v], name=f"node{v}")
    if r.random() < 0.2:  # a budget on the number of open arcs
        m.add_row({yy: 1 for yy in y.values()}, hi=_rint(r, nn // 2, len(arcs)))
    return m


def _random_sets(r, mrows, n, dens):
    cols = []
    for j in range(n):
        k = max(1, int(round(mrows * dens * r.uniform(0.5, 1.5))))
        cols.append(set(r.sample(range(mrows), min(mrows, k))))
    return cols


def gen_setcover(r):
    """Set covering (some rows need 2), minimised; some rows covered only by
    columns fixed to 0 (infeasible)."""
    m = Model("SETCOVER")
    mr, n = _size(r, 5, 50), _size(r, 8, 80)
    cols = _random_sets(r, mr, n, r.uniform(0.05, 0.3))
    gen_int = r.random() < 0.15
    cmax = r.choice([3, 25, 100])
    for j in range(n):
        m.add_col(0, 2 if gen_int else 1, _rint(r, 1, cmax), True)
    rows = [dict() for _ in range(mr)]
    for j, c in enumerate(cols):
        for i in c:
            rows[i][j] = 1
    for i in range(mr):
        if not rows[i]:
            rows[i][r.randrange(n)] = 1
        need = 2 if r.random() < 0.1 else 1
        m.add_row(rows[i], lo=need)
    if r.random() < 0.05:  # uncoverable row: its columns fixed to 0
        i = r.randrange(mr)
        for j in rows[i]:
            m.lb[j] = m.ub[j] = 0.0
    return m


def gen_setpack(r):
    """Set packing, maximised, with random rows and clique rows of a
    conflict graph."""
    m = Model("SETPACK")
    mr, n = _size(r, 5, 40), _size(r, 8, 70)
    m.maximize = True
    cols = _random_sets(r, mr, n, r.uniform(0.05, 0.3))
    for j in range(n):
        m.add_col(0, 1, _rint(r, 1, 30), True)
    rows = [dict() for _ in range(mr)]
    for j, c in enumerate(cols):
        for i in c:
            rows[i][j] = 1
    for i in range(mr):
        if rows[i]:
            m.add_row(rows[i], hi=1)
    for _ in range(_rint(r, 0, 5)):
        cl = r.sample(range(n), _rint(r, 2, min(n, 6)))
        m.add_row({j: 1 for j in cl}, hi=1)
    return m


def gen_setpart(r):
    """Set partitioning, minimised: a planted partition among random columns
    (feasible), or none (often infeasible)."""
    m = Model("SETPART")
    mr, n = _size(r, 5, 30), _size(r, 8, 60)
    cols = _random_sets(r, mr, n, r.uniform(0.08, 0.3))
    if r.random() < 0.75:
        perm = list(range(mr))
        r.shuffle(perm)
        g = _rint(r, 2, max(2, mr // 2))
        cuts = sorted(r.sample(range(1, mr), min(mr - 1, g - 1)))
        parts = [set(perm[a:b]) for a, b in zip([0] + cuts, cuts + [mr])]
        for p in parts:
            cols.insert(r.randrange(len(cols) + 1), p)
    for c in cols:
        m.add_col(0, 1, _rint(r, 1, 30) + 3 * len(c), True)
    rows = [dict() for _ in range(mr)]
    for j, c in enumerate(cols):
        for i in c:
            rows[i][j] = 1
    for i in range(mr):
        m.add_row(rows[i], lo=1, hi=1)
    if r.random() < 0.2:  # mix in a packing side constraint
        sub = r.sample(range(len(cols)), min(len(cols), _rint(r, 2, 6)))
        m.add_row({j: 1 for j in sub}, hi=1)
    return m


def gen_sched(r):
    """Single-machine scheduling with big-M disjunctions: start times
    S_j >= r_j, for each pair a binary order z_ij with S_i + p_i <= S_j +
    M(1 - z_ij) and S_j + p_j <= S_i + M z_ij; weighted completion time,
    makespan or weighted tardiness; deadlines and precedences (sometimes
    infeasible)."""
    m = Model("SCHED")
    n = _size(r, 3, 7)
    p = [_rint(r, 1, 10) for _ in range(n)]
    rel = [_rint(r, 0, 15) if r.random() < 0.6 else 0 for _ in range(n)]
    due = [rel[j] + p[j] + _rint(r, 0, 25) for j in range(n)]
    M = sum(p) + max(rel) + r.choice([0, 0, 10, 100])
    obj = r.choice(["wct", "cmax", "tard"])
    int_start = r.random() < 0.3
    S = [m.add_col(rel[j], INF if r.random() < 0.7 else M, 0, int_start, name=f"S{j}") for j in range(n)]
    z = {}
    for i in range(n):
        for j in range(i + 1, n):
            z[i, j] = m.add_col(0, 1, 0, True, name=f"z{i}_{j}")
            m.add_row({S[i]: 1, S[j]: -1, z[i, j]: M}, hi=M - p[i])
            m.add_row({S[j]: 1, S[i]: -1, z[i, j]: -M}, hi=-p[j])
    if obj == "wct":
        for j in range(n):
            m.cost[S[j]] = _rint(r, 1, 5)
        m.obj_const = sum(m.cost[S[j]] * p[j] for j in range(n))
    elif obj == "cmax":
        c = m.add_col(0, INF, 1, False, name="Cmax")
        for j in range(n):
            m.add_row({c: 1, S[j]: -1}, lo=p[j])
    else:
        for j in range(n):
            t = m.add_col(0, INF, _rint(r, 1, 5), False, name=f"T{j}")
            m.add_row({t: 1, S[j]: -1}, lo=p[j] - due[j])
    for _ in range(_rint(r, 0, 2)):  # precedences
        a, b = r.sample(range(n), 2)
        m.add_row({S[b]: 1, S[a]: -1}, lo=p[a])
    if r.random() < 0.3:  # deadlines (may be infeasible)
        for j in r.sample(range(n), _rint(r, 1, n)):
            m.add_row({S[j]: 1}, hi=due[j] - p[j] + _rint(r, -3, 5))
    return m


def _planted_point(r, m):
    """A point inside the column bounds (integral on integer columns, small
    values on unbounded sides) that rows can be made to hold at."""
    x = []
    for j in range(m.n):
        lo = m.lb[j] if m.lb[j] > -INF else min(m.ub[j], 0) - _rint(r, 0, 6)
        hi = m.ub[j] if m.ub[j] < INF else max(lo, 0) + _rint(r, 0, 6)
        v = _rint(r, int(math.ceil(lo)), int(math.floor(hi)))
        if not m.integer[j] and r.random() < 0.5 and v + 0.5 <= hi:
            v += 0.5
        x.append(v)
    return x


def _bounded_free_rows(r, m, cols, x0):
    """Rows lo <= x_j + a x_k <= hi that keep half-free or free columns j
    bounded (k a bounded column), holding at the planted point x0."""
    bounded = [j for j in range(m.n) if m.lb[j] > -INF and m.ub[j] < INF]
    for j in cols:
        coefs = {j: r.choice([1, -1, 2])}
        if bounded:
            k = r.choice(bounded)
            coefs[k] = coefs.get(k, 0) + r.choice([1, -1, 3])
        at = sum(a * x0[c] for c, a in coefs.items())
        m.add_row(coefs, lo=math.floor(at) - _rint(r, 0, 12), hi=math.ceil(at) + _rint(r, 0, 12))


def gen_intfree(r):
    """Pure integer programs over negative-bounded, half-free and free
    integer columns (BOUNDS MI / FR / LI / UI / UP < 0), with <=, >=, =,
    ranged rows; unbounded when a free column is left unconstrained; parity
    equalities that are LP-feasible but integer-infeasible."""
    m = Model("INTFREE")
    n = _size(r, 3, 16)
    kinds = []
    for j in range(n):
        t = r.choices(["box", "neg", "upneg", "lofree", "upfree", "free"], [4, 3, 2, 1, 1, 2])[0]
        if t == "box":
            lb = _rint(r, -6, 2)
            ub = lb + _rint(r, 1, 10)
        elif t == "neg":
            lb = _rint(r, -15, -3)
            ub = _rint(r, lb + 1, -1)
        elif t == "upneg":
            lb, ub = -INF, _rint(r, -8, -1)
        elif t == "lofree":
            lb, ub = _rint(r, -8, 3), INF
        elif t == "upfree":
            lb, ub = -INF, _rint(r, 0, 8)
        else:
            lb, ub = -INF, INF
        kinds.append(t)
        m.add_col(lb, ub, _rint(r, -8, 8), True)
    if r.random() < 0.3:
        m.add_col(-INF if r.random() < 0.5 else -3, _rint(r, 0, 6), r.choice([0.5, -1, 2]), False)
    x0 = _planted_point(r, m)
    nr = _size(r, 2, 10)
    for _ in range(nr):
        cols = _sparse_row(r, m.n, _rint(r, 2, min(m.n, 5)))
        coefs = {j: _rint(r, -6, 6) or 1 for j in cols}
        t = r.choice(["L", "G", "E", "R"])
        # most rows hold at a planted point; a few are random (may be infeasible)
        v = sum(coefs[j] * x0[j] for j in cols) if r.random() < 0.97 else _rint(r, -20, 20)
        if t == "L":
            m.add_row(coefs, hi=v + _rint(r, 0, 6))
        elif t == "G":
            m.add_row(coefs, lo=v - _rint(r, 0, 6))
        elif t == "E":
            if r.random() < 0.06:  # parity: LP-feasible, no integer point
                coefs = {j: 2 * c for j, c in coefs.items() if j < n}
                if coefs:
                    m.add_row(coefs, lo=2 * v + 1, hi=2 * v + 1)
                continue
            m.add_row(coefs, lo=v, hi=v)
        else:
            lo = v - _rint(r, 0, 8)
            m.add_row(coefs, lo=lo, hi=max(lo + _rint(r, 1, 15), v))
    unb = [j for j in range(n) if kinds[j] in ("upneg", "lofree", "upfree", "free")]
    if unb and r.random() < 0.8:
        _bounded_free_rows(r, m, unb, x0)
    return m


def gen_ranged(r):
    """Mixed-integer programs whose rows are ranged (both sides finite, every
    RANGES form) or equalities, with continuous columns and fractional
    coefficients (quarters and decimals); a few have an unbounded ray."""
    m = Model("RANGED")
    n = _size(r, 5, 30)
    frac = r.random() < 0.5
    def coef():
        if frac and r.random() < 0.5:
            return r.choice([0.25, 0.5, 0.75, 1.25, -0.5, -1.5, 0.37, 2.3, -0.1])
        return _rint(r, -9, 9) or 1
    for j in range(n):
        it = r.random() < 0.6
        if r.random() < 0.15:
            lb, ub = -INF, _rint(r, 0, 10)
        elif r.random() < 0.15:
            lb, ub = _rint(r, -10, 0), INF
        else:
            lb = _rint(r, -5, 3)
            ub = lb + _rint(r, 1, 12)
        m.add_col(lb, ub, coef() * r.choice([1, 1, 2]), it)
    x0 = _planted_point(r, m)
    nr = _size(r, 3, 18)
    for i in range(nr):
        cols = _sparse_row(r, n, _rint(r, 2, min(n, 6)))
        coefs = {j: coef() for j in cols}
        at = sum(coefs[j] * x0[j] for j in cols)
        lo = math.floor(at) - _rint(r, 0, 4) if r.random() < 0.97 else _rint(r, -15, 10)
        if r.random() < 0.3:
            if r.random() < 0.95:
                lo = at
            m.add_row(coefs, lo=lo, hi=lo)
        else:
            hi = lo + r.choice([1, 2, 3, 5, 8, 13, 0.5, 2.5])
            m.add_row(coefs, lo=lo, hi=hi if hi >= at or r.random() < 0.1 else math.ceil(at))
    free = [j for j in range(n) if m.lb[j] == -INF or m.ub[j] == INF]
    if free and r.random() < 0.85:
        _bounded_free_rows(r, m, free, x0)
    return m


def gen_prodmax(r):
    """Production planning, maximised: integer batches and continuous
    amounts sharing resources, minimum lots (L y <= x <= U y), an overtime
    column with a cost; a product that uses no resource and has no upper
    bound makes a few of them unbounded."""
    m = Model("PRODMAX")
    m.maximize = True
    P = _size(r, 3, 12)
    R = _rint(r, 1, 5)
    use = [[(_rint(r, 0, 9) if r.random() < 0.7 else 0) for _ in range(P)] for _ in range(R)]
    cap = [_rint(r, 20, 150) for _ in range(R)]
    xs = []
    for j in range(P):
        it = r.random() < 0.6
        xs.append(m.add_col(0, INF if r.random() < 0.8 else _rint(r, 5, 40),
                            _rint(r, 1, 20) + (0.5 if not it and r.random() < 0.3 else 0), it))
    ot = m.add_col(0, _rint(r, 0, 30), -_rint(r, 2, 8), False, name="overtime")
    for i in range(R):
        coefs = {xs[j]: use[i][j] for j in range(P) if use[i][j]}
        if i == 0:
            coefs[ot] = -1
        if coefs:
            m.add_row(coefs, hi=cap[i])
    for j in range(P):
        if r.random() < 0.35:
            y = m.add_col(0, 1, -_rint(r, 5, 60), True, name=f"y{j}")
            L, U = _rint(r, 1, 8), _rint(r, 10, 60)
            m.add_row({xs[j]: 1, y: -L}, lo=0)
            m.add_row({xs[j]: 1, y: -U}, hi=0)
    # products without any limit: unbounded unless bounded by a row above
    for j in range(P):
        limited = any(use[i][j] for i in range(R)) or m.ub[xs[j]] < INF
        if not limited and r.random() < 0.7:
            m.add_row({xs[j]: 1}, hi=_rint(r, 5, 40))
    return m


def gen_netload(r):
    """Multi-commodity network loading with general-integer capacity modules
    (qnet1's kind): commodities routed on arcs (flow conservation per
    commodity and node), two module types per arc (small C, big B*C) as
    integers bounded by 2..12, sum_k f_ka <= C y_a + B C z_a, path-choice
    binaries on some commodities (single-path: f_ka <= d_k u_ka, one out-arc
    chosen at the source).  Minimised module + routing cost."""
    m = Model("NETLOAD")
    nn = _size(r, 3, 9)
    arcs = set()
    order = list(range(nn))
    r.shuffle(order)
    for a, b in zip(order, order[1:] + order[:1]):  # a ring, both ways sometimes
        if a != b:
            arcs.add((a, b))
            if r.random() < 0.6:
                arcs.add((b, a))
    for _ in range(_rint(r, 0, nn)):
        a, b = r.sample(range(nn), 2)
        arcs.add((a, b))
    arcs = sorted(arcs)
    K = _size(r, 1, 6)
    C = r.choice([1, 4, 7, 56])
    B = r.choice([3, 4, 10, 25])
    com = []
    for _ in range(K):
        s_, t_ = r.sample(range(nn), 2)
        com.append((s_, t_, _rint(r, 1, 4) * C + _rint(r, 0, C)))
    single = r.random() < 0.3
    int_flow = r.random() < 0.3
    f, y, z, u = {}, {}, {}, {}
    for a in arcs:
        y[a] = m.add_col(0, r.choice([2, 4, 5, 11, 12, 20]), _rint(r, 5, 30), True, name=f"y{a[0]}_{a[1]}")
        if r.random() < 0.7:
            z[a] = m.add_col(0, r.choice([1, 2, 3]), _rint(r, 5, 30) * B // 2, True, name=f"z{a[0]}_{a[1]}")
    for k, (s_, t_, d) in enumerate(com):
        for a in arcs:
            f[k, a] = m.add_col(0, INF, _rint(r, 0, 3), int_flow, name=f"f{k}_{a[0]}_{a[1]}")
            if single:
                u[k, a] = m.add_col(0, 1, 0, True, name=f"u{k}_{a[0]}_{a[1]}")
                m.add_row({f[k, a]: 1, u[k, a]: -d}, hi=0)
        for v in range(nn):
            coefs = {}
            for a in arcs:
                if a[0] == v:
                    coefs[f[k, a]] = coefs.get(f[k, a], 0) + 1
                if a[1] == v:
                    coefs[f[k, a]] = coefs.get(f[k, a], 0) - 1
            rhs = d if v == s_ else (-d if v == t_ else 0)
            if coefs:
                m.add_row(coefs, lo=rhs, hi=rhs)
            elif rhs:
                m.add_row({f[k, arcs[0]]: 0}, lo=rhs, hi=rhs)  # nothing leaves: infeasible
        if single:
            out = [u[k, a] for a in arcs if a[0] == s_]
            if out:
                m.add_row({c: 1 for c in out}, lo=1, hi=1)
    for a in arcs:
        coefs = {f[k, a]: 1 for k in range(K)}
        coefs[y[a]] = -C
        if a in z:
            coefs[z[a]] = -B * C
        m.add_row(coefs, hi=0)
    if r.random() < 0.3:  # a budget on modules (may be infeasible)
        m.add_row({yy: 1 for yy in y.values()}, hi=_rint(r, len(arcs) // 2, 3 * len(arcs)))
    return m


def gen_genint(r):
    """General-integer programs with knapsack-like rows (coefficients up to
    100), <= and >= rows, bounded integers 0..U, a planted feasible point,
    mixed-sign objective: the classic case where cuts and bound tightening
    on general integers must be right."""
    m = Model("GENINT")
    n = _size(r, 5, 22)
    for j in range(n):
        lb = 0 if r.random() < 0.85 else _rint(r, -5, -1)
        m.add_col(lb, lb + r.choice([1, 2, 3, 5, 7, 10, 15, 30]), _rint(r, -40, 40), True)
    if r.random() < 0.3:
        for _ in range(_rint(r, 1, 3)):
            m.add_col(0, r.choice([1, 4, 10, INF]), r.choice([0.5, -1, 2, 3.5]), False)
    x0 = _planted_point(r, m)
    nr = _size(r, 2, 12)
    big = r.choice([10, 30, 100])
    for _ in range(nr):
        cols = _sparse_row(r, m.n, _rint(r, 2, min(m.n, 8)))
        coefs = {j: _rint(r, 1, big) * (1 if r.random() < 0.75 else -1) for j in cols}
        at = sum(coefs[j] * x0[j] for j in cols)
        t = r.random()
        if t < 0.45:
            m.add_row(coefs, hi=math.ceil(at) + _rint(r, 0, big))
        elif t < 0.9:
            m.add_row(coefs, lo=math.floor(at) - _rint(r, 0, big))
        else:
            m.add_row(coefs, lo=at, hi=at)
    if r.random() < 0.5:
        m.maximize = True
    # unbounded continuous column with a good cost: bounded by its rows only
    for j in range(m.n):
        if m.ub[j] == INF and not any(j in d for d in m.rcoef) and r.random() < 0.8:
            m.add_row({j: 1, r.randrange(n): 1}, hi=40)
    return m


def gen_unbdray(r):
    """Problems whose LP relaxation is unbounded: truly unbounded MILPs (an
    integer point and a ray), and integer-infeasible ones (a parity or gcd
    equality, on the bounded columns or on the unbounded ones themselves)
    that must be reported infeasible, not unbounded; a few with the ray
    blocked by a row, which are bounded."""
    m = Model("UNBDRAY")
    n = _size(r, 3, 10)
    for j in range(n):
        t = r.random()
        if t < 0.5:
            lb = _rint(r, -5, 2)
            m.add_col(lb, lb + _rint(r, 1, 8), _rint(r, -6, 6), r.random() < 0.8)
        elif t < 0.75:
            m.add_col(_rint(r, -5, 2), INF, _rint(r, -6, 6), r.random() < 0.7)
        elif t < 0.85:
            m.add_col(-INF, _rint(r, -3, 5), _rint(r, -6, 6), r.random() < 0.7)
        else:
            m.add_col(-INF, INF, _rint(r, -6, 6), r.random() < 0.7)
    x0 = _planted_point(r, m)
    for _ in range(_rint(r, 1, 6)):
        cols = _sparse_row(r, n, _rint(r, 2, min(n, 4)))
        coefs = {j: _rint(r, -5, 5) or 1 for j in cols}
        at = sum(coefs[j] * x0[j] for j in cols)
        t = r.random()
        if t < 0.4:
            m.add_row(coefs, hi=math.ceil(at) + _rint(r, 0, 5))
        elif t < 0.8:
            m.add_row(coefs, lo=math.floor(at) - _rint(r, 0, 5))
        else:
            m.add_row(coefs, lo=at, hi=at)
    if r.random() < 0.4:
        # a column in no row, improving towards an infinite bound: the ray
        # is there as soon as any point is
        c = _rint(r, 1, 6)
        if r.random() < 0.5:
            m.add_col(_rint(r, -3, 3), INF, -c, r.random() < 0.7)
        else:
            m.add_col(-INF, _rint(r, -3, 3), c, r.random() < 0.7)
    g = r.random()
    ints = [j for j in range(m.n) if m.integer[j]]
    bounded = [j for j in ints if m.lb[j] > -INF and m.ub[j] < INF]
    if g < 0.45 and len(ints) >= 3:
        pool = bounded if len(bounded) >= 3 and r.random() < 0.8 else ints
        i, j, l = r.sample(pool, 3)
        k = r.choice([2, 3, 4])
        c = _rint(r, 1, k - 1)
        if r.random() < 0.5:
            # one row: k (a x_i + b x_j) = k v + c, 0 < c < k
            a, b = _rint(r, 1, 4) * r.choice([1, -1]), _rint(r, 1, 4) * r.choice([1, -1])
            v = _rint(r, -3, 3)
            m.add_row({i: k * a, j: k * b}, lo=k * v + c, hi=k * v + c)
        else:
            # two rows, each integer-feasible alone: x_i = k x_j and x_i = k x_l + c
            m.add_row({i: 1, j: -k}, lo=0, hi=0)
            m.add_row({i: 1, l: -k}, lo=c, hi=c)
    elif g < 0.55:
        # block every ray with a box row on all unbounded columns (bounded MILP)
        for j in range(len(x0)):
            if m.lb[j] == -INF or m.ub[j] == INF:
                m.add_row({j: 1}, lo=x0[j] - _rint(r, 0, 20), hi=x0[j] + _rint(r, 0, 20))
    return m


FAMILIES = {
    "gknap": gen_gknap,
    "eqknap": gen_eqknap,
    "lotsize": gen_lotsize,
    "fixnet": gen_fixnet,
    "netload": gen_netload,
    "genint": gen_genint,
    "setcover": gen_setcover,
    "setpack": gen_setpack,
    "setpart": gen_setpart,
    "sched": gen_sched,
    "intfree": gen_intfree,
    "unbdray": gen_unbdray,
    "ranged": gen_ranged,
    "prodmax": gen_prodmax,
}


# ------------------------------------------------------------ transforms

def transform(r, m):
    """Equivalent rewrites that change what the file looks like and what the
    solver sees, not the problem: shifted columns (negative bounds),
    negated columns, rows scaled by -1 / 2 / 0.5, the objective sense
    flipped with negated costs, an objective constant, permuted columns
    (several MARKER blocks).  Returns the names of the rewrites applied."""
    did = []
    if r.random() < 0.3:
        did.append("shift")
        for j in range(m.n):
            if r.random() < 0.4:
                s = _rint(r, -6, 6)
                if s == 0:
                    continue
                # x = x' + s
                m.lb[j] -= s
                m.ub[j] -= s
                m.obj_const += m.cost[j] * s
                for i, d in enumerate(m.rcoef):
                    a = d.get(j)
                    if a:
                        m.rlo[i] -= a * s
                        m.rhi[i] -= a * s
    if r.random() < 0.2:
        did.append("negate")
        for j in range(m.n):
            if r.random() < 0.3:
                m.lb[j], m.ub[j] = -m.ub[j], -m.lb[j]
                m.cost[j] = -m.cost[j]
                for d in m.rcoef:
                    if j in d:
                        d[j] = -d[j]
    if r.random() < 0.2:
        did.append("rowscale")
        for i in range(m.m):
            if r.random() < 0.3:
                f = r.choice([-1, -1, 2, 0.5, -2])
                m.rcoef[i] = {j: a * f for j, a in m.rcoef[i].items()}
                lo, hi = m.rlo[i] * f, m.rhi[i] * f
                m.rlo[i], m.rhi[i] = (lo, hi) if f > 0 else (hi, lo)
    if r.random() < 0.25:
        did.append("flip")
        m.maximize = not m.maximize
        m.cost = [-c for c in m.cost]
        m.obj_const = -m.obj_const
    if r.random() < 0.2:
        did.append("const")
        m.obj_const += _rint(r, -500, 500)
    if r.random() < 0.3:
        did.append("permute")
        perm = list(range(m.n))
        r.shuffle(perm)  # new column k is old column perm[k]
        inv = {old: k for k, old in enumerate(perm)}
        for attr in ("cname", "lb", "ub", "cost", "integer"):
            old = getattr(m, attr)
            setattr(m, attr, [old[perm[k]] for k in range(m.n)])
        m.rcoef = [{inv[j]: a for j, a in d.items()} for d in m.rcoef]
    # -0.0 bounds read as 0
    m.lb = [0.0 if v == 0 else v for v in m.lb]
    m.ub = [0.0 if v == 0 else v for v in m.ub]
    return did
