// bench_hiredis_peers: two C++ Redis locks on hiredis, acquire+release benchmark; prints one JSON
// object in the schema of the other peers (redispy_bench.py, redlock_bench.js). One file of
// close to 900 lines on purpose: it is a standalone peer, built against libhiredis only (none of
// lockwire's code), and each lock and mode is short; the pieces that would split out are the
// three locks and the three modes.
//
//   bench_hiredis_peers --lock lua|lua-fenced|watch --port P [--host 127.0.0.1]
//        --mode serial|throughput|handoff [--users N] [--waiters N] [--duration S] [--pairs N]
//        [--handoffs N] [--ttl MS] [--sleep-max-ms X] [--sleep-whole 0|1] [--hold MS]
//        [--prefix P]
//
// The locks (both written here from their published algorithms; no code taken from elsewhere):
//
//   lua         The canonical single-instance Redis lock. acquire: SET k token NX PX ttl.
//               release: the documented compare-and-delete script,
//                 if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1])
//                 else return 0 end
//               by EVALSHA (SCRIPT LOAD once at start; EVAL when the server answers NOSCRIPT).
//               No fencing token. 1 request per acquire, 1 per release.
//   lua-fenced  The same lock handing out a fencing token, as lockwire's acquire does: acquire is
//               one EVALSHA of `if redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then
//               return redis.call("incr",KEYS[2]) else return false end` (KEYS[2] = k..":fence"),
//               atomic, one request; release as `lua`.
//   watch       A Lua-free WATCH/MULTI/EXEC lock after redis-plus-plus's RedMutexTx (its
//               `RedMutexOptions::scripting = false` mode). acquire: WATCH k + GET k (one
//               request); if k is absent MULTI + SET k token PX ttl + EXEC (one request; a nil
//               EXEC, i.e. k changed since WATCH, is a failed attempt), else UNWATCH (sent, not
//               waited for) and the attempt failed. release: WATCH k + GET k; if the value is
//               ours MULTI + DEL k + EXEC, else UNWATCH. 2 requests per acquire, 2 per release.
//               redis-plus-plus itself (1.3.x) acquires with a plain SET NX PX and uses this
//               transaction only to release and extend; the acquire here is the transactional
//               one (WATCH/GET/MULTI/SET/EXEC), so that the whole lock is Lua-free.
//               No fencing token.
//
// Pipelining: every request is written together with whatever else is ready in the same loop
// iteration (hiredis' async API on an epoll loop written here, output flushed once per
// iteration): `lua` and `lua-fenced` run every user (and every hand-off contender) on ONE
// connection, like lockwire and node-redlock. `watch` gives each user its own connection: WATCH
// state belongs to the connection (a WATCH by one user would guard another user's EXEC, and an
// UNWATCH or EXEC would drop the other's WATCH), so users cannot share one, and serialising them
// per connection would make the 16/256-user rows a queue. Inside one user's transaction the
// commands that do not need a reply first are pipelined (WATCH with GET; MULTI, SET/DEL and EXEC
// together): fewer round trips than redis-plus-plus, whose WATCH and GET are separate calls.
//
// Modes (as the other peers):
//   serial:     one caller, acquire+release pairs back to back on one resource (one attempt
//               each: an uncontended acquire that fails is an error).
//   throughput: N users on N distinct resources (closed loops, same one-attempt rule).
//   handoff:    waiters+1 contenders on one resource; each holds for --hold ms, releases, and
//               rejoins the waiters after the next grant (after a random arrival delay within one
//               polling interval); latency = from a holder starting its release until the next
//               contender holds. Waiting is polling: sleep, then try again. Default sleep: a
//               uniformly random whole number of milliseconds in 0..5 before each attempt, as
//               redis-plus-plus's RedMutex::lock() does (--sleep-max-ms 5 --sleep-whole 1); the
//               tuned setting polls after a uniformly random 0..1 ms (--sleep-max-ms 1
//               --sleep-whole 0).
// Client CPU is getrusage(RUSAGE_SELF) over the measured interval / pairs. Requests: writes
// whose replies the user waits for (an UNWATCH sent without waiting counts as one), commands:
// the commands in them; commands_by_name counts the whole process (warm-up included), so that
// collect.py can tell the commands it sent from those its scripts called.
// One file on purpose: it is a standalone peer, built and read as one program. Its parts are
// the epoll adapter, the three locks and the three modes, and each lock is written against the
// same loop and counters, so splitting it would mostly move declarations around.
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "latency_json.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Time = Clock::time_point;

