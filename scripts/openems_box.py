#!/usr/bin/python3
"""openEMS side of scripts/bench-openems.sh: an n^3 box of 1 mm cells (PEC
walls, or openEMS's PML_8 on every face), a dielectric block (eps_r 4.4,
0.01 S/m) over the middle third as in `emvolve bench`'s box, a soft E_z
source, a fixed number of steps. Prints openEMS's own speed line.

Usage: openems_box.py N STEPS {pec|pml} THREADS WORKDIR
"""
import os
import sys

import numpy as np

# openEMS 0.0.35's 2019 bindings use the aliases numpy removed.
np.float = float
np.int = int
from CSXCAD import ContinuousStructure  # noqa: E402
from openEMS import openEMS  # noqa: E402

n, steps, bc, threads, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
if bc not in ("pec", "pml"):
    sys.exit(f"boundary '{bc}': give pec or pml")

fdtd = openEMS(NrTS=steps, EndCriteria=0)
fdtd.SetGaussExcite(5e9, 4.5e9)
fdtd.SetBoundaryCond(["PEC"] * 6 if bc == "pec" else ["PML_8"] * 6)
csx = ContinuousStructure()
fdtd.SetCSX(csx)
grid = csx.GetGrid()
grid.SetDeltaUnit(1e-3)
lines = np.arange(n + 1, dtype=float)
for ax in "xyz":
    grid.SetLines(ax, lines)
lo, hi = n // 3, 2 * n // 3
fr4 = csx.AddMaterial("fr4", epsilon=4.4, kappa=0.01)
fr4.AddBox([lo] * 3, [hi] * 3)
exc = csx.AddExcitation("exc", exc_type=0, exc_val=[0, 0, 1])
c = n // 2
exc.AddBox([n // 4, c, c - 1], [n // 4, c, c + 1])

os.makedirs(work, exist_ok=True)
# openEMS writes its speed ("Speed: ... MCells/s") to the process's stdout.
fdtd.Run(work, cleanup=True, numThreads=threads)
