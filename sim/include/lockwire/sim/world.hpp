// The simulated world: a virtual clock, a seeded scheduler, nodes (processes) with their own
// clocks, a SimLoop per node implementing loop::Loop, and a TCP-like simulated network.
//
// Determinism: everything that could happen in more than one order is ordered by draws from the
// world's own PRNG (rng.hpp), and time only advances when no event is ready. Nothing here reads a
// real clock. Same seed -> same event order -> same trace hash.
//
// Lifetime: nodes, loops and the network belong to the World; objects created through a SimLoop
// (timers, streams) must be destroyed before the World.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lockwire/loop/seam.hpp"
#include "lockwire/sim/rng.hpp"

namespace lockwire::sim {

using loop::Nanos;
using namespace std::chrono_literals;

class World;
class Node;
class SimLoop;
class Network;

// Error codes the simulated network reports through StreamHandler callbacks.
enum class NetErrc {
  ok = 0,
  eof,           // the peer closed (FIN)
  reset,         // the connection was reset (cut, kill, RST)
  refused,       // nothing listens there / connects refused
  timed_out,     // connect did not complete within its timeout
  host_unknown,  // no node has that name or address
};
[[nodiscard]] const std::error_category& net_category() noexcept;
[[nodiscard]] std::error_code make_error_code(NetErrc e) noexcept;

// Everything observable, in order, folded into a hash; optionally kept as timeline lines.
class Trace {
 public:
  // `who` is a node or connection name, `what` a short event kind, `detail` free text or bytes
  // (bytes are escaped in the timeline).
  void record(Nanos t, std::string_view who, std::string_view what, std::string_view detail = {});
  [[nodiscard]] std::uint64_t hash() const noexcept { return hash_; }
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  void set_keep_lines(bool keep) noexcept { keep_ = keep; }
  [[nodiscard]] bool keep_lines() const noexcept { return keep_; }
  [[nodiscard]] const std::vector<std::string>& lines() const noexcept { return lines_; }
  [[nodiscard]] std::string timeline() const;

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
  std::uint64_t count_ = 0;
  bool keep_ = true;
  std::vector<std::string> lines_;
};

// Printable form of raw bytes for timelines: \r \n \xNN escaped, long input elided.
[[nodiscard]] std::string escape_bytes(std::string_view bytes, std::size_t max = 200);

// A node-local clock: local = base_local + (true - base_true) * (1e6 + ppm) / 1e6.
class LocalClock {
 public:
  LocalClock() = default;
  LocalClock(Nanos base_true, Nanos base_local) : base_true_(base_true), base_local_(base_local) {}
  [[nodiscard]] Nanos at(Nanos true_now) const noexcept;
  // The earliest true time (>= true_now) at which this clock shows `local`.
  [[nodiscard]] Nanos true_time_of(Nanos local, Nanos true_now) const noexcept;
  // The true time at which this clock showed `local`, if that was since its last step or drift
  // change (a single linear segment, so the answer is exact); nullopt otherwise.
  [[nodiscard]] std::optional<Nanos> past_true_time_of(Nanos local) const noexcept;
  void set_drift_ppm(Nanos true_now, std::int64_t ppm) noexcept;
  void step(Nanos true_now, Nanos delta) noexcept;
  [[nodiscard]] std::int64_t drift_ppm() const noexcept { return ppm_; }

 private:
  Nanos base_true_{0};
  Nanos base_local_{0};
  std::int64_t ppm_ = 0;
};

// A simulated machine + process: own clocks, own SimLoop, can be paused, killed, restarted.
class Node {
 public:
  Node(World& world, std::uint32_t id, std::string name);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
  [[nodiscard]] World& world() noexcept { return world_; }
  [[nodiscard]] SimLoop& loop() noexcept { return *loop_; }

  [[nodiscard]] loop::MonoTime mono_now() const noexcept;
  [[nodiscard]] loop::WallTime wall_now() const noexcept;
  // Clock faults. Monotonic steps only go forward (as a suspended VM); wall steps go either way.
  void set_mono_drift_ppm(std::int64_t ppm);
  void set_wall_drift_ppm(std::int64_t ppm);
  void step_mono(Nanos forward);
  void step_wall(Nanos delta);
  [[nodiscard]] Nanos true_time_of_mono(loop::MonoTime t) const noexcept;
  // When the monotonic clock showed `t`, if since its last step (LocalClock::past_true_time_of).
  [[nodiscard]] std::optional<Nanos> past_true_time_of_mono(loop::MonoTime t) const noexcept {
    return mono_.past_true_time_of(t.since_origin);
  }

