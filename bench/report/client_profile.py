#!/usr/bin/env python3
"""Where a pair's client time goes (issue #30): lockwire against the hiredis Lua lock at the same
concurrency, on one private redis-server. The sibling of breakdown.py, which does the server.

Usage: bench/report/client_profile.py [--users N] [--seconds S] [--rounds R] [--bin DIR]

Two measurements per contender, both divided by the pairs the server saw (lockwire: HDEL calls,
its release; the Lua lock: SET calls, its acquire):
  1. Where the CPU time goes, user space against the kernel: `perf record -e cpu-clock` (a
     software clock, so it works in a VM without a PMU) with one sample per 100 µs of CPU,
     split by the object each sample fell in. Rounds alternated; medians.
  2. Why, from the executed code: one run under callgrind with its cache and branch models
     (--cache-sim=yes --branch-sim=yes; the model's caches are the machine's, printed below):
     instructions, L1i misses, L1d misses, mispredicted branches per pair, and the code
     footprint: the distinct 64-byte lines of code that run at least once per pair on average
     (read from --dump-instr=yes), against the L1i's size. Counted inside the event loop's turns
     only (--toggle-collect), so start-up is left out.
callgrind simulates one process: the server's code, which shares the cores, is not in it.
Prints a Markdown table. No timing assertions: compare the contenders of one run.
Needs perf (Debian: linux-perf) and valgrind; installs them when missing.
"""
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import stats_delta  # noqa: E402  (the harness's own pieces)
from profiling import arguments, private_redis, throughput_run  # noqa: E402

SAMPLE_NS = 100_000  # perf: one cpu-clock sample per 100 µs of CPU time
LINE = 64            # bytes per cache line
# The contenders, by the lock throughput_run runs.
LOCK = {"lockwire": "lockwire", "hiredis-lua": "lua"}


def ensure_tools():
    missing = [p for t, p in (("perf", "linux-perf"), ("valgrind", "valgrind"))
               if shutil.which(t) is None]
    if missing:
        subprocess.run(["scripts/deps.sh", *missing], check=True)


PAIR_CMD = {"lockwire": "hdel", "hiredis-lua": "set"}
# callgrind counts only inside each program's event-loop turn, so that start-up (the dynamic
# linker's relocations, a loop of thousands) is not taken for per-pair code.
# lockwire's turn is libuv's uv_run, which UvLoop::run_once calls (an LTO build may inline
# run_once away).
LOOP_TURN = {"lockwire": "uv_run",
             "hiredis-lua": "(anonymous namespace)::Loop::run_once*"}


def pairs_of(r, name, run):
    """Runs `run` between two commandstats readings; the pairs the server saw."""
    r.call("FLUSHALL")
    before = r.commandstats()
    run()
    n = stats_delta(before, r.commandstats()).get(PAIR_CMD[name], 0)
    if n == 0:
        raise RuntimeError(f"{name}: the server saw no {PAIR_CMD[name].upper()}")
    return n


def perf_split(a, name, port, r, tmp):
    """(user µs, kernel µs) of client CPU per pair, from perf's cpu-clock samples."""
    data = os.path.join(tmp, f"{name}.perf")
    argv, env = throughput_run(a, LOCK[name], port)
    n = pairs_of(r, name, lambda: subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(SAMPLE_NS), "-o", data, *argv],
        env=env, check=True, capture_output=True, timeout=120 + 4 * a.seconds))
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso", "-F",
                          "sample,dso"], capture_output=True, text=True, check=True).stdout
    kernel = user = 0
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit():
            if f[1].startswith("[kernel"):
                kernel += int(f[0])
            else:
                user += int(f[0])
    us = SAMPLE_NS / 1000
    return user * us / n, kernel * us / n


