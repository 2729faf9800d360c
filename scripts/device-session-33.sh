#!/usr/bin/env bash
# Session 33 device run: the device check (CPU vs CUDA, lossy metal faces
# included), then the GPU cost of copper on the iris filter's GA generation.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
SHIPPED_GA=0 TLM_BENCH=0 CHECK_GEN=0 IRIS_GENS=3 ACC_REFS=0 OUT="$OUT" bash .device/device-check.sh > "$OUT/devcheck.txt" 2>&1
grep -E "surface|edge currents|PASS|FAIL|worst|overall" "$OUT/devcheck.txt" | head -60
echo "== tail of the device check"
tail -30 "$OUT/devcheck.txt"
for d in designs/wr28_iris_filter.ron .device/iris_cu.ron; do
  echo "== bench --generation 64 $d"
  .device/emvolve bench --backend cuda --design "$d" --generation 64 --verbose 2>&1 | grep -E "path|streaming|on-chip" | sort | uniq -c | head -5
  .device/emvolve bench --backend cuda --design "$d" --generation 64 2>&1 | tail -6
done
