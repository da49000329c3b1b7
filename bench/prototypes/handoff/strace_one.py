#!/usr/bin/env python3
# One hand-off (H holds, W blocked with BLPOP + acquire pipelined, H releases) for strace.
import socket, sys, time
sys.argv = [sys.argv[0], sys.argv[1]]
exec(open(__file__.replace("strace_one.py", "mech.py")).read().split("a = conn()")[0])
a = conn(); a.sendall(enc("DEL", "P{R}", "P{R}:fence", "P{R}:wake")); recv_for(a, 0.05)
h = conn(); w = conn()
h.sendall(acquire("h")); recv_for(h, 0.05)
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w")); recv_for(w, 0.1)
time.sleep(0.3)
h.sendall(release("h"))
print(w.recv(65536)); print(recv_for(h, 0.05))
time.sleep(0.3)
