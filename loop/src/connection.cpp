// Connection: the public methods and the writing half of the multiplexer — submission, the
// queue and the transaction lane, deadlines — plus connection loss and close. The reading half
// (frames to requests, pushes) is replies.cpp; connecting, the handshake, reconnects and the
// health check are handshake.cpp; the request rules request_check.cpp.
#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "connection_impl.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"
#include "request_rules.hpp"

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

// The shape a request is sent with: the builder's record, else its bytes walked.
const RequestShape& shape_of(const Request& r, RequestShape& scratch) noexcept {
  if (r.shape().describes(r)) return r.shape();
  scratch = RequestShape::of(r.bytes);
  return scratch;
}

}  // namespace

const std::error_category& connection_category() noexcept {
  static const ConnectionCategory c;
  return c;
}
std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), connection_category()};
}

// --- small helpers ------------------------------------------------------------------------------

void Connection::Impl::defer(std::function<void()> fn) {
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

void Connection::Impl::fail_later(ReplyHandler h, std::error_code ec) {
  if (!h) return;
  defer([h = std::move(h), ec] { h(ec, Replies{}); });
}

void Connection::Impl::fail_later(WatchHandler h, std::error_code ec) {
  if (!h) return;
  defer([h = std::move(h), ec] { h(ec, Replies{}, WatchTxn{}); });
}

bool Connection::Impl::notify(ConnectionState s, std::error_code ec) {
  state = s;
  Guard g(this);
  // Handlers may add/remove handlers, or destroy the connection.
  return state_handlers.snapshot().call_each(g.dead, s, ec);
}

// --- deadlines ----------------------------------------------------------------------------------

void Connection::Impl::arm_deadline(MonoTime d) {
  if (!deadline_timer) deadline_timer = loop.make_timer([this] { on_deadline(); });
  if (deadline_timer->active() && next_deadline <= d) return;
  next_deadline = d;
  const Nanos delay = d - loop.now();
  deadline_timer->start(delay.count() > 0 ? delay : Nanos{0});
}

void Connection::Impl::on_deadline() {
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
  for (std::size_t i = 0; i < inflight.size(); ++i) {
    InFlight& f = inflight[i];
    if (f.failed || !f.has_deadline || f.deadline > now) continue;
    f.failed = true;
    if (f.internal == Internal::handshake) {
      kill = true;
      continue;
    }
    const auto ec = make_error_code(Errc::outcome_unknown);
    if (f.watch()) {
      calls.push_back([h = std::move(f.rare->whandler), ec] { h(ec, Replies{}, WatchTxn{}); });
      if (f.lane_id() != 0 && lane_holder == f.lane_id()) {
        lane_holder = 0;
        released = true;
      }
    } else if (f.handler) {
      calls.push_back([h = std::move(f.handler), ec] { h(ec, Replies{}); });
    }
  }
  // The server may hold our WATCH: clear it before anyone else uses the lane. (Written after
  // the walk: a write adds to `inflight`, which moves its elements.)
  if (released) write_internal_unwatch();
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

void Connection::Impl::rearm_deadline() {
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

// --- writing: the queue and the transaction lane ------------------------------------------------

// The bytes are well-formed commands (the shape was checked): arrays of blob strings.
void Connection::Impl::add_asking(Pending& p) {
  static constexpr std::string_view kAsking = "*1\r\n$6\r\nASKING\r\n";
  const std::string_view in = p.bytes;
  std::string out;
  out.reserve(in.size() + 4 * kAsking.size());
  std::vector<std::uint8_t> slots;
  bool in_multi = false;
  std::size_t pos = 0;
  auto number = [&](std::size_t& at) {
    std::size_t n = 0;
    ++at;  // '*' or '$'
    while (at < in.size() && in[at] != '\r') n = n * 10 + static_cast<std::size_t>(in[at++] - '0');
    at += 2;
    return n;
  };
  while (pos < in.size()) {
    const std::size_t start = pos;
    const std::size_t argc = number(pos);
    std::string name;
    for (std::size_t a = 0; a < argc; ++a) {
      const std::size_t len = number(pos);
      if (a == 0) {
        for (char ch : in.substr(pos, len)) {
          name.push_back(static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch));
        }
      }
      pos += len + 2;
    }
    if (!in_multi) {
      out.append(kAsking);
      slots.push_back(1);
    }
    if (name == "MULTI") in_multi = true;
    if (name == "EXEC" || name == "DISCARD") in_multi = false;
    out.append(in.substr(start, pos - start));
    slots.push_back(0);
  }
  p.replies = static_cast<std::uint32_t>(slots.size());
  p.bytes = std::move(out);
  p.asking = std::move(slots);
}

void Connection::Impl::write_pending(Pending& p) {
  const bool watch = p.kind == RequestKind::watch;
  stream->write(std::move(p.bytes));
  if (p.replies == 0) {  // e.g. UNSUBSCRIBE: acknowledged by pushes only
    if (p.handler) defer([h = std::move(p.handler)] { h({}, Replies{}); });
    return;
  }
  InFlight& f = inflight.emplace_back();
  f.replies = p.replies;
  f.handler = std::move(p.handler);
  f.has_deadline = p.has_deadline;
  f.deadline = p.deadline;
  if (!p.subs.empty() || p.whandler || !p.asking.empty() || p.late || watch) {
    InFlight::Rare& r = f.more();
    r.subs = std::move(p.subs);
    r.whandler = std::move(p.whandler);
    r.asking = std::move(p.asking);
    r.late = std::move(p.late);
    if (watch) {
      lane_holder = ++next_lane;
      r.lane_id = lane_holder;
    }
  }
  if (p.has_deadline) arm_deadline(p.deadline);
}

void Connection::Impl::write_internal(std::string bytes, Internal kind, std::uint32_t replies) {
  stream->write(std::move(bytes));
  InFlight& f = inflight.emplace_back();
  f.replies = replies;
  f.internal = kind;
}

void Connection::Impl::write_internal_unwatch() {
  if (state != ConnectionState::ready || !stream) return;
  std::string b;
  resp::append_command(b, {"UNWATCH"});
  write_internal(std::move(b), Internal::unwatch);
}

bool Connection::Impl::lane_waiters() const noexcept {
  for (auto& p : queue) {
    if (!p.done && p.kind != RequestKind::plain) return true;
  }
  return false;
}

void Connection::Impl::submit(Pending p) {
  if (state == ConnectionState::closed) {
    return fail_pending(p, Errc::closed);
  }
  if (started && state == ConnectionState::disconnected && !opt.auto_reconnect) {
    return fail_pending(p, Errc::not_sent);
  }
  if (output_bytes() + p.bytes.size() > opt.max_output_bytes) {
    return fail_pending(p, Errc::output_limit);
  }
  if (state == ConnectionState::ready &&
      (p.kind == RequestKind::plain || (lane_holder == 0 && !lane_waiters()))) {
    write_pending(p);
    return;
  }
  queue_bytes += p.bytes.size();
  if (p.has_deadline) arm_deadline(p.deadline);
  queue.push_back(std::move(p));
}

// Writes every queued request that may go now: plain ones always, transaction ones while the
// lane is free (a WATCH request takes it).
void Connection::Impl::drain_queue() {
  if (state != ConnectionState::ready) return;
  std::deque<Pending> keep;
  auto q = std::move(queue);
  queue.clear();
  for (auto& p : q) {
    if (p.done) continue;
    if (state == ConnectionState::ready && (p.kind == RequestKind::plain || lane_holder == 0)) {
      queue_bytes -= p.bytes.size();
      write_pending(p);
    } else {
      keep.push_back(std::move(p));
    }
  }
  for (auto& p : queue) keep.push_back(std::move(p));  // submitted meanwhile (none today)
  queue = std::move(keep);
}

// Every request still waiting to be written fails with not_sent (handlers run later, never
// from inside this call).
void Connection::Impl::fail_queued_not_sent() {
  auto q = std::move(queue);
  queue.clear();
  queue_bytes = 0;
  for (auto& p : q) {
    if (p.done) continue;
    fail_pending(p, Errc::not_sent);
  }
}

void Connection::Impl::release_lane() {
  lane_holder = 0;
  drain_queue();
}

void Connection::Impl::txn_exec(std::uint64_t id, Request block, ReplyHandler handler,
                                RequestOptions options) {
  RequestShape scratch;
  const RequestShape& s = shape_of(block, scratch);
  if (s.error() != nullptr || !s.block_only()) {
    last_error = s.error() != nullptr ? s.error() : "WatchTxn::exec needs one MULTI ... EXEC block";
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
  p.replies = s.replies();
  p.kind = RequestKind::atomic;
  p.handler = std::move(handler);
  p.late = std::move(options.on_late_reply);
  if (options.asking) add_asking(p);
  if (options.timeout.count() > 0) {
    p.has_deadline = true;
    p.deadline = loop.now() + options.timeout;
  }
  write_pending(p);
  release_lane();
}

void Connection::Impl::txn_unwatch(std::uint64_t id) {
  if (lane_holder != id) return;
  write_internal_unwatch();
  release_lane();
}

// --- connection loss and close ------------------------------------------------------------------

void Connection::Impl::retire_stream() {
  if (!stream) return;
  stream->close();
  retired.push_back(std::move(stream));  // destroyed later, never inside its own callback
}

void Connection::Impl::fail_connection(std::error_code ec) {
  if (state == ConnectionState::closed || state == ConnectionState::disconnected) return;
  if (last_error.empty()) last_error = ec.message();
  ++epoch;
  retire_stream();
  if (health_timer) health_timer->stop();
  parser.reset();
  inbuf.clear();
  reset_accumulated();
  lane_holder = 0;
  skip_acks = 0;
  auto lost = std::move(inflight);
  inflight.clear();
  state = ConnectionState::disconnected;
  // Requests bound to the stream that just went are never written to the next one.
  for (auto& p : queue) {
    if (p.done || !p.this_stream_only || p.epoch != epoch - 1) continue;
    p.done = true;
    queue_bytes -= p.bytes.size();
    fail_pending(p, Errc::not_sent);
  }
  Guard g(this);
  for (auto& f : lost) {
    if (f.internal != Internal::user) continue;
    if (f.failed) {
      // The late reply will never come.
      f.late(make_error_code(Errc::connection_lost), Replies{});
    } else if (f.watch()) {
      f.rare->whandler(make_error_code(Errc::outcome_unknown), Replies{}, WatchTxn{});
    } else if (f.handler) {
      f.handler(make_error_code(Errc::outcome_unknown), Replies{});
    }
    if (g.dead) return;
  }
  if (!notify(ConnectionState::disconnected, ec)) return;
  after_disconnect();
}

void Connection::Impl::on_closed(std::error_code ec) {
  if (last_error.empty() || state == ConnectionState::ready) {
    last_error = "connection lost: " + ec.message();
  }
  fail_connection(make_error_code(Errc::connection_lost));
}

void Connection::Impl::close() {
  if (state == ConnectionState::closed) return;
  ++epoch;
  retire_stream();
  stop_sentinels();
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
      x.late(ec, Replies{});
    } else if (x.watch()) {
      x.rare->whandler(ec, Replies{}, WatchTxn{});
    } else if (x.handler) {
      x.handler(ec, Replies{});
    }
    if (g.dead) return;
  }
  notify(ConnectionState::closed, ec);
}

// --- Connection ---------------------------------------------------------------------------------

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
  RequestShape scratch;
  const RequestShape& s = shape_of(request, scratch);
  const char* error = s.error();
  const RequestKind kind = s.kind();
  if (error != nullptr || s.commands() != request.commands || kind == RequestKind::watch) {
    impl_->last_error = error != nullptr              ? error
                        : kind == RequestKind::watch ? "WATCH requests go through Connection::watch()"
                                                     : "Request::commands does not match the bytes";
    return impl_->fail_later(std::move(handler), Errc::bad_request);
  }
  // A MULTI block may go now too when it would not wait for the lane (submit's rule).
  const bool lane_free = kind == RequestKind::plain ||
                         (impl_->lane_holder == 0 && !impl_->lane_waiters());
  if (lane_free && s.subscribes().empty() && s.replies() > 0 &&
      impl_->can_write_now(request.bytes.size(), options)) {
    impl_->stream->write(std::move(request.bytes));
    impl_->await_reply(s.replies(), handler, options);
    return;
  }
  Impl::Pending p;
  p.bytes = std::move(request.bytes);
  p.replies = s.replies();
  p.subs.assign(s.subscribes().begin(), s.subscribes().end());
  p.kind = kind;
  p.handler = std::move(handler);
  p.late = std::move(options.on_late_reply);
  if (options.asking && p.subs.empty()) Impl::add_asking(p);
  if (options.timeout.count() > 0) {
    p.has_deadline = true;
    p.deadline = impl_->loop.now() + options.timeout;
  }
  p.this_stream_only = options.this_stream_only;
  p.epoch = impl_->epoch;
  impl_->submit(std::move(p));
}

