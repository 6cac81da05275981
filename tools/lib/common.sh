# tools/lib/common.sh — shared by tools/run, tools/test and the benchmarks:
# installs what rkmate needs from Debian's packages (only what is missing)
# and builds the project with meson.

RKMATE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Packages for building and testing.  PyTorch (src/exec, the model exporters,
# the exec tests) is PyPI's, in the project's virtual environment: see
# rk_ensure_venv and tools/requirements-torch.txt.  No Debian torch package is
# needed any more (the variable stays for scripts that still name it).
RKMATE_BUILD_PACKAGES="gcc g++ meson ninja-build pkg-config check libsubunit-dev libjansson-dev zlib1g-dev python3 python3-venv"
RKMATE_TORCH_PACKAGES=""
RKMATE_TEST_REQUIREMENTS="$RKMATE_ROOT/tools/requirements-test.txt"
RKMATE_TORCH_REQUIREMENTS="$RKMATE_ROOT/tools/requirements-torch.txt"

# nvcc lives outside PATH on the CUDA toolkit images.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
    export PATH="$PATH:/usr/local/cuda/bin"
fi

rk_log() { printf '%s\n' "[rkmate] $*" >&2; }

# rk_ensure_packages PKG... : apt-get install the ones not yet installed.
rk_ensure_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then return 0; fi
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
            rk_log "missing packages: ${missing[*]} (run as root or install them)"; return 1; fi
    else SUDO=""; fi
    rk_log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=900 update -q >&2
    $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}" >&2
}

# rk_build DIR [meson options...] : configure (once) and build.
rk_build() {
    local dir="$1"; shift
    cd "$RKMATE_ROOT"
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >&2
    else
        meson configure "$dir" "$@" >/dev/null 2>&1 || true
    fi
    ninja -C "$dir" >&2
}

# rk_ensure_venv REQUIREMENTS... : the project's own virtual environment
# (.venv, ignored by git) with the PyPI packages of the given requirement
# files installed; idempotent: the stamp file lists the hash of every set of
# requirement files installed so far, so callers that ask for different sets
# (tools/test: test + torch; a benchmark: test only) do not reinstall each
# other's.  Logs the time and the venv's size after an install.
# Prints the venv's python.
RKMATE_VENV="$RKMATE_ROOT/.venv"
rk_ensure_venv() {
    rk_ensure_packages python3 python3-venv
    local py="$RKMATE_VENV/bin/python"
    local t0=$SECONDS
    if [ ! -x "$py" ]; then
        rk_log "creating the virtual environment $RKMATE_VENV"
        python3 -m venv "$RKMATE_VENV" >&2
    fi
    local want
    want=$(cat "$@" | sha256sum | cut -d' ' -f1)
    if ! grep -qx "$want" "$RKMATE_VENV/.rkmate-stamp" 2>/dev/null; then
        # One pip at a time in the venv (tools/test and a benchmark may start together).
        (
            flock 9
            if ! grep -qx "$want" "$RKMATE_VENV/.rkmate-stamp" 2>/dev/null; then
                local args=()
                for f in "$@"; do args+=(-r "$f"); done
                rk_log "installing into $RKMATE_VENV: $*"
                "$py" -m pip install -q --disable-pip-version-check "${args[@]}" >&2 || exit 1
                echo "$want" >> "$RKMATE_VENV/.rkmate-stamp"
                rk_log "virtual environment ready in $((SECONDS - t0)) s ($(du -sh "$RKMATE_VENV" 2>/dev/null | cut -f1))"
            fi
        ) 9>"$RKMATE_VENV/.rkmate-lock" || { rk_log "pip install failed"; return 1; }
    fi
    echo "$py"
}

# The Python with the project's torch: the venv with the test and torch
# requirements (created or completed when needed).  Prints its path.
rk_torch_python() {
    rk_ensure_venv "$RKMATE_TEST_REQUIREMENTS" "$RKMATE_TORCH_REQUIREMENTS"
}
