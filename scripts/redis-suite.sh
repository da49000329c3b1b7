#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suite (tests/ of the redis/redis tag 7.0.15, which is not ours to
# commit: extract it yourself, e.g. `git -C <redis clone> archive 7.0.15 | tar -x -C /tmp/redis-7.0.15`)
# in external mode against redis-server and/or `lockwire-sim serve`, with the stock runner, and
# prints per-file counts of passed tests.
#
# usage: scripts/redis-suite.sh --redis-src DIR [--real] [--serve BIN] [--files "unit/a unit/b"]
#                               [--keep-logs DIR] [--tags "..."] [--no-durable]
# --durable (the runner's own option, on by default) makes a test that hits an error reply it did
# not expect count as failed instead of aborting the rest of its file (serve mode has no Lua and
# no streams); the counts against redis-server are the same with or without it.
# Each file gets a fresh server on a free port. Prints: file  ok  err  exception(0/1)  ignored.
set -uo pipefail
src=""; run_real=0; serve_bin=""; logs=""; durable="--durable"
files="unit/type/hash unit/type/incr unit/type/string unit/expire unit/multi unit/pubsub unit/tracking unit/keyspace unit/type/zset unit/type/set unit/info-command unit/protocol"
tags="-needs:repl -needs:debug -needs:pfdebug -needs:config-maxmemory -needs:save -needs:latency -needs:local-process"
while [ $# -gt 0 ]; do
  case "$1" in
    --redis-src) src=$2; shift 2 ;;
    --real) run_real=1; shift ;;
    --serve) serve_bin=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --tags) tags=$2; shift 2 ;;
    --keep-logs) logs=$2; shift 2 ;;
    --no-durable) durable=""; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] && [ -x "$src/runtest" ] || { echo "--redis-src must point at redis 7.0.15's source tree (runtest, tests/)" >&2; exit 2; }
[ -n "$logs" ] && mkdir -p "$logs"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }

run_one() {  # kind file
  local kind=$1 f=$2 port pid out
  port=$(free_port)
  if [ "$kind" = real ]; then
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --enable-debug-command no >/dev/null 2>&1 &
  else
    "$serve_bin" serve --port "$port" >/dev/null 2>&1 &
  fi
  pid=$!
  wait_port "$port" || { echo "$kind: server did not start" >&2; kill $pid 2>/dev/null; return; }
  local log=${logs:-${TMPDIR:-/tmp}}/$kind-$(echo "$f" | tr / _).log
  (cd "$src" && timeout "${SUITE_TIMEOUT:-900}" ./runtest --host 127.0.0.1 --port "$port" --single "$f" \
        --ignore-encoding --ignore-digest $durable --tags "$tags" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' > "$log")
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  out=$(cat "$log")
  local ok err exc ign
  ok=$(grep -c '^\[ok\]:' <<<"$out"); err=$(grep -c '^\[err\]:' <<<"$out")
  exc=$(grep -c '^\[exception\]:' <<<"$out"); ign=$(grep -c '^\[ignore\]:' <<<"$out")
  printf '%-6s %-22s ok %4d  err %3d  exception %d  ignored %3d\n' "$kind" "$f" "$ok" "$err" "$exc" "$ign"
}

for f in $files; do
  [ $run_real = 1 ] && run_one real "$f"
  [ -n "$serve_bin" ] && run_one serve "$f"
done
