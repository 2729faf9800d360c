#!/usr/bin/env bash
# Device run of 2026-11-28 (from the repo root; the release binary in .device/emvolve,
# an older one in .device/base/emvolve, its iris design as .device/iris-3507b9f.ron):
# device check, iris GA old vs new,
# the circular patch CPU vs CUDA, its self-convergence, its GA; the rectangular
# patch's default mesh (the mesher changed for sheets).
set -u
D=.device
OUT="${OUT:-$D/out}"; mkdir -p "$OUT"
RUNS=/tmp/s31-runs; rm -rf "$RUNS"; mkdir -p "$RUNS"
cp scripts/sweep-resonance.py scripts/edges.py scripts/device-check.sh "$D"/ 2>/dev/null
BIN=$D/emvolve
t0=$(date +%s)
SHIPPED_GA=0 TLM_BENCH=0 OUT="$OUT/dc" bash "$D/device-check.sh" > "$OUT/device-check.txt" 2>&1
echo "device-check exit $?, $(( $(date +%s) - t0 )) s"
grep -E "PASS|FAIL|exit code|max rel|worst|design " "$OUT/device-check.txt" | cut -c1-220 | head -40
tail -25 "$OUT/device-check.txt"
for b in base new; do
  B=$D/emvolve; [ $b = base ] && B=$D/base/emvolve
  t1=$(date +%s)
  $B run $D/iris-3507b9f.ron --backend cuda --population 64 --generations 40 --max-evaluations 100000 --stagnation 1000 --quiet --name ga_$b --runs-dir "$RUNS" > "$OUT/ga_$b.log" 2>&1
  echo "iris GA $b exit $?, wall $(( $(date +%s) - t1 )) s"
  cp "$RUNS/ga_$b/history.csv" "$OUT/history_$b.csv" 2>/dev/null
done
python3 - "$OUT/history_base.csv" "$OUT/history_new.csv" <<'PY'
import csv, sys
def rows(p):
    r = list(csv.reader(open(p)))
    return r[0], r[1:]
hb, rb = rows(sys.argv[1]); hn, rn = rows(sys.argv[2])
skip = {"wall_seconds", "evaluation_seconds", "cells_per_second", "workers"}
cols = [c for c in hb if c not in skip and c in hn and not c.startswith("failed_")]
ib = [hb.index(c) for c in cols]; inn = [hn.index(c) for c in cols]
same = len(rb) == len(rn) and all([a[i] for i in ib] == [b[j] for j in inn] for a, b in zip(rb, rn))
print(f"iris GA history base vs new: {len(rb)} / {len(rn)} generations, {len(cols)} common columns: {'IDENTICAL' if same else 'DIFFERENT'}")
PY
CP=tests/fixtures/circular_patch_2g4.ron
for be in cpu cuda; do
  t1=$(date +%s)
  $BIN simulate $CP --set a=16 --set feed=5.4 --backend $be --out "$RUNS/cp_$be" > "$OUT/cp_$be.log" 2>&1
  echo "circular patch $be exit $?, $(( $(date +%s) - t1 )) s: $(grep -E '^simulated' "$OUT/cp_$be.log")"
done
python3 - "$RUNS/cp_cpu/sparams.csv" "$RUNS/cp_cuda/sparams.csv" <<'PY'
import csv, sys
a = list(csv.reader(open(sys.argv[1]))); b = list(csv.reader(open(sys.argv[2])))
h = a[0]; i, j = h.index("S11_re"), h.index("S11_im")
d = max(abs(complex(float(x[i]), float(x[j])) - complex(float(y[i]), float(y[j]))) for x, y in zip(a[1:], b[1:]))
print(f"circular patch CPU vs CUDA: max |dS11| = {d:.3e} over {len(a)-1} frequencies")
PY
res() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.reader(open(sys.argv[1]))); h = r[0]; k = h.index("S11_db")
rows = [[float(x) for x in l] for l in r[1:]]
i = min(range(len(rows)), key=lambda n: rows[n][k])
# parabola through the three points around the |S11| minimum
if 0 < i < len(rows) - 1:
    (f0, y0), (f1, y1), (f2, y2) = [(rows[n][0], rows[n][k]) for n in (i - 1, i, i + 1)]
    den = (y0 - 2 * y1 + y2)
    f = f1 + 0.5 * (f2 - f1) * (y0 - y2) / den if den != 0 else f1
else:
    f = rows[i][0]
print(f"{f/1e9:.5f} GHz (|S11| min {rows[i][k]:.2f} dB)")
PY
}
for m in "default:" "1.2/0.6:max_cell: 1.2, edge_cell: 0.6" "0.6/0.3:max_cell: 0.6, edge_cell: 0.3" "0.3/0.15:max_cell: 0.3, edge_cell: 0.15"; do
  name=${m%%:*}; opt=${m#*:}
  sed "s|Fdtd(mesh: Auto())|Fdtd(mesh: Auto($opt), decay_db: -50.0)|" $CP > "$RUNS/cp_mesh.ron"
  t1=$(date +%s)
  $BIN simulate "$RUNS/cp_mesh.ron" --set a=16 --set feed=5.4 --backend cuda --out "$RUNS/conv_${name//\//_}" > "$OUT/conv.log" 2>&1
  echo "circular patch mesh $name: $(( $(date +%s) - t1 )) s, $(grep -oE '[0-9]+ cells' "$OUT/conv.log" | head -1), $(grep -oE 'steps of [0-9.]+ ps' "$OUT/conv.log" | head -1), resonance $(res "$RUNS/conv_${name//\//_}/sparams.csv")"
done
t1=$(date +%s)
$BIN run $CP --backend cuda --quiet --name cp_ga --runs-dir "$RUNS" > "$OUT/cp_ga.log" 2>&1
echo "circular patch GA exit $?, wall $(( $(date +%s) - t1 )) s"
tail -4 "$OUT/cp_ga.log"
cut -d, -f1-6 "$RUNS/cp_ga/history.csv" | tail -3
cp "$RUNS/cp_ga/history.csv" "$OUT/cp_ga_history.csv" 2>/dev/null
cp -r "$RUNS/cp_ga/best" "$OUT/cp_ga_best" 2>/dev/null
t1=$(date +%s)
sed "s|Fdtd(mesh: Auto())|Fdtd(mesh: Auto(), decay_db: -50.0)|" designs/patch_2g4.ron > "$RUNS/patch50.ron"
$BIN simulate "$RUNS/patch50.ron" --set L=29 --set W=38 --set feed=5.5 --backend cuda --out "$RUNS/patch_default" > "$OUT/patch.log" 2>&1
echo "rectangular patch (L 29, W 38, feed 5.5, -50 dB; ACCURACY had 97,440 cells, 2.3927 GHz) default mesh: $(( $(date +%s) - t1 )) s, $(grep -oE '[0-9]+ cells' "$OUT/patch.log" | head -1), resonance $(res "$RUNS/patch_default/sparams.csv")"
