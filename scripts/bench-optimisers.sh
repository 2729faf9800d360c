#!/usr/bin/env bash
# Evaluations to target, per optimiser, over many seeds at one evaluation budget.
#
#   scripts/bench-optimisers.sh DESIGN SEEDS BUDGET OUTDIR [JOBS] -- OPTIMISER... [-- RUN ARGS...]
#
# SEEDS is a count N (seeds 1..N) or a range A-B (to finish runs an earlier
# call did not reach; append the runs.tsv lines of both calls).
# Each OPTIMISER is a name (ga, cmaes, de, surrogate: the design's block for
# ga when it is a Ga block, else that method's defaults) or a whole block such
# as 'Surrogate(population: 8, auto_off: false)'. Every run: seeds 1..SEEDS,
# stop at fitness 0 (every goal met) or after BUDGET simulated designs, no
# stagnation stop. JOBS runs at a time (default: the number of cores); the
# extra RUN ARGS go to every `emvolve run` (e.g. --backend cuda).
#
# Writes OUTDIR/runs.tsv (one line per run) and prints, per optimiser:
# success rate, median and 90th percentile of the designs simulated until
# fitness 0 (a run that missed counts as more than the budget), the median of
# the best fitness reached, and the median wall time per run. Evaluations are
# counted at the end of the generation that met the target (batch granularity).
# EMVOLVE (default target/release/emvolve) is the binary. GPUS=N (on a
# host with N GPUs) gives run slot k the GPU k mod N alone
# (CUDA_VISIBLE_DEVICES), so that JOBS runs at a time share N devices evenly.
set -euo pipefail

if [ $# -lt 6 ]; then
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
design=$1 seeds=$2 budget=$3 out=$4
shift 4
jobs=$(nproc)
if [ "$1" != "--" ]; then jobs=$1; shift; fi
[ "$1" = "--" ] || { echo "expected -- before the optimisers" >&2; exit 2; }
shift
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
[ $# -gt 0 ] && shift
extra=("$@")
case $seeds in
    *-*) first=${seeds%-*} last=${seeds#*-} ;;
    *) first=1 last=$seeds ;;
esac
emvolve=${EMVOLVE:-target/release/emvolve}
[ -x "$emvolve" ] || { echo "no emvolve binary at $emvolve (set EMVOLVE)" >&2; exit 2; }
mkdir -p "$out/runs" "$out/logs"

# One run: its tsv line on stdout.
one() {
    local k=$1 opt=$2 seed=$3 name="o$1-s$3"
    local t0 t1
    t0=$(date +%s.%N)
    if [ "${GPUS:-0}" -gt 0 ]; then export CUDA_VISIBLE_DEVICES=$(( ${SLOT:-0} % GPUS )); fi
    RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1} "$emvolve" run "$design" --optimiser "$opt" --seed "$seed" \
        --max-evaluations "$budget" --target 0 --stagnation none --generations 1000000 \
        --quiet --force --runs-dir "$out/runs" --name "$name" "${extra[@]}" >"$out/logs/$name.log" 2>&1 || true
    t1=$(date +%s.%N)
    local hist="$out/runs/$name/history.csv"
    if [ ! -f "$hist" ]; then
        printf '%s\t%s\t%s\tERROR\t0\tnan\t0\n' "$k" "$opt" "$seed"
        return
    fi
    awk -F, -v k="$k" -v opt="$opt" -v seed="$seed" -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { best = $col["best"]; ev = $col["evaluations"]; if (hit == "" && best + 0 <= 0) hit = ev; last = ev }
        END {
            if (hit != "") printf "%s\t%s\t%s\tok\t%s\t%s\t%.1f\n", k, opt, seed, hit, 0, wall
            else printf "%s\t%s\t%s\tmiss\t%s\t%s\t%.1f\n", k, opt, seed, last, best, wall
        }' "$hist"
}
export -f one
export design budget out emvolve GPUS
export EXTRA="${extra[*]:-}"

: >"$out/runs.tsv"
for k in "${!opts[@]}"; do
    for seed in $(seq "$first" "$last"); do
        printf '%s\0%s\0%s\0' "$k" "${opts[$k]}" "$seed"
    done
done | xargs -0 -n 3 -P "$jobs" --process-slot-var=SLOT bash -c 'extra=($EXTRA); one "$@"' _ >>"$out/runs.tsv"

echo "design $design, $seeds seeds, budget $budget designs, $(nproc) cores, $jobs at a time"
printf '%-45s %8s %8s %8s %12s %8s\n' optimiser success median p90 "median best" "wall s"
for k in "${!opts[@]}"; do
    awk -F'\t' -v k="$k" -v budget="$budget" '
        $1 == k {
            n++; opt = $2; wall[n] = $7; best[n] = ($4 == "ok") ? 0 : $6
            if ($4 == "ok") { ok++; ev[n] = $5 } else ev[n] = 1e18
        }
        function sort(a, m,   i, j, t) { for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
        function q(a, m, p,   i) { i = int(p * (m - 1) + 0.5) + 1; return a[i] }
        function show(v) { return v >= 1e18 ? ">" budget : v }
        END {
            if (n == 0) exit
            sort(ev, n); sort(best, n); sort(wall, n)
            printf "%-45s %5d/%-2d %8s %8s %12.4g %8.1f\n", substr(opt, 1, 45), ok, n, show(q(ev, n, 0.5)), show(q(ev, n, 0.9)), q(best, n, 0.5), q(wall, n, 0.5)
        }' "$out/runs.tsv"
done
