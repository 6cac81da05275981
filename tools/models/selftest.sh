#!/bin/sh
# selftest.sh [PYTHON] — smoke test of the model exporters: export every model
# with test-sized defaults into a temporary directory (each exporter reloads
# its file and runs forward+backward, and fails on prim::If/Loop), check the
# printed `rkmate trace` commands and side files, and run reference_step.py
# twice on GPT2 to check that the step is reproducible bit for bit.
# PYTHON: the first argument (meson passes the Python of the build's torch),
# else $RKMATE_PYTHON, else the project's .venv/bin/python.
# Exit 0 ok, 1 failure, 77 (meson's "skipped") when that Python has no torch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

py=""
for cand in "${1:-}" "${RKMATE_PYTHON:-}" "$here/../../.venv/bin/python"; do
    if [ -n "$cand" ] && "$cand" -c 'import torch, torchvision' >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "skip: no Python with torch and torchvision (the project's .venv: tools/test makes it)" >&2
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rkmate-models.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

RKMATE_PYTHON=$py "$here/export_all.sh" "$tmp" >"$tmp/commands.txt" 2>"$tmp/log.txt" || {
    cat "$tmp/log.txt" >&2
    echo "FAIL: export_all.sh" >&2
    exit 1
}
n=$(grep -c '^rkmate trace ' "$tmp/commands.txt" || true)
if [ "$n" != 5 ]; then
    cat "$tmp/commands.txt" >&2
    echo "FAIL: expected 5 'rkmate trace' commands, got $n" >&2
    exit 1
fi
for m in gpt2 resnet regnet mixer transformer; do
    for f in "$m.pt" "$m.inputs.pt" "$m.inputs.txt" "$m.meta.json"; do
        if [ ! -s "$tmp/$f" ]; then
            echo "FAIL: $f missing or empty" >&2
            exit 1
        fi
    done
    # the inputs in the command line are those of the .inputs.txt line
    want=$(sed 's/^/--input /; s/ / --input /g; s/--input --input/--input/g' "$tmp/$m.inputs.txt")
    grep -q -- "rkmate trace $tmp/$m.pt $want --input-file $tmp/$m.inputs.pt -o $tmp/$m.rkg" "$tmp/commands.txt" || {
        echo "FAIL: $m: trace command does not match $m.inputs.txt ($want)" >&2
        exit 1
    }
done
grep -q '"nodes_inlined": 206' "$tmp/gpt2.meta.json" || echo "note: GPT2 node count changed" >&2

spec=$(cat "$tmp/gpt2.inputs.txt")
"$py" "$here/reference_step.py" "$tmp/gpt2.pt" --input "$spec" --save-grads "$tmp/a.pt" >/dev/null
"$py" "$here/reference_step.py" "$tmp/gpt2.pt" --input "$spec" --inputs "$tmp/gpt2.inputs.pt" \
    --save-grads "$tmp/b.pt" >/dev/null
"$py" - "$tmp/a.pt" "$tmp/b.pt" <<'EOF'
import sys
import torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a["param_names"] == b["param_names"] and not a["no_grad"], "parameter lists differ"
assert all(torch.equal(x, y) for x, y in zip(a["outputs"], b["outputs"])), "outputs differ"
assert all(torch.equal(a["grads"][k], b["grads"][k]) for k in a["grads"]), "gradients differ"
EOF
echo "ok: 5 models exported, reloaded, forward+backward; reference step reproducible"