// A request that needs nothing but to be written (plain, no ASKING, within the output limit)
// on a ready connection skips the queue's Pending: written, then awaited (await_reply). The
// general path (submit) decides the same for these, only with more moves.
bool Connection::Impl::can_write_now(std::size_t bytes, const RequestOptions& options) const {
  return state == ConnectionState::ready && stream && !options.asking &&
         output_bytes() + bytes <= opt.max_output_bytes;
}

void Connection::Impl::await_reply(std::uint32_t replies, ReplyHandler& handler,
                                   RequestOptions& options) {
  InFlight& f = inflight.emplace_back();
  f.replies = replies;
  f.handler = std::move(handler);
  if (options.on_late_reply) f.more().late = std::move(options.on_late_reply);
  if (options.timeout.count() > 0) {
    f.has_deadline = true;
    f.deadline = loop.now() + options.timeout;
    arm_deadline(f.deadline);
  }
}

// command()'s common case without a Request: one plain command, encoded on the stack (or in a
// reused buffer when long) and copied into the stream's pending bytes. Anything else (not
// ready, a transaction or subscribe command, ASKING, an output limit to report) returns false
// and goes the general way, send().
bool Connection::Impl::write_now(std::span<const std::string_view> args, ReplyHandler& handler,
                                 RequestOptions& options) {
  if (args.empty() ||
      !detail::plain_command(args[0], args.size() > 1 ? args[1] : "", args.size())) {
    return false;
  }
  const std::size_t size = resp::command_size(args);
  if (!can_write_now(size, options)) return false;
  if (size <= kStackCommand) {
    char buf[kStackCommand];
    stream->write_copy(std::string_view(buf, resp::encode_command(buf, args)));
  } else {
    encode_buf.resize(size);
    stream->write_copy(
        std::string_view(encode_buf.data(), resp::encode_command(encode_buf.data(), args)));
  }
  await_reply(1, handler, options);
  return true;
}

