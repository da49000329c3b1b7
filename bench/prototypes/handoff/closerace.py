#!/usr/bin/env python3
# Cancel-by-close race: W closes its blocked connection and H releases in the same event-loop
# batch (server SIGSTOPped while both happen). Is the wake token lost? Usage: closerace.py PORT PID
import os, signal, socket, sys, time
PID = int(sys.argv[2])
sys.argv = [sys.argv[0], sys.argv[1]]
exec(open(__file__.replace("closerace.py", "mech.py")).read().split("a = conn()")[0])
a = conn()
for order in ("close-then-release", "release-then-close"):
    a.sendall(enc("DEL", "P{R}", "P{R}:fence", "P{R}:wake")); recv_for(a, 0.05)
    h = conn(); w = conn()
    h.sendall(acquire("h")); recv_for(h, 0.05)
    w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w")); recv_for(w, 0.1)
    os.kill(PID, signal.SIGSTOP)
    if order == "close-then-release":
        w.close(); time.sleep(0.01); h.sendall(release("h"))
    else:
        h.sendall(release("h")); time.sleep(0.01); w.close()
    time.sleep(0.05)
    os.kill(PID, signal.SIGCONT)
    recv_for(h, 0.1)
    print(order, "HGETALL:", cmd(a, "HGETALL", "P{R}"), "LLEN wake:", cmd(a, "LLEN", "P{R}:wake"))
    h.close()
a.sendall(enc("DEL", "P{R}", "P{R}:fence", "P{R}:wake")); recv_for(a, 0.05)
