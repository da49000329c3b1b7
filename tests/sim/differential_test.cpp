// Differential suite: every script runs on the in-process model and on a private redis-server
// 7.0.15; reply bytes must match exactly (see differential.hpp for the script syntax and the few
// replies compared by shape or as unordered sets). Adding a script is one line in kScripts.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "differential.hpp"
#include "redis_server.hpp"
#include "serve_process.hpp"

namespace lockwire::sim::test {
namespace {

struct Script {
  const char* name;
  const char* text;
};

// clang-format off
const Script kScripts[] = {
  {"ping_echo", "PING | PING hello | PING a b | ECHO x | ECHO | ECHO \"\""},
  {"unknown", "FOO | FOO bar baz | foo \"a\\r\\nb\" | CLIENT FOO | CLIENT | GET | GET a b"},
  {"unknown_long", "NOPE aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbb cc"},
  {"select", "SELECT 1 | SET k v | SELECT 0 | GET k | SELECT 1 | GET k | SELECT 16 | SELECT -1 | SELECT x | SELECT 2 3"},
  {"set_get", "SET k v | GET k | SET k v2 | GET k | GET missing | SET | SET k | SET k v EX | SET k v FOO"},
  {"set_nx_xx", "SET k v NX | SET k w NX | GET k | SET j v XX | GET j | SET k x XX | GET k | SET k v NX XX | SET k v XX NX"},
  {"set_get_opt", "SET k v GET | SET k w GET | SET k x NX GET | SET j y XX GET | GET j | SET k z XX GET | HSET h f v | SET h v GET | GET h"},
  {"set_expire_opts", "SET k v EX 100 | TTL k | SET k v PX 100000 | TTL k | SET k v EX 0 | SET k v EX -5 | SET k v PX abc | SET k v EX 10 PX 10 | SET k v KEEPTTL EX 1 | SET k v EX 100 | SET k w KEEPTTL | TTL k | GET k | SET k v EXAT 4102444800 | ~TTL k | SET k v PXAT 4102444800000 | ~TTL k | SET k v EXAT 1 | GET k | SET k v EX 9223372036854775807 | SET k v PX 9223372036854775807"},
  {"setnx_getdel_getex", "SETNX k 1 | SETNX k 2 | GET k | GETDEL k | GETDEL k | SET k v | GETEX k | GETEX k EX 100 | TTL k | GETEX k PERSIST | TTL k | GETEX k PX 0 | GETEX k EX 1 PX 1 | GETEX k FOO | GETEX nokey EX 10 | GETEX k EXAT 1 | EXISTS k | HSET h f v | GETEX h | GETDEL h"},
  {"del_exists_type", "SET a 1 | SET b 2 | HSET h f v | SADD s m | ZADD z 1 m | EXISTS a b c a | TYPE a | TYPE h | TYPE s | TYPE z | TYPE none | DEL a b c | UNLINK h s | EXISTS a h | DBSIZE | DEL | EXISTS"},
  {"incr_decr", "INCR c | INCR c | INCRBY c 10 | DECR c | DECRBY c 5 | GET c | INCRBY c abc | SET s x | INCR s | SET m 9223372036854775807 | INCR m | INCRBY m 0 | SET n -9223372036854775808 | DECR n | DECRBY c -9223372036854775808 | SET f 1.5 | INCR f | SET z 007 | INCR z | SET sp \" 1\" | INCR sp | HSET h f v | INCR h | INCRBY c"},
  {"expire_family", "SET k v | EXPIRE k 100 | TTL k | PEXPIRE k 200000 | TTL k | EXPIRE nokey 10 | PERSIST k | PERSIST k | TTL k | TTL nokey | PTTL nokey | PTTL k | EXPIREAT k 4102444800 | ~TTL k | PEXPIREAT k 4102444800000 | ~TTL k | EXPIRE k abc | EXPIRE k 99999999999999999 | PEXPIRE k 9223372036854775807 | EXPIRE k -1 | EXISTS k | SET k v | EXPIREAT k 1 | EXISTS k | EXPIRE"},
  {"expire_flags", "SET k v | EXPIRE k 10 XX | EXPIRE k 10 GT | EXPIRE k 10 LT | TTL k | EXPIRE k 20 NX | EXPIRE k 5 GT | EXPIRE k 50 GT | TTL k | EXPIRE k 60 LT | EXPIRE k 5 LT | TTL k | EXPIRE k 10 NX XX | EXPIRE k 10 GT LT | EXPIRE k 10 NX GT | EXPIRE k 10 FOO | EXPIRE k 10 xx | TTL k | PEXPIRE k 100 lt | ~PTTL k"},
  {"expire_lazy", "SET k v PX 100 | GET k | @sleep 250 | GET k | EXISTS k | TTL k | SET j v EX 1 | PEXPIRE j 50 | @sleep 200 | DBSIZE"},
  {"hash", "HSET h a 1 b 2 | HSET h a 3 c 4 | HGET h a | HGET h x | HGET nokey a | HMGET h a x b | HMGET nokey a b | HMGET h | HGETALL h | HLEN h | HEXISTS h a | HEXISTS h z | HDEL h a z | HDEL h nope | HGETALL h | HSETNX h b 9 | HSETNX h d 9 | HGETALL h | HINCRBY h n 5 | HINCRBY h n -2 | HINCRBY h b x | HINCRBY h d 1 | HSET h s abc | HINCRBY h s 1 | HSET h m 9223372036854775807 | HINCRBY h m 1 | HDEL h a b c d n s m | EXISTS h | HGETALL h | HLEN nokey | HSET h a | HSET h | SET str v | HGET str a | HMGET str a | HSET str a 1"},
  {"hash_resp3", "HELLO 3 | HSET h a 1 b 2 | HGETALL h | HGETALL nokey | HGET h x | HGET h a | HMGET h a x | HMGET nokey a"},
  {"sets_int", "SADD s 3 1 2 | SADD s 2 5 | SMEMBERS s | SCARD s | SISMEMBER s 1 | SISMEMBER s 9 | SREM s 1 9 | SMEMBERS s | SREM s 2 3 5 | EXISTS s | SMEMBERS s | SCARD nokey | SET str v | SADD str a | SMEMBERS str"},
  {"sets_str", "SADD s a | SADD s a | %SMEMBERS s | SADD s b c | %SMEMBERS s | SCARD s | SISMEMBER s b | SREM s b | %SMEMBERS s | HELLO 3 | %SMEMBERS s | SMEMBERS nokey"},
  {"zset", "ZADD z 1 a 2 b 3 c | ZADD z 1.5 a | ZSCORE z a | ZSCORE z nope | ZCARD z | ZRANGE z 0 -1 | ZRANGE z 0 -1 WITHSCORES | ZRANGE z 1 1 | ZRANGE z -2 -1 | ZRANGE z 5 10 | ZRANGE z 0 -1 REV | ZRANGE z 0 1 BYSCORE | ZRANGE z (1.5 +inf BYSCORE WITHSCORES | ZRANGE z +inf -inf BYSCORE REV | ZRANGE z -inf +inf BYSCORE LIMIT 1 1 | ZRANGE z 0 -1 LIMIT 0 1 | ZRANGEBYSCORE z -inf +inf | ZRANGEBYSCORE z 2 3 WITHSCORES | ZRANGEBYSCORE z (2 3 | ZRANGEBYSCORE z a b | ZRANGEBYSCORE z 0 10 LIMIT 1 5 | ZREM z a nope | ZREMRANGEBYSCORE z 0 2 | ZRANGE z 0 -1 WITHSCORES | ZREMRANGEBYSCORE z -inf +inf | EXISTS z"},
  {"zadd_flags", "ZADD z 1 a | ZADD z NX 5 a 2 b | ZADD z XX 5 a 3 c | ZRANGE z 0 -1 WITHSCORES | ZADD z GT 1 a | ZADD z GT CH 9 a | ZADD z LT CH 9 a 1 b | ZRANGE z 0 -1 WITHSCORES | ZADD z INCR 2 a | ZADD z INCR 1 a 2 b | ZADD z NX XX 1 a | ZADD z GT LT 1 a | ZADD z NX GT 1 a | ZADD z 1 | ZADD z x a | ZADD z NX INCR 1 a | ZADD z XX INCR 1 nope | ZADD z 0.1 d | ZSCORE z d | ZADD z inf e -inf f | ZRANGE z 0 -1 WITHSCORES | ZADD z nan g | ZADD nz XX 1 a | EXISTS nz | ZADD nz XX INCR 1 a"},
  // The fencing token (docs/protocol.md): ZADD GT raises the member to the floor, ZADD INCR 1
  // then makes it the token; scores are large integral doubles (microseconds + a counter).
  {"zadd_fence_tokens", "ZADD f GT 1780000000000001 t | ZADD f INCR 1 t | ZSCORE f t | ZADD f GT 1780000000000000 t | ZADD f INCR 1 t | ZADD f GT CH 1780000000000005 t | ZADD f INCR 1 t | ZADD f GT 9007199254740993 u | ZSCORE f u | ZADD f INCR 1 nope | ZADD f GT INCR 1780000000000009 t | ZADD f GT INCR 1 t | MULTI | ZADD f GT 1780000000000100 t | ZADD f INCR 1 t | EXEC"},
  {"zadd_fence_tokens_resp3", "HELLO 3 | ZADD f GT 1780000000000001 t | ZADD f INCR 1 t | ZSCORE f t | ZADD f GT 1780000000000000 t | ZADD f INCR 1 t | ZADD f GT INCR 1780000000000009 t | MULTI | ZADD f GT 1780000000000100 t | ZADD f INCR 1 t | ZSCORE f t | EXEC"},
  // WAIT on a server without replicas (min_replicas): at once for 0, at the timeout otherwise;
  // inside MULTI at once.
  {"wait_no_replicas", "WAIT 0 0 | SET k v | WAIT 0 0 | WAIT 1 100 | @sleep 250 | WAIT x 0 | WAIT 1 -1 | WAIT 1 | MULTI | SET k w | WAIT 1 0 | EXEC | HELLO 3 | WAIT 0 10"},
  {"zset_resp3", "HELLO 3 | ZADD z 1 a 0.1 b | ZSCORE z b | ZRANGE z 0 -1 WITHSCORES | ZRANGEBYSCORE z -inf +inf WITHSCORES | ZADD z INCR 1 a | ZSCORE z nope"},
  {"wrongtype", "SET s v | HGET s f | SADD s m | ZADD s 1 m | ZSCORE s m | SMEMBERS s | HGETALL s | ZRANGE s 0 -1"},
  {"keys_scan", "MSET a 1 b | MSET a 1 | MGET a nokey a1 | SET a1 1 | SET a2 2 | SET b1 3 | HSET h f v | %KEYS * | %KEYS a* | %KEYS ?1 | %KEYS [ab]1 | KEYS nomatch | %SCAN 0 COUNT 100 | %SCAN 0 COUNT 100 MATCH a* | %SCAN 0 COUNT 100 TYPE hash | SCAN x | SCAN 0 COUNT 0 | SCAN 0 COUNT x | SCAN 0 MATCH | SCAN 0 FOO bar | DBSIZE | FLUSHDB | DBSIZE | FLUSHDB x | FLUSHDB ASYNC | FLUSHALL SYNC | FLUSHALL a b"},
  // Globs as Redis 7.0.15's stringmatchlen: classes (negated, ranges either way, "a-]" as a
  // range, escapes inside), '?', escapes, nested and trailing stars, an unterminated class, a
  // trailing backslash; SCAN MATCH, PSUBSCRIBE and CONFIG GET (case-insensitive) use the same.
  {"glob_keys", "MSET abc 1 abd 2 ab 3 a 4 b 5 xbc 6 * 7 ? 8 [ 9 ] 10 \\\\ 11 a-b 12 Abc 13 \"\" 14 abcabc 15 aXb 16 | %KEYS a* | %KEYS *c | %KEYS a?c | %KEYS ?? | %KEYS ? | %KEYS [ax]bc | %KEYS [^a]bc | %KEYS [a-c]* | %KEYS [c-a]b? | %KEYS [A-Z]* | %KEYS \\\\* | %KEYS \\\\? | %KEYS [\\\\]] | %KEYS [\\\\[] | %KEYS [a-] | %KEYS [ | %KEYS [ab | %KEYS [^ | %KEYS \\\\ | %KEYS \\\\\\\\ | %KEYS a\\\\ | %KEYS **c** | %KEYS a*b*c | %KEYS *a*b*c* | %KEYS ?*? | %KEYS *?*?*?* | KEYS \"\" | %KEYS a*c*c | %KEYS abc* | %KEYS *abc | %KEYS a[b-]c | %KEYS [[]  | %KEYS [-] | %KEYS []] | %KEYS [!a]* | %KEYS a[X]b | %KEYS a[x]b"},
  {"glob_scan_pubsub_config", "MSET abc 1 abd 2 xyz 3 | %SCAN 0 COUNT 100 MATCH ab[cd] | %SCAN 0 COUNT 100 MATCH *z | %SCAN 0 COUNT 100 MATCH [^a]* | SCAN 0 COUNT 100 MATCH \\\\* | PSUBSCRIBE n[ae]ws.* h?llo \\\\* | 2> PUBLISH news.x 1 | 2> PUBLISH nows.x 2 | 2> PUBLISH hello 3 | 2> PUBLISH * 4 | 2> PUBLISH ** 5 | %3> CONFIG GET MAXMEM* | 3> CONFIG GET maxmemory-p?licy | %3> CONFIG GET MaxMemory-[ps]* | 3> CONFIG GET xyz*"},
  // The pathological pattern of issue #19: 20 "a*" then "b" over a 40-character key answers
  // at once (Redis bounds its matcher; a naive one never returns).
  {"glob_pathological", "SET aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1 | KEYS a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b | SCAN 0 COUNT 100 MATCH a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b | KEYS a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a* | 2> PSUBSCRIBE a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b | PUBLISH aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa m | PING"},
  // Issue #19's commands, each against redis-server 7.0.15.
  {"string_cmds", "SETEX k 100 v | TTL k | SETEX k 0 v | SETEX k -1 v | SETEX k x v | SETEX k | PSETEX k 100000 v | ~PTTL k | PSETEX k 0 v | GETSET k w | GET k | TTL k | GETSET nokey x | GET nokey | HSET h f v | GETSET h x | MSETNX a 1 b 2 | MSETNX a 3 c 4 | MGET a b c | MSETNX a | MSETNX a 1 b | INCRBYFLOAT f 1.5 | INCRBYFLOAT f 0.1 | INCRBYFLOAT f -1.6 | INCRBYFLOAT f abc | SET s abc | INCRBYFLOAT s 1 | INCRBYFLOAT f 1e309 | INCRBYFLOAT f inf | SET n 5 | INCRBYFLOAT n 3.0e3 | INCRBYFLOAT n 1.23456789012345678 | INCRBYFLOAT h 1 | SET sp \" 1\" | INCRBYFLOAT sp 1 | INCRBYFLOAT z -0 | APPEND ap hello | APPEND ap \" world\" | GET ap | APPEND h x | STRLEN ap | STRLEN nokey | STRLEN h | SETRANGE sr 5 abc | GET sr | SETRANGE sr 0 XY | GET sr | SETRANGE sr -1 x | SETRANGE sr x y | SETRANGE sr2 0 \"\" | EXISTS sr2 | SETRANGE sr 1 \"\" | SETRANGE h 0 x | SETRANGE sr 536870912 x | GETRANGE sr 0 3 | GETRANGE sr -3 -1 | GETRANGE sr 5 2 | GETRANGE sr -1 -5 | GETRANGE sr 0 100 | GETRANGE nokey 0 1 | GETRANGE sr a b | SUBSTR sr 1 2 | GETRANGE h 0 1 | SET big 12345 | GETRANGE big 1 -2 | SET k1 ohmytext | SET k2 mynewtext | LCS k1 k2 | LCS k1 k2 LEN | LCS k1 k2 IDX | LCS k1 k2 IDX MINMATCHLEN 4 WITHMATCHLEN | LCS k1 k2 IDX WITHMATCHLEN | LCS k1 k2 LEN IDX | LCS k1 k2 FOO | LCS k1 nokey | LCS h k1 | HELLO 3 | LCS k1 k2 IDX"},
  {"bit_cmds", "SETBIT b 7 1 | SETBIT b 7 1 | SETBIT b 7 0 | SETBIT b 100 1 | GET b | SETBIT b -1 1 | SETBIT b 4294967296 1 | SETBIT b x 1 | SETBIT b 1 2 | SETBIT b 1 x | GETBIT b 100 | GETBIT b 1000 | GETBIT nokey 1 | GETBIT b x | SET s foobar | BITCOUNT s | BITCOUNT s 0 0 | BITCOUNT s 1 1 | BITCOUNT s 1 -2 | BITCOUNT s 5 30 BIT | BITCOUNT s 0 -1 BYTE | BITCOUNT s -2 -5 | BITCOUNT s 0 | BITCOUNT s 0 1 FOO | BITCOUNT nokey | SET z \\xff\\xf0\\x00 | BITPOS z 0 | BITPOS z 1 | BITPOS z 0 1 | BITPOS z 1 2 | BITPOS z 0 0 0 | BITPOS z 1 7 15 BIT | BITPOS z 0 2 -1 BYTE | BITPOS z 2 | BITPOS nokey 0 | BITPOS nokey 1 | SET ones \\xff\\xff | BITPOS ones 0 | BITPOS ones 0 0 -1 | BITPOS ones 0 0 | SET e \"\" | BITPOS e 0 | BITPOS e 1 | SET x1 abc | SET x2 ab | BITOP AND d x1 x2 | GET d | BITOP OR d x1 x2 | GET d | BITOP XOR d x1 x2 | GET d | BITOP NOT d x1 | GET d | BITOP NOT d x1 x2 | BITOP FOO d x1 | BITOP AND d nokey | EXISTS d | HSET h f v | BITOP OR d h x1 | SETBIT h 1 1 | BITCOUNT h"},
  {"key_cmds", "SET a 1 | EXPIRE a 100 | RENAME a b | TTL b | GET a | RENAME a b | RENAME b b | RENAMENX b b | SET c 3 | RENAMENX b c | RENAMENX b d | GET d | MOVE d 1 | MOVE d 1 | SELECT 1 | GET d | SET d other | SELECT 0 | SET d x | MOVE d 1 | MOVE d 0 | MOVE d 99 | MOVE d x | COPY d e | GET e | COPY d e | COPY d e REPLACE | COPY d d | COPY d f DB 1 | COPY d f DB 1 | COPY d f DB 99 | COPY d f FOO | COPY nokey f | HSET h f v | COPY h h2 | HGETALL h2 | RPUSH l 1 2 3 | COPY l l2 | LRANGE l2 0 -1 | SADD st 1 2 | COPY st st2 | SMEMBERS st2 | ZADD z 1 m | COPY z z2 | ZRANGE z2 0 -1 WITHSCORES | SET t v EX 100 | ~EXPIRETIME t | ~PEXPIRETIME t | EXPIRETIME nokey | EXPIRETIME e | PEXPIRETIME e | SET t2 v PXAT 4102444800123 | EXPIRETIME t2 | PEXPIRETIME t2 | TOUCH a c e nokey | TOUCH | SWAPDB 0 1 | GET d | SWAPDB 0 1 | SWAPDB 0 99 | SWAPDB x 1 | SWAPDB 0 x | SWAPDB 1 1 | OBJECT ENCODING c | SET raw aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | OBJECT ENCODING raw | OBJECT ENCODING e | OBJECT ENCODING h | OBJECT ENCODING l | OBJECT ENCODING st | OBJECT ENCODING z | OBJECT ENCODING nokey | OBJECT REFCOUNT raw | OBJECT FREQ c | OBJECT FOO x | OBJECT ENCODING | OBJECT HELP | LASTSAVE x | TYPE l | TYPE z"},
  {"randomkey", "RANDOMKEY | SET only 1 | RANDOMKEY | RANDOMKEY x | SET v v PX 50 | DEL only | @sleep 150 | RANDOMKEY"},
  {"hash_cmds", "HMSET h a 1 b 2 | HMSET h a | HMSET h | HGETALL h | HKEYS h | HVALS h | HKEYS nokey | HVALS nokey | HSTRLEN h a | HSTRLEN h nope | HSTRLEN nokey a | HINCRBYFLOAT h a 1.5 | HINCRBYFLOAT h a 0.25 | HINCRBYFLOAT h n 10.5 | HINCRBYFLOAT h a x | HSET h s abc | HINCRBYFLOAT h s 1 | HINCRBYFLOAT h a inf | HINCRBYFLOAT h a 1e400 | HINCRBYFLOAT nh f 3 | HGETALL nh | ~HRANDFIELD h | HRANDFIELD nokey | HRANDFIELD h 0 | %HRANDFIELD h 10 | %HRANDFIELD h 10 WITHVALUES | ~HRANDFIELD h -5 | ~HRANDFIELD h -3 WITHVALUES | HRANDFIELD h 1 FOO | HRANDFIELD h x | HRANDFIELD nokey 5 | %HSCAN h 0 | HSCAN h x | HSCAN nokey 0 | %HSCAN h 0 MATCH a* | %HSCAN h 0 COUNT 100 | HSCAN h 0 COUNT 0 | HSCAN h 0 FOO bar | HSCAN h 0 TYPE string | SET str v | HKEYS str | HSTRLEN str a | HRANDFIELD str | HSCAN str 0 | HELLO 3 | %HRANDFIELD h 10 WITHVALUES | ~HRANDFIELD h -2 WITHVALUES"},
  {"list_cmds", "LPUSH l a b c | RPUSH l d e | LRANGE l 0 -1 | LRANGE l 1 2 | LRANGE l -2 -1 | LRANGE l 5 10 | LRANGE l 2 1 | LRANGE l x 1 | LRANGE nokey 0 -1 | LLEN l | LLEN nokey | LINDEX l 0 | LINDEX l -1 | LINDEX l 10 | LINDEX l x | LINDEX nokey 0 | LSET l 1 B | LSET l 10 x | LSET nokey 0 x | LSET l x y | LINSERT l BEFORE B X | LINSERT l AFTER e Y | LINSERT l AFTER nope Z | LINSERT l MIDDLE a b | LINSERT nokey BEFORE a b | LRANGE l 0 -1 | LPUSHX nokey a | RPUSHX nokey a | EXISTS nokey | LPUSHX l 0 | RPUSHX l 9 | LPOP l | RPOP l | LPOP l 2 | RPOP l 2 | LPOP l 0 | LPOP l -1 | LPOP l x | LPOP l 1 2 | LPOP nokey | LPOP nokey 2 | LRANGE l 0 -1 | RPUSH r a b a c a d a | LREM r 2 a | LRANGE r 0 -1 | LREM r -1 a | LRANGE r 0 -1 | LREM r 0 a | LRANGE r 0 -1 | LREM r 0 zz | LREM r x a | LREM nokey 0 a | RPUSH p a b c a b c | LPOS p b | LPOS p b RANK 2 | LPOS p b RANK -1 | LPOS p b COUNT 0 | LPOS p b COUNT 1 | LPOS p b RANK -1 COUNT 2 | LPOS p b MAXLEN 1 | LPOS p b MAXLEN 2 COUNT 0 | LPOS p z | LPOS p z COUNT 2 | LPOS p b RANK 0 | LPOS p b COUNT -1 | LPOS p b MAXLEN -1 | LPOS p b FOO | LPOS nokey a | LPOS nokey a COUNT 1 | RPUSH t 1 2 3 4 5 | LTRIM t 1 -2 | LRANGE t 0 -1 | LTRIM t 5 10 | EXISTS t | LTRIM nokey 0 1 | LTRIM p x 1 | RPUSH m a b c | RPOPLPUSH m n | LMOVE m n LEFT RIGHT | LMOVE m m LEFT RIGHT | LRANGE m 0 -1 | LRANGE n 0 -1 | LMOVE m n UP DOWN | LMOVE nokey n LEFT LEFT | RPOPLPUSH nokey n | SET str v | RPOPLPUSH m str | LMOVE str m LEFT LEFT | LPUSH str x | LRANGE str 0 1 | LLEN str | RPUSH q 1 2 3 4 | LMPOP 2 nokey q LEFT | LMPOP 1 q RIGHT COUNT 2 | LMPOP 1 q LEFT COUNT 10 | LMPOP 1 q LEFT | LMPOP 0 q LEFT | LMPOP 1 q MIDDLE | LMPOP 1 q LEFT COUNT 0 | LMPOP 2 q | LMPOP 1 q LEFT FOO | LMPOP 1 str LEFT | HELLO 3 | LMPOP 1 nokey LEFT | LPOP nokey 2 | RPUSH w a | LMPOP 1 w LEFT"},
  {"list_blocking", "BLPOP l1 l2 0 | 2> RPUSH l2 a b | 2> LRANGE l2 0 -1 | BRPOP l2 0 | BRPOP l1 l2 0.1 | @sleep 300 | BLPOP l1 x | BLPOP l1 -1 | 2> SET str v | BLPOP str 0 | BLMOVE l1 l3 LEFT RIGHT 0 | 2> LPUSH l1 x | 2> LRANGE l3 0 -1 | BRPOPLPUSH l1 l3 0.1 | @sleep 300 | BLMPOP 0 2 l1 l4 RIGHT COUNT 2 | 2> RPUSH l4 1 2 3 | 2> LRANGE l4 0 -1 | BLMPOP 0.1 1 l1 LEFT | @sleep 300 | MULTI | BLPOP l1 0 | BRPOPLPUSH l1 l3 0 | BLMOVE l1 l3 LEFT LEFT 0 | BLMPOP 0 1 l1 LEFT | EXEC | BLPOP l1 0 | 3> BLPOP l1 0 | 2> RPUSH l1 first | 2> RPUSH l1 second | BLMOVE l1 str LEFT LEFT 0 | 2> RPUSH l1 y | 2> LRANGE l1 0 -1 | 2> DEL l1 | BLPOP l1 0 | 2> MULTI | 2> RPUSH l1 a | 2> DEL l1 | 2> EXEC | 2> SET l1 x | 2> DEL l1 | 2> RPUSH l1 z | HELLO 3 | BLPOP nokey 0.1 | @sleep 300"},
  {"list_blocking_clients", "BLPOP k 0 | 2> BLPOP k 0 | 3> BLMPOP 0 1 k LEFT COUNT 5 | 4> RPUSH k a b c d e f g | 4> LRANGE k 0 -1 | 5> CLIENT UNBLOCK 999999 | 6> BLPOP q 0 | 5> CLIENT UNBLOCK {id:6} | 7> BLPOP q 0 | 5> CLIENT UNBLOCK {id:7} ERROR | 5> CLIENT UNBLOCK {id:7} | 5> CLIENT UNBLOCK {id:5} FOO | 5> CLIENT UNBLOCK x | 8> BLPOP q 0 | 8> PING | 9> RPUSH q v | 9> QUIT"},
  {"set_cmds", "SADD s a b c | SADD s2 c d | SADD i 3 1 2 | SMISMEMBER s a z c | SMISMEMBER nokey a | SMOVE s s2 a | SMOVE s s2 zz | SMOVE nokey s2 a | SMOVE s s b | SMOVE s s zz | %SMEMBERS s | %SMEMBERS s2 | SMOVE s newset b | %SMEMBERS newset | SET str v | SMOVE str s a | SMOVE s str c | %SINTER s s2 | %SINTER s2 i | SINTER s nokey | SINTER i i | SINTERSTORE dst s s2 | %SMEMBERS dst | SINTERSTORE dst s nokey | EXISTS dst | SINTER str s | SINTERCARD 2 s s2 | SINTERCARD 2 s s2 LIMIT 1 | SINTERCARD 0 s | SINTERCARD 3 s s2 | SINTERCARD 1 s LIMIT -1 | SINTERCARD 1 s FOO | SINTERCARD x s | %SUNION s s2 i | SUNION i | SUNIONSTORE u s s2 | %SMEMBERS u | SUNIONSTORE u nokey | EXISTS u | %SDIFF s2 s | SDIFF i i | SDIFF nokey s | SDIFFSTORE df s2 s | %SMEMBERS df | SDIFFSTORE df s s | EXISTS df | SADD n 1 | SPOP n | SPOP n | SADD p 1 2 3 | SPOP p 5 | EXISTS p | SPOP p 0 | SPOP nokey | SPOP nokey 2 | SPOP i -1 | SPOP i x | SPOP i 1 2 | SRANDMEMBER nokey | SRANDMEMBER nokey 3 | SRANDMEMBER i 0 | SRANDMEMBER i 10 | ~SRANDMEMBER i -5 | SRANDMEMBER i x | SRANDMEMBER i 1 2 | SADD one only | SRANDMEMBER one | SRANDMEMBER one 1 | SRANDMEMBER one -2 | SPOP one 1 | %SSCAN s2 0 | SSCAN i 0 | SSCAN i 0 MATCH 1 | SSCAN nokey 0 | SSCAN s2 x | SSCAN i 0 TYPE set | HELLO 3 | %SINTER s2 s2 | SUNION i | ~SPOP i 1"},
  {"zset_cmds", "ZADD z 1 a 2 b 3 c 4 d | ZINCRBY z 2 a | ZINCRBY z x a | ZINCRBY nz 1 m | ZMSCORE z a x b | ZMSCORE nokey a | ZRANK z a | ZRANK z zz | ZREVRANK z a | ZRANK nokey a | ZCOUNT z 2 4 | ZCOUNT z (2 4 | ZCOUNT z -inf +inf | ZCOUNT z x 1 | ZCOUNT nokey 0 1 | ZADD lx 0 a 0 b 0 c 0 d 0 e | ZLEXCOUNT lx - + | ZLEXCOUNT lx [b (d | ZLEXCOUNT lx (a [e | ZLEXCOUNT lx x y | ZLEXCOUNT lx + - | ZRANGEBYLEX lx - + | ZRANGEBYLEX lx [b [d | ZRANGEBYLEX lx (b + LIMIT 1 2 | ZRANGEBYLEX lx - + LIMIT -1 2 | ZREVRANGEBYLEX lx + - | ZREVRANGEBYLEX lx [d (a | ZRANGEBYLEX lx a b | ZRANGEBYLEX lx - + WITHSCORES | ZRANGE lx [b [d BYLEX | ZRANGE lx [d [b BYLEX REV | ZRANGE lx - + BYLEX LIMIT 2 10 | ZREVRANGE z 0 -1 | ZREVRANGE z 0 1 WITHSCORES | ZREVRANGEBYSCORE z +inf -inf | ZREVRANGEBYSCORE z 4 2 WITHSCORES LIMIT 0 2 | ZREVRANGEBYSCORE z (4 (2 | ZRANGEBYSCORE z \" 1\" 3 | ZRANGEBYSCORE z 1 3 REV | ZRANGESTORE dst z 0 1 | ZRANGE dst 0 -1 WITHSCORES | ZRANGESTORE dst z 2 +inf BYSCORE LIMIT 0 1 | ZRANGE dst 0 -1 WITHSCORES | ZRANGESTORE dst z 100 200 | EXISTS dst | ZRANGESTORE dst nokey 0 -1 | ZRANGESTORE dst z 0 -1 WITHSCORES | ZREMRANGEBYRANK z 0 0 | ZRANGE z 0 -1 | ZREMRANGEBYRANK z 10 20 | ZREMRANGEBYRANK z x 1 | ZREMRANGEBYLEX lx [a [b | ZRANGE lx 0 -1 | ZREMRANGEBYLEX lx x y | ZREMRANGEBYLEX lx - + | EXISTS lx | ZREMRANGEBYLEX nokey - + | ZADD za 1 a 2 b 3 c | ZADD zb 1 b 2 c 3 d | SADD sb c d e | ZUNIONSTORE u 2 za zb | ZRANGE u 0 -1 WITHSCORES | ZUNIONSTORE u 2 za zb WEIGHTS 2 3 | ZRANGE u 0 -1 WITHSCORES | ZUNIONSTORE u 2 za zb AGGREGATE MIN | ZRANGE u 0 -1 WITHSCORES | ZUNIONSTORE u 2 za zb AGGREGATE MAX | ZRANGE u 0 -1 WITHSCORES | ZUNIONSTORE u 2 za sb | ZRANGE u 0 -1 WITHSCORES | ZINTERSTORE i 2 za zb | ZRANGE i 0 -1 WITHSCORES | ZINTERSTORE i 2 za nokey | EXISTS i | ZINTER 2 za zb | ZINTER 2 za zb WITHSCORES | ZINTER 2 za za WITHSCORES | ZUNION 2 za zb WITHSCORES | ZDIFF 2 za zb | ZDIFF 2 za zb WITHSCORES | ZDIFFSTORE d 2 za zb | ZRANGE d 0 -1 WITHSCORES | ZDIFF 1 nokey | ZINTERCARD 2 za zb | ZINTERCARD 2 za zb LIMIT 1 | ZINTERCARD 2 za zb LIMIT -1 | ZINTERCARD 2 za zb WITHSCORES | ZUNION 0 za | ZUNION 3 za zb | ZUNION x za | ZUNION 2 za zb WEIGHTS 1 | ZUNION 2 za zb WEIGHTS 1 x | ZUNION 2 za zb AGGREGATE FOO | ZDIFF 2 za zb WEIGHTS 1 2 | SET str v | ZUNION 2 za str | ZUNIONSTORE u 1 str | ZPOPMIN za | ZPOPMAX za | ZPOPMIN zb 2 | ZPOPMAX zb 5 | EXISTS zb | ZPOPMIN nokey | ZPOPMIN nokey 2 | ZPOPMIN za 0 | ZPOPMIN za -1 | ZPOPMIN za 1 2 | ZADD zm 1 a 2 b 3 c | ZMPOP 2 nokey zm MIN | ZMPOP 1 zm MAX COUNT 5 | ZMPOP 1 zm MIN | ZMPOP 0 zm MIN | ZMPOP 1 zm FOO | ZMPOP 1 zm MIN COUNT 0 | ZMPOP 1 str MIN | ZADD zr 1 a 2 b 3 c | ZRANDMEMBER nokey | ZRANDMEMBER zr 0 | ZRANDMEMBER zr 10 | ZRANDMEMBER zr 10 WITHSCORES | ~ZRANDMEMBER zr -4 | ~ZRANDMEMBER zr -2 WITHSCORES | ZRANDMEMBER zr 1 FOO | ZRANDMEMBER nokey 3 | ZSCAN zr 0 | ZSCAN zr 0 MATCH b | ZSCAN nokey 0 | ZSCAN zr x | HELLO 3 | ZPOPMIN zr 2 | ZPOPMAX zr | ZRANDMEMBER zr 5 WITHSCORES | ZINTER 1 zr WITHSCORES | ZRANGE z 0 -1 WITHSCORES | ZMSCORE z a nope"},
  {"zset_blocking", "BZPOPMIN z1 z2 0 | 2> ZADD z2 5 m 6 n | BZPOPMAX z2 0 | BZPOPMIN z1 0.1 | @sleep 300 | BZMPOP 0 2 z1 z3 MAX COUNT 2 | 2> ZADD z3 1 a 2 b 3 c | BZMPOP 0.1 1 z1 MIN | @sleep 300 | BZPOPMIN z1 x | BZMPOP 0 0 z1 MIN | 2> SET str v | BZPOPMIN str 0 | MULTI | BZPOPMIN z1 0 | BZMPOP 0 1 z1 MIN | EXEC | HELLO 3 | BZPOPMIN z1 0 | 2> ZADD z1 1 x | BZMPOP 0 1 z1 MIN | 2> ZADD z1 1 y 2 z"},
  // The one-round-trip hand-off (docs/handoff-one-rtt.md): a blocking pop and a MULTI block in
  // one write; the block stays unparsed while the pop waits, and runs after the releaser's whole
  // input (it reads gen and x, written by the release and by a command pipelined after it), its
  // replies right after the pop's; then with a plain LPUSH of two (the block sees the one left).
  {"handoff_blpop_pipelined", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; HGET L{R} own ; GET gen ; GET x ; EXISTS P{R}:wake ; EXEC | @sleep 50 | @pipe MULTI ; HDEL L{R} own ; SET gen 1 ; LPUSH P{R}:wake 1 ; PEXPIRE P{R}:wake 5000 ; EXEC ; SET x 1 | HGET L{R} own | 2> HDEL L{R} own | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w2 ; LRANGE P{R}:wake 0 -1 ; EXEC | @sleep 50 | 3> LPUSH P{R}:wake 1 2 | 2> HGET L{R} own | 2> LRANGE P{R}:wake 0 -1"},
  // The same with a one-member zset token: BZPOPMIN + ZADD in the release, then a plain ZADD of
  // two (the block sees the other), the second waiter in RESP3 (the score as a double).
  {"handoff_bzpopmin_pipelined", "HSET L{R} own h | 2> @pipe BZPOPMIN P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HGET L{R} own ; GET gen ; ZCARD P{R}:wake ; EXEC | @sleep 50 | MULTI | HDEL L{R} own | SET gen 1 | ZADD P{R}:wake 0 t | PEXPIRE P{R}:wake 5000 | EXEC | 3> HELLO 3 | 3> @pipe BZPOPMIN P{R}:wake 0 ; MULTI ; HGET L{R} own ; ZRANGE P{R}:wake 0 -1 WITHSCORES ; EXEC | @sleep 50 | ZADD P{R}:wake 1 a 2 b | ZRANGE P{R}:wake 0 -1"},
  // Two parked waiters, each with its block: one token serves the first to block only (its
  // block ran: ran is 1), the second stays blocked with its block unrun until the first's
  // release (sent on the same connection) pushes the next token; then two tokens at once serve
  // both in blocking order (conn 3 parked first: it pops b and its block runs first, granted).
  {"handoff_fifo_two_waiters", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w1 ; INCR ran ; EXEC | @sleep 50 | 3> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w2 ; INCR ran ; EXEC | @sleep 50 | MULTI | HDEL L{R} own | LPUSH P{R}:wake 1 | PEXPIRE P{R}:wake 5000 | EXEC | GET ran | HGET L{R} own | EXISTS P{R}:wake | 2> MULTI | 2> HDEL L{R} own | 2> LPUSH P{R}:wake 1 | 2> PEXPIRE P{R}:wake 5000 | 2> EXEC | GET ran | HGET L{R} own | EXISTS P{R}:wake | 2> HDEL L{R} own | 3> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w3 ; EXEC | @sleep 50 | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w2 ; EXEC | @sleep 50 | LPUSH P{R}:wake a b | HGET L{R} own"},
  // Cancelling a parked waiter: CLIENT UNBLOCK TIMEOUT answers the pop with a nil, ERROR with
  // -UNBLOCKED, and the buffered block runs either way (not granted while h holds, granted once
  // free); a withdrawal pipelined behind the block runs too and pushes its token.
  {"handoff_client_unblock", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXEC | @sleep 50 | CLIENT UNBLOCK {id:2} TIMEOUT | HDEL L{R} own | 3> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w3 ; HLEN L{R} ; EXEC | @sleep 50 | CLIENT UNBLOCK {id:3} ERROR | HGET L{R} own | CLIENT UNBLOCK {id:3} ERROR | HDEL L{R} own | 4> @pipe BZPOPMIN P{R}:z 0 ; MULTI ; HSETNX L{R} own w4 ; EXEC ; MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC | @sleep 50 | CLIENT UNBLOCK {id:4} TIMEOUT | HGET L{R} own | LRANGE P{R}:wake 0 -1"},
  // Cancel racing the grant, each pair in one write: release then CLIENT UNBLOCK (the pop got
  // the token, UNBLOCK answers 0, the block grants); UNBLOCK then release (a nil, the push finds
  // no waiter and stays, the block runs after it and grants); a woken block whose pipelined
  // release wakes the next parked waiter, whose block runs in the same pass.
  {"handoff_unblock_races", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; LLEN P{R}:wake ; EXEC | @sleep 50 | @pipe MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC ; CLIENT UNBLOCK {id:2} TIMEOUT | HGET L{R} own | HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; LLEN P{R}:wake ; EXEC | @sleep 50 | @pipe CLIENT UNBLOCK {id:2} TIMEOUT ; MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC | LRANGE P{R}:wake 0 -1 | HGET L{R} own | DEL P{R}:wake | 3> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w3 ; HLEN L{R} ; EXEC ; MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC | @sleep 50 | 4> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w4 ; HLEN L{R} ; EXEC | @sleep 50 | 2> @pipe MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC | HGET L{R} own | EXISTS P{R}:wake"},
  // RESP3 + tracking on the parked connection: an invalidation arrives while it is blocked;
  // the woken block's GET (inside EXEC) tracks the key again.
  {"handoff_tracking_resp3", "2> HELLO 3 | 2> CLIENT TRACKING ON | 2> GET gen | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; GET gen ; EXEC | @sleep 50 | SET gen 1 | MULTI | SET gen 2 | LPUSH P{R}:wake 1 | EXEC | SET gen 3 | SET gen 4"},
  // A pop with a timeout: when it fires (late on the real server, hence the long sleeps) the nil
  // and then the block's replies come; BLPOP and BZPOPMIN.
  {"handoff_pop_timeout", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0.1 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXEC | @sleep 400 | HDEL L{R} own | 2> @pipe BZPOPMIN P{R}:zw 0.1 ; MULTI ; HSETNX L{R} own w ; HGET L{R} own ; EXEC | @sleep 400 | HGET L{R} own"},
  // The token key: capped at one by LTRIM 0 0, with a TTL; present before the pop, the pop
  // answers at once and the block runs at once (a stale token: not granted); a capped release
  // inside MULTI wakes a parked waiter (granted, key gone); an expired token does not.
  {"handoff_token_ttl", "LPUSH P{R}:wake 1 | PEXPIRE P{R}:wake 5000 | LPUSH P{R}:wake 1 | LTRIM P{R}:wake 0 0 | LRANGE P{R}:wake 0 -1 | ~PTTL P{R}:wake | HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXISTS P{R}:wake ; EXEC | HDEL L{R} own | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXISTS P{R}:wake ; EXEC | @sleep 50 | 3> MULTI | 3> HDEL L{R} own | 3> LPUSH P{R}:wake 1 | 3> LTRIM P{R}:wake 0 0 | 3> PEXPIRE P{R}:wake 5000 | 3> EXEC | EXISTS P{R}:wake | HDEL L{R} own | LPUSH P{R}:wake 1 | PEXPIRE P{R}:wake 100 | @sleep 300 | 2> @pipe BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXEC | @sleep 50 | HGET L{R} own | 3> LPUSH P{R}:wake 1 | HGET L{R} own"},
  // WATCH in the pipelined part: after the pop it runs after the release, so the release's HDEL
  // Arming by COPY (docs/handoff-one-rtt.md, section 5): the parked waiter arms a one-member zset with its TTL; a release's COPY of it to the wake key (nothing when unarmed, nothing when a token waits) wakes the BZPOPMIN, and the token keeps the armed TTL.
  {"handoff_copy_armed", "HSET L{R} own h | COPY P{R}:armed P{R}:wake | EXISTS P{R}:wake | 2> @pipe ZADD P{R}:armed 0 t ; PEXPIRE P{R}:armed 3000 ; BZPOPMIN P{R}:wake 0 ; MULTI ; HSETNX L{R} own w ; HLEN L{R} ; EXEC | @sleep 50 | @pipe HDEL L{R} own ; COPY P{R}:armed P{R}:wake | HGET L{R} own | EXISTS P{R}:wake P{R}:armed | COPY P{R}:armed P{R}:wake | COPY P{R}:armed P{R}:wake | ~PTTL P{R}:wake | ZRANGE P{R}:wake 0 -1 WITHSCORES | 2> HDEL L{R} own | 3> @pipe BZPOPMIN P{R}:wake 0 ; MULTI ; HSETNX L{R} own w3 ; HLEN L{R} ; EXEC | EXISTS P{R}:wake | HGET L{R} own | DEL P{R}:armed | 3> HDEL L{R} own | 4> @pipe BZPOPMIN P{R}:wake 0.1 ; MULTI ; HSETNX L{R} own w4 ; EXEC | @sleep 50 | HSET L{R} own h | COPY P{R}:armed P{R}:wake | @sleep 400 | HGET L{R} own | SET P{R}:armed x | 5> @pipe BZPOPMIN P{R}:wake 0 ; MULTI ; HSETNX L{R} other 1 ; EXEC | @sleep 50 | COPY P{R}:armed P{R}:wake | HGET L{R} other | DEL P{R}:wake | LPUSH P{R}:wake 1 | HGET L{R} other"},
  // (and a write pipelined after it) do not make it dirty; a WATCH before the pop does.
  {"handoff_watch", "HSET L{R} own h | 2> @pipe BLPOP P{R}:wake 0 ; WATCH L{R} ; MULTI ; HSETNX L{R} own w ; EXEC | @sleep 50 | @pipe MULTI ; HDEL L{R} own ; LPUSH P{R}:wake 1 ; EXEC ; HSET L{R} x 1 | HGET L{R} own | HSET L{R} own h | 2> @pipe WATCH L{R} ; BLPOP P{R}:wake 0 ; MULTI ; HSETNX L{R} own w2 ; EXEC | @sleep 50 | MULTI | HDEL L{R} own | LPUSH P{R}:wake 1 | EXEC | HGET L{R} own"},
  {"sort_cmds", "RPUSH l 3 1 2 | SORT l | SORT l DESC | SORT l LIMIT 1 1 | SORT l LIMIT 0 -1 | SORT l LIMIT 5 1 | RPUSH a b c a | SORT a | SORT a ALPHA | SORT a ALPHA DESC | SET w_1 30 | SET w_2 10 | SET w_3 20 | SORT l BY w_* | SORT l BY w_* GET # GET w_* | SORT l BY nosort | SORT l BY nosort DESC | SORT l BY nosort LIMIT 1 2 | HSET h_1 f x | HSET h_2 f y | SORT l BY w_* GET h_*->f | SORT l STORE dst | LRANGE dst 0 -1 | SORT nokey STORE dst | EXISTS dst | SORT nokey | SADD s 5 4 6 | SORT s | SORT s BY nosort STORE dst2 | LRANGE dst2 0 -1 | ZADD z 3 a 1 b 2 c | SORT z ALPHA | SORT z BY nosort | SORT z BY nosort DESC | SORT l FOO | SORT l LIMIT 1 | SORT l LIMIT x 1 | SET str v | SORT str | SORT_RO l | SORT_RO l STORE x | SORT_RO l BY w_* DESC | SORT l GET | SORT l BY"},
  {"pubsub_introspection", "PUBSUB CHANNELS | PUBSUB NUMSUB | PUBSUB NUMPAT | 2> SUBSCRIBE news.a news.b other | 3> SUBSCRIBE news.a | 3> PSUBSCRIBE p.* q.* | %PUBSUB CHANNELS | %PUBSUB CHANNELS news.* | PUBSUB CHANNELS nope* | PUBSUB NUMSUB news.a news.b nope | PUBSUB NUMPAT | PUBSUB SHARDCHANNELS | PUBSUB SHARDNUMSUB a b | PUBSUB FOO | PUBSUB NUMPAT x | PUBSUB HELP | HELLO 3 | PUBSUB NUMSUB news.a | PUBSUB SHARDNUMSUB a"},
  {"function_cmds", "FUNCTION FLUSH | FUNCTION FLUSH SYNC | FUNCTION FLUSH ASYNC | FUNCTION FLUSH FOO | FUNCTION FLUSH a b | FUNCTION LIST | FUNCTION LIST WITHCODE | FUNCTION LIST LIBRARYNAME x | FUNCTION LIST LIBRARYNAME | FUNCTION LIST FOO | FUNCTION STATS | FUNCTION DELETE lib | FUNCTION KILL | FUNCTION FOO | FUNCTION HELP | HELLO 3 | FUNCTION STATS | FUNCTION LIST"},
  {"client_introspection", "CLIENT SETNAME me | ~CLIENT INFO | ~CLIENT LIST | ~CLIENT LIST TYPE normal | CLIENT LIST TYPE pubsub | CLIENT LIST TYPE foo | CLIENT LIST ID x | CLIENT LIST ID 999999 | CLIENT LIST FOO | CLIENT TRACKINGINFO | CLIENT TRACKING ON BCAST PREFIX b PREFIX a NOLOOP | CLIENT TRACKINGINFO | CLIENT TRACKING OFF | CLIENT TRACKING ON OPTIN | CLIENT CACHING YES | CLIENT TRACKINGINFO | CLIENT TRACKING OFF | CLIENT TRACKING ON OPTOUT | CLIENT TRACKINGINFO | CLIENT NO-EVICT ON | CLIENT NO-EVICT OFF | CLIENT NO-EVICT FOO | CLIENT REPLY FOO | CLIENT REPLY ON | CLIENT HELP | HELLO 3 | CLIENT TRACKINGINFO | CLIENT TRACKING OFF | CLIENT TRACKINGINFO"},
  {"client_reply", "CLIENT REPLY OFF | SET k 1 | GET k | FOO | CLIENT REPLY SKIP | CLIENT REPLY ON | GET k | CLIENT REPLY SKIP | GET k | GET k | SUBSCRIBE c | 2> PUBLISH c m | CLIENT REPLY OFF | PING | UNSUBSCRIBE c | CLIENT REPLY ON"},
  {"memory_cmds", "SET k v | ~MEMORY USAGE k | ~MEMORY USAGE k SAMPLES 0 | MEMORY USAGE nokey | MEMORY USAGE k SAMPLES | MEMORY USAGE k SAMPLES x | MEMORY USAGE k FOO | MEMORY HELP | MEMORY PURGE | MEMORY FOO"},
  {"keyspace_copy_types", "RPUSH l a b | COPY l l2 | RPUSH l2 c | LRANGE l 0 -1 | LRANGE l2 0 -1 | HSET h f v | COPY h h2 | HSET h2 g w | HGETALL h | ZADD z 1 a | COPY z z2 | ZADD z2 2 b | ZCARD z | SET s v EX 100 | COPY s s2 | TTL s2"},
  // A primary that never had a replica has no backlog: ROLE's offset stays 0 (issue #19).
  {"role_offset", "SET k v | INCR n | ROLE | HSET h f v | ROLE | ?INFO replication"},
  // NUL bytes: Redis finds line ends with strchr(), so a request line with a NUL waits for
  // more (or is too big); a NUL inside a bulk is data.
  {"inline_nul", "@raw PI\\x00NG\\r\\n | PING"},
  {"mbulk_nul_data", "@raw *2\\r\\n$4\\r\\nECHO\\r\\n$3\\r\\na\\x00b\\r\\n | @raw *1\\r\\n$4\\r\\nP\\x00NG\\r\\n"},
  {"inline_nul_mbulk", "@raw *\\x001\\r\\n$4\\r\\nPING\\r\\n | PING"},
  {"inline_nul_bulklen", "@raw *1\\r\\n$\\x004\\r\\nPING\\r\\n | PING"},
  {"time_dbsize", "~TIME | TIME x | DBSIZE | DBSIZE x | SET a 1 | DBSIZE"},
  {"multi_basic", "MULTI | SET k 1 | INCR k | GET k | EXEC | EXEC | DISCARD | MULTI | MULTI | SET k 2 | DISCARD | GET k"},
  {"multi_errors", "MULTI | SET k 1 | FOO | GET a b | EXEC | GET k | MULTI | SET k x | INCR k | HSET k f v | GET k | EXEC | MULTI | WATCH k | EXEC | MULTI | SUBSCRIBE c | PING | EXEC"},
  {"multi_resp3", "HELLO 3 | MULTI | SET k 1 | GET nokey | ZADD z 1 a | ZSCORE z a | HGETALL nokey | EXEC | WATCH k | SET k 2 | MULTI | GET k | EXEC"},
  {"watch_conflicts", "SET k 1 | WATCH k | 2> SET k 2 | MULTI | SET k 3 | EXEC | GET k | WATCH k | SET k 4 | MULTI | INCR k | EXEC | GET k | WATCH k | MULTI | SET k 5 | EXEC | WATCH k nokey | 2> SET nokey 1 | MULTI | GET k | EXEC | WATCH k | UNWATCH | 2> SET k 9 | MULTI | GET k | EXEC | WATCH k | 2> DEL k | MULTI | PING | EXEC | WATCH k | MULTI | DISCARD | 2> SET k 1 | MULTI | GET k | EXEC"},
  {"watch_flush_and_noop", "SET k 1 | WATCH k | 2> FLUSHALL | MULTI | PING | EXEC | WATCH k | 2> FLUSHALL | MULTI | PING | EXEC | SET k 1 | WATCH k | 2> EXPIRE k 100 | MULTI | PING | EXEC | WATCH k | 2> PERSIST k | MULTI | PING | EXEC | WATCH k | 2> PERSIST k | MULTI | PING | EXEC | WATCH k | 2> GET k | MULTI | PING | EXEC"},
  {"watch_expiry", "SET k v PX 100 | WATCH k | @sleep 300 | MULTI | PING | EXEC | SET j v PX 100 | WATCH j | @sleep 50 | MULTI | PING | @sleep 200 | EXEC | SET e v PX 50 | @sleep 300 | WATCH e | MULTI | PING | EXEC"},
  {"watch_self_modify", "SET k 1 | WATCH k | SET k 2 | MULTI | GET k | EXEC | WATCH k | GET k | MULTI | GET k | EXEC | WATCH k | DEL k | MULTI | PING | EXEC | WATCH nokey | DEL nokey | MULTI | PING | EXEC"},
  {"pubsub_resp2", "SUBSCRIBE a b | GET k | PING | PING hi | PSUBSCRIBE p* | 2> PUBLISH a hello | 2> PUBLISH px world | 2> PUBLISH none x | UNSUBSCRIBE a | PUNSUBSCRIBE | UNSUBSCRIBE b | UNSUBSCRIBE | PUNSUBSCRIBE | GET k | PUNSUBSCRIBE foo | UNSUBSCRIBE bar | SUBSCRIBE | ~CLIENT ID"},
  {"pubsub_resp3", "HELLO 3 | SUBSCRIBE a | GET k | SET k v | PING | 2> PUBLISH a hello | PUBLISH a self | UNSUBSCRIBE a | UNSUBSCRIBE | PSUBSCRIBE x* | 2> PUBLISH xy m | PUNSUBSCRIBE x* | PUNSUBSCRIBE"},
  {"pubsub_in_multi", "HELLO 3 | MULTI | SUBSCRIBE c | PUBLISH c m | EXEC | 2> PUBLISH c n | RESET"},
  {"hello", "~HELLO | HELLO 2 | HELLO 3 | GET nokey | HELLO 2 | GET nokey | HELLO 4 | HELLO 1 | HELLO x | HELLO 3 FOO | HELLO 3 SETNAME | HELLO 3 SETNAME a b | HELLO 3 SETNAME myname | CLIENT GETNAME | HELLO 2 SETNAME \"bad name\" | HELLO 3 AUTH default x | HELLO 3 AUTH nouser x | HELLO 3 AUTH a"},
  {"auth_nopass", "AUTH x | AUTH default x | AUTH nouser x | AUTH a b c"},
  {"client_cmds", "~CLIENT ID | CLIENT ID x | CLIENT GETNAME | CLIENT SETNAME foo | CLIENT GETNAME | CLIENT SETNAME \"a b\" | CLIENT SETNAME \"\" | CLIENT GETNAME | CLIENT SETNAME | CLIENT FOO bar | CLIENT GETREDIR | CLIENT PAUSE x | CLIENT PAUSE -1 | CLIENT PAUSE 10 FOO | CLIENT UNPAUSE | CLIENT KILL 1.2.3.4:5 | CLIENT KILL ID abc | CLIENT KILL ID 999999 | CLIENT KILL FOO bar"},
  {"tracking_default", "HELLO 3 | CLIENT TRACKING ON | GET k | 2> SET k 1 | 2> SET k 2 | GET k | SET k 3 | GET k | MULTI | SET k 4 | SET k 5 | EXEC | GET k | GET j | 2> DEL k j | HGET h f | 2> HSET h f v | EXISTS e1 e2 | 2> SET e2 1 | 2> SET e1 1 | CLIENT GETREDIR | FLUSHDB | CLIENT TRACKING OFF | GET k | 2> SET k 1"},
  {"tracking_expiry", "HELLO 3 | CLIENT TRACKING ON | SET e v PX 100 | GET e | @sleep 400 | PING | SET f v PX 100 | GET f | @sleep 300 | GET f"},
  {"tracking_bcast", "HELLO 3 | CLIENT TRACKING ON BCAST PREFIX a PREFIX b | 2> SET abc 1 | 2> SET c 1 | 2> MULTI | 2> SET a1 1 | 2> SET b1 1 | 2> DEL a1 | 2> SET a0 1 | 2> EXEC | SET ax 1 | CLIENT TRACKING ON NOLOOP | CLIENT TRACKING OFF | CLIENT TRACKING ON BCAST | 2> SET zz 1 | CLIENT TRACKING OFF | CLIENT TRACKING ON BCAST NOLOOP PREFIX q | SET q1 1 | 2> SET q2 2"},
  {"tracking_options", "HELLO 3 | CLIENT TRACKING ON NOLOOP | GET k | SET k 9 | GET k | 2> SET k 10 | CLIENT TRACKING OFF | CLIENT TRACKING ON OPTIN | GET k | 2> SET k 11 | CLIENT CACHING YES | GET k | 2> SET k 12 | CLIENT CACHING YES | HMGET nh res seq | 2> HINCRBY nh seq 1 | CLIENT CACHING NO | CLIENT TRACKING OFF | CLIENT TRACKING ON OPTOUT | CLIENT CACHING NO | GET k | 2> SET k 13 | GET k | 2> SET k 14 | CLIENT TRACKING ON OPTIN | CLIENT TRACKING OFF | CLIENT CACHING YES | CLIENT TRACKING ON OPTIN OPTOUT | CLIENT TRACKING ON FOO | CLIENT TRACKING MAYBE | CLIENT TRACKING ON PREFIX a | CLIENT TRACKING ON BCAST PREFIX a PREFIX ab | CLIENT TRACKING ON BCAST OPTIN | CLIENT TRACKING ON REDIRECT 999999 | CLIENT TRACKING ON REDIRECT x | CLIENT TRACKING ON BCAST PREFIX a | CLIENT TRACKING ON BCAST PREFIX ab"},
  {"tracking_resp2_redirect", "2> ~CLIENT ID | CLIENT TRACKING ON | GET k | 3> SET k 1 | HELLO 3 | GET k | 3> SET k 2"},
  {"tracking_redirect_pubsub", "2> SUBSCRIBE __redis__:invalidate | CLIENT TRACKING ON REDIRECT {id:2} | ~CLIENT GETREDIR | GET k | 3> SET k 1 | GET k | 3> DEL k | FLUSHALL | CLIENT TRACKING ON REDIRECT {id:2} REDIRECT {id:2}"},
  {"tracking_redirect_resp3", "2> HELLO 3 | CLIENT TRACKING ON REDIRECT {id:2} BCAST PREFIX p | 3> SET p1 1 | 3> SET q1 1 | 2> QUIT | 3> SET p2 2 | HELLO 3 | 3> ~SET p3 3"},
  {"inline_and_protocol", "@raw PING\\r\\n | @raw PING\\n | @raw ping  hello   world\\r\\n | @raw set a \"b c\"\\r\\n | GET a | @raw echo 'x\\\\'y'\\r\\n | @raw \\r\\n | @raw *0\\r\\n | @raw *-1\\r\\n | @raw *1\\r\\n$4\\r\\nPINGxx | @raw *1\\r\\n$4\\r\\nPI | @raw NG\\r\\n | @raw *2\\r\\n$3\\r\\nFOO\\r\\n$5\\r\\na\\r\\nbc\\r\\n"},
  {"protocol_err_dollar", "@raw *1\\r\\nPING\\r\\n"},
  {"protocol_err_mbulk", "PING | @raw *x\\r\\n"},
  {"protocol_err_bulk", "@raw *1\\r\\n$-1\\r\\n"},
  {"protocol_err_bulk_big", "@raw *1\\r\\n$600000000\\r\\n"},
  {"protocol_err_quotes", "@raw echo \"unbalanced\\r\\n"},
  {"protocol_err_type", "@raw *3\\r\\n$3\\r\\nSET\\r\\n$1\\r\\na\\r\\n:1\\r\\n"},
  {"quit", "PING | QUIT"},
  {"debug_disabled", "DEBUG | DEBUG SLEEP 0 | DEBUG FOO"},
  {"mset_mget", "MSET a 1 b 2 | MGET a b c | MSET a | HSET h f v | MGET a h | MSET a 3 a 4 | GET a"},
  {"quit_pipelined", "@raw QUIT\\r\\nPING\\r\\n"},
  {"reset", "HELLO 3 | SELECT 2 | CLIENT SETNAME x | MULTI | RESET | GET k | CLIENT GETNAME | SUBSCRIBE c | RESET | PING | CLIENT TRACKING ON | RESET | CLIENT GETREDIR"},
  {"exec_refused", "EXEC x | SET k 1 | WATCH k | EXEC x | 2> SET k 2 | MULTI | GET k | EXEC | MULTI | GET k | EXEC x | EXEC"},
  {"info", "?INFO | ?INFO memory | ?INFO MEMORY server | ?INFO replication stats | INFO nosuch | ?INFO default | HELLO 3 | ?INFO memory | INFO nosuch"},
  // Every section, in Redis' order whatever the arguments' order; "all" and "everything" add
  // commandstats and latencystats; ioredis' ready check reads loading: from a plain INFO.
  {"info_sections", "SET k v | EXPIRE k 100 | GET k | GET nokey | FOO | ?INFO everything | ?INFO all | ?INFO clients | ?INFO persistence | ?INFO cpu | ?INFO keyspace | ?INFO commandstats | ?INFO errorstats | ?INFO cluster | ?INFO modules | ?INFO keyspace server | ?INFO cpu sentinel | ?INFO cpu all | ?INFO cpu default | ?INFO latencystats | INFO x y"},
  // 7.0.15's parameter table and defaults (everything but what the test server's command
  // line sets: bind, save, dir, logfile, port, protected-mode).
  {"config_defaults", "%CONFIG GET a* c* [e-k]* m* n* o* r* t* u* z* | %CONFIG GET bind-source-addr bio_cpulist bgsave_cpulist busy-reply-threshold | %CONFIG GET daemonize databases dbfilename dynamic-hz disable-thp | %CONFIG GET la* lazy* lfu* list* loglevel | %CONFIG GET pidfile proc-title-template propagation-error-behavior proto-max-bulk-len | %CONFIG GET s[b-z]* sanitize* | CONFIG GET slave-priority | CONFIG GET Hash-Max-Ziplist-Entries | CONFIG GET use-exit-on-panic | CONFIG GET *exit-on* | CONFIG GET maxmemory maxmemory MAXMEMORY"},
  {"config_get", "CONFIG GET maxmemory | %CONFIG GET maxmemory* | CONFIG GET maxmemory-policy | CONFIG GET MAXMEMORY | CONFIG GET nosuch | CONFIG GET | CONFIG FOO | HELLO 3 | CONFIG GET maxmemory | CONFIG GET nosuch"},
  {"acl_default", "ACL WHOAMI | ACL USERS | ACL WHOAMI x | ACL DELUSER default | ACL DELUSER nosuch | ACL DELUSER | ACL FOO | ACL | AUTH default anything | ACL WHOAMI"},
};
// clang-format on

class Differential : public ::testing::TestWithParam<Script> {
 public:
  static void SetUpTestSuite() { server_ = std::make_unique<lockwire::test::RedisServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

 protected:
  static std::unique_ptr<lockwire::test::RedisServer> server_;
};
std::unique_ptr<lockwire::test::RedisServer> Differential::server_;

TEST_P(Differential, ModelMatchesRedis) {
  const auto steps = parse_script(GetParam().text);
  {
    TcpConn c(server_->port());
    ASSERT_TRUE(c.ok());
    c.send(encode_command({"FLUSHALL"}));
    ASSERT_EQ(c.read_frames(1, false, 2000).size(), 1u);
  }
  const Transcript model = run_model(steps);
  const Transcript real = run_tcp(steps, server_->port(), model);
  const std::string diff = compare(steps, model, real);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs:\n" << diff;
}

// With a password: NOAUTH precedence, AUTH/HELLO AUTH, unauthenticated protocol limits.
// clang-format off
const Script kAuthScripts[] = {
  {"noauth", "GET k | PING | ECHO x | HELLO | HELLO 3 | CLIENT ID | MULTI | AUTH wrong | AUTH default wrong | AUTH secret | GET k | PING"},
  {"hello_auth", "HELLO 3 AUTH default wrong | HELLO 3 AUTH default secret | GET k | RESET | GET k | AUTH default secret | GET k"},
  {"noauth_multi", "AUTH secret | MULTI | GET k | EXEC"},
  {"noauth_big_multibulk", "@raw *11\\r\\n"},
  {"noauth_big_bulk", "@raw *1\\r\\n$20000\\r\\n"},
  {"noauth_quit", "QUIT"},
};
// clang-format on

class DifferentialAuth : public ::testing::TestWithParam<Script> {
 public:
  static void SetUpTestSuite() {
    server_ = std::make_unique<lockwire::test::RedisServer>(
        std::vector<std::string>{"--requirepass", "secret"});
  }
  static void TearDownTestSuite() { server_.reset(); }

 protected:
  static std::unique_ptr<lockwire::test::RedisServer> server_;
};
std::unique_ptr<lockwire::test::RedisServer> DifferentialAuth::server_;

TEST_P(DifferentialAuth, ModelMatchesRedis) {
  const auto steps = parse_script(GetParam().text);
  RedisModelOptions opt;
  opt.requirepass = "secret";
  const Transcript model = run_model(steps, opt);
  const Transcript real = run_tcp(steps, server_->port(), model);
  const std::string diff = compare(steps, model, real);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs:\n" << diff;
}
INSTANTIATE_TEST_SUITE_P(Scripts, DifferentialAuth, ::testing::ValuesIn(kAuthScripts),
                         [](const auto& info) { return std::string(info.param.name); });

// Random scripts from a small grammar (keys collide on purpose; two connections interleave
// transactions). Each seed is one script; a failure prints the script, which replays as a
// regular kScripts line.
std::string random_script(std::uint64_t seed) {
  Rng r(seed);
  const char* keys[] = {"k1", "k2", "h1", "z1", "s1", "n1"};
  const char* vals[] = {"v", "1", "-3", "10", "x y", "9223372036854775806", "2.5", ""};
  auto key = [&] { return std::string(keys[r.below(6)]); };
  auto val = [&] {
    std::string v = vals[r.below(8)];
    return v.find(' ') != std::string::npos || v.empty() ? "\"" + v + "\"" : v;
  };
  const std::vector<std::function<std::string()>> gens = {
      [&] { return "SET " + key() + " " + val(); },
      [&] {
        const char* o[] = {"NX", "XX", "GET", "EX 100", "PX 100000", "KEEPTTL", "NX GET", "XX GET"};
        return "SET " + key() + " " + val() + " " + o[r.below(8)];
      },
      [&] { return "GET " + key(); },
      [&] { return "INCR " + key(); },
      [&] { return "INCRBY " + key() + " " + val(); },
      [&] { return "DECRBY " + key() + " " + val(); },
      [&] { return "DEL " + key() + " " + key(); },
      [&] { return "EXISTS " + key() + " " + key(); },
      [&] { return "TYPE " + key(); },
      [&] {
        const char* o[] = {"", " NX", " XX", " GT", " LT"};
        return "EXPIRE " + key() + " " + std::to_string(100 + r.below(3) * 100) + o[r.below(5)];
      },
      [&] { return "PERSIST " + key(); },
      [&] { return "TTL " + key(); },
      [&] { return "HSET " + key() + " f" + std::to_string(r.below(3)) + " " + val(); },
      [&] { return "HGET " + key() + " f" + std::to_string(r.below(3)); },
      [&] { return "HMGET " + key() + " f0 f" + std::to_string(r.below(3)); },
      [&] { return "HDEL " + key() + " f" + std::to_string(r.below(3)); },
      [&] { return "HGETALL " + key(); },
      [&] { return "HINCRBY " + key() + " f" + std::to_string(r.below(3)) + " " + val(); },
      [&] { return "HSETNX " + key() + " f" + std::to_string(r.below(3)) + " " + val(); },
      [&] {
        const char* o[] = {"", "NX ", "XX ", "GT ", "LT ", "CH ", "INCR ", "GT CH "};
        return "ZADD " + key() + " " + o[r.below(8)] + val() + " m" + std::to_string(r.below(3));
      },
      [&] { return "ZRANGE " + key() + " 0 -1 WITHSCORES"; },
      [&] { return "ZRANGEBYSCORE " + key() + " -inf (5"; },
      [&] { return "ZSCORE " + key() + " m" + std::to_string(r.below(3)); },
      [&] { return "ZREM " + key() + " m" + std::to_string(r.below(3)); },
      [&] { return "ZREMRANGEBYSCORE " + key() + " 0 2"; },
      [&] { return "SADD " + key() + " " + std::to_string(r.below(5)); },
      [&] { return "SMEMBERS " + key(); },
      [&] { return "GETDEL " + key(); },
      [&] { return "GETEX " + key() + " EX 100"; },
      [&] { return "SETNX " + key() + " " + val(); },
      [&] { return std::string("MULTI"); },
      [&] { return std::string("EXEC"); },
      [&] { return "WATCH " + key(); },
      [&] { return std::string("DISCARD"); },
      [&] { return std::string("2> SET ") + key() + " " + val(); },
      [&] { return std::string("2> DEL ") + key(); },
      [&] { return std::string("HELLO 3"); },
      [&] { return std::string("HELLO 2"); },
  };
  std::string s;
  for (int i = 0; i < 40; ++i) {
    if (!s.empty()) s += " | ";
    s += gens[r.below(gens.size())]();
  }
  return s + " | EXEC | 2> EXEC";
}

class RandomDifferential : public Differential {};

TEST_F(RandomDifferential, RandomScriptsMatchRedis) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const std::string text = random_script(seed);
    const auto steps = parse_script(text);
    {
      TcpConn c(server_->port());
      ASSERT_TRUE(c.ok());
      c.send(encode_command({"FLUSHALL"}));
      ASSERT_EQ(c.read_frames(1, false, 2000).size(), 1u);
    }
    const Transcript model = run_model(steps);
    const Transcript real = run_tcp(steps, server_->port(), model);
    const std::string diff = compare(steps, model, real);
    EXPECT_TRUE(diff.empty()) << "random script seed " << seed << ":\n" << text << "\n" << diff;
  }
}

// A replica (of a port nobody listens on: it never syncs, and serves its empty dataset) against
// the model in replica mode: READONLY, and what still runs.
// clang-format off
const Script kReplicaScripts[] = {
  {"readonly", "SET k v | GET k | DEL k | EXPIRE k 1 | GETEX k | GETEX k PX 100 | INCR n | HSET h f v | FLUSHALL | PUBLISH c m | GET k | WAIT 0 0"},
  {"readonly_multi", "MULTI | SET k v | GET k | EXEC | MULTI | GET k | EXEC | MULTI | PING | INCR n | EXEC"},
  {"readonly_no_oom", "CONFIG SET maxmemory 1 | SET k v | GET k | MULTI | GET k | EXEC | CONFIG SET maxmemory 0"},
  {"readonly_info", "?INFO replication | ?INFO"},
};
// clang-format on

class DifferentialReplica : public ::testing::TestWithParam<Script> {
 public:
  static void SetUpTestSuite() {
    master_port_ = lockwire::test::free_loopback_port();
    server_ = std::make_unique<lockwire::test::RedisServer>(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(master_port_)});
  }
  static void TearDownTestSuite() { server_.reset(); }

 protected:
  static std::unique_ptr<lockwire::test::RedisServer> server_;
  static std::uint16_t master_port_;
};
std::unique_ptr<lockwire::test::RedisServer> DifferentialReplica::server_;
std::uint16_t DifferentialReplica::master_port_ = 0;

TEST_P(DifferentialReplica, ModelMatchesRedis) {
  const auto steps = parse_script(GetParam().text);
  const Transcript model =
      run_model(steps, {}, [](RedisModel& m) { m.set_replica(true, "127.0.0.1", master_port_); });
  const Transcript real = run_tcp(steps, server_->port(), model);
  const std::string diff = compare(steps, model, real);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs:\n" << diff;
}
INSTANTIATE_TEST_SUITE_P(Scripts, DifferentialReplica, ::testing::ValuesIn(kReplicaScripts),
                         [](const auto& info) { return std::string(info.param.name); });

// Server conditions that break lock clients in production (issue #13): CLIENT PAUSE, ACL users
// with denied commands, maxmemory. Each script changes server-wide state, so each gets a fresh
// redis-server (and, below, a fresh `lockwire-sim serve`). Pauses are short (300 ms) and the
// sleeps after them generous: a real server lifts a pause at its next event-loop turn after the
// end (up to one 100 ms cron later), the model at its next cron or input.
// clang-format off
const Script kConditionScripts[] = {
  // Under WRITE, reads and connection commands run; writes, PUBLISH, a write queued in MULTI and
  // EXEC of writes wait; commands refused before the pause check (unknown, arity) answer at once.
  // Released in the order they were held (conn 3's SET before conn 2's: GET k answers a; the
// round trip on conn 9 in between makes sure serve mode, which reads ready sockets in descriptor
// order, has taken conn 3's command first).
  {"pause_write", "SET k 1 | 2> PING | CLIENT PAUSE 300 WRITE | 2> GET k | 2> PING | 2> EXISTS k | 2> TTL k | 3> SET k b | 3> GET k | 9> PING | 2> SET k a | 2> GET k | 4> PUBLISH ch m | 5> MULTI | 5> GET k | 5> SET k 5 | 5> EXEC | 6> MULTI | 6> GET k | 6> EXEC | 7> ~CLIENT ID | 7> FOO | 7> SET k | 7> CLIENT PAUSE 10 WRITE | 8> DEL k | @sleep 600 | GET k | 5> GET k"},
  // ALL holds everything that is not refused first, CLIENT UNPAUSE included.
  {"pause_all", "CLIENT PAUSE 300 ALL | 2> FOO | 3> SET k | 4> GET k | 5> PING | 6> MULTI | 7> CLIENT UNPAUSE | 8> SUBSCRIBE x | @sleep 600 | GET k"},
  // CLIENT UNPAUSE releases at once, in order; a stricter or longer pause wins over a later one.
  {"pause_unpause", "2> PING | CLIENT PAUSE 5000 WRITE | 3> SET k b | 4> GET k | 2> SET k a | 2> GET k | CLIENT PAUSE 100 WRITE | 4> GET k | CLIENT UNPAUSE | GET k | CLIENT PAUSE 1500 WRITE | CLIENT PAUSE 10 ALL | 5> GET k | 6> CLIENT UNPAUSE | @sleep 2000 | 5> GET k"},
  // No expiry during a pause: an expired key is hidden (GET nil, TTL -2) but still counted by
  // DBSIZE, and deleted (with its invalidation) after the pause.
  {"pause_expiry", "HELLO 3 | SET e v PX 200 | CLIENT TRACKING ON | GET e | CLIENT PAUSE 600 WRITE | @sleep 400 | 2> GET e | 2> EXISTS e | 2> TTL e | 2> DBSIZE | 2> KEYS * | @sleep 600 | 2> DBSIZE | 2> PING"},
  // A lock deployment's user: keys under a prefix, no channels, no tracking, no @dangerous.
  {"acl_lock_user", "ACL SETUSER app on >pw ~lockwire:* resetchannels +@all -client|tracking -client|caching -@dangerous | 2> GET x | 2> AUTH app wrong | 2> AUTH app pw | 2> ACL WHOAMI | 2> GET lockwire:a | 2> GET other | 2> SET other v | 2> MGET lockwire:a other | 2> MSET lockwire:a 1 other 2 | 2> DEL lockwire:a other | 2> CLIENT TRACKING ON | 2> CLIENT CACHING YES | 2> ~CLIENT ID | 2> CLIENT KILL ID 1 | 2> FLUSHALL | 2> KEYS * | 2> INFO | 2> CONFIG GET maxmemory | 2> SUBSCRIBE ch | 2> PSUBSCRIBE ch* | 2> PUBLISH ch m | 2> UNSUBSCRIBE ch | 2> DEBUG SLEEP 0 | 2> FOO | 2> SET lockwire:a | 2> HSET lockwire:h f v | 2> WATCH other | 2> WATCH lockwire:a | 2> UNWATCH | 2> MULTI | 2> SET lockwire:a 1 | 2> GET other | 2> CLIENT TRACKING ON | 2> EXEC | 2> RESET | 2> ACL WHOAMI"},
  {"acl_channels", "ACL SETUSER s on nopass +@all ~* resetchannels &lock:* &exact | 2> AUTH s x | 2> SUBSCRIBE lock:a exact | 2> SUBSCRIBE lock:b other | 2> PSUBSCRIBE lock:* | 2> PSUBSCRIBE lock:a* | 2> PSUBSCRIBE exact | 3> AUTH s x | 3> PUBLISH lock:a m | 3> PUBLISH other m | 3> PUBLISH exact m"},
  {"acl_setuser_rules", "ACL SETUSER u foo | ACL USERS | ACL SETUSER u +nosuch | ACL SETUSER u +@nosuch | ACL SETUSER u +get|x | ACL SETUSER u -client|nosuch | ACL SETUSER u +client|id|x | ACL SETUSER | ACL SETUSER \"a b\" | ACL SETUSER n2 ~* ~x | ACL SETUSER n2 allkeys ~x | ACL SETUSER n3 &* &x | ACL SETUSER n4 ~a ~b allkeys ~c | ACL SETUSER n5 <nopw | ACL SETUSER u ON nopass | ACL SETUSER n3 allchannels | ACL USERS | ACL DELUSER u nosuch n3 | ACL DELUSER default | ACL USERS"},
  {"acl_categories", "ACL SETUSER n7 on nopass +@all ~* -@dangerous +info | 2> AUTH n7 anything | 2> INFO nosuch | 2> KEYS * | 2> ROLE | 2> CLIENT PAUSE 10 | 2> ~CLIENT ID | ACL SETUSER n8 on nopass +client -client|kill ~* | 3> AUTH n8 x | 3> CLIENT KILL ID 1 | 3> ~CLIENT ID | 3> GET k | ACL SETUSER v on >pw | 4> AUTH v pw | 4> PING | 4> ACL WHOAMI | 4> QUIT | ACL SETUSER r on nopass ~* +@read +@connection -@slow +select|0 | 5> AUTH r x | 5> GET k | 5> SET k v | 5> HGETALL h | 5> SELECT 0 | 5> SELECT 1 | 5> PING | 5> MULTI | ACL SETUSER w on nopass ~* +@all -@write +set | 6> AUTH w x | 6> SET k v | 6> DEL k | 6> GET k | 6> MULTI | 6> DEL k | 6> EXEC"},
  // Rules changed between MULTI and EXEC: EXEC re-checks every queued command.
  {"acl_exec_recheck", "ACL SETUSER m1 on nopass +@all ~* allchannels | 2> AUTH m1 x | 2> MULTI | 2> GET k | 2> PUBLISH ch x | 2> SET j 1 | ACL SETUSER m1 resetkeys ~j resetchannels | 2> EXEC | 2> GET k | 2> MULTI | 2> SET j 2 | ACL SETUSER m1 -set | 2> EXEC | 2> GET j"},
  // ACL DELUSER drops its connections; resetchannels drops its subscribers; OFF keeps them.
  {"acl_drops_clients", "ACL SETUSER w on >pw +@all ~* | 2> AUTH w pw | 2> GET k | ACL DELUSER w | 2> PING | ACL SETUSER n6 on >pw +@all ~* allchannels | 3> AUTH n6 pw | 3> SUBSCRIBE c1 | ACL SETUSER n6 resetchannels | 3> PING | ACL SETUSER v on >pw +@all ~* | 4> AUTH v pw | ACL SETUSER v off | 4> PING | 5> AUTH v pw | ACL SETUSER z on nopass +@all | 6> AUTH z x | 6> ACL DELUSER z | 6> PING"},
  {"acl_hello_auth", "ACL SETUSER v on >pw +@all ~* | 2> HELLO 3 AUTH v wrong | 2> HELLO 3 AUTH nouser pw | 2> HELLO 3 AUTH v pw | 2> ACL WHOAMI | 2> RESET | 2> ACL WHOAMI | ACL SETUSER d on nopass | 3> HELLO 2 AUTH d x | 3> GET k"},
  // A password for the default user: connections opened before it keep working.
  {"acl_default_password", "ACL SETUSER default resetpass >secret | 2> GET k | 2> AUTH secret | 2> GET k | GET k | 3> AUTH default nope | 3> HELLO 3 | 4> HELLO 3 AUTH default secret | ACL SETUSER default nopass | 5> GET k"},
  // Keyspace notifications (notify-keyspace-events) for the commands that emit them, in Redis'
  // order: a subscriber to every channel sees __keyspace@0__:<key> <event> then
  // __keyevent@0__:<event> <key> as each command runs.
  {"notify_events", "CONFIG SET notify-keyspace-events KEA | 2> PSUBSCRIBE * | SET k v | SET k v EX 100 | EXPIRE k 200 | PERSIST k | DEL k | LPUSH l a b c | RPOP l | LPOP l 2 | HSET h f v | HINCRBY h n 1 | HINCRBYFLOAT h n 1.5 | HDEL h f n | SADD s a b | SREM s a | SPOP s | SMOVE s t x | SADD s x | SMOVE s t x | ZADD z 1 a 2 b | ZINCRBY z 1 a | ZREM z a | ZPOPMIN z | INCR n | INCRBYFLOAT n 1.5 | APPEND n x | RENAME n m | GETDEL m | SETRANGE r 0 x | MSET a 1 b 2 | COPY a c | MOVE c 1 | SET e v PX 50 | @sleep 300 | 3> BLPOP bl 0 | RPUSH bl x | LPUSH q 1 2 | LMOVE q q2 LEFT RIGHT | LMOVE q q2 LEFT RIGHT | SORT q2 STORE q3 | SUNIONSTORE u t s | ZADD za 1 m | ZUNIONSTORE zu 1 za | ZRANGESTORE zr za 0 -1 | LTRIM q3 0 0 | LSET q3 0 y | LINSERT q3 BEFORE y w | LREM q3 0 w | SETBIT bits 1 1 | CONFIG SET notify-keyspace-events Eng | SET fresh 1 | DEL fresh | HSET fh f v | CONFIG SET notify-keyspace-events Km | GET nokey | HGET nokey f | MGET nokey a | CONFIG SET notify-keyspace-events \"\" | SET quiet 1"},
  // noeviction over the limit: denyoom commands refused, deletes and reads run; inside MULTI
  // everything is refused at queue time (EXECABORT).
  {"maxmemory_noeviction", "SET k v | HSET h f v | CONFIG SET maxmemory 1 | SET k v2 | GET k | DEL nokey | HDEL h f | EXPIRE k 100 | GETEX k | INCR n | HSET h a b | ZADD z 1 a | SADD s a | HINCRBY h x 1 | SETNX q 1 | MSET a 1 | PUBLISH c m | MULTI | GET k | DEL k | EXEC | MULTI | DISCARD | WATCH k | UNWATCH | PING | ~CLIENT ID | ?INFO memory | FLUSHALL | SET k v | CONFIG SET maxmemory 100mb | SET k v | CONFIG SET maxmemory 0 | SET k v2"},
  // Memory going over the limit after queuing: EXEC of denyoom commands aborts, EXEC of others runs.
  {"maxmemory_exec", "SET k v | MULTI | GET k | SET k 2 | 2> CONFIG SET maxmemory 1 | EXEC | GET k | MULTI | GET k | 2> CONFIG SET maxmemory 0 | EXEC | MULTI | DEL k | 2> CONFIG SET maxmemory 1 | EXEC | 2> CONFIG SET maxmemory 0"},
  // CONFIG SET's parsing and errors per type (bool, string, enum, multi-argument enum, int,
  // unsigned, memory, percent, special), aliases, immutable and protected parameters, the old
  // values restored when any fails, RESETSTAT.
  {"config_set_types", "CONFIG SET appendfsync always | CONFIG GET appendfsync | CONFIG SET appendfsync sometimes | CONFIG SET activerehashing maybe | CONFIG SET activerehashing NO | CONFIG GET activerehashing | CONFIG SET hz abc | CONFIG SET hz -1 | CONFIG SET hz 20 | CONFIG GET hz | ?INFO server | CONFIG SET hz 10 | CONFIG SET maxclients 0 | CONFIG SET maxclients -1 | CONFIG SET port 70000 | CONFIG SET maxmemory-clients 10% | CONFIG GET maxmemory-clients | CONFIG SET maxmemory-clients -200% | CONFIG SET maxmemory-clients 1mb | CONFIG GET maxmemory-clients | CONFIG SET maxmemory-clients 0 | CONFIG SET proto-max-bulk-len 1000 | CONFIG SET proto-max-bulk-len 2mb | CONFIG GET proto-max-bulk-len | CONFIG SET proto-max-bulk-len 512mb | CONFIG SET shutdown-on-sigint \"save nosave\" | CONFIG GET shutdown-on-sigint | CONFIG SET shutdown-on-sigint \"save foo\" | CONFIG SET shutdown-on-sigint default | CONFIG SET loglevel foo | CONFIG SET databases 4 | CONFIG SET daemonize yes | CONFIG SET dir /tmp | CONFIG SET dbfilename x.rdb | CONFIG SET hz 20 maxclients 0 | CONFIG GET hz | CONFIG SET hash-max-ziplist-entries 10 hash-max-listpack-entries 20 | CONFIG GET hash-max-ziplist-entries | CONFIG SET lua-time-limit 100 | CONFIG GET busy-reply-threshold | CONFIG SET latency-tracking-info-percentiles \"50 99.5 100\" | CONFIG GET latency-tracking-info-percentiles | CONFIG SET latency-tracking-info-percentiles \"50 101\" | CONFIG SET latency-tracking-info-percentiles x | CONFIG SET oom-score-adj-values \"1 2 3\" | CONFIG GET oom-score-adj-values | CONFIG SET oom-score-adj-values \"1 2\" | CONFIG SET oom-score-adj-values \"1 2 9999\" | CONFIG SET save 100 | CONFIG SET save \"100 x\" | CONFIG SET save \"0 1\" | CONFIG SET save \"100 1 200 2\" | CONFIG GET save | CONFIG SET save \"\" | CONFIG GET save | CONFIG SET nosuch 1 hz 5 | CONFIG SET hz 5 nosuch 1 | CONFIG SET databases 1 nosuch 1 | CONFIG SET a b c | CONFIG SET | CONFIG RESETSTAT x | CONFIG RESETSTAT | CONFIG SET ignore-warnings \"\" | CONFIG GET ignore-warnings | CONFIG SET replica-announce-ip 1.2.3.4 | CONFIG GET slave-announce-ip"},
  {"config_set_special", "CONFIG SET client-output-buffer-limit \"normal 1mb 2mb 3\" | CONFIG GET client-output-buffer-limit | CONFIG SET client-output-buffer-limit \"replica 1 2 3 pubsub 4kb 5 6\" | CONFIG GET client-output-buffer-limit | CONFIG SET client-output-buffer-limit \"normal 1 2\" | CONFIG SET client-output-buffer-limit \"master 1 2 3\" | CONFIG SET client-output-buffer-limit \"normal x 2 3\" | CONFIG SET client-output-buffer-limit \"normal 1 2 -3\" | CONFIG SET notify-keyspace-events KEA | CONFIG GET notify-keyspace-events | CONFIG SET notify-keyspace-events Kgx$lshzetmdn | CONFIG GET notify-keyspace-events | CONFIG SET notify-keyspace-events Em | CONFIG GET notify-keyspace-events | CONFIG SET notify-keyspace-events q | CONFIG SET notify-keyspace-events \"\" | CONFIG GET notify-keyspace-events | CONFIG SET bind \"1.2.3.4 5.6.7.8\" | CONFIG SET requirepass pw | 2> PING | 2> AUTH pw | 2> PING | CONFIG GET requirepass | CONFIG SET requirepass \"\" | 3> PING | CONFIG SET maxclients 12 | CONFIG GET maxclients | ?INFO clients | CONFIG SET maxclients 10000"},
  {"maxmemory_config", "CONFIG SET maxmemory 1kb | CONFIG GET maxmemory | CONFIG SET maxmemory 1k | CONFIG GET maxmemory | CONFIG SET maxmemory 2MB | CONFIG GET maxmemory | CONFIG SET maxmemory 1g | CONFIG GET maxmemory | ?INFO memory | CONFIG SET maxmemory -1 | CONFIG SET maxmemory abc | CONFIG SET maxmemory 1.5mb | CONFIG SET maxmemory 10% | CONFIG SET maxmemory \"\" | CONFIG GET maxmemory | CONFIG SET maxmemory-policy foo | CONFIG SET maxmemory-policy ALLKEYS-LRU | CONFIG GET maxmemory-policy | CONFIG SET foo 1 | CONFIG SET maxmemory | CONFIG SET maxmemory 0 maxmemory-policy | CONFIG SET maxmemory 0 maxmemory 1 | CONFIG SET maxmemory 0 MAXMEMORY 1 | CONFIG SET maxmemory 5 maxmemory-policy bad | CONFIG GET maxmemory | %CONFIG GET maxmemory maxmemory-policy maxmemory | CONFIG SET maxmemory 18446744073709551616 | CONFIG GET maxmemory | CONFIG SET maxmemory 0 maxmemory-policy volatile-ttl | ?INFO memory"},
  // Evicting policies far over the limit: volatile-* evicts the keys with a TTL (then OOM),
  // allkeys-* every key in every database; an evicted tracked key is invalidated like a delete.
  {"maxmemory_evict", "HELLO 3 | SET a 1 | SET b 2 EX 100 | SET c 3 | SELECT 1 | SET d 4 | SELECT 0 | CLIENT TRACKING ON | GET b | CONFIG SET maxmemory-policy volatile-lru | CONFIG SET maxmemory 1 | DBSIZE | GET a | SET e 5 | DBSIZE | GET b | CONFIG SET maxmemory-policy allkeys-random | GET a | DBSIZE | SET e 5 | DBSIZE | SELECT 1 | DBSIZE | ?INFO stats | CONFIG SET maxmemory 0 | SET e 5 | DBSIZE"},
  {"maxmemory_evict_watch", "SET k v | WATCH k | MULTI | GET k | 2> CONFIG SET maxmemory-policy allkeys-lru | 2> CONFIG SET maxmemory 1 | 2> PING | 2> CONFIG SET maxmemory 0 | EXEC | SET k v EX 100 | SET j v | WATCH j | 2> CONFIG SET maxmemory-policy volatile-ttl | 2> CONFIG SET maxmemory 1 | 2> EXISTS k j | 2> CONFIG SET maxmemory 0 | MULTI | PING | EXEC"},
  // While paused nothing is evicted and nothing refused; the held write is refused after it.
  {"maxmemory_paused", "2> CONFIG SET maxmemory 1 | 2> CLIENT PAUSE 5000 WRITE | SET x 1 | 3> MULTI | 3> GET k | 3> EXEC | 3> CLIENT UNPAUSE | GET x | 3> CONFIG SET maxmemory 0"},
};
// clang-format on

class DifferentialConditions : public ::testing::TestWithParam<Script> {};

TEST_P(DifferentialConditions, ModelMatchesRedis) {
  lockwire::test::RedisServer server;
  const auto steps = parse_script(GetParam().text);
  const Transcript model = run_model(steps);
  const Transcript real = run_tcp(steps, server.port(), model);
  const std::string diff = compare(steps, model, real);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs:\n" << diff;
}
INSTANTIATE_TEST_SUITE_P(Scripts, DifferentialConditions, ::testing::ValuesIn(kConditionScripts),
                         [](const auto& info) { return std::string(info.param.name); });

#ifdef LOCKWIRE_SIM_BIN
class ServeMode : public ::testing::TestWithParam<Script> {
 public:
  static void SetUpTestSuite() { serve_ = std::make_unique<ServeProcess>(); }
  static void TearDownTestSuite() { serve_.reset(); }

 protected:
  static std::unique_ptr<ServeProcess> serve_;
};
std::unique_ptr<ServeProcess> ServeMode::serve_;

// Serve mode runs the same model on a real socket with the real clock; since the model matches
// redis-server byte for byte (above), matching the model here means serve mode matches Redis.
TEST_P(ServeMode, ServeMatchesModel) {
  ASSERT_TRUE(serve_->ok()) << "lockwire-sim serve did not start";
  const auto steps = parse_script(GetParam().text);
  {
    TcpConn c(serve_->port());
    ASSERT_TRUE(c.ok());
    c.send(encode_command({"FLUSHALL"}));
    ASSERT_EQ(c.read_frames(1, false, 2000).size(), 1u);
  }
  const Transcript model = run_model(steps);
  const Transcript served = run_tcp(steps, serve_->port(), model);
  const std::string diff = compare(steps, model, served);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs in serve mode:\n" << diff;
}

TEST(ServeModeRobustness, SurvivesGarbageAndManyConnections) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok());
  Rng rng(99);
  std::vector<std::unique_ptr<TcpConn>> conns;
  for (int i = 0; i < 200; ++i) {
    conns.push_back(std::make_unique<TcpConn>(serve.port()));
    ASSERT_TRUE(conns.back()->ok());
    std::string junk(static_cast<std::size_t>(rng.below(300)), '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng.below(256));
    if (i % 3 == 0) {
      junk = "*";
      junk.append(std::to_string(rng.next())).append("\r\n$99999999999\r\n");
    }
    conns.back()->send(junk);
  }
  conns.clear();
  TcpConn c(serve.port());
  ASSERT_TRUE(c.ok());
  c.send(encode_command({"PING"}));
  const auto frames = c.read_frames(1, false, 2000);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], "+PONG\r\n");
}

INSTANTIATE_TEST_SUITE_P(Scripts, ServeMode, ::testing::ValuesIn(kScripts),
                         [](const auto& info) { return std::string(info.param.name); });

// The condition scripts on serve mode (a fresh process each: they change server-wide state).
class ServeConditions : public ::testing::TestWithParam<Script> {};

TEST_P(ServeConditions, ServeMatchesModel) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << "lockwire-sim serve did not start";
  const auto steps = parse_script(GetParam().text);
  const Transcript model = run_model(steps);
  const Transcript served = run_tcp(steps, serve.port(), model);
  const std::string diff = compare(steps, model, served);
  EXPECT_TRUE(diff.empty()) << "script " << GetParam().name << " differs in serve mode:\n" << diff;
}
INSTANTIATE_TEST_SUITE_P(Scripts, ServeConditions, ::testing::ValuesIn(kConditionScripts),
                         [](const auto& info) { return std::string(info.param.name); });
#endif

INSTANTIATE_TEST_SUITE_P(Scripts, Differential, ::testing::ValuesIn(kScripts),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lockwire::sim::test
