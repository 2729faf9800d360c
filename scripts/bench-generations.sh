#!/usr/bin/env bash
# Device machine: one GA generation of each shipped design on CUDA, timed as
# the GA runs it (only the ports its goals need) and with every port driven
# (--all-ports: what `bench --generation` drove before the port pruning), plus
# the host's share (jobs and operators on one thread and on every core).
# Needs the release binary and the designs; from the repository root:
#   BIN=target/release/emvolve-lab bash scripts/bench-generations.sh 2>&1 | tee $OUT/generations.log
# Environment knobs:
#   BIN=...           the emvolve-lab binary (default: target/release/emvolve-lab, else .device/emvolve-lab)
#   N=64              candidates per generation
#   DESIGNS="patch_2g4 microstrip_lowpass wr28_iris_filter"   names under designs/
#   PATHS=streaming,auto   --paths of `bench --generation`
#   GPUS=0            --gpus
#   ALL_PORTS=1       also time every port driven (0: the GA's drives only)
set -u
cd "$(dirname "$0")/.."
BIN="${BIN:-target/release/emvolve-lab}"
[ -x "$BIN" ] || BIN=".device/emvolve-lab"
[ -x "$BIN" ] || { echo "no emvolve-lab binary (set BIN=...)"; exit 2; }
N="${N:-64}"
DESIGNS="${DESIGNS:-patch_2g4 microstrip_lowpass wr28_iris_filter}"
PATHS="${PATHS:-streaming,auto}"
GPUS="${GPUS:-0}"
date -u +"%Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
nproc
"$BIN" --version
for d in $DESIGNS; do
    variants=("")
    [ "${ALL_PORTS:-1}" = 1 ] && variants+=("--all-ports")
    for v in "${variants[@]}"; do
        echo "== $d, generation of $N on cuda ${v:-(the ports the goals need)}"
        t0=$SECONDS
        "$BIN" bench --backend cuda --gpus "$GPUS" --design "designs/$d.ron" --generation "$N" --paths "$PATHS" --population 0 --n 20 --steps 10 $v 2>&1 \
            | grep -E "^design |^generation of|^\| |^\|---"
        echo "exit ${PIPESTATUS[0]}, $((SECONDS - t0)) s for this bench call"
    done
done