[[noreturn]] void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("bench_hiredis_peers: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::exit(1);
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double us_between(Time a, Time b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// ---------------------------------------------------------------------------------------------
// A single-threaded epoll loop with timers (a timerfd armed for the earliest one) and hiredis
// async contexts attached to it. Output is flushed once per iteration, after every reply and
// timer of the iteration ran, so that what several users send in one iteration goes out in one
// write per connection.

class Conn;

class Loop {
 public:
  Loop() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    tfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ep_ < 0 || tfd_ < 0) die("epoll/timerfd: %s", std::strerror(errno));
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = nullptr;  // the timerfd
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, tfd_, &e) != 0) die("epoll_ctl: %s", std::strerror(errno));
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void after(Clock::duration d, std::function<void()> f) { at(Clock::now() + d, std::move(f)); }
  void at(Time t, std::function<void()> f) {
    timers_.push_back(Timer{t, seq_++, std::move(f)});
    std::push_heap(timers_.begin(), timers_.end(), later);
    if (!armed_ || t < *armed_) arm(t);
  }

  template <class Done>
  void run_until(const Done& done) {
    while (!done()) run_once();
  }

  int epoll_fd() const { return ep_; }
  void mark_dirty(Conn* c) { dirty_.push_back(c); }

 private:
  struct Timer {
    Time t;
    std::uint64_t seq;
    std::function<void()> f;
  };
  static bool later(const Timer& a, const Timer& b) {
    return a.t != b.t ? a.t > b.t : a.seq > b.seq;
  }

  void arm(Time t) {
    itimerspec its{};
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    if (ns <= 0) ns = 1;  // zero would disarm; a time in the past fires at once
    its.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    its.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
    if (timerfd_settime(tfd_, TFD_TIMER_ABSTIME, &its, nullptr) != 0) {
      die("timerfd_settime: %s", std::strerror(errno));
    }
    armed_ = t;
  }

  void run_once();
  void flush();

  int ep_ = -1;
  int tfd_ = -1;
  std::vector<Timer> timers_;  // a min-heap on (t, seq)
  std::uint64_t seq_ = 0;
  std::optional<Time> armed_;
  std::vector<Conn*> dirty_;  // connections with output to write at the end of the iteration
};

// Commands this benchmark sends, counted by name.
enum Cmd {
  kPing,
  kScript,
  kSet,
  kEvalsha,
  kEval,
  kWatch,
  kGet,
  kMulti,
  kExec,
  kUnwatch,
  kDel,
  kCmdCount
};
constexpr std::array<const char*, kCmdCount> kCmdNames = {
    "ping", "script", "set", "evalsha", "eval", "watch", "get", "multi", "exec", "unwatch", "del"};

struct Counters {
  std::uint64_t commands = 0, requests = 0;
  std::array<std::uint64_t, kCmdCount> by_name{};  // whole process, never reset
};
Counters g_sent;

using Reply = const redisReply*;
using Callback = std::function<void(Reply)>;

