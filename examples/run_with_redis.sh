#!/bin/sh
# Runs an example against a redis-server of its own: a Unix socket in a temporary folder, no TCP
# port, stopped by its pid when the example ends. Usage: run_with_redis.sh EXAMPLE [ARGS...]
# (the example gets the server's URL first).
set -eu
dir=$(mktemp -d)
stop() {
    if [ -s "$dir/pid" ]; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap stop EXIT INT TERM
redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --daemonize yes \
    --pidfile "$dir/pid" --dir "$dir" --logfile "$dir/redis.log" --save '' --appendonly no
i=0
while ! redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 100 ]; then echo "redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 1; fi
    sleep 0.05
done
example=$1
shift
"$example" "unix://$dir/redis.sock" "$@"
