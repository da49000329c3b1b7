#!/usr/bin/env python3
# Summarize run.sh raw output files: medians over rounds (min..max in brackets).
import re, sys, statistics as st
def rng(v): return f"{st.median(v):.0f} ({min(v):.0f}..{max(v):.0f})"
def rr(v): return f"{st.median(v):.2f} ({min(v):.2f}..{max(v):.2f})"
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        if line.startswith("mode="):
            kv = dict(re.findall(r"(\w+)=([\w./]+)", line))
            rows.setdefault((kv["mode"], kv.get("waiters", kv.get("gap_us"))), []).append(kv)
    print(f"== {path}")
    g = lambda rs, n: [float(r[n]) for r in rs if n in r]
    for key, rs in rows.items():
        if key[0] == "ping":
            print(f"ping gap_us={key[1]:>3}: p50 {rng(g(rs,'p50_us'))} p90 {rng(g(rs,'p90_us'))}")
            continue
        out = f"{key[0]:4} N={key[1]}: in-situ PING p50 {rng(g(rs,'insitu_ping_p50_us'))}"
        if key[0] == "mix":
            out += (f" | pipe p50 {rng(g(rs,'p50_us'))} p90 {rng(g(rs,'p90_us'))} = {rr(g(rs,'handoff_p50_in_insitu_pings'))} PING"
                    f" | seq p50 {rng(g(rs,'seq_p50_us'))} p90 {rng(g(rs,'seq_p90_us'))} = {rr(g(rs,'seq_p50_in_insitu_pings'))} PING")
        else:
            out += f" | p50 {rng(g(rs,'p50_us'))} p90 {rng(g(rs,'p90_us'))} = {rr(g(rs,'handoff_p50_in_insitu_pings'))} PING"
        t = key[0] if key[0] != "mix" else "pipe"
        for m in (["pipe", "seq"] if key[0] == "mix" else [key[0]]):
            v = g(rs, f"{m}_paired_over_release_rtt_p50")
            if v: out += f" | {m} grant/release-RTT {rr(v)}"
        oner = [r["pop_and_exec_in_one_read"] for r in rs if "pop_and_exec_in_one_read" in r]
        if oner: out += " | one-read " + ",".join(oner)
        out += " | failed " + ",".join(r["failed"] for r in rs)
        print(out)
