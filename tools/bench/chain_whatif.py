#!/usr/bin/env python3
"""chain_whatif.py — what-if edits of a chain file (.rkg), for simulation
only (`rkmate solve OUT.rkg --budget 1 --explain`): what a structure that
rkmate does not build would give.  The executor cannot run the result.

  --split-inplace   split each backward node that reads its own output and a
                    dependency's data (an in-place op merged into its owner,
                    e.g. BatchNorm + relu_) in two: the in-place op's backward
                    (its grad, phantom and own data -> a middle grad, no
                    temporary, 10 % of the time) and the owner's (the middle
                    grad, phantom, dependencies -> their grads, the measured
                    temporary, 90 % of the time)
  --split-bwd MEAS  split each convolution's / Linear's backward in two, with
                    the per-part temporaries and times that
                    tools/bench/split_bwd.py measured (MEAS, its JSON): the
                    weight part (the gradient, the input x -> no chain data:
                    parameter gradients are outside the budget) first, then the
                    input part (the gradient, x's shape only -> x's gradient),
                    so that x can be dropped between them.  A node is matched to
                    the measured module call with the same input and output
                    bytes and the nearest one-call temporary; each part gets the
                    node's traced overhead times (the part's measured temporary
                    / the one call's), and its time by the same ratio of times
  --merge A B       merge blocks A..B into one block of a new class (the
                    chain's inputs stay block A's)

Used for docs/zoo.md, "What sets the other floors"."""
import argparse
import json
import sys


def split_inplace(c):
    n_split = 0
    for g in c["classes"]:
        size = {d["name"]: d["size"] for d in g["data"]}
        out = []
        for n in g["compute"]:
            j = n["name"][1:]
            own, grad = "d" + j, "g" + j
            real = [u for u in n["uses"] if isinstance(u, str)]
            if (n["kind"] != "bwd" or own not in real or grad not in real
                    or not any(u != own and u.startswith(("d", "in")) and not u.endswith(".grad") for u in real)):
                out.append(n)
                continue
            mid = "m" + j
            g["data"].append({"name": mid, "kind": "grad", "size": size[grad], "target": n["target"]})
            out.append(dict(n, name="b" + j + "a", time=n["time"] * 0.1, overhead=0, uses=[grad, "p" + j, own],
                            outs=[mid]))
            rest = [u for u in n["uses"] if u not in (grad, own)]
            out.append(dict(n, time=n["time"] * 0.9, uses=[mid] + rest + [{"data": own, "kind": "fake"}]))
            n_split += 1
        g["compute"] = out
    return n_split


def split_bwd(c, meas):
    """Split conv / linear backward nodes in two parts; returns (split, not matched)."""
    recs = [r for r in meas["modules"] if "temp_x" in r]
    n_split = n_miss = 0
    for g in c["classes"]:
        size = {d["name"]: d["size"] for d in g["data"]}
        kind = {d["name"]: d["kind"] for d in g["data"]}
        out = []
        for n in g["compute"]:
            j = n["name"][1:]
            op = j.split("_", 1)[-1]
            is_conv, is_lin = "convolution" in op, op.endswith(("linear", "addmm", "matmul"))
            real = [u for u in n["uses"] if isinstance(u, str)]
            xs = [u for u in real if kind[u] == "data" and u != "d" + j]
            grad = "m" + j if "m" + j in real else "g" + j  # m: after --split-inplace
            if n["kind"] != "bwd" or not (is_conv or is_lin) or not n["outs"] or len(xs) != 1 or grad not in real:
                out.append(n)
                continue
            x = xs[0]
            cand = [r for r in recs if r["kind"] == ("conv" if is_conv else "linear")
                    and r["x"] == size[x] and r["y"] == size[grad]]
            if not cand:
                n_miss += 1
                out.append(n)
                continue
            ov = max(n["overhead"], 0)
            r = min(cand, key=lambda r: abs(r["temp_all"] - ov))
            scale = ov / r["temp_all"] if r["temp_all"] > 0 else 1.0
            tt = r["time_w"] + r["time_x"]
            fw = r["time_w"] / tt if tt > 0 else 0.5
            w = dict(n, name=n["name"] + "w", time=n["time"] * fw, overhead=int(r["temp_w"] * scale),
                     uses=[u for u in n["uses"] if not (isinstance(u, str) and kind[u] == "grad" and u != grad)],
                     outs=[])
            if "grad_accum" in n:
                w["grad_accum"] = min(n["grad_accum"], w["overhead"])
            rest = dict(n, time=n["time"] * (1 - fw), overhead=int(r["temp_x"] * scale),
                        uses=[u if u != x else {"data": x, "kind": "fake"} for u in n["uses"]])
            rest.pop("grad_accum", None)
            out += [w, rest]
            n_split += 1
        g["compute"] = out
    return n_split, n_miss


def merge(c, a, b):
    blocks = c["blocks"]
    if not 0 <= a < b < len(blocks):
        sys.exit(f"chain_whatif: --merge {a} {b}: the chain has blocks 0..{len(blocks) - 1}")
    data, comp = [], []
    prev_out = prev_grad = None
    for k in range(a, b + 1):
        g = c["classes"][blocks[k]["class"]]
        first = g["inputs"][0]
        ren = {}
        for d in g["data"]:
            n = d["name"]
            if k > a and n == first["data"]:
                ren[n] = prev_out
            elif k > a and n == first.get("grad"):
                ren[n] = prev_grad
            else:
                ren[n] = n if k == a and any(n in (i["data"], i.get("grad")) for i in g["inputs"]) else f"k{k}_{n}"
                data.append(dict(d, name=ren[n]))
        for n in g["compute"]:
            if n["kind"] == "loss" and k < b:
                continue
            m = dict(n, name=n["name"] if n["kind"] == "loss" else f"k{k}_{n['name']}")
            m["uses"] = [ren[u] if isinstance(u, str) else dict(u, data=ren[u["data"]]) for u in n["uses"]]
            m["outs"] = [ren[o] for o in n["outs"]]
            comp.append(m)
        if k == a:
            inputs = g["inputs"]
        prev_out, prev_grad = ren[g["output"]], ren[g["output_grad"]]
    c["classes"].append({"data": data, "compute": comp, "inputs": inputs, "output": prev_out,
                         "output_grad": prev_grad, "loss": "loss"})
    c["blocks"] = blocks[:a] + [{"name": f"m{a}_{b}", "class": len(c["classes"]) - 1}] + blocks[b + 1:]
    used = sorted({bl["class"] for bl in c["blocks"]})
    renum = {o: i for i, o in enumerate(used)}
    c["classes"] = [c["classes"][o] for o in used]
    for bl in c["blocks"]:
        bl["class"] = renum[bl["class"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chain")
    ap.add_argument("out")
    ap.add_argument("--split-inplace", action="store_true")
    ap.add_argument("--split-bwd", metavar="MEAS")
    ap.add_argument("--merge", nargs=2, type=int, metavar=("A", "B"))
    a = ap.parse_args()
    if a.out == a.chain:
        sys.exit("chain_whatif: OUT is the input chain; refusing to overwrite it")
    with open(a.chain) as f:
        c = json.load(f)
    if a.split_inplace:
        print(f"split {split_inplace(c)} backward nodes", file=sys.stderr)
    if a.split_bwd:
        with open(a.split_bwd) as f:
            print("split %d backward nodes in two, %d not matched to a measured module" % split_bwd(c, json.load(f)),
                  file=sys.stderr)
    if a.merge:
        merge(c, *a.merge)
    with open(a.out, "w") as f:
        json.dump(c, f)


if __name__ == "__main__":
    main()
