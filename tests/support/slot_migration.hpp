// Moving one hash slot between two primaries of a test RedisCluster, step by step as
// `redis-cli --cluster reshard` does it (CLUSTER SETSLOT IMPORTING on the target, MIGRATING on
// the source, MIGRATE of the slot's keys, then SETSLOT NODE on every primary), so that a test
// can act between the steps. Header-only: tests/lock and tests/tools share it.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "redis_topology.hpp"

namespace lockwire::test {

class SlotMigration {
 public:
  SlotMigration(RedisCluster& c, int slot, std::size_t from, std::size_t to)
      : c_(c), slot_(std::to_string(slot)), from_(from), to_(to) {}

  // The node's id (CLUSTER MYID), without the newline.
  static std::string id_of(RedisServer& n) {
    std::string id = n.cli({"CLUSTER", "MYID"});
    while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
    return id;
  }

  // Both nodes' replies, "OK\nOK\n" when the slot is open on both.
  std::string open() {
    return c_.node(to_).cli({"CLUSTER", "SETSLOT", slot_, "IMPORTING", id_of(c_.node(from_))}) +
           c_.node(from_).cli({"CLUSTER", "SETSLOT", slot_, "MIGRATING", id_of(c_.node(to_))});
  }
  // The slot's keys still on the source.
  std::vector<std::string> keys_left() {
    std::vector<std::string> out;
    std::istringstream in(c_.node(from_).cli({"CLUSTER", "GETKEYSINSLOT", slot_, "1000"}));
    for (std::string k; std::getline(in, k);) {
      if (!k.empty()) out.push_back(k);
    }
    return out;
  }
  // MIGRATE of every key still on the source (one batch: keys of a resource move together);
  // MIGRATE's reply ("OK\n", or "NOKEY\n" when there was none).
  std::string move_keys() {
    std::vector<std::string> args = {"MIGRATE", "127.0.0.1", std::to_string(c_.node(to_).port()),
                                     "", "0", "5000", "KEYS"};
    const auto keys = keys_left();
    if (keys.empty()) return "NOKEY\n";
    args.insert(args.end(), keys.begin(), keys.end());
    return c_.node(from_).cli(args);
  }
  // SETSLOT NODE <target> on the target, the source and every other primary: the slot is the
  // target's. The replies, concatenated.
  std::string finish() {
    const std::string to_id = id_of(c_.node(to_));
    std::string out = c_.node(to_).cli({"CLUSTER", "SETSLOT", slot_, "NODE", to_id});
    out += c_.node(from_).cli({"CLUSTER", "SETSLOT", slot_, "NODE", to_id});
    for (std::size_t i = 0; i < c_.size(); ++i) {
      if (i == to_ || i == from_) continue;
      if (c_.node(i).cli({"ROLE"}).rfind("master", 0) != 0) continue;
      out += c_.node(i).cli({"CLUSTER", "SETSLOT", slot_, "NODE", to_id});
    }
    return out;
  }

 private:
  RedisCluster& c_;
  std::string slot_;
  std::size_t from_, to_;
};

}  // namespace lockwire::test
