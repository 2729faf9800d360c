#!/usr/bin/env bash
# Session 32 device run: the device check (CPU vs CUDA, edge currents included),
# then the GPU cost of the wideband FR-4 model on the patch's GA generation.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
SHIPPED_GA=0 TLM_BENCH=0 CHECK_GEN=0 IRIS_GENS=3 ACC_REFS=0 OUT="$OUT" bash .device/device-check.sh > "$OUT/devcheck.txt" 2>&1
grep -E "edge currents|PASS|FAIL|worst|overall" "$OUT/devcheck.txt" | head -60
echo "== tail of the device check"
tail -40 "$OUT/devcheck.txt"
sed "s/tan_delta: 0.02)/tan_delta: 0.02, loss: Wideband)/" designs/patch_2g4.ron > "$OUT/patch_wb.ron"
for d in designs/patch_2g4.ron "$OUT/patch_wb.ron"; do
  echo "== bench --generation 64 $d"
  .device/emvolve bench --backend cuda --design "$d" --generation 64 --n 32 --steps 20 --steps2 40 --population 1 --cells 10000 2>&1 | grep -E "generation of 64|^\| streaming"
done
