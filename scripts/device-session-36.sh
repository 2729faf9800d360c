#!/usr/bin/env bash
# Device run of 2026-11-28, session 36 (from the repo root; the release
# binaries in .device/emvolve and .device/emvolve-lab): conformal metal.
# PART=check: the device check (CUDA against the CPU engine, the conformal
# job among the random-field jobs). PART=patch: the circular patch (a
# conformal Disc) CPU against CUDA on its default mesh, and its
# self-convergence on four meshes (CUDA).
set -u
D=.device
OUT="${OUT:-$D/out}"; mkdir -p "$OUT"
RUNS=/tmp/s36-runs; rm -rf "$RUNS"; mkdir -p "$RUNS"
cp scripts/device-check.sh scripts/sweep-resonance.py "$D"/ 2>/dev/null
BIN=$D/emvolve
t0=$(date +%s)
if [ "${PART:-check}" = check ]; then
  SHIPPED_GA=0 TLM_BENCH=0 OUT="$OUT/dc" bash "$D/device-check.sh" > "$OUT/device-check.txt" 2>&1
  echo "device-check exit $?, $(( $(date +%s) - t0 )) s"
  grep -E "PASS|FAIL|exit code|max rel|worst|conformal" "$OUT/device-check.txt" | cut -c1-220 | head -60
  tail -30 "$OUT/device-check.txt"
  exit 0
fi
if [ "${PART:-check}" = ga ]; then
  # The shipped circular patch: its GA on CUDA, then its best design on the
  # default mesh and on 0.3 / 0.15 mm cells (how far the optimum would move).
  t1=$(date +%s)
  $BIN run designs/circular_patch_2g4.ron --backend cuda --quiet --name cp_ga --runs-dir "$RUNS" > "$OUT/cp_ga.log" 2>&1
  echo "circular patch GA exit $?, wall $(( $(date +%s) - t1 )) s"
  tail -5 "$OUT/cp_ga.log"
  cp "$RUNS/cp_ga/history.csv" "$OUT/cp_ga_history.csv" 2>/dev/null
  cp -r "$RUNS/cp_ga/best" "$OUT/cp_ga_best" 2>/dev/null
  ls "$RUNS/cp_ga/best" | head
  exit 0
fi
res() { python3 - "$1" <<'PY'
import csv, sys
r = list(csv.reader(open(sys.argv[1]))); h = r[0]; k = h.index("S11_db")
rows = [[float(x) for x in l] for l in r[1:]]
i = min(range(len(rows)), key=lambda n: rows[n][k])
if 0 < i < len(rows) - 1:
    (f0, y0), (f1, y1), (f2, y2) = [(rows[n][0], rows[n][k]) for n in (i - 1, i, i + 1)]
    den = (y0 - 2 * y1 + y2)
    f = f1 + 0.5 * (f2 - f1) * (y0 - y2) / den if den != 0 else f1
else:
    f = rows[i][0]
print(f"{f/1e9:.5f} GHz (|S11| min {rows[i][k]:.2f} dB)")
PY
}
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
for m in "default:" "1.2/0.6:max_cell: 1.2, edge_cell: 0.6" "0.6/0.3:max_cell: 0.6, edge_cell: 0.3" "0.3/0.15:max_cell: 0.3, edge_cell: 0.15"; do
  name=${m%%:*}; opt=${m#*:}
  sed "s|Fdtd(mesh: Auto())|Fdtd(mesh: Auto($opt), decay_db: -50.0)|" $CP > "$RUNS/cp_mesh.ron"
  t1=$(date +%s)
  $BIN simulate "$RUNS/cp_mesh.ron" --set a=16 --set feed=5.4 --backend cuda --out "$RUNS/conv_${name//\//_}" > "$OUT/conv_${name//\//_}.log" 2>&1
  echo "circular patch mesh $name: exit $?, $(( $(date +%s) - t1 )) s, $(grep -oE '[0-9,]+ cells' "$OUT/conv_${name//\//_}.log" | head -1), $(grep -oE 'steps of [0-9.]+ ps' "$OUT/conv_${name//\//_}.log" | head -1), resonance $(res "$RUNS/conv_${name//\//_}/sparams.csv")"
done
# The patch's smoothness (the device check's section 2d, whose script was not carried in the check run).
$BIN sweep designs/patch_2g4.ron --param L=28.5:29.5:41 --set W=38 --set feed=5 --backend cuda --touchstone --quiet --out "$RUNS/patch-sweep" > "$OUT/patch-sweep.log" 2>&1
echo "patch sweep exit code $?"
python3 "$D/sweep-resonance.py" "$RUNS/patch-sweep/points" --check 2>&1 | grep -v "^every step" | tail -5
echo "total $(( $(date +%s) - t0 )) s"
