#!/usr/bin/env bash
# The whole side-by-side benchmark in one command: installs what it needs (Debian packages, npm
# packages into bench/peers/node_modules), builds the release preset, starts a private
# redis-server (free loopback port, persistence off), one replica of it, a 3-primary Redis
# Cluster (for the cluster row) and 3 sentinels monitoring the server (for the sentinel row;
# both skipped when the suites do not include locks), runs every suite with the contenders
# interleaved and repeated, stops the servers, and writes <date>-<host>.json, .md and PNG
# charts. Scripting stays enabled on every server (the peers
# need EVALSHA); collect.py gives lockwire's rows an ACL user without @scripting.
#
# Usage: bench/run.sh [--quick] [--rounds N] [--suites LIST] [--no-build] [--bin DIR] [--out DIR]
#   --quick     each suite briefly, one round, results under build/bench-quick/; checks only that
#               everything ran and the result file is well-formed, including that every lock
#               contender (lockwire, redis-py, node-redlock, and bench_hiredis_peers' hiredis-lua,
#               hiredis-lua-fenced, hiredis-watch) produced each of its rows in every round
#               (lockwire's replica, cluster, sentinel, semantics rows too; for CI; no timing
#               assertions)
#   --rounds N  repetitions of every suite (default 5; 1 with --quick)
#   --suites    comma-separated subset of resp,connection,locks,sim (default: all)
#   --no-build  use the binaries already in --bin (default build/release/bin)
#   --out DIR   where results go (default bench/results, or build/bench-quick with --quick)
# Suites whose binary is not built are listed as skipped; a contender that fails makes it exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."
cmdline="bench/run.sh${*:+ $*}"
quick=0; rounds=""; suites=""; build=1; bin=build/release/bin; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --suites) suites=$2; shift ;;
    --no-build) build=0 ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || { [ $quick = 1 ] && out=build/bench-quick || out=bench/results; }
say() { echo "[run.sh $(date -u +%H:%M:%S)] $*" >&2; }
t_start=$(date +%s)

# 1. Dependencies. Debian's python3 (not a pyenv/venv one) is the one that sees python3-redis.
py=/usr/bin/python3
extra=(python3-redis python3-matplotlib)
command -v node >/dev/null || extra+=(nodejs)
command -v npm >/dev/null || extra+=(npm)
scripts/deps.sh "${extra[@]}"
if [ ! -f bench/peers/node_modules/.package-lock.json ] ||
   [ bench/peers/package-lock.json -nt bench/peers/node_modules/.package-lock.json ]; then
  say "npm ci (redlock, ioredis) into bench/peers/node_modules"
  npm ci --prefix bench/peers --no-audit --no-fund --loglevel=error >&2
fi

# 2. Build.
if [ $build = 1 ]; then
  say "building the release preset"
  scripts/build.sh release >&2
fi

# 3. A private redis-server on a free loopback port, persistence off, and one replica of it
#    (for the replica-acknowledged grant rows; collect.py detaches it for every other row, see
#    bench/results/README.md).
sdir=$(mktemp -d /tmp/lockwire-bench.XXXXXX)
pids=()
stop_servers() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() { stop_servers; rm -rf "$sdir"; }
trap cleanup EXIT
# start_server NAME [redis-server options...]: on a free loopback port (3 attempts); sets
# srv_port and srv_pid (also kept in pids, for the cleanup). With bus=1 set, a port P whose
# cluster bus port P+10000 is free too. With conf=FILE set, FILE is the config file (a
# sentinel needs one it can rewrite).
bus=0
conf=""
free_port() {
  $py -c 'import socket, sys
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if sys.argv[1] == "0": print(p); sys.exit(0)
    if p + 10000 > 65535: continue
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 10000)); print(p); sys.exit(0)
    except OSError:
        pass
    finally:
        b.close(); s.close()
sys.exit(1)' "$bus"
}
start_server() {
  local name=$1 attempt
  shift
  mkdir -p "$sdir/$name"
  for attempt in 1 2 3; do
    srv_port=$(free_port)
    redis-server ${conf:+"$conf"} --bind 127.0.0.1 --port "$srv_port" --save '' --appendonly no \
      --dir "$sdir/$name" --logfile "$sdir/$name.log" --daemonize no "$@" &
    srv_pid=$!
    pids+=("$srv_pid")
    for _ in $(seq 50); do
      timeout 5 redis-cli -h 127.0.0.1 -p "$srv_port" ping 2>/dev/null | grep -q PONG && break
      kill -0 "$srv_pid" 2>/dev/null || break
      sleep 0.1
    done
    timeout 5 redis-cli -h 127.0.0.1 -p "$srv_port" ping 2>/dev/null | grep -q PONG && return 0
    kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true
    say "redis-server ($name) did not start on port $srv_port (attempt $attempt):" \
      "$(tail -2 "$sdir/$name.log")"
  done
  return 1
}
start_server primary || { say "cannot start redis-server"; exit 1; }
port=$srv_port
say "redis-server $(redis-server --version | grep -o 'v=[^ ]*') on 127.0.0.1:$port (pid $srv_pid)"
start_server replica --replicaof 127.0.0.1 "$port" || { say "cannot start the replica"; exit 1; }
rport=$srv_port
online=0
for _ in $(seq 100); do
  info=$(timeout 5 redis-cli -h 127.0.0.1 -p "$port" info replication 2>/dev/null || true)
  if grep -q '^connected_slaves:1' <<<"$info" && grep -q '^slave0:.*state=online' <<<"$info"; then
    online=1
    break
  fi
  sleep 0.1
