#!/usr/bin/env bash
# tools/gpu/run.sh — build, test and benchmark rkmate on a GPU machine that has
# PyTorch (with CUDA) and nvcc but no Debian development packages and no
# network (the `device` machines: torch 2.11+cu130, nvcc 13).  What is missing
# comes from .gpu/ (made by tools/gpu/fetch.sh on a machine with network):
# the .deb files are unpacked into .gpu/root and pkg-config is pointed there.
#   tools/gpu/run.sh [--stages env,build,cuda,test,bench] [--arch sm_90] [--out DIR]
#                    [--deadline SECONDS] [--bench-args "ARGS for tools/bench/exec.py"]
#                    [--grads-args ARGS] [--oom-args ARGS] [--repeat-args ARGS] [--zoo-args ARGS]
# Stages: env (what the machine has), build (build-gpu), cuda (the CUDA tests,
# test_cuda and exec_cuda, alone on the GPU, then python_pkg; a crashing
# python_pkg is rerun with tools/gpu/segv_backtrace.c's native stack), test
# (every other test, run in the background beside the stages below), grads
# (tools/gpu/check_grads.py: what --check says on the device, per parameter),
# oom (tools/gpu/oom_train.py: a model whose plain step does not fit under a
# memory cap, trained by rkmate's schedule), repeat (tools/gpu/trace_repeat.py:
# repeated traces, the same schedules?), zoo (tools/bench/zoo.py --device cuda:
# issue 21's model zoo traced, solved, run and trained one step on the GPU;
# torchvision models only where the machine has torchvision), bench
# (tools/bench/exec.py --device cuda).
# Default stages: env,build,cuda,test,bench.
# --deadline: the whole script's seconds; the stages and the tests are cut
# (timeout) so that it ends inside them with its logs written.
# Logs and results go to --out (default $OUT, else build-gpu/out): env.txt,
# build.log, cuda-*.log, test.log, grads.log, oom.log, repeat.log, bench.log,
# exec.md, results.json, exec.png.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stages=env,build,cuda,test,bench
deadline=0
start=$(date +%s)
arch=sm_90
out=${OUT:-$root/build-gpu/out}
grads_args="--gpt2 2,64,2,32,2 --resnet 50,224,16 --algos none,rockmate"
oom_args="--gpt2 12,768,12,512,8 --fraction 0.3"
repeat_args="--gpt2 12,768,12,512,8 --times 3"
zoo_args="--models vit,transformer_encoder,lstm_lm,gru_lm,lstmcell,tuple_out,unet,convnext_mini,bn_dropout_pool,mobilenet_v2,resnet18,regnet_y_400mf --fractions 50,30 --algos rockmate,rotor"
bench_args="--models gpt2,resnet --gpt2 12,768,12,512,8 --resnet 50,224,32 --fractions 1,0.75,0.5,0.3"
while [ $# -gt 0 ]; do
    case "$1" in
        --stages) stages=$2; shift 2 ;;
        --arch) arch=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --bench-args) bench_args=$2; shift 2 ;;
        --deadline) deadline=$2; shift 2 ;;
        --grads-args) grads_args=$2; shift 2 ;;
        --oom-args) oom_args=$2; shift 2 ;;
        --repeat-args) repeat_args=$2; shift 2 ;;
        --zoo-args) zoo_args=$2; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "tools/gpu/run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
has() { case ",$stages," in *",$1,"*) return 0 ;; esac; return 1; }
# seconds left before the deadline, less a margin (a large number without one)
left() { if [ "$deadline" -gt 0 ]; then echo $((deadline - ($(date +%s) - start) - ${1:-10})); else echo 100000; fi; }
cd "$root"
jobs=$(nproc)

