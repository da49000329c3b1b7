#include "lockwire/loop/connection.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::loop {

namespace {

class ConnectionCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.connection"; }
  std::string message(int v) const override {
    switch (static_cast<Errc>(v)) {
      case Errc::ok:
        return "ok";
      case Errc::not_sent:
        return "request not sent (deadline passed in the queue, or no connection)";
      case Errc::outcome_unknown:
        return "request written but no reply (deadline passed or connection lost): outcome unknown";
      case Errc::connection_lost:
        return "connection lost";
      case Errc::connect_failed:
        return "could not connect or handshake failed";
      case Errc::resp3_refused:
        return "server refused HELLO 3 (lockwire needs RESP3)";
      case Errc::auth_failed:
        return "authentication failed";
      case Errc::protocol_error:
        return "protocol error: malformed RESP or an unsolicited reply";
      case Errc::input_limit:
        return "input limit exceeded";
      case Errc::output_limit:
        return "output limit exceeded";
      case Errc::server_error:
        return "server replied with an error";
      case Errc::closed:
        return "connection closed by its owner";
      case Errc::bad_url:
        return "malformed Redis URL";
      case Errc::bad_request:
        return "malformed or unsupported request";
      case Errc::health_check_failed:
        return "health check: server did not answer";
    }
    return "unknown connection error";
  }
};

char upper(char c) noexcept {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}

bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (upper(a[i]) != b[i]) return false;
  }
  return true;
}

enum class Cmd : std::uint8_t {
  other,
  multi,
  exec,
  discard,
  watch,
  unwatch,
  subscribe,    // needs >= 1 channel; RESP3 acks are pushes, not replies
  unsubscribe,  // same, 0 channels allowed
  unsupported,  // would break RESP3 or reply matching
};

Cmd classify(std::string_view name, std::string_view arg1, std::size_t argc) noexcept {
  switch (name.size()) {
    case 4:
      if (iequal(name, "EXEC")) return Cmd::exec;
      break;
    case 5:
      if (iequal(name, "MULTI")) return Cmd::multi;
      if (iequal(name, "WATCH")) return Cmd::watch;
      if (iequal(name, "RESET")) return Cmd::unsupported;
      if (iequal(name, "HELLO")) return Cmd::unsupported;
      break;
    case 6:
      if (iequal(name, "CLIENT") && argc >= 2 && iequal(arg1, "REPLY")) return Cmd::unsupported;
      break;
    case 7:
      if (iequal(name, "DISCARD")) return Cmd::discard;
      if (iequal(name, "UNWATCH")) return Cmd::unwatch;
      if (iequal(name, "MONITOR")) return Cmd::unsupported;
      break;
    case 9:
      if (iequal(name, "SUBSCRIBE")) return Cmd::subscribe;
      break;
    case 10:
      if (iequal(name, "PSUBSCRIBE") || iequal(name, "SSUBSCRIBE")) return Cmd::subscribe;
      break;
    case 11:
      if (iequal(name, "UNSUBSCRIBE")) return Cmd::unsubscribe;
      break;
    case 12:
      if (iequal(name, "PUNSUBSCRIBE") || iequal(name, "SUNSUBSCRIBE")) return Cmd::unsubscribe;
      break;
    default:
      break;
  }
  return Cmd::other;
}

enum class Lane : std::uint8_t { none, atomic, watch };

// A (P|S)SUBSCRIBE in a request: the reply slot it takes, and how many acknowledgement pushes
// (one per channel) it brings. The first acknowledgement, or an error reply (e.g. NOPERM when
// the ACL grants no channel access), is its reply.
struct SubAck {
  std::uint32_t slot = 0;
  std::uint32_t acks = 0;
};
constexpr std::size_t kMaxSubscribes = 8;  // per request

struct Scan {
  std::uint32_t commands = 0;
  std::uint32_t replies = 0;
  std::array<SubAck, kMaxSubscribes> subs{};
  std::uint32_t nsubs = 0;
  Lane lane = Lane::none;
  bool watch_reads = false;   // WATCH first, no other transaction-state command
  const char* why = nullptr;  // set: malformed or unsupported
};

bool read_len(std::string_view b, std::size_t& p, char prefix, std::uint64_t& out) noexcept {
  if (p >= b.size() || b[p] != prefix) return false;
  ++p;
  std::uint64_t v = 0;
  std::size_t digits = 0;
  while (p < b.size() && b[p] >= '0' && b[p] <= '9' && digits < 11) {
    v = v * 10 + static_cast<std::uint64_t>(b[p] - '0');
    ++p;
    ++digits;
  }
  if (digits == 0 || p + 1 >= b.size() || b[p] != '\r' || b[p + 1] != '\n') return false;
  p += 2;
  out = v;
  return true;
}

