#!/usr/bin/env bash
# Device machine: build the temporal-blocking probe with nvcc and run it
# (see probe.cu). --fmad=false as emvolve's NVRTC options, so the variants can
# be compared bit for bit. Usage: bash scripts/tb-probe/run.sh [n] [steps] [pitch] [ny nz]
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-/tmp}"
nvcc -O3 -std=c++17 -arch=sm_90 --fmad=false -lineinfo -Xptxas -warn-spills -o "$OUT/tb-probe" "$HERE/probe.cu"
"$OUT/tb-probe" "$@"
