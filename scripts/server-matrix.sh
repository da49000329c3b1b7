#!/usr/bin/env bash
# The server version matrix (issue #32): builds each server archive of ../shared/servers once (with
# TLS) into a cache outside the work tree, then runs the real-server ctest suites against each with
# its binaries first on PATH, and prints a table of suite results per server.
#
# Usage: scripts/server-matrix.sh [options]
#   --servers LIST   comma-separated archive names or prefixes (redis-7.4,valkey-8.0.1); default all
#   --suites LIST    comma-separated suites (see --help); default: the CI plan below
#   --all-suites     every suite on every chosen server (1.5-2 min per server here; 10 min for all)
#   --build-only     build what is missing in the cache and stop
#   --preset NAME    the build preset whose tests run (default release; built first if needed)
#   --no-build       fail rather than build a server that is not cached
#   --list           print the servers and suites and exit
# Environment: LOCKWIRE_SERVERS (default <repo>/../shared/servers), LOCKWIRE_SERVER_CACHE (default
# /var/cache/lockwire/servers). A fresh machine builds all seven servers first: about 15 minutes on
# 2 cores, once; later runs find them in the cache (keyed by the archive's sha256, so a changed
# archive is rebuilt).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
servers_dir=${LOCKWIRE_SERVERS:-$repo/../shared/servers}
cache=${LOCKWIRE_SERVER_CACHE:-/var/cache/lockwire/servers}

log() { printf 'server-matrix: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

# build_server ARCHIVE -> prints the bin directory holding redis-server, redis-sentinel, redis-cli.
build_server() {
    local archive=$1 name sum dir bin tmp
    name=$(basename "$archive" .tar.gz)
    sum=$(sha256sum "$archive" | cut -d' ' -f1)
    dir=$cache/$name
    bin=$dir/bin
    mkdir -p "$cache" 2>/dev/null && [[ -w $cache ]] ||
        die "cannot write the server cache $cache (set LOCKWIRE_SERVER_CACHE to a writable folder)"
    # One builder per server even when two runs start at once; the other waits for its result.
    exec {lockfd}>"$cache/.$name.lock"
    flock "$lockfd"
    if [[ -x $bin/redis-server && "$(cat "$dir/archive.sha256" 2>/dev/null)" == "$sum" ]]; then
        exec {lockfd}>&-
        printf '%s\n' "$bin"
        return
    fi
    [[ ${no_build:-0} == 1 ]] && die "$name is not in the cache $cache (and --no-build was given)"
    log "building $name into $dir (once per machine; 1.5-3 min on 2 cores)"
    rm -rf "$dir"
    tmp=$(mktemp -d "$cache/.$name.build.XXXXXX")
    tar xzf "$archive" -C "$tmp"
    if ! nice -n 10 make -C "$tmp/$name" -j2 MALLOC=libc BUILD_TLS=yes >"$tmp/build.log" 2>&1; then
        tail -n 30 "$tmp/build.log" >&2
        die "building $name failed (log: $tmp/build.log)"
    fi
    mkdir -p "$tmp/bin"
    local f
    for f in redis-server redis-sentinel redis-cli valkey-server valkey-sentinel valkey-cli; do
        if [[ -x $tmp/$name/src/$f ]]; then
            cp -L "$tmp/$name/src/$f" "$tmp/bin/"
        fi
    done
    # Valkey's binaries are valkey-*: the tests start redis-*, as they would after `make install`.
    for f in server sentinel cli; do
        if [[ ! -e $tmp/bin/redis-$f && -x $tmp/bin/valkey-$f ]]; then
            ln -s "valkey-$f" "$tmp/bin/redis-$f"
        fi
    done
    [[ -x $tmp/bin/redis-server && -x $tmp/bin/redis-cli ]] || die "$name built no redis-server/redis-cli"
    mkdir -p "$dir"
    mv "$tmp/bin" "$dir/bin"
    mv "$tmp/build.log" "$dir/build.log"
    printf '%s\n' "$sum" >"$dir/archive.sha256"
    rm -rf "$tmp"
    exec {lockfd}>&-
    printf '%s\n' "$bin"
}

# The real-server suites: ctest names per suite (build/<preset>, `ctest -N`).
declare -A suite_tests=(
    [support]="lock_server_support_tests tools_server_support_tests"  # issue #32: grant or refuse
    [loop]="loop_integration_tests"              # connection, bad servers, TLS (tls_test.cpp)
    [lock]="lock_tests"
    [tools]="tools_tests"
    [conditions]="lock_server_conditions_tests tools_conditions_tests"
    [sentinel]="sentinel_tests sentinel_failover_tests"
    [failover]="lock_failover_tests tools_failover_tests"
    [cluster]="lock_cluster_tests tools_cluster_tests topology_tests"
)
all_suites="support loop lock tools conditions sentinel failover cluster"

# The CI plan. Measured on this 2-core VM (2026-12-03, servers cached, load 5-9 from other
# builds): every suite on one server takes 91-110 s with ctest -j2 (cluster 59-74 s and failover
# 51-53 s of test time, conditions 26-31, lock 15-19, tools 11-21, sentinel 6-9, loop 4-8,
# support 2-4), so all seven servers take 10 min; with every suite on Redis 7.2 and 8.4 and
# Valkey 7.2 and 8.1 and the lighter ones elsewhere, 9m12s. This plan: 5m33s-6m46s. Every suite
# on the oldest supported server (Redis 7.2) and on the newest of each family (Redis 8.4, Valkey
# 8.1), the lighter suites (about 35 s a server) on the ones between (Redis 7.4, Valkey 7.2 and
# 8.0: Valkey 7.2 is Redis 7.2.4's code), and on a server below the minimum only `support`, which
# checks the refusal (nothing else can run there). --all-suites runs everything everywhere.
light_suites="support loop lock tools conditions"
ci_suites_for() {
    case $1 in
        redis-7.2.*|redis-8.*|valkey-8.1*) echo "$all_suites" ;;
        *) echo "$light_suites" ;;
    esac
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

