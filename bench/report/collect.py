#!/usr/bin/python3
"""Runs every benchmark suite side by side against one redis-server and writes one JSON file.

Called by bench/run.sh (which installs, builds and starts the server); usable alone:

  collect.py --port P [--replica-port P2] --bin build/release/bin --out results.json [--quick]
             [--rounds R]

Contenders of a suite run interleaved: each round runs every contender once, in an order rotated
per round, so that machine noise (other processes, frequency changes) hits all of them alike.
Medians and spread (min..max over rounds) are computed by report.py from the raw runs kept here.
A suite binary that does not exist is recorded as "missing" (and listed as skipped); one that
exists but fails is recorded as "failed" and makes the exit status 1. Every process started
here has a timeout (its whole process group is killed), so a suite fails rather than hangs.

Suites: resp (bench_resp), connection (bench_loop on this server: LOCKWIRE_BENCH_URL, and
LOCKWIRE_BENCH_QUICK with --quick; each of its repetitions carries the redis-benchmark run made
right before it), locks (bench_lock, the peers in bench/peers, and `redis-benchmark -c 1 -P 1 -t
ping` as the floor, interleaved per round; with --replica-port also lockwire's
replica-acknowledged grant rows, see below), sim (bench_sim's simulated commands/s and
`lockwire-sim explore --seeds N` seeds/s from wall and CPU time).

Lock peers: redis-py (redispy_bench.py), node-redlock (redlock_bench.js) and, from
bench_hiredis_peers (C++ on hiredis, built with the bench tree; see its header), the canonical
Lua lock (hiredis-lua), the same with a fencing token from its acquire script
(hiredis-lua-fenced: serial and throughput rows only, its hand-off would poll exactly as
hiredis-lua's) and a Lua-free WATCH/MULTI/EXEC lock after redis-plus-plus's RedMutexTx
(hiredis-watch). Every peer row runs as its own process. When bench_lock is built but
bench_hiredis_peers is not, those rows fail (the two come from the same build); when neither is
built, both are listed as skipped.

--replica-port: a redis-server that run.sh started as a replica of the --port one. A replica
attached slows every write on the primary (measured: bench/results/README.md), so it is detached
(`REPLICAOF NO ONE`) at the start and every row that existed before it runs without one, as in
earlier reports; it is attached (`REPLICAOF`, waiting until the primary lists it online) only
for the replica rows, once per locks round in the contenders' rotation, and detached after:
`LOCKWIRE_BENCH_MIN_REPLICAS=1 bench_lock`, min_replicas=1 against min_replicas=0 on the same
primary with the replica attached (suites.locks.replicas). Without --replica-port those rows are
listed as skipped.

--cluster-ports P1,P2,P3: the primaries of a Redis Cluster that run.sh built (cluster row, issue
#14): once per locks round, in the rotation, `LOCKWIRE_BENCH_CLUSTER=redis://…:P1,…:P3
bench_lock URL`, 256 users through lockwire's cluster client against the same workload on the
--port primary, alternated inside one run (suites.locks.cluster). Without it: listed as skipped.

--sentinel-ports P1,P2,P3 (with --sentinel-master NAME): three sentinels that run.sh started,
monitoring the --port primary as NAME (sentinel row, issue #28): once per locks round, in the
rotation, the replica is attached as for the replica rows and `LOCKWIRE_BENCH_SENTINEL=
redis-sentinel://…:P1,…:P3#NAME bench_lock URL` runs serial pairs and 16 users on one
connection through the client behind Sentinel with SentinelOptions::vouch on (the default), the
same with it off, and directly on the primary, alternated inside one run
(suites.locks.sentinel). The sentinels must not turn the detached replica back into a replica
(they do, +convert-to-slave, about 10 s after a detach), so every detach is followed by
`SENTINEL RESET NAME` on each sentinel: they forget the replica (and relearn each other), and
the run waits until each lists no replica and the 2 other sentinels (so their reconnects to the
primary fall before the next row, not in it); before each sentinel row, until each lists the
replica again. After the row every sentinel must still name the --port primary (no failover
happened). Meanwhile the sentinels only ping the primary (PING every second, INFO every 10 s,
a hello PUBLISH every 2 s each). Without --sentinel-ports or --replica-port: listed as skipped.

Lock semantics (issue #20): once per locks round, in the rotation, `LOCKWIRE_BENCH_SEMANTICS=1
bench_lock URL` runs the semaphore, upgrade and lock_all rows against the default lock in the
same run, alternated in quarter-row chunks (suites.locks.semantics; SEMANTICS_CASES below): 16
users on one connection on one semaphore of 4 permits against 16 users each on its own resource
(the 16-user row's setup) and 16 users on one exclusive resource; serially, shared acquire +
upgrade + release, and lock_all of 1, 2, 4 resources + release of the set, against the exclusive
pair; and the hand-off (release → the waiter holds, two clients) in default and in fair order.
Every case must be there in every round.

Hand-off breakdown (issue #18): once per locks round, in the rotation, `bench_handoff URL N`
cuts the contended hand-off (1, 8, 64 waiters, a connection each) into release → push at the
winner → its attempt → it holds, p50 µs and ÷ a PING p50 taken during the same holds, with the
pushes all contenders got per hand-off (suites.locks.breakdown).

Scripting: every server keeps EVAL/EVALSHA (the peers need them). lockwire's rows connect as an
ACL user "lockwire-bench" with +@all -@scripting (created here on every server, checked with
ACL DRYRUN), and every lockwire run's INFO commandstats delta must show no script command.

Server cost (issue #18): lockwire's bench_lock reads `INFO cpu commandstats` itself right
before and after each row (on every server of the row); for the peers it is read here right
before and after each peer process (so it includes the process's warm-up: a few commands, and
the server's idle cron while the interpreter starts). Both: used_cpu_user + used_cpu_sys delta,
and the commandstats usec delta of the non-setup commands, ÷ pairs (hand-off: ÷ hand-offs).
A script's commandstats usec already includes the commands it calls, which commandstats also
counts under their own names: when a peer reports the commands it sent by name
(commands_by_name, whole process), only its own share of each command's calls is counted, so a
script's inner commands are not counted twice (server_cmd_scope says which way a row was
counted).
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

SCHEMA = "lockwire-bench/1"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = os.path.join(ROOT, "bench", "peers")
# Connection-setup and harness commands, not part of a lock pair.
# (DEL is not one: the harness sends none, and the peers' releases delete with it.)
SETUP_CMDS = {"hello", "client", "ping", "info", "select", "command", "config", "flushall",
              "auth", "readonly", "cluster", "acl"}
SCRIPT_CMDS = {"eval", "evalsha", "eval_ro", "evalsha_ro", "script", "function", "fcall",
               "fcall_ro"}
LW_USER = "lockwire-bench"
# bench_hiredis_peers' locks, by contender name (its --lock).
HIREDIS_PEERS = {"hiredis-lua": "lua", "hiredis-lua-fenced": "lua-fenced",
                 "hiredis-watch": "watch"}
PEER_NAMES = ["redis-py", "node-redlock"] + list(HIREDIS_PEERS)


def peer_rows(who, rows):
    """The lock rows a peer runs: all of them, but hiredis-lua-fenced only serial and
    throughput (its waiting is hiredis-lua's; only the acquire differs)."""
    if who == "hiredis-lua-fenced":
        return [x for x in rows if x[0] != "handoff"]
    return rows

LW_PASS = "lockwire-bench-no-scripts"
# bench_lock's sentinel row targets (LOCKWIRE_BENCH_SENTINEL), each with 1 and 16 users.
SENTINEL_TARGETS = ["direct", "sentinel", "sentinel-novouch"]
# bench_handoff's rows (waiters, each with its own connection), each once per round.
BREAKDOWN_WAITERS = [1, 8, 64]
# bench_lock's lock-semantics cases (LOCKWIRE_BENCH_SEMANTICS=1), each once per run.
SEMANTICS_CASES = ["exclusive-distinct", "exclusive-one-resource", "semaphore", "exclusive",
                   "upgrade", "lock-all-1", "lock-all-2", "lock-all-4", "handoff-default",
                   "handoff-fair"]


def log(msg):
    sys.stderr.write(f"[collect {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def run(cmd, timeout, env=None):
    """Runs cmd; returns (rc, stdout, stderr, seconds). rc is None on timeout, when the whole
    process group is killed (a suite's own redis-server must not outlive it)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, start_new_session=True)
    except OSError as e:
        return 127, "", str(e), time.monotonic() - t0
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(1)
        out, err = p.communicate()
        return None, out, (err or "") + f"\n(timed out after {timeout} s)", time.monotonic() - t0


def run_cpu(cmd, timeout, env=None):
    """run() plus the CPU time (user+system) of the process and the children it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc, out, err, secs = run(cmd, timeout, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, out, err, secs, cpu


def tail(text, n=6):
    return "\n".join(text.strip().splitlines()[-n:])


def version_of(cmd, pattern=r"(\d+\.\d+(?:\.\d+)?)"):
    rc, out, err, _ = run(cmd, 30)
    m = re.search(pattern, (out or "") + (err or ""))
    return m.group(1) if rc == 0 and m else None


def dpkg_version(pkg):
    rc, out, _, _ = run(["dpkg-query", "-W", "-f=${Version}", pkg], 10)
    return out.strip() if rc == 0 and out.strip() else None


def machine_info():
    info = {"host": socket.gethostname(), "kernel": platform.release(), "arch": platform.machine(),
            "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return info


def versions(bin_dir):
    v = {}
    rc, out, _, _ = run(["git", "-C", ROOT, "describe", "--always", "--dirty"], 10)
    v["lockwire"] = out.strip() if rc == 0 else None
    v["redis-server"] = version_of(["redis-server", "--version"], r"v=(\S+)")
    v["redis-benchmark"] = version_of(["redis-benchmark", "--version"], r"(\d+\.\d+\.\d+)")
    v["g++"] = version_of(["g++", "-dumpfullversion"])
    v["hiredis (Debian)"] = dpkg_version("libhiredis-dev")
    v["google-benchmark (Debian)"] = dpkg_version("libbenchmark-dev")
    v["libuv (Debian)"] = dpkg_version("libuv1-dev")
    v["python3"] = platform.python_version()
    try:
        import redis  # Debian python3-redis
        v["redis-py"] = redis.__version__
    except ImportError:
        v["redis-py"] = None
    v["node"] = version_of(["node", "--version"], r"v(\S+)")
    for pkg in ("redlock", "ioredis"):
        try:
            with open(os.path.join(PEERS, "node_modules", pkg, "package.json")) as f:
                v[pkg] = json.load(f)["version"].lstrip("v")
        except (OSError, ValueError, KeyError):
            v[pkg] = None
    return v


class Redis:
    """Just enough of a RESP2 client for INFO and DEL (the harness must not need redis-py)."""

    def __init__(self, port):
        self.port = port

    def call(self, *args):
        """A command's reply: a bulk or simple string (None for a nil bulk), or a flat array of
        bulk strings as a list (SENTINEL MASTER); an error reply raises RuntimeError."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            req = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
            s.sendall(req.encode())
            f = s.makefile("rb")

            def bulk(line):
                n = int(line[1:])
                return f.read(n + 2)[:-2].decode() if n >= 0 else None

            line = f.readline()
            if line.startswith(b"$"):
                return bulk(line)
            if line.startswith(b"-"):
                raise RuntimeError(line[1:].decode().strip())
            if line.startswith(b"*"):
                return [bulk(f.readline()) for _ in range(int(line[1:]))]
            return line[1:].decode().strip()
        finally:
            s.close()

    def info(self, section):
        """INFO section as {field: value}."""
        return dict(line.split(":", 1) for line in self.call("INFO", section).splitlines()
                    if ":" in line and not line.startswith("#"))

    def commandstats(self):
        stats = {}
        for line in self.call("INFO", "commandstats").splitlines():
            m = re.match(r"cmdstat_([^:]+):calls=(\d+)", line)
            if m:
                stats[m.group(1)] = int(m.group(2))
        return stats

    def cost(self):
        """(used_cpu_user + used_cpu_sys seconds, {command: calls}, {command: usec})."""
        cpu, calls, usec = 0.0, {}, {}
        for line in self.call("INFO", "cpu", "commandstats").splitlines():
            if line.startswith(("used_cpu_user:", "used_cpu_sys:")):
                cpu += float(line.split(":", 1)[1])
            m = re.match(r"cmdstat_([^:]+):calls=(\d+),usec=(\d+)", line)
            if m:
                calls[m.group(1)] = int(m.group(2))
                usec[m.group(1)] = int(m.group(3))
        return cpu, calls, usec


def cost_delta(before, after, ops, sent=None):
    """Server cost per op between two Redis.cost() snapshots (setup commands left out).
    sent: {command: count} the client sent itself (the whole process); when given, each
    command's usec is counted for the client's share of its calls only, so the commands a
    script called (already inside the script's usec) are not counted twice."""
    lock = lambda d: {k: v for k, v in d.items() if k.split("|")[0] not in SETUP_CMDS}
    calls = lock(stats_delta(before[1], after[1]))
    usec = lock(stats_delta(before[2], after[2]))
    out = {"server_cpu_us_per_op": (after[0] - before[0]) * 1e6 / ops,
           "server_calls_per_op": sum(calls.values()) / ops}
    if isinstance(sent, dict):
        base_calls, base_usec = {}, {}
        for k in usec:
            b = k.split("|")[0]
            base_calls[b] = base_calls.get(b, 0) + calls.get(k, 0)
            base_usec[b] = base_usec.get(b, 0) + usec[k]
        own = {str(k).lower().split("|")[0].split()[0]: v for k, v in sent.items()
               if num(v) and str(k).strip()}
        total = sum(u * min(1.0, own.get(b, 0) / base_calls[b]) for b, u in base_usec.items()
                    if base_calls.get(b))
        out["server_cmd_usec_per_op"] = total / ops
        out["server_cmd_scope"] = "commands the client sent (scripts' inner commands once)"
    else:
        out["server_cmd_usec_per_op"] = sum(usec.values()) / ops
        out["server_cmd_scope"] = "every command (scripts' inner commands twice)"
    return out


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def stats_delta(before, after):
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    return {k: v for k, v in d.items() if v > 0}


class Collector:
    def __init__(self, a):
        self.a = a
        self.port = a.port
        # lockwire's rows: an ACL user without @scripting (set up by setup_lockwire_user).
        self.url = f"redis://{LW_USER}:{LW_PASS}@127.0.0.1:{a.port}"
        # The connection suite (no locks, no scripts; bench_loop also hands it to
        # redis-benchmark): the default user.
        self.plain_url = f"redis://127.0.0.1:{a.port}"
        self.redis = Redis(a.port)
        self.cluster = [Redis(int(p)) for p in a.cluster_ports.split(",")] \
            if a.cluster_ports else []
        self.cluster_url = (f"redis://{LW_USER}:{LW_PASS}@" + ",".join(
            f"127.0.0.1:{r.port}" for r in self.cluster)) if self.cluster else None
        self.replica = Redis(a.replica_port) if a.replica_port else None
        self.sentinels = [Redis(int(p)) for p in a.sentinel_ports.split(",")] \
            if a.sentinel_ports else []
        self.sentinel_master = a.sentinel_master
        # The data node's credentials in the user info; the sentinels take no AUTH.
        self.sentinel_url = (f"redis-sentinel://{LW_USER}:{LW_PASS}@" + ",".join(
            f"127.0.0.1:{r.port}" for r in self.sentinels) + f"#{a.sentinel_master}") \
            if self.sentinels else None
        self.quick = a.quick
        self.rounds = a.rounds
        self.failed = []
        self.skipped = []
        self.lw_user = None

    def setup_lockwire_user(self):
        """Creates lockwire's ACL user (everything but @scripting) on every server it uses and
        checks that it may not run a script. Returns what was checked (for the JSON)."""
        checked = {}
        for r in [self.redis] + self.cluster:
            r.call("ACL", "SETUSER", LW_USER, "reset", "on", ">" + LW_PASS, "~*", "&*", "+@all",
                   "-@scripting")
            try:
                dry = r.call("ACL", "DRYRUN", LW_USER, "EVAL", "return 1", "0")
            except RuntimeError as e:
                dry = str(e)
            if dry == "OK":
                raise RuntimeError(f"ACL user {LW_USER} may run EVAL on port {r.port}")
            checked[f"127.0.0.1:{r.port}"] = dry
        return {"user": LW_USER, "acl": "+@all -@scripting", "eval_dryrun": checked}

    def binary(self, name):
        p = os.path.join(self.a.bin, name)
        return p if os.access(p, os.X_OK) else None

    # --- suite 1: RESP parsing (Google Benchmark; contenders interleaved by the library) ---
    def suite_resp(self):
        exe = self.binary("bench_resp")
        if not exe:
            return self.missing("resp", "bench_resp")
        out = os.path.join(self.a.tmp, "bench_resp.json")
        cmd = [exe, f"--benchmark_out={out}", "--benchmark_out_format=json",
               "--benchmark_enable_random_interleaving=true",
               f"--benchmark_repetitions={1 if self.quick else self.rounds}",
               f"--benchmark_min_time={0.01 if self.quick else 0.2}"]
        log("resp: " + " ".join(cmd[1:]))
        rc, stdout, stderr, secs = run(cmd, 600)
        try:
            with open(out) as f:
                gb = json.load(f)
        except (OSError, ValueError) as e:
            return self.fail("resp", cmd, rc, stderr or str(e))
        if rc != 0:
            return self.fail("resp", cmd, rc, stderr)
        runs = []
        for b in gb.get("benchmarks", []):
            if b.get("run_type") != "iteration" or b.get("error_occurred"):
                continue
            payload, chunk, contender = (b["run_name"].split("/") + ["", "", ""])[:3]
            runs.append({"payload": payload, "chunk": chunk, "contender": contender,
                         "items_per_sec": b.get("items_per_second"),
                         "bytes_per_sec": b.get("bytes_per_second"),
                         "cpu_ns": b.get("cpu_time"), "real_ns": b.get("real_time"),
                         "repetition": b.get("repetition_index", 0)})
        errors = [b["name"] for b in gb.get("benchmarks", []) if b.get("error_occurred")]
        return {"status": "ok" if runs and not errors else "failed", "command": cmd,
                "seconds": secs, "context": gb.get("context", {}), "runs": runs,
                "errors": errors, "stdout_tail": tail(stdout, 40)}

    # --- suite 2: connection, lockwire vs redis-benchmark on the same server ---
    def redis_benchmark(self, tests, pipeline, n):
        cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.port), "-c", "1", "-P",
               str(pipeline), "-n", str(n), "-t", tests, "--csv", "--precision", "3"]
        rc, out, err, _ = run(cmd, 60 if self.quick else 300)
        if rc != 0:
            raise RuntimeError(f"{' '.join(cmd)}: rc={rc}: {tail(err)}")
        rows = {}
        lines = [l for l in out.splitlines() if l.startswith('"')]
        header = [h.strip('"') for h in lines[0].split(",")]
        for l in lines[1:]:
            vals = [x.strip('"') for x in l.split(",")]
            row = dict(zip(header, vals))
            rows[row["test"]] = {k: float(v) for k, v in row.items() if k != "test"}
        return rows

    def redis_benchmark_ping(self, n):
        """`redis-benchmark -c 1 -P 1 -t ping` on this run's server: its PING_MBULK row."""
        return self.redis_benchmark("ping", 1, n)["PING_MBULK"]

    def suite_connection(self):
        exe = self.binary("bench_loop")
        res = {"status": "ok", "runs": [], "notes": []}
        # At most 3 rounds: each bench_loop run is 3 repetitions, each paired with its own
        # redis-benchmark run (~40 s on 2 cores).
        rounds = min(self.rounds, 3)
        if exe:
            for r in range(rounds):
                err = self.run_bench_loop(exe, r, res)
                if err:  # keep what was measured beside the failure
                    err["runs"] = res["runs"]
                    return err
            return res
        # No bench_loop: redis-benchmark alone, so that the floor is still recorded.
        self.skipped.append("connection: lockwire (bench_loop not built)")
        res["notes"].append("bench_loop not built: redis-benchmark only")
        n_ping = 2000 if self.quick else 50000
        n_pipe = 20000 if self.quick else 300000
        who = "redis-benchmark"
        for r in range(rounds):
            try:
                ping = self.redis_benchmark_ping(n_ping)
                res["runs"].append({"contender": who, "round": r, "metric": "ping_p50_us",
                                    "value": ping["p50_latency_ms"] * 1e3,
                                    "avg_us": ping["avg_latency_ms"] * 1e3, "rps": ping["rps"]})
                for p in (16, 128):
                    rows = self.redis_benchmark("get,set", p, n_pipe)
                    for t in ("GET", "SET"):
                        res["runs"].append({"contender": who, "round": r,
                                            "metric": f"{t.lower()}_p{p}_rps",
                                            "value": rows[t]["rps"]})
            except (RuntimeError, KeyError, IndexError, ValueError) as e:
                err = self.fail("connection", ["redis-benchmark"], 1, str(e))
                err["runs"] = res["runs"]
                return err
        return res

    def run_bench_loop(self, exe, r, res):
        """bench_loop (Google Benchmark) on this run's server (LOCKWIRE_BENCH_URL); it runs
        redis-benchmark itself right before each of its own runs and prints the comparison.
        LOCKWIRE_BENCH_QUICK makes it brief. It bounds its own waits (redis-benchmark timeout,
        per-run deadlines, a watchdog below our timeout) and exits non-zero on any failure."""
        out = os.path.join(self.a.tmp, f"bench_loop.{r}.json")
        # Its iteration counts are fixed (one redis-benchmark run per repetition): no min_time.
        cmd = [exe, f"--benchmark_out={out}", "--benchmark_out_format=json"]
        env = dict(os.environ, LOCKWIRE_BENCH_URL=self.plain_url)
        env.pop("LOCKWIRE_BENCH_QUICK", None)
        if self.quick:
            env["LOCKWIRE_BENCH_QUICK"] = "1"
        log(f"connection round {r + 1}: bench_loop")
        rc, stdout, stderr, _ = run(cmd, 180 if self.quick else 600, env)
        try:
            with open(out) as f:
                gb = json.load(f)
        except (OSError, ValueError):
            gb = {}
        # What it measured is kept even when it then failed (e.g. one redis-benchmark timed out).
        got = 0
        for b in gb.get("benchmarks", []):
            if b.get("run_type") != "iteration" or b.get("error_occurred"):
                continue
            name = b.get("run_name", b["name"])
            m = re.match(r"BM_Pipelined(Set|Get)/(\d+)", name)
            if name.startswith("BM_PingRoundTrip") and num(b.get("p50_us")):
                metric, value = "ping_p50_us", b["p50_us"]
            elif m and num(b.get("items_per_second")):
                metric, value = f"{m[1].lower()}_p{m[2]}_rps", b["items_per_second"]
            elif num(b.get("items_per_second")):
                metric, value = "gbench:" + name, b["items_per_second"]
            else:
                continue
            res["runs"].append({"contender": "lockwire", "round": r, "metric": metric,
                                "value": value, "source": "bench_loop",
                                "repetition": b.get("repetition_index", 0)})
            got += 1
            # The redis-benchmark run bench_loop made right before this repetition.
            rb = b.get("rb_p50_us") if metric == "ping_p50_us" else b.get("rb_rps")
            if num(rb) and not metric.startswith("gbench:"):
                res["runs"].append({"contender": "redis-benchmark (run by bench_loop)",
                                    "round": r, "metric": metric, "value": rb,
                                    "repetition": b.get("repetition_index", 0)})
        if rc != 0:
            return self.fail("connection", cmd, rc, stderr)
        if not got:
            return self.fail("connection", cmd, rc, "bench_loop produced no benchmark")
        return None

    # --- suites 3-5: locks ---
    def peer_cmd(self, who, mode, n, variant):
        dur = 0.3 if self.quick else 2.0
        if who == "redis-py":
            base = [sys.executable, os.path.join(PEERS, "redispy_bench.py")]
        elif who in HIREDIS_PEERS:
            base = [self.binary("bench_hiredis_peers") or "bench_hiredis_peers",
                    "--lock", HIREDIS_PEERS[who]]
        else:
            base = ["node", os.path.join(PEERS, "redlock_bench.js")]
        cmd = base + ["--port", str(self.port), "--mode", mode, "--duration", str(dur)]
        if mode == "throughput":
            cmd += ["--users", str(n)]
        if mode == "handoff":
            cmd += ["--waiters", str(n), "--handoffs", "3" if self.quick else "40",
                    "--duration", "2" if self.quick else "4"]
        if variant == "tuned":
            if who in HIREDIS_PEERS:
                # Their default already polls after 0..5 whole ms (redis-plus-plus's
                # RedMutex::lock); tuned: after a uniformly random 0..1 ms.
                cmd += ["--sleep-max-ms", "1", "--sleep-whole", "0"]
            else:  # a latency-minded user's setting: poll every ~10 ms
                cmd += ["--sleep", "0.01"] if who == "redis-py" else ["--retry-delay", "10",
                                                                      "--retry-jitter", "5"]
        return cmd

    def run_peer(self, who, mode, n, variant, r):
        cmd = self.peer_cmd(who, mode, n, variant)
        if who in HIREDIS_PEERS and not self.binary("bench_hiredis_peers"):
            self.failed.append(f"lock {mode} {n} {variant}: {who} (bench_hiredis_peers not built)")
            return {"contender": who, "mode": mode, "n": n, "variant": variant, "round": r,
                    "error": f"bench_hiredis_peers not found in {self.a.bin}", "command": cmd}
        before = self.redis.commandstats() if mode == "serial" else None
        cost0 = self.redis.cost()
        rc, out, err, _ = run(cmd, 120)
        cost1 = self.redis.cost()
        if rc != 0:
            self.failed.append(f"lock {mode} {n} {variant}: {who}")
            return {"contender": who, "mode": mode, "n": n, "variant": variant, "round": r,
                    "error": tail(err), "command": cmd}
        try:
            d = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.failed.append(f"lock {mode} {n} {variant}: {who} (bad JSON)")
            return {"contender": who, "mode": mode, "n": n, "variant": variant, "round": r,
                    "error": "bad JSON: " + tail(out), "command": cmd}
        if before is not None:
            # Server-side view (includes the warm-up and the commands Lua scripts call).
            d["server_commands"] = {k: v for k, v in
                                    stats_delta(before, self.redis.commandstats()).items()
                                    if k not in SETUP_CMDS}
        if num(d.get("ops")) and d["ops"] > 0:
            d.update(cost_delta(cost0, cost1, d["ops"], d.get("commands_by_name")))
            d["server_cost_scope"] = "whole process (warm-up included)"
        d.update({"mode": mode, "n": n, "variant": variant, "round": r, "command": cmd})
        return d

    def run_lockwire(self, exe, r):
        row = 0.2 if self.quick else 2.0
        cmd = [exe, self.url, str(row)]
        before = self.redis.commandstats()
        # LOCKWIRE_BENCH_JSON=1 asks bench_lock for JSON lines (the peers' schema) if it has them.
        rc, out, err, secs = run(cmd, 600, dict(os.environ, LOCKWIRE_BENCH_JSON="1"))
        delta = stats_delta(before, self.redis.commandstats())
        scripts = {k: v for k, v in delta.items() if k.split("|")[0] in SCRIPT_CMDS}
        if rc == 0 and scripts:
            rc, err = 1, f"lockwire's rows ran script commands: {scripts}"
        if rc != 0:
            self.failed.append("lock: lockwire (bench_lock)")
            return [{"contender": "lockwire", "round": r, "error": tail(err), "command": cmd}]
        runs = parse_bench_lock(out)
        if not runs:
            self.failed.append("lock: lockwire (bench_lock output not understood)")
            return [{"contender": "lockwire", "round": r, "error": "unparsed: " + tail(out, 20),
                     "command": cmd}]
        for d in runs:
            d.update({"contender": "lockwire", "round": r, "command": cmd})
        runs[0]["server_commands_whole_run"] = delta
        return runs

    def suite_locks(self):
        exe = self.binary("bench_lock")
        # redis-benchmark: the PING floor (`-c 1 -P 1` p50), interleaved like a contender.
        # lockwire-replicas: the replica rows (attached only meanwhile), see the docstring;
        # lockwire-cluster: the cluster row; lockwire-sentinel: the sentinel row (replica
        # attached meanwhile); lockwire-semantics: the issue #20 rows.
        contenders = ["lockwire", "redis-py", "node-redlock"] + list(HIREDIS_PEERS) + \
            ["redis-benchmark"]
        if not exe and not self.binary("bench_hiredis_peers"):
            # No bench tree at all (not built): skipped like bench_lock. With bench_lock built,
            # a missing bench_hiredis_peers fails its rows instead (run_peer).
            contenders = [c for c in contenders if c not in HIREDIS_PEERS]
            self.skipped.append("locks: hiredis peers (bench_hiredis_peers not built)")
        replicas = {"status": "ok", "runs": [], "min_replicas": 1}
        if not exe:
            self.skipped.append("locks: lockwire (bench_lock not built)")
            replicas = {"status": "missing", "reason": f"bench_lock not found in {self.a.bin}"}
        elif self.replica is None:
            self.skipped.append("locks: lockwire replica rows (no --replica-port)")
            replicas = {"status": "missing", "reason": "no replica (collect.py --replica-port)"}
        else:
            contenders.insert(1, "lockwire-replicas")
            replicas["replica"] = f"127.0.0.1:{self.replica.port}"
        cluster = {"status": "ok", "runs": [], "users": 256,
                   "nodes": [f"127.0.0.1:{c.port}" for c in self.cluster]}
        if not exe:
            cluster = {"status": "missing", "reason": f"bench_lock not found in {self.a.bin}"}
        elif not self.cluster:
            self.skipped.append("locks: lockwire cluster row (no --cluster-ports)")
            cluster = {"status": "missing", "reason": "no cluster (collect.py --cluster-ports)"}
        else:
            contenders.insert(1, "lockwire-cluster")
        # lockwire-sentinel: the sentinel row (needs the sentinels and the replica).
        sentinel = {"status": "ok", "runs": [], "users": [1, 16], "targets": SENTINEL_TARGETS,
                    "sentinels": [f"127.0.0.1:{s.port}" for s in self.sentinels],
                    "master_name": self.sentinel_master}
        if not exe:
            sentinel = {"status": "missing", "reason": f"bench_lock not found in {self.a.bin}"}
        elif not self.sentinels:
            self.skipped.append("locks: lockwire sentinel row (no --sentinel-ports)")
            sentinel = {"status": "missing", "reason": "no sentinels (collect.py --sentinel-ports)"}
        elif self.replica is None:
            self.skipped.append("locks: lockwire sentinel row (no --replica-port)")
            sentinel = {"status": "missing",
                        "reason": "no replica for the sentinels (collect.py --replica-port)"}
        else:
            contenders.insert(1, "lockwire-sentinel")
        # lockwire-breakdown: the hand-off cut into segments (bench_handoff, issue #18).
        breakdown = {"status": "ok", "runs": [], "waiters": BREAKDOWN_WAITERS}
        hexe = self.binary("bench_handoff")
        if not exe:
            breakdown = {"status": "missing", "reason": f"bench_lock not found in {self.a.bin}"}
        else:
            contenders.insert(1, "lockwire-breakdown")
        semantics = {"status": "ok", "runs": [], "cases": SEMANTICS_CASES, "users": 16,
                     "permits": 4}
        if not exe:
            semantics = {"status": "missing", "reason": f"bench_lock not found in {self.a.bin}"}
        else:
            contenders.insert(1, "lockwire-semantics")
        rows = [("serial", 1, "default"), ("throughput", 1, "default"),
                ("throughput", 16, "default"), ("throughput", 256, "default"),
                ("handoff", 8, "default"), ("handoff", 64, "default"),
                ("handoff", 8, "tuned"), ("handoff", 64, "tuned")]
        runs, floor = [], []
        for r in range(self.rounds):
            k = r % len(contenders)
            for who in contenders[k:] + contenders[:k]:
                if who == "lockwire-cluster":
                    log(f"locks round {r + 1}/{self.rounds}: lockwire cluster row (3 primaries "
                        "vs 1)")
                    cluster["runs"] += self.run_cluster_row(exe, r)
                    continue
                if who == "lockwire-sentinel":
                    log(f"locks round {r + 1}/{self.rounds}: lockwire sentinel row (vouch on, "
                        "off, direct; replica attached)")
                    sentinel["runs"] += self.run_sentinel_row(exe, r)
                    continue
                if who == "lockwire-breakdown":
                    log(f"locks round {r + 1}/{self.rounds}: lockwire hand-off breakdown "
                        "(bench_handoff)")
                    breakdown["runs"] += self.run_breakdown(hexe, r)
                    continue
                if who == "lockwire-semantics":
                    log(f"locks round {r + 1}/{self.rounds}: lockwire semantics rows (semaphore, "
                        "upgrade, lock_all)")
                    semantics["runs"] += self.run_semantics_rows(exe, r)
                    continue
                if who == "lockwire-replicas":
                    log(f"locks round {r + 1}/{self.rounds}: lockwire replica rows (replica "
                        "attached)")
                    replicas["runs"] += self.run_replica_rows(exe, r)
                    continue
                if who == "lockwire":
                    if exe:
                        log(f"locks round {r + 1}/{self.rounds}: lockwire (bench_lock)")
                        runs += self.run_lockwire(exe, r)
                    continue
                if who == "redis-benchmark":
                    floor.append(self.ping_floor(r))
                    continue
                for mode, n, variant in peer_rows(who, rows):
                    log(f"locks round {r + 1}/{self.rounds}: {who} {mode} {n} {variant}")
                    runs.append(self.run_peer(who, mode, n, variant, r))
        bad = [x for x in runs + floor + replicas.get("runs", []) + cluster.get("runs", []) +
               sentinel.get("runs", []) + semantics.get("runs", []) +
               breakdown.get("runs", []) if "error" in x]
        if any("error" in x for x in semantics.get("runs", [])):
            semantics["status"] = "failed"
        if any("error" in x for x in breakdown.get("runs", [])):
            breakdown["status"] = "failed"
        if any("error" in x for x in replicas.get("runs", [])):
            replicas["status"] = "failed"
        if any("error" in x for x in cluster.get("runs", [])):
            cluster["status"] = "failed"
        if any("error" in x for x in sentinel.get("runs", [])):
            sentinel["status"] = "failed"
        # Every peer's rows, for report.py's check that each round produced all of them.
        peers = {who: [{"mode": m, "n": n, "variant": v} for m, n, v in peer_rows(who, rows)]
                 for who in contenders if who in PEER_NAMES}
        return {"status": "failed" if bad else "ok", "runs": runs, "ping_floor": floor,
                "rows": [{"mode": m, "n": n, "variant": v} for m, n, v in rows],
                "peer_rows": peers, "replicas": replicas, "cluster": cluster,
                "sentinel": sentinel,
                "semantics": semantics, "breakdown": breakdown,
                "scripting": self.lw_user}

    def run_cluster_row(self, exe, r):
        """One round of the cluster row: bench_lock with LOCKWIRE_BENCH_CLUSTER (the cluster
        and the single primary alternated inside one run). Checks that no node ran a script
        for it, and records each node's share of the lock commands."""
        row = 0.2 if self.quick else 2.0
        cmd = [exe, self.url, str(row)]
        env = dict(os.environ, LOCKWIRE_BENCH_JSON="1", LOCKWIRE_BENCH_CLUSTER=self.cluster_url)
        before = [c.cost() for c in self.cluster]
        rc, out, err, _ = run(cmd, 120, env)
        after = [c.cost() for c in self.cluster]
        share = {}
        for c, b, a in zip(self.cluster, before, after):
            d = {k: v for k, v in stats_delta(b[1], a[1]).items()
                 if k.split("|")[0] not in SETUP_CMDS}
            if rc == 0 and any(k.split("|")[0] in SCRIPT_CMDS for k in d):
                rc, err = 1, f"lockwire's cluster row ran script commands on {c.port}: {d}"
            share[f"127.0.0.1:{c.port}"] = sum(d.values())
        runs = [d for d in parse_bench_lock(out) if d.get("mode") == "cluster"] if rc == 0 else []
        if len(runs) != 3:  # single, cluster, cluster-novouch
            self.failed.append("locks: lockwire cluster row (bench_lock)")
            return [{"contender": "lockwire", "round": r, "command": cmd,
                     "error": tail(err) if rc != 0 else "unparsed: " + tail(out, 20)}]
        for d in runs:
            d.update({"contender": "lockwire", "round": r, "command": cmd,
                      "env": {"LOCKWIRE_BENCH_CLUSTER": self.cluster_url}})
            if d["target"] == "cluster":
                d["node_commands"] = share  # the three targets' commands together
        return runs

    def run_scriptless(self, cmd, timeout, env, what):
        """Runs one of lockwire's bench binaries (JSON lines on) against the primary; a script
        command in the server's commandstats delta fails it. Returns (rc, stdout, stderr)."""
        before = self.redis.commandstats()
        rc, out, err, _ = run(cmd, timeout, dict(os.environ, LOCKWIRE_BENCH_JSON="1", **env))
        delta = stats_delta(before, self.redis.commandstats())
        scripts = {k: v for k, v in delta.items() if k.split("|")[0] in SCRIPT_CMDS}
        if rc == 0 and scripts:
            rc, err = 1, f"lockwire's {what} ran script commands: {scripts}"
        return rc, out, err

    def run_breakdown(self, exe, r):
        """One round of the hand-off breakdown: bench_handoff (release → push at the winner →
        its attempt → it holds, for 1, 8 and 64 waiters with a connection each). Built with
        bench_lock, so a missing binary fails the round; checks that it ran no script."""
        if not exe:
            self.failed.append("locks: lockwire hand-off breakdown (bench_handoff not built)")
            return [{"contender": "lockwire", "round": r, "error": "bench_handoff not built"}]
        cmd = [exe, self.url, str(30 if self.quick else 300)]
        rc, out, err = self.run_scriptless(cmd, 180, {}, "hand-off breakdown")
        runs = [d for d in parse_bench_lock(out) if d.get("mode") == "handoff-breakdown"] \
            if rc == 0 else []
        missing = [w for w in BREAKDOWN_WAITERS if not any(d.get("waiters") == w for d in runs)]
        return self.tag_runs(runs, rc, err, out, cmd, r, missing,
                             "hand-off breakdown (bench_handoff)", {})

    def tag_runs(self, runs, rc, err, out, cmd, r, missing, what, env):
        """A lockwire run's rows tagged with contender, round and command; or, when it failed
        or left rows out, one error row (and the run listed as failed)."""
        if rc != 0 or missing:
            self.failed.append(f"locks: lockwire {what}")
            return [{"contender": "lockwire", "round": r, "command": cmd,
                     "error": tail(err) if rc != 0 else
                     f"missing: {missing}; output: " + tail(out, 20)}]
        for d in runs:
            d.update({"contender": "lockwire", "round": r, "command": cmd})
            if env:
                d["env"] = env
        return runs

    def run_semantics_rows(self, exe, r):
        """One round of the lock-semantics rows: bench_lock with LOCKWIRE_BENCH_SEMANTICS=1
        (every case and its baselines alternated inside one run). Checks that it ran no script
        and produced every case of SEMANTICS_CASES."""
        row = 0.2 if self.quick else 2.0
        cmd = [exe, self.url, str(row)]
        rc, out, err = self.run_scriptless(cmd, 120, {"LOCKWIRE_BENCH_SEMANTICS": "1"},
                                           "semantics rows")
        runs = [d for d in parse_bench_lock(out) if d.get("mode") == "semantics"] \
            if rc == 0 else []
        missing = [c for c in SEMANTICS_CASES if not any(d.get("case") == c for d in runs)]
        return self.tag_runs(runs, rc, err, out, cmd, r, missing, "semantics rows (bench_lock)",
                             {"LOCKWIRE_BENCH_SEMANTICS": "1"})

    def ping_floor(self, r):
        n = 2000 if self.quick else 20000
        log(f"locks round {r + 1}/{self.rounds}: redis-benchmark -c 1 -P 1 -n {n} -t ping")
        try:
            ping = self.redis_benchmark_ping(n)
            return {"round": r, "requests": n, "p50_us": ping["p50_latency_ms"] * 1e3,
                    "avg_us": ping["avg_latency_ms"] * 1e3, "rps": ping["rps"],
                    "command": f"redis-benchmark -c 1 -P 1 -n {n} -t ping"}
        except (RuntimeError, KeyError, IndexError, ValueError) as e:
            self.failed.append("locks: redis-benchmark PING floor")
            return {"round": r, "error": str(e)}

    def replica_link(self, attach, timeout=30):
        """Attaches the replica (REPLICAOF this primary) and waits until the primary lists it
        online, or detaches it (REPLICAOF NO ONE) and waits until the primary lists none.
        Raises RuntimeError when that does not happen within `timeout` seconds."""
        if attach:
            self.replica.call("REPLICAOF", "127.0.0.1", str(self.port))
        else:
            self.replica.call("REPLICAOF", "NO", "ONE")
            # The sentinels would otherwise re-attach it (+convert-to-slave) within ~10 s.
            for s in self.sentinels:
                s.call("SENTINEL", "RESET", self.sentinel_master)
            # Their reconnects and rediscovery (a few commands on the primary) before the next
            # row, not in it; and a check that they forgot the replica.
            if self.sentinels:
                self.sentinels_ready(replicas=0)
        deadline = time.monotonic() + timeout
        while True:
            info = self.redis.info("replication")
            n = int(info.get("connected_slaves", "0"))
            if (n == 1 and "state=online" in info.get("slave0", "")) if attach else n == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica {'attach' if attach else 'detach'}: after "
                                   f"{timeout} s the primary lists {n} replica(s): "
                                   f"{info.get('slave0', '')}")
            time.sleep(0.05)

    def sentinel_master_view(self, s):
        """SENTINEL MASTER of this run's master name, as {field: value}."""
        reply = s.call("SENTINEL", "MASTER", self.sentinel_master)
        return dict(zip(reply[::2], reply[1::2]))

    def sentinels_ready(self, replicas=1, timeout=30):
        """Waits until every sentinel names the --port primary, lists `replicas` replicas and
        the other sentinels, and sees the primary up. Raises RuntimeError after `timeout`
        seconds."""
        deadline = time.monotonic() + timeout
        while True:
            views = [self.sentinel_master_view(s) for s in self.sentinels]
            if all(v.get("port") == str(self.port) and v.get("flags") == "master" and
                   int(v.get("num-slaves", "-1")) == replicas and
                   int(v.get("num-other-sentinels", "0")) == len(self.sentinels) - 1
                   for v in views):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"after {timeout} s the sentinels report: " + "; ".join(
                        f"{s.port}: port={v.get('port')} flags={v.get('flags')} "
                        f"num-slaves={v.get('num-slaves')} "
                        f"num-other-sentinels={v.get('num-other-sentinels')}"
                        for s, v in zip(self.sentinels, views)))
            time.sleep(0.1)

    def run_sentinel_row(self, exe, r):
        """One round of the sentinel row: attach the replica, wait until the sentinels see it,
        bench_lock with LOCKWIRE_BENCH_SENTINEL (vouch on, vouch off and direct alternated
        inside one run), check that no failover happened, detach (and reset the sentinels)."""
        row = 0.2 if self.quick else 2.0
        cmd = [exe, self.url, str(row)]
        env = {"LOCKWIRE_BENCH_SENTINEL": self.sentinel_url}
        try:
            self.replica_link(True)
            self.sentinels_ready()
            rc, out, err = self.run_scriptless(cmd, 180, env, "sentinel row")
            # A failover would have moved the master's address; down flags mean one could.
            moved = [f"{s.port}: {v.get('ip')}:{v.get('port')} {v.get('flags')}"
                     for s in self.sentinels for v in [self.sentinel_master_view(s)]
                     if v.get("port") != str(self.port) or
                     any(f in v.get("flags", "") for f in ("s_down", "o_down", "failover"))]
            if rc == 0 and moved:
                rc, err = 1, f"the sentinels no longer name the primary as up: {moved}"
        except RuntimeError as e:
            rc, out, err = 1, "", str(e)
        try:
            self.replica_link(False)
        except RuntimeError as e:
            rc, err = rc or 1, f"{err}\n{e}"
        runs = [d for d in parse_bench_lock(out) if d.get("mode") == "sentinel"] \
            if rc == 0 else []
        want = [(t, n) for t in SENTINEL_TARGETS for n in (1, 16)]
        missing = [w for w in want if not any((d.get("target"), d.get("users")) == w
                                              for d in runs)]
        return self.tag_runs(runs, rc, err, out, cmd, r, missing, "sentinel row (bench_lock)",
                             {"LOCKWIRE_BENCH_SENTINEL": self.sentinel_url})

    def run_replica_rows(self, exe, r):
        """One round of the replica rows: attach, bench_lock with LOCKWIRE_BENCH_MIN_REPLICAS=1
        (min_replicas=1 and =0 alternated inside one run), detach."""
        row = 0.2 if self.quick else 2.0
        cmd = [exe, self.url, str(row)]
        env = dict(os.environ, LOCKWIRE_BENCH_JSON="1", LOCKWIRE_BENCH_MIN_REPLICAS="1")
        try:
            self.replica_link(True)
            rc, out, err, _ = run(cmd, 120, env)
        except RuntimeError as e:
            rc, out, err = 1, "", str(e)
        try:
            self.replica_link(False)
        except RuntimeError as e:
            rc, err = rc or 1, f"{err}\n{e}"
        runs = parse_bench_lock(out) if rc == 0 else []
        if not runs:
            self.failed.append("locks: lockwire replica rows (bench_lock)")
            return [{"contender": "lockwire", "round": r, "command": cmd,
                     "error": tail(err) if rc != 0 else "unparsed: " + tail(out, 20)}]
        for d in runs:
            d.update({"contender": "lockwire", "round": r, "command": cmd,
                      "env": {"LOCKWIRE_BENCH_MIN_REPLICAS": "1"}})
        return runs

    # --- suite 6: simulator ---
    def suite_sim(self):
        res = {"status": "ok", "runs": []}
        exe = self.binary("bench_sim")
        if exe:
            res.update(self.sim_commands(exe))
        else:
            self.skipped.append("sim: bench_sim not built")
            res["bench_sim"] = {"status": "missing", "reason": f"bench_sim not found in {self.a.bin}"}
        sim = self.binary("lockwire-sim")
        if sim:
            res["explore"] = self.sim_explore(sim)
        else:
            self.skipped.append("sim: lockwire-sim not built (exploration seeds/s)")
            res["explore"] = {"status": "missing",
                              "reason": f"lockwire-sim not found in {self.a.bin}"}
        parts = [res.get("bench_sim", {}).get("status", "ok" if exe else "missing"),
                 res["explore"]["status"]]
        if "failed" in parts:
            res["status"] = "failed"
            self.failed.append("sim")
        elif parts == ["missing", "missing"]:
            res["status"] = "missing"
            res["reason"] = f"neither bench_sim nor lockwire-sim found in {self.a.bin}"
        return res

    def sim_commands(self, exe):
        """bench_sim: simulated commands/s through the full stack (Google Benchmark)."""
        out = os.path.join(self.a.tmp, "bench_sim.json")
        cmd = [exe, f"--benchmark_out={out}", "--benchmark_out_format=json",
               f"--benchmark_repetitions={1 if self.quick else self.rounds}",
               f"--benchmark_min_time={0.01 if self.quick else 0.2}"]
        log("sim: bench_sim")
        rc, stdout, stderr, secs = run(cmd, 600)
        try:
            with open(out) as f:
                gb = json.load(f)
        except (OSError, ValueError) as e:
            return {"bench_sim": self.sim_fail(cmd, rc, stderr or str(e))}
        if rc != 0:
            return {"bench_sim": self.sim_fail(cmd, rc, stderr)}
        runs = [{"name": b["name"], "run_name": b.get("run_name"),
                 "items_per_sec": b.get("items_per_second"), "real_ns": b.get("real_time"),
                 "counters": {k: v for k, v in b.items() if isinstance(v, (int, float))}}
                for b in gb.get("benchmarks", []) if b.get("run_type") == "iteration"]
        return {"command": cmd, "seconds": secs, "runs": runs, "stdout_tail": tail(stdout, 20),
                "bench_sim": {"status": "ok" if runs else "failed"}}

    def sim_fail(self, cmd, rc, err):
        return {"status": "failed", "command": cmd, "rc": rc, "error": tail(err or "", 15)}

    def sim_explore(self, exe):
        """`lockwire-sim explore --seeds N`, once per round: wall and CPU time -> seeds/s.
        Its default nondeterminism re-check (every 50th seed run twice) is included."""
        seeds = 100 if self.quick else 2000
        cmd = [exe, "explore", "--seeds", str(seeds)]
        runs = []
        for r in range(self.rounds):
            log(f"sim round {r + 1}/{self.rounds}: {' '.join(cmd[1:])}")
            rc, out, err, secs, cpu = run_cpu(cmd, 120 if self.quick else 600)
            m = re.search(r"explore: (\d+) seeds, (\d+) violation\(s\), (\d+) nondeterministic, "
                          r"[\d.]+ s, ([\d.]+) seeds/s", out or "")
            if rc is None or not m:
                return {"status": "failed", "command": cmd, "rc": rc, "runs": runs,
                        "error": tail((err or "") + "\n" + (out or ""), 15)}
            run_d = {"round": r, "seeds": int(m[1]), "violations": int(m[2]),
                     "nondeterministic": int(m[3]), "wall_s": secs, "cpu_s": cpu,
                     "seeds_per_sec": int(m[1]) / secs if secs > 0 else None,
                     "seeds_per_cpu_sec": int(m[1]) / cpu if cpu > 0 else None,
                     "reported_seeds_per_sec": float(m[4])}
            runs.append(run_d)
            if rc != 0:  # a violation or nondeterminism: a finding, reported as a failure
                return {"status": "failed", "command": cmd, "rc": rc, "runs": runs,
                        "error": tail(out, 15)}
        return {"status": "ok", "command": cmd, "runs": runs}

    def missing(self, suite, binary):
        self.skipped.append(f"{suite}: {binary} not built")
        return {"status": "missing", "reason": f"{binary} not found in {self.a.bin}"}

    def fail(self, suite, cmd, rc, err):
        self.failed.append(suite)
        return {"status": "failed", "command": cmd, "rc": rc, "error": tail(err or "", 15)}


# bench_lock prints a text table (no JSON yet); each row's first number is lockwire's value.
LOCK_ROWS = [
    (r"^serial pair: acquire\+release \(us/pair\)\s+([\d.]+) us\s+([\d.]+) us",
     lambda m: [{"mode": "serial", "n": 1, "us_per_op": float(m[1]), "ping_rtt_us": float(m[2])}]),
    (r"^serial pair: requests sent per pair\s+([\d.]+)",
     lambda m: [{"mode": "serial", "n": 1, "requests_per_pair": float(m[1])}]),
    (r"^(\d+) users, one connection \(pairs/s\)\s+([\d.]+)\s+([\d.]+) /s",
     lambda m: [{"mode": "throughput", "n": int(m[1]), "ops_per_sec": float(m[2]),
                 "ping_floor_pairs_per_sec": float(m[3])}]),
    (r"^(\d+) users: client CPU per pair \(us\)\s+([\d.]+)",
     lambda m: [{"mode": "throughput", "n": int(m[1]), "cpu_us_per_op": float(m[2])}]),
    (r"^contended hand-off: release -> next holds\s+([\d.]+) us\s+([\d.]+) us",
     lambda m: [{"mode": "handoff", "n": 1, "latency_us": {"mean": float(m[1])},
                 "ping_rtt_us": float(m[2])}]),
]


def parse_bench_lock(text):
    """bench_lock's rows: JSON lines in the peers' schema when it prints them, else its table."""
    json_rows = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("mode") in ("serial", "throughput", "handoff", "cluster", "sentinel",
                                 "semantics", "handoff-breakdown"):
                d.setdefault("n", d.get("waiters") if d["mode"] == "handoff" else d.get("users", 1))
                json_rows.append(d)
    if json_rows:
        for d in json_rows:
            if d["mode"] == "serial" and "us_per_op" not in d and d.get("ops"):
                d["us_per_op"] = 1e6 * d["seconds"] / d["ops"]
        return json_rows
    rows = {}
    for line in text.splitlines():
        for pat, make in LOCK_ROWS:
            m = re.match(pat, line.strip())
            if m:
                for d in make(m):
                    key = (d["mode"], d["n"])
                    rows.setdefault(key, {"mode": d["mode"], "n": d["n"]}).update(d)
    out = list(rows.values())
    for d in out:
        if d["mode"] == "serial" and "us_per_op" in d:
            d["ops_per_sec"] = 1e6 / d["us_per_op"]
            d["latency_us"] = {"mean": d["us_per_op"]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--replica-port", type=int, default=None,
                    help="a replica of --port (attached only for the replica rows)")
    ap.add_argument("--cluster-ports", default=None,
                    help="comma-separated primaries of a Redis Cluster (the cluster row)")
    ap.add_argument("--sentinel-ports", default=None,
                    help="comma-separated sentinels monitoring --port (the sentinel row)")
    ap.add_argument("--sentinel-master", default="lockwire-bench",
                    help="the master name the sentinels know --port by")
    ap.add_argument("--bin", required=True, help="folder holding bench_* binaries")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--command", default=None, help="the command line to record")
    ap.add_argument("--suites", default="resp,connection,locks,sim")
    a = ap.parse_args()
    a.rounds = a.rounds or (1 if a.quick else 5)
    a.tmp = os.path.join(os.path.dirname(os.path.abspath(a.out)), ".collect.tmp")
    os.makedirs(a.tmp, exist_ok=True)
    c = Collector(a)
    c.redis.call("PING")
    if c.replica is not None:
        c.replica_link(False)  # every other row runs without a replica (see the docstring)
    c.lw_user = c.setup_lockwire_user()
    started = datetime.datetime.now(datetime.timezone.utc)
    result = {"schema": SCHEMA, "quick": a.quick, "rounds": a.rounds,
              "command": a.command or " ".join(sys.argv),
              "started": started.isoformat(timespec="seconds"),
              "machine": machine_info(), "versions": versions(a.bin),
              "server": {"address": f"127.0.0.1:{a.port}",
                         "persistence": "off (save '', appendonly no)",
                         "replica": (f"127.0.0.1:{a.replica_port}, attached only for the "
                                     "replica rows" + (" and the sentinel row"
                                                       if a.sentinel_ports else "")
                                     if a.replica_port else None),
                         "cluster": ([f"127.0.0.1:{p}" for p in a.cluster_ports.split(",")]
                                     if a.cluster_ports else None),
                         "sentinels": ([f"127.0.0.1:{p}" for p in a.sentinel_ports.split(",")]
                                       if a.sentinel_ports else None),
                         "scripting": f"enabled (for the peers); lockwire's rows connect as "
                                      f"ACL user {LW_USER} without @scripting"},
              "loadavg_start": os.getloadavg(), "suites_requested": a.suites.split(","),
              "suites": {}}
    for name in a.suites.split(","):
        fn = getattr(c, f"suite_{name}", None)
        if fn is None:
            sys.exit(f"unknown suite {name}")
        t0 = time.monotonic()
        log(f"suite {name}")
        result["suites"][name] = fn()
        result["suites"][name]["wall_seconds"] = round(time.monotonic() - t0, 1)
    result["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    result["loadavg_end"] = os.getloadavg()
    result["skipped"] = c.skipped
    result["failed"] = c.failed
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    shutil.rmtree(a.tmp, ignore_errors=True)
    for s in c.skipped:
        log(f"skipped: {s}")
    for s in c.failed:
        log(f"FAILED: {s}")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
