#!/usr/bin/env bash
# Device machine: the CUDA backend against the CPU engine, then the benchmark
# table (printed last). Needs only the release binaries (emvolve, emvolve-lab)
# and sweep-resonance.py next to this script
# (the .device/ folder carried by the device tool):
#   bash .device/device-check.sh 2>&1 | tee $OUT/log
# Logs go to $OUT (or .device/out). Environment knobs:
#   GPUS=0,1          spread the jobs over two GPUs
#   CHECK_TILES=...   kernel variants checked against the CPU (TXxTY[:stages[:minblocks]])
#   BENCH_TILES=...   kernel variants timed
#   BENCH="--n 256 --steps 500 --steps2 1500 --population 64 --cells 300000"
#   FULL_STEPS=200    steps of the CPU/CUDA comparison on the full-size benchmark workloads (0: skip)
#   NCU=1             profile one fdtd_step and one fdtd_update_e launch (Nsight Compute, $OUT/ncu_*.txt)
#   TLM_SHAPES=...    TLM launch shapes checked and timed (THREADSxNODES[xMINBLOCKS][s]), e.g. 256x1,256x2,256x2s,128x4
#   CHECK_GEN=64      random iris candidates compared CPU against CUDA through the user's path (0: skip)
#   TLM_BENCH=0       leave out the TLM benchmark rows
#   IRIS_GENS=40      generations of the iris GA (it stops earlier once every goal is met)
#   ACC_REFS=1        the iris filter's default mesh against a/448 (P1-P3 of docs/ACCURACY.md; edges.py beside this script)
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="$HERE/emvolve"
# The developers' program: the device check, and bench with the tuning knobs.
LAB="$HERE/emvolve-lab"
OUT="${OUT:-$HERE/out}"
GPUS="${GPUS:-0}"
CHECK_TILES="${CHECK_TILES:-32x8,64x4}"
BENCH_TILES="${BENCH_TILES:-32x8}"
BENCH="${BENCH:---n 256 --steps 500 --steps2 1500 --population 64 --cells 300000}"
mkdir -p "$OUT"
date -u +"%Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/gpu.txt"

echo "== 1. compile only (NVRTC log and resources per kernel)"
ALL_TILES=$(echo "$CHECK_TILES,$BENCH_TILES" | tr ',' '\n' | awk '!seen[$0]++' | paste -sd, -)
if ! "$LAB" device-check --compile-only --gpus "$GPUS" --tiles "$ALL_TILES" > "$OUT/compile.log" 2>&1; then
    cat "$OUT/compile.log"
    echo "kernel compilation failed: see above"
    exit 2
fi
grep -E "tile|fdtd_step|fdtd_update|warning" "$OUT/compile.log"

echo "== 2. CPU vs CUDA (full table in check.log)"
t0=$(date +%s)
"$LAB" device-check --gpus "$GPUS" --tiles "$CHECK_TILES" --tlm-shapes "${TLM_SHAPES:-256x2,128x4}" --full-steps "${FULL_STEPS:-200}" > "$OUT/check.log" 2>&1
rc=$?
# Per variant: the worst line of each kind, every failing line, and the verdict.
# --- TLM on CUDA: device-check also compares the TLM kernels (lines "[tlm SHAPE] ..."),
# and the 2D jobs on the on-chip kernel (lines "[tlm onchip THREADS] ...").
grep -E "^\[tlm 256x2\]|^TLM CPU reference" "$OUT/check.log" | cut -c1-190
grep -E "^\[tlm onchip 1024\]|^\[tlm onchip 512 x8 checks\]|^\[tlm onchip [0-9]+\] mixed" "$OUT/check.log" | cut -c1-190
# --- end TLM
grep -E "FAIL|error|panic" "$OUT/check.log" | cut -c1-240 | head -30
grep -E "^\[fused 32x8 z=auto\]|^\[fused 32x8 z=auto one step a pass\]|two steps a pass" "$OUT/check.log" | cut -c1-170
grep -E "^CPU reference|workers used|sub-batches|larger than" "$OUT/check.log" | cut -c1-200
grep -E 'full\]' "$OUT/check.log" | head -3 | cut -c1-170
# Shipped designs through the user's path (design -> jobs -> backend -> S-parameters).
grep -E "^\[design |^shipped designs" "$OUT/check.log" | cut -c1-220
echo "check exit code $rc, $(( $(date +%s) - t0 )) s"

