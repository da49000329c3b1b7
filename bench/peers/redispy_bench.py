#!/usr/bin/python3
"""redis-py Lock acquire+release benchmark; prints one JSON object.

  redispy_bench.py --port P [--host 127.0.0.1] --mode serial|throughput|handoff
                   [--users N] [--waiters N] [--duration S] [--pairs N] [--handoffs N]
                   [--ttl S] [--sleep S] [--hold MS]

serial:     one caller, redis.lock.Lock acquire+release pairs back to back on one resource.
throughput: N threads on N distinct resources sharing one redis.Redis client (its connection
            pool opens one connection per concurrently busy thread: that is how redis-py runs
            concurrent callers; the GIL serialises the Python side).
handoff:    waiters+1 threads on one resource; each holds for --hold ms, releases, and rejoins the
            waiters after the next grant (plus a random arrival delay within one polling
            interval); the hand-off latency is the time from a holder starting
            its release until the next thread holds. Waiters poll as redis-py's blocking acquire
            does (sleep between SET NX attempts; redis-py's default 0.1 s unless --sleep).
Client CPU is time.process_time() (all threads, user+system) over the measured interval / pairs.
"""
import argparse
import json
import os
import random
import sys
import threading
import time

import redis
from redis.lock import Lock


def summarize(samples):
    s = sorted(samples)
    n = len(s)
    if n == 0:
        return {"latency_us": {"n": 0}, "quantiles_us": []}

    def q(p):
        x = p * (n - 1)
        lo, hi = int(x), min(int(x) + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (x - lo)

    return {
        "latency_us": {"n": n, "mean": sum(s) / n, "min": s[0], "p50": q(0.5), "p90": q(0.9),
                       "p99": q(0.99), "max": s[-1]},
        "quantiles_us": [round(q(i / 100), 2) for i in range(101)],
    }


def now_us():
    return time.perf_counter_ns() / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--mode", choices=["serial", "throughput", "handoff"], default="serial")
    ap.add_argument("--users", type=int, default=1)
    ap.add_argument("--waiters", type=int, default=8)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--pairs", type=int, default=0)
    ap.add_argument("--handoffs", type=int, default=20)
    ap.add_argument("--ttl", type=float, default=10.0, help="lock timeout, seconds")
    ap.add_argument("--sleep", type=float, default=None, help="polling interval of waiters, s")
    ap.add_argument("--hold", type=float, default=2.0, help="hand-off: hold time, ms")
    ap.add_argument("--prefix", default="lwbench:redispy:")
    a = ap.parse_args()
    if a.users < 1 or a.waiters < 1 or a.duration <= 0 or a.pairs < 0 or a.handoffs < 1:
        ap.error("users, waiters, handoffs must be >= 1; duration > 0; pairs >= 0")

    client = redis.Redis(host=a.host, port=a.port, max_connections=max(a.users, a.waiters + 1) + 4)
    client.ping()
    # Counts the commands this client sends (Lock calls go through execute_command); by_name
    # counts the whole process, so that collect.py can tell them from those the scripts call.
    sent = [0]
    by_name = {}
    send = client.execute_command

    def counting(*args, **kw):
        sent[0] += 1
        name = str(args[0]).split()[0].lower() if args else "?"
        by_name[name] = by_name.get(name, 0) + 1
        return send(*args, **kw)

    client.execute_command = counting
    lock_kwargs = {"timeout": a.ttl}
    if a.sleep is not None:
        lock_kwargs["sleep"] = a.sleep
    poll = lock_kwargs.get("sleep", Lock(client, "probe").sleep)

    # Warm-up: registers the release script (EVALSHA) and fills the pool.
    for _ in range(50):
        lk = Lock(client, a.prefix + "warm", **lock_kwargs)
        lk.acquire(blocking=False)
        lk.release()

    samples = []
    ops = 0
    lock_ops = threading.Lock()
    sent[0] = 0
    cpu0 = time.process_time()
    t0 = now_us()
    end = t0 + a.duration * 1e6

    def pair(name):
        lk = Lock(client, name, **lock_kwargs)
        if not lk.acquire(blocking=False):
            raise RuntimeError(f"uncontended acquire of {name} failed")
        lk.release()

    if a.mode == "serial":
        name = a.prefix + "serial"
        while (ops < a.pairs) if a.pairs else (now_us() < end):
            s = now_us()
            pair(name)
            samples.append(now_us() - s)
            ops += 1
    elif a.mode == "throughput":
        errors = []

        def user(u):
            nonlocal ops
            name = f"{a.prefix}tp:{u}"
            mine = []
            try:
                while True:
                    with lock_ops:
                        if (ops >= a.pairs) if a.pairs else (now_us() >= end):
                            break
                    s = now_us()
                    pair(name)
                    mine.append(now_us() - s)
                    with lock_ops:
                        ops += 1
            except Exception as e:  # reported below, not swallowed
                errors.append(e)
            with lock_ops:
                samples.extend(mine)

        threads = [threading.Thread(target=user, args=(u,)) for u in range(a.users)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        # A fresh resource per run: threads still waiting at the end are abandoned (daemons).
        name = f"{a.prefix}handoff:{os.getpid()}:{time.time_ns()}"
        cond = threading.Condition()
        state = {"release_started": None, "grants": 0, "done": False}
        finished = threading.Event()
        errors = []

        def arrive():
            # Waiters arrive, and rejoin after a grant, at random points within one polling
            # interval, so their polling phases are independent (as for separate clients).
            time.sleep(random.uniform(0, poll))

        def contender():
            nonlocal ops
            try:
                arrive()
                while True:
                    lk = Lock(client, name, **lock_kwargs)
                    lk.acquire()  # blocking: SET NX, then sleep `poll`, retry
                    got = now_us()
                    with cond:
                        if state["done"]:
                            return
                        state["grants"] += 1
                        mine = state["grants"]
                        cond.notify_all()
                        if state["release_started"] is not None:
                            samples.append(got - state["release_started"])
                            ops += 1
                        state["done"] = ops >= a.handoffs or got >= end
                        done = state["done"]
                    if not done:
                        time.sleep(a.hold / 1e3)
                    with cond:
                        state["release_started"] = now_us()
                    lk.release()
                    if done:
                        finished.set()
                        return
                    # Rejoin as a fresh waiter only after the next grant (no barging).
                    with cond:
                        cond.wait_for(lambda: state["grants"] > mine or state["done"])
                    arrive()
            except Exception as e:
                errors.append(e)
                finished.set()

        for _ in range(a.waiters + 1):
            threading.Thread(target=contender, daemon=True).start()
        finished.wait()
        if errors:
            raise errors[0]

    seconds = (now_us() - t0) / 1e6
    cpu = time.process_time() - cpu0
    commands = sent[0]
    with lock_ops:
        snap = list(samples)
    out = {
        "contender": "redis-py",
        "library": f"redis-py {redis.__version__} Lock",
        "runtime": f"python {sys.version.split()[0]}",
        "mode": a.mode,
        "users": a.users if a.mode == "throughput" else 1,
        "waiters": a.waiters if a.mode == "handoff" else 0,
        "connections": len(client.connection_pool._available_connections)
        + len(client.connection_pool._in_use_connections),
        "ops": ops,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "ops_per_sec": ops / seconds,
        "cpu_us_per_op": cpu * 1e6 / ops if ops else None,
        "commands_sent": commands,
        "commands_per_op": commands / ops if ops else None,
        "commands_by_name": dict(by_name),
        "settings": {"ttl_s": a.ttl, "poll_sleep_s": poll,
                     **({"hold_ms": a.hold} if a.mode == "handoff" else {})},
        **summarize(snap),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # abandons hand-off waiters still polling


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one clear line, non-zero exit
        sys.stderr.write(f"redispy_bench: {type(e).__name__}: {e}\n")
        sys.exit(1)