// One hiredis async connection on the loop.
class Conn {
 public:
  Conn(Loop& loop, const char* host, int port) : loop_(loop) {
    ac_ = redisAsyncConnect(host, port);
    if (ac_ == nullptr) die("redisAsyncConnect: out of memory");
    if (ac_->err != 0) die("connect %s:%d: %s", host, port, ac_->errstr);
    ac_->data = this;
    ac_->ev.data = this;
    ac_->ev.addRead = [](void* p) { static_cast<Conn*>(p)->want(true, true); };
    ac_->ev.delRead = [](void* p) { static_cast<Conn*>(p)->want(true, false); };
    ac_->ev.addWrite = [](void* p) { static_cast<Conn*>(p)->want(false, true); };
    ac_->ev.delWrite = [](void* p) { static_cast<Conn*>(p)->want(false, false); };
    ac_->ev.cleanup = [](void* p) { static_cast<Conn*>(p)->detach(); };
    redisAsyncSetConnectCallback(ac_, [](const redisAsyncContext* ac, int status) {
      if (status != REDIS_OK) die("connect: %s", ac->errstr);
      static_cast<Conn*>(ac->data)->connected_ = true;
    });
    redisAsyncSetDisconnectCallback(ac_, [](const redisAsyncContext* ac, int) {
      die("connection lost: %s", ac->errstr != nullptr ? ac->errstr : "closed");
    });
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Sends one command (argv[0] is its name); `cb` gets the reply. Without a callback the reply
  // only has to be no error.
  void send(Cmd name, std::initializer_list<std::string_view> argv, Callback cb = nullptr) {
    std::array<const char*, 8> ptr{};
    std::array<std::size_t, 8> len{};
    std::size_t n = 0;
    for (std::string_view a : argv) {
      ptr[n] = a.data();
      len[n] = a.size();
      ++n;
    }
    ++g_sent.commands;
    ++g_sent.by_name[name];
    int rc;
    if (cb) {
      rc = redisAsyncCommandArgv(ac_, &Conn::on_reply, new Callback(std::move(cb)),
                                 static_cast<int>(n), ptr.data(), len.data());
    } else {
      rc = redisAsyncCommandArgv(ac_, &Conn::on_checked, nullptr, static_cast<int>(n), ptr.data(),
                                 len.data());
    }
    if (rc != REDIS_OK) die("redisAsyncCommandArgv: %s", ac_->errstr);
  }

  // Called by the loop.
  void on_events(std::uint32_t ev) {
    if ((ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && reading_) redisAsyncHandleRead(ac_);
    if ((ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0 && writing_) redisAsyncHandleWrite(ac_);
  }
  // End of the iteration: write what the iteration queued. Until connected, EPOLLOUT tells.
  void flush() {
    dirty_ = false;
    if (writing_ && connected_) redisAsyncHandleWrite(ac_);
    update();
  }

 private:
  static void on_reply(redisAsyncContext*, void* r, void* priv) {
    std::unique_ptr<Callback> cb(static_cast<Callback*>(priv));
    if (r == nullptr) die("no reply (connection closing)");
    (*cb)(static_cast<Reply>(r));
  }
  static void on_checked(redisAsyncContext*, void* r, void*) {
    if (r == nullptr) die("no reply (connection closing)");
    auto* reply = static_cast<Reply>(r);
    if (reply->type == REDIS_REPLY_ERROR) die("error reply: %s", reply->str);
  }

  void want(bool read, bool on) {
    (read ? reading_ : writing_) = on;
    if (!read && on && connected_) {
      if (!dirty_) {
        dirty_ = true;
        loop_.mark_dirty(this);
      }
      return;  // flush() writes it, or asks for EPOLLOUT if the socket is full
    }
    update();
  }
  // Epoll interest: reads while hiredis wants them; writes only while connecting or while a
  // write could not finish (flush() retries those at the end of the next iteration too).
  void update() {
    std::uint32_t ev = (reading_ ? EPOLLIN : 0U) | (writing_ ? EPOLLOUT : 0U);
    if (registered_ && ev == events_) return;
    epoll_event e{};
    e.events = ev;
    e.data.ptr = this;
    if (epoll_ctl(loop_.epoll_fd(), registered_ ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, ac_->c.fd, &e) !=
        0) {
      die("epoll_ctl: %s", std::strerror(errno));
    }
    registered_ = true;
    events_ = ev;
  }
  void detach() {
    if (registered_) epoll_ctl(loop_.epoll_fd(), EPOLL_CTL_DEL, ac_->c.fd, nullptr);
    registered_ = false;
  }

  Loop& loop_;
  redisAsyncContext* ac_ = nullptr;
  bool reading_ = false, writing_ = false, connected_ = false, registered_ = false, dirty_ = false;
  std::uint32_t events_ = 0;
};

void Loop::flush() {
  std::vector<Conn*> d;
  d.swap(dirty_);
  for (Conn* c : d) c->flush();
}

void Loop::run_once() {
  flush();
  std::array<epoll_event, 64> evs{};
  const int n = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), -1);
  if (n < 0) {
    if (errno == EINTR) return;
    die("epoll_wait: %s", std::strerror(errno));
  }
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.ptr == nullptr) {
      std::uint64_t expirations = 0;
      (void)!read(tfd_, &expirations, sizeof expirations);
      armed_.reset();
      continue;
    }
    static_cast<Conn*>(evs[i].data.ptr)->on_events(evs[i].events);
  }
  const Time now = Clock::now();
  while (!timers_.empty() && timers_.front().t <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later);
    std::function<void()> f = std::move(timers_.back().f);
    timers_.pop_back();
    f();
  }
  if (!timers_.empty() && (!armed_ || timers_.front().t != *armed_)) arm(timers_.front().t);
}

