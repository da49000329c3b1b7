// Private to lockwire_loop: a FIFO of T on one growable circular buffer, for the requests in
// flight. Unlike std::deque it does not allocate and free a block every few elements while a
// pipeline turns over; slots are reused, and a popped slot is reset to T{} at once (so what it
// held — handlers and their captures — is released then, as with deque).
//
// Unlike std::deque, push_back / emplace_back may move every element (growth): references and
// iterators into the ring do not survive them.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace lockwire::loop::detail {

template <class T>
class Ring {
 public:
  Ring() = default;
  Ring(Ring&& o) noexcept
      : slots_(std::move(o.slots_)), head_(std::exchange(o.head_, 0)), n_(std::exchange(o.n_, 0)) {
    o.slots_.clear();
  }
  Ring& operator=(Ring&& o) noexcept {
    if (this != &o) {
      slots_ = std::move(o.slots_);
      head_ = std::exchange(o.head_, 0);
      n_ = std::exchange(o.n_, 0);
      o.slots_.clear();
    }
    return *this;
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() = default;

  [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] T& front() noexcept { return slots_[head_]; }
  [[nodiscard]] const T& front() const noexcept { return slots_[head_]; }
  [[nodiscard]] T& back() noexcept { return (*this)[n_ - 1]; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & mask()]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    return slots_[(head_ + i) & mask()];
  }

  // A slot at the back in its default state.
  T& emplace_back() {
    if (n_ == slots_.size()) grow();
    ++n_;
    return back();
  }
  void push_back(T&& v) { emplace_back() = std::move(v); }

  void pop_front() noexcept {
    // Destroyed and made anew (cheaper than assigning T{}); T's default constructor must not
    // throw in practice (std::chrono members keep the trait from saying so).
    T* slot = &slots_[head_];
    std::destroy_at(slot);
    std::construct_at(slot);
    head_ = (head_ + 1) & mask();
    if (--n_ == 0) {
      head_ = 0;
      // Do not keep a burst's worth of slots for ever.
      if (slots_.size() > kKeep) std::vector<T>().swap(slots_);
    }
  }

  void clear() noexcept {
    while (!empty()) pop_front();
  }

  template <class R>
  class Iter {
   public:
    Iter(R* r, std::size_t i) noexcept : r_(r), i_(i) {}
    decltype(auto) operator*() const noexcept { return (*r_)[i_]; }
    Iter& operator++() noexcept {
      ++i_;
      return *this;
    }
    bool operator!=(const Iter& o) const noexcept { return i_ != o.i_; }

   private:
    R* r_;
    std::size_t i_;
  };
  Iter<Ring> begin() noexcept { return {this, 0}; }
  Iter<Ring> end() noexcept { return {this, n_}; }
  Iter<const Ring> begin() const noexcept { return {this, 0}; }
  Iter<const Ring> end() const noexcept { return {this, n_}; }

 private:
  static constexpr std::size_t kFirst = 16;   // slots at the first push (a power of two)
  static constexpr std::size_t kKeep = 1024;  // slots kept once the ring is empty again
  [[nodiscard]] std::size_t mask() const noexcept { return slots_.size() - 1; }
  void grow() {
    std::vector<T> bigger(slots_.empty() ? kFirst : 2 * slots_.size());
    for (std::size_t i = 0; i < n_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;  // size is 0 or a power of two; every slot holds a T
  std::size_t head_ = 0;
  std::size_t n_ = 0;
};

}  // namespace lockwire::loop::detail