def callgrind(a, name, port, r, tmp):
    """Per pair: instructions, L1i misses, L1d misses, mispredicts, footprint lines."""
    out = os.path.join(tmp, f"{name}.cg")
    argv, env = throughput_run(a, LOCK[name], port)
    n = pairs_of(r, name, lambda: subprocess.run(
        ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
         "--dump-instr=yes", "--dump-line=no", f"--toggle-collect={LOOP_TURN[name]}",
         f"--callgrind-out-file={out}", *argv],
        env=env, check=True, capture_output=True, timeout=600 + 60 * a.seconds))
    events, totals, lines, l1i = read_callgrind(out)
    t = dict(zip(events, totals))
    hot = {k for k, v in lines.items() if v >= 0.5 * n}
    by_object = collections.Counter(os.path.basename(o) for o, _ in hot)
    return {"pairs": n, "ir": t["Ir"] / n, "i1": t["I1mr"] / n,
            "d1": (t["D1mr"] + t["D1mw"]) / n, "bm": (t["Bcm"] + t["Bim"]) / n,
            "lines": len(hot), "l1i": l1i, "by_object": dict(by_object.most_common(4))}


def read_callgrind(path):
    """(event names, program totals, {(object, code line): most runs of one instruction in it},
    the model's L1i)
    from a callgrind profile written with --dump-instr=yes --dump-line=no (self costs; the cost
    line after a calls= line is the call's inclusive cost and is skipped)."""
    names, obj, pos, skip = {}, None, 0, False
    events, totals, l1i = [], [], "?"
    runs = collections.Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("desc: I1 cache:"):
                l1i = line.split(":", 2)[2].strip()
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            if line.startswith("summary:") or line.startswith("totals:"):
                totals = [int(x) for x in line.split()[1:]]
                continue
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                key, idx, name = m.groups()
                if name:
                    names[idx] = name
                if key == "ob":
                    obj = names.get(idx)
                continue
            if line.startswith("calls="):
                skip = True
                continue
            if line[0] not in "0123456789+-*":
                continue
            parts = line.split()
            p = parts[0]
            if p.startswith("0x"):
                pos = int(p, 16)
            elif p[0] in "+-":
                step = int(p[1:], 16) if p[1:].startswith("0x") else int(p[1:])
                pos += step if p[0] == "+" else -step
            if skip:
                skip = False
                continue
            if len(parts) > 1 and obj is not None:
                runs[(obj, pos)] += int(parts[1])
    lines = collections.defaultdict(int)
    for (o, addr), v in runs.items():
        k = (o, addr // LINE)
        lines[k] = max(lines[k], v)
    return events, totals, lines, l1i


def main():
    a = arguments(__doc__)
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ensure_tools()
    tmp = tempfile.mkdtemp(prefix="lockwire-client-profile.")
    try:
        with private_redis() as (port, r):
            names = list(PAIR_CMD)
            split = {n: [] for n in names}
            for rnd in range(a.rounds):
                for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                    split[name].append(perf_split(a, name, port, r, tmp))
            model = {n: callgrind(a, n, port, r, tmp) for n in names}
            report(a, split, model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(a, split, model):
    med = statistics.median
    print(f"Client CPU per pair at {a.users} users, one redis-server; perf: median of {a.rounds} "
          f"alternated round(s) of {a.seconds:g} s; callgrind: one run each.\n")
    print("| contender | user µs | kernel µs | instructions | L1i misses | L1d misses |"
          " mispredicted branches | code run per pair: 64-B lines (KiB) | by object |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in split:
        u = med([s[0] for s in split[name]])
        k = med([s[1] for s in split[name]])
        m = model[name]
        objs = ", ".join(f"{o} {c}" for o, c in m["by_object"].items())
        print(f"| {name} | {u:.2f} | {k:.2f} | {m['ir']:,.0f} | {m['i1']:.0f} | {m['d1']:.0f} |"
              f" {m['bm']:.0f} | {m['lines']} ({m['lines'] * LINE / 1024:.1f}) | {objs} |")
    print("\nUser µs and kernel µs: perf's cpu-clock samples (which include perf's own cost)."
          " The rest: callgrind's model over one run (" +
          ", ".join(f"{n}: {m['pairs']:,} pairs" for n, m in model.items()) +
          f"); the model's L1i: {next(iter(model.values()))['l1i']}.")
    print(json.dumps({"split": split, "model": model}), file=sys.stderr)


if __name__ == "__main__":
    main()
