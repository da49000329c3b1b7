#!/usr/bin/env python3
"""Where a pair's server time goes, command by command (issue #30): lockwire against the hiredis
Lua locks at the same concurrency, on one private redis-server, rounds alternated.

Usage: bench/report/breakdown.py [--users N] [--seconds S] [--rounds R] [--bin DIR]

For each contender and round: `INFO cpu` and `INFO commandstats` before and after one
throughput run (bench_lock's throughput row; bench_hiredis_peers --mode throughput), divided
by the pairs the server saw (lockwire: HDEL calls, its release; the Lua locks: SET calls, their
acquire, inside the script or not). A wrapper's own time is its usec less that of the commands
it ran (EXEC: the queued commands; EVALSHA: the commands its script called), which commandstats
also lists under their own names. Prints a Markdown table of medians. No timing assertions:
figures depend on the machine; compare the contenders of one run.
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import SETUP_CMDS, stats_delta  # noqa: E402  (the harness's own pieces)
from profiling import arguments, private_redis, throughput_run  # noqa: E402

# Left out of a pair's cost: the harness's set-up commands, lockwire's connect probe (TIME, the
# notice's HMGET) and the peers' SCRIPT LOAD.
SETUP = SETUP_CMDS | {"script", "time", "hmget"}



def delta(a, b):
    """CPU seconds, {command: calls} and {command: usec} between two Redis.cost() readings."""
    calls = stats_delta(a[1], b[1])
    return b[0] - a[0], calls, {k: b[2][k] - a[2].get(k, 0) for k in calls}


def run(a, lock, port):
    """One throughput row: (pairs/s, client CPU µs per pair)."""
    argv, env = throughput_run(a, lock, port)
    out = subprocess.run(argv, env=env, capture_output=True, text=True,
                         timeout=120 + 4 * a.seconds, check=True)
    if lock != "lockwire":
        d = json.loads(out.stdout.strip().splitlines()[-1])
        return d["ops_per_sec"], d["cpu_us_per_op"]
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == str(a.users):
            return float(f[1]), float(f[3])  # pairs/s, client CPU us/pair
    raise RuntimeError("bench_lock printed no row:\n" + out.stdout[-2000:])


def main():
    a = arguments(__doc__)
    with private_redis() as (port, r):
        # name: (the command counted once per pair, the wrapper, the commands run inside it, run)
        contenders = {
            "lockwire": ("hdel", "exec", {"hsetnx", "hlen", "pexpire", "zadd"},
                         lambda: run(a, "lockwire", port)),
            "hiredis-lua": ("set", "evalsha", {"get", "del"}, lambda: run(a, "lua", port)),
            "hiredis-lua-fenced": ("set", "evalsha", {"set", "incr", "get", "del"},
                                   lambda: run(a, "lua-fenced", port)),
        }
        rows = {name: [] for name in contenders}
        names = list(contenders)
        for rnd in range(a.rounds):
            for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                pair_cmd, wrapper, inner, go = contenders[name]
                r.call("FLUSHALL")
                before = r.cost()
                rate, cli = go()
                cpu, calls, usec = delta(before, r.cost())
                pairs = calls.get(pair_cmd, 0)
                if pairs == 0:
                    raise RuntimeError(f"{name}: the server saw no {pair_cmd.upper()}")
                per = {k: (calls[k] / pairs, usec[k] / pairs) for k in calls
                       if k.split("|")[0] not in SETUP}
                # The wrapper's own time: commandstats counts the commands it ran twice.
                n, u = per[wrapper]
                per[wrapper + " (own)"] = (n, u - sum(per[c][1] for c in inner if c in per))
                del per[wrapper]
                rows[name].append({"rate": rate, "cli": cli, "cpu": cpu * 1e6 / pairs,
                                   "per": per})
        report(rows, a)


def med(xs):
    return statistics.median(xs) if xs else 0.0


def report(rows, a):
    print(f"Per pair at {a.users} users, median of {a.rounds} round(s), "
          f"{a.seconds:g} s each; one redis-server, rounds alternated.\n")
    print("| contender | pairs/s | client CPU µs | server CPU µs | command µs (commandstats) |"
          " commands run |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, rs in rows.items():
        cmd_us = med([sum(u for _, u in r["per"].values()) for r in rs])
        ncmd = med([sum(n for n, _ in r["per"].values()) for r in rs])
        print(f"| {name} | {med([r['rate'] for r in rs]):,.0f} | {med([r['cli'] for r in rs]):.2f}"
              f" | {med([r['cpu'] for r in rs]):.2f} | {cmd_us:.2f} | {ncmd:.1f} |")
    print("\nBy command: µs per pair (calls per pair). A wrapper's row is its own time: its usec "
          "less that of the commands it ran, which have rows of their own.\n")
    cmds = sorted({c for rs in rows.values() for r in rs for c in r["per"]})
    print("| command | " + " | ".join(rows) + " |")
    print("| --- |" + " --- |" * len(rows))
    for c in cmds:
        cells = []
        for rs in rows.values():
            got = [r["per"][c] for r in rs if c in r["per"]]
            cells.append(f"{med([u for _, u in got]):.2f} ({med([n for n, _ in got]):.2f})"
                         if got else "–")
        print(f"| {c} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
