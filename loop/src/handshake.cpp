// Getting and keeping a connection up: connecting, the handshake (HELLO/AUTH/SETNAME, SELECT,
// CLIENT INFO and the CLIENT KILL fences of abandoned connections), ready, reconnect backoff and
// the idle health check. The handshake's commands and the meaning of their replies are the
// Handshake machine (no I/O); Connection::Impl writes, reads and times them.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "connection_impl.hpp"
#include "handshake.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"
#include "sentinel.hpp"

namespace lockwire::loop {

namespace detail {

std::vector<Handshake::Command> Handshake::begin(const ConnectionOptions& opt,
                                                 std::string_view server) {
  if (server != server_) {
    fences_.clear();
    client_addr_.clear();
    server_.assign(server);
  }
  std::vector<Command> out;
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
  out.push_back({std::move(b), Step::hello});
  if (opt.db != 0) {
    std::string s;
    resp::append_command(s, "SELECT", static_cast<std::int64_t>(opt.db));
    out.push_back({std::move(s), Step::select});
  }
  if (opt.sentinel || opt.locate) {
    std::string s;
    resp::append_command(s, {"ROLE"});
    out.push_back({std::move(s), Step::role});
  }
  if (opt.fence_abandoned) {
    if (client_id_ > 0 && !client_addr_.empty() && fences_.size() < 8) {
      fences_.emplace_back(client_id_, std::move(client_addr_));
    }
    client_addr_.clear();
    std::string s;
    resp::append_command(s, "CLIENT", "INFO");
    out.push_back({std::move(s), Step::info});
    for (const auto& [id, addr] : fences_) {
      std::string k;
      resp::append_command(k, "CLIENT", "KILL", "ID", id, "ADDR", addr);
      out.push_back({std::move(k), Step::fence});
    }
  }
  steps_.clear();
  for (const Command& c : out) steps_.push_back(c.step);
  answered_ = 0;
  return out;
}

Handshake::Verdict Handshake::reply(resp::Frame frame) {
  Verdict out;
  if (answered_ >= steps_.size()) {  // not the connection's doing; be safe
    out.next = Verdict::Next::failed;
    out.error = Errc::connect_failed;
    out.detail = "handshake: unexpected reply";
    return out;
  }
  const Step step = steps_[answered_++];
  const std::size_t v = resp::value_index(frame);
  if (step == Step::info) {
    // "id=7 addr=10.0.0.5:51234 laddr=..." (verbatim or bulk); an error: no fencing.
    if (!resp::is_error(frame) && v < frame.size()) {
      const std::string_view text = frame[v].value;
      std::size_t at = text.starts_with("addr=") ? 0 : text.find(" addr=");
      if (at != std::string_view::npos) {
        at += text[at] == ' ' ? 6 : 5;
        const std::size_t end = text.find_first_of(" \n", at);
        client_addr_.assign(text.substr(at, end == std::string_view::npos ? end : end - at));
      }
    }
  } else if (step == Step::role) {
    // What the sentinels named must be a master now: a replica (a failover under way, or a
    // sentinel that has not heard of it yet) is never used.
    if (std::string why = not_primary(frame); !why.empty()) {
      out.next = Verdict::Next::failed;
      out.error = Errc::connect_failed;
      if (resp::is_error(frame)) {
        out.detail = "ROLE: " + why + " (needed to check that the server is the primary)";
        out.config_error = v < frame.size() && resp::error_code(frame[v]) == "NOPERM";
      } else {
        out.detail = "ROLE: the server is " + why + ", not the primary";
      }
      return out;
    }
  } else if (step == Step::fence) {
    // Killed (:1) or already gone (:0, or an error such as NOPERM): either way, done.
    if (!fences_.empty()) fences_.pop_front();
  } else if (resp::is_error(frame)) {
    const std::string_view code = v < frame.size() ? resp::error_code(frame[v]) : "";
    const std::string_view msg = v < frame.size() ? frame[v].value : "";
    out.next = Verdict::Next::failed;
    out.error = Errc::connect_failed;
    if (step == Step::hello) {
      if (code == "NOPROTO" || msg.find("unknown command") != std::string_view::npos) {
        out.error = Errc::resp3_refused;
      } else if (code == "WRONGPASS" || code == "NOAUTH" || code == "NOPERM" ||
                 msg.find("password") != std::string_view::npos) {
        out.error = Errc::auth_failed;
      }
    }
    std::string_view words = msg;
    // A server without HELLO (renamed away, or not Redis) echoes the arguments it was given,
    // AUTH's password among them: keep its words up to the echo.
    constexpr std::string_view kEcho = "with args beginning with:";
    const bool echoed = step == Step::hello && words.find(kEcho) != std::string_view::npos;
    if (echoed) words = words.substr(0, words.find(kEcho) + kEcho.size());
    out.detail = std::string(step == Step::hello ? "HELLO 3: " : "SELECT: ") + std::string(words);
    if (echoed) out.detail += " (not shown: they hold the credentials)";
    out.config_error = out.error == Errc::auth_failed || out.error == Errc::resp3_refused;
    return out;
  } else if (step == Step::hello && v < frame.size() && frame[v].type == resp::Type::map) {
    for (std::size_t i = resp::first_element(frame, v); i < frame.size();
         i = resp::next_element(frame, resp::next_element(frame, i))) {
      const std::size_t val = resp::next_element(frame, i);
      if (val >= frame.size()) break;
      if (resp::equals(frame[i], "id")) {
        client_id_ = resp::to_int64(frame[val]).value_or(-1);
      } else if (resp::equals(frame[i], "mode") && resp::is_string_like(frame[val].type)) {
        mode_.assign(frame[val].value);
      } else if (resp::equals(frame[i], "server") && resp::is_string_like(frame[val].type)) {
        software_.assign(frame[val].value);
      } else if (resp::equals(frame[i], "version") && resp::is_string_like(frame[val].type)) {
        version_.assign(frame[val].value);
      }
    }
  }
  // Ready once the last reply is in (fences included: nothing of the caller's may be written
  // before the abandoned connections are gone).
  out.next = answered_ == steps_.size() ? Verdict::Next::ready : Verdict::Next::wait;
  return out;
}

std::string Handshake::server_software() const {
  if (software_.empty()) return version_;
  return version_.empty() ? software_ : software_ + " " + version_;
}

std::string mask_secret(std::string text, std::string_view secret) {
  if (secret.size() < 4) return text;
  for (std::size_t p = text.find(secret); p != std::string::npos; p = text.find(secret, p + 3)) {
    text.replace(p, secret.size(), "***");
  }
  return text;
}

std::string excerpt(std::string_view bytes, std::size_t max) {
  std::string out = "'";
  for (const char ch : bytes.substr(0, max)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\' || c == '\'') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  out += "'";
  if (bytes.size() > max) out += "...";
  return out;
}

Nanos backoff_delay(const Backoff& b, std::uint32_t attempt, std::uint64_t random) noexcept {
  double d = static_cast<double>(b.initial.count());
  for (std::uint32_t i = 0; i < attempt && d < static_cast<double>(b.max.count()); ++i) {
    d *= std::max(1.0, b.multiplier);
  }
  const auto cap = static_cast<double>(b.max.count());
  auto delay = static_cast<std::int64_t>(std::min(d, cap));
  if (delay < 0) delay = 0;
  const std::int64_t half = delay / 2;
  const auto jitter =
      static_cast<std::int64_t>(random % static_cast<std::uint64_t>(delay - half + 1));
  return Nanos(half + jitter);
}

std::string format_duration(Nanos d) {
  const std::int64_t ns = d.count();
  if (ns != 0 && ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns != 0 && ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns != 0 && ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace detail

// --- connecting ---------------------------------------------------------------------------------

void Connection::Impl::connect_now() {
  retired.clear();
  parser.reset();
  inbuf.clear();
  reset_accumulated();
  if (!notify(ConnectionState::connecting, {})) return;
  if (discovery) return discover();  // the sentinels name the server first
  if (opt.locate) return locate_server();
  connect_server(opt.endpoint);
}

void Connection::Impl::locate_server() {
  const std::uint64_t gen = ++locate_gen;
  std::weak_ptr<Impl*> alive = token;
  opt.locate([this, alive, gen](std::optional<Endpoint> ep, std::string why) {
    if (alive.expired() || gen != locate_gen || state != ConnectionState::connecting) return;
    if (ep) return connect_server(*ep);
    last_error = why.empty() ? std::string("no server to connect to") : std::move(why);
    Guard g(this);
    if (!notify(ConnectionState::disconnected, make_error_code(Errc::connect_failed))) return;
    after_disconnect();
  });
}

void Connection::Impl::connect_server(const Endpoint& ep) {
  server = ep;
  if (vouch) vouch->on_server(ep.host, ep.port);  // reports about another server stop counting
  stream = loop.connect(server, *this, opt.connect_timeout);
}

void Connection::Impl::schedule_reconnect() {
  if (!reconnect_timer) reconnect_timer = loop.make_timer([this] { connect_now(); });
  const Nanos delay = detail::backoff_delay(opt.reconnect, attempt, loop.random());
  ++attempt;
  reconnect_timer->start(delay);
}

void Connection::Impl::on_connected(std::error_code ec) {
  if (ec) {
    if (ec == ConnectErrc::tls_handshake_timeout) {
      // What a rediss:// URL for a plaintext port looks like: the server waits for a command
      // line and never answers the ClientHello.
      last_error = "TLS handshake did not complete: " + detail::describe(server) +
                   " accepted the connection but did not finish the handshake within " +
                   detail::format_duration(opt.connect_timeout) + " — is the port TLS?";
    } else {
      last_error = "connect: " + ec.message();
      if (discovery) last_error = detail::describe(server) + " " + last_error;
    }
    forget_announced_if_server();
    retire_stream();
    Guard g(this);
    if (!notify(ConnectionState::disconnected, ec)) return;
    after_disconnect();
    return;
  }
  // The whole handshake is bounded by connect_timeout, not only HELLO: a server that dies
  // without a word (machine crash, no RST) after answering HELLO would otherwise leave the
  // connection `connecting` forever (cluster swarm, seed 3000093: a shard connection waiting for
  // ROLE from a crashed primary, so its waits never reached the promoted replica).
  const MonoTime deadline = loop.now() + opt.connect_timeout;
  for (detail::Handshake::Command& c : handshake.begin(opt, detail::describe(server))) {
    write_internal(std::move(c.bytes), Internal::handshake);
    if (opt.connect_timeout.count() > 0) {
      inflight.back().has_deadline = true;
      inflight.back().deadline = deadline;
    }
  }
  if (opt.connect_timeout.count() > 0) arm_deadline(deadline);
}

void Connection::Impl::after_disconnect() {
  if (state == ConnectionState::closed) return;
  if (opt.auto_reconnect) return schedule_reconnect();
  stop_sentinels();        // nothing to discover or watch for any more
  fail_queued_not_sent();  // no reconnect: nothing queued will ever be sent
}

void Connection::Impl::handshake_reply(resp::Frame frame) {
  detail::Handshake::Verdict v = handshake.reply(frame);
  switch (v.next) {
    case detail::Handshake::Verdict::Next::wait:
      return;
    case detail::Handshake::Verdict::Next::ready:
      return on_ready();
    case detail::Handshake::Verdict::Next::failed:
      break;
  }
  // The server's words, but never our password (a server may echo what it was sent).
  last_error = detail::mask_secret(std::move(v.detail), opt.password);
  // Which of the servers the sentinels named said so.
  if (discovery) last_error = detail::describe(server) + " " + last_error;
  forget_announced_if_server();
  // Requests queued for this server would fail the same way: tell them now.
  Guard g(this);
  fail_connection(make_error_code(v.error));
  if (g.dead || !v.config_error) return;
  fail_queued_not_sent();
}

// --- ready --------------------------------------------------------------------------------------

void Connection::Impl::on_ready() {
  attempt = 0;
  last_error.clear();
  // What the state handlers read at `ready` (Connection::primary_epoch, config_epoch).
  std::string addr = detail::describe(server);
  if (primary_epoch == 0 || addr != ready_address ||
      (server_config_epoch && ready_config_epoch && *server_config_epoch != *ready_config_epoch)) {
    ++primary_epoch;
  }
  ready_address = std::move(addr);
  ready_config_epoch = server_config_epoch;
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
        (p.kind == RequestKind::plain || (lane_holder == 0 && !lane_waiters()))) {
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
    stalled_ticks = 0;
    health_timer->start(opt.health_check_interval, opt.health_check_interval);
  }
}

// --- health check -------------------------------------------------------------------------------

// Every interval while ready: an idle connection sends PING; one whose PING is still unanswered
// and which received nothing during the whole interval is dropped. So is one whose requests
// got nothing back for a whole interval (two ticks in a row with replies owed and no byte):
// after a partition heals, TCP retransmits only at its next backed-off timeout, which can be
// tens of seconds away, while a new connection is answered at once (partition swarm, seed
// 5001068: a waiter stuck 12 s after the heal behind a release on the old stream).
void Connection::Impl::on_health() {
  if (state != ConnectionState::ready) return;
  bool owed = false;
  for (const InFlight& f : inflight) owed = owed || f.internal == Internal::user;
  stalled_ticks = owed && bytes_seen == 0 ? stalled_ticks + 1 : 0;
  if (stalled_ticks >= 2) {
    last_error = "health check: no reply to a request within the interval";
    fail_connection(make_error_code(Errc::health_check_failed));
    return;
  }
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

}  // namespace lockwire::loop
