#!/usr/bin/env bash
# tools/gpu/memlog.sh OUT SCRIPT MODEL... — where a step on the GPU leaves its
# prediction: each model of SCRIPT (tools/models/unseen.py or zoo.py; 96x96,
# batch 4) is exported, traced on CUDA, solved (keep-all, and rockmate at 50 %
# with the zoo's settings) and run with `--memory-log` (the simulator's bytes
# beside the measured ones, op by op).  Needs build-gpu (tools/gpu/run.sh
# --stages env,build).  Writes OUT/memlog.txt (each run's report, the ops
# measured above their prediction) and OUT/memlog.tgz (the logs).
set -uo pipefail
out=$1; script=$2; shift 2
rk=build-gpu/tools/rkmate/rkmate
py=$(command -v python3)
logs=build-gpu/memlog/logs
mkdir -p "$logs" "$out"
for m in "$@"; do
    d=build-gpu/memlog/$m
    mkdir -p "$d"
    {
        echo "== $m"
        if ! "$py" "$script" --model "$m" --out "$d/m.pt" --image 96 --batch 4 --no-check > "$d/export.log" 2>&1; then
            echo "export failed"; tail -5 "$d/export.log"; continue
        fi
        "$rk" trace "$d/m.pt" --input-file "$d/m.inputs.pt" --device cuda -o "$d/m.rkg" --quiet || continue
        "$rk" solve "$d/m.rkg" --budget 1TB --algo none -o "$d/none.rks" --quiet > /dev/null
        "$rk" solve "$d/m.rkg" --budget 50% --grid 6x6 --time-limit 2 -o "$d/rk50.rks" --quiet > /dev/null
        for s in none rk50; do
            [ -f "$d/$s.rks" ] || { echo "-- $s: no schedule"; continue; }
            echo "-- $s"
            "$rk" run "$d/m.pt" "$d/$s.rks" --chain "$d/m.rkg" --input-file "$d/m.inputs.pt" --device cuda \
                --iters 3 --memory-log "$logs/$m.$s.tsv" 2>&1
            # the ops measured above their prediction by more than 64 KiB
            awk -F'\t' '!/^#/ && $1 != "op" && $6 - $5 > 65536 {print "   above:", $0}' "$logs/$m.$s.tsv" | head -25
        done
    } 2>&1 | tee -a "$out/memlog.txt"
done
tar czf "$out/memlog.tgz" -C build-gpu/memlog logs
