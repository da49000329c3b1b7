#!/usr/bin/env python3
# How late does a BLPOP timeout fire on an otherwise idle server? Usage: timeout_precision.py PORT
import socket, sys, time
sys.argv = [sys.argv[0], sys.argv[1]]
exec(open(__file__.replace("timeout_precision.py", "mech.py")).read().split("a = conn()")[0])
w = conn()
for t in ("0.01", "0.05", "0.123", "0.2"):
    late = []
    for i in range(10):
        t0 = time.monotonic()
        w.sendall(enc("BLPOP", "P{R}:nothing", t))
        w.settimeout(2); w.recv(100)
        late.append((time.monotonic() - t0 - float(t)) * 1000)
    late.sort()
    print(f"BLPOP timeout {t}s: lateness ms min {late[0]:.1f} median {late[5]:.1f} max {late[-1]:.1f}")