// Walks the encoded commands of a request (arrays of blob strings, as resp::append_command
// writes them) to count commands and replies and to classify transaction-state commands.
Scan scan_request(std::string_view b) noexcept {
  Scan s;
  bool in_multi = false;
  int multis = 0, ends = 0, others_txn = 0, watches = 0;
  Cmd first = Cmd::other, last = Cmd::other;
  std::size_t p = 0;
  if (b.empty()) {
    s.why = "empty request";
    return s;
  }
  while (p < b.size()) {
    std::uint64_t argc = 0;
    if (!read_len(b, p, '*', argc) || argc == 0) {
      s.why = "request is not a sequence of RESP arrays of blob strings";
      return s;
    }
    std::string_view name, arg1;
    for (std::uint64_t i = 0; i < argc; ++i) {
      std::uint64_t len = 0;
      if (!read_len(b, p, '$', len) || len > b.size() - p || b.size() - p - len < 2 ||
          b[p + len] != '\r' || b[p + len + 1] != '\n') {
        s.why = "request is not a sequence of RESP arrays of blob strings";
        return s;
      }
      if (i == 0) name = b.substr(p, len);
      if (i == 1) arg1 = b.substr(p, len);
      p += len + 2;
    }
    const Cmd c = classify(name, arg1, argc);
    if (s.commands == 0) first = c;
    last = c;
    ++s.commands;
    switch (c) {
      case Cmd::unsupported:
        s.why = "RESET, HELLO, MONITOR and CLIENT REPLY are not supported on a shared connection";
        return s;
      case Cmd::subscribe:
      case Cmd::unsubscribe:
        if (in_multi) {
          s.why = "subscribe commands inside MULTI are not supported";
          return s;
        }
        if (c == Cmd::subscribe && argc < 2) {
          s.why = "SUBSCRIBE needs at least one channel";
          return s;
        }
        if (c == Cmd::subscribe) {
          if (s.nsubs == kMaxSubscribes) {
            s.why = "at most 8 subscribe commands in one request";
            return s;
          }
          s.subs[s.nsubs++] = SubAck{s.replies, static_cast<std::uint32_t>(argc - 1)};
          ++s.replies;
        }
        break;  // UNSUBSCRIBE: acknowledged by push frames only, no reply
      case Cmd::multi:
        ++multis;
        in_multi = true;
        ++s.replies;
        break;
      case Cmd::exec:
      case Cmd::discard:
        ++ends;
        in_multi = false;
        ++s.replies;
        break;
      case Cmd::watch:
        ++watches;
        ++s.replies;
        break;
      case Cmd::unwatch:
        ++others_txn;
        ++s.replies;
        break;
      case Cmd::other:
        ++s.replies;
        break;
    }
  }
  const bool any_txn = multis + ends + others_txn + watches > 0;
  if (!any_txn) return s;
  if (first == Cmd::multi && (last == Cmd::exec || last == Cmd::discard) && multis == 1 &&
      ends == 1 && watches == 0 && others_txn == 0) {
    s.lane = Lane::atomic;
    return s;
  }
  if (first == Cmd::watch && multis + ends + others_txn == 0) {
    s.lane = Lane::watch;
    s.watch_reads = true;
    return s;
  }
  s.why =
      "transaction-state commands must form one MULTI..EXEC block (send) or start with WATCH "
      "(watch)";
  return s;
}

constexpr std::uint32_t kZero = 0;

}  // namespace

const std::error_category& connection_category() noexcept {
  static const ConnectionCategory c;
  return c;
}
std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), connection_category()};
}

// ---------------------------------------------------------------------------------------------

struct Connection::Impl final : StreamHandler {
  enum class Internal : std::uint8_t { user, hello, select, ping, unwatch, info, fence };
  // Requests of the handshake: the connection is ready once none is in flight.
  static bool handshake(Internal k) noexcept {
    return k == Internal::hello || k == Internal::select || k == Internal::info ||
           k == Internal::fence;
  }

  struct Pending {  // not written yet
    std::string bytes;
    std::uint32_t replies = 0;
    std::vector<SubAck> subs;  // reply slots taken by (P|S)SUBSCRIBE acknowledgements
    Lane lane = Lane::none;
    ReplyHandler handler;
    WatchHandler whandler;
    ReplyHandler late;
    MonoTime deadline{};
    bool has_deadline = false;
    bool done = false;
  };

  struct InFlight {  // written, awaiting `replies` frames
    std::uint32_t replies = 1;
    std::uint32_t got = 0;
    std::vector<SubAck> subs;
    Internal internal = Internal::user;
    bool failed = false;  // outcome_unknown already reported: the reply goes to `late`
    bool has_deadline = false;
    MonoTime deadline{};
    std::uint64_t lane_id = 0;  // a WATCH request: the lane it holds
    ReplyHandler handler;
    WatchHandler whandler;
    ReplyHandler late;
  };

  // Detects the Connection being destroyed from inside a handler we call.
  struct Guard {
    Impl* impl;
    Guard* prev;
    bool dead = false;
    explicit Guard(Impl* i) : impl(i), prev(i->guards_) { i->guards_ = this; }
    ~Guard() {
      if (!dead) impl->guards_ = prev;
    }
  };

  Connection* self;
  Loop& loop;
  ConnectionOptions opt;
  ConnectionState state = ConnectionState::disconnected;
  std::uint32_t skip_acks = 0;  // SUBSCRIBE acknowledgements still to come after the first
  bool started = false;
  bool handshaking = false;
  std::unique_ptr<Stream> stream;
  std::vector<std::unique_ptr<Stream>> retired;
  resp::Parser parser;
  std::string inbuf;
  std::deque<Pending> queue;
  std::size_t queue_bytes = 0;
  std::deque<InFlight> inflight;
  std::uint64_t lane_holder = 0;
  std::uint64_t next_lane = 0;
  std::int64_t client_id = -1;
  std::string client_addr;  // as the server sees it (CLIENT INFO addr=), fence_abandoned only
  // Earlier connections still to be killed on the server: popped when a CLIENT KILL is answered.
  std::deque<std::pair<std::int64_t, std::string>> fences;
  std::string last_error;

  // Multi-command replies are copied (values as offsets) until the request's last frame.
  struct AccNode {
    resp::Node node;
    std::size_t voff, vlen, foff, flen;
  };
  std::vector<AccNode> acc;
  std::string acc_bytes;
  std::vector<std::uint32_t> acc_starts;
  std::vector<resp::Node> acc_nodes;

