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

extern char** environ;

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
  {"zset_resp3", "HELLO 3 | ZADD z 1 a 0.1 b | ZSCORE z b | ZRANGE z 0 -1 WITHSCORES | ZRANGEBYSCORE z -inf +inf WITHSCORES | ZADD z INCR 1 a | ZSCORE z nope"},
  {"wrongtype", "SET s v | HGET s f | SADD s m | ZADD s 1 m | ZSCORE s m | SMEMBERS s | HGETALL s | ZRANGE s 0 -1"},
  {"keys_scan", "MSET a 1 b | MSET a 1 | MGET a nokey a1 | SET a1 1 | SET a2 2 | SET b1 3 | HSET h f v | %KEYS * | %KEYS a* | %KEYS ?1 | %KEYS [ab]1 | KEYS nomatch | %SCAN 0 COUNT 100 | %SCAN 0 COUNT 100 MATCH a* | %SCAN 0 COUNT 100 TYPE hash | SCAN x | SCAN 0 COUNT 0 | SCAN 0 COUNT x | SCAN 0 MATCH | SCAN 0 FOO bar | DBSIZE | FLUSHDB | DBSIZE | FLUSHDB x | FLUSHDB ASYNC | FLUSHALL SYNC | FLUSHALL a b"},
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

#ifdef LOCKWIRE_SIM_BIN
// `lockwire-sim serve` on a free port, killed at the end.
class ServeProcess {
 public:
  ServeProcess() {
    for (int attempt = 0; attempt < 10 && pid_ < 0; ++attempt) {
      port_ = lockwire::test::free_loopback_port();
      const std::string p = std::to_string(port_);
      const char* argv[] = {LOCKWIRE_SIM_BIN, "serve", "--port", p.c_str(), "--seed", "7", nullptr};
      pid_t pid = -1;
      if (::posix_spawn(&pid, LOCKWIRE_SIM_BIN, nullptr, nullptr, const_cast<char**>(argv),
                        environ) != 0)
        continue;
      for (int i = 0; i < 200; ++i) {
        TcpConn c(port_);
        if (c.ok()) {
          pid_ = pid;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (pid_ < 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

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
#endif

INSTANTIATE_TEST_SUITE_P(Scripts, Differential, ::testing::ValuesIn(kScripts),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lockwire::sim::test
