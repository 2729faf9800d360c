#!/usr/bin/env bash
# Session 33, third device run: the device check after the review's mend,
# then a small-step sweep of the copper iris filter (w1, 0.01 mm steps) on
# the CUDA backend: the dissipated power at 31.6 GHz per point.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
SHIPPED_GA=0 TLM_BENCH=0 CHECK_GEN=0 IRIS_GENS=3 ACC_REFS=0 OUT="$OUT" bash .device/device-check.sh > "$OUT/devcheck.txt" 2>&1
grep -E "random surface|design microstrip_lowpass|shipped designs|device-check (PASS|FAIL)" "$OUT/devcheck.txt" | cut -c1-200 | sort -u
.device/emvolve sweep designs/wr28_iris_filter_copper.ron --set w2=2.5 --set l1=5.0 --set l2=5.6 --param w1=3.8:4.2:41 --backend cuda --touchstone --quiet --out "$OUT/sweep" > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"
python3 - "$OUT/sweep/points" <<'PY'
import sys, os, math, re
d = sys.argv[1]
rows = []
for f in sorted(os.listdir(d)):
    if not f.endswith('.s2p'): continue
    w1 = float(re.search(r'w1[=_-]?([0-9]+(?:\.[0-9]+)?)', f).group(1))
    best = None
    for line in open(os.path.join(d, f)):
        s = line.split('!')[0].split()
        if len(s) < 9 or line.startswith('#'): continue
        fr = float(s[0])
        if abs(fr - 31.6e9) < 1e3 or abs(fr - 31.6) < 1e-6:
            v = list(map(float, s[1:9]))
            # RI or MA/DB: the header says; assume RI as emvolve writes it
            s11 = complex(v[0], v[1]); s21 = complex(v[2], v[3])
            best = (1 - abs(s11)**2 - abs(s21)**2, 20 * math.log10(abs(s21)))
    if best: rows.append((w1, *best))
rows.sort()
for r in rows: print(f"w1 {r[0]:.3f}  lost {r[1]:.5f}  S21 {r[2]:.4f} dB")
st = [rows[i+1][1] - rows[i][1] for i in range(len(rows)-1)]
if st:
    med = sorted(abs(x) for x in st)[len(st)//2]
    print(f"{len(rows)} points; steps of lost power: median {med:.2e}, largest {max(abs(x) for x in st):.2e} ({max(abs(x) for x in st)/max(med,1e-12):.1f}x the median)")
PY
