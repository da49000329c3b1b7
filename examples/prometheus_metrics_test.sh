#!/usr/bin/env bash
# Runs examples/prometheus_metrics against a private redis-server (a Unix socket in a temporary
# directory: no port to collide on) and checks that what it prints is Prometheus text exposition
# format 0.0.4: every line is `# HELP name text`, `# TYPE name type` or `name{labels} value`,
# each sample's family was declared by a TYPE line before it, label values are quoted and
# escaped, histograms end in +Inf, and the workload's series are there.
# Usage (examples/run_with_redis.sh starts the server and passes its URL first):
#   run_with_redis.sh prometheus_metrics_test.sh EXAMPLE_BINARY
set -euo pipefail
url=$1
bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if ! timeout 60 "$bin" "$url" 20 >"$dir/out" 2>"$dir/err"; then
  echo "FAIL: the example failed"; cat "$dir/err"; exit 1
fi

# The grammar of the text format (0.0.4), one line at a time.
if ! awk '
  function fail(why) { printf "FAIL: line %d: %s: %s\n", NR, why, $0; bad = 1; exit 1 }
  /^# HELP / { if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fail("bad HELP name"); next }
  /^# TYPE / {
    if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fail("bad TYPE name")
    if ($4 !~ /^(counter|gauge|histogram|summary|untyped)$/ || NF != 4) fail("bad TYPE")
    if ($3 in typed) fail("family declared twice")
    typed[$3] = $4; next
  }
  /^#/ { next }
  /^$/ { fail("empty line") }
  {
    if (match($0, /^[a-zA-Z_:][a-zA-Z0-9_:]*/) == 0) fail("no metric name")
    name = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
    if (substr(rest, 1, 1) == "{") {
      lab = "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
      if (match(rest, "^\\{(" lab "(," lab ")*)?\\}") == 0) fail("bad labels")
      rest = substr(rest, RLENGTH + 1)
    }
    if (rest !~ /^ ([-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|[-+]?Inf|NaN)( [-]?[0-9]+)?$/) fail("bad value")
    family = name
    if (!(family in typed)) { sub(/_(bucket|sum|count)$/, "", family) }
    if (!(family in typed)) fail("sample before its TYPE")
    if (typed[family] == "histogram" && name ~ /_bucket$/ && $0 !~ /le="/) fail("bucket without le")
    samples++
  }
  END { if (!bad && samples == 0) { print "FAIL: no samples"; exit 1 } }
' "$dir/out"; then
  cat "$dir/out"; exit 1
fi

# The workload's series: grants, try-locks answered busy, contention by family, a histogram.
for want in \
  '^lockwire_operations_total\{op="acquire",kind="exclusive",outcome="ok"\} [1-9]' \
  '^lockwire_operations_total\{op="release",kind="exclusive",outcome="ok"\} [1-9]' \
  '^lockwire_operations_total\{op="renew",kind="exclusive",outcome="ok"\} [1-9]' \
  '^lockwire_contended_total\{family="(invoice|report)"\} [1-9]' \
  '^lockwire_operation_duration_seconds_bucket\{op="acquire",kind="exclusive",result="ok",le="\+Inf"\} [1-9]' \
  '^lockwire_operation_duration_seconds_count\{op="acquire",kind="exclusive",result="ok"\} [1-9]' \
  '^lockwire_requests_total [1-9]' \
  '^# TYPE lockwire_operation_duration_seconds histogram$'; do
  grep -Eq "$want" "$dir/out" || { echo "FAIL: no line matches $want"; cat "$dir/out"; exit 1; }
done
# No resource name is a label value: only families (bounded).
if grep -Eq 'invoice:[0-9]' "$dir/out"; then echo "FAIL: a resource name became a label"; exit 1; fi
echo "ok: $(grep -vc '^#' "$dir/out") samples, $(grep -c '^# TYPE' "$dir/out") families"
