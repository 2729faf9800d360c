#!/usr/bin/env bash
# Installs Debian's chromium (when missing) and runs the report test with the
# headless render required, keeping its screenshot: the check of `emvolve report`.
# Usage: scripts/report-check.sh [screenshot.png]   (default: target/report-check.png)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
SHOT=$(realpath -m "${1:-target/report-check.png}")
EMVOLVE_REQUIRE_CHROMIUM=1 EMVOLVE_REPORT_SCREENSHOT="$SHOT" cargo test --release --test it report:: -- --nocapture
echo "screenshot: $SHOT"
