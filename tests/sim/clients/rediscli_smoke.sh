#!/usr/bin/env bash
# redis-cli (Debian's redis-tools) against `lockwire-sim serve`: plain commands, a pipe of
# commands, --scan. Exit 0 when all match.
set -euo pipefail
port=$1
cli() { redis-cli -p "$port" "$@"; }
[ "$(cli PING)" = PONG ]
[ "$(cli SET k v)" = OK ]
[ "$(cli GET k)" = v ]
[ "$(cli RPUSH l a b c)" = 3 ]
[ "$(cli LRANGE l 0 -1 | tr '\n' ' ')" = "a b c " ]
[ "$(cli --no-raw INCRBYFLOAT f 2.5)" = '"2.5"' ]
[ "$(cli HSET h f v)" = 1 ]
[ "$(cli ZADD z 1 a)" = 1 ]
[ "$(cli --scan --pattern 'l*' | sort | tr '\n' ' ')" = "l " ]
[ "$(printf 'SET a 1\nINCR a\nGET a\n' | cli | tr '\n' ' ')" = "OK 2 2 " ]
info=$(cli INFO); grep -q '^loading:0' <<<"$info"
mc=$(cli CONFIG GET maxclients); grep -q 10000 <<<"$mc"
[ "$(cli BLPOP nothing 0.1)" = "" ]
echo "redis-cli: all checks passed"