  std::vector<std::pair<std::uint64_t, PushHandler>> push_handlers;
  std::vector<std::pair<std::uint64_t, std::function<void(ConnectionState, std::error_code)>>>
      state_handlers;
  std::uint64_t next_handler_id = 0;

  std::unique_ptr<Timer> deadline_timer;
  MonoTime next_deadline{};
  std::unique_ptr<Timer> reconnect_timer;
  std::uint32_t attempt = 0;
  std::unique_ptr<Timer> health_timer;
  bool health_ping_out = false;
  std::uint64_t bytes_seen = 0;
  std::uint64_t epoch = 0;  // bumped whenever the current stream is torn down

  std::vector<std::function<void()>> deferred;
  std::shared_ptr<Impl*> token = std::make_shared<Impl*>(this);
  Guard* guards_ = nullptr;

  Impl(Connection* s, Loop& l, ConnectionOptions o)
      : self(s), loop(l), opt(std::move(o)), parser(opt.limits) {}

  ~Impl() override {
    for (Guard* g = guards_; g != nullptr; g = g->prev) g->dead = true;
  }

  // --- small helpers ----------------------------------------------------------------------------

  void defer(std::function<void()> fn) {
    deferred.push_back(std::move(fn));
    if (deferred.size() > 1) return;
    loop.post([w = std::weak_ptr<Impl*>(token)] {
      auto p = w.lock();
      if (!p) return;
      Impl* impl = *p;
      Guard g(impl);
      auto batch = std::move(impl->deferred);
      impl->deferred.clear();
      for (auto& fn : batch) {
        fn();
        if (g.dead) return;
      }
    });
  }

  void fail_later(ReplyHandler h, std::error_code ec) {
    if (!h) return;
    defer([h = std::move(h), ec] { h(ec, Replies{}); });
  }
  void fail_later(WatchHandler h, std::error_code ec) {
    if (!h) return;
    defer([h = std::move(h), ec] { h(ec, Replies{}, WatchTxn{}); });
  }

  // Returns false when the Connection was destroyed by a handler.
  bool notify(ConnectionState s, std::error_code ec) {
    state = s;
    Guard g(this);
    auto handlers = state_handlers;  // handlers may add/remove handlers
    for (auto& [id, h] : handlers) {
      h(s, ec);
      if (g.dead) return false;
    }
    return true;
  }

  std::size_t output_bytes() const noexcept {
    return queue_bytes + (stream ? stream->write_queue_bytes() : 0);
  }

  // --- deadlines ------------------------------------------------------------------------------

  void arm_deadline(MonoTime d) {
    if (!deadline_timer) deadline_timer = loop.make_timer([this] { on_deadline(); });
    if (deadline_timer->active() && next_deadline <= d) return;
    next_deadline = d;
    const Nanos delay = d - loop.now();
    deadline_timer->start(delay.count() > 0 ? delay : Nanos{0});
  }

  void on_deadline() {
    const MonoTime now = loop.now();
    std::vector<std::function<void()>> calls;
    bool kill = false;
    // Not written yet: removed, not sent.
    for (auto& p : queue) {
      if (p.done || !p.has_deadline || p.deadline > now) continue;
      p.done = true;
      queue_bytes -= p.bytes.size();
      if (p.whandler) {
        calls.push_back([h = std::move(p.whandler), ec = make_error_code(Errc::not_sent)] {
          h(ec, Replies{}, WatchTxn{});
        });
      } else if (p.handler) {
        calls.push_back(
            [h = std::move(p.handler), ec = make_error_code(Errc::not_sent)] { h(ec, Replies{}); });
      }
    }
    while (!queue.empty() && queue.front().done) queue.pop_front();
    // Written: outcome unknown; the reply is still read and goes to on_late_reply.
    bool released = false;
    for (auto& f : inflight) {
      if (f.failed || !f.has_deadline || f.deadline > now) continue;
      f.failed = true;
      if (handshake(f.internal)) {
        kill = true;
        continue;
      }
      const auto ec = make_error_code(Errc::outcome_unknown);
      if (f.whandler) {
        calls.push_back([h = std::move(f.whandler), ec] { h(ec, Replies{}, WatchTxn{}); });
        if (f.lane_id != 0 && lane_holder == f.lane_id) {
          // The server may hold our WATCH: clear it before anyone else uses the lane.
          write_internal_unwatch();
          lane_holder = 0;
          released = true;
        }
      } else if (f.handler) {
        calls.push_back([h = std::move(f.handler), ec] { h(ec, Replies{}); });
      }
    }
    Guard g(this);
    if (kill) {
      last_error = "handshake timed out";
      fail_connection(make_error_code(Errc::connect_failed));
      if (g.dead) return;
    }
    if (released) drain_queue();
    for (auto& c : calls) {
      c();
      if (g.dead) return;
    }
    rearm_deadline();
  }

  void rearm_deadline() {
    MonoTime best{Nanos::max()};
    for (auto& p : queue) {
      if (!p.done && p.has_deadline) best = std::min(best, p.deadline);
    }
    for (auto& f : inflight) {
      if (!f.failed && f.has_deadline) best = std::min(best, f.deadline);
    }
    if (best.since_origin == Nanos::max()) {
      if (deadline_timer) deadline_timer->stop();
      return;
    }
    if (deadline_timer) deadline_timer->stop();
    arm_deadline(best);
  }

  // --- writing --------------------------------------------------------------------------------

