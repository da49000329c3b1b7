#!/usr/bin/env bash
# Proves the package from outside: installs the release build into a temporary prefix, builds
# the README's own consumer snippets against it (scripts/readme_consumer_check.sh: its CMake
# link lines, its BlockingClient service and its simulation test, which it runs), builds
# examples/consumer against it with find_package(lockwire) and with pkg-config and runs both
# against a private redis-server and the simulator, then builds the .debs with CPack, unpacks
# them (dpkg -x) and runs the unpacked lockwire and man pages; as root it also installs them
# with dpkg -i (only if no lockwire package is installed) and removes them afterwards.
# Usage: scripts/package_check.sh            (temporary files: $LOCKWIRE_PKG_TMP or mktemp -d)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
scripts/deps.sh man-db groff-base dpkg-dev
if [ -f build/release/build.ninja ]; then cmake --build --preset release; else scripts/build.sh release; fi

tmp=${LOCKWIRE_PKG_TMP:-$(mktemp -d)}
mkdir -p "$tmp"
redis_pid=""
dpkg_installed=0
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  if [ "$dpkg_installed" = 1 ]; then dpkg -r lockwire-dev lockwire >/dev/null || true; fi
  [ -n "${LOCKWIRE_PKG_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
step() { echo "package_check: $*"; }
fail() { echo "package_check: FAIL: $*" >&2; exit 1; }

# 1. Install into a prefix; nothing in it may point back at this tree.
prefix=$tmp/prefix
rm -rf "$prefix"
cmake --install build/release --prefix "$prefix" >/dev/null
step "installed into $prefix: $(find "$prefix" -type f | wc -l) files"
if grep -rIl -e "$src" -e "$tmp" "$prefix"; then fail "absolute build paths in the installed tree (above)"; fi
"$prefix/bin/lockwire" --version

# 2. The README's snippets, exactly as written (what it says to link is what gets linked).
scripts/readme_consumer_check.sh "$prefix" "$tmp/readme"
step "README's consumer snippets built and its simulation test ran"

# The consumer, once with find_package and once with pkg-config.
cmake -S examples/consumer -B "$tmp/consumer-cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/consumer-cmake" >/dev/null
step "consumer built with find_package(lockwire)"
mkdir -p "$tmp/consumer-pc"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -s -C examples/consumer OUT="$tmp/consumer-pc" >/dev/null
step "consumer built with pkg-config"

# 3. Run them: against a private redis-server on a free loopback port, and on the simulator.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  port=$((20000 + RANDOM % 20000))
  ss -Hltn "sport = :$port" | grep -q . && continue
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$tmp/redis.log" &
  redis_pid=$!
  for _ in $(seq 50); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break 2
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
done
[ -n "$redis_pid" ] || fail "could not start redis-server"
for how in cmake pc; do
  "$tmp/consumer-$how/consumer_lock" "redis://127.0.0.1:$port" | sed "s/^/  [$how] /"
  "$tmp/consumer-$how/consumer_sim" | sed "s/^/  [$how] /"
done
kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
step "consumer ran against redis-server and the simulator, both builds"

# 4. The Debian packages.
rm -rf "$tmp/deb"
(cd build/release && cpack -G DEB -B "$tmp/deb" >/dev/null)
debs=("$tmp"/deb/lockwire_*.deb "$tmp"/deb/lockwire-dev_*.deb)
for d in "${debs[@]}"; do
  [ -f "$d" ] || fail "missing $d"
  step "$(basename "$d"): Depends: $(dpkg-deb -f "$d" Depends)"
done
dpkg-deb -f "${debs[0]}" Depends | grep -q libuv1 || fail "lockwire.deb does not depend on libuv1"
dpkg-deb -f "${debs[0]}" Depends | grep -q libssl3 || fail "lockwire.deb does not depend on libssl3"

# 5. Unpacked: the binaries run, the man pages render, the CMake package is relocatable.
root=$tmp/root
rm -rf "$root"
for d in "${debs[@]}"; do dpkg -x "$d" "$root"; done
if grep -rIl -e "$src" -e "$tmp" "$root"; then fail "absolute build paths in the .debs (above)"; fi
"$root/usr/bin/lockwire" --version
"$root/usr/bin/respcat" --help >/dev/null
"$root/usr/bin/lockwire-sim" --help >/dev/null
for page in lockwire lockwire-sim respcat; do
  f=$root/usr/share/man/man1/$page.1.gz
  [ -f "$f" ] || f=$root/usr/share/man/man1/$page.1
  out=$(MANWIDTH=80 man -l "$f" 2>&1) || fail "man -l $f"
  grep -q "^NAME" <<<"$out" || fail "$f renders without a NAME section"
done
step "unpacked .debs: binaries run, man -l renders lockwire(1), lockwire-sim(1), respcat(1)"
cmake -S examples/consumer -B "$tmp/consumer-deb" -G Ninja -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$tmp/consumer-deb" --target consumer_sim >/dev/null
"$tmp/consumer-deb/consumer_sim" >/dev/null
step "consumer built and ran against the unpacked lockwire-dev"

# 6. As root, a real install (skipped when a lockwire package is already there: not ours to touch).
if [ "$(id -u)" -eq 0 ] && ! dpkg-query -W lockwire lockwire-dev >/dev/null 2>&1; then
  dpkg -i "${debs[@]}" >/dev/null
  dpkg_installed=1
  /usr/bin/lockwire --version
  MANWIDTH=80 man lockwire 2>/dev/null | grep -q "^NAME" || fail "man lockwire after dpkg -i"
  dpkg -r lockwire-dev lockwire >/dev/null
  dpkg_installed=0
  step "dpkg -i installed both packages; lockwire --version and man lockwire work; removed again"
else
  step "dpkg -i skipped (not root, or a lockwire package is installed)"
fi
step "ok"