  // SIGSTOP / SIGCONT: while paused no task of this node runs; bytes keep arriving and are seen
  // after resume.
  void pause();
  void resume();
  [[nodiscard]] bool paused() const noexcept { return paused_; }
  // The first moment at or after `t` at which this node was (or is) not paused: `t` itself
  // unless a pause covered it; Nanos::max() if that pause has not ended. For checkers: a
  // stopped process can act on nothing it believes until it runs again.
  [[nodiscard]] Nanos running_from(Nanos t) const noexcept;
  // Process death: pending work is dropped, peers see EOF after bytes already in flight.
  void kill();
  // Machine death: like kill, but peers are told nothing (their connections become half-open).
  void crash();
  // A fresh process on the same machine (same clocks); the old incarnation's work never runs.
  void restart();
  [[nodiscard]] bool alive() const noexcept { return alive_; }
  [[nodiscard]] std::uint32_t incarnation() const noexcept { return incarnation_; }

  // Called when this node dies or restarts (hosts such as the simulated Redis use it).
  void on_death(std::function<void(bool crashed)> fn) { death_hooks_.push_back(std::move(fn)); }

 private:
  friend class World;
  void die(bool crashed);
  World& world_;
  std::uint32_t id_;
  std::string name_;
  LocalClock mono_;
  LocalClock wall_;
  bool paused_ = false;
  std::vector<std::pair<Nanos, Nanos>> pauses_;  // [pause, resume); resume max() while paused
  bool alive_ = true;
  std::uint32_t incarnation_ = 0;
  std::unique_ptr<SimLoop> loop_;
  std::vector<std::function<void(bool)>> death_hooks_;
};

class SimTimer;

// loop::Loop in the simulated world. Tasks run as world events owned by the node.
class SimLoop final : public loop::Loop {
 public:
  explicit SimLoop(Node& node);
  ~SimLoop() override;

  [[nodiscard]] loop::MonoTime now() const noexcept override { return node_.mono_now(); }
  [[nodiscard]] loop::WallTime wall_now() const noexcept override { return node_.wall_now(); }
  [[nodiscard]] std::unique_ptr<loop::Timer> make_timer(std::function<void()> on_fire) override;
  void post(std::function<void()> fn) override;
  [[nodiscard]] std::unique_ptr<loop::Stream> connect(const loop::Endpoint& endpoint,
                                                      loop::StreamHandler& handler,
                                                      Nanos timeout) override;
  [[nodiscard]] std::uint64_t random() noexcept override { return rng_.next(); }

  [[nodiscard]] Node& node() noexcept { return node_; }
  void reschedule_timers();        // after a clock change
  void forget_pending() noexcept;  // the process died: posted work is gone

 private:
  friend class SimTimer;
  void drain_one();
  Node& node_;
  Rng rng_;
  std::deque<std::function<void()>> posted_;
  bool drain_scheduled_ = false;
  std::uint64_t next_timer_serial_ = 0;
  std::map<std::uint64_t, SimTimer*> timers_;  // ordered by serial: deterministic iteration
};

// Per-pair network behaviour.
struct LinkOptions {
  Nanos latency{50us};
  Nanos jitter{20us};                        // extra delay, uniform in [0, jitter]
  std::uint32_t split_per_million = 250000;  // chance a write arrives in several pieces
  bool refuse_connects = false;
};

class SimStream;
struct Conn;

// The simulated network. Byte streams keep TCP semantics: in order, never silently dropped from
// a live connection; faults delay, split, or end the whole connection.
class Network {
 public:
  explicit Network(World& world);
  ~Network();

  // Called for each accepted connection; the callee must call stream->set_handler() before
  // returning and keep the stream.
  using AcceptFn = std::function<void(std::unique_ptr<SimStream> stream)>;
  void listen(Node& node, std::uint16_t port, AcceptFn on_accept);
  void unlisten(Node& node, std::uint16_t port);
  // Extra names a node answers to (its own name always works), e.g. "127.0.0.1".
  void add_address(std::string address, Node& node);

  void set_default_link(LinkOptions o) { default_link_ = o; }
  LinkOptions& link(const Node& a, const Node& b);  // symmetric; created from the default
  // Bytes sent between a and b during the next `d` arrive only after it (both directions).
  void clog(const Node& a, const Node& b, Nanos d);