done
if [ $online = 0 ]; then
  say "the replica on port $rport did not come online: $(tail -2 "$sdir/replica.log")"
  exit 1
fi
say "replica on 127.0.0.1:$rport (pid $srv_pid) online"

# 3b. The cluster row's Redis Cluster: 3 primaries, no replicas, slots spread by redis-cli.
cports=()
if [ -z "$suites" ] || [[ ",$suites," == *,locks,* ]]; then
  bus=1
  for i in 1 2 3; do
    start_server "cluster$i" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 2000 || { say "cannot start cluster node $i"; exit 1; }
    cports+=("$srv_port")
  done
  bus=0
  nodes=()
  for p in "${cports[@]}"; do nodes+=("127.0.0.1:$p"); done
  if ! ccout=$(timeout 60 redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 \
      --cluster-yes 2>&1); then
    say "redis-cli --cluster create failed: $(tail -3 <<<"$ccout")"; exit 1
  fi
  ok=0
  for _ in $(seq 200); do
    ok=1
    for p in "${cports[@]}"; do
      ci=$(timeout 5 redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null || true)
      grep -q '^cluster_state:ok' <<<"$ci" && grep -q '^cluster_known_nodes:3' <<<"$ci" || ok=0
    done
    [ $ok = 1 ] && break
    sleep 0.1
  done
  [ $ok = 1 ] || { say "the cluster on ${nodes[*]} never reported cluster_state:ok"; exit 1; }
  say "Redis Cluster of 3 primaries on ${nodes[*]}: cluster_state:ok"
fi

# 3c. The sentinel row's sentinels: 3, monitoring the primary as $smaster (quorum 2,
#     down-after 5 s), each with its own config file. The primary's default user has no
#     password (collect.py only adds lockwire's ACL user), so they need no auth-user/auth-pass.
#     collect.py detaches the replica for most rows and resets the sentinels each time (else
#     they re-attach it); no failover happens during the bench (it checks after each row).
sports=()
smaster=lockwire-bench
if [ -z "$suites" ] || [[ ",$suites," == *,locks,* ]]; then
  for i in 1 2 3; do
    printf 'sentinel monitor %s 127.0.0.1 %s 2\nsentinel down-after-milliseconds %s 5000\n' \
      "$smaster" "$port" "$smaster" >"$sdir/sentinel$i.conf"
    conf="$sdir/sentinel$i.conf"
    start_server "sentinel$i" --sentinel || { say "cannot start sentinel $i"; exit 1; }
    sports+=("$srv_port")
  done
  conf=""
  # Each must list the replica and the 2 other sentinels (hello messages, every 2 s).
  ok=0
  for _ in $(seq 300); do
    ok=1
    for p in "${sports[@]}"; do
      sm=$(timeout 5 redis-cli -h 127.0.0.1 -p "$p" sentinel master "$smaster" 2>/dev/null || true)
      awk 'NR % 2 { k = $0; next } { v[k] = $0 }
           END { exit !(v["num-slaves"] >= 1 && v["num-other-sentinels"] == 2) }' <<<"$sm" || ok=0
    done
    [ $ok = 1 ] && break
    sleep 0.1
  done
  if [ $ok = 0 ]; then
    say "the sentinels on ${sports[*]} never listed the replica and each other"; exit 1
  fi
  say "3 sentinels on ${sports[*]} monitor 127.0.0.1:$port as $smaster with its replica"
fi

# 4. Run the suites.
mkdir -p "$out"
name="$(date -u +%Y-%m-%d)-$(hostname -s)"
json="$out/$name.json"
collect=(--port "$port" --replica-port "$rport" --bin "$bin" --out "$json" --command "$cmdline")
[ $quick = 1 ] && collect+=(--quick)
[ -n "$rounds" ] && collect+=(--rounds "$rounds")
[ -n "$suites" ] && collect+=(--suites "$suites")
[ ${#cports[@]} -gt 0 ] && collect+=(--cluster-ports "$(IFS=,; echo "${cports[*]}")")
[ ${#sports[@]} -gt 0 ] &&
  collect+=(--sentinel-ports "$(IFS=,; echo "${sports[*]}")" --sentinel-master "$smaster")
rc=0
$py bench/report/collect.py "${collect[@]}" || rc=$?
stop_servers

# 5. Report (also validates the JSON: any schema error, or a lock contender's row missing from a
#    round, makes it exit non-zero).
[ -f "$json" ] || { say "no result file"; exit 1; }
$py bench/report/report.py "$json" || rc=$?
[ $rc = 0 ] || say "FAILED: a suite or contender failed, or rows are missing (see the lines above)"
say "done in $(( $(date +%s) - t_start )) s: $json, ${json%.json}.md, ${json%.json}-*.png (exit $rc)"
exit $rc
