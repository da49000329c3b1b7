#!/usr/bin/python3
"""Checks a bench/run.sh result JSON and turns it into a Markdown report and PNG charts.

  report.py RESULT.json [--check-only] [--no-charts]

Writes RESULT.md and RESULT-{lock-serial,lock-handoff,lock-throughput,resp}.png beside the JSON.
Exit status 1 when the JSON is not well-formed (see check()); the report is still written.
Figures are medians over rounds with the spread (min..max); ratios compare medians of the same
run. Charts need python3-matplotlib; without it the report says so and the charts are skipped.
"""
import argparse
import json
import os
import statistics
import sys

SCHEMA = "lockwire-bench/1"
# hiredis-*: bench_hiredis_peers (C++ on hiredis): the canonical Lua lock, the same with a fencing
# token from its acquire script (serial and throughput rows only), and a Lua-free WATCH/MULTI lock
# after redis-plus-plus's RedMutexTx.
HIREDIS_PEERS = ["hiredis-lua", "hiredis-lua-fenced", "hiredis-watch"]
PEERS = ["redis-py", "node-redlock"] + HIREDIS_PEERS
CONTENDERS = ["lockwire"] + PEERS
STATUSES = {"ok", "missing", "failed"}
# bench_resp's payload and chunk names, in the codec issue's order.
PAYLOADS = ["ok", "blob3", "int", "array100x10", "map10dbl", "blob64k", "pipeline1000", "push"]
CHUNKS = ["16KiB", "1B"]
CONN_METRICS = {"ping_p50_us": "PING round trip p50 (µs), -c 1 -P 1",
                "get_p16_rps": "GET/s, one connection, 16 in flight",
                "set_p16_rps": "SET/s, one connection, 16 in flight",
                "get_p128_rps": "GET/s, one connection, 128 in flight",
                "set_p128_rps": "SET/s, one connection, 128 in flight"}


def order(known, x):
    return known.index(x) if x in known else len(known)


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def by_round(runs, match, key, sub=None):
    """{round: value} of the runs whose fields equal those of `match`: run[key], or
    run[key][sub]; non-numbers are left out."""
    out = {}
    for r in runs:
        if all(r.get(k) == v for k, v in match.items()):
            v = r.get(key)
            v = (v or {}).get(sub) if sub else v
            if num(v):
                out[r["round"]] = v
    return out


def halves_errors(r, who):
    """A serial run's two halves (acquire called → granted, release called → replied), which
    the serial table breaks the pair into: lockwire and the hiredis peers report them."""
    return [f"{who}: no {k}.p50" for k in ("acquire_us", "release_us")
            if not num(r.get(k, {}).get("p50"))]


def check(d):
    """Returns a list of problems; empty when the file is well-formed."""
    errs = []
    if not isinstance(d, dict):
        return ["top level is not an object"]
    if d.get("schema") != SCHEMA:
        errs.append(f"schema is {d.get('schema')!r}, want {SCHEMA!r}")
    for k in ("command", "started", "finished", "machine", "versions", "suites", "rounds"):
        if k not in d:
            errs.append(f"missing key {k}")
    suites = d.get("suites", {})
    requested = d.get("suites_requested", ["resp", "connection", "locks", "sim"])
    if not requested:
        errs.append("no suite requested")
    for name in requested:
        s = suites.get(name)
        if not isinstance(s, dict):
            errs.append(f"suite {name} absent")
            continue
        if s.get("status") not in STATUSES:
            errs.append(f"suite {name}: bad status {s.get('status')!r}")
        if s.get("status") == "ok" and not s.get("runs") and not (
                name == "sim" and s.get("explore", {}).get("runs")):
            errs.append(f"suite {name}: ok but no runs")
    for r in suites.get("resp", {}).get("runs", []):
        if not (num(r.get("items_per_sec")) and r["items_per_sec"] > 0):
            errs.append(f"resp run {r.get('payload')}/{r.get('chunk')}/{r.get('contender')}: "
                        "no items_per_sec")
    sim = suites.get("sim", {})
    if "sim" in requested and sim.get("status") == "ok":
        for r in sim.get("runs", []):
            if not (num(r.get("items_per_sec")) and r["items_per_sec"] > 0):
                errs.append(f"sim run {r.get('name')}: no items_per_sec")
        e = sim.get("explore")
        if not isinstance(e, dict) or e.get("status") not in STATUSES:
            errs.append("sim: no exploration result (explore.status)")
        elif e["status"] == "ok":
            if not e.get("runs"):
                errs.append("sim: exploration ok but no runs")
            for r in e.get("runs", []):
                for k in ("seeds", "wall_s", "cpu_s", "seeds_per_sec", "seeds_per_cpu_sec",
                          "violations", "nondeterministic"):
                    if not num(r.get(k)):
                        errs.append(f"sim exploration round {r.get('round')}: {k} not a number")
                if num(r.get("seeds")) and r["seeds"] <= 0:
                    errs.append(f"sim exploration round {r.get('round')}: no seeds")
    conn = suites.get("connection", {})
    for r in conn.get("runs", []):
        if not num(r.get("value")):
            errs.append(f"connection run {r.get('contender')} {r.get('metric')}: no value")
    if "connection" in requested and conn.get("status") == "ok":
        # Every metric on both sides (bench_loop pairs each repetition with redis-benchmark).
        sides = {"lockwire": lambda c: c == "lockwire",
                 "redis-benchmark": lambda c: str(c).startswith("redis-benchmark")}
        has_lw = any(r.get("contender") == "lockwire" for r in conn.get("runs", []))
        for m in CONN_METRICS:
            for side, is_side in sides.items():
                if side == "lockwire" and not has_lw:
                    continue  # bench_loop not built: listed as skipped
                if not any(is_side(r.get("contender")) and r.get("metric") == m and
                           num(r.get("value")) for r in conn.get("runs", [])):
                    errs.append(f"connection: no {side} figure for {m}")
    for r in suites.get("locks", {}).get("runs", []):
        who = f"lock run {r.get('contender')} {r.get('mode')} {r.get('n')} round {r.get('round')}"
        if "error" in r:
            errs.append(f"{who}: {r['error'].splitlines()[-1] if r['error'] else 'error'}")
            continue
        if r.get("contender") not in CONTENDERS or r.get("mode") not in (
                "serial", "throughput", "handoff"):
            errs.append(f"{who}: unknown contender or mode")
        if r.get("contender") in PEERS:
            for k in ("ops", "seconds", "ops_per_sec", "cpu_us_per_op") + (
                    ("requests_per_op", "connections") if r["contender"] in HIREDIS_PEERS
                    else ()):
                if not num(r.get(k)):
                    errs.append(f"{who}: {k} not a number")
            if num(r.get("ops")) and r["ops"] <= 0:
                errs.append(f"{who}: no pairs completed")
            lat = r.get("latency_us", {})
            if not (num(lat.get("p50")) and len(r.get("quantiles_us", [])) == 101):
                errs.append(f"{who}: no latency distribution")
            if r["contender"] in HIREDIS_PEERS and r.get("mode") == "serial":
                errs += halves_errors(r, who)
        else:  # lockwire (bench_lock)
            want = {"serial": ("ops_per_sec", "us_per_op", "cpu_us_per_op", "requests_per_pair",
                               "commands_per_pair", "ping_rtt_us", "ping_rtt_p50_us"),
                    "throughput": ("ops_per_sec", "cpu_us_per_op"),
                    "handoff": ("ops", "cpu_us_per_op", "requests_per_op")}.get(r.get("mode"),
                                                                               ())
            for k in want:
                if not num(r.get(k)):
                    errs.append(f"{who}: {k} not a number")
            if r.get("mode") in ("serial", "handoff"):
                lat = r.get("latency_us", {})
                if not (num(lat.get("p50")) and num(lat.get("p99")) and
                        len(r.get("quantiles_us", [])) == 101):
                    errs.append(f"{who}: no latency distribution (p50, p99, quantiles_us)")
            if r.get("mode") == "serial" and r.get("variant", "default") == "default":
                errs += halves_errors(r, who)
                errs += [f"{who}: {k} not a number" for k in
                         ("ping_timed_wait_p50_us", "ping_untimed_wait_p50_us")
                         if not num(r.get(k))]
    locks = suites.get("locks", {})
    # Every peer the run listed (peer_rows, absent in older results) has every one of its rows
    # in every round: a contender that silently produced nothing must not pass.
    if "locks" in requested and isinstance(locks.get("peer_rows"), dict):
        runs = locks.get("runs", [])
        for who, want in locks["peer_rows"].items():
            for rnd in range(d.get("rounds") or 0):
                for w in want:
                    if not any(x.get("contender") == who and x.get("round") == rnd and
                               x.get("mode") == w.get("mode") and x.get("n") == w.get("n") and
                               x.get("variant", "default") == w.get("variant", "default")
                               for x in runs):
                        errs.append(f"lock run {who} {w.get('mode')} {w.get('n')} "
                                    f"{w.get('variant')} round {rnd}: missing")
    if "locks" in requested and locks.get("status") in ("ok", "failed"):
        floor = locks.get("ping_floor")
        if not isinstance(floor, list) or not floor:
            errs.append("locks: no redis-benchmark PING floor (ping_floor)")
        for f in floor or []:
            if "error" in f:
                errs.append(f"locks ping_floor round {f.get('round')}: {f['error']}")
            elif not (num(f.get("p50_us")) and f["p50_us"] > 0):
                errs.append(f"locks ping_floor round {f.get('round')}: p50_us not a number")
    errs += check_replicas(locks.get("replicas") if "locks" in requested else None)
    if "locks" in requested:
        errs += check_cluster(locks.get("cluster"), d.get("server", {}).get("cluster"))
        errs += check_sentinel(locks.get("sentinel"), d.get("server", {}).get("sentinels"))
        lw_ran = any(r.get("contender") == "lockwire" for r in locks.get("runs", []))
        errs += check_semantics(locks.get("semantics"), d.get("rounds") or 0, lw_ran)
        errs += check_breakdown(locks.get("breakdown"), d.get("rounds") or 0, lw_ran)
    # Server cost per pair (results from before it have no "scripting" key: not required).
    if "locks" in requested and "scripting" in locks:
        for r in locks.get("runs", []):
            if "error" in r or r.get("mode") not in ("serial", "throughput", "handoff"):
                continue
            for k in ("server_cpu_us_per_op", "server_cmd_usec_per_op"):
                if not num(r.get(k)):
                    errs.append(f"lock run {r.get('contender')} {r.get('mode')} {r.get('n')} "
                                f"round {r.get('round')}: {k} not a number")
    # Every round of bench_lock must have yielded every row.
    lw = [r for r in suites.get("locks", {}).get("runs", [])
          if r.get("contender") == "lockwire" and "error" not in r]
    for rnd in sorted({r.get("round") for r in lw}):
        got = {(r.get("mode"), r.get("n")) for r in lw if r.get("round") == rnd}
        for want in (("serial", 1), ("throughput", 1), ("throughput", 16), ("throughput", 256)):
            if want not in got:
                errs.append(f"lockwire round {rnd}: bench_lock row {want[0]} {want[1]} missing")
        if not any(m == "handoff" for m, _ in got):
            errs.append(f"lockwire round {rnd}: bench_lock hand-off row missing")
    return errs