if [ "${CHECK_GEN:-64}" -gt 0 ]; then
  echo "== 2-. a GA generation's ${CHECK_GEN:-64} random iris filters through the user's path, CPU against CUDA (default path)"
  "$LAB" device-check --onchip-only --gpus "$GPUS" --designs designs/wr28_iris_filter.ron --generation "${CHECK_GEN:-64}" > "$OUT/check-generation.log" 2>&1
  echo "exit code $?"
  grep -E "^\[generation|PASS|FAIL" "$OUT/check-generation.log" | cut -c1-220 | tail -4
fi
if [ "${CHECK_GEN:-64}" -gt 0 ]; then
  echo "== 2-'. the same generation in 2D TLM (uniform a/28 filter), CPU against CUDA on-chip and streaming"
  "$LAB" device-check --engine tlm --gpus "$GPUS" --tlm-shapes 256x2 --generation "${CHECK_GEN:-64}" > "$OUT/check-generation-tlm.log" 2>&1
  echo "exit code $?"
  grep -E "^\[generation|^  path|^device-check TLM" "$OUT/check-generation-tlm.log" | cut -c1-220
fi
echo "== 2a. one GA generation as one batch: 64 random WR-28 iris filters, on-chip vs streaming (adaptive and exact 32x8 tile) vs the planner's choice"
"$LAB" bench --backend cuda --gpus "$GPUS" --design designs/wr28_iris_filter.ron --generation 64 --tiles auto,32x8 \
    --paths onchip,streaming,auto --population 0 --n 16 --steps 5 > "$OUT/generation.log" 2>&1
echo "generation bench exit code $?"
grep -E "^generation of|^\||error" "$OUT/generation.log" | cut -c1-300
echo "== 2a'. the same in 2D TLM (uniform a/28 filter): on-chip vs streaming"
"$LAB" bench --backend cuda --gpus "$GPUS" --design tests/fixtures/uniform/wr28_iris_filter.ron --design-engine tlm2d --generation 64 \
    --paths streaming,onchip --onchip-threads 512,1024 --population 0 --n 16 --steps 5 > "$OUT/generation-tlm.log" 2>&1
echo "TLM generation bench exit code $?"
grep -E "^generation of|^\||error" "$OUT/generation-tlm.log" | cut -c1-300
# On-chip section of the check (lines "[onchip THREADS] ...") and the shipped designs per path.
grep -E "^\[onchip|^  \[onchip|^  path " "$OUT/check.log" | cut -c1-200

echo "== 2b. GA on the GPU: WR-28 iris filter, population 64, 40 generations (evaluation and stagnation limits lifted)"
RUNS="${RUNS:-/tmp/emvolve-runs}"
rm -rf "$RUNS"
t0=$(date +%s)
"$BIN" run designs/wr28_iris_filter.ron --backend cuda --gpus "$GPUS" --population 64 --generations "${IRIS_GENS:-40}" --max-evaluations 100000 \
    --stagnation 1000 --quiet --name gpu40 --runs-dir "$RUNS" > "$OUT/ga.log" 2>&1
echo "GA exit code $?, wall $(( $(date +%s) - t0 )) s"
grep -E "^gen (0|10|20|30|40)/|stopped after" "$OUT/ga.log" | cut -c1-200
if [ "${SHIPPED_GA:-1}" = 1 ]; then
  echo "== 2b'. GA on the GPU, population 64: the patch and the low-pass (wall-clock capped at ${GA_WALL:-120} s each)"
  for d in patch_2g4 microstrip_lowpass; do
    t0=$(date +%s)
    "$BIN" run designs/$d.ron --backend cuda --gpus "$GPUS" --population 64 --max-evaluations 100000 --stagnation 1000 \
        --wall "${GA_WALL:-120}" --quiet --name ga_$d --runs-dir "$RUNS" > "$OUT/ga_$d.log" 2>&1
    echo "$d GA exit code $?, wall $(( $(date +%s) - t0 )) s"
    grep -E "^gen [0-9]+/|stopped after" "$OUT/ga_$d.log" | tail -3 | cut -c1-200
  done
