// Standalone prototype for lockwire issue #30 ("one-round-trip hand-off").
// Not part of lockwire. Talks to an already-running redis-server on loopback.
//
// Modes:
//   ping  <host> <port> <n>                        PING round trip on one connection
//   pipe  <host> <port> <waiters> <handoffs> <hold_us>  BLPOP wake 0 + acquire MULTI pipelined behind it
//   seq   <host> <port> <waiters> <handoffs> <hold_us>  BLPOP wake 0, then (after its reply) the acquire MULTI
//
// Threads rotate roles: N+1 threads, one holds the lock, N are parked (blocked in BLPOP on
// their own connection, FIFO in Redis). The holder holds hold_us (and until all N others are
// parked), stamps t_release, sends the release block (MULTI HDEL P f; LPUSH wake 1;
// PEXPIRE wake 5000; EXEC), then parks itself at the back of the queue. The woken waiter
// stamps t_grant when it has the EXEC reply that granted; hand-off = t_grant - t_release.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <chrono>
#include <thread>
#include <time.h>
#include <vector>

static inline long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char* HOLD = "P{R}";
static const char* FENCE = "P{R}:fence";
static const char* WAKE = "P{R}:wake";
static const char* TTL = "30000";

static redisContext* connect_or_die(const char* host, int port) {
  redisContext* c = redisConnect(host, port);
  if (!c || c->err) {
    std::fprintf(stderr, "connect: %s\n", c ? c->errstr : "alloc");
    std::exit(2);
  }
  return c;
}

static redisReply* get(redisContext* c) {
  void* r = nullptr;
  if (redisGetReply(c, &r) != REDIS_OK || !r) {
    std::fprintf(stderr, "reply: %s\n", c->errstr);
    std::exit(3);
  }
  return static_cast<redisReply*>(r);
}

static void append_acquire(redisContext* c, const std::string& field) {
  redisAppendCommand(c, "MULTI");
  redisAppendCommand(c, "HSETNX %s %s %s", HOLD, field.c_str(), TTL);
  redisAppendCommand(c, "HLEN %s", HOLD);
  redisAppendCommand(c, "PEXPIRE %s %s NX", HOLD, TTL);
  redisAppendCommand(c, "ZADD %s INCR 1 t", FENCE);
  redisAppendCommand(c, "PEXPIRE %s 600000", FENCE);
  redisAppendCommand(c, "EXEC");
}

// Reads MULTI's +OK, 5 QUEUED, EXEC. Returns true when granted (HSETNX 1 and HLEN 1).
static bool read_acquire(redisContext* c, bool& hsetnx_set) {
  for (int i = 0; i < 6; ++i) freeReplyObject(get(c));
  redisReply* e = get(c);
  bool ok = false;
  hsetnx_set = false;
  if (e->type == REDIS_REPLY_ARRAY && e->elements == 5) {
    hsetnx_set = e->element[0]->integer == 1;
    ok = hsetnx_set && e->element[1]->integer == 1;
  } else {
    std::fprintf(stderr, "unexpected EXEC reply type %d\n", e->type);
    std::exit(4);
  }
  freeReplyObject(e);
  return ok;
}

// Counts replies already parsed/buffered without another read(): after BLPOP's reply,
// how many of the 7 acquire replies came in the same read.
static int buffered_replies(redisContext* c, std::vector<redisReply*>& out) {
  int n = 0;
  while (out.size() < 7) {
    void* r = nullptr;
    if (redisGetReplyFromReader(c, &r) != REDIS_OK) std::exit(5);
    if (!r) break;
    out.push_back(static_cast<redisReply*>(r));
    ++n;
  }
  return n;
}

static double pct(std::vector<long long>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i] / 1000.0;
}

