#!/usr/bin/env bash
# Opens `emvolve export --vtk` output with VTK's own readers (the ones ParaView
# uses) and checks the grid, the cell arrays, the sheets and the ports.
# Needs python3 with venv and the network to PyPI; not part of CI.
# Usage: scripts/vtk-check.sh [path/to/emvolve]   (default: builds target/release/emvolve)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-}
if [ -z "$BIN" ]; then
    cargo build --release --quiet
    BIN=target/release/emvolve
fi
VENV=${VENV:-target/venv-vtk}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check vtk numpy
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$BIN" export designs/patch_2g4.ron --set L=28.8 --set W=38.4 --vtk "$OUT/patch" >/dev/null
"$BIN" export designs/wr28_iris_filter.ron --vtk "$OUT/wr28" >/dev/null
"$VENV/bin/python" - "$OUT" <<'PY'
import sys
from vtkmodules.vtkIOXML import vtkXMLMultiBlockDataReader
from vtkmodules.util.numpy_support import vtk_to_numpy

out = sys.argv[1]
for name, sheets, ports in [("patch/patch_2g4", 2, 1), ("wr28/wr28_iris_filter", 0, 2)]:
    r = vtkXMLMultiBlockDataReader()
    r.SetFileName(f"{out}/{name}.vtm")
    r.Update()
    mb = r.GetOutput()
    assert mb.GetNumberOfBlocks() == 3, mb.GetNumberOfBlocks()
    grid, sh, po = (mb.GetBlock(k) for k in range(3))
    assert grid.IsA("vtkRectilinearGrid"), grid.GetClassName()
    dims = grid.GetDimensions()
    cells = grid.GetNumberOfCells()
    assert cells == (dims[0] - 1) * (dims[1] - 1) * (dims[2] - 1)
    cd = grid.GetCellData()
    arrays = {cd.GetArrayName(k): vtk_to_numpy(cd.GetArray(k)) for k in range(cd.GetNumberOfArrays())}
    assert set(arrays) == {"material", "eps_r", "sigma", "mu_r", "pec", "absorbing"}, set(arrays)
    assert all(len(a) == cells for a in arrays.values())
    print(f"{name}: {dims[0]-1} x {dims[1]-1} x {dims[2]-1} cells, bounds (m) {tuple(round(b, 6) for b in grid.GetBounds())}")
    print(f"  eps_r {arrays['eps_r'].min()}..{arrays['eps_r'].max()}, PEC cells {int(arrays['pec'].sum())}, "
          f"absorbing cells {int(arrays['absorbing'].sum())}; {sh.GetNumberOfCells()} sheets, {po.GetNumberOfCells()} ports")
    assert sh.GetNumberOfCells() == sheets, sh.GetNumberOfCells()
    assert po.GetNumberOfCells() == ports, po.GetNumberOfCells()
    if "patch" in name:
        assert abs(arrays["eps_r"].max() - 4.3) < 1e-6
        zs = sorted({round(sh.GetPoint(k)[2], 9) for k in range(sh.GetNumberOfPoints())})
        assert zs == [0.0, 0.0016], zs
    else:
        assert arrays["pec"].sum() > 0, "the irises are PEC cells"
print("VTK reads the exported files: PASS")
PY