REPLICA_ROWS = (("serial", 1), ("throughput", 16))
CLUSTER_KEYS = ("ops_per_sec", "cpu_us_per_op", "requests_per_pair", "redirects",
                "cluster_retries", "server_cpu_us_per_op", "server_cmd_usec_per_op")


def check_row_runs(label, row, started, what):
    """What the optional rows of the locks suite (cluster, sentinel) check alike. Absent in older
    results: not an error, unless the run started `what` (then the row must have run); a known
    status; each failed round named. Returns (errors, the runs without an error), or (errors,
    None) when nothing further can be checked."""
    if row is None:
        return ([f"locks {label}: the run started {what} but has no {label} row"]
                if started else []), None
    if not isinstance(row, dict) or row.get("status") not in STATUSES:
        return [f"locks {label}: bad status"], None
    if started and row["status"] != "ok":
        return [f"locks {label}: {row['status']} although the run started {what}"], None
    errs = []
    runs = row.get("runs", [])
    for r in runs:
        if "error" in r:
            errs.append(f"locks {label} round {r.get('round')}: "
                        f"{r['error'].splitlines()[-1] if r['error'] else 'error'}")
    if row["status"] == "ok" and not runs:
        errs.append(f"locks {label}: ok but no runs")
    return errs, [r for r in runs if "error" not in r]


def check_cluster(cl, nodes):
    """suites.locks.cluster. Absent in older results: not an error, unless the run started a
    cluster (server.cluster), then the row must have run."""
    errs, good = check_row_runs("cluster", cl, nodes, "a cluster")
    if good is None:
        return errs
    # cluster-novouch: since issue #28's cost row; older results lack it.
    targets = ("single", "cluster") + (
        ("cluster-novouch",) if any(r.get("target") == "cluster-novouch" for r in good) else ())
    for rnd in sorted({r.get("round") for r in good}):
        for target in targets:
            got = [r for r in good if r.get("round") == rnd and r.get("target") == target]
            if not got:
                errs.append(f"locks cluster round {rnd}: {target} missing")
                continue
            for k in CLUSTER_KEYS:
                if not num(got[0].get(k)):
                    errs.append(f"locks cluster round {rnd} {target}: {k} not a number")
            if num(got[0].get("ops")) and got[0]["ops"] <= 0:
                errs.append(f"locks cluster round {rnd} {target}: no pairs completed")
    return errs


SENTINEL_TARGETS = ("direct", "sentinel", "sentinel-novouch")
SENTINEL_KEYS = ("ops_per_sec", "us_per_op", "cpu_us_per_op", "requests_per_pair",
                 "server_cpu_us_per_op", "server_cmd_usec_per_op")


def check_sentinel(sn, sentinels):
    """suites.locks.sentinel (issue #28). Absent in older results: not an error, unless the run
    started sentinels (server.sentinels), then the row must have run: every target with 1 and
    16 users in every round that has it, the serial rows with their latency distribution."""
    errs, good = check_row_runs("sentinel", sn, sentinels, "sentinels")
    if good is None:
        return errs
    for rnd in sorted({r.get("round") for r in good}):
        for target in SENTINEL_TARGETS:
            for users in (1, 16):
                who = f"locks sentinel round {rnd}: {target} {users} user(s)"
                got = [r for r in good if r.get("round") == rnd and
                       r.get("target") == target and r.get("users") == users]
                if not got:
                    errs.append(f"{who} missing")
                    continue
                for k in SENTINEL_KEYS:
                    if not num(got[0].get(k)):
                        errs.append(f"{who}: {k} not a number")
                if num(got[0].get("ops")) and got[0]["ops"] <= 0:
                    errs.append(f"{who}: no pairs completed")
                if users == 1 and not (num(got[0].get("latency_us", {}).get("p50")) and
                                       len(got[0].get("quantiles_us", [])) == 101):
                    errs.append(f"{who}: no latency distribution")
    return errs


# bench_lock's lock-semantics cases (LOCKWIRE_BENCH_SEMANTICS=1; collect.py SEMANTICS_CASES):
# (case, shape, label). Throughput cases: 16 users on one connection; serial: 1 user.
SEMANTICS = [
    ("exclusive-distinct", "throughput", "(a) exclusive, each user on its own resource"),
    ("exclusive-one-resource", "throughput", "(b) exclusive, all users on one resource"),
    ("semaphore", "throughput", "semaphore of 4 permits, all users on one resource"),
    ("exclusive", "serial", "exclusive acquire + release (the pair)"),
    ("upgrade", "serial", "shared acquire + upgrade + release"),
    ("lock-all-1", "serial", "lock_all of 1 resource + release(set)"),
    ("lock-all-2", "serial", "lock_all of 2 resources + release(set)"),
    ("lock-all-4", "serial", "lock_all of 4 resources + release(set)"),
    ("handoff-default", "serial", "hand-off, default order: release → the waiter holds"),
    ("handoff-fair", "serial", "hand-off, fair order: release → the waiter holds"),
]
SEMANTICS_KEYS = ("ops", "seconds", "ops_per_sec", "us_per_op", "cpu_us_per_op",
                  "requests_per_op", "commands_per_op", "contended_per_op",
                  "server_cpu_us_per_op", "server_cmd_usec_per_op", "ping_rtt_us")


# bench_handoff's rows (collect.py BREAKDOWN_WAITERS) and the figures each must carry.
BREAKDOWN_WAITERS = (1, 8, 64)
BREAKDOWN_KEYS = ("ping_p50_us", "release_to_push_us", "push_to_attempt_us",
                  "attempt_to_holds_us", "release_to_holds_us", "release_rtt_us",
                  "reply_to_push_us", "requests_per_op", "pushes_per_op", "pushes_ahead_per_op")


def part_errors(part, name, lockwire_ran):
    """The common checks of a locks part run by lockwire (semantics, breakdown): its status,
    and its error rows. Returns (errors, runs, rounds with an error); runs is None when there
    is nothing more to check (absent in older results: not an error)."""
    if part is None:
        return [], None, set()
    if not isinstance(part, dict) or part.get("status") not in STATUSES:
        return [f"locks {name}: bad status"], None, set()
    if part["status"] == "missing":
        return ([f"locks {name}: missing although bench_lock ran"] if lockwire_ran else []), \
            None, set()
    errs, bad = [], set()
    runs = part.get("runs", [])
    for r in runs:
        if "error" in r:
            bad.add(r.get("round"))
            errs.append(f"locks {name} round {r.get('round')}: "
                        f"{r['error'].splitlines()[-1] if r['error'] else 'error'}")
    if part["status"] == "ok" and not runs:
        errs.append(f"locks {name}: ok but no runs")
    return errs, runs, bad


def check_breakdown(bd, rounds, lockwire_ran):
    """suites.locks.breakdown: every waiter count in every round, each with its figures and
    hand-offs timed (absent in results older than bench_handoff: not an error)."""
    errs, runs, bad = part_errors(bd, "breakdown", lockwire_ran)
    if runs is None:
        return errs
    for rnd in range(rounds):
        if rnd in bad:
            continue
        for w in BREAKDOWN_WAITERS:
            got = [r for r in runs if r.get("round") == rnd and r.get("waiters") == w]
            who = f"locks breakdown round {rnd}: {w} waiters"
            if not got:
                errs.append(f"{who} missing")
                continue
            for k in BREAKDOWN_KEYS:
                if not num(got[0].get(k)):
                    errs.append(f"{who}: {k} not a number")
            if not (num(got[0].get("handoffs")) and got[0]["handoffs"] > 0):
                errs.append(f"{who}: no hand-off timed")
    return errs


def check_semantics(sem, rounds, lockwire_ran):
    """suites.locks.semantics: every case in every round (absent in results older than these
    rows: not an error). A one-resource case never held more leases at once than it may."""
    errs, runs, bad_rounds = part_errors(sem, "semantics", lockwire_ran)
    if runs is None:
        return errs
    for rnd in range(rounds):
        if rnd in bad_rounds:
            continue
        for case, shape, _ in SEMANTICS:
            got = [r for r in runs if "error" not in r and r.get("round") == rnd and
                   r.get("case") == case]
            who = f"locks semantics round {rnd}: {case}"
            if not got:
                errs.append(f"{who} missing")
                continue
            g = got[0]
            if g.get("shape") != shape:
                errs.append(f"{who}: shape {g.get('shape')!r}, want {shape!r}")
            for k in SEMANTICS_KEYS:
                if not num(g.get(k)):
                    errs.append(f"{who}: {k} not a number")
            if num(g.get("ops")) and g["ops"] <= 0:
                errs.append(f"{who}: no cycles completed")
            if not (num(g.get("latency_us", {}).get("p50")) and
                    len(g.get("quantiles_us", [])) == 101):
                errs.append(f"{who}: no latency distribution")
            if g.get("resources") == 1 and shape == "throughput":
                most = g.get("max_holders")
                limit = g.get("permits") if g.get("kind") == "shared" else 1
                if not num(most) or not num(limit) or most < 1 or most > limit:
                    errs.append(f"{who}: {most} leases held at once (at most {limit} allowed)")
    return errs


def check_replicas(rep):
    """suites.locks.replicas (absent in results older than the replica rows: not an error)."""
    if rep is None:
        return []
    if not isinstance(rep, dict) or rep.get("status") not in STATUSES:
        return ["locks replicas: bad status"]
    errs = []
    runs = rep.get("runs", [])
    for r in runs:
        if "error" in r:
            errs.append(f"locks replicas round {r.get('round')}: "
                        f"{r['error'].splitlines()[-1] if r['error'] else 'error'}")
    if rep["status"] == "ok" and not runs:
        errs.append("locks replicas: ok but no runs")
    good = [r for r in runs if "error" not in r]
    for rnd in sorted({r.get("round") for r in good}):
        for mode, n in REPLICA_ROWS:
            for mr in (0, rep.get("min_replicas", 1)):
                got = [r for r in good if r.get("round") == rnd and r.get("mode") == mode and
                       r.get("n") == n and r.get("min_replicas") == mr]
                who = f"locks replicas round {rnd}: {mode} {n} min_replicas={mr}"
                if not got:
                    errs.append(f"{who} missing")
                    continue
                for k in ("ops_per_sec", "cpu_us_per_op", "requests_per_pair",
                          "commands_per_pair", "not_replicated") + (
                              ("us_per_op", "ping_rtt_us") if mode == "serial" else ()):
                    if not num(got[0].get(k)):
                        errs.append(f"{who}: {k} not a number")
                if mode == "serial" and not (num(got[0].get("latency_us", {}).get("p50")) and
                                             len(got[0].get("quantiles_us", [])) == 101):
                    errs.append(f"{who}: no latency distribution")
    return errs


def med(xs):
    xs = [x for x in xs if num(x)]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if num(x)]
    return (min(xs), max(xs)) if xs else (None, None)


