#!/bin/sh
# export_all.sh — export every example model (test-sized defaults) into DIR:
# gpt2.pt, resnet.pt, regnet.pt, mixer.pt, transformer.pt, each with its
# .inputs.{pt,txt} and .meta.json, and print one `rkmate trace ...`
# command per model on stdout.  Extra arguments are passed to every exporter
# (e.g. --dtype float64).  The Python is $RKMATE_PYTHON if set, else the
# project's .venv/bin/python (torch 2.11 from tools/requirements-torch.txt).
set -eu

usage() {
    echo "usage: $0 DIR [EXPORTER-OPTIONS...]" >&2
    echo "  exports gpt2, resnet, regnet, mixer, transformer into DIR (created if missing)" >&2
}

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    usage
    [ $# -ge 1 ] && exit 0
    exit 2
fi
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)

has_torch() {
    "$1" -c 'import torch, torchvision' >/dev/null 2>&1
}

py=""
if [ -n "${RKMATE_PYTHON:-}" ]; then
    if ! has_torch "$RKMATE_PYTHON"; then
        echo "error: RKMATE_PYTHON=$RKMATE_PYTHON cannot import torch and torchvision" >&2
        exit 2
    fi
    py=$RKMATE_PYTHON
elif has_torch "$here/../../.venv/bin/python"; then
    py=$here/../../.venv/bin/python
fi
if [ -z "$py" ]; then
    echo "error: no Python with torch and torchvision: the project's .venv has none (tools/test or" >&2
    echo "       tools/run creates it with tools/requirements-torch.txt), and RKMATE_PYTHON is not set" >&2
    exit 2
fi

mkdir -p "$dir"
echo "using $py ($("$py" -c 'import torch; print("torch", torch.__version__)'))" >&2
for model in gpt2 resnet regnet mixer transformer; do
    "$py" "$here/$model.py" --out "$dir/$model.pt" "$@"
done
