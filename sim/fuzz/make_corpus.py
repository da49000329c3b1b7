#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_sim_redis_model (fuzz/corpus/sim_redis_model/).

Each seed is one mode byte (how redis_model_fuzz.cpp splits the input across its three clients
and into chunks) followed by a realistic command stream: multibulk and inline commands as
clients and redis-cli send them, the lock protocol's own transactions, and a few protocol errors.
Seeds give the fuzzer well-formed commands to mutate from; without them it spends most of its
time rediscovering the multibulk syntax. Usage: sim/fuzz/make_corpus.py [out-dir]
"""
import os
import sys

# Mode bytes: low two bits 0 send everything from client 0 (transactions and tracking stay on
# one connection); otherwise chunks go to the three clients in turn. The upper bits shift the
# chunk sizes.
ONE_CLIENT = [0x00]
THREE_CLIENTS = [0x01, 0x6a]


def cmd(*args):
    """A multibulk command, as client libraries send it."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def inline(line):
    """An inline command, as typed into telnet or sent by redis-cli --pipe style tools."""
    return line.encode() + b"\r\n"


def cmds(*commands):
    return b"".join(cmd(*c) if isinstance(c, tuple) else c for c in commands)


# The lock protocol's key layout (lock/src/protocol.cpp): <prefix>{<resource>}, :tok, :q.
H = "lockwire:{job}"
TOK = H + ":tok"
Q = H + ":q"

