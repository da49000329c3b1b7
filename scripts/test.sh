#!/usr/bin/env bash
# The whole test suite on a fresh Debian bookworm machine: installs what is missing, builds, runs ctest.
# Tests that need a redis-server start their own on a free loopback port (tests/support).
# Usage: scripts/test.sh [preset]   (release | debug | asan | tsan; default release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
scripts/deps.sh
scripts/build.sh "$preset"
ctest --preset "$preset" -j2
