#!/usr/bin/env bash
# Device machine, TLM on CUDA: compile report of the TLM kernels for several
# launch shapes, CUDA vs CPU TLM comparison (device-check --engine tlm), then
# the TLM benchmark table (printed last). Needs only the release binary next
# to this script (a folder carried by the device tool):
#   bash .device-tlm/tlm-device.sh 2>&1 | tee $OUT/log
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="$HERE/emvolve"
OUT="${OUT:-$HERE/out}"
GPUS="${GPUS:-0}"
SHAPES="${SHAPES:-256x1,256x2,256x2s,256x4,128x4}"
CHECK_SHAPES="${CHECK_SHAPES:-256x2,256x2s,256x4,128x4}"
mkdir -p "$OUT"
date -u +"%Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/gpu.txt"

echo "== 1. compile only (NVRTC log and resources per TLM kernel)"
if ! timeout 120 "$BIN" device-check --engine tlm --compile-only --gpus "$GPUS" --tlm-shapes "$SHAPES" 2>&1 | tee "$OUT/compile.log"; then
    echo "TLM kernel compilation failed: see above"
    exit 2
fi
grep -q "compiled and loaded" "$OUT/compile.log" || { echo "TLM kernel compilation failed"; exit 2; }

echo "== 2. CPU vs CUDA TLM (full table in check.log)"
t0=$(date +%s)
timeout 200 "$BIN" device-check --engine tlm --gpus "$GPUS" --tlm-shapes "$CHECK_SHAPES" > "$OUT/check.log" 2>&1
rc=$?
cat "$OUT/check.log" | cut -c1-230
echo "check exit code $rc, $(( $(date +%s) - t0 )) s"

echo "== 3. TLM benchmark"
t0=$(date +%s)
timeout 300 "$BIN" bench --backend cuda --engine tlm --gpus "$GPUS" --n 320 --steps 200 --steps2 600 --population 64 --cells 300000 \
    --tlm-shapes "$SHAPES" > "$OUT/bench.log" 2>&1
echo "bench exit code $?, $(( $(date +%s) - t0 )) s"
echo "check: $(grep -E '^device-check TLM' "$OUT/check.log" | cut -c1-160)"
cat "$OUT/bench.log"