void Connection::command(std::initializer_list<std::string_view> args, ReplyHandler handler,
                         RequestOptions options) {
  if (impl_->write_now(std::span<const std::string_view>(args.begin(), args.size()), handler,
                       options)) {
    return;
  }
  RequestBuilder b;
  b.add(std::span<const std::string_view>(args.begin(), args.size()));
  send(b.done(), std::move(handler), std::move(options));
}

void Connection::watch(Request watch_and_reads, WatchHandler handler, RequestOptions options) {
  RequestShape scratch;
  const RequestShape& s = shape_of(watch_and_reads, scratch);
  if (s.error() != nullptr || s.kind() != RequestKind::watch ||
      s.commands() != watch_and_reads.commands || !s.subscribes().empty()) {
    impl_->last_error =
        s.error() != nullptr ? s.error() : "watch() needs WATCH first, then reads only";
    return impl_->fail_later(std::move(handler), Errc::bad_request);
  }
  Impl::Pending p;
  p.bytes = std::move(watch_and_reads.bytes);
  p.replies = s.replies();
  p.kind = RequestKind::watch;
  p.whandler = std::move(handler);
  p.late = std::move(options.on_late_reply);
  if (options.asking) Impl::add_asking(p);
  if (options.timeout.count() > 0) {
    p.has_deadline = true;
    p.deadline = impl_->loop.now() + options.timeout;
  }
  impl_->submit(std::move(p));
}

