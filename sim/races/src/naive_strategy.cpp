// The naive SET-NX-PX lock (`naive:<resource>`, token from INCR in the same MULTI, release and
// renew guarded by WATCH, waiting via SUBSCRIBE + re-check + a timer at the holder's PTTL) and
// its flaws (naive_strategy.hpp); docs/races.md lists which strategy switches on which.
#include "naive_strategy.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "lockwire/lock/error.hpp"
#include "lockwire/resp/encoder.hpp"
#include "raw_conn.hpp"
#include "strategy_util.hpp"

namespace lockwire::races::detail {

namespace {

class NaiveStrategy final : public Strategy {
 public:
  NaiveStrategy(sim::Node& node, loop::ConnectionOptions o, Flaws f) : node_(node), f_(f) {
    if (f_.raw_txn) raw_ = std::make_unique<RawConn>(node.loop(), o.endpoint);
    conn_ = std::make_unique<loop::Connection>(node.loop(), std::move(o));
    conn_->add_push_handler([this](resp::Frame p) { handle_push(p); });
    if (f_.sub_per_wait) {
      conn_->add_state_handler([this](loop::ConnectionState st, Ec) {
        if (st != loop::ConnectionState::ready || !*alive_) return;
        // A new connection has no subscriptions: re-subscribe for live waits and re-check.
        for (auto& [ch, sub] : subs_) {
          sub.believed = sub.active > 0;
          if (sub.active > 0) {
            ++sent_, conn_->command({"SUBSCRIBE", ch}, [](Ec, const loop::Replies&) {});
            wake(ch);
          }
        }
      });
    }
  }
  ~NaiveStrategy() override { *alive_ = false; }

  void start() override {
    conn_->start();
    if (raw_) raw_->start();
  }

  void acquire(const AcquireSpec& spec, std::function<void(AcquireResult)> done) override {
    if (spec.shared) return acquire_shared(spec, std::move(done));
    auto w = std::make_shared<Waiter>();
    w->spec = spec;
    w->done = std::move(done);
    w->deadline = node_.loop().now() + spec.wait;
    if (f_.sub_per_wait && spec.wait > Nanos{0}) {
      // Subscribe first, then attempt: a release after the SUBSCRIBE is a message, one before it
      // is seen by the attempt.
      w->sub_ch = key_of(spec.resource) + ":ch";
      Sub& s = subs_[w->sub_ch];
      ++s.active;
      if (!s.believed) {
        s.believed = true;
        ++sent_, conn_->command({"SUBSCRIBE", w->sub_ch}, [](Ec, const loop::Replies&) {});
      }
    }
    live_.push_back(w);  // owned here until finished (timers hold weak references)
    if (spec.wait > Nanos{0}) {
      w->deadline_timer = node_.loop().make_timer([this, ww = std::weak_ptr<Waiter>(w)] {
        auto w = ww.lock();
        if (!w || w->finished) return;
        if (w->in_flight && !f_.give_up) {
          w->expired = true;  // the reply decides (a grant is released)
          return;
        }
        finish(w, lock::Errc::timed_out);
      });
      w->deadline_timer->start(spec.wait);
    }
    attempt(w);
  }

  void release(int id, std::function<void(Ec)> done) override {
    auto it = leases_.find(id);
    if (it == leases_.end()) return done(lock::Errc::invalid_argument);
    Lease& l = it->second;
    l.released = true;
    if (l.loss_timer) l.loss_timer->stop();
    const std::string key = key_of(l.resource), ch = key + ":ch", owner = l.owner;
    auto alive = alive_;
    if (l.shared) {
      // SREM names the owner: removes "its" membership — whichever grant put it there.
      ++sent_, conn_->command(
                   {"SREM", key + ":readers", owner}, [alive, done](Ec ec, const loop::Replies& r) {
                     if (!*alive) return;
                     if (ec || r.size() == 0) return done(unknown_or(ec));
                     done(int_of(r[0]).value_or(0) == 1 ? Ec{} : Ec(lock::Errc::not_held));
                   });
      return;
    }
    if (f_.get_then_del) {
      ++sent_, conn_->command({"GET", key}, [this, alive, key, ch, owner, done](
                                                Ec ec, const loop::Replies& r) {
        if (!*alive) return;
        if (ec || r.size() == 0) return done(unknown_or(ec));
        if (str_of(r[0]) != owner) return done(lock::Errc::not_held);
        ++sent_,
            conn_->command({"DEL", key}, [this, alive, ch, done](Ec ec2, const loop::Replies& r2) {
              if (!*alive) return;
              if (ec2 || r2.size() == 0) return done(unknown_or(ec2));
              ++sent_, conn_->command({"PUBLISH", ch, "free"}, [](Ec, const loop::Replies&) {});
              done(int_of(r2[0]).value_or(0) == 1 ? Ec{} : Ec(lock::Errc::not_held));
            });
      });
      return;
    }
    guarded(key, owner, {"DEL", key}, {"PUBLISH", ch, "free"}, [this, done, alive](Ec ec) {
      if (!*alive) return;
      if (f_.assume_released && ec == lock::Errc::outcome_unknown) ec = {};  // the flaw
      done(ec);
    });
  }