  void write_pending(Pending& p) {
    const bool watch = p.lane == Lane::watch;
    stream->write(std::move(p.bytes));
    if (p.replies == 0) {  // e.g. UNSUBSCRIBE: acknowledged by pushes only
      if (p.handler) defer([h = std::move(p.handler)] { h({}, Replies{}); });
      return;
    }
    InFlight f;
    f.replies = p.replies;
    f.subs = std::move(p.subs);
    f.handler = std::move(p.handler);
    f.whandler = std::move(p.whandler);
    f.late = std::move(p.late);
    f.has_deadline = p.has_deadline;
    f.deadline = p.deadline;
    if (watch) {
      lane_holder = ++next_lane;
      f.lane_id = lane_holder;
    }
    inflight.push_back(std::move(f));
    if (p.has_deadline) arm_deadline(p.deadline);
  }

  void write_internal(std::string bytes, Internal kind, std::uint32_t replies = 1) {
    stream->write(std::move(bytes));
    InFlight f;
    f.replies = replies;
    f.internal = kind;
    inflight.push_back(std::move(f));
  }

  void write_internal_unwatch() {
    if (state != ConnectionState::ready || !stream) return;
    std::string b;
    resp::append_command(b, {"UNWATCH"});
    write_internal(std::move(b), Internal::unwatch);
  }

  bool lane_waiters() const noexcept {
    for (auto& p : queue) {
      if (!p.done && p.lane != Lane::none) return true;
    }
    return false;
  }

  void submit(Pending p) {
    if (state == ConnectionState::closed) {
      if (p.whandler) return fail_later(std::move(p.whandler), Errc::closed);
      return fail_later(std::move(p.handler), Errc::closed);
    }
    if (started && state == ConnectionState::disconnected && !opt.auto_reconnect) {
      if (p.whandler) return fail_later(std::move(p.whandler), Errc::not_sent);
      return fail_later(std::move(p.handler), Errc::not_sent);
    }
    if (output_bytes() + p.bytes.size() > opt.max_output_bytes) {
      if (p.whandler) return fail_later(std::move(p.whandler), Errc::output_limit);
      return fail_later(std::move(p.handler), Errc::output_limit);
    }
    if (state == ConnectionState::ready &&
        (p.lane == Lane::none || (lane_holder == 0 && !lane_waiters()))) {
      write_pending(p);
      return;
    }
    queue_bytes += p.bytes.size();
    if (p.has_deadline) arm_deadline(p.deadline);
    queue.push_back(std::move(p));
  }

  // Writes every queued request that may go now: plain ones always, transaction ones while the
  // lane is free (a WATCH request takes it).
  void drain_queue() {
    if (state != ConnectionState::ready) return;
    std::deque<Pending> keep;
    auto q = std::move(queue);
    queue.clear();
    for (auto& p : q) {
      if (p.done) continue;
      if (state == ConnectionState::ready && (p.lane == Lane::none || lane_holder == 0)) {
        queue_bytes -= p.bytes.size();
        write_pending(p);
      } else {
        keep.push_back(std::move(p));
      }
    }
    for (auto& p : queue) keep.push_back(std::move(p));  // submitted meanwhile (none today)
    queue = std::move(keep);
  }

  // --- connecting -----------------------------------------------------------------------------

  void connect_now() {
    retired.clear();
    parser.reset();
    inbuf.clear();
    acc.clear();
    acc_starts.clear();
    acc_bytes.clear();
    handshaking = false;
    if (!notify(ConnectionState::connecting, {})) return;
    stream = loop.connect(opt.endpoint, *this, opt.connect_timeout);
  }

  void schedule_reconnect() {
    if (!reconnect_timer) reconnect_timer = loop.make_timer([this] { connect_now(); });
    // Capped exponential backoff, jitter uniform in [delay/2, delay].
    double d = static_cast<double>(opt.reconnect.initial.count());
    for (std::uint32_t i = 0; i < attempt && d < static_cast<double>(opt.reconnect.max.count());
         ++i) {
      d *= std::max(1.0, opt.reconnect.multiplier);
    }
    const auto cap = static_cast<double>(opt.reconnect.max.count());
    auto delay = static_cast<std::int64_t>(std::min(d, cap));
    if (delay < 0) delay = 0;
    const std::int64_t half = delay / 2;
    const auto jitter =
        static_cast<std::int64_t>(loop.random() % static_cast<std::uint64_t>(delay - half + 1));
    ++attempt;
    reconnect_timer->start(Nanos(half + jitter));
  }

  void on_connected(std::error_code ec) override {
    if (ec) {
      last_error = "connect: " + ec.message();
      retire_stream();
      Guard g(this);
      if (!notify(ConnectionState::disconnected, ec)) return;
      after_disconnect();
      return;
    }
    handshaking = true;
    std::string b;
    std::vector<std::string_view> args{"HELLO", "3"};
    if (!opt.password.empty()) {
      // string_view on both sides: a std::string conditional would make a dangling temporary.
      const std::string_view user =
          opt.username.empty() ? std::string_view("default") : std::string_view(opt.username);
      args.insert(args.end(), {"AUTH", user, opt.password});
    }
    if (!opt.client_name.empty()) args.insert(args.end(), {"SETNAME", opt.client_name});
    resp::append_command(b, std::span<const std::string_view>(args));
    write_internal(std::move(b), Internal::hello);
    if (opt.connect_timeout.count() > 0) {
      inflight.back().has_deadline = true;
      inflight.back().deadline = loop.now() + opt.connect_timeout;
      arm_deadline(inflight.back().deadline);
    }
    if (opt.db != 0) {
      std::string s;
      resp::append_command(s, "SELECT", static_cast<std::int64_t>(opt.db));
      write_internal(std::move(s), Internal::select);
    }
    if (opt.fence_abandoned) {
      if (client_id > 0 && !client_addr.empty() && fences.size() < 8) {
        fences.emplace_back(client_id, std::move(client_addr));
      }
      client_addr.clear();
      std::string s;
      resp::append_command(s, "CLIENT", "INFO");
      write_internal(std::move(s), Internal::info);
      for (const auto& [id, addr] : fences) {
        std::string k;
        resp::append_command(k, "CLIENT", "KILL", "ID", id, "ADDR", addr);
        write_internal(std::move(k), Internal::fence);
      }
    }
  }