std::uint64_t Connection::add_push_handler(PushHandler handler) {
  const std::uint64_t id = ++impl_->next_handler_id;
  impl_->push_handlers.add(id, std::move(handler));
  return id;
}

void Connection::remove_push_handler(std::uint64_t id) noexcept {
  impl_->push_handlers.remove(id);
}

std::uint64_t Connection::add_state_handler(
    std::function<void(ConnectionState, std::error_code)> handler) {
  const std::uint64_t id = ++impl_->next_handler_id;
  impl_->state_handlers.add(id, std::move(handler));
  return id;
}

void Connection::remove_state_handler(std::uint64_t id) noexcept {
  impl_->state_handlers.remove(id);
}

Loop& Connection::loop() noexcept {
  return impl_->loop;
}
const std::string& Connection::server_mode() const noexcept {
  return impl_->handshake.server_mode();
}

std::string Connection::server_software() const {
  return impl_->handshake.server_software();
}
std::uint64_t Connection::moves() const noexcept {
  return impl_->moves;
}
MonoTime Connection::vouched_until() const noexcept {
  if (!impl_->opt.sentinel || !impl_->opt.sentinel->vouch) return MonoTime{Nanos::max()};
  if (!impl_->vouch) return MonoTime{};
  return impl_->vouch->until(impl_->loop.now());
}
std::string Connection::vouch_detail() const {
  if (!impl_->vouch) return {};
  return impl_->vouch->explain(impl_->loop.now());
}
int Connection::known_replicas() const noexcept {
  return impl_->vouch ? impl_->vouch->known_replicas() : -1;
}
void Connection::set_vouch_handler(std::function<void()> handler) {
  impl_->vouch_handler = std::move(handler);
}
void Connection::relocate(std::string why) {
  impl_->left_primary(std::move(why));
}
std::int64_t Connection::client_id() const noexcept {
  return impl_->handshake.client_id();
}
const std::string& Connection::last_error() const noexcept {
  return impl_->last_error;
}
std::size_t Connection::in_flight() const noexcept {
  std::size_t n = 0;  // the caller's: the health check's PING is not one of them
  for (const auto& f : impl_->inflight) n += f.internal == Impl::Internal::user ? 1 : 0;
  return n;
}
const Endpoint& Connection::server() const noexcept {
  return impl_->server;
}
std::string Connection::server_address() const {
  const Endpoint& s = impl_->server;
  if (s.kind == Endpoint::Kind::tcp && s.host.empty()) return {};
  return detail::describe(s);
}
std::uint64_t Connection::primary_epoch() const noexcept {
  return impl_->primary_epoch;
}
std::optional<std::uint64_t> Connection::config_epoch() const noexcept {
  return impl_->ready_config_epoch;
}

// --- WatchTxn -----------------------------------------------------------------------------------

WatchTxn::WatchTxn(WatchTxn&& o) noexcept
    : conn_(std::exchange(o.conn_, nullptr)), id_(o.id_), asking_(o.asking_) {}

WatchTxn& WatchTxn::operator=(WatchTxn&& o) noexcept {
  if (this != &o) {
    unwatch();
    conn_ = std::exchange(o.conn_, nullptr);
    id_ = o.id_;
    asking_ = o.asking_;
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
  if (asking_) options.asking = true;
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