SCENARIOS = {
    "ping_echo_inline": inline("PING") + inline("PING hello") + inline("ECHO \"a b\\x41\"")
    + inline("ECHO 'it''s'") + inline("  ") + b"PING\n",
    "strings": cmds(("SET", "k", "v"), ("GET", "k"), ("SET", "k", "w", "NX"),
                    ("SET", "k", "w", "XX", "GET"), ("SETNX", "n", "1"), ("GETDEL", "n"),
                    ("MSET", "a", "1", "b", "2"), ("MGET", "a", "b", "missing"),
                    ("EXISTS", "a", "b", "a"), ("TYPE", "a"), ("DEL", "a", "b"), ("UNLINK", "k")),
    "set_options": cmds(("SET", "k", "v", "PX", "3000"), ("PTTL", "k"),
                        ("SET", "k", "v", "EX", "10", "KEEPTTL"), ("SET", "k", "v", "KEEPTTL"),
                        ("TTL", "k"), ("SET", "k", "v", "EXAT", "1767225700"),
                        ("SET", "k", "v", "PXAT", "1767225700000"), ("SET", "k", "v", "PX", "0"),
                        ("SET", "k", "v", "EX", "-1"), ("GETEX", "k", "PERSIST"),
                        ("GETEX", "k", "PX", "50"), ("GET", "k")),
    "expire": cmds(("SET", "k", "v"), ("EXPIRE", "k", "100"), ("EXPIRE", "k", "50", "GT"),
                   ("EXPIRE", "k", "50", "LT"), ("PEXPIRE", "k", "10", "NX"),
                   ("PEXPIRE", "k", "10", "XX"), ("PEXPIREAT", "k", "1767225600100"),
                   ("EXPIREAT", "k", "1"), ("EXISTS", "k"), ("SET", "p", "v", "PX", "20"),
                   ("PERSIST", "p"), ("TTL", "p"), ("PEXPIRE", "p", "9223372036854775807")),
    "expiry_by_cron": cmds(*[("SET", "e%d" % i, "v", "PX", str(10 + 30 * i)) for i in range(6)],
                           *[("DBSIZE",)] * 12, ("KEYS", "*")),
    "counters": cmds(("INCR", "c"), ("INCRBY", "c", "41"), ("DECR", "c"), ("DECRBY", "c", "-5"),
                     ("SET", "c", "9223372036854775807"), ("INCR", "c"), ("SET", "s", "abc"),
                     ("INCR", "s"), ("INCRBY", "c", "x"), ("GET", "c")),
    "hashes": cmds(("HSET", "h", "f1", "v1", "f2", "v2"), ("HSETNX", "h", "f1", "x"),
                   ("HGET", "h", "f1"), ("HMGET", "h", "f1", "nope", "f2"), ("HGETALL", "h"),
                   ("HLEN", "h"), ("HEXISTS", "h", "f2"), ("HINCRBY", "h", "n", "7"),
                   ("HINCRBY", "h", "f1", "1"), ("HDEL", "h", "f1", "f2", "n"), ("EXISTS", "h"),
                   ("SET", "str", "v"), ("HSET", "str", "f", "v")),
    "sets": cmds(("SADD", "s", "a", "b", "c", "a"), ("SISMEMBER", "s", "b"), ("SCARD", "s"),
                 ("SMEMBERS", "s"), ("SREM", "s", "a", "z"), ("SMEMBERS", "s"), ("TYPE", "s")),
    "zsets": cmds(("ZADD", "z", "1", "a", "2", "b", "3.5", "c"), ("ZADD", "z", "NX", "9", "a"),
                  ("ZADD", "z", "XX", "CH", "5", "a"), ("ZADD", "z", "GT", "1", "c"),
                  ("ZADD", "z", "LT", "CH", "1", "c"), ("ZADD", "z", "INCR", "2", "b"),
                  ("ZADD", "z", "NX", "XX", "1", "a"), ("ZADD", "z", "nan", "x"),
                  ("ZSCORE", "z", "b"), ("ZCARD", "z"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
                  ("ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "2"),
                  ("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV"),
                  ("ZRANGEBYSCORE", "z", "-inf", "(3.5", "WITHSCORES"),
                  ("ZREMRANGEBYSCORE", "z", "2", "4"), ("ZREM", "z", "a", "zz"), ("ZCARD", "z")),
    "multi_exec": cmds(("MULTI",), ("SET", "k", "1"), ("INCR", "k"), ("HSET", "k", "f", "v"),
                       ("GET", "k"), ("EXEC",), ("MULTI",), ("MULTI",), ("DISCARD",),
                       ("EXEC",), ("DISCARD",)),
    "multi_execabort": cmds(("MULTI",), ("SET", "k", "1"), ("NOSUCHCOMMAND", "x"),
                            ("GET",), ("EXEC",), ("GET", "k")),
    "watch": cmds(("SET", "w", "1"), ("WATCH", "w"), ("SET", "w", "2"), ("MULTI",),
                  ("GET", "w"), ("EXEC",), ("WATCH", "w", "gone"), ("UNWATCH",), ("MULTI",),
                  ("INCR", "w"), ("EXEC",), ("WATCH", "x"), ("MULTI",), ("WATCH", "y"),
                  ("EXEC",)),
    "watch_expired": cmds(("SET", "w", "1", "PX", "30"), ("WATCH", "w"),
                          *[("PING",)] * 10, ("MULTI",), ("SET", "w", "2"), ("EXEC",)),
    "tracking_resp3": cmds(("HELLO", "3"), ("CLIENT", "TRACKING", "ON"), ("GET", "t"),
                           ("SET", "t", "1"), ("GET", "t"), ("DEL", "t"), ("GET", "t"),
                           ("FLUSHDB",), ("CLIENT", "TRACKING", "OFF"), ("SET", "t", "2")),
    "tracking_bcast": cmds(("HELLO", "3"),
                           ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "lockwire:",
                            "PREFIX", "app:"), ("SET", "lockwire:a", "1"), ("SET", "app:b", "2"),
                           ("SET", "other", "3"), ("CLIENT", "TRACKING", "ON", "NOLOOP"),
                           ("CLIENT", "TRACKING", "OFF"),
                           ("CLIENT", "TRACKING", "ON", "PREFIX", "x")),
    "tracking_optin": cmds(("HELLO", "3"), ("CLIENT", "TRACKING", "ON", "OPTIN"),
                           ("GET", "o"), ("CLIENT", "CACHING", "YES"), ("GET", "o"),
                           ("SET", "o", "v"), ("MULTI",), ("CLIENT", "CACHING", "YES"),
                           ("PTTL", "o"), ("EXEC",), ("CLIENT", "CACHING", "NO"),
                           ("CLIENT", "TRACKING", "ON", "OPTOUT"), ("CLIENT", "GETREDIR")),
    "tracking_redirect_resp2": cmds(("CLIENT", "ID"), ("SUBSCRIBE", "__redis__:invalidate"),
                                    ("CLIENT", "TRACKING", "ON", "REDIRECT", "1"),
                                    ("CLIENT", "TRACKING", "ON", "REDIRECT", "2"), ("GET", "r"),
                                    ("SET", "r", "1")),
    "pubsub_resp2": cmds(("SUBSCRIBE", "ch", "other"), ("PING",), ("GET", "k"),
                         ("PSUBSCRIBE", "c*", "lockwire:*"), ("PUBLISH", "ch", "hello"),
                         ("UNSUBSCRIBE", "ch"), ("PUNSUBSCRIBE",), ("UNSUBSCRIBE",), ("PING",),
                         ("PUBLISH", "ch", "after")),
    "pubsub_resp3": cmds(("HELLO", "3"), ("SUBSCRIBE", "ch"), ("PUBLISH", "ch", "m1"),
                         ("GET", "k"), ("PSUBSCRIBE", "*"), ("PUBLISH", "x", "m2"),
                         ("UNSUBSCRIBE",), ("PUNSUBSCRIBE", "*"), ("RESET",)),
    "clients": cmds(("CLIENT", "ID"), ("CLIENT", "SETNAME", "worker-1"), ("CLIENT", "GETNAME"),
                    ("CLIENT", "INFO"), ("CLIENT", "SETNAME", "bad name"),
                    ("CLIENT", "PAUSE", "10", "WRITE"), ("SET", "k", "v"), ("CLIENT", "UNPAUSE"),
                    ("CLIENT", "KILL", "ID", "2"), ("CLIENT", "KILL", "ID", "999"),
                    ("CLIENT", "NOPE")),
    "hello_auth": cmds(("HELLO",), ("HELLO", "3", "SETNAME", "lw"), ("HELLO", "2"),
                       ("HELLO", "4"), ("HELLO", "3", "AUTH", "default", "pw"), ("AUTH", "pw"),
                       ("AUTH", "default", "pw"), ("RESET",), ("QUIT",), ("PING",)),
    "keyspace": cmds(("SELECT", "1"), ("SET", "a", "1"), ("SELECT", "0"), ("SET", "b", "2"),
                     ("SET", "c", "3"), ("DBSIZE",), ("KEYS", "*"), ("KEYS", "[ab]"),
                     ("SCAN", "0"), ("SCAN", "0", "MATCH", "*", "COUNT", "1", "TYPE", "string"),
                     ("SELECT", "16"), ("FLUSHDB",), ("SELECT", "1"), ("FLUSHALL",),
                     ("DBSIZE",)),
    "server": cmds(("TIME",), ("ROLE",), ("WAIT", "0", "0"), ("DEBUG", "SLEEP", "0"),
                   ("COMMAND",), ("INFO",)),
    "lock_acquire": cmds(("HELLO", "3"), ("CLIENT", "TRACKING", "ON", "OPTIN"), ("MULTI",),
                         ("HSETNX", H, "x:owner-1", "30000"), ("HLEN", H),
                         ("PEXPIRE", H, "30000", "NX"), ("INCR", TOK), ("EXEC",),
                         ("MULTI",), ("CLIENT", "CACHING", "YES"), ("PTTL", H),
                         ("HGETALL", H), ("EXEC",)),
    "lock_queue": cmds(("HELLO", "3"), ("CLIENT", "TRACKING", "ON", "OPTIN"), ("MULTI",),
                       ("ZADD", Q, "NX", "1767225600000", "owner-2"), ("PEXPIRE", Q, "60000"),
                       ("SET", H + ":bell:owner-2", "1", "NX", "PX", "5000"),
                       ("ZRANGE", Q, "0", "1"), ("CLIENT", "CACHING", "YES"),
                       ("PTTL", H + ":bell:owner-2"), ("CLIENT", "CACHING", "YES"),
                       ("PTTL", H), ("HGETALL", H), ("EXEC",),
                       ("SET", H + ":bell:owner-2", "1", "XX", "KEEPTTL"), ("MULTI",),
                       ("ZREM", Q, "owner-2"), ("ZRANGE", Q, "0", "1"), ("EXEC",)),
    "lock_shared_renew_release": cmds(("WATCH", H, H + ":s:owner-3"), ("HGETALL", H),
                                      ("EXISTS", H + ":s:owner-3"), ("MULTI",),
                                      ("HSET", H, "s:owner-3", "30000"),
                                      ("SET", H + ":s:owner-3", "1", "PX", "30000"),
                                      ("PEXPIRE", H, "30000", "NX"), ("PEXPIRE", H, "30000", "GT"),
                                      ("INCR", TOK), ("EXEC",), ("HEXISTS", H, "s:owner-3"),
                                      ("WATCH", H), ("MULTI",), ("PEXPIRE", H, "30000"),
                                      ("EXEC",), ("MULTI",), ("HDEL", H, "s:owner-3"),
                                      ("DEL", H + ":s:owner-3"), ("EXEC",)),
    "lock_force_release": cmds(("HSET", H, "x:owner-1", "30000"), ("MULTI",), ("HGETALL", H),
                               ("DEL", H), ("EXEC",),
                               ("HSET", "lockwire:force-released", "res", "job", "seq", "1"),
                               ("HINCRBY", "lockwire:force-released", "seq", "1")),
    "pipeline_mixed": inline("SET a 1") + cmd("GET", "a") + inline("INCR a")
    + cmd("HSET", "h", "f", "v") + b"GET a\n" + cmd("PING"),
    "binary_values": cmds(("SET", b"k\x00\xff", b"\r\n\x00v"), ("GET", b"k\x00\xff"),
                          ("HSET", b"h", b"\x01", b""), ("HGETALL", b"h"), ("SET", "", "")),
    "big_values": cmds(("SET", "big", "x" * 4000), ("HSET", "h", "f", "y" * 2000),
                       ("GET", "big"), ("MGET", *["k%d" % i for i in range(40)])),
    "proto_errors_multibulk": b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*x\r\n",
    "proto_errors_bulk_len": b"*1\r\n$-5\r\n",
    "proto_errors_bulk_crlf": b"*1\r\n$4\r\nPINGxx",
    "proto_errors_inline_quotes": inline("SET \"unbalanced v") + inline("PING"),
    "proto_big_multibulk_count": b"*1048577\r\n",
    "proto_big_bulk": b"*1\r\n$2000000\r\n",
    "proto_empty_multibulk": b"*0\r\n*-1\r\n" + cmd("PING"),
    "proto_partial_tail": cmd("SET", "k", "v") + b"*3\r\n$3\r\nSET\r\n$1\r\nk",
}

# Seeds that make sense across connections (one client's write wakes another's push).
ACROSS_CLIENTS = {"watch", "tracking_resp3", "tracking_bcast", "tracking_optin", "pubsub_resp2",
                  "pubsub_resp3", "clients", "lock_acquire", "lock_queue", "pipeline_mixed"}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "fuzz", "corpus",
                                                             "sim_redis_model")
    os.makedirs(out, exist_ok=True)
    for name, stream in SCENARIOS.items():
        modes = ONE_CLIENT + (THREE_CLIENTS if name in ACROSS_CLIENTS else [])
        for mode in modes:
            with open(os.path.join(out, "%s_%02x.bin" % (name, mode)), "wb") as f:
                f.write(bytes([mode]) + stream)


if __name__ == "__main__":
    main()
