#!/usr/bin/env bash
# Check kernels/fdtd.cu without a GPU: build the kernels as a C++ shared
# library (the CPU emulation of the CUDA device) for a few tile shapes, run the
# CUDA backend's FDTD batch and stepping loop on it, and compare with the CPU
# engine (every field position, port traces, energy), fused and split schemes,
# random and zero initial fields. Needs g++ (C++20) and a release build of emvolve-lab.
# ONCHIP_ONLY=1: only the on-chip kernel (the streaming library is built for the
# designs that do not fit, but its own checks are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${EMVOLVE_LAB:-target/release/emvolve-lab}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
# 32x8 and 32x4 spread the halo over warps (EMV_HALO_SPREAD); 8x4 does not.
for tile in 8x4 8x4:3 32x8 32x4; do
    wh=${tile%%:*}; tx=${wh%x*}; ty=${wh#*x}; ns=4; [ "$tile" != "$wh" ] && ns=${tile#*:}
    [ -n "${ONCHIP_ONLY:-}" ] && [ "$tile" != 32x4 ] && continue
    lib="$TMP/libfdtdemu_$tile.so"
    g++ -std=c++20 -O2 -shared -fPIC -pthread -Wall -Wno-unknown-pragmas -DEMV_TX=$tx -DEMV_TY=$ty -DEMV_NS=$ns \
        -o "$lib" scripts/kernel-emu/lib.cpp
    steps=12; [ "${tile%x*}" = 32 ] && steps=6
    [ -n "${ONCHIP_ONLY:-}" ] && continue
    # --origin: tiles shifted so that every design's first tile is narrower
    # (batch::Origin; the planner's own choice, auto, shifts only CPML designs).
    for args in "" "--zero" "--split" "--split --zchunk 1" "--zchunk 7" "--origin 5,3" "--split --origin 3,1"; do
        # The split kernels do not depend on the pipeline depth: once per tile shape.
        case "$tile:$args" in *:*:--split*) continue ;; esac
        "$BIN" kernel-emu --lib "$lib" --steps $steps $args || status=1
    done
    # Two steps a pass for the slim designs (kernels/fdtd_slim.cuh, one block
    # of 512 threads a chunk: slow to emulate, so on one tile shape only): odd
    # chunks end on the one-step kernel; chunks of 2 and 7 planes.
    if [ "$tile" = 32x8 ]; then
        for args in "--two-step --steps 8" "--two-step --zero --steps 12" "--two-step --steps 12 --trace-chunk 3 --zchunk 7" "--two-step --steps 6 --zchunk 2"; do
            "$BIN" kernel-emu --lib "$lib" $args || status=1
        done
    fi
done
# The on-chip kernel (kernels/fdtd_onchip.cu, 128 threads a block here: three
# updating warps and the port warp), on every design that fits, the others on
# the streaming kernels of the last tile above; --no-fields spans several energy
# checks a launch, with jobs that end at different checks inside it.
oclib="$TMP/libonchipemu.so"
g++ -std=c++20 -O2 -shared -fPIC -pthread -Wall -Wno-unknown-pragmas -ffp-contract=off -DEMV_OC_NT=128 \
    -o "$oclib" scripts/kernel-emu/onchip.cpp
for args in "" "--zero" "--trace-chunk 7" "--no-fields" "--no-fields --zero"; do
    "$BIN" kernel-emu --lib "$lib" --onchip-lib "$oclib" --path auto --steps 12 $args || status=1
done
# The shipped filter's midpoint (2.5D, the GA's jobs: oc_loop25, and the
# general loop on the same jobs), long enough to reach its CPML and ports.
for general in "" --onchip-general; do
    "$BIN" kernel-emu --lib "$lib" --onchip-lib "$oclib" --path auto --steps 400 --design designs/wr28_iris_filter.ron $general || status=1
done
# One updating warp (64 threads): every design has more columns than the block
# has updating threads (several units a thread; the port warp adds the sources).
g++ -std=c++20 -O2 -shared -fPIC -pthread -Wall -Wno-unknown-pragmas -ffp-contract=off -DEMV_OC_NT=64 -DEMU_MAX_SHARED=120000 \
    -o "$TMP/libonchipemu_small.so" scripts/kernel-emu/onchip.cpp
for args in "" "--no-fields"; do
    "$BIN" kernel-emu --lib "$lib" --onchip-lib "$TMP/libonchipemu_small.so" --path auto --steps 12 $args || status=1
done
exit $status
