#!/bin/sh
# run_exec_tests.sh BUILT PYTHON [TEST] — runs tests/exec/TEST (default
# test_exec.py) with PYTHON, the Python whose torch package src/exec was built
# against (meson's torch_python: the project's .venv), so that the models the
# tests export are saved by the same torch that traces and runs them.
# Exit 77 (meson's "skipped") when rkmate was built without its libtorch part
# ($1 = 0) or that Python cannot import torch.
here=$(dirname "$0")
if [ "$1" != "1" ]; then
    echo "rkmate-torch is not built (-Dtorch=disabled or no libtorch): skipped"
    exit 77
fi
py=$2
if [ -z "$py" ] || ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "the Python of the build's torch ('$py') cannot import torch: skipped"
    exit 77
fi
exec "$py" "$here/${3:-test_exec.py}"
