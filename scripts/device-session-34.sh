#!/usr/bin/env bash
# Session 34: evaluations to target of the four optimisers on a 3D shipped
# design (issue 34), 20 seeds each, the runs spread over every GPU of the host.
#   OUT=... scripts/device-session-34.sh DESIGN BUDGET JOBS [OPTIMISER...]
# Runs that do not finish before the call's limit are missing from runs.tsv;
# the summary says how many ran per optimiser.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
design=$1 budget=$2 jobs=$3
shift 3
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=('Surrogate(population: 8, auto_off: false)' cmaes ga de)
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi -L
echo "$(nproc) cores, $ngpu GPUs, $jobs runs at a time, $(date -u +%FT%TZ)"
name=$(basename "$design" .ron)
GPUS=$ngpu EMVOLVE=.device/emvolve timeout "${LIMIT:-570}" bash scripts/bench-optimisers.sh "$design" 20 "$budget" "$OUT/$name" "$jobs" -- "${opts[@]}" -- --backend cuda
echo "exit $? at $(date -u +%FT%TZ)"
# The summary again from whatever finished (a timeout kills the script before it prints).
cut -f2,4 "$OUT/$name/runs.tsv" | sort | uniq -c
rm -rf "$OUT/$name/runs"