static int run_ping(const char* host, int port, int n, long long gap_ns) {
  redisContext* c = connect_or_die(host, port);
  std::vector<long long> d;
  d.reserve(n);
  for (int i = 0; i < n + 500; ++i) {
    if (gap_ns) {
      timespec ts{0, gap_ns};
      nanosleep(&ts, nullptr);
    }
    long long t0 = now_ns();
    redisReply* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    long long t1 = now_ns();
    freeReplyObject(r);
    if (i >= 500) d.push_back(t1 - t0);
  }
  std::printf("mode=ping gap_us=%lld n=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f\n", gap_ns / 1000, n, pct(d, 0.5), pct(d, 0.9),
              pct(d, 0.99));
  redisFree(c);
  return 0;
}

struct Shared {
  std::atomic<long long> t_release{0};
  std::atomic<int> parked{0};
  std::atomic<int> done_handoffs{0};
  std::atomic<bool> stop{false};
  std::atomic<int> exited{0};
  std::atomic<int> release_seq{0};
  std::atomic<long long> park_counter{0};
  bool mix = false;
  // Per release (index = release sequence): holder's own release round trip, the woken
  // waiter's BLPOP-reply time and grant time, all relative to t_release.
  std::vector<long long> rel_rtt, pop_at, grant_at;
  std::vector<char> was_pipelined;
  int target = 0;
  int warmup = 200;
  long long hold_ns = 200000;
  int waiters = 1;
  bool pipelined = true;
  const char* host;
  int port;
};

struct Result {
  std::vector<long long> handoff;  // ns (pipelined, or the only mode)
  std::vector<long long> handoff_seq;  // ns, "mix" mode: the not-pipelined samples
  std::vector<long long> ping;         // ns: in-situ PING during holds
  std::vector<long long> release_rtt;  // ns: holder's own release block round trip (same conditions)
  long long failed = 0;            // acquire blocks that did not grant
  long long together = 0;          // BLPOP reply + all 7 acquire replies in one read
  long long popped = 0;
};

