#!/usr/bin/env python3
# Per-round table of the "mix" runs (pipelined and not-pipelined parks alternating in one run).
import re, sys
print("| run/round | N | back-to-back PING p50 | in-situ PING p50 | pipelined p50 / p90 | in PINGs (in-situ) | not pipelined p50 / p90 | in PINGs (in-situ) | saved p50 |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    rnd = 0; ping = None
    for line in open(path):
        if line.startswith("## round"): rnd = int(line.split()[2])
        kv = dict(re.findall(r"(\w+)=([\w./]+)", line))
        if kv.get("mode") == "ping" and kv.get("gap_us") == "0": ping = float(kv["p50_us"])
        if kv.get("mode") == "mix":
            ip = float(kv["insitu_ping_p50_us"]); p, s = float(kv["p50_us"]), float(kv["seq_p50_us"])
            print(f"| {path[-5]}{rnd} | {kv['waiters']} | {ping:.0f} | {ip:.0f} | {p:.0f} / {float(kv['p90_us']):.0f} | {p/ip:.2f} "
                  f"| {s:.0f} / {float(kv['seq_p90_us']):.0f} | {s/ip:.2f} | {s-p:.0f} µs = {(s-p)/ip:.2f} |")