  void after_disconnect() {
    if (state == ConnectionState::closed) return;
    if (opt.auto_reconnect) return schedule_reconnect();
    fail_queued_not_sent();  // no reconnect: nothing queued will ever be sent
  }

  // Every request still waiting to be written fails with not_sent (handlers run later, never
  // from inside this call).
  void fail_queued_not_sent() {
    auto q = std::move(queue);
    queue.clear();
    queue_bytes = 0;
    for (auto& p : q) {
      if (p.done) continue;
      if (p.whandler) {
        fail_later(std::move(p.whandler), Errc::not_sent);
      } else {
        fail_later(std::move(p.handler), Errc::not_sent);
      }
    }
  }

  void retire_stream() {
    if (!stream) return;
    stream->close();
    retired.push_back(std::move(stream));  // destroyed later, never inside its own callback
  }

  void handshake_reply(const InFlight& f, resp::Frame frame) {
    const std::size_t v = resp::value_index(frame);
    if (f.internal == Internal::info) {
      // "id=7 addr=10.0.0.5:51234 laddr=..." (verbatim or bulk); an error: no fencing.
      if (!resp::is_error(frame) && v < frame.size()) {
        const std::string_view text = frame[v].value;
        std::size_t at = text.starts_with("addr=") ? 0 : text.find(" addr=");
        if (at != std::string_view::npos) {
          at += text[at] == ' ' ? 6 : 5;
          const std::size_t end = text.find_first_of(" \n", at);
          client_addr.assign(text.substr(at, end == std::string_view::npos ? end : end - at));
        }
      }
    } else if (f.internal == Internal::fence) {
      // Killed (:1) or already gone (:0, or an error such as NOPERM): either way, done.
      if (!fences.empty()) fences.pop_front();
    } else if (resp::is_error(frame)) {
      const std::string_view code = v < frame.size() ? resp::error_code(frame[v]) : "";
      const std::string_view msg = v < frame.size() ? frame[v].value : "";
      Errc e = Errc::connect_failed;
      if (f.internal == Internal::hello) {
        if (code == "NOPROTO" || msg.find("unknown command") != std::string_view::npos) {
          e = Errc::resp3_refused;
        } else if (code == "WRONGPASS" || code == "NOAUTH" || code == "NOPERM" ||
                   msg.find("password") != std::string_view::npos) {
          e = Errc::auth_failed;
        }
      }
      last_error =
          std::string(f.internal == Internal::hello ? "HELLO 3: " : "SELECT: ") + std::string(msg);
      // Requests queued for this server would fail the same way: tell them now.
      const bool config_error = e == Errc::auth_failed || e == Errc::resp3_refused;
      Guard g(this);
      fail_connection(make_error_code(e));
      if (g.dead || !config_error) return;
      fail_queued_not_sent();
      return;
    }
    if (f.internal == Internal::hello) {
      if (v < frame.size() && frame[v].type == resp::Type::map) {
        for (std::size_t i = resp::first_element(frame, v); i < frame.size();
             i = resp::next_element(frame, resp::next_element(frame, i))) {
          if (resp::equals(frame[i], "id")) {
            const std::size_t val = resp::next_element(frame, i);
            if (val < frame.size()) client_id = resp::to_int64(frame[val]).value_or(-1);
            break;
          }
        }
      }
    }
    // Ready once the last handshake reply is in (fences included: nothing of ours may be
    // written before the abandoned connections are gone).
    for (auto& x : inflight) {
      if (handshake(x.internal)) return;
    }
    on_ready();
  }

  void on_ready() {
    handshaking = false;
    attempt = 0;
    last_error.clear();
    // State handlers (re-subscribe, re-enable tracking) write before the queued backlog.
    auto backlog = std::move(queue);
    queue.clear();
    queue_bytes = 0;
    Guard g(this);
    if (!notify(ConnectionState::ready, {})) return;
    if (state != ConnectionState::ready) {  // a state handler closed or broke the connection
      for (auto& p : backlog) {
        if (p.done) continue;
        if (state == ConnectionState::closed) {
          if (p.whandler) fail_later(std::move(p.whandler), Errc::closed);
          if (p.handler) fail_later(std::move(p.handler), Errc::closed);
        } else {
          queue_bytes += p.bytes.size();
          queue.push_back(std::move(p));
        }
      }
      return;
    }
    for (auto& p : backlog) {
      if (p.done) continue;
      if (state == ConnectionState::ready &&
          (p.lane == Lane::none || (lane_holder == 0 && !lane_waiters()))) {
        write_pending(p);
      } else {
        queue_bytes += p.bytes.size();
        queue.push_back(std::move(p));
      }
    }
    if (opt.health_check_interval.count() > 0) {
      if (!health_timer) health_timer = loop.make_timer([this] { on_health(); });
      health_ping_out = false;
      bytes_seen = 0;
      health_timer->start(opt.health_check_interval, opt.health_check_interval);
    }
  }