  void renew(int id, std::function<void(Ec)> done) override {
    auto it = leases_.find(id);
    if (it == leases_.end() || it->second.released) return done(lock::Errc::not_held);
    const std::string key = key_of(it->second.resource) + (it->second.shared ? ":readers" : ""),
                      owner = it->second.owner;
    const std::string ttl = std::to_string(it->second.ttl_ms);
    const loop::MonoTime t_send = node_.loop().now();
    const loop::WallTime w_send = node_.loop().wall_now();
    auto alive = alive_;
    auto ok = [this, id, t_send, w_send, done, alive](Ec ec) {
      if (!*alive) return;
      if (!ec) {
        auto it2 = leases_.find(id);
        if (it2 != leases_.end()) {
          it2->second.valid_until = t_send + it2->second.ttl;
          it2->second.wall_until = w_send.since_epoch + it2->second.ttl;
          arm_loss(id);
        }
      }
      done(ec);
    };
    if (f_.raw_txn && !it->second.shared) {
      // WATCH key; GET key  ->  MULTI; PEXPIRE; EXEC, each sent as soon as possible on the one
      // socket: another renewal's WATCH/EXEC may land in between and clear this one's guard.
      ++sent_, raw_->send({{"WATCH", key}, {"GET", key}}, [this, alive, key, owner, ttl, ok](
                                                              Ec ec, const auto& r) {
        if (!*alive) return;
        if (ec || r.size() < 2) return ok(lock::Errc::connection);
        if (r[1].text != owner || r[1].null) {
          ++sent_, raw_->send({{"UNWATCH"}}, [](Ec, const auto&) {});
          return ok(lock::Errc::not_held);
        }
        ++sent_,
            raw_->send({{"MULTI"}, {"PEXPIRE", key, ttl}, {"EXEC"}},
                       [alive, ok](Ec ec2, const auto& r2) {
                         if (!*alive) return;
                         if (ec2 || r2.size() < 3) return ok(lock::Errc::connection);
                         const auto& ex = r2[2];
                         if (ex.null || ex.elems.empty()) return ok(lock::Errc::not_held);
                         ok(ex.elems[0].num.value_or(0) == 1 ? Ec{} : Ec(lock::Errc::not_held));
                       });
      });
      return;
    }
    if (f_.blind_renew || it->second.shared) {
      ++sent_, conn_->command({"PEXPIRE", key, ttl}, [ok, alive](Ec ec, const loop::Replies& r) {
        if (!*alive) return;
        if (ec || r.size() == 0) return ok(unknown_or(ec));
        ok(int_of(r[0]).value_or(0) == 1 ? Ec{} : Ec(lock::Errc::not_held));
      });
      return;
    }
    guarded(key, owner, {"PEXPIRE", key, ttl}, {}, ok);
  }

  void force_release(const std::string& resource, std::function<void(Ec)> done) override {
    const std::string key = key_of(resource);
    auto alive = alive_;
    ++sent_, conn_->command({"DEL", key}, [this, alive, key, done](Ec ec, const loop::Replies&) {
      if (!*alive) return;
      ++sent_, conn_->command({"PUBLISH", key + ":ch", "free"}, [](Ec, const loop::Replies&) {});
      done(ec ? unknown_or(ec) : Ec{});
    });
  }
  bool believes_held(int id) const override {
    auto it = leases_.find(id);
    if (it == leases_.end()) return false;
    const Lease& l = it->second;
    if (l.released || l.lost) return false;
    if (f_.wall_clock) return node_.loop().wall_now().since_epoch < l.wall_until;
    return node_.loop().now() < l.valid_until;
  }

