// Private to lockwire_loop: the connection's push and state handlers.
//
// A handler may add or remove handlers, or destroy the connection (and this list with it),
// while the list is being called. Calling used to copy the whole list first: a vector and a
// std::function per handler, so two or three allocations for every push a tracking client
// got. Here each handler lives in a shared entry; a call takes a snapshot of the entries'
// pointers on the stack (no allocation up to kOnStack handlers), so an entry outlives its
// own call however the list changes. A handler removed during a call is not called after its
// removal, not even by that same call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace lockwire::loop::detail {

template <class Sig>
class HandlerList {
  struct Entry {
    std::function<Sig> fn;
    std::uint64_t id;
    bool removed = false;
  };

 public:
  static constexpr std::size_t kOnStack = 4;

  void add(std::uint64_t id, std::function<Sig> fn) {
    entries_.push_back(std::make_shared<Entry>(Entry{std::move(fn), id}));
  }

  void remove(std::uint64_t id) noexcept {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if ((*it)->id == id) {
        (*it)->removed = true;
        entries_.erase(it);
        return;
      }
    }
  }

  void clear() noexcept {
    for (auto& e : entries_) e->removed = true;
    entries_.clear();
  }

  // The entries as they are now. It must live on the caller's stack: the list may be gone
  // before the last call returns.
  class Snapshot {
   public:
    explicit Snapshot(const std::vector<std::shared_ptr<Entry>>& from) : n_(from.size()) {
      if (n_ <= kOnStack) {
        for (std::size_t i = 0; i < n_; ++i) few_[i] = from[i];
      } else {
        many_ = from;
      }
    }
    // Calls each handler not removed meanwhile, in order, until `dead` turns true (a handler
    // destroyed the owner of the list); false if it did.
    template <class... Args>
    bool call_each(const bool& dead, const Args&... args) const {
      for (std::size_t i = 0; i < n_; ++i) {
        const Entry& e = n_ <= kOnStack ? *few_[i] : *many_[i];
        if (!e.removed) e.fn(args...);
        if (dead) return false;
      }
      return true;
    }

   private:
    std::size_t n_;
    std::array<std::shared_ptr<Entry>, kOnStack> few_{};
    std::vector<std::shared_ptr<Entry>> many_;
  };

  [[nodiscard]] Snapshot snapshot() const { return Snapshot(entries_); }

 private:
  std::vector<std::shared_ptr<Entry>> entries_;
};

}  // namespace lockwire::loop::detail