  // --- connection loss ------------------------------------------------------------------------

  void fail_connection(std::error_code ec) {
    if (state == ConnectionState::closed || state == ConnectionState::disconnected) return;
    if (last_error.empty()) last_error = ec.message();
    ++epoch;
    retire_stream();
    if (health_timer) health_timer->stop();
    parser.reset();
    inbuf.clear();
    acc.clear();
    acc_starts.clear();
    acc_bytes.clear();
    handshaking = false;
    lane_holder = 0;
    skip_acks = 0;
    auto lost = std::move(inflight);
    inflight.clear();
    state = ConnectionState::disconnected;
    Guard g(this);
    for (auto& f : lost) {
      if (f.internal != Internal::user) continue;
      if (f.failed) {
        // The late reply will never come.
        if (f.late) f.late(make_error_code(Errc::connection_lost), Replies{});
      } else if (f.whandler) {
        f.whandler(make_error_code(Errc::outcome_unknown), Replies{}, WatchTxn{});
      } else if (f.handler) {
        f.handler(make_error_code(Errc::outcome_unknown), Replies{});
      }
      if (g.dead) return;
    }
    if (!notify(ConnectionState::disconnected, ec)) return;
    after_disconnect();
  }

  void on_closed(std::error_code ec) override {
    if (last_error.empty() || state == ConnectionState::ready) {
      last_error = "connection lost: " + ec.message();
    }
    fail_connection(make_error_code(Errc::connection_lost));
  }

  // --- health ---------------------------------------------------------------------------------

  void on_health() {
    if (state != ConnectionState::ready) return;
    if (health_ping_out) {
      // Bytes still arriving (a slow, large frame) mean the server is alive.
      if (bytes_seen == 0) {
        last_error = "health check: no answer to PING within the interval";
        fail_connection(make_error_code(Errc::health_check_failed));
        return;
      }
    } else if (inflight.empty() && queue.empty()) {
      std::string b;
      resp::append_command(b, {"PING"});
      write_internal(std::move(b), Internal::ping);
      health_ping_out = true;
    }
    bytes_seen = 0;
  }

  // --- reading --------------------------------------------------------------------------------

  void on_data(std::string_view bytes) override {
    bytes_seen += bytes.size();
    Guard g(this);
    std::string_view in;
    const bool direct = inbuf.empty();
    if (direct) {
      in = bytes;
    } else {
      if (inbuf.size() + bytes.size() > opt.max_input_bytes) return input_overflow();
      inbuf.append(bytes);
      in = inbuf;
    }
    std::size_t pos = 0;
    while (pos < in.size()) {
      const resp::ParseResult r = parser.parse(in.substr(pos));
      if (r.status == resp::ParseResult::Status::incomplete) break;
      if (r.status == resp::ParseResult::Status::error) {
        const auto pe = resp::make_error_code(r.error);
        last_error = "malformed RESP from server: " + pe.message();
        const bool limit = r.error == resp::ParseError::blob_too_long ||
                           r.error == resp::ParseError::aggregate_too_long ||
                           r.error == resp::ParseError::depth_exceeded;
        fail_connection(make_error_code(limit ? Errc::input_limit : Errc::protocol_error));
        return;
      }
      pos += r.consumed;
      const std::uint64_t e = epoch;
      on_frame(parser.frame());
      if (g.dead || e != epoch) return;  // torn down inside a handler: these bytes are stale
    }
    if (direct) {
      if (bytes.size() - pos > opt.max_input_bytes) return input_overflow();
      inbuf.assign(bytes.substr(pos));
    } else {
      inbuf.erase(0, pos);
    }
  }

  void input_overflow() {
    last_error = "a reply exceeded max_input_bytes";
    fail_connection(make_error_code(Errc::input_limit));
  }

  // The front request's next reply is a (P|S)SUBSCRIBE's: its acknowledgement count, else 0.
  [[nodiscard]] std::uint32_t awaited_sub_ack() const noexcept {
    if (inflight.empty()) return 0;
    const InFlight& f = inflight.front();
    for (const SubAck& a : f.subs) {
      if (a.slot == f.got) return a.acks;
    }
    return 0;
  }

  [[nodiscard]] static bool is_sub_ack(resp::Frame push, std::size_t v) noexcept {
    if (push[v].size == 0) return false;
    const std::size_t k = resp::first_element(push, v);
    return k < push.size() &&
           (resp::equals(push[k], "subscribe") || resp::equals(push[k], "psubscribe") ||
            resp::equals(push[k], "ssubscribe"));
  }

