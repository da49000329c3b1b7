"""What the one-off profiling scripts (breakdown.py, client_profile.py) share: their arguments
and a private redis-server (a free loopback port, persistence off, stopped on exit).
bench/run.sh starts its own servers."""
import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect import Redis  # noqa: E402  (the harness's own client)


def arguments(doc):
    """The scripts' common options: users, seconds per run, rounds, where the binaries are."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default="build/release/bin")
    return ap.parse_args()


def throughput_run(a, lock, port):
    """The command line and environment of one throughput row at a.users: lockwire's
    (bench_lock's throughput row, no PING floor) or a bench_hiredis_peers lock's ("lua",
    "lua-fenced"). bench_lock prints a table row, the peers one JSON object."""
    if lock == "lockwire":
        env = dict(os.environ, LOCKWIRE_BENCH_ROWS="throughput",
                   LOCKWIRE_BENCH_USERS=str(a.users), LOCKWIRE_BENCH_FLOOR="0")
        return [f"{a.bin}/bench_lock", f"redis://127.0.0.1:{port}", str(a.seconds)], env
    return [f"{a.bin}/bench_hiredis_peers", "--lock", lock, "--port", str(port), "--mode",
            "throughput", "--users", str(a.users), "--duration", str(a.seconds)], dict(os.environ)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def private_redis():
    """Yields (port, Redis client) of a redis-server that answers PING; stops it after."""
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port),
                            "--save", "", "--appendonly", "no"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = Redis(port)
        for _ in range(100):
            try:
                r.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        yield port, r
    finally:
        srv.terminate()
        srv.wait(timeout=10)