fi
echo "== 2c. a run started on the GPU (4 generations) resumed on the CPU (2 more), and one started on the CPU resumed on the GPU"
"$BIN" run designs/wr28_iris_filter.ron --backend cuda --population 16 --generations 4 --quiet --name g2c --runs-dir "$RUNS" > "$OUT/resume.log" 2>&1
"$BIN" resume "$RUNS/g2c" --more 2 --backend cpu --quiet >> "$OUT/resume.log" 2>&1
echo "GPU run -> CPU resume exit code $?"
"$BIN" run designs/wr28_iris_filter.ron --backend cpu --population 16 --generations 2 --quiet --name c2g --runs-dir "$RUNS" >> "$OUT/resume.log" 2>&1
"$BIN" resume "$RUNS/c2g" --more 2 --backend cuda --quiet >> "$OUT/resume.log" 2>&1
echo "CPU run -> GPU resume exit code $?"
grep -E "^backend|^gen [0-9]+/|stopped after generation" "$OUT/resume.log" | cut -c1-150

echo "== 2d. smoothness of the patch at its default mesh: L 28.5-29.5 mm in 41 steps (issue 9; needs python3 with numpy)"
"$BIN" sweep designs/patch_2g4.ron --param L=28.5:29.5:41 --set W=38 --set feed=5 --backend cuda --gpus "$GPUS" --touchstone --quiet \
    --out "$RUNS/patch-sweep" > "$OUT/patch-sweep.log" 2>&1
echo "patch sweep exit code $?"
python3 "$HERE/sweep-resonance.py" "$RUNS/patch-sweep/points" --check 2>&1 | grep -v "^every step"

if [ "${ACC_REFS:-0}" = 1 ]; then
  echo "== 2e. the iris filter at its default mesh against a/448 on the GPU (docs/ACCURACY.md; needs edges.py next to this script)"
  for p in "P1 3.9 2.7 5.3 5.6" "P2 3.5 2.5 5.5 5.8" "P3 4.3 3.0 5.0 5.3"; do
    set -- $p
    sets="--set w1=$2 --set w2=$3 --set l1=$4 --set l2=$5"
    for m in auto r448; do
      mesh='mesh: Auto(),'; [ $m = r448 ] && mesh='mesh: Auto(max_cell: "a/448", edge_cell: "a/448"),'
      sed "s|mesh: Auto(),|$mesh|; s|max_time: 25e-9|max_steps: 2000000|; s|decay_db: -50|decay_db: -60|" designs/wr28_iris_filter.ron > "$RUNS/iris_$m.ron"
      "$BIN" simulate "$RUNS/iris_$m.ron" $sets --backend cuda --gpus "$GPUS" --out "$RUNS/acc_${1}_$m" > "$RUNS/acc_${1}_$m.log" 2>&1 || echo "$1 $m failed: $(tail -2 "$RUNS/acc_${1}_$m.log")"
    done
    echo "$1: $(grep -h 'simulated in' "$RUNS/acc_${1}_r448.log" | cut -c1-120)"
    python3 "$HERE/edges.py" "$RUNS/acc_${1}_r448/wr28_iris_filter.s2p" "$RUNS/acc_${1}_auto/wr28_iris_filter.s2p" | tail -2
  done
fi

echo "== 3. benchmark"
"$LAB" bench --backend cuda --gpus "$GPUS" $BENCH --graded --scheme both --lean both --slim both --tiles "$BENCH_TILES" > "$OUT/bench.log" 2>&1
echo "bench exit code $?"
# Diagnostic: the same box with PEC walls instead of CPML (what the CPML costs the fused kernel).
"$LAB" bench --backend cuda --gpus "$GPUS" --n 256 --steps 500 --steps2 1500 --population 0 --box-pml 0 \
    --tiles "${BENCH_TILES%%,*}" > "$OUT/bench-nopml.log" 2>&1
echo "no-CPML bench exit code $?"
grep -E "error" "$OUT/bench.log"
# --- TLM on CUDA: TLM rows (3D box, 3D and 2D populations); TLM_BENCH=0 skips them.
[ "${TLM_BENCH:-1}" = 1 ] && "$LAB" bench --backend cuda --engine tlm --gpus "$GPUS" --n 320 --steps 200 --steps2 600 --population 64 --cells 300000 \
    --tlm-shapes "${TLM_SHAPES:-256x2}" --paths streaming,onchip --onchip-threads 1024 > "$OUT/bench-tlm.log" 2>&1
echo "TLM bench exit code $?"
# --- end TLM
grep -E "error|panic" "$OUT/bench.log"
echo "check: $(grep -E '^device-check' "$OUT/check.log" | cut -c1-160)"
cat "$OUT/bench.log"
grep -E "^\| box" "$OUT/bench-nopml.log"
if [ "${TLM_BENCH:-1}" = 1 ]; then cat "$OUT/bench-tlm.log"; fi
