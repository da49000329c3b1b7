// What a shard Core of a Cluster client (router.hpp) asks of and tells the router above it.
//
// A shard Core does work that no call above it started: lease renewals, wait-queue leaves, a
// waiter's attempts, connect probes. What that work meets — a MOVED, an ASK, a new server — can
// reach the router only from below, so it goes through this one declared interface instead of
// callbacks set on the Core after it is made. The Core gets its link at creation
// (Core::create) and keeps it; a Core off a Cluster has none. Everything the router does on
// being told runs later, from the loop, never inside the Core's call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core.hpp"
#include "lockwire/loop/cluster_map.hpp"
#include "lockwire/loop/connection.hpp"

namespace lockwire::lock {

class Client::Core::ShardLink {
 public:
  virtual ~ShardLink() = default;

  // The connection to the node an -ASK names (ask.cpp), made if need be; nullptr when the
  // router is closed or has no slot map.
  [[nodiscard]] virtual loop::Connection* node(const std::string& host, std::uint16_t port) = 0;
  // A reply said MOVED: the map is patched and the slot's held leases move to their new shard.
  virtual void moved(const loop::cluster::Redirect& r) = 0;
  // A wait-queue leave refused with MOVED (the slot moved on after a migration): sent on to the
  // Core that serves the slot now, with what is left of its budget.
  virtual void leave_moved(const loop::cluster::Redirect& r, const protocol::Keys& keys,
                           std::vector<std::string> leaving, int budget) = 0;
  // The Core's connect probe was answered (maybe by a new primary): called first, so that the
  // masters' vouch of that server is set before anything counts it.
  virtual void probed(Core& c) = 0;
};

}  // namespace lockwire::lock