def fmt(x, unit="", digits=None):
    if x is None:
        return "–"
    if digits is None:
        digits = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else 2)
    s = f"{x:,.{digits}f}"
    return s + unit


def cell(xs, unit="", digits=None):
    """median [min–max] of the values, or – when there are none."""
    m = med(xs)
    if m is None:
        return "–"
    lo, hi = spread(xs)
    if len([x for x in xs if num(x)]) == 1:
        return fmt(m, unit, digits)
    return f"{fmt(m, unit, digits)} [{fmt(lo, '', digits)}–{fmt(hi, '', digits)}]"


def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "–"


SERVER_COST_NOTE = (
    "Server CPU: the redis-server's `used_cpu_user + used_cpu_sys` delta (`INFO cpu`) ÷ "
    "pairs; server command µs: the `INFO commandstats` usec delta of the lock's commands "
    "(connection set-up and INFO left out) ÷ pairs, a script counted once: its usec contains "
    "the commands it calls, which commandstats also lists under their own names, so for a peer "
    "that reports the commands it sent (`commands_by_name`; every peer since the hiredis peers "
    "joined, `server_cmd_scope` in the JSON) only its own share of each command's calls is "
    "counted (older results counted a script's inner commands twice). "
    "The CPU figure includes what the server spends per request outside command execution "
    "(reading, parsing, replying: one read and one write per request, so a client sending "
    "fewer, larger requests costs less), and its idle cron. lockwire: read by bench_lock right "
    "before and after each row; peers: read by collect.py around each peer process, so their "
    "figure includes the process's warm-up and start-up (a few commands, and the idle server "
    "while the interpreter starts: a slight overestimate).")


