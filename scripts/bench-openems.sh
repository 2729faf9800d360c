#!/usr/bin/env bash
# emvolve's CPU engine against openEMS 0.0.35 on the same machine, back to
# back, 2 threads each (not run in CI). Installs nothing: needs Debian's
# python3-openems (`apt-get install python3-openems`) for the two box
# workloads, and prints the ratios:
#   1. 100^3 box with PEC walls and a dielectric block: openEMS vs
#      `emvolve bench --backend cpu --box-pml 0`;
#   2. the same box with absorbing faces: openEMS PML_8 vs our CPML, 8 cells;
#   3. one GA generation of 32 shipped iris filters: this tree's binary vs
#      the binary of BASE_REF (default main), built in a scratch worktree
#      unless BASE_BIN names one.
# Usage: scripts/bench-openems.sh [STEPS (default 300)]
# Env: EMVOLVE_BIN (default target/release/emvolve, built if missing),
#      BASE_BIN / BASE_REF, THREADS (default 2), N (default 100).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
threads=${THREADS:-2}
n=${N:-100}
bin=${EMVOLVE_BIN:-target/release/emvolve}
[ -x "$bin" ] || cargo build --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RAYON_NUM_THREADS=$threads

have_openems=0
if /usr/bin/python3 -c 'import numpy as np; np.float = float; np.int = int; import openEMS' 2>/dev/null; then
    have_openems=1
else
    echo "python3-openems not found (apt-get install python3-openems): box comparisons skipped" >&2
fi

# Seconds per step of openEMS on the box ($1: pec|pml): its own timing of the
# iterations (setup excluded), 2 * steps iterations.
openems_step() {
    local out
    out=$(/usr/bin/python3 scripts/openems_box.py "$n" $((2 * steps)) "$1" "$threads" "$work/oems-$1" 2>&1)
    echo "$out" | awk '/^Time for [0-9]+ iterations/ { print $(NF-1) / $3 }'
}

# Seconds per step of emvolve on the box ($1: CPML cells, 0 = PEC): the
# marginal rate between steps and 2 x steps (setup excluded).
emvolve_step() {
    local out rate
    out=$("$bin" bench --backend cpu --n "$n" --box-pml "$1" --population 0 --steps "$steps" --steps2 $((2 * steps)))
    rate=$(echo "$out" | awk -F'|' '/^\| box/ { gsub(/ /, "", $8); print $8 }')
    awk -v r="$rate" -v c="$((n * n * n))" 'BEGIN { print c / (r * 1e9) }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mcells() { awk -v t="$1" -v c="$((n * n * n))" 'BEGIN { printf "%.0f", c / t / 1e6 }'; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $threads threads each; $(date -u '+%Y-%m-%d %H:%M UTC')"
if [ $have_openems = 1 ]; then
    for kind in pec pml; do
        cpml=0
        [ $kind = pml ] && cpml=8
        o=$(openems_step $kind)
        e=$(emvolve_step $cpml)
        o2=$(openems_step $kind)
        e2=$(emvolve_step $cpml)
        # The better of two runs each (the machine is shared).
        o=$(awk -v a="$o" -v b="$o2" 'BEGIN { print (a < b ? a : b) }')
        e=$(awk -v a="$e" -v b="$e2" 'BEGIN { print (a < b ? a : b) }')
        echo "box ${n}^3 $kind: openEMS $(mcells "$o") Mcells/s, emvolve $(mcells "$e") Mcells/s (per ${n}^3 cells, time per step): emvolve/openEMS = $(ratio "$o" "$e")x"
    done
fi

# The generation: this tree's binary against the base's.
base=${BASE_BIN:-}
if [ -z "$base" ]; then
    ref=${BASE_REF:-main}
    src="$work/base"
    git worktree add --detach "$src" "$ref" >/dev/null 2>&1
    (cd "$src" && CARGO_TARGET_DIR="$src/target" cargo build --release -q)
    base="$src/target/release/emvolve"
fi
gen() {
    "$1" bench --backend cpu --design designs/wr28_iris_filter.ron --generation 32 --n 20 --steps 10 --population 0 2>&1 |
        sed -n 's/.*candidates on cpu: \([0-9.]*\) s wall.*/\1/p'
}
gb=$(gen "$base")
gn=$(gen "$bin")
echo "generation of 32 wr28_iris_filter candidates: base $gb s, this tree $gn s: $(ratio "$gb" "$gn")x faster"
if [ -z "${BASE_BIN:-}" ]; then git worktree remove --force "$work/base" >/dev/null 2>&1 || true; fi