static void worker(Shared& s, int id, bool start_holding, Result& res) {
  redisContext* c = connect_or_die(s.host, s.port);
  std::string field = "w" + std::to_string(id);
  bool holding = false;
  bool dummy;
  if (start_holding) {
    append_acquire(c, field);
    holding = read_acquire(c, dummy);
    if (!holding) {
      std::fprintf(stderr, "initial acquire failed\n");
      std::exit(6);
    }
  }
  while (!s.stop.load()) {
    if (holding) {
      long long t0 = now_ns();
      // Hold ~hold_ns and until all other threads are parked (sent their BLPOP), so the
      // woken waiter is really blocked in Redis when the token arrives.
      // In-situ unit: one PING in the middle of every hold, after ~half the hold asleep (same
      // conditions as the hand-off: threads asleep, server idle), on the holder's connection.
      {
        timespec half{0, s.hold_ns / 2};
        nanosleep(&half, nullptr);
        long long p0 = now_ns();
        freeReplyObject(static_cast<redisReply*>(redisCommand(c, "PING")));
        if (s.done_handoffs.load() >= s.warmup) res.ping.push_back(now_ns() - p0);
      }
      // Sleep (not spin: 2 shared vCPUs) for the hold, then until everybody is parked.
      while (now_ns() - t0 < s.hold_ns || s.parked.load() < s.waiters) {
        if (s.stop.load()) break;
        long long left = s.hold_ns - (now_ns() - t0);
        timespec ts{0, left > 20000 ? left : 20000};
        nanosleep(&ts, nullptr);
      }
      if (s.stop.load()) break;
      redisAppendCommand(c, "MULTI");
      redisAppendCommand(c, "HDEL %s %s", HOLD, field.c_str());
      redisAppendCommand(c, "LPUSH %s 1", WAKE);
      redisAppendCommand(c, "PEXPIRE %s 5000", WAKE);
      redisAppendCommand(c, "EXEC");
      int seq = s.release_seq.load();
      s.t_release.store(now_ns());
      int done = 0;
      while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) std::exit(7);
      for (int i = 0; i < 5; ++i) freeReplyObject(get(c));
      long long t_rel_reply = now_ns();
      if (seq < (int)s.rel_rtt.size()) s.rel_rtt[seq] = t_rel_reply - s.t_release.load();
      if (s.done_handoffs.load() >= s.warmup) res.release_rtt.push_back(t_rel_reply - s.t_release.load());
      holding = false;
      continue;
    }
    // Park: BLPOP (+ acquire pipelined behind it in "pipe" mode).
    redisAppendCommand(c, "BLPOP %s 0", WAKE);
    // "mix": parks alternate pipelined / not, so both designs are sampled under the same noise.
    const bool pipelined = s.mix ? (s.park_counter.fetch_add(1) & 1) == 0 : s.pipelined;
    if (pipelined) append_acquire(c, field);
    int done = 0;
    while (!done)
      if (redisBufferWrite(c, &done) != REDIS_OK) std::exit(7);
    s.parked.fetch_add(1);
    redisReply* pop = get(c);  // blocks until woken
    long long t_pop = now_ns();
    if (pop->type == REDIS_REPLY_NIL) {  // stop path: CLIENT UNBLOCK / timeout
      freeReplyObject(pop);
      if (pipelined) read_acquire(c, dummy);
      s.parked.fetch_sub(1);
      break;
    }
    freeReplyObject(pop);
    s.parked.fetch_sub(1);
    if (pipelined) res.popped++;
    bool granted;
    bool set;
    if (pipelined) {
      std::vector<redisReply*> buf;
      int n = buffered_replies(c, buf);
      if (n == 7) res.together++;
      while (buf.size() < 7) buf.push_back(get(c));
      redisReply* e = buf[6];
      set = e->element[0]->integer == 1;
      granted = set && e->element[1]->integer == 1;
      for (auto* r : buf) freeReplyObject(r);
    } else {
      append_acquire(c, field);
      granted = read_acquire(c, set);
    }
    long long t_grant = now_ns();
    if (!granted) {
      res.failed++;
      if (set) freeReplyObject(static_cast<redisReply*>(redisCommand(c, "HDEL %s %s", HOLD, field.c_str())));
      continue;
    }
    holding = true;
    int k = s.done_handoffs.fetch_add(1);
    {
      int seq = s.release_seq.load();
      if (seq < (int)s.pop_at.size()) {
        s.pop_at[seq] = t_pop - s.t_release.load();
        s.grant_at[seq] = t_grant - s.t_release.load();
        s.was_pipelined[seq] = pipelined;
      }
      s.release_seq.store(seq + 1);
    }
    if (k >= s.warmup) ((pipelined || !s.mix) ? res.handoff : res.handoff_seq).push_back(t_grant - s.t_release.load());
    if (k + 1 >= s.warmup + s.target) {
      s.stop.store(true);
      // Wake everybody still parked so threads can exit: CLIENT UNBLOCK via a side connection,
      // repeated until every other thread has exited (one may park after a listing).
      redisContext* a = connect_or_die(s.host, s.port);
      while (s.exited.load() < s.waiters) {
        redisReply* l = static_cast<redisReply*>(redisCommand(a, "CLIENT LIST TYPE normal"));
        std::string txt = l->str ? l->str : "";
        freeReplyObject(l);
        size_t pos = 0;
        while ((pos = txt.find("id=", pos)) != std::string::npos) {
          long long cid = std::atoll(txt.c_str() + pos + 3);
          size_t eol = txt.find('\n', pos);
          std::string line = txt.substr(pos, eol - pos);
          if (line.find("cmd=blpop") != std::string::npos)
            freeReplyObject(static_cast<redisReply*>(redisCommand(a, "CLIENT UNBLOCK %lld", cid)));
          pos = eol;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      redisFree(a);
      break;
    }
  }
  redisFree(c);
  if (!holding) s.exited.fetch_add(1);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ping|pipe|seq host port [n | waiters handoffs hold_us]\n", argv[0]);
    return 1;
  }
  std::string mode = argv[1];
  const char* host = argv[2];
  int port = std::atoi(argv[3]);
  if (mode == "ping")
    return run_ping(host, port, argc > 4 ? std::atoi(argv[4]) : 20000, (argc > 5 ? std::atoll(argv[5]) : 0) * 1000);
  Shared s;
  s.host = host;
  s.port = port;
  s.pipelined = mode == "pipe" || mode == "mix";
  s.mix = mode == "mix";
  s.waiters = argc > 4 ? std::atoi(argv[4]) : 1;
  s.target = argc > 5 ? std::atoi(argv[5]) : 3000;
  s.hold_ns = (argc > 6 ? std::atoll(argv[6]) : 200) * 1000;
  {
    redisContext* c = connect_or_die(host, port);
    freeReplyObject(redisCommand(c, "DEL %s %s %s", HOLD, FENCE, WAKE));
    redisFree(c);
  }
  s.rel_rtt.assign(s.warmup + s.target + 16, 0);
  s.pop_at.assign(s.warmup + s.target + 16, 0);
  s.grant_at.assign(s.warmup + s.target + 16, 0);
  s.was_pipelined.assign(s.warmup + s.target + 16, 0);
  std::vector<Result> res(s.waiters + 1);
  std::vector<std::thread> th;
  for (int i = 0; i <= s.waiters; ++i) th.emplace_back(worker, std::ref(s), i, i == 0, std::ref(res[i]));
  for (auto& t : th) t.join();
  std::vector<long long> all, rel, pings, allseq;
  long long failed = 0, together = 0, popped = 0;
  for (auto& r : res) {
    all.insert(all.end(), r.handoff.begin(), r.handoff.end());
    allseq.insert(allseq.end(), r.handoff_seq.begin(), r.handoff_seq.end());
    rel.insert(rel.end(), r.release_rtt.begin(), r.release_rtt.end());
    pings.insert(pings.end(), r.ping.begin(), r.ping.end());
    failed += r.failed;
    together += r.together;
    popped += r.popped;
  }
  std::printf("mode=%s waiters=%d handoffs=%zu hold_us=%lld p50_us=%.1f p90_us=%.1f p99_us=%.1f failed=%lld",
              mode.c_str(), s.waiters, all.size(), s.hold_ns / 1000, pct(all, 0.5), pct(all, 0.9),
              pct(all, 0.99), failed);
  if (s.pipelined) std::printf(" pop_and_exec_in_one_read=%lld/%lld", together, popped);
  double ping50 = pct(pings, 0.5);
  if (s.mix)
    std::printf(" seq_handoffs=%zu seq_p50_us=%.1f seq_p90_us=%.1f seq_p50_in_insitu_pings=%.2f", allseq.size(),
                pct(allseq, 0.5), pct(allseq, 0.9), ping50 > 0 ? pct(allseq, 0.5) / ping50 : 0.0);
  std::printf(" insitu_ping_p50_us=%.1f handoff_p50_in_insitu_pings=%.2f", ping50, ping50 > 0 ? pct(all, 0.5) / ping50 : 0.0);
  std::printf(" release_rtt_p50_us=%.1f release_rtt_p90_us=%.1f", pct(rel, 0.5), pct(rel, 0.9));
  // Paired: per hand-off, grant time / the holder's own release round trip (same instant).
  for (int mode_p = 1; mode_p >= 0; --mode_p) {
    std::vector<long long> ratio_x1e6, pops;
    for (int i = s.warmup; i < s.warmup + s.target; ++i) {
      if (s.was_pipelined[i] != mode_p) continue;
      if (s.rel_rtt[i] > 0 && s.grant_at[i] > 0) ratio_x1e6.push_back(s.grant_at[i] * 1000000 / s.rel_rtt[i]);
      if (s.pop_at[i] > 0) pops.push_back(s.pop_at[i]);
    }
    if (ratio_x1e6.empty()) continue;
    const char* tag = mode_p ? "pipe" : "seq";
    std::printf(" %s_pop_p50_us=%.1f %s_paired_over_release_rtt_p50=%.2f %s_paired_p90=%.2f", tag, pct(pops, 0.5), tag,
                pct(ratio_x1e6, 0.5) / 1000.0, tag, pct(ratio_x1e6, 0.9) / 1000.0);
  }
  std::printf("\n");
  return 0;
}
