"""Compare what scikit-rf reads from emvolve's Touchstone files with emvolve's own sparams.csv.

Arguments: triples of (touchstone file, sparams.csv, comma-separated port names).
"""
import csv
import sys

import numpy as np
import skrf


def check(ts, table, names):
    net = skrf.Network(ts)
    with open(table) as f:
        rows = list(csv.reader(f))
    head, data = rows[0], np.array([[float(x) for x in r] for r in rows[1:]])
    col = {h: k for k, h in enumerate(head)}
    n = net.nports
    assert np.array_equal(net.f, data[:, 0]), "frequencies differ"
    worst = 0.0
    for i in range(n):
        for j in range(n):
            s = data[:, col[f"S{i+1}{j+1}_re"]] + 1j * data[:, col[f"S{i+1}{j+1}_im"]]
            worst = max(worst, np.max(np.abs(net.s[:, i, j] - s)))
    zref = np.stack([data[:, col[f"zref{p+1}_re_ohm"]] + 1j * data[:, col[f"zref{p+1}_im_ohm"]] for p in range(n)], axis=1)
    zdiff = np.max(np.abs(net.z0 - zref) / np.abs(zref))
    zin_worst = 0.0
    for p in range(n):
        zin = zref[:, p] * (1 + net.s[:, p, p]) / (1 - net.s[:, p, p])
        want = data[:, col[f"zin{p+1}_re_ohm"]] + 1j * data[:, col[f"zin{p+1}_im_ohm"]]
        zin_worst = max(zin_worst, np.max(np.abs(zin - want) / np.abs(want)))
    # Port impedances from skrf's own Z-matrix conversion are finite and consistent with S.
    back = skrf.network.z2s(net.z, net.z0, s_def=net.s_def)
    conv = np.max(np.abs(back - net.s))
    print(f"{ts}: {n} ports {net.port_names}, {len(net.f)} frequencies, s_def {net.s_def}")
    print(f"  max |S_skrf - S_emvolve| = {worst:.3g}; max rel. |z0_skrf - zref| = {zdiff:.3g}; "
          f"max rel. Zin difference = {zin_worst:.3g}; S -> Z -> S round trip {conv:.3g}")
    print(f"  z0 at {net.f[0]/1e9:g} GHz: {net.z0[0]}, at {net.f[-1]/1e9:g} GHz: {net.z0[-1]}")
    assert net.port_names == names, f"port names {net.port_names} != {names}"
    assert worst == 0.0, "S differs"
    assert zdiff < 1e-15, "reference impedances differ"
    assert zin_worst < 1e-12, "input impedance differs"
    assert conv < 1e-9, "S -> Z -> S does not come back"


args = sys.argv[1:]
assert args and len(args) % 3 == 0, __doc__
for k in range(0, len(args), 3):
    check(args[k], args[k + 1], args[k + 2].split(","))
print(f"scikit-rf {skrf.__version__} reads the same numbers: PASS")