# --- what the machine lacks, from .gpu/ -------------------------------------
sys=$root/.gpu/root
if [ -d .gpu/debs ]; then
    rm -rf "$sys"; mkdir -p "$sys"
    for d in .gpu/debs/*.deb; do dpkg-deb -x "$d" "$sys" || { echo "cannot unpack $d" >&2; exit 1; }; done
    # absolute symbolic links (zlib's libz.so) point into the unpacked tree
    find "$sys" -type l | while read -r l; do
        t=$(readlink "$l")
        case "$t" in /*) [ -e "$sys$t" ] && ln -sfn "$sys$t" "$l" ;; esac
    done
    export PATH=$sys/usr/bin:$PATH
    export PKG_CONFIG=$sys/usr/bin/pkgconf
    export PKG_CONFIG_LIBDIR=$sys/usr/lib/x86_64-linux-gnu/pkgconfig:$sys/usr/share/pkgconfig
    export PKG_CONFIG_SYSROOT_DIR=$sys
    # the compilers' own search paths too (a static link of -ljansson in the install test)
    export LIBRARY_PATH=$sys/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
    export C_INCLUDE_PATH=$sys/usr/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
    export CPLUS_INCLUDE_PATH=$sys/usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
    export LD_LIBRARY_PATH=$sys/usr/lib/x86_64-linux-gnu:$sys/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
py=$(command -v python3)
# meson and ninja from pip live beside that Python
export PATH=$PATH:$(dirname "$py")
if ls .gpu/whl/*.whl >/dev/null 2>&1; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/rkmate-site \
        .gpu/whl/*.whl && export PYTHONPATH=/tmp/rkmate-site${PYTHONPATH:+:$PYTHONPATH}
fi
export RKMATE_PYTHON=$py
# a crash in a Python test prints the Python stack (faulthandler) into its log
export PYTHONFAULTHANDLER=1
nvcc=$(command -v nvcc || true)
for c in /usr/local/cuda/bin/nvcc $("$py" -c 'import nvidia,os;print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia/cu13/bin/nvcc; do
    [ -z "$nvcc" ] && [ -x "$c" ] && nvcc=$c
done
[ -n "$nvcc" ] && export PATH=$(dirname "$nvcc"):$PATH

if has env; then
    { date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
      echo "nvcc: $nvcc"; ${nvcc:-false} --version | tail -2; cc --version | head -1; c++ --version | head -1
      echo "python: $py"; "$py" -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,torch.cuda.is_available(),torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
      "$py" -c 'import highspy;print("highspy ok")'; nproc; free -g | head -2; } > "$out/env.txt" 2>&1
    cat "$out/env.txt"
fi

status=0
if has build; then
    echo "== build (build-gpu, -Dnvcc_arch=$arch)"
    { [ -f build-gpu/build.ninja ] || meson setup build-gpu --buildtype=release -Dtorch=enabled -Dtorch_python="$py" \
          -Dcuda=enabled -Dnvcc_arch="$arch" -Dstatic_tests=false; } > "$out/build.log" 2>&1 &&
        ninja -C build-gpu -j "$jobs" >> "$out/build.log" 2>&1 || { status=1; tail -40 "$out/build.log"; }
    tail -3 "$out/build.log"
fi
if has cuda && [ $status -eq 0 ]; then
    echo "== the CUDA tests, alone on the GPU (and python_pkg, whose first GPU run crashed)"
    ldd build-gpu/python/rkmate/_rkmate_ops.so > "$out/ldd-rkmate_ops.txt" 2>&1
    for t in test_cuda exec_cuda python_pkg; do
        timeout "$(left 60)" meson test -C build-gpu --no-rebuild --verbose "$t" > "$out/cuda-$t.log" 2>&1 || status=1
        grep -E "^ok:|FAIL|skipped|^ *1/1 " "$out/cuda-$t.log" | head -20
    done
    if grep -qE "SIGSEGV|Segmentation|signal 11" "$out/cuda-python_pkg.log"; then
        echo "== python_pkg crashed: again with a native backtrace (tools/gpu/segv_backtrace.c)"
        cc -shared -fPIC -O1 -o build-gpu/segv_backtrace.so tools/gpu/segv_backtrace.c -ldl &&
            LD_PRELOAD=$root/build-gpu/segv_backtrace.so PYTHONFAULTHANDLER= timeout "$(left 60)" \
                meson test -C build-gpu --no-rebuild --verbose python_pkg > "$out/cuda-python_pkg-bt.log" 2>&1
        grep -E "^#[0-9]+ " "$out/cuda-python_pkg-bt.log" | head -40 | while read -r n f off sym; do
            case "$f" in */build-gpu/*) echo "$n $(addr2line -f -C -i -e "$f" "${off#+}" 2>/dev/null | paste -sd' ')  [$f $off]" ;;
                         *) echo "$n $f $off $sym" ;; esac
        done | tee -a "$out/cuda-python_pkg-bt.log"
    fi
fi
tests_pid=
if has test && [ -x build-gpu/tools/rkmate/rkmate ]; then
    echo "== every other test (meson test, in the background)"
    others=$(meson introspect build-gpu --tests | "$py" -c 'import json,sys
print(" ".join(t["name"] for t in json.load(sys.stdin) if t["name"] not in ("test_cuda", "exec_cuda", "python_pkg")))')
    # shellcheck disable=SC2086
    ( timeout "$(left 20)" meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes "$jobs" \
          $others > "$out/test.log" 2>&1; echo "meson test exit $?" >> "$out/test.log" ) &
    tests_pid=$!
fi
rkbin=build-gpu/tools/rkmate/rkmate
if has grads && [ -x $rkbin ]; then
    echo "== grads: tools/gpu/check_grads.py $grads_args"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "$(left 60)" "$py" tools/gpu/check_grads.py --rkmate $rkbin --out build-gpu/grads \
        $grads_args 2>&1 | tee "$out/grads.log"
fi
if has oom && [ -x $rkbin ]; then
    echo "== oom: tools/gpu/oom_train.py $oom_args"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "$(left 60)" "$py" tools/gpu/oom_train.py --rkmate $rkbin --out build-gpu/oom \
        $oom_args 2>&1 | tee "$out/oom.log"
fi
if has repeat && [ -x $rkbin ]; then
    echo "== repeat: tools/gpu/trace_repeat.py $repeat_args"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "$(left 60)" "$py" tools/gpu/trace_repeat.py --rkmate $rkbin --out build-gpu/repeat \
        $repeat_args 2>&1 | tee "$out/repeat.log"
fi
if has zoo && [ -x $rkbin ]; then
    zargs=$zoo_args
    if ! "$py" -c 'import torchvision' 2>/dev/null; then  # keep the hand-written models only
        zargs=$("$py" - "$zoo_args" <<'PY'
import sys
a = sys.argv[1].split()
i = a.index("--models") if "--models" in a else -1
tv = {"resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "vgg11", "squeezenet1_0",
      "shufflenet_v2_x0_5", "convnext_tiny", "regnet_y_400mf"}
if i >= 0:
    a[i + 1] = ",".join(m for m in a[i + 1].split(",") if m not in tv)
print(" ".join(a))
PY
)
        echo "(no torchvision here: $zargs)"
    fi
    echo "== zoo: tools/bench/zoo.py --device cuda $zargs"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "$(left 40)" "$py" tools/bench/zoo.py --rkmate $rkbin --device cuda \
        --out build-gpu/zoo $zargs 2>&1 | tee "$out/zoo.log"
    cp build-gpu/zoo/zoo.md build-gpu/zoo/zoo.json "$out/" 2>/dev/null
fi
if has bench && [ -x build-gpu/tools/rkmate/rkmate ]; then
    echo "== bench: tools/bench/exec.py --device cuda $bench_args"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "$(left 40)" "$py" tools/bench/exec.py --rkmate build-gpu/tools/rkmate/rkmate \
        --device cuda --out build-gpu/bench $bench_args 2>&1 | tee "$out/bench.log"
    cp build-gpu/bench/exec.md build-gpu/bench/results.json build-gpu/bench/exec.png "$out/" 2>/dev/null
fi
if [ -n "$tests_pid" ]; then
    wait "$tests_pid"
    grep -E "^ *[0-9]+/[0-9]+ " "$out/test.log" | sed 's/  */ /g'
    tail -9 "$out/test.log"
    grep -q "meson test exit 0" "$out/test.log" || status=1
fi
exit $status
