#!/usr/bin/env bash
# Fine-mesh references for docs/ACCURACY.md (iris filter, patch) on the GPU.
# Run on the device machine from a folder holding the release binary `emvolve`
# and the shipped designs (builds nothing). Writes $OUT/refs.tgz (Touchstone
# files and logs). Also checks CUDA against the CPU on the default mesh.
set -u
H="$(cd "$(dirname "$0")" && pwd)"
B="$H/emvolve"
O="${OUT:-$H/out}/refs"; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# The shipped iris filter with another mesh and a -60 dB decay (no truncation).
iris() { sed "s|mesh: Auto(),|$2|; s|max_time: 25e-9|max_steps: 2000000|; s|decay_db: -50|decay_db: -60|" "$H/wr28_iris_filter.ron" > "$O/iris_$1.ron"; }
patch() { sed "s|engine: Fdtd(mesh: Auto()),|engine: Fdtd($2 decay_db: -50, max_steps: 2000000),|" "$H/patch_2g4.ron" > "$O/patch_$1.ron"; }
iris auto 'mesh: Auto(),'
iris r112 'mesh: Auto(max_cell: "a/112", edge_cell: "a/112"),'
iris r224 'mesh: Auto(max_cell: "a/224", edge_cell: "a/224"),'
iris r448 'mesh: Auto(max_cell: "a/448", edge_cell: "a/448"),'
patch u08 'cell: 0.8,'
patch auto 'mesh: Auto(),'
patch m12 'mesh: Auto(max_cell: 1.2, edge_cell: 0.6),'
patch m06 'mesh: Auto(max_cell: 0.6, edge_cell: 0.3),'
patch m03 'mesh: Auto(max_cell: 0.3, edge_cell: 0.15),'
run() { # name design params...
  local n=$1 d=$2; shift 2
  local be=cuda; case $n in *_cpu) be=cpu;; esac
  local t0=$(date +%s.%N)
  timeout 200 "$B" simulate "$d" "$@" --backend $be --out "$O/$n" > "$O/$n.log" 2>&1
  local rc=$?; echo "$n rc=$rc $(awk "BEGIN{print $(date +%s.%N) - $t0}") s: $(grep -E 'simulated|error' "$O/$n.log" | head -2 | tr '\n' ' ')"
}
P1="--set w1=3.9 --set w2=2.7 --set l1=5.3 --set l2=5.6"
P2="--set w1=3.5 --set w2=2.5 --set l1=5.5 --set l2=5.8"
P3="--set w1=4.3 --set w2=3.0 --set l1=5.0 --set l2=5.3"
run iris_auto_P1_cuda "$O/iris_auto.ron" $P1
run iris_auto_P1_cpu "$O/iris_auto.ron" $P1
for r in r112 r224 r448; do run iris_${r}_P1 "$O/iris_$r.ron" $P1; done
for r in r224 r448; do
  run iris_${r}_P2 "$O/iris_$r.ron" $P2
  run iris_${r}_P3 "$O/iris_$r.ron" $P3
done
for p in u08 auto m12 m06 m03; do run patch_$p "$O/patch_$p.ron" --set L=29 --set W=38 --set feed=5.5; done
cd "${OUT:-$H/out}" && tar czf refs.tgz $(find refs -name '*.s?p' -o -name '*.log' -o -name '*.ron') && rm -rf refs && ls -la refs.tgz