// ---------------------------------------------------------------------------------------------
// The locks. acquire: one attempt, done(true) when held. release: done(true) when it deleted
// the key, done(false) when the key was no longer ours. `res` and `token` must outlive the call.

// A lock's resource: its key, and the key of its fencing counter (used by lua-fenced only).
struct Res {
  std::string key, fence;
  explicit Res(std::string k) : key(std::move(k)), fence(key + ":fence") {}
};

bool is(Reply r, int type) {
  return r->type == type;
}
bool is_status(Reply r, std::string_view s) {
  return r->type == REDIS_REPLY_STATUS && std::string_view(r->str, r->len) == s;
}
[[noreturn]] void unexpected(const char* what, Reply r) {
  die("%s: unexpected reply (type %d%s%s)", what, r->type,
      r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ? ": " : "",
      r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ? r->str : "");
}

class Lock {
 public:
  virtual ~Lock() = default;
  virtual void acquire(Conn& c, const Res& res, const std::string& token,
                       std::function<void(bool)> done) = 0;
  virtual void release(Conn& c, const Res& res, const std::string& token,
                       std::function<void(bool)> done) = 0;
  // Before the first pair, on the first connection (SCRIPT LOAD).
  virtual void prepare(Loop&, Conn&) {}
  virtual const char* contender() const = 0;
  virtual const char* library() const = 0;
  virtual const char* fencing() const = 0;
  virtual bool shares_connection() const = 0;
};

std::string ttl_ms_text;  // --ttl, as sent

const char* const kReleaseScript =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) "
    "else return 0 end";
const char* const kFencedAcquireScript =
    "if redis.call(\"set\",KEYS[1],ARGV[1],\"NX\",\"PX\",ARGV[2]) then "
    "return redis.call(\"incr\",KEYS[2]) else return false end";

class LuaLock : public Lock {
 public:
  explicit LuaLock(bool fenced) : fenced_(fenced) {}

  void prepare(Loop& loop, Conn& c) override {
    int pending = fenced_ ? 2 : 1;
    auto load = [&](const char* script, std::string* sha) {
      ++g_sent.requests;
      c.send(kScript, {"SCRIPT", "LOAD", script}, [&, sha](Reply r) {
        if (!is(r, REDIS_REPLY_STRING)) unexpected("SCRIPT LOAD", r);
        sha->assign(r->str, r->len);
        --pending;
      });
    };
    load(kReleaseScript, &release_sha_);
    if (fenced_) load(kFencedAcquireScript, &acquire_sha_);
    loop.run_until([&] { return pending == 0; });
  }

  void acquire(Conn& c, const Res& res, const std::string& token,
               std::function<void(bool)> done) override {
    ++g_sent.requests;
    if (!fenced_) {
      c.send(kSet, {"SET", res.key, token, "NX", "PX", ttl_ms_text},
             [done = std::move(done)](Reply r) {
               if (is_status(r, "OK")) {
                 done(true);
               } else if (is(r, REDIS_REPLY_NIL)) {
                 done(false);
               } else {
                 unexpected("SET NX PX", r);
               }
             });
      return;
    }
    evalsha(c, acquire_sha_, kFencedAcquireScript, "2", res.key, res.fence, token, ttl_ms_text,
            [this, done = std::move(done)](Reply r) {
              if (is(r, REDIS_REPLY_INTEGER)) {
                last_token_ = r->integer;  // the fencing token (not used further here)
                done(true);
              } else if (is(r, REDIS_REPLY_NIL)) {
                done(false);
              } else {
                unexpected("fenced acquire script", r);
              }
            });
  }

  void release(Conn& c, const Res& res, const std::string& token,
               std::function<void(bool)> done) override {
    ++g_sent.requests;
    evalsha(c, release_sha_, kReleaseScript, "1", res.key, token, {}, {},
            [done = std::move(done)](Reply r) {
              if (!is(r, REDIS_REPLY_INTEGER)) unexpected("release script", r);
              done(r->integer == 1);
            });
  }

  const char* contender() const override { return fenced_ ? "hiredis-lua-fenced" : "hiredis-lua"; }
  const char* library() const override {
    return fenced_ ? "Lua lock with fencing token (EVALSHA: SET NX PX + INCR; release: "
                     "compare-and-delete EVALSHA) on hiredis"
                   : "Lua lock (SET NX PX; release: compare-and-delete EVALSHA) on hiredis";
  }
  const char* fencing() const override {
    return fenced_ ? "INCR of <key>:fence inside the acquire script (one request)" : "none";
  }
  bool shares_connection() const override { return true; }

