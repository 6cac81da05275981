#!/bin/sh
# run_exec_tests.sh — runs tests/exec/test_exec.py with a Python that has
# torch (the exporters need it).  Exit 77 (meson's "skipped") when rkmate was
# built without its libtorch part ($1 = 0) or when no Python imports torch.
here=$(dirname "$0")
if [ "$1" != "1" ]; then
    echo "rkmate-torch is not built (-Dtorch=disabled or no libtorch): skipped"
    exit 77
fi
for py in /usr/bin/python3 python3; do
    if "$py" -c "import torch" >/dev/null 2>&1; then
        exec "$py" "$here/test_exec.py"
    fi
done
echo "no Python with torch found: skipped"
exit 77