  void on_frame(resp::Frame frame) {
    const std::size_t v = resp::value_index(frame);
    if (v < frame.size() && frame[v].type == resp::Type::push) {
      if (health_ping_out) bytes_seen += 1;
      // The first acknowledgement of a SUBSCRIBE is also its reply; the others (one per
      // further channel) are only pushes.
      bool as_reply = false;
      if (is_sub_ack(frame, v)) {
        if (skip_acks > 0) {
          --skip_acks;
        } else if (const std::uint32_t acks = awaited_sub_ack(); acks > 0) {
          skip_acks = acks - 1;
          as_reply = true;
        }
      }
      auto handlers = push_handlers;
      Guard g(this);
      for (auto& [id, h] : handlers) {
        h(frame.subspan(v));
        if (g.dead) return;
      }
      // A handler may have closed the connection (nothing awaits the reply any more).
      if (!as_reply || awaited_sub_ack() == 0) return;
    }
    if (inflight.empty()) {
      last_error = "unsolicited reply from server (no request waiting)";
      fail_connection(make_error_code(Errc::protocol_error));
      return;
    }
    InFlight& front = inflight.front();
    if (front.replies == 1) {
      InFlight f = std::move(front);
      inflight.pop_front();
      complete(f, Replies(frame, std::span<const std::uint32_t>(&kZero, 1)), resp::is_error(frame));
      return;
    }
    accumulate(frame);
    if (++front.got < front.replies) return;
    InFlight f = std::move(front);
    inflight.pop_front();
    // Moved out first (so that a handler sending a multi-command request can reuse the members),
    // then the views are made: a moved short string changes address.
    auto bytes = std::move(acc_bytes);
    auto starts = std::move(acc_starts);
    auto nodes = std::move(acc_nodes);
    acc_bytes.clear();
    acc_starts.clear();
    acc_nodes.clear();
    nodes.clear();
    bool error = false;
    for (const AccNode& a : acc) {
      resp::Node n = a.node;
      n.value = std::string_view(bytes.data() + a.voff, a.vlen);
      n.format = std::string_view(bytes.data() + a.foff, a.flen);
      nodes.push_back(n);
    }
    acc.clear();
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::size_t e = i + 1 < starts.size() ? starts[i + 1] : nodes.size();
      if (resp::is_error(resp::Frame(nodes).subspan(starts[i], e - starts[i]))) error = true;
    }
    complete(f, Replies(nodes, starts), error);
  }

  void accumulate(resp::Frame frame) {
    acc_starts.push_back(static_cast<std::uint32_t>(acc.size()));
    for (const resp::Node& n : frame) {
      AccNode a{n, acc_bytes.size(), n.value.size(), 0, 0};
      acc_bytes.append(n.value);
      a.foff = acc_bytes.size();
      a.flen = n.format.size();
      acc_bytes.append(n.format);
      acc.push_back(a);
    }
  }

  void complete(InFlight& f, const Replies& replies, bool error) {
    const std::error_code ec = error ? make_error_code(Errc::server_error) : std::error_code{};
    switch (f.internal) {
      case Internal::hello:
      case Internal::select:
      case Internal::info:
      case Internal::fence:
        return handshake_reply(f, replies[0]);
      case Internal::ping:
        health_ping_out = false;
        return;
      case Internal::unwatch:
        return;
      case Internal::user:
        break;
    }
    if (f.failed) {
      if (f.late) f.late(ec, replies);
      return;
    }
    if (f.whandler) {
      if (f.lane_id != 0 && lane_holder != f.lane_id) {
        // Cannot happen while connected; be safe.
        return f.whandler(make_error_code(Errc::outcome_unknown), Replies{}, WatchTxn{});
      }
      if (ec) {
        // WATCH or a read failed: the caller gets no lane; clear what the server may hold.
        write_internal_unwatch();
        lane_holder = 0;
        Guard g(this);
        f.whandler(ec, replies, WatchTxn{});
        if (g.dead) return;
        drain_queue();
        return;
      }
      f.whandler(ec, replies, WatchTxn(self, f.lane_id));
      return;
    }
    if (f.handler) f.handler(ec, replies);
  }

  // --- transaction lane -----------------------------------------------------------------------

  void release_lane() {
    lane_holder = 0;
    drain_queue();
  }

  void txn_exec(std::uint64_t id, Request block, ReplyHandler handler, RequestOptions options) {
    const Scan s = scan_request(block.bytes);
    if (s.why != nullptr || s.lane != Lane::atomic) {
      last_error = s.why != nullptr ? s.why : "WatchTxn::exec needs one MULTI ... EXEC block";
      fail_later(std::move(handler), Errc::bad_request);
      txn_unwatch(id);
      return;
    }
    if (lane_holder != id || state != ConnectionState::ready) {
      // The connection dropped since WATCH: the server no longer holds it.
      fail_later(std::move(handler), Errc::not_sent);
      return;
    }
    Pending p;
    p.bytes = std::move(block.bytes);
    p.replies = s.replies;
    p.lane = Lane::atomic;
    p.handler = std::move(handler);
    p.late = std::move(options.on_late_reply);
    if (options.timeout.count() > 0) {
      p.has_deadline = true;
      p.deadline = loop.now() + options.timeout;
    }
    write_pending(p);
    release_lane();
  }

  void txn_unwatch(std::uint64_t id) {
    if (lane_holder != id) return;
    write_internal_unwatch();
    release_lane();
  }

  // --- closing --------------------------------------------------------------------------------

  void close() {
    if (state == ConnectionState::closed) return;
    ++epoch;
    retire_stream();
    if (deadline_timer) deadline_timer->stop();
    if (reconnect_timer) reconnect_timer->stop();
    if (health_timer) health_timer->stop();
    lane_holder = 0;
    auto q = std::move(queue);
    auto f = std::move(inflight);
    queue.clear();
    inflight.clear();
    skip_acks = 0;
    queue_bytes = 0;
    state = ConnectionState::closed;
    const auto ec = make_error_code(Errc::closed);
    Guard g(this);
    for (auto& p : q) {
      if (p.done) continue;
      if (p.whandler) p.whandler(ec, Replies{}, WatchTxn{});
      if (p.handler) p.handler(ec, Replies{});
      if (g.dead) return;
    }
    for (auto& x : f) {
      if (x.internal != Internal::user) continue;
      if (x.failed) {
        if (x.late) x.late(ec, Replies{});
      } else if (x.whandler) {
        x.whandler(ec, Replies{}, WatchTxn{});
      } else if (x.handler) {
        x.handler(ec, Replies{});
      }
      if (g.dead) return;
    }
    notify(ConnectionState::closed, ec);
  }
};