  bool server_holds(const sim::RedisModel& m, std::string_view resource, std::string_view owner,
                    bool shared, std::int64_t* expire_at_ms) const override {
    if (shared) {
      const auto p = m.peek(key_of(resource) + ":readers");
      if (!p.found || std::find(p.items.begin(), p.items.end(), owner) == p.items.end()) {
        return false;
      }
      if (expire_at_ms) *expire_at_ms = p.expire_at_ms;
      return true;
    }
    const auto p = m.peek(key_of(resource));
    if (!p.found || p.items.size() != 1 || p.items[0] != owner) return false;
    if (expire_at_ms) *expire_at_ms = p.expire_at_ms;
    return true;
  }
  std::size_t in_flight() const override {
    return conn_->in_flight() + (raw_ ? raw_->in_flight() : 0);
  }
  std::uint64_t requests_sent() const override { return sent_; }
  void close() override {
    *alive_ = false;
    if (raw_) raw_->close();
    for (auto& [id, l] : leases_) l.loss_timer.reset();
    for (auto& [k, s] : subs_) s.backstop.reset();
    live_.clear();
    conn_->close();
  }

 private:
  struct Waiter {
    AcquireSpec spec;
    std::function<void(AcquireResult)> done;
    loop::MonoTime deadline{};
    std::unique_ptr<loop::Timer> deadline_timer;
    bool in_flight = false;
    bool finished = false;
    std::unique_ptr<loop::Timer> poll_timer;
    bool expired = false;  // deadline passed while an attempt was in flight
    std::string sub_ch;    // sub_per_wait: the channel this wait subscribed to
  };
  using WaiterPtr = std::shared_ptr<Waiter>;
  struct Lease {
    std::string resource, owner;
    Nanos ttl{0};
    std::int64_t ttl_ms = 0;
    loop::MonoTime valid_until{};
    Nanos wall_until{0};
    bool released = false, lost = false;
    bool shared = false;
    std::unique_ptr<loop::Timer> loss_timer;
  };
  struct Sub {
    bool subscribed = false;
    bool believed = false;  // sub_per_wait: the client thinks the server has it subscribed
    int active = 0;         // sub_per_wait: waits using it
    std::vector<WaiterPtr> waiters;
    std::unique_ptr<loop::Timer> backstop;
  };

  static std::string key_of(std::string_view resource) {
    std::string k = "naive:";
    k.append(resource);
    return k;
  }
  static Ec unknown_or(Ec ec) {
    if (ec == loop::Errc::outcome_unknown) return lock::Errc::outcome_unknown;
    return ec ? Ec(lock::Errc::connection) : Ec(lock::Errc::protocol);
  }

  // WATCH key; GET key; == owner → MULTI cmd [extra] EXEC. done(ok / not_held / error).
  void guarded(const std::string& key, const std::string& owner, std::vector<std::string> cmd,
               std::vector<std::string> extra, std::function<void(Ec)> done) {
    loop::Request r;
    resp::append_command(r.bytes, "WATCH", key);
    resp::append_command(r.bytes, "GET", key);
    r.commands = 2;
    auto alive = alive_;
    ++sent_, conn_->watch(std::move(r), [alive, owner, cmd = std::move(cmd),
                                         extra = std::move(extra), done = std::move(done)](
                                            Ec ec, const loop::Replies& rep, loop::WatchTxn txn) {
      if (!*alive) return;
      if (ec || !txn.valid() || rep.size() < 2) return done(unknown_or(ec));
      if (str_of(rep[1]) != owner) {
        txn.unwatch();
        return done(lock::Errc::not_held);
      }
      loop::Request b;
      b.kind = loop::RequestKind::atomic;
      resp::append_command(b.bytes, "MULTI");
      std::vector<std::string_view> v(cmd.begin(), cmd.end());
      resp::append_command(b.bytes, std::span<const std::string_view>(v));
      b.commands = 3;
      if (!extra.empty()) {
        std::vector<std::string_view> e(extra.begin(), extra.end());
        resp::append_command(b.bytes, std::span<const std::string_view>(e));
        ++b.commands;
      }
      resp::append_command(b.bytes, "EXEC");
      txn.exec(std::move(b), [alive, done](Ec ec2, const loop::Replies& r2) {
        if (!*alive) return;
        if (ec2 || r2.size() == 0) return done(unknown_or(ec2));
        const resp::Frame ex = r2.back();
        if (is_null(ex)) return done(lock::Errc::not_held);
        done(int_of(element(ex, 0)).value_or(0) == 1 ? Ec{} : Ec(lock::Errc::not_held));
      });
    });
  }

