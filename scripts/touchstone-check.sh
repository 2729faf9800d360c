#!/usr/bin/env bash
# Reads emvolve's Touchstone files with scikit-rf and checks that it gets the
# numbers emvolve computed: every S_ij, the port names, and each port's
# reference impedance (per frequency for the WR-28 filter's waveguide ports,
# the [Reference] resistances for the lumped 3-port), and that the input
# impedance scikit-rf derives from them is emvolve's.
# Needs python3 with venv and the network to PyPI; not part of CI.
# Usage: scripts/touchstone-check.sh [path/to/emvolve]   (default: builds target/release/emvolve)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-}
if [ -z "$BIN" ]; then
    cargo build --release --quiet
    BIN=target/release/emvolve
fi
VENV=${VENV:-target/venv-touchstone}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check scikit-rf
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$BIN" simulate designs/wr28_iris_filter.ron --backend cpu --set w1=3.5 --set w2=2.5 --set l1=5.3 --set l2=5.9 --out "$OUT/wr28" >/dev/null
"$BIN" simulate scripts/check/microstrip_tee.ron --backend cpu --out "$OUT/tee" >/dev/null
"$VENV/bin/python" scripts/check/touchstone_check.py \
    "$OUT/wr28/wr28_iris_filter.s2p" "$OUT/wr28/sparams.csv" in,out \
    "$OUT/tee/microstrip_tee.s3p" "$OUT/tee/sparams.csv" west,east,south
