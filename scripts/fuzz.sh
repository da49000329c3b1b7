#!/usr/bin/env bash
# Builds the fuzz preset and runs each libFuzzer target for a bounded time on a copy of its
# shipped seed corpus (new units land in the copy, never in fuzz/corpus/). Fails on any crash,
# sanitizer report, oracle failure, timeout or out-of-memory; a failing input is kept under
# build/fuzz/artifacts/ and printed (base64) so that the log alone reproduces it.
# Usage: scripts/fuzz.sh [seconds-per-fuzzer]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [seconds-per-fuzzer]" >&2
  exit 64
fi

scripts/deps.sh
scripts/build.sh fuzz

# fuzzer binary : corpus folder under fuzz/corpus/
fuzzers=(resp_parser_fuzzer:resp_parser fuzz_sim_redis_model:sim_redis_model)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=build/fuzz/artifacts
failed=0
for entry in "${fuzzers[@]}"; do
  fuzzer=${entry%%:*}
  corpus=${entry#*:}
  cp -r "fuzz/corpus/$corpus" "$work/$corpus"
  mkdir -p "$work/$fuzzer-artifacts"
  log=$work/$fuzzer.log
  # -timeout: one input running this long is a hang, which is a finding too.
  if build/fuzz/bin/"$fuzzer" "$work/$corpus" -max_total_time="$secs" -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$work/$fuzzer-artifacts/" >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    last=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [^ ]+' || true)
    echo "fuzz: $fuzzer ok: $execs execs in ${secs}s, $last (seeds: $(ls "fuzz/corpus/$corpus" | wc -l))"
  else
    failed=1
    echo "fuzz: $fuzzer FAILED; the end of its log:"
    tail -n 60 "$log"
    mkdir -p "$artifacts"
    for f in "$work/$fuzzer-artifacts"/*; do
      [ -e "$f" ] || continue
      cp "$f" "$artifacts/"
      echo "fuzz: input kept as $artifacts/$(basename "$f"); reproduce with" \
           "build/fuzz/bin/$fuzzer $artifacts/$(basename "$f"); base64 (first 4 KiB):"
      head -c 4096 "$f" | base64
    done
  fi
done
exit "$failed"
