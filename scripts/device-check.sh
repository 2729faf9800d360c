#!/usr/bin/env bash
# Device machine: the CUDA backend against the CPU engine, then the benchmark
# table (printed last). Needs only the release binary next to this script
# (the .device/ folder carried by the device tool):
#   bash .device/device-check.sh 2>&1 | tee $OUT/log
# Logs go to $OUT (or .device/out). GPUS=0,1 spreads the jobs over two GPUs.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="$HERE/emvolve"
OUT="${OUT:-$HERE/out}"
GPUS="${GPUS:-0}"
mkdir -p "$OUT"
date -u +"%Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/gpu.txt"

echo "== 1. compile only (NVRTC log and resources per kernel)"
if ! "$BIN" device-check --compile-only --gpus "$GPUS" --tiles 32x8,32x16,64x4 2>&1 | tee "$OUT/compile.log"; then
    echo "kernel compilation failed: see above"
    exit 2
fi
grep -q "compiled and loaded" "$OUT/compile.log" || { echo "kernel compilation failed"; exit 2; }

echo "== 2. CPU vs CUDA (full table in check.log)"
t0=$(date +%s)
"$BIN" device-check --gpus "$GPUS" --tiles 32x8,32x16 > "$OUT/check.log" 2>&1
rc=$?
# Per variant: the worst line of each kind, every failing line, and the verdict.
grep -E "FAIL|error" "$OUT/check.log" | head -30
grep -E "^\[fused 32x8 z=auto\]" "$OUT/check.log" | cut -c1-190
grep -E "^CPU reference|^device-check" "$OUT/check.log"
# --- TLM on CUDA: device-check also compares the TLM kernels (lines "[tlm SHAPE] ...").
grep -E "^\[tlm 256x2\]|^TLM CPU reference" "$OUT/check.log" | cut -c1-190
# --- end TLM
echo "check exit code $rc, $(( $(date +%s) - t0 )) s"

echo "== 3. benchmark"
"$BIN" bench --backend cuda --gpus "$GPUS" --n 256 --steps 500 --steps2 1500 --population 64 --cells 300000 \
    --scheme both --tiles 32x8,32x16 > "$OUT/bench.log" 2>&1
echo "bench exit code $?"
grep -E "error" "$OUT/bench.log"
# --- TLM on CUDA: TLM rows (3D box, 3D and 2D populations).
"$BIN" bench --backend cuda --engine tlm --gpus "$GPUS" --n 320 --steps 200 --steps2 600 --population 64 --cells 300000 \
    --tlm-shapes 256x2 > "$OUT/bench-tlm.log" 2>&1
echo "TLM bench exit code $?"
# --- end TLM
echo "check: $(grep -E '^device-check' "$OUT/check.log" | cut -c1-120)"
cat "$OUT/bench.log"
cat "$OUT/bench-tlm.log"
