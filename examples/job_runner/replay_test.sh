#!/usr/bin/env bash
# The broken job runner must fail, and the replay line it prints must reproduce the failing
# seed's trace hash when run as printed. Usage: replay_test.sh TEST_BINARY
set -euo pipefail
bin=$1
out=$(mktemp)
trap 'rm -f "$out" "$out.replay"' EXIT
if "$bin" --gtest_filter=JobRunner.DISABLED_UnfencedWorkers --gtest_also_run_disabled_tests >"$out" 2>&1; then
  echo "FAIL: the unfenced workers passed every seed"; cat "$out"; exit 1
fi
line=$(grep -m1 '^  replay: ' "$out" | sed 's/^  replay: //')
first=$(grep -m1 -E '^seed [0-9]+ .* FAILED$' "$out")
hash=$(grep -oE 'trace [0-9a-f]{16}' <<<"$first")
[ -n "$line" ] && [ -n "$hash" ] || { echo "FAIL: no replay line or hash"; cat "$out"; exit 1; }
echo "failed:  $first"
echo "replay:  $line"
# Run the line exactly as printed (it is meant to be pasted into a shell).
if sh -c "$line" >"$out.replay" 2>&1; then
  echo "FAIL: the replay passed"; cat "$out.replay"; exit 1
fi
again=$(grep -m1 -E '^seed [0-9]+ ' "$out.replay")
echo "replayed: $again"
grep -q "$hash" <<<"$again" || { echo "FAIL: the replay gave another trace"; cat "$out.replay"; exit 1; }
grep -q 'timeline' "$out.replay" || { echo "FAIL: the replay printed no timeline"; exit 1; }
echo "ok: the replay reproduces $hash"