  // Readers only (no wait, no exclusive writers): a reader set with one TTL. A repeated owner is
  // refused (SADD = 0) unless the dup_shared flaw grants it a second time.
  void acquire_shared(const AcquireSpec& spec, std::function<void(AcquireResult)> done) {
    const std::string key = key_of(spec.resource);
    const std::int64_t ttl_ms = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(spec.ttl).count());
    loop::Request r;
    r.kind = loop::RequestKind::atomic;
    resp::append_command(r.bytes, "MULTI");
    resp::append_command(r.bytes, "SADD", key + ":readers", spec.owner);
    resp::append_command(r.bytes, "PEXPIRE", key + ":readers", std::to_string(ttl_ms));
    resp::append_command(r.bytes, "INCR", key + ":tok");
    resp::append_command(r.bytes, "EXEC");
    r.commands = 5;
    const loop::MonoTime t_send = node_.loop().now();
    const loop::WallTime w_send = node_.loop().wall_now();
    auto alive = alive_;
    ++sent_, conn_->send(std::move(r), [this, alive, spec, ttl_ms, t_send, w_send,
                                        done = std::move(done)](Ec ec, const loop::Replies& rep) {
      if (!*alive) return;
      AcquireResult res;
      if (ec || rep.size() == 0) {
        res.ec = unknown_or(ec);
        return done(res);
      }
      const resp::Frame ex = rep.back();
      if (int_of(element(ex, 0)).value_or(0) != 1 && !f_.dup_shared) {
        res.ec = lock::Errc::already_held;
        return done(res);
      }
      const int id = next_++;
      Lease& l = leases_[id];
      l.resource = spec.resource;
      l.owner = spec.owner;
      l.shared = true;
      l.ttl = spec.ttl;
      l.ttl_ms = ttl_ms;
      l.valid_until = t_send + spec.ttl;
      l.wall_until = w_send.since_epoch + spec.ttl;
      arm_loss(id);
      res.token = static_cast<std::uint64_t>(int_of(element(ex, 2)).value_or(0));
      res.lease = id;
      done(res);
    });
  }

  void finish(const WaiterPtr& w, Ec ec, std::uint64_t token = 0, int lease = -1) {
    if (w->finished) return;
    w->finished = true;
    if (!w->sub_ch.empty()) {
      Sub& s = subs_[w->sub_ch];
      if (--s.active == 0 && *alive_) {
        ++sent_, conn_->command({"UNSUBSCRIBE", w->sub_ch}, [](Ec, const loop::Replies&) {});
        if (!f_.ack_state) s.believed = false;  // the flaw: wait for the ack to say so
      }
    }
    if (w->deadline_timer) w->deadline_timer->stop();
    if (w->poll_timer) w->poll_timer->stop();
    std::erase(live_, w);
    AcquireResult r;
    r.ec = ec;
    r.token = token;
    r.lease = lease;
    auto done = std::move(w->done);
    if (done) done(r);
  }

  void attempt(const WaiterPtr& w) {
    if (w->finished || w->in_flight) return;
    const std::string key = key_of(w->spec.resource);
    const std::string ttl = std::to_string(std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(w->spec.ttl).count()));
    loop::Request r;
    r.kind = loop::RequestKind::atomic;
    resp::append_command(r.bytes, "MULTI");
    resp::append_command(r.bytes, "SET", key, w->spec.owner, "NX", "PX", ttl);
    resp::append_command(r.bytes, "INCR", key + ":tok");
    resp::append_command(r.bytes, "PTTL", key);
    resp::append_command(r.bytes, "EXEC");
    r.commands = 5;
    w->in_flight = true;
    const loop::MonoTime t_send = node_.loop().now();
    const loop::WallTime w_send = node_.loop().wall_now();
    auto alive = alive_;
    ++sent_, conn_->send(std::move(r), [this, alive, w, t_send, w_send](Ec ec,
                                                                        const loop::Replies& rep) {
      if (!*alive) return;
      w->in_flight = false;
      if (ec == loop::Errc::outcome_unknown && f_.replay_unknown && !w->finished) {
        attempt(w);  // blind replay: the first SET may have been applied
        return;
      }
      if (ec || rep.size() == 0) {
        if (w->finished) return;
        if (!f_.give_up && !f_.replay_unknown && ec == loop::Errc::outcome_unknown) {
          // Remove a claim that may exist (guarded by owner), then report.
          const std::string k = key_of(w->spec.resource);
          guarded(k, w->spec.owner, {"DEL", k}, {}, [](Ec) {});
        }
        return finish(w, unknown_or(ec));
      }
      const resp::Frame ex = rep.back();
      const bool granted = str_of(element(ex, 0)) == "OK";
      const std::uint64_t token = static_cast<std::uint64_t>(int_of(element(ex, 1)).value_or(0));
      const std::int64_t pttl = int_of(element(ex, 2)).value_or(-2);
      if (granted) {
        if (w->finished || w->expired) {
          if (w->finished) return;  // gave up: the grant stays behind (the flaw)
          const std::string k = key_of(w->spec.resource);
          guarded(k, w->spec.owner, {"DEL", k}, {}, [](Ec) {});
          return finish(w, lock::Errc::timed_out);
        }
        const int id = next_++;
        Lease& l = leases_[id];
        l.resource = w->spec.resource;
        l.owner = w->spec.owner;
        l.ttl = w->spec.ttl;
        l.ttl_ms = std::max<std::int64_t>(
            1, std::chrono::duration_cast<std::chrono::milliseconds>(w->spec.ttl).count());
        l.valid_until = (f_.reply_clock ? node_.loop().now() : t_send) + w->spec.ttl;
        l.wall_until = w_send.since_epoch + w->spec.ttl;
        arm_loss(id);
        return finish(w, {}, f_.no_fencing ? 0 : token, id);
      }
      if (w->finished) return;
      if (w->expired || w->spec.wait <= Nanos{0} || node_.loop().now() >= w->deadline) {
        return finish(w, lock::Errc::timed_out);
      }
      wait(w, pttl);
    });
  }