 private:
  // EVALSHA sha numkeys a b [c d]; on NOSCRIPT the same by EVAL (one more request). The string
  // arguments must outlive the call (the fallback sends them again).
  void evalsha(Conn& c, const std::string& sha, const char* script, const char* numkeys,
               const std::string& a, const std::string& b, std::string_view x, std::string_view y,
               Callback cb) {
    auto on = [&c, script, numkeys, &a, &b, x, y, cb = std::move(cb)](Reply r) mutable {
      if (r->type == REDIS_REPLY_ERROR && std::strncmp(r->str, "NOSCRIPT", 8) == 0) {
        ++g_sent.requests;
        if (x.empty()) {
          c.send(kEval, {"EVAL", script, numkeys, a, b}, std::move(cb));
        } else {
          c.send(kEval, {"EVAL", script, numkeys, a, b, x, y}, std::move(cb));
        }
        return;
      }
      cb(r);
    };
    if (x.empty()) {
      c.send(kEvalsha, {"EVALSHA", sha, numkeys, a, b}, std::move(on));
    } else {
      c.send(kEvalsha, {"EVALSHA", sha, numkeys, a, b, x, y}, std::move(on));
    }
  }

  bool fenced_;
  std::string release_sha_, acquire_sha_;
  long long last_token_ = 0;
};

class WatchLock : public Lock {
 public:
  void acquire(Conn& c, const Res& res, const std::string& token,
               std::function<void(bool)> done) override {
    ++g_sent.requests;
    c.send(kWatch, {"WATCH", res.key});
    c.send(kGet, {"GET", res.key}, [&c, &res, &token, done = std::move(done)](Reply r) mutable {
      if (is(r, REDIS_REPLY_STRING)) {  // held: drop the WATCH, the attempt failed
        ++g_sent.requests;
        c.send(kUnwatch, {"UNWATCH"});
        done(false);
        return;
      }
      if (!is(r, REDIS_REPLY_NIL)) unexpected("GET", r);
      ++g_sent.requests;
      c.send(kMulti, {"MULTI"});
      c.send(kSet, {"SET", res.key, token, "PX", ttl_ms_text});
      c.send(kExec, {"EXEC"}, [done = std::move(done)](Reply e) {
        if (is(e, REDIS_REPLY_NIL)) {  // the key changed after WATCH: someone else got it
          done(false);
        } else if (is(e, REDIS_REPLY_ARRAY) && e->elements == 1 && is_status(e->element[0], "OK")) {
          done(true);
        } else {
          unexpected("EXEC (SET)", e);
        }
      });
    });
  }

  void release(Conn& c, const Res& res, const std::string& token,
               std::function<void(bool)> done) override {
    ++g_sent.requests;
    c.send(kWatch, {"WATCH", res.key});
    c.send(kGet, {"GET", res.key}, [&c, &res, &token, done = std::move(done)](Reply r) mutable {
      if (!is(r, REDIS_REPLY_STRING) || std::string_view(r->str, r->len) != token) {
        if (!is(r, REDIS_REPLY_STRING) && !is(r, REDIS_REPLY_NIL)) unexpected("GET", r);
        ++g_sent.requests;
        c.send(kUnwatch, {"UNWATCH"});
        done(false);
        return;
      }
      ++g_sent.requests;
      c.send(kMulti, {"MULTI"});
      c.send(kDel, {"DEL", res.key});
      c.send(kExec, {"EXEC"}, [done = std::move(done)](Reply e) {
        if (is(e, REDIS_REPLY_NIL)) {
          done(false);
        } else if (is(e, REDIS_REPLY_ARRAY) && e->elements == 1 &&
                   is(e->element[0], REDIS_REPLY_INTEGER)) {
          done(e->element[0]->integer == 1);
        } else {
          unexpected("EXEC (DEL)", e);
        }
      });
    });
  }

  const char* contender() const override { return "hiredis-watch"; }
  const char* library() const override {
    return "WATCH/MULTI/EXEC lock after redis-plus-plus RedMutexTx (Lua-free) on hiredis";
  }
  const char* fencing() const override { return "none"; }
  bool shares_connection() const override { return false; }
};

