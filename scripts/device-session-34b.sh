#!/usr/bin/env bash
# Session 34: what the iris filter's cap in simulated time (25 ns) costs on the
# GPU against the former 30,000 steps: one random generation of 64 on the
# automatic path, and a GA of 64 for 15 generations (seed 7), both caps.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
nvidia-smi -L
for cap in time steps; do
    d=designs/wr28_iris_filter.ron
    [ $cap = steps ] && d=.device/iris_steps30k.ron
    for k in 1 2; do
        echo "== $cap: bench --generation 64 (run $k)"
        .device/emvolve bench --backend cuda --design "$d" --generation 64 --paths auto --verbose 2>&1 | grep -iE "generation|onchip|on-chip|steps|wall" | head -8
    done
    echo "== $cap: GA of 64, 15 generations"
    /usr/bin/time -f "%e s wall" .device/emvolve run "$d" --backend cuda --optimiser ga --population 64 --generations 15 --seed 7 --stagnation none --target none --max-evaluations none \
        --quiet --force --runs-dir "$OUT/runs" --name "ga_$cap" 2>&1 | tail -3
    awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} {t+=$c["truncated"]; e+=$c["evaluation_seconds"]} END {print "truncated", t, "evaluation_seconds", e}' "$OUT/runs/ga_$cap/history.csv"
done
rm -rf "$OUT/runs"
