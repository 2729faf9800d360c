#!/usr/bin/env bash
# How many FDTD steps the shipped iris filter needs to ring down to its -50 dB
# energy decay target across its parameter ranges (issue 35 item 12): each
# point is simulated with the step cap raised to CAP and its steps printed.
# Usage: scripts/iris-ringdown.sh [CAP] (default 120000), after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
cap="${1:-120000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed "s/max_time: 25e-9/max_steps: $cap/" designs/wr28_iris_filter.ron > "$tmp/filter.ron"
# Symmetric cavities over the iris widths, then detuned cavities (l1 != l2).
points=()
for l in 6.5 4.0; do for w1 in 2.5 3.0 3.5; do for w2 in 1.5 2.0 2.5; do points+=("$w1 $w2 $l $l"); done; done; done
points+=("3.08 2.45 4.0 5.96" "3.0 2.19 4.15 5.98" "3.07 3.0 4.16 5.38" "3.75 2.75 5.25 5.25")
for p in "${points[@]}"; do
    set -- $p
    awk "BEGIN{exit !($2 < $1)}" || continue
    line="$(target/release/emvolve simulate "$tmp/filter.ron" --backend cpu --goals-only --out "$tmp/o_$1_$2_$3_$4" \
        --set "w1=$1" --set "w2=$2" --set "l1=$3" --set "l2=$4" 2>&1 | grep '^simulated in' || true)"
    echo "w1=$1 w2=$2 l1=$3 l2=$4: ${line#*: }"
done
