#!/usr/bin/env bash
# tools/gpu/fetch.sh — on a Debian 12 machine with network: fetch what a bare
# GPU machine lacks to build and test rkmate (Debian packages of jansson,
# Check, subunit, pkgconf and zlib's headers; the HiGHS wheel the MILP tests
# use) into .gpu/ (git-ignored), so that it can travel with the checkout to a
# machine without network.  Then, there: tools/gpu/run.sh.
#   tools/gpu/fetch.sh [--python-version 3.12]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pyver=3.12
while [ $# -gt 0 ]; do
    case "$1" in
        --python-version) pyver=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "tools/gpu/fetch.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$root/.gpu/debs" "$root/.gpu/whl"
cd "$root/.gpu/debs"
apt-get download check libjansson-dev libjansson4 libsubunit-dev libsubunit0 \
    pkgconf pkgconf-bin libpkgconf3 zlib1g-dev zlib1g
# plain file names (an epoch's "%3a", a "+b1") travel everywhere
for f in *.deb; do g=$(printf '%s' "$f" | tr '%+' '__'); [ "$f" = "$g" ] || mv -f "$f" "$g"; done
py=$root/.venv/bin/python; [ -x "$py" ] || py=python3
"$py" -m pip download --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$root/.gpu/whl" highspy==1.16.0
ls -l "$root/.gpu/debs" "$root/.gpu/whl"
