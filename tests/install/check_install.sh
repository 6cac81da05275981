#!/usr/bin/env bash
# check_install.sh — the library as its users link it: `meson install` of a
# build into a temporary DESTDIR, then, against that installed copy only
# (pkg-config's rkmate.pc, with PKG_CONFIG_SYSROOT_DIR pointing into it):
#  1. every installed header compiles alone in a fresh translation unit (C11,
#     and C++17 when a C++ compiler is given), included twice, -Werror -pedantic;
#  2. the example consumers of examples/ build statically (`cc -static` with
#     `pkg-config --cflags --libs --static rkmate`) and against the shared
#     library, and run on real files of tests/data: an MPS file solved to the
#     optimum of OPTIMA.tsv, a traced chain solved at a budget, its schedule
#     replayed by the installed `rkmate simulate`;
#  3. with --symbols (needs GCC's -aux-info): `nm -D --defined-only
#     librkmate.so` lists only public names (rk_ and declared by an installed
#     header), and every function the core's installed headers declare.
# usage: check_install.sh BUILD_DIR SOURCE_DIR [--symbols]
#   env CC (default cc), CXX (default: none, no C++ check)
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
symbols=0
[ "${3:-}" = --symbols ] && symbols=1
CC=${CC:-cc}
CXX=${CXX:-}
data=$src/tests/data

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rkmate-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }

