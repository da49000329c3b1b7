#!/usr/bin/env python3
# Barging window: H's release and a non-blocked B's acquire reach Redis in the same epoll batch
# (server stopped with SIGSTOP while both are sent, then SIGCONT). Usage: barge.py PORT REDIS_PID
import os, signal, socket, sys, time
PID = int(sys.argv[2])
sys.argv = [sys.argv[0], sys.argv[1]]
exec(open(__file__.replace("barge.py", "mech.py")).read().split("a = conn()")[0])
a = conn(); a.sendall(enc("DEL", "P{R}", "P{R}:fence", "P{R}:wake")); recv_for(a, 0.05)
h = conn(); w = conn(); b = conn()
h.sendall(acquire("h")); recv_for(h, 0.05)
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w")); recv_for(w, 0.1)
os.kill(PID, signal.SIGSTOP)
h.sendall(release("h"))
time.sleep(0.01)
b.sendall(acquire("b"))
time.sleep(0.05)
os.kill(PID, signal.SIGCONT)
print("W:", recv_for(w, 0.2))
print("B:", recv_for(b, 0.1))
print("HGETALL:", cmd(a, "HGETALL", "P{R}"))
a.sendall(enc("DEL", "P{R}", "P{R}:fence", "P{R}:wake")); recv_for(a, 0.05)