// ---------------------------------------------------------------------------------------------

struct Args {
  std::string lock = "lua", host = "127.0.0.1", mode = "serial", prefix;
  int port = 6379, users = 1, waiters = 8, pairs = 0, handoffs = 20;
  double duration = 2.0, ttl_ms = 10000, sleep_max_ms = 5, hold_ms = 2;
  bool sleep_whole = true;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string_view k = argv[i];
    if (i + 1 >= argc) die("missing value for %s", argv[i]);
    const char* v = argv[i + 1];
    auto number = [&] {
      char* end = nullptr;
      const double x = std::strtod(v, &end);
      if (end == v || *end != '\0') die("bad value for %s: %s", argv[i], v);
      return x;
    };
    if (k == "--lock") {
      a.lock = v;
    } else if (k == "--host") {
      a.host = v;
    } else if (k == "--port") {
      a.port = static_cast<int>(number());
    } else if (k == "--mode") {
      a.mode = v;
    } else if (k == "--users") {
      a.users = static_cast<int>(number());
    } else if (k == "--waiters") {
      a.waiters = static_cast<int>(number());
    } else if (k == "--duration") {
      a.duration = number();
    } else if (k == "--pairs") {
      a.pairs = static_cast<int>(number());
    } else if (k == "--handoffs") {
      a.handoffs = static_cast<int>(number());
    } else if (k == "--ttl") {
      a.ttl_ms = number();
    } else if (k == "--sleep-max-ms") {
      a.sleep_max_ms = number();
    } else if (k == "--sleep-whole") {
      a.sleep_whole = number() != 0;
    } else if (k == "--hold") {
      a.hold_ms = number();
    } else if (k == "--prefix") {
      a.prefix = v;
    } else {
      die("unknown option %s", argv[i]);
    }
  }
  if (a.lock != "lua" && a.lock != "lua-fenced" && a.lock != "watch")
    die("bad --lock %s", a.lock.c_str());
  if (a.mode != "serial" && a.mode != "throughput" && a.mode != "handoff") {
    die("bad --mode %s", a.mode.c_str());
  }
  if (a.users < 1 || a.waiters < 1 || a.handoffs < 1 || a.pairs < 0 || a.duration <= 0 ||
      a.ttl_ms < 1 || a.sleep_max_ms < 0 || a.hold_ms < 0) {
    die("users, waiters, handoffs, ttl must be >= 1; duration > 0; pairs, sleep, hold >= 0");
  }
  if (a.prefix.empty()) a.prefix = "lwbench:hiredis-" + a.lock + ":";
  return a;
}

// One user (or hand-off contender): its connection, resource and current token.
struct User {
  Conn* conn = nullptr;
  Res res{""};
  std::string token;
  std::uint64_t serial = 0;
  Time started{};
  // hand-off: released and waiting for the next grant before rejoining
  bool release_replied = false, saw_next_grant = false, rejoining = false;
  // Unique per acquisition (redis-plus-plus draws 20 random characters; uniqueness is what
  // counts): pid:user:counter.
  void next_token(int id) {
    static const std::string pid = std::to_string(getpid()) + ":";
    token = pid + std::to_string(id) + ":" + std::to_string(++serial);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", a.ttl_ms);
    ttl_ms_text = buf;
  }
  std::unique_ptr<Lock> lock;
  if (a.lock == "watch") {
    lock = std::make_unique<WatchLock>();
  } else {
    lock = std::make_unique<LuaLock>(a.lock == "lua-fenced");
  }
  const bool handoff = a.mode == "handoff";
  const int nusers = handoff ? a.waiters + 1 : (a.mode == "throughput" ? a.users : 1);
  const int nconns = lock->shares_connection() ? 1 : nusers;

  Loop loop;
  std::vector<std::unique_ptr<Conn>> conns;
  conns.reserve(static_cast<std::size_t>(nconns));
  for (int i = 0; i < nconns; ++i) {
    conns.push_back(std::make_unique<Conn>(loop, a.host.c_str(), a.port));
  }
  int pinged = 0;
  for (auto& c : conns) {
    c->send(kPing, {"PING"}, [&](Reply r) {
      if (!is_status(r, "PONG")) unexpected("PING", r);
      ++pinged;
    });
  }
  loop.run_until([&] { return pinged == nconns; });
  lock->prepare(loop, *conns[0]);

