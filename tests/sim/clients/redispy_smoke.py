"""redis-py (Debian's python3-redis) against `lockwire-sim serve`: the same checks as the
ioredis script. Exit 0 when all match."""
import sys
import threading
import time

import redis

port = int(sys.argv[1])
r = redis.Redis(port=port, decode_responses=True)
assert r.ping()
assert r.set("k", "v") and r.get("k") == "v"
assert r.setex("t", 100, "x") and r.ttl("t") > 90
assert r.psetex("pt", 100000, "x") and r.pttl("pt") > 90000
assert r.incrbyfloat("f", 1.5) == 1.5
assert r.getrange("k", 0, 0) == "v" and r.setrange("k", 1, "w") == 2
assert r.hset("h", mapping={"a": 1, "b": 2}) == 2 and r.hgetall("h") == {"a": "1", "b": "2"}
assert r.rpush("l", "a", "b", "c") == 3 and r.lrange("l", 0, -1) == ["a", "b", "c"]
assert r.lmove("l", "l2", "LEFT", "RIGHT") == "a"
assert r.blpop(["l"], timeout=1) == ("l", "b")
t0 = time.time()
assert r.blpop(["empty"], timeout=1) is None and time.time() - t0 >= 0.9
assert r.zadd("z", {"a": 1, "b": 2}) == 2
assert r.zrange("z", 0, -1, withscores=True) == [("a", 1.0), ("b", 2.0)]
assert r.zrangebylex("z", "-", "+") == ["a", "b"]
assert r.sadd("s", "x", "y") == 2 and r.smembers("s") == {"x", "y"}
assert r.rename("k", "k2") and r.copy("k2", "k3")
assert r.expire("k3", 100) and r.expiretime("k3") > time.time()
pipe = r.pipeline()
pipe.incr("n").incr("n")
assert pipe.execute() == [1, 2]
assert r.config_get("maxmemory") == {"maxmemory": "0"}
info = r.info()
assert info["redis_version"] == "7.0.15" and info["loading"] == 0
assert "keyspace_hits" in r.info("stats")
assert any(c["name"] == "" for c in r.client_list())
assert r.function_list() == []
p = r.pubsub()
p.subscribe("news")
assert p.get_message(timeout=1)["type"] == "subscribe"
assert r.pubsub_numsub("news") == [("news", 1)]
assert r.publish("news", "hello") == 1
msg = p.get_message(timeout=1)
assert msg["type"] == "message" and msg["data"] == "hello"
waiter = redis.Redis(port=port, decode_responses=True)
out = []
th = threading.Thread(target=lambda: out.append(waiter.brpop(["q"], timeout=5)))
th.start()
time.sleep(0.1)
r.lpush("q", "job")
th.join()
assert out == [("q", "job")]
print("redis-py: all checks passed")
