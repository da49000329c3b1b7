#!/usr/bin/env bash
# Starts `lockwire-sim serve` on a free port and runs the client scripts against it: redis-cli,
# redis-py (python3-redis) and ioredis (its node_modules found through NODE_PATH,
# tests/sim/clients/node_modules, or bench/peers/node_modules — the pinned ioredis that
# bench/run.sh installs with `npm ci`, which .ci/run runs before the tests). A client that is not
# installed is reported and skipped; exit 77 (ctest: skipped) when none could run.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
node_path="${NODE_PATH:-}:$here/node_modules:$here/../../../bench/peers/node_modules"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$bin" serve --port "$port" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
ran=0; failed=0
run() {  # name command...
  local name=$1; shift
  if "$@"; then ran=$((ran + 1)); else echo "$name FAILED"; failed=$((failed + 1)); fi
  redis-cli -p "$port" FLUSHALL >/dev/null 2>&1 || true
}
if command -v redis-cli >/dev/null; then run redis-cli bash "$here/rediscli_smoke.sh" "$port"; else echo "redis-cli not installed: skipped"; fi
if $py -c 'import redis' 2>/dev/null; then run redis-py $py "$here/redispy_smoke.py" "$port"; else echo "redis-py not installed: skipped"; fi
if command -v node >/dev/null && NODE_PATH="$node_path" node -e 'require("ioredis")' 2>/dev/null; then
  run ioredis env NODE_PATH="$node_path" node "$here/ioredis_smoke.js" "$port"
else
  echo "ioredis not installed: skipped (bench/run.sh installs it in bench/peers, or npm install ioredis in $here)"
fi
echo "$ran passed, $failed failed"
[ $failed -eq 0 ] || exit 1
[ $ran -gt 0 ] || exit 77
