// Client::Router: a lock::Client on Redis Cluster (docs/protocol.md, "Redis Cluster").
//
// The lock protocol needs no change on a cluster: every key of a resource carries the hash tag
// {R}, so each operation is one slot. What changes is around it:
// - One Client::Core per shard (a primary and its slots), created when a resource of that shard
//   is first used. Each Core is the single-server machine unchanged, with its own connection,
//   tracking, force-release notice, fencing floor (its server's clock) and lease re-confirmation.
// - Each shard Core's connection finds its primary through ConnectionOptions::locate: the slot
//   map, read again (CLUSTER SHARDS from any node that answers) before each (re)connect, names
//   the primary of the shard's first slot. So a cluster failover is followed like a Sentinel
//   one: the connection drops (the old primary is gone, or answers MOVED / ROLE slave), locates
//   the promoted replica, and every held lease is renewed there before it is trusted further.
// - Each shard's force-release notice is a key of its own in one of the shard's slots
//   ("<prefix>force-released{<tag>}"), tracked by every Core of that shard: a force_release
//   reaches the holders of any resource, whatever slot it lives in.
// - A call whose resource the map places elsewhere than the server does (a MOVED reply: the
//   command did not run) is sent again, at most kMaxRedirects times, to the shard MOVED names,
//   and the leases held on that slot move to that shard's Core (rehome).
// - A request refused whole with ASK (a slot being migrated) is sent once more by its Core to
//   the node ASK names, after ASKING, on that node's shard connection (ask.cpp; Core::ShardLink::node).
// - A call answered TRYAGAIN or CLUSTERDOWN (nothing ran) is tried again after a backoff
//   (10 ms doubling to 200 ms, jittered) while that fits in its deadline: the wait of a lock,
//   kBusyBudget for the others; then the server's words are the answer.
// - The masters' vouch (ClientOptions::cluster_vouch; cluster_vouch.hpp): one plain connection
//   per node of the map asks TIME, CLUSTER NODES, CONFIG GET cluster-node-timeout and
//   COUNT-FAILURE-REPORTS every poll period, one question in flight per node; after each
//   answer every shard Core gets set_shard_vouch(until(its primary)): a lease counts only
//   while no failover of its primary can start.
//
// A Client starts as one Core on the URL's first host. If that server's HELLO says "cluster",
// the Client hands the waits made so far (none was attempted: attempts wait for the first
// connect probe) to the router; that first connection stays as Client::connection().
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster_vouch.hpp"
#include "core.hpp"
#include "lockwire/loop/cluster_map.hpp"

namespace lockwire::lock {

namespace detail {
// Client.hpp promises that no handler runs inside the call that started it; a routed call can
// answer at once (a closed router, a slot map read from the cache with no shard for the slot).
// wrap() makes such an answer come from the loop instead. Only an answer given before the entry
// call returns is deferred, so an answer that comes later anyway takes the same path as before.
class InCall {
 public:
  explicit InCall(loop::Loop& l) : loop_(l) {}
  ~InCall() { *inside_ = false; }
  InCall(const InCall&) = delete;
  InCall& operator=(const InCall&) = delete;
  template <class H>  // a std::function
  [[nodiscard]] H wrap(H h) const {
    return [&loop = loop_, inside = inside_, h = std::move(h)](auto... args) {
      if (!*inside) return h(std::move(args)...);
      loop.post([h, args...] { h(args...); });
    };
  }

 private:
  loop::Loop& loop_;
  std::shared_ptr<bool> inside_ = std::make_shared<bool>(true);
};
}  // namespace detail

struct Client::Router : std::enable_shared_from_this<Client::Router> {
  Router(loop::Loop& l, loop::ConnectionOptions b, ClientOptions o)
      : loop(l), base(std::move(b)), opts(std::move(o)) {}

  loop::Loop& loop;
  loop::ConnectionOptions base;  // the user's options: credentials, TLS, timeouts, seeds
  ClientOptions opts;
  testing::Regressions regressions;  // the first Core's, given to every shard's (testing only)
  bool closed = false;

  loop::cluster::SlotMap map;
  bool have_map = false;
  std::string map_error;               // why there is no map (every node's words)
  bool map_too_old = false;            // a node had no CLUSTER SHARDS (Redis < 7.0)
  loop::MonoTime map_at{};             // when it was last read
  std::vector<loop::Endpoint> asked;   // candidates of the refresh in progress
  std::size_t next_candidate = 0;
  std::unique_ptr<loop::Connection> asking;
  std::vector<std::function<void(bool)>> refresh_waiters;  // non-empty: a refresh runs

  // Shard Cores by the lowest slot their primary served when they were created.
  std::map<std::uint16_t, std::shared_ptr<Core>> shards;
  std::unique_ptr<loop::Timer> topology_timer;  // every opts.cluster_refresh while shards exist
  Core* last = nullptr;  // the Core that answered the last call (Client::capabilities)
  // Client::last_error on a Cluster: the words of the last answer the router gave (each routed
  // completion's own), or, for a call a Core answered directly (a lease's release, an upgrade,
  // a request refused before routing), that Core's last_error.
  std::string answered;
  const Core* words_from = nullptr;
  void answer(const Failure& f) {
    answered = f.words;
    words_from = nullptr;
  }
  // Client::last_error in the lease's on_lost: the words of the Core that lost it.
  void words_of_loss(const Lease& lease);
  // The failure of a call whose slot no Core serves (a closed router, no map).
  [[nodiscard]] Failure unserved() const;

  static constexpr int kMaxRedirects = 3;
  static constexpr Nanos kBusyBudget = std::chrono::seconds(1);  // calls without a wait