servers_arg= suites_arg= build_only=0 no_build=0 preset=release list=0
while (($#)); do
    case $1 in
        --servers) servers_arg=$2; shift 2 ;;
        --suites) suites_arg=$2; shift 2 ;;
        --all-suites) suites_arg=all; shift ;;
        --build-only) build_only=1; shift ;;
        --no-build) no_build=1; shift ;;
        --preset) preset=$2; shift 2 ;;
        --list) list=1; shift ;;
        --build-one) build_server "$2"; exit ;;  # one archive path (used to warm the cache)
        -h|--help) usage; echo "suites: $all_suites"; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done

[[ -d $servers_dir ]] || die "no server archives at $servers_dir (set LOCKWIRE_SERVERS)"
archives=()
for a in "$servers_dir"/*.tar.gz; do
    [[ -e $a ]] || continue
    name=$(basename "$a" .tar.gz)
    if [[ -n $servers_arg ]]; then
        keep=0
        IFS=, read -ra want <<<"$servers_arg"
        for w in "${want[@]}"; do [[ $name == "$w"* ]] && keep=1; done
        ((keep)) || continue
    fi
    archives+=("$a")
done
((${#archives[@]})) || die "no server archive matches '${servers_arg}' in $servers_dir"
if [[ -n $suites_arg && $suites_arg != all ]]; then
    for s in ${suites_arg//,/ }; do
        [[ -n ${suite_tests[$s]:-} ]] || die "unknown suite '$s' (suites: $all_suites)"
    done
fi
if ((list)); then
    for a in "${archives[@]}"; do echo "$(basename "$a" .tar.gz)"; done
    echo "suites: $all_suites"
    exit 0
fi

bins=()
for a in "${archives[@]}"; do bins+=("$(build_server "$a")"); done
((build_only)) && exit 0

"$repo/scripts/build.sh" "$preset" >&2
build_dir=$repo/build/$preset

# Whether a server has what lockwire needs, asked the way the client asks (PEXPIRE ... GT), not
# read from its version (an unstable Redis says 255.255.255, Valkey 8 says redis_version 7.2.4).
probe_server() {
    local bin=$1 dir pid out=
    dir=$(mktemp -d /tmp/lockwire-matrix-probe-XXXXXX)
    # A Unix socket of its own: a TCP port could belong to another test's server.
    "$bin/redis-server" --port 0 --unixsocket "$dir/sock" --save "" --appendonly no \
        --dir "$dir" --daemonize no --logfile "$dir/log" &
    pid=$!
    for _ in $(seq 200); do  # up to ~10 s
        [[ -S $dir/sock ]] && out=$("$bin/redis-cli" -s "$dir/sock" PEXPIRE absent 1 GT 2>/dev/null) &&
            [[ -n $out ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
    case $out in
        *"wrong number of arguments"*) echo "below minimum: PEXPIRE ... GT: $out" ;;
        0|1) echo ok ;;
        *) die "cannot probe $bin/redis-server (answer: '${out:-none}')" ;;
    esac
}

declare -A result   # "<server> <suite>" -> "pass 123s" / "FAIL 45s" / "refused" / "-"
failed=0 flaky_any=0
server_names=()
run_suites=()
for i in "${!archives[@]}"; do
    name=$(basename "${archives[$i]}" .tar.gz)
    bin=${bins[$i]}
    server_names+=("$name")
    version=$("$bin/redis-server" --version | head -n1)
    support=$(probe_server "$bin")
    if [[ $suites_arg == all ]]; then suites=$all_suites
    elif [[ -n $suites_arg ]]; then suites=${suites_arg//,/ }
    else suites=$(ci_suites_for "$name"); fi
    if [[ $support != ok ]]; then
        # Only `support` can run: it checks that lockwire refuses this server clearly.
        for s in $suites; do [[ $s == support ]] || result["$name $s"]=refused; done
        suites=support
    fi
    tests=()
    for s in $suites; do tests+=(${suite_tests[$s]}); done
    regex="^($(IFS='|'; echo "${tests[*]}"))\$"
    log "== $name ($version; $support): $suites"
    logfile=$build_dir/server-matrix-$name.log
    start=$(date +%s)
    # Bounded: a test that hangs is killed and counted as failed.
    PATH=$bin:$PATH ctest --test-dir "$build_dir" -R "$regex" -j2 --timeout 900 \
        --output-on-failure >"$logfile" 2>&1 || true
    # A test that failed is run once more, alone: two timing-sensitive tests (the sentinel
    # failover's event order) lost a race while the matrix ran suites side by side on a loaded
    # 2-core machine, and passed 16 of 16 times alone. The table marks such a pass "flaky" and
    # the first failure stays in the log; a second failure fails the matrix.
    retried=()
    for t in "${tests[@]}"; do
        line=$(grep -E "Test +#[0-9]+: $t " "$logfile" | tail -n1 || true)
        [[ -z $line || $line == *" Passed "* ]] && continue
        log "   $t failed; once more, alone"
        retried+=("$t")
        PATH=$bin:$PATH ctest --test-dir "$build_dir" -R "^$t\$" --timeout 900 \
            --output-on-failure >>"$logfile" 2>&1 || true
    done
    log "   $(( $(date +%s) - start ))s; log: $logfile"
    for s in $suites; do
        ok=1 secs=0 seen=0 flaky=0
        for t in ${suite_tests[$s]}; do
            line=$(grep -E "Test +#[0-9]+: $t " "$logfile" | tail -n1 || true)
            [[ -n $line ]] && seen=$((seen + 1))
            [[ $line == *" Passed "* ]] || ok=0
            [[ " ${retried[*]:-} " == *" $t "* ]] && flaky=1
            sec=$(sed -nE 's/.* ([0-9]+\.[0-9]+) sec$/\1/p' <<<"$line")
            secs=$(awk -v a="$secs" -v b="${sec:-0}" 'BEGIN { printf "%.0f", a + b }')
        done
        ((seen)) || ok=0
        if ((ok && flaky)); then result["$name $s"]="flaky ${secs}s"; flaky_any=1
        elif ((ok)); then result["$name $s"]="pass ${secs}s"
        else result["$name $s"]="FAIL ${secs}s"; failed=1; fi
    done
    run_suites+=("$suites")
done

# The table: one row per server, one column per suite (sum of its tests' times).
{
    printf '\n%-26s' "server"
    for s in $all_suites; do printf ' %-11s' "$s"; done
    printf '\n'
    for name in "${server_names[@]}"; do
        printf '%-26s' "$name"
        for s in $all_suites; do printf ' %-11s' "${result["$name $s"]:--}"; done
        printf '\n'
    done
    printf '(pass/FAIL with the suite'"'"'s test time; flaky: failed once, passed alone; refused: the server is below the minimum and lockwire refuses it, checked by `support`; -: not run)\n'
} >&2
((flaky_any)) && log "flaky: a test failed once and passed when run again alone (first failure in its log)"
if ((failed)); then
    log "FAILED: see the logs above (build/$preset/server-matrix-<server>.log)"
    exit 1
fi
log "all chosen suites passed"
