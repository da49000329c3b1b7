// Private to lock/src: the fence keys one connection has raised to the fencing floor, and when.
//
// An exclusive acquire block with the raise (ZADD GT, and the key's PEXPIRE) that was answered
// has put P{R}:fence at the floor or above, and given the key fence_ttl to live. On the same
// connection and with the same floor nothing lowers that score on a dataset that lost nothing,
// and a dataset that lost writes is only ever seen through a new connection (docs/protocol.md,
// Fencing tokens). So later blocks on that connection may leave the raise out for a quarter of
// fence_ttl; the grant's check (c) (Core::stale_grant) reads the time kept here. The owner
// clears it whenever the floor or the connection changes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "lockwire/loop/seam.hpp"

namespace lockwire::lock::detail {

class RaisedFences {
 public:
  explicit RaisedFences(std::size_t max_keys) noexcept : max_keys_(max_keys) {}

  // When this connection's raising block for `fence` was sent, if recent enough for a block
  // sent `now` to leave the raise out (fence_ttl_ms ≤ 0: no expiry, no limit); nullptr: raise.
  [[nodiscard]] const loop::MonoTime* raised_at(std::string_view fence, loop::MonoTime now,
                                                std::int64_t fence_ttl_ms) const {
    const auto it = at_.find(fence);
    if (it == at_.end()) return nullptr;
    // Raised again (with the key's PEXPIRE) a quarter of fence_ttl on: the reply of a block that
    // leaves both out must come within a third of it (stale_grant), and seldom fails to.
    if (fence_ttl_ms > 0 && now - it->second >= std::chrono::milliseconds(fence_ttl_ms) / 4) {
      return nullptr;
    }
    return &it->second;
  }

  // A raising block sent at `sent` ran on this connection.
  void record(const std::string& fence, loop::MonoTime sent) {
    if (at_.size() >= max_keys_) at_.clear();  // bounded: the next blocks raise again
    at_.insert_or_assign(fence, sent);
  }
  void forget(std::string_view fence) {
    if (const auto it = at_.find(fence); it != at_.end()) at_.erase(it);
  }
  void clear() noexcept { at_.clear(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept {
      return std::hash<std::string_view>{}(k);
    }
  };
  std::unordered_map<std::string, loop::MonoTime, Hash, std::equal_to<>> at_;
  std::size_t max_keys_;
};

}  // namespace lockwire::lock::detail