  // Cores of nodes that serve no slot in the map (an ASK target being filled), by host:port.
  std::map<std::string, std::shared_ptr<Core>> extra;
  // The shard connection of host:port (created if need be), for an ASK; nullptr if none.
  loop::Connection* ask_target(const std::string& host, std::uint16_t port);
  // A new Core's link to this router (shard_link.hpp); `vouches`: the probe of its server
  // sets the masters' vouch (a shard Core under cluster_vouch; not an ASK target's Core).
  class Link;
  std::shared_ptr<Core::ShardLink> link(bool vouches);
  // Moves the held leases of `slot` to the Core of the shard the map names for it (rehome_all:
  // of every slot whose shard is not their Core's).
  void rehome(std::uint16_t slot);
  void rehome_all();
  static void move_lease(Core& from, Core& to, const LeasePtr& d);
  // Before a call on a lease handle: if the map names another shard for its slot, move it.
  void follow_slot(const detail::LeaseData& d);

  // What a call needs to decide about trying again.
  struct Tries {
    int redirects = 0;
    int busy = 0;
    loop::MonoTime deadline{};
    std::string words;  // of the last busy answer (TRYAGAIN / CLUSTERDOWN) that was tried again
  };
  // After `c` answered `ec`: nullopt = answer; 0 = send again now (MOVED); otherwise the
  // backoff (TRYAGAIN / CLUSTERDOWN within t.deadline).
  std::optional<Nanos> again(Core& c, const Failure& f, Tries& t);
  // The backoff before the next try of a call whose slot is unserved; nullopt past the deadline.
  std::optional<Nanos> busy_backoff(Tries& t);
  // Runs `fn` after `d` (at once for 0), while the router lives.
  void later(Nanos d, std::function<void()> fn);
  std::map<std::uint64_t, std::unique_ptr<loop::Timer>> timers;
  std::uint64_t next_timer = 0;
  // A resource whose keys would not share one slot (a prefix with a brace): invalid_argument,
  // with why in refused_error (not map_error, which each map read clears); {} otherwise.
  std::error_code spans_slots(const std::string& resource);
  std::string refused_error;
  static constexpr std::uint16_t kNoShard = 0xffff;

  // Reads the slot map again unless it was read within the last 50 ms, then `done(ok)`.
  void refresh(std::function<void(bool ok)> done, bool force = false);
  void ask_next();
  void open_asking();  // to asked[next_candidate++]
  void on_shards(std::error_code ec, const loop::Replies& r);
  void fill_from_slots(loop::cluster::SlotMap m);  // a map with holes: CLUSTER SLOTS fills them
  loop::Endpoint asking_at;
  void refreshed(bool ok);
  // The lowest slot served by the primary that serves `slot` (the shard's key); kNoShard.
  [[nodiscard]] std::uint16_t shard_of(std::uint16_t slot) const;
  void index_shards();  // shard_key from map, after every change of it
  std::array<std::uint16_t, loop::cluster::kSlots> shard_key{};
  // The Core for `resource`'s slot (created on first use); runs `fn(core or nullptr)` once the
  // map is known — nullptr when no node serves the slot (last error in map_error).
  void with_core(const std::string& resource, std::function<void(Core*)> fn);
  std::shared_ptr<Core> make_core(std::uint16_t shard);
  Core& shard_core(std::uint16_t shard);  // the shard's Core, created on first use
  void locate(std::uint16_t shard, const loop::ConnectionOptions::Answer& answer);
  // Reads the map again and moves every shard connection whose server is no longer the
  // shard's primary (Connection::relocate).
  void check_topology();
  void close() noexcept;

  // The masters' vouch (router_vouch.cpp).
  struct Asker {
    std::unique_ptr<loop::Connection> conn;
    std::string host;
    std::uint16_t port = 0;
    std::uint64_t gen = 0;
    bool asking = false;
  };
  std::map<std::string, Asker> askers;  // by host:port, one per node of the map
  void open_asker(std::string host, std::uint16_t port);  // keyed by host:port
  std::uint64_t asker_gen = 0;
  detail::ClusterVouch vouch;
  std::unique_ptr<loop::Timer> vouch_timer;
  Nanos vouch_period{0};
  // The server each shard Core was last probed on: between a relocation and the new probe its
  // leases are still those of that server, and so is its vouch.
  std::map<const Core*, std::string> vouched_at;
  loop::MonoTime demoted_check{};  // the last map read asked for by a demoted primary
  bool vouch_degraded = false;     // Metrics::on_degraded told once
  void sync_askers();              // after each map read: askers made / dropped
  void ask_nodes();                // the poll
  void on_answer(const std::string& addr, std::uint64_t gen, loop::MonoTime sent,
                 const std::vector<std::string>& ids, std::error_code ec, const loop::Replies& r);
  void vouch_core(Core& c, bool probing = false);
  void arm_vouch_timer();

  // The routed operations (Client's facade calls these in cluster mode).
  void lock(LockRequest req, AcquireHandler handler, std::optional<Tries> tries = {});
  void by_owner(bool release, std::string resource, std::string owner, std::optional<Kind> kind,
                Nanos ttl, DoneHandler handler, std::optional<Tries> tries = {});
  void force_release(std::string resource, std::function<void(std::error_code, std::size_t)> h,
                     std::optional<Tries> tries = {});
  void inspect(std::string resource, std::function<void(std::error_code, const LockInfo&)> h,
               std::optional<Tries> tries = {});
  // Renewal of a lease handle: on its Core, sent again on the Core it moved to after a MOVED.
  void renew_lease(const Lease& lease, DoneHandler handler, std::optional<Tries> tries = {});
};

}  // namespace lockwire::lock