# ---------------------------------------------------------------- install
dest=$tmp/root
meson install -C "$build" --no-rebuild --destdir "$dest" --quiet >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "meson install -C $build --destdir $dest"; }
pc=$(find "$dest" -name rkmate.pc -print -quit)
[ -n "$pc" ] || fail "no rkmate.pc installed under $dest"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
in_dest() { case "$1" in "$dest"/*) echo "$1" ;; *) echo "$dest$1" ;; esac; } # pkgconf adds the sysroot itself
libdir=$(in_dest "$(pkg-config --variable=libdir rkmate)")
incdir=$(in_dest "$(pkg-config --variable=includedir rkmate)")/rkmate
bindir=$(dirname "$(find "$dest" -path '*/bin/rkmate' -type f -print -quit)")
[ -d "$incdir" ] || fail "no installed header folder $incdir"
[ -f "$libdir/librkmate.a" ] && [ -f "$libdir/librkmate.so" ] ||
    fail "librkmate.a and librkmate.so are not both in $libdir"
[ -x "$bindir/rkmate" ] || fail "no installed rkmate program"
cflags=$(pkg-config --cflags rkmate)
echo "installed into $dest: $(cd "$dest" && find . -type f | wc -l) files; cflags $cflags"

# ------------------------------------------------ each header on its own
n=0
for h in "$incdir"/*.h; do
    b=$(basename "$h")
    printf '#include "%s"\n#include "%s"\nint main(void) { return 0; }\n' "$b" "$b" >"$tmp/tu.c"
    # shellcheck disable=SC2086
    $CC -std=c11 -Wall -Wextra -Werror -pedantic $cflags -c "$tmp/tu.c" -o "$tmp/tu.o" 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; fail "installed header $b does not compile alone in C"; }
    if [ -n "$CXX" ]; then
        cp "$tmp/tu.c" "$tmp/tu.cpp"
        # shellcheck disable=SC2086
        $CXX -std=c++17 -Wall -Wextra -Werror -pedantic $cflags -c "$tmp/tu.cpp" -o "$tmp/tu.o" 2>"$tmp/err" ||
            { cat "$tmp/err" >&2; fail "installed header $b does not compile alone in C++"; }
    fi
    n=$((n + 1))
done
echo "headers: $n installed, each compiles alone (C11${CXX:+ and C++17}): $(cd "$incdir" && echo *.h)"
for h in rk_graph.h rk_milp.h rk_dp.h rk_checkmate.h rk_solve.h; do
    [ -f "$incdir/$h" ] || fail "$h is not installed"
done

# ------------------------------------------- example consumers, static + shared
build_example() { # NAME KIND
    local out=$tmp/$1-$2
    if [ "$2" = static ]; then
        # shellcheck disable=SC2086
        $CC -std=c11 -Wall -Wextra -Werror -static "$src/examples/$1.c" $(pkg-config --cflags --libs --static rkmate) \
            -o "$out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "$1: static link with pkg-config --static rkmate"; }
        readelf -d "$out" >"$tmp/dyn" 2>&1 || true # (no pipe into grep -q: pipefail and SIGPIPE)
        if grep -q NEEDED "$tmp/dyn"; then fail "$1 (static) needs shared libraries"; fi
    else
        # shellcheck disable=SC2086
        $CC -std=c11 -Wall -Wextra -Werror "$src/examples/$1.c" $(pkg-config --cflags --libs rkmate) \
            -o "$out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "$1: link with pkg-config rkmate (shared)"; }
        LD_LIBRARY_PATH=$libdir ldd "$out" >"$tmp/ldd"
        grep -qF "librkmate.so => $libdir/" "$tmp/ldd" ||
            { cat "$tmp/ldd" >&2; fail "$1 (shared) does not load the installed librkmate.so"; }
    fi
}
expect_line() { # FILE LINE
    grep -qxF "$2" "$1" || { cat "$1" >&2; fail "expected the line '$2' in the output above"; }
}
run() { LD_LIBRARY_PATH=$libdir "$@"; }
optimum() { awk -v n="$2" '$1 == n { print $2 }' "$data/$1/OPTIMA.tsv"; }

for kind in static shared; do
    build_example milp_solve $kind
    build_example solve_chain $kind

    # A MILP (p0033) and an LP (afiro) read from .mps.gz, against the optima of OPTIMA.tsv.
    # The library prints nothing by itself; -v routes the solver's log lines
    # through the example's callback (rk_milp_params.log), same result.
    run "$tmp/milp_solve-$kind" "$data/miplib3/p0033.mps.gz" 60 >"$tmp/p0033.out" 2>"$tmp/err"
    expect_line "$tmp/p0033.out" "problem 16 rows 33 columns 33 integer"
    expect_line "$tmp/p0033.out" "status optimal"
    expect_line "$tmp/p0033.out" "objective $(optimum miplib3 p0033)"
    [ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "milp_solve-$kind printed on stderr with its log silenced"; }
    run "$tmp/milp_solve-$kind" -v "$data/miplib3/p0033.mps.gz" 60 >"$tmp/p0033v.out" 2>"$tmp/err"
    cmp -s "$tmp/p0033.out" "$tmp/p0033v.out" || fail "milp_solve-$kind -v: another result"
    nlog=$(grep -c "^$tmp/milp_solve-$kind \[[IDW]\] " "$tmp/err" || true)
    [ "$nlog" -gt 0 ] && [ "$nlog" = "$(wc -l <"$tmp/err")" ] ||
        { cat "$tmp/err" >&2; fail "milp_solve-$kind -v: the log lines above did not all come through the callback"; }
    run "$tmp/milp_solve-$kind" "$data/netlib/afiro.mps.gz" >"$tmp/afiro.out"
    expect_line "$tmp/afiro.out" "status optimal"
    expect_line "$tmp/afiro.out" "objective $(optimum netlib afiro)"
    # A bad file: a clear message naming it and its line, exit 2.
    st=0
    run "$tmp/milp_solve-$kind" "$data/mps_bad/05_bad_number.mps" >/dev/null 2>"$tmp/err" || st=$?
    [ $st = 2 ] && grep -q "05_bad_number.mps: line 7: expected a number" "$tmp/err" ||
        { cat "$tmp/err" >&2; fail "milp_solve-$kind on a bad MPS file: exit $st"; }

    # A chain traced from GPT-2 (2 layers), solved by rockmate (3x3 grid) at 150 kB;
    # the schedule file is replayed by the installed rkmate.
    rks=$tmp/gpt2-$kind.rks
    run "$tmp/solve_chain-$kind" "$data/chains/gpt2_l2.rkg" 150kB "$rks" rockmate 3x3 >"$tmp/chain.out" 2>"$tmp/err"
    [ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "solve_chain-$kind printed on stderr"; }
    expect_line "$tmp/chain.out" "chain 9 blocks 7 classes"
    expect_line "$tmp/chain.out" "algorithm rockmate"
    peak=$(awk '$1 == "simulated" { print $2 }' "$tmp/chain.out")
    [ -n "$peak" ] && [ "$peak" -le 150000 ] || { cat "$tmp/chain.out" >&2; fail "solve_chain-$kind: peak over 150 kB"; }
    "$bindir/rkmate" simulate "$data/chains/gpt2_l2.rkg" "$rks" --json >"$tmp/sim.json"
    python3 - "$tmp/sim.json" "$tmp/chain.out" <<'PY' || fail "solve_chain-$kind: rkmate simulate disagrees"
import json, sys
sim = json.load(open(sys.argv[1]))
line = [l.split() for l in open(sys.argv[2]) if l.startswith("simulated ")][0]
peak, time = int(line[1]), float(line[3])
assert sim["valid"] and sim["within_budget"] and sim["budget"] == 150000, sim
assert sim["peak"] == peak and abs(sim["time"] - time) <= 1e-6 * time, (sim, line)
PY
    # Below the smallest budget: exit 3, a message with the budget that works, no file.
    st=0
    run "$tmp/solve_chain-$kind" "$data/chains/gpt2_l2.rkg" 10kB "$tmp/none.rks" rotor >/dev/null 2>"$tmp/err" || st=$?
    [ $st = 3 ] && grep -q "smallest budget that works" "$tmp/err" && [ ! -e "$tmp/none.rks" ] ||
        { cat "$tmp/err" >&2; fail "solve_chain-$kind below the smallest budget: exit $st"; }
    echo "examples ($kind): p0033 $(optimum miplib3 p0033) ($nlog log lines through the callback with -v), afiro $(optimum netlib afiro), gpt2_l2 at 150 kB: peak $peak"
done

# ------------------------------------------------------- exported symbols
if [ $symbols = 1 ]; then
    # Public functions: those the installed headers declare (GCC's -aux-info
    # lists every declaration with the file it comes from).
    for h in "$incdir"/*.h; do printf '#include "%s"\n' "$(basename "$h")"; done >"$tmp/all.c"
    # shellcheck disable=SC2086
    $CC -std=c11 $cflags -fsyntax-only -aux-info "$tmp/aux.txt" "$tmp/all.c"
    grep -F "/* $incdir/" "$tmp/aux.txt" | grep -v '\bstatic\b' |
        sed -E 's|^/\*[^*]*\*/ *||; s/^([^(]*[ *])([A-Za-z_][A-Za-z0-9_]*) \(.*/\2/' | sort -u >"$tmp/public.txt"
    nm -D --defined-only "$libdir/librkmate.so" | awk '{ print $3 }' | sort -u >"$tmp/exported.txt"
    grep -v '^rk_' "$tmp/exported.txt" >"$tmp/bad.txt" || true
    comm -23 "$tmp/exported.txt" "$tmp/public.txt" | grep '^rk_' >>"$tmp/bad.txt" || true
    if [ -s "$tmp/bad.txt" ]; then
        echo "librkmate.so exports $(wc -l <"$tmp/bad.txt") names that are not public (rk_ and declared in an installed header):" >&2
        sed 's/^/  /' "$tmp/bad.txt" >&2
        fail "nm -D --defined-only librkmate.so"
    fi
    # And the other way: every function the core's headers declare is there
    # (rk_exec.h's are librkmate_exec.so's, rk_cuda.h's librkmate_cuda.a's).
    grep -F "/* $incdir/" "$tmp/aux.txt" | grep -vF -e "/* $incdir/rk_exec.h:" -e "/* $incdir/rk_cuda.h:" | grep -v '\bstatic\b' |
        sed -E 's|^/\*[^*]*\*/ *||; s/^([^(]*[ *])([A-Za-z_][A-Za-z0-9_]*) \(.*/\2/' | sort -u >"$tmp/core.txt"
    comm -23 "$tmp/core.txt" "$tmp/exported.txt" >"$tmp/missing.txt"
    if [ -s "$tmp/missing.txt" ]; then
        echo "declared by an installed header but not exported by librkmate.so (RK_API missing?):" >&2
        sed 's/^/  /' "$tmp/missing.txt" >&2
        fail "nm -D --defined-only librkmate.so"
    fi
    echo "symbols: librkmate.so exports $(wc -l <"$tmp/exported.txt") names, each rk_ and declared in an installed" \
        "header; the $(wc -l <"$tmp/core.txt") functions its headers declare are all there"
fi
# ------------------------------------- librkmate_exec (builds with torch only)
if [ -f "$incdir/rk_exec.h" ]; then
    [ -n "$(find "$dest" -name rkmate_exec.pc -print -quit)" ] || fail "rk_exec.h installed but no rkmate_exec.pc"
    # A consumer of rk_exec.h linked with `pkg-config --cflags --libs rkmate_exec` only:
    # it loads (libtorch found through the library), and a model file that is not
    # there is refused with a message naming it.
    cat >"$tmp/exec_user.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "rk_exec.h"
int main(int argc, char **argv) {
    (void)argc;
    rk_exec_options o;
    memset(&o, 0, sizeof o);
    o.model_path = argv[1];
    o.n_inputs = 1;
    o.inputs[0] = "2x3:float32";
    rk_chain ch;
    memset(&ch, 0, sizeof ch);
    rk_error err = {0};
    rk_status st = rk_exec_trace(&o, &ch, NULL, &err);
    printf("cuda %d\nstatus %d\n%s\n", rk_exec_cuda_available(), (int)st, err.msg);
    return st == RK_OK;
}
C
    # shellcheck disable=SC2046
    $CC -std=c11 -Wall -Wextra -Werror "$tmp/exec_user.c" $(pkg-config --cflags --libs rkmate_exec) \
        -o "$tmp/exec_user" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "a rk_exec.h program: link with pkg-config rkmate_exec"; }
    run "$tmp/exec_user" "$tmp/no_such_model.pt" >"$tmp/exec.out" 2>"$tmp/err" ||
        { cat "$tmp/exec.out" "$tmp/err" >&2; fail "the rk_exec.h program did not run or accepted a missing model"; }
    grep -q "no_such_model.pt" "$tmp/exec.out" || { cat "$tmp/exec.out" >&2; fail "rk_exec_trace: no message naming the missing model"; }
    echo "librkmate_exec: rkmate_exec.pc links a consumer; a missing model: $(tail -n 1 "$tmp/exec.out")"
fi
echo "check_install: OK"
