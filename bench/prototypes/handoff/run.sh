#!/bin/bash
# Usage: run.sh PORT  -- 3 rounds. Each round: PING (back to back, and after a 200 us sleep),
# then "mix" (pipelined and not-pipelined parks alternate within one run: 2000 hand-offs each,
# same noise) with 1 and 8 waiters, then each design alone (2000 hand-offs). Raw output to stdout.
P=${1:-16391}
for r in 1 2 3; do
  echo "## round $r $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  ./handoff ping 127.0.0.1 $P 5000
  ./handoff ping 127.0.0.1 $P 5000 200
  for n in 1 8; do
    timeout 120 ./handoff mix 127.0.0.1 $P $n 4000 200
    timeout 120 ./handoff pipe 127.0.0.1 $P $n 2000 200
    timeout 120 ./handoff seq 127.0.0.1 $P $n 2000 200
  done
done
echo "## end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