  // A network partition: for `d` from now, no packet passes between a node of `a` and a node of
  // `b` (both directions; nodes in neither group are not affected, nor is traffic within a
  // group). What it does to TCP, as Linux does with its defaults (docs/races.md, *Partitions*):
  // - a connection stays open (tcp_retries2 gives up only after ~15 min: no partition here is
  //   that long); bytes sent across are lost and retransmitted on the sender's RTO, which
  //   starts at 200 ms and doubles, so they arrive at the first retransmission after the heal
  //   (up to about the time already spent cut off later), in order, never dropped;
  // - a connect across is retried as the kernel retries a SYN (1 s, then 2, 4, 8, 16, 32 s
  //   apart): it completes at the first retry after the heal, or times out after the caller's
  //   connect timeout (127 s, the kernel's, when there is none);
  // - bytes already on the wire when it starts (sent less than a latency before) still arrive.
  // Overlapping partitions of a pair end at the latest heal. Returns the heal time.
  Nanos partition(const std::vector<const Node*>& a, const std::vector<const Node*>& b, Nanos d);
  // When traffic between a and b flows again: now (or earlier) if it flows, else the heal.
  [[nodiscard]] Nanos cut_until(const Node& a, const Node& b) const;
  [[nodiscard]] bool reachable(const Node& a, const Node& b) const {
    return cut_until(a, b) <= world_now();
  }
  // When bytes from `from` to `to`, first sent at `first_sent` and retransmitted on TCP's
  // backoff, pass: now if the pair is not cut, else the first retransmission at or after the
  // heal (for other byte streams that cross the network, e.g. SimRedis' replication stream).
  [[nodiscard]] Nanos retransmit_at(const Node& from, const Node& to, Nanos first_sent) const;
  // Called at each partition() (after it took effect): hosts that model a protocol over the
  // network without bytes (SimCluster's bus) start watching reachability then.
  void on_partition(std::function<void()> fn) { partition_listeners_.push_back(std::move(fn)); }

  // Connection control. Ids are assigned in connect order.
  [[nodiscard]] std::vector<std::uint64_t> connections_of(const Node& n) const;
  [[nodiscard]] std::vector<std::uint64_t> connections() const;
  // Ends the connection once `after_bytes` more bytes went from the client (to_server = true) or
  // the server side: those bytes arrive, later ones are lost, and both ends see a reset.
  void cut_after(std::uint64_t conn, bool to_server, std::uint64_t after_bytes);
  void reset(std::uint64_t conn);  // both ends see a reset; bytes in flight are lost
  // This connection alone stalls for `d` from now (both directions): what is sent on it
  // arrives only after, in order, as clog() does for a pair of nodes. A flow whose path fails
  // while the pair's other connections, hashed onto other paths (ECMP), still pass.
  void clog_connection(std::uint64_t conn, Nanos d);
  // The server end silently forgets the connection: nobody is told, bytes vanish.
  void half_open(std::uint64_t conn);
  // Also after the connection ended (kept per id; 0 for an unknown id).
  [[nodiscard]] std::uint64_t bytes_sent(std::uint64_t conn, bool to_server) const;
  // When the last data sent on it that way arrives (or arrived) at the other end, whether or not
  // that end still reads it; -1 if none was sent. Also after the connection ended.
  [[nodiscard]] Nanos last_data_arrival(std::uint64_t conn, bool to_server) const;

