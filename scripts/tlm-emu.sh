#!/usr/bin/env bash
# Check kernels/tlm.cu without a GPU: build the kernel source as a C++ shared
# library with a small CUDA shim (scripts/tlm-emu/), then run the TLM check
# list through the CUDA backend's stepping loop on that emulation and compare
# with the CPU engines (traces, S-parameters, steps, end reasons, failures).
# Two launch shapes (branch-free and split gathers); the step kernels run thread by thread, the port,
# sampling and energy kernels as coroutines with real __syncthreads barriers.
# Then the 2D on-chip kernel (kernels/tlm_onchip.cu, 64 threads a block) on the
# list's 2D jobs, one energy check a launch and (all jobs checking every 50
# steps) three, jobs ending at different checks inside a launch.
# Needs g++ (C++20) and a release build of emvolve-lab.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${EMVOLVE_LAB:-target/release/emvolve-lab}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
for shape in "32 2 32 0" "64 1 64 1"; do
    set -- $shape
    g++ -std=c++20 -O2 -shared -fPIC -Wall -Wno-unknown-pragmas -Wno-unused-parameter \
        -DTLM_THREADS=$1 -DTLM_NPT=$2 -DTLM_PORT_THREADS=$3 -DTLM_SPLIT=$4 -o "$TMP/libtlmemu_$1_$2_$4.so" scripts/tlm-emu/emu.cpp
    "$BIN" tlm-emu --lib "$TMP/libtlmemu_$1_$2_$4.so" || status=1
done
g++ -std=c++20 -O2 -shared -fPIC -Wall -Wno-unknown-pragmas -Wno-unused-parameter -ffp-contract=off -DTLM_OC_NT=64 \
    -o "$TMP/libtlmocemu.so" scripts/tlm-emu/onchip.cpp
for args in "" "--check-every 50"; do
    "$BIN" tlm-emu --lib "$TMP/libtlmemu_32_2_0.so" --onchip-lib "$TMP/libtlmocemu.so" --only-2d $args || status=1
done
exit $status
