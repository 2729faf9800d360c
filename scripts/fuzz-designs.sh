#!/usr/bin/env bash
# The larger fuzz run of design files (issue 35): at least 5,000 mutants under a
# 4 GB address-space limit, as in containers and cluster jobs. The same tests
# as `cargo test --test fuzz_designs`, scaled up by their knobs:
#   FUZZ_CASES     random mutants of the shipped designs and fixtures (in process)
#   FUZZ_TARGETED  targeted mutants per shipped design (NaN/inf literals, huge
#                  counts, names with / .. newlines quotes, unit slips, settings)
#   FUZZ_BINARY    targeted mutants per shipped design through `emvolve mesh`,
#                  each a child process under a time limit (aborts show here)
# Usage: scripts/fuzz-designs.sh [address-space limit in KiB, default 4000000]
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${1:-4000000}"
export CARGO_INCREMENTAL=1
# Built without the limit (the compiler needs more); run under it.
exe=$(cargo test --release --test fuzz_designs --no-run 2>&1 | grep -o 'target/release/deps/fuzz_designs-[0-9a-f]*' | tail -1)
[ -x "$exe" ] || { echo "fuzz-designs: test binary not found" >&2; exit 2; }
export FUZZ_CASES="${FUZZ_CASES:-6000}" FUZZ_TARGETED="${FUZZ_TARGETED:-1700}" FUZZ_BINARY="${FUZZ_BINARY:-500}"
echo "fuzz-designs: ulimit -v $limit; FUZZ_CASES=$FUZZ_CASES FUZZ_TARGETED=$FUZZ_TARGETED (x3 designs) FUZZ_BINARY=$FUZZ_BINARY (x3 designs)"
( ulimit -v "$limit"; exec "$exe" --test-threads 1 --nocapture )