  void wait(const WaiterPtr& w, std::int64_t pttl) {
    if (f_.poll) {
      if (!w->poll_timer) {
        w->poll_timer = node_.loop().make_timer([this, ww = std::weak_ptr<Waiter>(w)] {
          if (auto wp = ww.lock()) attempt(wp);
        });
      }
      w->poll_timer->start(10ms);
      return;
    }
    const std::string ch = key_of(w->spec.resource) + ":ch";
    Sub& s = subs_[ch];
    s.waiters.push_back(w);
    if (!s.backstop) {
      s.backstop = node_.loop().make_timer([this, ch] { wake(ch); });
    }
    if (!f_.no_expiry_wake && pttl > 0) s.backstop->start(std::chrono::milliseconds(pttl + 1));
    if (!s.subscribed && !f_.sub_per_wait) {
      s.subscribed = true;
      ++sent_, conn_->command({"SUBSCRIBE", ch}, [](Ec, const loop::Replies&) {});
    }
  }

  void wake(const std::string& ch) {
    auto it = subs_.find(ch);
    if (it == subs_.end()) return;
    auto ws = std::move(it->second.waiters);
    it->second.waiters.clear();
    for (auto& w : ws) attempt(w);
  }

  void handle_push(resp::Frame p) {
    if (on_push) on_push(push_kind(p));
    // >3 subscribe ch n | >3 message ch payload
    const resp::Frame kind = element(p, 0), chf = element(p, 1);
    const std::string k = str_of(kind), ch = str_of(chf);
    if (f_.sub_per_wait) {
      auto it = subs_.find(ch);
      if (it == subs_.end()) return;
      if (k == "message" && f_.late_message) it->second.believed = true;  // the flaw
      if (k == "unsubscribe" && f_.ack_state && it->second.active == 0) {
        it->second.believed = false;
      }
    }
    if (k == "message") return wake(ch);
    if (k == "subscribe" && !f_.no_recheck) return wake(ch);
  }
  void arm_loss(int id) {
    Lease& l = leases_[id];
    if (!l.loss_timer) {
      l.loss_timer = node_.loop().make_timer([this, id] { check_loss(id); });
    }
    l.loss_timer->start(std::max(l.valid_until - node_.loop().now(), Nanos{0}));
  }
  void check_loss(int id) {
    Lease& l = leases_[id];
    if (l.released || l.lost) return;
    if (f_.wall_clock) {
      const Nanos left = l.wall_until - node_.loop().wall_now().since_epoch;
      if (left > Nanos{0}) {
        l.loss_timer->start(left);
        return;
      }
    }
    l.lost = true;
    if (on_lost) on_lost(id);
  }

  sim::Node& node_;
  std::unique_ptr<loop::Connection> conn_;
  std::unique_ptr<RawConn> raw_;
  Flaws f_;
  std::uint64_t sent_ = 0;
  std::vector<WaiterPtr> live_;
  std::map<int, Lease> leases_;
  std::map<std::string, Sub> subs_;
  int next_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace

std::unique_ptr<Strategy> make_naive_strategy(sim::Node& node, loop::ConnectionOptions options,
                                              const Flaws& flaws) {
  return std::make_unique<NaiveStrategy>(node, std::move(options), flaws);
}

}  // namespace lockwire::races::detail
