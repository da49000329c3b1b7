// Private to lockwire_loop (and its unit tests): the connection handshake and the reconnect
// backoff without any I/O. The connection writes what begin() returns once a stream is up,
// feeds each reply to reply() in order, and acts on the verdict; nothing here touches a stream,
// a timer or the clock, so tests drive it with frames alone.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::loop::detail {

// One handshake per stream: HELLO 3 [AUTH user pass] [SETNAME name], then SELECT db (db != 0),
// then with sentinel discovery ROLE (the server must be a master), then with fence_abandoned
// CLIENT INFO (this connection's address, for the next fence) and a CLIENT KILL ID id ADDR addr
// for every earlier connection to the same server not yet known to be gone. The connection is
// ready once every one of them is answered: nothing of the caller's is written before the
// abandoned connections are killed.
class Handshake {
 public:
  enum class Step : std::uint8_t { hello, select, role, info, fence };
  struct Command {
    std::string bytes;
    Step step;
  };
  struct Verdict {
    enum class Next : std::uint8_t { wait, ready, failed };
    Next next = Next::wait;
    Errc error = Errc::ok;  // failed: connect_failed, resp3_refused or auth_failed
    // failed: "HELLO 3: <server text>", "SELECT: <server text>" or "ROLE: <why not a master>"
    std::string detail;
    // failed because of the options (credentials, RESP3, an ACL without ROLE): requests queued
    // for this server would fail the same way.
    bool config_error = false;
  };

  // A new stream to `server` (its address; any fixed string when there is only one) is up: the
  // commands to write, in this order. The previous connection (if its HELLO and CLIENT INFO
  // were answered) joins the ones to fence; at most 8 are remembered. Fences are for one server:
  // a different one forgets them (an id and address of another server could match a stranger).
  [[nodiscard]] std::vector<Command> begin(const ConnectionOptions& opt,
                                           std::string_view server = {});
  // The reply to the oldest unanswered command of the last begin().
  [[nodiscard]] Verdict reply(resp::Frame frame);

  // Whether any reply of the last begin()'s commands came in (a peer that answers the first
  // with bytes that are not RESP does not speak it at all).
  [[nodiscard]] bool answered_any() const noexcept { return answered_ > 0; }
  // CLIENT ID from the last answered HELLO; -1 before.
  [[nodiscard]] std::int64_t client_id() const noexcept { return client_id_; }
  [[nodiscard]] const std::string& server_mode() const noexcept { return mode_; }
  // HELLO's "server" and "version" ("redis" "7.2.6", "valkey" "8.0.1"): for messages only —
  // what a server can do is probed, never read from these (an unstable Redis says 255.255.255).
  [[nodiscard]] std::string server_software() const;
  // Earlier connections still to kill (id, address as the server saw it).
  [[nodiscard]] const std::deque<std::pair<std::int64_t, std::string>>& fences() const noexcept {
    return fences_;
  }

 private:
  std::vector<Step> steps_;  // of the last begin(), in order
  std::size_t answered_ = 0;
  std::int64_t client_id_ = -1;
  std::string mode_;         // HELLO's "mode"
  std::string software_;     // HELLO's "server"
  std::string version_;      // HELLO's "version"
  std::string client_addr_;  // CLIENT INFO addr= of the current connection (fence_abandoned)
  std::string server_;       // of the last begin(): whose connections fences_ are
  // Popped when a CLIENT KILL is answered (killed, already gone, or refused: done either way).
  std::deque<std::pair<std::int64_t, std::string>> fences_;
};

// `text` with every occurrence of `secret` (4 bytes or more: a shorter one would mangle the
// words around it) replaced by "***". For messages that may echo what we sent (AUTH).
[[nodiscard]] std::string mask_secret(std::string text, std::string_view secret);

// The first bytes a peer sent, for a message: at most `max` of them, quoted, with anything not
// printable ASCII escaped (\r, \n, \t, \xNN) and "..." when there was more.
[[nodiscard]] std::string excerpt(std::string_view bytes, std::size_t max = 64);

// "5s", "300ms", "1500us", "7ns": the largest unit that states d exactly.
[[nodiscard]] std::string format_duration(Nanos d);

// The delay before reconnect attempt `attempt` (0 = the first after a drop): capped
// exponential, with jitter uniform in [delay/2, delay] drawn from `random`.
[[nodiscard]] Nanos backoff_delay(const Backoff& b, std::uint32_t attempt,
                                  std::uint64_t random) noexcept;

}  // namespace lockwire::loop::detail
