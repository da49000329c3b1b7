#!/usr/bin/env python3
"""Mechanism checks for the blocking-pop hand-off on a live redis-server (stdlib only).
Usage: mech.py PORT. Prints raw replies; every check starts from DEL of its keys."""
import socket, sys, time

PORT = int(sys.argv[1])

def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

def conn():
    s = socket.create_connection(("127.0.0.1", PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def recv_for(s, secs):
    s.settimeout(secs)
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                buf += b"<EOF>"
                break
            buf += d
    except socket.timeout:
        pass
    return buf

def cmd(s, *args):
    s.sendall(enc(*args))
    return recv_for(s, 0.05)

def acquire(field):
    return (enc("MULTI") + enc("HSETNX", "P{R}", field, 30000) + enc("HLEN", "P{R}")
            + enc("PEXPIRE", "P{R}", 30000, "NX") + enc("ZADD", "P{R}:fence", "INCR", 1, "t")
            + enc("PEXPIRE", "P{R}:fence", 600000) + enc("EXEC"))

def release(field):
    return (enc("MULTI") + enc("HDEL", "P{R}", field) + enc("LPUSH", "P{R}:wake", 1)
            + enc("PEXPIRE", "P{R}:wake", 5000) + enc("EXEC"))

def show(title, data):
    print("### " + title)
    print("   ", repr(data))

a = conn()
def reset():
    cmd(a, "DEL", "P{R}", "P{R}:fence", "P{R}:wake")

# 1. Hand-off: W has BLPOP + acquire pipelined; H holds then releases with a wake token.
reset()
h = conn(); w = conn()
show("H acquires", cmd(h, "MULTI") + b"" if False else (h.sendall(acquire("h")), recv_for(h, 0.05))[1])
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
show("W after sending BLPOP+acquire (blocked: expect nothing)", recv_for(w, 0.1))
show("CLIENT LIST (W blocked, qbuf holds the block)", cmd(a, "CLIENT", "LIST", "TYPE", "normal"))
h.sendall(release("h"))
t0 = time.monotonic()
show("W after H's release (expect BLPOP reply + OK + 5 QUEUED + EXEC in one recv)", w.recv(65536))
show("H release reply", recv_for(h, 0.05))
show("HGETALL P{R}", cmd(a, "HGETALL", "P{R}"))
w.close(); h.close()

# 2. CLIENT UNBLOCK (TIMEOUT) of a blocked waiter: does the pipelined acquire still run?
for mode in ("TIMEOUT", "ERROR"):
    reset()
    h = conn(); w = conn()
    h.sendall(acquire("h")); recv_for(h, 0.05)
    w.sendall(enc("CLIENT", "ID")); wid = int(recv_for(w, 0.05)[1:].split(b"\r\n")[0])
    w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
    recv_for(w, 0.1)
    show("CLIENT UNBLOCK %d %s" % (wid, mode), cmd(a, "CLIENT", "UNBLOCK", wid, mode))
    show("W replies after CLIENT UNBLOCK %s" % mode, recv_for(w, 0.1))
    show("HGETALL P{R} (w present => the block ran while the lock was held)", cmd(a, "HGETALL", "P{R}"))
    # and when the lock was free at unblock time:
    cmd(h, "HDEL", "P{R}", "h"); cmd(a, "HDEL", "P{R}", "w")
    w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
    recv_for(w, 0.1)
    cmd(a, "CLIENT", "UNBLOCK", wid, mode)
    show("lock free, CLIENT UNBLOCK %s: W replies" % mode, recv_for(w, 0.1))
    show("HGETALL P{R} (w granted although it was cancelled)", cmd(a, "HGETALL", "P{R}"))
    w.close(); h.close()

# 3. BLPOP timeout: the pipelined acquire runs after the nil reply.
reset()
h = conn(); w = conn()
h.sendall(acquire("h")); recv_for(h, 0.05)
w.sendall(enc("BLPOP", "P{R}:wake", "0.2") + acquire("w"))
show("BLPOP 0.2 s timeout, lock held: W replies after 0.5 s", recv_for(w, 0.5))
w.close(); h.close()

# 4. Closing the blocked connection: the pipelined acquire does not run.
reset()
w = conn()
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
recv_for(w, 0.1)
w.close()
time.sleep(0.1)
show("after closing blocked W: HGETALL P{R} (expect empty), LPUSH wake then LLEN (token stays)",
     cmd(a, "HGETALL", "P{R}") + cmd(a, "LPUSH", "P{R}:wake", 1) + cmd(a, "LLEN", "P{R}:wake"))

# 5. Stale token: pushed when nobody was blocked; next waiter pops it at once, acquire decides.
reset()
h = conn(); w = conn()
h.sendall(acquire("h")); recv_for(h, 0.05)
cmd(a, "LPUSH", "P{R}:wake", 1)
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
show("stale token while H holds: W replies at once (HSETNX 1, HLEN 2 => not granted, must withdraw)", recv_for(w, 0.1))
w.close(); h.close()

# 6. Blocking pop inside MULTI does not block.
reset()
show("MULTI; BLPOP empty 0; EXEC (expect nil at once)",
     cmd(a, "MULTI") + cmd(a, "BLPOP", "P{R}:wake", 0) + cmd(a, "EXEC"))

# 7. RESP3 + CLIENT TRACKING on the blocked connection: invalidation push while blocked.
reset()
h = conn(); w = conn()
show("W HELLO 3 / CLIENT TRACKING ON / HGET (track P{R})",
     cmd(w, "HELLO", "3") + cmd(w, "CLIENT", "TRACKING", "ON") + cmd(w, "HGET", "P{R}", "x"))
h.sendall(acquire("h")); recv_for(h, 0.05)
show("W after H's acquire touched tracked P{R} (expect >invalidate push)", recv_for(w, 0.1))
w.sendall(enc("HGET", "P{R}", "h")); recv_for(w, 0.05)  # re-track
w.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w"))
recv_for(w, 0.1)
h.sendall(enc("HSET", "P{R}", "h", 1)); recv_for(h, 0.05)
show("W blocked in BLPOP, H writes P{R}: push delivered while blocked?", recv_for(w, 0.1))
h.sendall(release("h")); recv_for(h, 0.05)
show("W after H's release with token", recv_for(w, 0.1))
w.close(); h.close()
reset()

# 8. FIFO among blocked waiters: W1 blocks before W2; one token wakes W1 only.
reset()
w1 = conn(); w2 = conn()
w1.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w1")); recv_for(w1, 0.05)
w2.sendall(enc("BLPOP", "P{R}:wake", 0) + acquire("w2")); recv_for(w2, 0.05)
cmd(a, "LPUSH", "P{R}:wake", 1)
show("FIFO: W1 (blocked first) after one token", recv_for(w1, 0.1))
show("FIFO: W2 (still blocked: expect nothing)", recv_for(w2, 0.1))
w1.close(); w2.close()
reset()