class Report:
    def __init__(self, d, path):
        self.d = d
        self.base = os.path.splitext(path)[0]
        self.name = os.path.basename(self.base)
        self.lines = []
        self.charts = []
        locks = d["suites"].get("locks", {})
        self.lock_runs = [r for r in locks.get("runs", []) if "error" not in r]

    def w(self, s=""):
        self.lines.append(s)

    def match(self, r, who, mode, n, variant="default"):
        return (r.get("contender") == who and r.get("mode") == mode and r.get("n") == n and
                r.get("variant", "default") == variant)

    def lock(self, who, mode, n, key, sub=None, variant="default"):
        vals = []
        for r in self.lock_runs:
            if self.match(r, who, mode, n, variant):
                v = r.get(key)
                if sub is not None:
                    v = (v or {}).get(sub)
                vals.append(v)
        return [v for v in vals if num(v)]

    def busy(self, who, n):
        """(client + server CPU µs/pair) × pairs/s per throughput run: the cores both
        processes kept busy."""
        out = []
        for r in self.lock_runs:
            if self.match(r, who, "throughput", n, "default"):
                c, sv, tp = (r.get("cpu_us_per_op"), r.get("server_cpu_us_per_op"),
                             r.get("ops_per_sec"))
                if num(c) and num(sv) and num(tp):
                    out.append((c + sv) * tp / 1e6)
        return out

    def handoff_in_rtt(self):
        """lockwire's hand-off p50 in PING round trips, each row against the serial PING p50
        bench_lock measured right before and after it (issue #30's "hand-off p50 <= 1.5 PING
        round trips"): median [min-max] of the rounds' ratios."""
        rows = []
        for variant in ("default", "parked", "one-client"):
            for n in (8, 64):
                ratios = [r["latency_us"]["p50"] / r["ping_around_p50_us"]
                          for r in self.lock_runs
                          if self.match(r, "lockwire", "handoff", n, variant)
                          and num((r.get("latency_us") or {}).get("p50"))
                          and num(r.get("ping_around_p50_us")) and r["ping_around_p50_us"] > 0]
                pings = self.lock("lockwire", "handoff", n, "ping_around_p50_us", None, variant)
                if ratios:
                    rows.append((variant, n, ratios, pings))
        if not rows:
            return
        self.w("lockwire's hand-off p50 in PING round trips: each row's p50 ÷ the serial PING p50 "
               "bench_lock measured on its own connection right before and right after that row "
               "(their mean), so that both are read on the machine as it was then; median "
               "[min–max] of the rounds' ratios.")
        self.w()
        self.w("| lockwire | waiters | PING p50 µs around the row | hand-off p50 ÷ PING p50 |")
        self.w("| --- | --- | --- | --- |")
        for variant, n, ratios, pings in rows:
            self.w(f"| {variant} | {n} | {cell(pings)} | {cell(ratios, '', 2)} |")
        self.w()

    def half(self, who, key, rtt_p50):
        """A serial pair's half (acquire_us or release_us): the p50 [min–max over rounds], and
        its median ÷ the median PING p50 (— for a contender that does not report it)."""
        v = self.lock(who, "serial", 1, key, "p50")
        if not v:
            return "–"
        return f"{cell(v)} ({fmt(med(v) / rtt_p50, '', 2)})" if rtt_p50 else cell(v)

    def us_per_pair(self, who):
        """Serial µs per pair: wall time / pairs (peers), bench_lock's figure (lockwire)."""
        if who == "lockwire":
            return self.lock(who, "serial", 1, "us_per_op")
        return [1e6 * r["seconds"] / r["ops"] for r in self.lock_runs
                if r.get("contender") == who and r.get("mode") == "serial" and r.get("ops")]

    def ping_rtt(self):
        """(lockwire's connection: mean µs per serial PING from bench_lock,
            redis-benchmark -c 1 -P 1 p50 µs: the locks suite's own runs, else the connection
            suite's)."""
        lw = self.lock("lockwire", "serial", 1, "ping_rtt_us")
        locks = self.d["suites"].get("locks", {})
        rb = [f["p50_us"] for f in locks.get("ping_floor", []) if num(f.get("p50_us"))]
        if not rb:
            rb = [r["value"] for r in self.d["suites"].get("connection", {}).get("runs", [])
                  if r.get("contender", "").startswith("redis-benchmark") and
                  r.get("metric") == "ping_p50_us"]
        return lw, rb

    def server_cmds_per_pair(self, who):
        """Commands Redis executed per serial pair: lockwire counts the commands it wrote (no
        scripts, so the same); peers: INFO commandstats delta (scripts' inner commands included,
        and a few of the warm-up's) / pairs."""
        if who == "lockwire":
            return self.lock(who, "serial", 1, "commands_per_pair")
        return [sum(r["server_commands"].values()) / r["ops"] for r in self.lock_runs
                if r.get("contender") == who and r.get("mode") == "serial" and r.get("ops")
                and isinstance(r.get("server_commands"), dict)]

    def requests(self, who, mode, n, variant="default"):
        """Requests sent per pair (per hand-off): lockwire's metrics hook, the hiredis peers'
        own count of pipelined writes; redis-py and node-redlock pipeline nothing, so their
        commands sent."""
        if who == "lockwire":
            return self.lock(who, mode, n, "requests_per_pair" if mode == "serial"
                             else "requests_per_op", None, variant)
        return self.lock(who, mode, n, "requests_per_op", None, variant) or self.lock(
            who, mode, n, "commands_per_op", None, variant)

    def hiredis_notes(self):
        """What the hiredis peers are (bench/peers/bench_hiredis_peers.cpp)."""
        lib = next((r.get("hiredis") for r in self.lock_runs if r.get("hiredis")), "?")
        self.w(f"The hiredis peers (`bench_hiredis_peers`, C++ on hiredis {lib}'s async API on "
               "an epoll loop of its own, one thread; output written once per loop iteration, "
               "so everything ready in one iteration goes out in one write per connection):")
        self.w()
        self.w("- **hiredis-lua**: the canonical single-instance Redis lock — acquire `SET k "
               "token NX PX ttl`, release the documented compare-and-delete script by "
               "`EVALSHA` (`SCRIPT LOAD` once; `EVAL` on `NOSCRIPT`): 2 requests per pair. "
               "**No fencing token.** All users on one connection, pipelined.")
        self.w("- **hiredis-lua-fenced**: the same lock handing out a fencing token, as "
               "lockwire's acquire does: the acquire is one `EVALSHA` doing `SET NX PX` and, on "
               "success, `INCR k:fence` (still 2 requests per pair). Serial and throughput "
               "rows only: its waiting is hiredis-lua's.")
        self.w("- **hiredis-watch**: a Lua-free lock after redis-plus-plus's `RedMutexTx` "
               "(`RedMutexOptions::scripting = false`) — acquire `WATCH k`+`GET k`, then if k "
               "is absent `MULTI`+`SET k token PX ttl`+`EXEC` (a nil EXEC is a lost race), "
               "else `UNWATCH`; release `WATCH k`+`GET k`, then if ours `MULTI`+`DEL k`+`EXEC`, "
               "else `UNWATCH`: 4 requests, 10 commands per pair. **No fencing token.** WATCH "
               "state belongs to a connection, so each user (each hand-off contender) has its "
               "own connection: users sharing one would guard and drop each other's WATCHes, "
               "and serialising them would turn the 16/256-user rows into a queue. Commands "
               "that need no reply in between are pipelined (WATCH with GET; MULTI, SET/DEL, "
               "EXEC together), one round trip fewer per step than redis-plus-plus's separate "
               "`watch()` and `get()` calls. redis-plus-plus itself acquires with a plain "
               "`SET NX PX`; here the acquire is transactional too, so that no step uses Lua.")
        self.w("- Waiting (hand-off rows): polling. Default: sleep a random whole number of "
               "milliseconds in 0–5 before each attempt, as redis-plus-plus's "
               "`RedMutex::lock()` does; tuned: a random 0–1 ms. Serial and throughput rows "
               "make one attempt per acquire (an uncontended acquire must succeed at once).")
        self.w("- lockwire's rows run as an ACL user without `@scripting`; the peers keep "
               "scripting (the server has it enabled for them).")
        self.w()

    def header(self):
        d, m, v = self.d, self.d["machine"], self.d["versions"]
        self.w(f"# lockwire side-by-side benchmark — {d['started'][:10]} on {m.get('host')}")
        self.w()
        if d.get("quick"):
            self.w("**Quick mode** (CI smoke run): figures are from very short runs and mean "
                   "nothing; this report only shows that every suite ran.")
            self.w()
        self.w(f"- Command: `{d['command']}` (from the repository root)")
        self.w(f"- Run: {d['started']} → {d['finished']}, {d['rounds']} round(s), contenders "
               "interleaved (each round runs every contender once, order rotated per round)")
        load = d.get("loadavg_start", [])[:1] + d.get("loadavg_end", [])[:1]
        self.w(f"- Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, {m.get('mem_gib')} GiB, "
               f"{m.get('os', '?')}, Linux {m.get('kernel')}; load average "
               f"{' / '.join(f'{x:.1f}' for x in load)} (start / end)")
        self.w("- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val))
        self.w(f"- Server: redis-server on {d['server']['address']}, "
               f"persistence {d['server']['persistence']}, started by the run" +
               (f"; replica {d['server']['replica']}" if d["server"].get("replica") else "") +
               (f"; sentinels {', '.join(d['server']['sentinels'])} monitoring it"
                if d["server"].get("sentinels") else ""))
        self.w("- Figures: median over rounds [min–max]. Ratios compare medians of this same run; "
               "absolute numbers depend on the machine and on whatever else it was running "
               "(this machine is shared with compile jobs, so they are noisy: trust the ratios, "
               "not the absolutes).")
        if d.get("note"):
            self.w(f"- Note: {d['note']}")
        if d.get("skipped"):
            self.w("- Skipped: " + "; ".join(d["skipped"]))
        if d.get("failed"):
            self.w("- **Failed**: " + "; ".join(d["failed"]))
        self.w()

    def locks(self):
        s = self.d["suites"].get("locks")
        if s is None:  # not requested (--suites)
            return
        self.w("## Locks: lockwire vs redis-py `Lock`, node-redlock (ioredis) and two C++ "
               "locks on hiredis (the Lua lock, a WATCH/MULTI lock)")
        self.w()
        if s.get("status") != "ok" and not self.lock_runs:
            self.w(f"Not run ({s.get('status')}: {s.get('reason') or s.get('error', '')}).")
            self.w()
            return
        present = [c for c in CONTENDERS if any(r["contender"] == c for r in self.lock_runs)]
        lw_rtt, rb_rtt = self.ping_rtt()
        lw_rtt_p50 = self.lock("lockwire", "serial", 1, "ping_rtt_p50_us")
        rtt = med(lw_rtt) or med(rb_rtt)
        rtt_p50 = med(lw_rtt_p50) or med(rb_rtt)
        self.w(f"PING round trip (the floor): lockwire's connection (bench_lock, serial PINGs) "
               f"mean {cell(lw_rtt, ' µs')}, p50 {cell(lw_rtt_p50, ' µs')}; "
               f"`redis-benchmark -c 1 -P 1 -t ping` p50 {cell(rb_rtt, ' µs')}.")
        timed = self.lock("lockwire", "serial", 1, "ping_timed_wait_p50_us")
        untimed = self.lock("lockwire", "serial", 1, "ping_untimed_wait_p50_us")
        if timed and untimed:
            self.w()
            self.w(f"A timed wait costs more: serial PINGs on lockwire's loop with a far-away timer "
                   f"armed took {cell(timed, ' µs')} at p50, against {cell(untimed, ' µs')} with "
                   f"none ({ratio(med(timed), med(untimed))}; alternated chunks in one row). With "
                   "a timer armed every epoll_wait carries a timeout. lockwire's loop has one "
                   "whenever a lease is held or an attempt is in flight (expiry, settle and "
                   "deadline timers); the hiredis peers' loop has none in the serial and "
                   "throughput rows.")
        self.w()
        if any(c in present for c in HIREDIS_PEERS):
            self.hiredis_notes()
        # Suite 3: serial pairs.
        self.w("### Uncontended acquire+release pairs, one client, serial")
        self.w()
        self.w("| contender | µs/pair (mean) | ÷ lockwire's | p50 µs | p99 µs | round trips/pair, "
               "measured (mean ÷ mean RTT / p50 ÷ p50 RTT) | round trips/pair, counted "
               "(requests sent) | acquire p50 µs (÷ PING p50) | release p50 µs (÷ PING p50) | "
               "commands/pair run by Redis | client CPU µs/pair | "
               "server CPU µs/pair | server command µs/pair (commandstats) |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        lw = med(self.us_per_pair("lockwire"))
        for c in present:
            upp = self.us_per_pair(c)
            cpu = self.lock(c, "serial", 1, "cpu_us_per_op") or self.lock(
                c, "throughput", 1, "cpu_us_per_op")
            p50 = self.lock(c, "serial", 1, "latency_us", "p50")
            measured = fmt(med(upp) / rtt if med(upp) and rtt else None, "", 2)
            if med(p50) and rtt_p50:
                measured += f" / {fmt(med(p50) / rtt_p50, '', 2)}"
            self.w(f"| {c} | {cell(upp)} | {ratio(med(upp), lw)} | {cell(p50)}"
                   f" | {cell(self.lock(c, 'serial', 1, 'latency_us', 'p99'))} | {measured} | "
                   f"{cell(self.requests(c, 'serial', 1), '', 2)} | "
                   f"{self.half(c, 'acquire_us', rtt_p50)} | {self.half(c, 'release_us', rtt_p50)} | "
                   f"{cell(self.server_cmds_per_pair(c), '', 1)} | "
                   f"{cell(cpu)} | {cell(self.lock(c, 'serial', 1, 'server_cpu_us_per_op'))} | "
                   f"{cell(self.lock(c, 'serial', 1, 'server_cmd_usec_per_op'))} |")
        faster = [f"{ratio(med(self.us_per_pair(p)), lw)} faster than {p}" for p in PEERS
                  if lw and med(self.us_per_pair(p)) and med(self.us_per_pair(p)) >= lw]
        slower = [f"{ratio(lw, med(self.us_per_pair(p)))} slower than {p}" for p in PEERS
                  if lw and med(self.us_per_pair(p)) and med(self.us_per_pair(p)) < lw]
        if faster or slower:
            self.w()
            self.w("Serial pair, µs/pair: lockwire is " + ", ".join(faster + slower) + ".")
        self.w()
        self.w(f"Round trips per pair, two ways: *measured* = µs/pair ÷ PING RTT on lockwire's "
               f"connection, as mean ÷ mean ({fmt(rtt, ' µs')}) and p50 ÷ p50 "
               f"({fmt(rtt_p50, ' µs')}); it includes client time and, for the means, the "
               "machine's tail latency, so it is an estimate; "
               "*counted* = requests the client sent per pair, each waited for before the next "
               "(lockwire: counted by its metrics hook, `lock::CountingMetrics::requests`, where "
               "one request may be a pipelined MULTI…EXEC block; hiredis peers: their own count "
               "of pipelined writes waited for, e.g. WATCH+GET is one; redis-py, node-redlock: "
               "commands sent, an EVALSHA counting as one). Commands run by Redis: lockwire "
               "counts the commands inside its requests (it sends no scripts); peers: `INFO "
               "commandstats` delta per pair, which includes the commands their Lua scripts "
               "call. Client CPU: getrusage (lockwire, hiredis peers) or process_time / "
               "process.cpuUsage (redis-py, node-redlock) over the measured interval ÷ pairs. "
               + SERVER_COST_NOTE)
        self.w()
        # Suite 4: throughput.
        self.w("### Many resources, one process: pairs/s with 1, 16, 256 concurrent users")
        self.w()
        self.w("| users | contender | connections | pairs/s | lockwire ÷ this | client CPU µs/pair "
               "| server CPU µs/pair | server command µs/pair | both sides busy (cores) |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for n in (1, 16, 256):
            lw_tp = med(self.lock("lockwire", "throughput", n, "ops_per_sec"))
            for c in present:
                tp = self.lock(c, "throughput", n, "ops_per_sec")
                if not tp:
                    continue
                conns = self.lock(c, "throughput", n, "connections")
                self.w(f"| {n} | {c} | {fmt(med(conns), '', 0) if conns else 1} | {cell(tp)} | "
                       f"{ratio(lw_tp, med(tp))} | "
                       f"{cell(self.lock(c, 'throughput', n, 'cpu_us_per_op'))} | "
                       f"{cell(self.lock(c, 'throughput', n, 'server_cpu_us_per_op'))} | "
                       f"{cell(self.lock(c, 'throughput', n, 'server_cmd_usec_per_op'))} | "
                       f"{cell(self.busy(c, n), '', 2)} |")
            floor = self.lock("lockwire", "throughput", n, "ping_floor_pairs_per_sec")
            if floor:
                self.w(f"| {n} | *PING floor* | 1 | {cell(floor)} | {ratio(lw_tp, med(floor))} "
                       "| | | | |")
        self.w()
        self.w("*PING floor*: bench_lock's PING loops right after lockwire's row, the same number "
               "of users on one lockwire connection, two PINGs counted as a pair: what the "
               "machine allows a pipelined client at that concurrency. *Both sides busy*: (client "
               "CPU + server CPU) µs/pair × pairs/s, in cores (median of the rounds). Near 1.0 "
               "with both processes below 1.0 each, the client and the server take turns: the "
               "server waits while the client reads a batch of replies and writes the next "
               "requests, and the client waits while the server runs them, so pairs/s is bounded "
               "by 1 ÷ (client + server CPU per pair) and each side's cost counts in full.")
        self.w()
        self.w("lockwire, node-redlock, hiredis-lua and hiredis-lua-fenced run every user on one "
               "connection (pipelined); hiredis-watch gives each user its own connection (WATCH "
               "state belongs to a connection); redis-py runs one thread per user and its pool "
               "opens a connection per busy thread (the GIL serialises Python). lockwire ÷ this: "
               "pairs/s ratio of the medians, above 1 where lockwire is faster.")
        self.w()
        # Suite 5: hand-off.
        self.w("### Contended hand-off: release → next waiter holds")
        self.w()
        self.w("| contender | waiters | p50 µs | p50 ÷ lockwire's | p90 µs | p99 µs | mean µs | "
               "hand-offs | requests sent per hand-off | server CPU µs per hand-off | "
               "waiting strategy |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in present:
            for variant in (("default", "parked", "one-client") if c == "lockwire"
                            else ("default", "tuned")):
                for n in (1, 8, 64):
                    mean = self.lock(c, "handoff", n, "latency_us", "mean", variant)
                    if not mean:
                        continue
                    count = sum(self.lock(c, "handoff", n, "ops", None, variant)) or "–"
                    # All contenders' requests / hand-offs: lockwire's metrics hook (a request
                    # may carry several commands), the hiredis peers' own count of writes,
                    # the other peers' commands sent.
                    sent = self.requests(c, "handoff", n, variant)
                    p50 = self.lock(c, "handoff", n, "latency_us", "p50", variant)
                    lw_p50 = med(self.lock("lockwire", "handoff", n, "latency_us", "p50"))
                    self.w(f"| {c} | {n} | {cell(p50)} | {ratio(med(p50), lw_p50)} | "
                           + " | ".join(cell(self.lock(c, "handoff", n, "latency_us", q, variant))
                                        for q in ("p90", "p99"))
                           + f" | {cell(mean)} | {count} | {cell(sent, '', 1)} | "
                           f"{cell(self.lock(c, 'handoff', n, 'server_cpu_us_per_op', None, variant))}"
                           f" | {self.strategy(c, variant)} |")
        self.w()
        self.handoff_in_rtt()
        self.w("Peers: waiters+1 contenders on one resource; each holds 2 ms, releases, and "
               "rejoins as a waiter after the next grant plus a random arrival delay within one "
               "polling interval. First with the libraries' default polling, then tuned: "
               "redis-py and node-redlock to poll every ~10 ms, the hiredis peers (whose "
               "default, redis-plus-plus's, already polls after 0–5 ms) after 0–1 ms; tuned "
               "means more requests per hand-off. p50 ÷ lockwire's: against lockwire's row "
               "with a connection per waiter. Requests per hand-off: everything all "
               "contenders sent from the row's start to its last counted hand-off ÷ hand-offs "
               "(the contenders' first arrival included; after the last one the peers abandon "
               "their waiters and lockwire drains them uncounted; lockwire: counted by its "
               "metrics hook; hiredis peers: their writes; redis-py, node-redlock: commands "
               "sent). " +
               ("lockwire (bench_lock): waiters+1 clients, one connection each (as separate "
                "processes would have), same hold and rejoin rule, woken by the server (no "
                "polling); then all waiters in one client on one connection (one-client), like "
                "node-redlock's and hiredis-lua's waiters, which share one connection."
                if self.lock("lockwire", "handoff", 8, "latency_us", "mean") else
                "lockwire's bench_lock measured one waiter and reported the mean only."))
        self.w()
        self.breakdown(s.get("breakdown"))
        self.cluster(s.get("cluster"))
        self.sentinel(s.get("sentinel"))
        self.replicas(s.get("replicas"))
        self.semantics(s.get("semantics"))

    def sub_section(self, title, part):
        """A locks sub-section's title, then its good runs; None (with a "Not run" line) when
        it has none."""
        self.w(f"### {title}")
        self.w()
        runs = [r for r in part.get("runs", []) if "error" not in r]
        if not runs:
            self.w(f"Not run ({part.get('status')}: {part.get('reason', '')}).")
            self.w()
            return None
        return runs

    def breakdown(self, bd):
        """The hand-off cut into segments (bench_handoff; suites.locks.breakdown)."""
        if bd is None:  # a result from before bench_handoff
            return
        runs = self.sub_section("Where a hand-off's time goes (bench_handoff)", bd)
        if runs is None:
            return

        def vals(w, key):
            return [r[key] for r in runs if r.get("waiters") == w and num(r.get(key))]

        def rtts(w, key):
            """Per round: the segment ÷ that round's PING p50."""
            return [r[key] / r["ping_p50_us"] for r in runs
                    if r.get("waiters") == w and num(r.get(key)) and r.get("ping_p50_us")]

        self.w("lockwire only, once per round in the contenders' rotation: `bench_handoff URL "
               "N`. One holder and W waiters, each its own `lock::Client` and connection, on "
               "one resource; each holds 2 ms (a PING on a waiter's connection in the middle: "
               "the round trip under the same conditions as the release's), releases and waits "
               "again. Each hand-off is timed at: release() called → the invalidation push at "
               "the winner's connection → its attempt handed to the connection → it holds. "
               "Cells: p50 µs, then p50 ÷ that round's PING p50 (medians over rounds "
               "[min–max]).")
        self.w()
        self.w("| waiters | PING p50 µs | release → push | push → attempt | attempt → holds | "
               "release → holds | ÷ PING | release's own round trip µs | release reply → "
               "winner's push µs | pushes per hand-off | pushes before the winner's | "
               "requests per hand-off |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for w in sorted({r.get("waiters") for r in runs}):
            segs = [f"{cell(vals(w, k), ' µs')} ({cell(rtts(w, k), '', 2)})"
                    for k in ("release_to_push_us", "push_to_attempt_us", "attempt_to_holds_us")]
            self.w(f"| {w} | {cell(vals(w, 'ping_p50_us'))} | {' | '.join(segs)} | "
                   f"{cell(vals(w, 'release_to_holds_us'), ' µs')} | "
                   f"{cell(rtts(w, 'release_to_holds_us'), '', 2)} | "
                   f"{cell(vals(w, 'release_rtt_us'))} | {cell(vals(w, 'reply_to_push_us'))} | "
                   f"{cell(vals(w, 'pushes_per_op'), '', 2)} | "
                   f"{cell(vals(w, 'pushes_ahead_per_op'), '', 2)} | "
                   f"{cell(vals(w, 'requests_per_op'), '', 2)} |")
        self.w()
        self.w("The floor is 2 round trips: the release reaches the server and its push comes "
               "back (release → push), the attempt goes out and its reply comes back (attempt → "
               "holds). push → attempt is the client's own wake-up work (0 when the lock "
               "client's push handler hands the attempt over before the probe's handler runs: "
               "the attempt leaves in the same loop turn as the push is read). Requests per "
               "hand-off: the release, the winner's attempt, and the old holder's next wait "
               "block. Pushes: every contender whose tracked read of the holder set is still "
               "registered gets one (the winner, the backup waiter, the contender that joined "
               "last); Redis writes them after the release's reply, in one event-loop turn. "
               "Read the breakdown in docs/design.md \"Hand-off latency\".")
        self.w()

    def cluster(self, cl):
        """The cluster row (suites.locks.cluster): 256 users, 3 primaries vs 1."""
        if cl is None:  # a result from before this row
            return
        runs = self.sub_section("Redis Cluster: 256 users over 3 primaries vs the single primary", cl)
        if runs is None:
            return

        def vals(target, key):
            return {r["round"]: r[key] for r in runs
                    if r.get("target") == target and num(r.get(key))}

        novouch = any(r.get("target") == "cluster-novouch" for r in runs)
        if novouch:
            self.w("| row | single primary | cluster (3 primaries) | ratio (cluster ÷ single) "
                   "| cluster, vouch off | ratio (vouch on ÷ off) |")
            self.w("| --- | --- | --- | --- | --- | --- |")
        else:
            self.w("| row | single primary | cluster (3 primaries) | ratio (cluster ÷ single) |")
            self.w("| --- | --- | --- | --- |")
        for key, label, digits in (
                ("ops_per_sec", "pairs/s, 256 users", None),
                ("requests_per_pair", "requests sent per pair", 2),
                ("commands_per_pair", "commands in them per pair", 2),
                ("cpu_us_per_op", "client CPU µs/pair", None),
                ("server_cpu_us_per_op", "server CPU µs/pair (all servers)", None),
                ("server_cmd_usec_per_op", "server command µs/pair (commandstats)", None)):
            a, b = vals("single", key), vals("cluster", key)
            rs = [b[k] / a[k] for k in a if k in b and a[k]]
            line = (f"| {label} | {cell(list(a.values()), '', digits)} | "
                    f"{cell(list(b.values()), '', digits)} | {cell(rs, '×', 2)} |")
            if novouch:
                n = vals("cluster-novouch", key)
                on_off = [b[k] / n[k] for k in n if k in b and n[k]]
                line += f" {cell(list(n.values()), '', digits)} | {cell(on_off, '×', 2)} |"
            self.w(line)
        for key, label in (("redirects", "MOVED/ASK redirects (all rounds)"),
                           ("cluster_retries", "TRYAGAIN/CLUSTERDOWN retries (all rounds)")):
            self.w(f"| {label} | {int(sum(vals('single', key).values()))} | "
                   f"{int(sum(vals('cluster', key).values()))} | |"
                   + (f" {int(sum(vals('cluster-novouch', key).values()))} | |" if novouch
                      else ""))
        share = {}
        for r in runs:
            for node, n in (r.get("node_commands") or {}).items():
                share[node] = share.get(node, 0) + n
        total = sum(share.values())
        self.w()
        self.w("lockwire only: `LOCKWIRE_BENCH_CLUSTER=redis://…:P1,…:P2,…:P3 bench_lock`, "
               "256 users each on its own resource (`bench:{0}` … `bench:{255}`: the hash tags "
               "spread them over the slots), once through lockwire's cluster client (a "
               "connection per primary, requests routed by slot) and once on this run's single "
               "primary, alternated in quarter-row chunks (order swapped each chunk), in every "
               "round. The cluster: 3 primaries, no replicas, `redis-cli --cluster create "
               "--cluster-replicas 0`, started by bench/run.sh next to the single server. "
               "Redirects and retries: `lock::CountingMetrics::redirects` / `cluster_retries`."
               + (" *Vouch off*: the same cluster client with `ClientOptions::cluster_vouch = "
                  "false` (issue #28): what the default's polling of every node (TIME, CLUSTER "
                  "NODES, CONFIG GET, COUNT-FAILURE-REPORTS every node-timeout/5) costs."
                  if novouch else "")
               + (" Lock commands per node (commandstats): " + ", ".join(
                   f"{node} {100 * n / total:.0f} %" for node, n in sorted(share.items())) + "."
                  if total else ""))
        self.w()
        self.w(f"**This machine has {self.d['machine'].get('cores')} cores**: the 3 cluster "
               "servers, the single server, and the client (one thread) share them, so the "
               "cluster cannot show the scaling that 3 primaries on 3 machines would give; what "
               "this row shows is the cluster client's own cost (routing, a connection per "
               "primary, no redirects once the slot map is loaded) against one primary.")
        self.w()

    def sentinel(self, sn):
        """The sentinel row (suites.locks.sentinel, issue #28): the client behind Sentinel with
        its vouch, without, and direct on the primary."""
        if sn is None:  # a result from before this row
            return
        runs = self.sub_section("Sentinel: the vouch's cost (vouch on, off, direct)", sn)
        if runs is None:
            return

        def vals(target, users, key, sub=None):
            return by_round(runs, {"target": target, "users": users}, key, sub)

        def rs(a, b):
            """Per-round ratios b ÷ a: median [min–max]."""
            return cell([b[k] / a[k] for k in b if a.get(k)], "×", 2)

        self.w("| row | direct (no sentinels) | vouch on (default) | vouch off | "
               "ratio (on ÷ off) | ratio (on ÷ direct) |")
        self.w("| --- | --- | --- | --- | --- | --- |")
        for users, key, sub, label, digits in (
                (1, "us_per_op", None, "serial pair, µs (mean)", None),
                (1, "latency_us", "p50", "serial pair, p50 µs", None),
                (1, "cpu_us_per_op", None, "serial pair, client CPU µs", None),
                (1, "server_cpu_us_per_op", None, "serial pair, server CPU µs", None),
                (1, "requests_per_pair", None, "serial pair, requests sent", 2),
                (16, "ops_per_sec", None, "16 users, one connection: pairs/s", None),
                (16, "cpu_us_per_op", None, "16 users: client CPU µs/pair", None),
                (16, "server_cpu_us_per_op", None, "16 users: server CPU µs/pair", None),
                (16, "server_cmd_usec_per_op", None,
                 "16 users: server command µs/pair (commandstats)", None),
                (16, "requests_per_pair", None, "16 users: requests sent per pair", 2)):
            d, on, off = (vals(t, users, key, sub) for t in SENTINEL_TARGETS)
            self.w(f"| {label} | {cell(list(d.values()), '', digits)} | "
                   f"{cell(list(on.values()), '', digits)} | "
                   f"{cell(list(off.values()), '', digits)} | {rs(off, on)} | {rs(d, on)} |")
        self.w()
        self.w("lockwire only: `LOCKWIRE_BENCH_SENTINEL=redis-sentinel://…:S1,…:S2,…:S3#"
               f"{sn.get('master_name', 'lockwire-bench')} bench_lock URL`, once per round in "
               "the contenders' rotation: serial pairs and 16 users on one connection (each on "
               "its own resource) through the client behind Sentinel with "
               "`SentinelOptions::vouch = true` (the default: every sentinel is asked SENTINEL "
               "MASTER and SENTINEL SENTINELS every down-after ÷ 5, here 1 s, and a lease counts "
               "only up to the sentinels' vouch), the same client with the vouch off, and "
               "directly on this run's primary, alternated in quarter-row chunks (order rotated "
               "each chunk). 3 sentinels (quorum 2, down-after 5 s, started by bench/run.sh: "
               f"{', '.join(sn.get('sentinels') or [])}) monitor the primary; each round "
               "attaches the replica as for the replica rows (and waits until every sentinel "
               "lists it and the other sentinels), so all three targets run with the replica "
               "attached, then detaches it and resets the sentinels (`SENTINEL RESET`: they "
               "would re-attach it). After each row every sentinel must still name the primary: "
               "no failover happens during the bench. Server CPU: the primary's (the sentinels' "
               "own CPU is not counted). Ratios are medians of the per-round ratios [min–max].")
        self.w()

    def replicas(self, rep):
        """The cost of ClientOptions::min_replicas (suites.locks.replicas)."""
        if rep is None:  # a result from before these rows
            return
        n = rep.get("min_replicas", 1)
        runs = self.sub_section("Replica-acknowledged grants: cost", rep)
        if runs is None:
            return

        def vals(mode, mr, key, sub=None):
            return by_round(runs, {"mode": mode, "min_replicas": mr}, key, sub)

        def per_rtt(mr):
            us, rtt = vals("serial", mr, "us_per_op"), vals("serial", mr, "ping_rtt_us")
            return {k: us[k] / rtt[k] for k in us if rtt.get(k)}

        def row(label, a, b, digits=None):
            """a, b: {round: value} without and with; ratio: median of the per-round ratios."""
            rs = [b[k] / a[k] for k in a if k in b and a[k]]
            self.w(f"| {label} | {cell(list(a.values()), '', digits)} | "
                   f"{cell(list(b.values()), '', digits)} | {cell(rs, '×', 2)} |")

        self.w(f"lockwire only: `lock::ClientOptions::min_replicas = {n}` (after each grant's "
               f"reply `WAIT {n} 100`, one more request) against `min_replicas = 0`, both on "
               f"this run's primary with its one replica ({rep.get('replica', '?')}, loopback) "
               "attached. Each round attaches the replica (`REPLICAOF`, until the primary lists "
               "it online), runs `LOCKWIRE_BENCH_MIN_REPLICAS=1 bench_lock`, which alternates "
               "the two settings in quarter-row chunks (order swapped each chunk), then detaches "
               "it: every other row of this report runs without a replica" +
               (" but the sentinel row (attached the same way)."
                if self.d.get("server", {}).get("sentinels") else "."))
        self.w()
        self.w(f"| row | min_replicas=0 | min_replicas={n} | ratio (with ÷ without) |")
        self.w("| --- | --- | --- | --- |")
        for mode, key, sub, label in (
                ("serial", "us_per_op", None, "serial pair, µs (mean)"),
                ("serial", "latency_us", "p50", "serial pair, p50 µs"),
                ("serial", "latency_us", "p99", "serial pair, p99 µs")):
            row(label, vals(mode, 0, key, sub), vals(mode, n, key, sub))
        row("serial pair, RTT-equivalents (mean ÷ mean PING RTT)", per_rtt(0), per_rtt(n), 2)
        for mode, key, label in (
                ("serial", "requests_per_pair", "serial pair, requests sent (on_request)"),
                ("serial", "commands_per_pair", "serial pair, commands in them"),
                ("serial", "cpu_us_per_op", "serial pair, client CPU µs"),
                ("throughput", "ops_per_sec", "16 users, one connection: pairs/s"),
                ("throughput", "cpu_us_per_op", "16 users: client CPU µs/pair"),
                ("throughput", "requests_per_pair", "16 users: requests sent per pair")):
            row(label, vals(mode, 0, key), vals(mode, n, key), 2 if "requests" in key or
                "commands" in key else None)
        withdrawn = {mr: sum(r.get("not_replicated", 0) for r in runs
                             if r.get("min_replicas") == mr) for mr in (0, n)}
        self.w(f"| grants withdrawn as not replicated (retried), all rounds | {withdrawn[0]} | "
               f"{withdrawn[n]} | |")
        self.w()
        us0, us1 = vals("serial", 0, "us_per_op"), vals("serial", n, "us_per_op")
        rtt = vals("serial", n, "ping_rtt_us")
        extra = [us1[k] - us0[k] for k in us1 if k in us0]
        extra_rtt = [(us1[k] - us0[k]) / rtt[k] for k in us1 if k in us0 and rtt.get(k)]
        self.w(f"min_replicas={n} adds {cell(extra, ' µs')} per serial pair = "
               f"{cell(extra_rtt, '', 2)} PING round trips (mean RTT in these runs "
               f"{cell(list(rtt.values()), ' µs')}): the WAIT request plus the primary → replica "
               "→ primary acknowledgement. Ratios are medians of the per-round ratios "
               "[min–max]; requests are counted by the client's metrics hook "
               "(`CountingMetrics::requests`, one per `on_request`), commands are the commands "
               "inside them. With 16 users on one connection each WAIT blocks the connection "
               "on the server until the replica acknowledges, so the other users' commands "
               "queue behind it.")
        self.w()

    def semantics(self, sem):
        """Lock semantics (issue #20): semaphore, upgrade, lock_all against the default lock,
        all from the same bench_lock run per round (suites.locks.semantics)."""
        if sem is None:  # a result from before these rows
            return
        runs = self.sub_section("Lock semantics (issue #20)", sem)
        if runs is None:
            return

        def vals(case, key, sub=None):
            return by_round(runs, {"case": case}, key, sub)

        def rel(case, base, key):
            """Per-round ratios case ÷ base: median [min–max]."""
            a, b = vals(base, key), vals(case, key)
            return cell([b[k] / a[k] for k in b if a.get(k)], "×", 2)

        def per_rtt(case):
            us, rtt = vals(case, "us_per_op"), vals(case, "ping_rtt_us")
            return cell([us[k] / rtt[k] for k in us if rtt.get(k)], "", 2)

        self.w("lockwire only: `LOCKWIRE_BENCH_SEMANTICS=1 bench_lock`, once per round in the "
               "contenders' rotation. Inside that one run every case below and its baseline "
               "(the default exclusive lock) are alternated in quarter-row chunks (order rotated "
               "each chunk, a serial PING chunk each time for the round-trip figure), each case "
               "getting one row's time; ÷ columns are the medians of the per-round ratios "
               "[min–max] of figures from the same run.")
        self.w()
        users = sem.get("users", 16)
        self.w(f"**{users} users, one connection** (one `lock::Client`; closed loops of "
               "acquire + release, no hold time):")
        self.w()
        self.w("| case | pairs/s | ÷ (a) | ÷ (b) | p50 µs/pair | requests/pair | commands/pair | "
               "contended attempts/pair | most leases held at once | client CPU µs/pair | "
               "server CPU µs/pair | server command µs/pair |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for case, shape, label in SEMANTICS:
            if shape != "throughput":
                continue
            most = list(vals(case, "max_holders").values())
            self.w(f"| {label} | {cell(list(vals(case, 'ops_per_sec').values()))} | "
                   f"{rel(case, 'exclusive-distinct', 'ops_per_sec')} | "
                   f"{rel(case, 'exclusive-one-resource', 'ops_per_sec')} | "
                   f"{cell(list(vals(case, 'latency_us', 'p50').values()))} | "
                   f"{cell(list(vals(case, 'requests_per_op').values()), '', 2)} | "
                   f"{cell(list(vals(case, 'commands_per_op').values()), '', 2)} | "
                   f"{cell(list(vals(case, 'contended_per_op').values()), '', 3)} | "
                   f"{fmt(max(most), '', 0) if most else '–'} | "
                   f"{cell(list(vals(case, 'cpu_us_per_op').values()))} | "
                   f"{cell(list(vals(case, 'server_cpu_us_per_op').values()))} | "
                   f"{cell(list(vals(case, 'server_cmd_usec_per_op').values()))} |")
        self.w()
        self.w("(a) is the setup of the 16-user row above (each user its own resource, owner "
               "`bench`); (b) and the semaphore put every user on one resource, each with its "
               "own owner and a wait of up to 60 s. Pairs/s ÷: below 1 means fewer pairs/s "
               "than the baseline. p50: from a user's acquire call to its release being "
               "confirmed (waiting included). Requests: `lock::CountingMetrics::requests` (one "
               "pipelined MULTI…EXEC block counts once), commands: the commands inside them; "
               "contended attempts: `CountingMetrics::contended` (an attempt that found the "
               "resource held); most leases held at once: counted by bench_lock from grant to "
               "confirmed release, the most over all rounds. On one `lock::Client` the waiters "
               "on one resource are served one attempt at a time (its per-resource queue, "
               "docs/protocol.md \"Rules decided\"), and a release sent from the grant's "
               "callback goes out before the next waiter's attempt on the same connection; "
               "the contended-attempts and leases-held columns show how often these rows had "
               "to wait, and how many of the permits were in use.")
        self.w()
        self.w("**Serial, 1 user** (one `lock::Client`; a cycle = the case's acquire(s) and "
               "release(s), each waited for before the next):")
        self.w()
        self.w("| case | µs/cycle (mean) | ÷ exclusive pair | p50 µs | p99 µs | RTT-equivalents "
               "(mean ÷ mean PING RTT) | requests/cycle | commands/cycle | client CPU µs/cycle "
               "| server CPU µs/cycle | server command µs/cycle |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for case, shape, label in SEMANTICS:
            if shape != "serial":
                continue
            self.w(f"| {label} | {cell(list(vals(case, 'us_per_op').values()))} | "
                   f"{rel(case, 'exclusive', 'us_per_op')} | "
                   f"{cell(list(vals(case, 'latency_us', 'p50').values()))} | "
                   f"{cell(list(vals(case, 'latency_us', 'p99').values()))} | "
                   f"{per_rtt(case)} | "
                   f"{cell(list(vals(case, 'requests_per_op').values()), '', 2)} | "
                   f"{cell(list(vals(case, 'commands_per_op').values()), '', 2)} | "
                   f"{cell(list(vals(case, 'cpu_us_per_op').values()))} | "
                   f"{cell(list(vals(case, 'server_cpu_us_per_op').values()))} | "
                   f"{cell(list(vals(case, 'server_cmd_usec_per_op').values()))} |")
        self.w()
        rtt = list(vals("exclusive", "ping_rtt_us").values())
        self.w("Upgrade: `Client::upgrade(shared_lease, 0, …)` of the sole reader, then the "
               "exclusive lease released; lock_all: `Client::lock_all({all:0 … all:n-1}, …)`, "
               "then `Client::release(set)`. ÷ exclusive pair: above 1 means a slower cycle "
               "than the serial exclusive acquire + release of the same run. RTT-equivalents: "
               f"µs/cycle ÷ the mean serial PING of the same run ({cell(rtt, ' µs')}).")
        self.w()
        if vals("handoff-fair", "us_per_op"):
            self.w(f"Fair order costs {rel('handoff-fair', 'handoff-default', 'us_per_op')} the "
                   "default hand-off (mean release → the waiter holds, two clients, the waiter "
                   "queued before the release; `LockRequest::fair`: the waiter's WATCHed read of "
                   "the queue before its grant, docs/protocol.md \"Fair order\"). The hand-off "
                   "rows' ÷ exclusive pair compares a hand-off with a whole pair: read it as a "
                   "size, not a ratio of like things.")
            self.w()

    def strategy(self, who, variant):
        st = {}
        for r in self.lock_runs:
            if self.match(r, who, "handoff", r.get("n"), variant):
                st = r.get("settings", {})
                break
        if who == "redis-py":
            return f"poll SET NX every {st.get('poll_sleep_s', 0.1) * 1e3:.0f} ms ({variant})"
        if who == "node-redlock":
            return (f"retry every {st.get('retryDelay', 200)}±{st.get('retryJitter', 100)} ms "
                    f"({variant})")
        if who in HIREDIS_PEERS:
            conn = ("all on one connection" if who != "hiredis-watch"
                    else "a connection each")
            mx = st.get("sleep_max_ms", 5)
            if st.get("sleep_whole_ms", variant == "default"):
                return f"poll after a random 0–{mx:g} whole ms; {conn} ({variant})"
            return f"poll after a random 0–{mx:g} ms; {conn} ({variant})"
        if variant == "one-client":
            return "woken by the server, no polling; all waiters in one client (one connection)"
        if variant == "parked":
            return ("parked hand-off (ClientOptions::parked_handoff): the first waiter's block "
                    "waits in the server behind BZPOPMIN; one client (connection) each, plus a "
                    "parking connection")
        return "woken by the server, no polling; one client (connection) each"

    def resp(self):
        s = self.d["suites"].get("resp")
        if s is None:  # not requested (--suites)
            return
        self.w("## RESP parsing: lockwire vs hiredis")
        self.w()
        if s.get("status") != "ok":
            self.w(f"Not run ({s.get('status')}: {s.get('reason') or s.get('error', '')}).")
            self.w()
            return
        runs = s["runs"]
        keys = sorted({(r["payload"], r["chunk"]) for r in runs},
                      key=lambda k: (order(CHUNKS, k[1]), order(PAYLOADS, k[0]), k))
        self.w("Replies/s (median over repetitions, CPU time; Google Benchmark interleaves the "
               "contenders at random). hiredis = reply objects; fn=NULL = "
               "`redisReaderCreateWithFunctions(NULL)` (validates only).")
        self.w()
        self.w("| payload | chunk | lockwire | hiredis | hiredis fn=NULL | × hiredis | "
               "× fn=NULL | lockwire MB/s |")
        self.w("| --- | --- | --- | --- | --- | --- | --- | --- |")

        def vals(p, ch, c, key="items_per_sec"):
            return [r[key] for r in runs
                    if r["payload"] == p and r["chunk"] == ch and r["contender"] == c]
        for p, ch in keys:
            lw, hr, h0 = (vals(p, ch, c) for c in ("lockwire", "hiredis", "hiredis_fn_null"))
            mbs = [x / 1e6 for x in vals(p, ch, "lockwire", "bytes_per_sec") if num(x)]
            self.w(f"| {p} | {ch} | {cell(lw, '', 3 if False else None)} | {cell(hr)} | "
                   f"{cell(h0)} | {ratio(med(lw), med(hr))} | {ratio(med(lw), med(h0))} | "
                   f"{fmt(med(mbs))} |")
        self.w()

    def connection(self):
        s = self.d["suites"].get("connection")
        if s is None:  # not requested (--suites)
            return
        self.w("## Connection: PING round trip and pipelined throughput vs redis-benchmark")
        self.w()
        if s.get("status") != "ok":
            self.w(f"**{s.get('status')}** (`{' '.join(s.get('command', []))}`):")
            self.w()
            self.w("```")
            self.w((s.get("reason") or s.get("error") or "").strip())
            self.w("```")
            self.w()
            if not s.get("runs"):
                return
        runs = s["runs"]
        conts = []
        for r in runs:
            if r["contender"] not in conts:
                conts.append(r["contender"])
        conts.sort(key=lambda c: c != "lockwire")
        metrics = [m for m in CONN_METRICS if any(r["metric"] == m for r in runs)]
        metrics += sorted({r["metric"] for r in runs} - set(metrics))
        rb = [c for c in conts if c.startswith("redis-benchmark")] if "lockwire" in conts else []
        self.w("| " + " | ".join(["metric"] + conts + [f"lockwire ÷ {c}" for c in rb]) + " |")
        self.w("| --- |" + " --- |" * (len(conts) + len(rb)))
        for m in metrics:
            v = {c: [r["value"] for r in runs if r["contender"] == c and r["metric"] == m]
                 for c in conts}
            cells = [cell(v[c]) for c in conts] + [ratio(med(v["lockwire"]), med(v[c])) for c in rb]
            self.w(f"| {CONN_METRICS.get(m, m)} | " + " | ".join(cells) + " |")
        self.w()
        self.w("Targets (issue 3): PING p50 ratio ≤ 1.15; 128 in flight ≥ 0.90 of redis-benchmark. "
               "All on this run's server. bench_loop runs `redis-benchmark` itself (same number "
               "of requests) right before each repetition of its own, 3 repetitions per round; "
               "medians are over all repetitions of all rounds.")
        for n in s.get("notes", []):
            self.w(f"\n{n}.")
        self.w()

    def sim(self):
        s = self.d["suites"].get("sim")
        if s is None:  # not requested (--suites)
            return
        self.w("## Simulator: simulated commands/s and exploration seeds/s")
        self.w()
        if s.get("status") == "missing" or (s.get("status") != "ok" and not s.get("runs") and
                                            not s.get("explore", {}).get("runs")):
            self.w(f"Not run ({s.get('status')}: {s.get('reason') or s.get('error', '')}).")
            self.w()
        runs = [r for r in s.get("runs", []) if num(r.get("items_per_sec"))]
        if runs:
            self.w("`bench_sim` (Google Benchmark, CPU-bound, one core): simulated commands/s "
                   "through loop::Connection → simulated network → simulated Redis → back; "
                   "`/N` = N commands in flight.")
            self.w()
            self.w("| benchmark | simulated commands/s, median [min–max] |")
            self.w("| --- | --- |")
            names = []
            for r in runs:
                n = r.get("run_name") or r["name"]
                if n not in names:
                    names.append(n)
            for n in names:
                v = [r["items_per_sec"] for r in runs if (r.get("run_name") or r["name"]) == n]
                self.w(f"| {n} | {cell(v)} |")
            self.w()
        elif s.get("bench_sim", {}).get("status") not in (None, "ok"):
            b = s["bench_sim"]
            self.w(f"`bench_sim`: {b.get('status')} ({b.get('reason') or b.get('error', '')}).")
            self.w()
        e = s.get("explore")
        if e is None:
            return
        er = e.get("runs", [])
        if er:
            seeds = er[0].get("seeds")
            self.w(f"Exploration: `{' '.join(['lockwire-sim'] + e['command'][1:])}` "
                   f"({len(er)} run(s); each seed is a whole seeded fault scenario, every 50th "
                   "is run twice to check determinism):")
            self.w()
            self.w("| seeds/run | seeds/s (wall) | seeds per CPU-second | CPU ms/seed | "
                   "violations | nondeterministic |")
            self.w("| --- | --- | --- | --- | --- | --- |")
            cpu_ms = [1e3 * r["cpu_s"] / r["seeds"] for r in er
                      if num(r.get("cpu_s")) and r.get("seeds")]
            self.w(f"| {seeds} | {cell([r.get('seeds_per_sec') for r in er])} | "
                   f"{cell([r.get('seeds_per_cpu_sec') for r in er])} | {cell(cpu_ms)} | "
                   f"{sum(r.get('violations', 0) for r in er)} | "
                   f"{sum(r.get('nondeterministic', 0) for r in er)} |")
            self.w()
        if e.get("status") != "ok":
            self.w(f"Exploration **{e.get('status')}**: {e.get('reason') or ''}")
            if e.get("error"):
                self.w()
                self.w("```")
                self.w(e["error"].strip())
                self.w("```")
            self.w()

    # --- charts ---
    def charts_all(self):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.w("_Charts skipped: python3-matplotlib is not installed._")
            return
        self.plt = plt
        colors = {"lockwire": "#1b7837", "redis-py": "#2166ac", "node-redlock": "#b2182b",
                  "hiredis-lua": "#e08214", "hiredis-lua-fenced": "#8073ac",
                  "hiredis-watch": "#7f3b08",
                  "hiredis": "#2166ac", "hiredis_fn_null": "#92c5de", "redis-benchmark": "#777"}
        self.colors = colors
        for fn in (self.chart_serial, self.chart_handoff, self.chart_throughput, self.chart_resp):
            try:
                fn()
            except Exception as e:  # a chart must never lose the report
                self.w(f"_Chart {fn.__name__} failed: {type(e).__name__}: {e}_")
        plt.close("all")

    def pooled(self, who, mode, n, variant="default"):
        """All rounds' quantile points pooled: an approximate distribution for the CDF."""
        pts = []
        for r in self.lock_runs:
            if self.match(r, who, mode, n, variant):
                pts += [x for x in r.get("quantiles_us", []) if num(x)]
        return sorted(pts)

    def cdf(self, ax, who, mode, n, variant="default"):
        pts = self.pooled(who, mode, n, variant)
        if pts:
            ys = [(i + 0.5) / len(pts) for i in range(len(pts))]
            ax.plot(pts, ys, label=who if variant == "default" else f"{who} ({variant} polling)",
                    color=self.colors[who], linestyle="-" if variant == "default" else "--")
            return True
        if variant != "default":
            return False
        # Percentiles only (no quantile list): a CDF through min, p50, p90, p99, max.
        pct = [(q, med(self.lock(who, mode, n, "latency_us", k))) for q, k in
               ((0, "min"), (0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (1, "max"))]
        pct = [(q, x) for q, x in pct if x]
        if len(pct) >= 3:
            ax.plot([x for _, x in pct], [q for q, _ in pct], marker="o",
                    label=f"{who} ({'/'.join(k for k in ('min', 'p50', 'p90', 'p99', 'max'))})",
                    color=self.colors[who])
            return True
        mean = med(self.lock(who, mode, n, "latency_us", "mean"))
        if mean:
            ax.axvline(mean, color=self.colors[who], linestyle="-.", label=f"{who} (mean only)")
            return True
        return False

    def save(self, fig, suffix, title):
        path = f"{self.base}-{suffix}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        self.charts.append((title, os.path.basename(path)))

    def chart_serial(self):
        if not self.lock_runs:
            return
        fig, ax = self.plt.subplots(figsize=(7, 4))
        for c in CONTENDERS:
            if self.cdf(ax, c, "serial", 1) or c != "lockwire":
                continue
            v = med(self.us_per_pair(c))  # an older bench_lock: the mean only
            if v:
                ax.axvline(v, color=self.colors[c], linestyle="-.", label="lockwire (mean only)")
        _, rb_rtt = self.ping_rtt()
        rtt = med(self.lock("lockwire", "serial", 1, "ping_rtt_p50_us")) or med(rb_rtt)
        if rtt:
            ax.axvline(rtt, color="#777", linestyle=":", label="PING RTT (p50)")
            ax.axvline(2 * rtt, color="#bbb", linestyle=":", label="2 × PING RTT (p50)")
        ax.set_xscale("log")
        ax.set_xlabel("acquire+release latency per pair (µs, log)")
        ax.set_ylabel("fraction of pairs")
        ax.set_title("Uncontended serial pairs: latency CDF")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        self.save(fig, "lock-serial", "Serial pairs: latency CDF")

    def chart_handoff(self):
        if not self.lock_runs:
            return
        fig, axes = self.plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, n in zip(axes, (8, 64)):
            for c in PEERS:
                self.cdf(ax, c, "handoff", n)
                self.cdf(ax, c, "handoff", n, "tuned")
            if not self.cdf(ax, "lockwire", "handoff", n):
                lw = med(self.lock("lockwire", "handoff", 1, "latency_us", "mean"))
                if lw:
                    ax.axvline(lw, color=self.colors["lockwire"], linestyle="-.",
                               label="lockwire (1 waiter, mean)")
            ax.set_xscale("log")
            ax.set_xlabel("release → next holder (µs, log)")
            ax.set_title(f"{n} waiters")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        axes[0].set_ylabel("fraction of hand-offs")
        fig.suptitle("Contended hand-off latency CDF")
        self.save(fig, "lock-handoff", "Contended hand-off: latency CDF")

    def chart_throughput(self):
        if not self.lock_runs:
            return
        fig, ax = self.plt.subplots(figsize=(8, 4))
        users = (1, 16, 256)
        shown = [c for c in CONTENDERS
                 if any(self.lock(c, "throughput", n, "ops_per_sec") for n in users)]
        width = 0.8 / max(len(shown), 1)
        for i, c in enumerate(shown):
            meds, lo, hi = [], [], []
            for n in users:
                v = self.lock(c, "throughput", n, "ops_per_sec")
                m = med(v) or 0
                a, b = spread(v)
                meds.append(m)
                lo.append(m - (a or m))
                hi.append((b or m) - m)
            xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(users))]
            ax.bar(xs, meds, width, yerr=[lo, hi], label=c, color=self.colors[c], capsize=3)
        ax.set_xticks(range(len(users)), [f"{n} user{'s' if n > 1 else ''}" for n in users])
        ax.set_yscale("log")
        ax.set_ylabel("acquire+release pairs/s (log)")
        ax.set_title("Throughput over many resources, one process (median, min–max)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        self.save(fig, "lock-throughput", "Throughput: pairs/s for 1/16/256 users")

    def chart_resp(self):
        s = self.d["suites"].get("resp", {})
        if s.get("status") != "ok":
            return
        runs = s["runs"]
        chunks = sorted({r["chunk"] for r in runs}, key=lambda c: (order(CHUNKS, c), c))
        fig, axes = self.plt.subplots(1, len(chunks), figsize=(6 * len(chunks), 4.5))
        if len(chunks) == 1:
            axes = [axes]
        cont = ["lockwire", "hiredis", "hiredis_fn_null"]
        for ax, ch in zip(axes, chunks):
            payloads = sorted({r["payload"] for r in runs if r["chunk"] == ch},
                              key=lambda p: (order(PAYLOADS, p), p))
            width = 0.27
            for i, c in enumerate(cont):
                m = [med([r["bytes_per_sec"] / 1e6 for r in runs if r["chunk"] == ch and
                          r["payload"] == p and r["contender"] == c and
                          num(r.get("bytes_per_sec"))]) or 0 for p in payloads]
                ax.bar([j + (i - 1) * width for j in range(len(payloads))], m, width,
                       label=c.replace("_fn_null", " fn=NULL"), color=self.colors[c])
            ax.set_xticks(range(len(payloads)), payloads, rotation=30, ha="right", fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel("MB/s parsed (log)")
            ax.set_title(f"fed in {ch} chunks")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle("RESP parsing throughput (median)")
        self.save(fig, "resp", "RESP parsing: MB/s per payload")

    def summary(self):
        """The headline rows (what the README shows): lockwire against the best peer
        configuration of each row (for hand-off: default or tuned polling, whichever is
        better), with rows where lockwire is not ahead flagged."""
        if not self.lock_runs:
            return
        present = [c for c in CONTENDERS if any(r["contender"] == c for r in self.lock_runs)]
        peers = [p for p in PEERS if p in present]
        self.w("## Summary")
        self.w()
        self.w("| row | " + " | ".join(present) + " | best peer configuration | "
               "lockwire vs best peer |")
        self.w("| --- |" + " --- |" * (len(present) + 2))
        behind = []

        def row(label, lw, peer_vals, higher_better, unit="", digits=None):
            """peer_vals: {peer: [(config, values)]}; every configuration competes."""
            lw_m = med(lw)
            cands = [(med(v), p, cfg) for p, cfgs in peer_vals.items() for cfg, v in cfgs
                     if med(v)]
            best = (max if higher_better else min)(cands, key=lambda t: t[0]) if cands else None
            cells = []
            for c in present:
                if c == "lockwire":
                    cells.append(fmt(lw_m, unit, digits))
                    continue
                cfgs = peer_vals.get(c, [])
                vals = [fmt(med(v), unit, digits) for _, v in cfgs]
                cells.append(" / ".join(vals) if vals else "–")
            if best:
                who = f"{best[1]}" + (f", {best[2]}" if best[2] else "")
            else:
                who = "–"
            if lw_m and best:
                r = lw_m / best[0] if higher_better else best[0] / lw_m
                if r >= 1:
                    verdict = f"{r:.2f}× better"
                else:
                    verdict = f"**{r:.2f}× — not ahead**"
                    behind.append(label)
            else:
                verdict = "–"
            self.w(f"| {label} | " + " | ".join(cells) + f" | {who} | {verdict} |")

        def one(mode, n, key, sub=None):
            return {p: [("", self.lock(p, mode, n, key, sub))] for p in peers}

        row("serial pair, µs (lower is better)", self.us_per_pair("lockwire"),
            {p: [("", self.us_per_pair(p))] for p in peers}, False)
        for n in (1, 16, 256):
            row(f"pairs/s, {n} user{'s' if n > 1 else ''}",
                self.lock("lockwire", "throughput", n, "ops_per_sec"),
                one("throughput", n, "ops_per_sec"), True)
        row("client CPU µs/pair, 16 users", self.lock("lockwire", "throughput", 16,
                                                      "cpu_us_per_op"),
            one("throughput", 16, "cpu_us_per_op"), False)
        if self.lock("lockwire", "serial", 1, "server_cpu_us_per_op"):
            row("server CPU µs/pair, serial", self.lock("lockwire", "serial", 1,
                                                        "server_cpu_us_per_op"),
                one("serial", 1, "server_cpu_us_per_op"), False)
            row("server CPU µs/pair, 16 users", self.lock("lockwire", "throughput", 16,
                                                          "server_cpu_us_per_op"),
                one("throughput", 16, "server_cpu_us_per_op"), False)
        # Without fencing tokens (ClientOptions::fencing_tokens = false), against the same
        # peers: the unfenced Lua lock gives no token either.
        if self.lock("lockwire", "throughput", 16, "ops_per_sec", None, "untokened"):
            for n in (16, 256):
                row(f"pairs/s, {n} users — lockwire without fencing tokens",
                    self.lock("lockwire", "throughput", n, "ops_per_sec", None, "untokened"),
                    one("throughput", n, "ops_per_sec"), True)
            row("server CPU µs/pair, 16 users — lockwire without fencing tokens",
                self.lock("lockwire", "throughput", 16, "server_cpu_us_per_op", None,
                          "untokened"),
                one("throughput", 16, "server_cpu_us_per_op"), False)
            row("client CPU µs/pair, 16 users — lockwire without fencing tokens",
                self.lock("lockwire", "throughput", 16, "cpu_us_per_op", None, "untokened"),
                one("throughput", 16, "cpu_us_per_op"), False)
        for n in (8, 64):
            lw = self.lock("lockwire", "handoff", n, "latency_us", "p50")
            label = f"hand-off p50 µs, {n} waiters (lockwire: a connection each)"
            if not lw:
                lw = self.lock("lockwire", "handoff", 1, "latency_us", "mean")
                label += " (lockwire: 1 waiter, mean)"
            pv = {p: [(f"{v} ({self.strategy(p, v).split(' (')[0]})",
                       self.lock(p, "handoff", n, "latency_us", "p50", v))
                      for v in ("default", "tuned")
                      if self.lock(p, "handoff", n, "latency_us", "p50", v)] for p in peers}
            row(label, lw, pv, False)
            parked_lw = self.lock("lockwire", "handoff", n, "latency_us", "p50", "parked")
            if parked_lw:
                row(f"hand-off p50 µs, {n} waiters (lockwire parked: a connection each)",
                    parked_lw, pv, False)
            one_lw = self.lock("lockwire", "handoff", n, "latency_us", "p50", "one-client")
            if one_lw:
                row(f"hand-off p50 µs, {n} waiters (lockwire: one connection)", one_lw, pv,
                    False)
        self.w()
        self.w("Each row compares lockwire with the best peer configuration measured for it "
               "(medians of this run). Hand-off rows: peer cells are default / tuned polling, "
               "and both compete; lockwire is measured with a client (connection) per waiter, as "
               "separate processes would have, and with all waiters in one client on one "
               "connection, as node-redlock's waiters share one ioredis connection.")
        if behind:
            self.w()
            self.w("**lockwire is not ahead on: " + "; ".join(behind) + ".**")
        self.w()

    def build(self, charts):
        self.header()
        self.summary()
        self.locks()
        self.resp()
        self.connection()
        self.sim()
        if charts:
            body = self.lines
            self.lines = []
            self.charts_all()
            extra = self.lines
            self.lines = body
            if self.charts or extra:
                self.w("## Charts")
                self.w()
                for title, f in self.charts:
                    self.w(f"![{title}]({f})")
                    self.w()
                self.lines += extra
        return "\n".join(self.lines).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--no-charts", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.result) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print(f"report: {a.result}: not readable JSON: {e}", file=sys.stderr)
        return 1
    errs = check(d)
    for e in errs:
        print(f"report: {a.result}: {e}", file=sys.stderr)
    if a.check_only or not isinstance(d, dict) or not isinstance(d.get("suites"), dict) or \
            any(k not in d for k in ("machine", "versions", "server", "started", "command")):
        return 1 if errs else 0
    try:
        md = Report(d, a.result).build(not a.no_charts)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        print(f"report: {a.result}: cannot render: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    out = os.path.splitext(a.result)[0] + ".md"
    with open(out, "w") as f:
        f.write(md)
    print(f"report: wrote {out}" + (f" ({len(errs)} problem(s) in the JSON)" if errs else ""),
          file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
