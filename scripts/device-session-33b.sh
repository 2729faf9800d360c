#!/usr/bin/env bash
# Session 33, second device run: the device check with the copper low-pass
# among the shipped designs, then the low-pass's GA generation with perfect
# metal and in copper (default path).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
SHIPPED_GA=0 TLM_BENCH=0 CHECK_GEN=0 IRIS_GENS=3 ACC_REFS=0 OUT="$OUT" bash .device/device-check.sh > "$OUT/devcheck.txt" 2>&1
grep -E "design microstrip_lowpass|shipped designs|device-check (PASS|FAIL)" "$OUT/devcheck.txt"
for d in .device/lowpass_pec.ron designs/microstrip_lowpass.ron; do
  echo "== bench --generation 32 $d (default path)"
  .device/emvolve bench --backend cuda --design "$d" --generation 32 --paths auto --tiles auto 2>&1 | grep -E "generation of 32" | cut -c1-400
done
