#!/usr/bin/env python3
"""Resonance (minimum of |S11|, parabolic between samples) of every Touchstone
file of `emvolve sweep --touchstone` (DIR/points), in sweep order, and how it
steps: the smoothness check of docs/ACCURACY.md. Needs numpy.
Usage: python3 scripts/sweep-resonance.py runs/patch_2g4-sweep/points [--check]
--check: exit 1 unless the resonance moves strictly monotonically and no step
exceeds 3x the median step (the smoothness criterion of issue 9)."""
import glob
import sys

import numpy as np


def load(path):
    rows, data = [], False
    for line in open(path):
        if line.startswith("[Network Data]"):
            data = True
        elif data and line.strip() and line[0] not in "![":
            rows.append([float(x) for x in line.split()])
    a = np.array(rows)
    return a[:, 0], a[:, 1] + 1j * a[:, 2]


args = [a for a in sys.argv[1:] if a != "--check"]
check = "--check" in sys.argv[1:]
if len(args) != 1:
    sys.exit(__doc__)
files = sorted(glob.glob(args[0] + "/*.s1p"))
if len(files) < 3:
    sys.exit(f"{args[0]}: fewer than three .s1p files")
res, depth = [], []
for f in files:
    fr, s = load(f)
    db = 20 * np.log10(np.abs(s))
    i = int(np.clip(np.argmin(db), 1, len(db) - 2))
    y0, y1, y2 = db[i - 1], db[i], db[i + 1]
    p = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2)
    res.append(fr[i] + p * (fr[1] - fr[0]))
    depth.append(y1 - 0.25 * (y0 - y2) * p)
res = np.array(res)
steps = np.diff(res)
med = np.median(steps)
print(f"{len(files)} points: resonance {res[0] / 1e9:.4f} -> {res[-1] / 1e9:.4f} GHz, min |S11| {depth[0]:.1f} -> {depth[-1]:.1f} dB")
print(f"steps (MHz): median {med / 1e6:.3f}, range {steps.min() / 1e6:.3f} .. {steps.max() / 1e6:.3f}, "
      f"{int(np.sum(np.sign(steps) != np.sign(med)))} against the trend")
print("every step (MHz):", " ".join(f"{s / 1e6:.2f}" for s in steps))
if check:
    against = int(np.sum(np.sign(steps) != np.sign(med)))
    worst = np.abs(steps).max()
    ok = against == 0 and worst <= 3 * abs(med)
    print(f"smoothness {'PASS' if ok else 'FAIL'}: {against} steps against the trend, largest step {worst / abs(med):.2f}x the median")
    sys.exit(0 if ok else 1)