 private:
  friend class SimLoop;
  friend class SimStream;
  friend class Node;
  std::unique_ptr<SimStream> connect(Node& from, const loop::Endpoint& ep,
                                     loop::StreamHandler& handler, Nanos timeout);
  void transmit(const std::shared_ptr<Conn>& c, int side, std::string bytes);
  void send_control(const std::shared_ptr<Conn>& c, int dir, int kind, bool drop_in_flight);
  void deliver_due(const std::shared_ptr<Conn>& c, int dir);
  void schedule_delivery(const std::shared_ptr<Conn>& c, int dir, Nanos at);
  void side_closed(const std::shared_ptr<Conn>& c, int side, bool send_fin);
  void node_died(Node& n, bool crashed);
  void forget(std::uint64_t id);
  Nanos arrival(const Node& from, const Node& to, Nanos base_min);
  [[nodiscard]] Nanos world_now() const noexcept;
  struct Listener {
    Node* node;
    AcceptFn fn;
  };
  World& world_;
  Rng rng_;
  LinkOptions default_link_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, LinkOptions> links_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Nanos> clogged_until_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Nanos> cut_until_;  // partitions' heals
  std::vector<std::function<void()>> partition_listeners_;
  std::map<std::pair<std::uint32_t, std::uint16_t>, Listener> listeners_;
  std::map<std::string, Node*, std::less<>> addresses_;
  std::map<std::uint64_t, std::shared_ptr<Conn>> conns_;
  // What bytes_sent() and last_data_arrival() still answer for a connection that ended
  // (index 0: client to server).
  struct Ended {
    std::array<std::uint64_t, 2> sent;
    std::array<Nanos, 2> data_at;
  };
  std::map<std::uint64_t, Ended> ended_;
  std::uint64_t next_conn_ = 1;
};

// One end of a simulated connection.
class SimStream final : public loop::Stream {
 public:
  SimStream(Network& net, std::shared_ptr<Conn> conn, int side);
  ~SimStream() override;
  void set_handler(loop::StreamHandler& h) noexcept { handler_ = &h; }
  void write(std::string bytes) override;
  [[nodiscard]] std::size_t write_queue_bytes() const noexcept override { return pending_.size(); }
  void shutdown() override;
  void close() noexcept override;
  [[nodiscard]] std::uint64_t id() const noexcept;
  [[nodiscard]] bool is_open() const noexcept;

 private:
  friend class Network;
  void flush();
  Network& net_;
  std::shared_ptr<Conn> conn_;
  int side_;
  loop::StreamHandler* handler_ = nullptr;
  std::string pending_;
  bool flush_posted_ = false;
  bool shutdown_requested_ = false;
  std::shared_ptr<bool> alive_token_ = std::make_shared<bool>(true);
};

class World {
 public:
  explicit World(std::uint64_t seed);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  [[nodiscard]] Nanos now() const noexcept { return now_; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] Rng fork_rng(std::string_view subsystem) const noexcept {
    return root_.fork(subsystem);
  }
  // Randomness for scenario code (fault timing etc.), independent of the scheduler's.
  [[nodiscard]] Rng& scenario_rng() noexcept { return scenario_; }
  [[nodiscard]] Trace& trace() noexcept { return trace_; }
  [[nodiscard]] Network& net() noexcept { return *net_; }

  Node& add_node(std::string name);
  [[nodiscard]] Node* find_node(std::string_view name) noexcept;

  // Runs `fn` at true time `at` (clamped to now) as work of `owner` (null: the world itself).
  // Background events (periodic server chores) do not keep run_until_idle() going.
  std::uint64_t schedule(Nanos at, Node* owner, std::function<void()> fn, bool background = false);
  // `id` must still be pending (not yet run): cancelled work never runs and no longer counts as
  // foreground for run_until_idle().
  void cancel(std::uint64_t id) noexcept;

  bool step();  // runs one ready event (advancing time to it); false when none is left
  // Runs until pred() holds (checked after every event); false if the deadline passed or
  // nothing was left to run first.
  bool run_until(const std::function<bool()>& pred, Nanos deadline = Nanos::max());
  void run_for(Nanos d);
  // Runs while foreground work exists; returns the number of events run.
  std::uint64_t run_until_idle(std::uint64_t max_events = 50'000'000);
  [[nodiscard]] std::uint64_t events_run() const noexcept { return events_run_; }

 private:
  friend class Node;
  struct Event {
    Nanos at;
    std::uint64_t tie;
    std::uint64_t id;
    Node* owner;
    std::uint32_t incarnation;
    bool background;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const noexcept {
      if (a.at != b.at) return a.at > b.at;
      if (a.tie != b.tie) return a.tie > b.tie;
      return a.id > b.id;
    }
  };
  void hold(Event ev);
  void release_held(Node& n);

  std::uint64_t seed_;
  Rng root_;
  Rng sched_;
  Rng scenario_;
  Nanos now_{0};
  Trace trace_;
  std::vector<Event> heap_;
  std::unordered_set<std::uint64_t> cancelled_;
  std::map<std::uint32_t, std::vector<Event>> held_;  // paused nodes' events
  std::uint64_t next_event_ = 1;
  std::uint64_t foreground_ = 0;
  std::uint64_t events_run_ = 0;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unique_ptr<Network> net_;
};

}  // namespace lockwire::sim

template <>
struct std::is_error_code_enum<lockwire::sim::NetErrc> : std::true_type {};