  std::vector<User> users(static_cast<std::size_t>(nusers));
  for (int u = 0; u < nusers; ++u) users[u].conn = conns[lock->shares_connection() ? 0 : u].get();

  // Warm-up: 50 pairs (runs the scripts once, touches the code paths).
  {
    User w;
    w.conn = conns[0].get();
    w.res = Res(a.prefix + "warm");
    int left = 50;
    std::function<void()> pair = [&] {
      w.next_token(-1);
      lock->acquire(*w.conn, w.res, w.token, [&](bool got) {
        if (!got) die("warm-up: uncontended acquire of %s failed", w.res.key.c_str());
        lock->release(*w.conn, w.res, w.token, [&](bool ok) {
          if (!ok) die("warm-up: release of %s found the key not ours", w.res.key.c_str());
          if (--left > 0) pair();
        });
      });
    };
    pair();
    loop.run_until([&] { return left == 0; });
  }

  std::vector<double> samples;
  samples.reserve(1 << 16);
  // Serial mode: each pair's two halves (acquire called → granted → released), the breakdown
  // bench_lock's serial row prints for lockwire.
  std::vector<double> acquire_us, release_us;
  std::uint64_t ops = 0;
  const std::uint64_t cmd0 = g_sent.commands, req0 = g_sent.requests;
  const double cpu0 = cpu_seconds();
  const Time t0 = Clock::now();
  const Time end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration));
  std::mt19937_64 rng(std::random_device{}());
  auto sleep_for = [&]() -> Clock::duration {  // one polling interval
    double ms;
    if (a.sleep_whole) {
      ms = static_cast<double>(
          std::uniform_int_distribution<int>(0, static_cast<int>(a.sleep_max_ms))(rng));
    } else {
      ms = std::uniform_real_distribution<double>(0, a.sleep_max_ms)(rng);
    }
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(ms));
  };

  if (!handoff) {
    // serial (one user) and throughput (N users): closed loops of one-attempt pairs.
    const bool serial = a.mode == "serial";
    int active = nusers;
    std::vector<std::function<void()>> next(static_cast<std::size_t>(nusers));
    for (int u = 0; u < nusers; ++u) {
      User& us = users[u];
      us.res = Res(serial ? a.prefix + "serial" : a.prefix + "tp:" + std::to_string(u));
      next[u] = [&, u] {
        User& me = users[u];
        if (a.pairs > 0 ? ops >= static_cast<std::uint64_t>(a.pairs) : Clock::now() >= end) {
          --active;
          return;
        }
        me.next_token(u);
        me.started = Clock::now();
        lock->acquire(*me.conn, me.res, me.token, [&, u](bool got) {
          User& m = users[u];
          if (!got) die("uncontended acquire of %s failed", m.res.key.c_str());
          const Time granted = serial ? Clock::now() : Time{};
          lock->release(*m.conn, m.res, m.token, [&, u, granted](bool ok) {
            User& m2 = users[u];
            if (!ok) die("release of %s found the key not ours", m2.res.key.c_str());
            const Time released = Clock::now();
            samples.push_back(us_between(m2.started, released));
            if (serial) {
              acquire_us.push_back(us_between(m2.started, granted));
              release_us.push_back(us_between(granted, released));
            }
            ++ops;
            next[u]();
          });
        });
      };
    }
    for (auto& n : next) n();
    loop.run_until([&] { return active == 0; });
  } else {
    // A fresh resource per run: contenders still waiting at the end are abandoned.
    const Res key(a.prefix + "handoff:" + std::to_string(getpid()) + ":" +
                  std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
    std::optional<Time> release_started;
    bool done = false, finished = false;
    int holder = -1;  // who holds, from its grant until it sends its release (a sanity check)
    std::vector<int> pending;  // released, rejoining after the next grant
    std::function<void(int)> attempt, arrive, granted;
    // Arrive (and rejoin) at a random point within one polling interval, so that the
    // contenders' polling phases are independent, as for separate clients.
    arrive = [&](int i) {
      const double ms = std::uniform_real_distribution<double>(0, a.sleep_max_ms)(rng);
      loop.after(std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double, std::milli>(ms)),
                 [&, i] { attempt(i); });
    };
    attempt = [&](int i) {
      if (done) return;
      User& me = users[i];
      me.next_token(i);
      lock->acquire(*me.conn, key, me.token, [&, i](bool got) {
        if (done) return;  // the run ended meanwhile: abandon (the process exits)
        if (!got) {
          loop.after(sleep_for(), [&, i] { attempt(i); });
          return;
        }
        granted(i);
      });
    };
    granted = [&](int i) {
      const Time got = Clock::now();
      if (holder != -1) die("hand-off: contender %d got the lock while %d holds it", i, holder);
      holder = i;
      // Those who released before this grant rejoin now (once their release has replied).
      for (int j : std::exchange(pending, {})) {
        users[j].saw_next_grant = true;
        if (users[j].release_replied) arrive(j);
      }
      if (release_started) {
        samples.push_back(us_between(*release_started, got));
        ++ops;
      }
      done = ops >= static_cast<std::uint64_t>(a.handoffs) || got >= end;
      auto release = [&, i] {
        User& me = users[i];
        me.release_replied = false;
        me.saw_next_grant = false;
        if (!done) pending.push_back(i);
        holder = -1;
        release_started = Clock::now();
        lock->release(*me.conn, key, me.token, [&, i](bool ok) {
          User& m = users[i];
          if (!ok) die("hand-off: release found the key not ours");
          if (done) {
            finished = true;
            return;
          }
          m.release_replied = true;
          if (m.saw_next_grant) arrive(i);
        });
      };
      if (done) {
        release();
      } else {
        loop.after(std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double, std::milli>(a.hold_ms)),
                   release);
      }
    };
    for (int i = 0; i < nusers; ++i) arrive(i);
    loop.run_until([&] { return finished; });
  }

  const double seconds = us_between(t0, Clock::now()) / 1e6;
  const double cpu = cpu_seconds() - cpu0;
  const double commands = static_cast<double>(g_sent.commands - cmd0);
  const double requests = static_cast<double>(g_sent.requests - req0);
  const double n = static_cast<double>(ops);
  std::string by_name;
  for (int c = 0; c < kCmdCount; ++c) {
    if (g_sent.by_name[c] == 0) continue;
    by_name += (by_name.empty() ? "\"" : ", \"") + std::string(kCmdNames[c]) +
               "\": " + std::to_string(g_sent.by_name[c]);
  }
  char sleep_desc[160];
  std::snprintf(sleep_desc, sizeof sleep_desc,
                a.sleep_whole ? "uniform whole ms in 0..%.0f before each attempt"
                              : "uniform %.3g ms at most before each attempt",
                a.sleep_max_ms);
  char hold[48] = "";
  if (handoff) std::snprintf(hold, sizeof hold, ", \"hold_ms\": %.3g", a.hold_ms);
  std::printf(
      "{\"contender\": \"%s\", \"library\": \"%s\", \"hiredis\": \"%d.%d.%d\", "
      "\"runtime\": \"C++20, g++ %s, hiredis async API on an own epoll loop\", "
      "\"mode\": \"%s\", \"users\": %d, \"waiters\": %d, \"connections\": %d, "
      "\"ops\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"ops_per_sec\": %.1f, "
      "\"cpu_us_per_op\": %s, \"commands_sent\": %.0f, \"commands_per_op\": %s, "
      "\"requests_sent\": %.0f, \"requests_per_op\": %s, \"commands_by_name\": {%s}, "
      "\"fencing\": \"%s\", \"settings\": {\"ttl_ms\": %.0f, \"sleep_max_ms\": %.3g, "
      "\"sleep_whole_ms\": %s, \"poll\": \"%s\"%s}, %s%s}\n",
      lock->contender(), lock->library(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, __VERSION__,
      a.mode.c_str(), a.mode == "throughput" ? a.users : 1, handoff ? a.waiters : 0, nconns,
      static_cast<unsigned long long>(ops), seconds, cpu, n / seconds,
      ops ? std::to_string(cpu * 1e6 / n).c_str() : "null", commands,
      ops ? std::to_string(commands / n).c_str() : "null", requests,
      ops ? std::to_string(requests / n).c_str() : "null", by_name.c_str(), lock->fencing(),
      a.ttl_ms, a.sleep_max_ms, a.sleep_whole ? "true" : "false", sleep_desc, hold,
      bench_json::halves_json(std::move(acquire_us), std::move(release_us), 1).c_str(),
      bench_json::latency_json(std::move(samples), 1).c_str());
  std::fflush(stdout);
  _exit(0);  // abandons hand-off contenders still polling, and the connections
}