// ---------------------------------------------------------------------------------------------

Connection::Connection(Loop& loop, ConnectionOptions options)
    : impl_(std::make_unique<Impl>(this, loop, std::move(options))) {}

Connection::~Connection() {
  impl_->state_handlers.clear();
  impl_->close();
}

void Connection::start() {
  if (impl_->started || impl_->state == ConnectionState::closed) return;
  impl_->started = true;
  impl_->connect_now();
}

void Connection::close() noexcept {
  impl_->close();
}
ConnectionState Connection::state() const noexcept {
  return impl_->state;
}

void Connection::send(Request request, ReplyHandler handler, RequestOptions options) {
  const Scan s = scan_request(request.bytes);
  if (s.why != nullptr || s.commands != request.commands || s.lane == Lane::watch) {
    impl_->last_error = s.why != nullptr        ? s.why
                        : s.lane == Lane::watch ? "WATCH requests go through Connection::watch()"
                                                : "Request::commands does not match the bytes";
    return impl_->fail_later(std::move(handler), Errc::bad_request);
  }
  Impl::Pending p;
  p.bytes = std::move(request.bytes);
  p.replies = s.replies;
  p.subs.assign(s.subs.begin(), s.subs.begin() + s.nsubs);
  p.lane = s.lane;
  p.handler = std::move(handler);
  p.late = std::move(options.on_late_reply);
  if (options.timeout.count() > 0) {
    p.has_deadline = true;
    p.deadline = impl_->loop.now() + options.timeout;
  }
  impl_->submit(std::move(p));
}

void Connection::command(std::initializer_list<std::string_view> args, ReplyHandler handler,
                         RequestOptions options) {
  Request r;
  resp::append_command(r.bytes, std::span<const std::string_view>(args.begin(), args.size()));
  send(std::move(r), std::move(handler), std::move(options));
}

void Connection::watch(Request watch_and_reads, WatchHandler handler, RequestOptions options) {
  const Scan s = scan_request(watch_and_reads.bytes);
  if (s.why != nullptr || s.lane != Lane::watch || s.commands != watch_and_reads.commands ||
      s.nsubs != 0) {
    impl_->last_error = s.why != nullptr ? s.why : "watch() needs WATCH first, then reads only";
    return impl_->fail_later(std::move(handler), Errc::bad_request);
  }
  Impl::Pending p;
  p.bytes = std::move(watch_and_reads.bytes);
  p.replies = s.replies;
  p.lane = Lane::watch;
  p.whandler = std::move(handler);
  p.late = std::move(options.on_late_reply);
  if (options.timeout.count() > 0) {
    p.has_deadline = true;
    p.deadline = impl_->loop.now() + options.timeout;
  }
  impl_->submit(std::move(p));
}

std::uint64_t Connection::add_push_handler(PushHandler handler) {
  const std::uint64_t id = ++impl_->next_handler_id;
  impl_->push_handlers.emplace_back(id, std::move(handler));
  return id;
}

void Connection::remove_push_handler(std::uint64_t id) noexcept {
  auto& v = impl_->push_handlers;
  v.erase(std::remove_if(v.begin(), v.end(), [id](auto& e) { return e.first == id; }), v.end());
}

std::uint64_t Connection::add_state_handler(
    std::function<void(ConnectionState, std::error_code)> handler) {
  const std::uint64_t id = ++impl_->next_handler_id;
  impl_->state_handlers.emplace_back(id, std::move(handler));
  return id;
}

void Connection::remove_state_handler(std::uint64_t id) noexcept {
  auto& v = impl_->state_handlers;
  v.erase(std::remove_if(v.begin(), v.end(), [id](auto& e) { return e.first == id; }), v.end());
}

Loop& Connection::loop() noexcept {
  return impl_->loop;
}
std::int64_t Connection::client_id() const noexcept {
  return impl_->client_id;
}
const std::string& Connection::last_error() const noexcept {
  return impl_->last_error;
}
std::size_t Connection::in_flight() const noexcept {
  return impl_->inflight.size();
}

// ---------------------------------------------------------------------------------------------

WatchTxn::WatchTxn(WatchTxn&& o) noexcept : conn_(std::exchange(o.conn_, nullptr)), id_(o.id_) {}

WatchTxn& WatchTxn::operator=(WatchTxn&& o) noexcept {
  if (this != &o) {
    unwatch();
    conn_ = std::exchange(o.conn_, nullptr);
    id_ = o.id_;
  }
  return *this;
}

WatchTxn::~WatchTxn() {
  unwatch();
}

void WatchTxn::exec(Request block, ReplyHandler handler, RequestOptions options) {
  if (conn_ == nullptr) {
    // An invalid txn: report through the handler like any other failure, never inline.
    if (handler) handler(make_error_code(Errc::not_sent), Replies{});
    return;
  }
  Connection* c = std::exchange(conn_, nullptr);
  c->impl_->txn_exec(id_, std::move(block), std::move(handler), std::move(options));
}

void WatchTxn::unwatch() noexcept {
  if (conn_ == nullptr) return;
  Connection* c = std::exchange(conn_, nullptr);
  try {
    c->impl_->txn_unwatch(id_);
  } catch (...) {  // allocation failure while encoding UNWATCH: nothing sensible to do
  }
}

}  // namespace lockwire::loop
