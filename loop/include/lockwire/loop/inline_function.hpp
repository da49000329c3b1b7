// A copyable `std::function` replacement that keeps callables of up to `Capacity` bytes inside
// itself instead of on the heap (issue #30).
//
// Why: libstdc++'s std::function stores a callable inline only when it is trivially copyable
// and at most 16 bytes, so every reply handler of the lock layer (a lambda holding a weak_ptr to
// the client and shared_ptrs to its waiter or lease) cost one malloc and one free per request:
// two of a lock/unlock pair's five allocations. ReplyHandler is this type with room for those
// captures (loop/include/lockwire/loop/connection.hpp).
//
// Same contract as std::function where it matters to callers: constructible from any copyable
// callable with a matching signature (implicitly, so `send(req, [..](auto ec, auto& r) {..})`
// reads the same), from nullptr and from an empty std::function or function pointer (both give
// an empty one); copyable; `operator()` is const and calls a mutable callable; calling an empty
// one throws std::bad_function_call. A callable that does not fit, or needs more than pointer
// alignment, or could throw while moving, is kept on the heap as std::function would.
//
// Header-only; owned by loop/.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace lockwire::loop {

template <class Signature, std::size_t Capacity>
class InlineFunction;

namespace detail {
template <class T>
struct is_std_function : std::false_type {};
template <class S>
struct is_std_function<std::function<S>> : std::true_type {};
template <class T>
struct is_inline_function : std::false_type {};
template <class S, std::size_t C>
struct is_inline_function<InlineFunction<S, C>> : std::true_type {};
}  // namespace detail

template <class R, class... Args, std::size_t Capacity>
class InlineFunction<R(Args...), Capacity> {
 public:
  // True when a callable of type F lives inside the object (no allocation).
  template <class F>
  static constexpr bool stores_inline = sizeof(F) <= Capacity &&
                                        alignof(F) <= alignof(void*) &&
                                        std::is_nothrow_move_constructible_v<F>;

  InlineFunction() noexcept = default;
  InlineFunction(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!detail::is_inline_function<D>::value &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  InlineFunction(F&& f) {  // NOLINT(google-explicit-constructor): a drop-in for std::function
    static_assert(std::is_copy_constructible_v<D>, "InlineFunction needs a copyable callable");
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> ||
                  detail::is_std_function<D>::value) {
      if (!f) return;  // an empty source gives an empty function, as std::function does
    }
    if constexpr (stores_inline<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInline<D>;
    } else {
      D* p = new D(std::forward<F>(f));
      ::new (static_cast<void*>(buf_)) D*(p);
      ops_ = &kHeap<D>;
    }
  }

  InlineFunction(const InlineFunction& o) {
    if (o.ops_ != nullptr) {
      o.ops_->copy(buf_, o.buf_);
      ops_ = o.ops_;
    }
  }
  InlineFunction(InlineFunction&& o) noexcept { take(o); }

  InlineFunction& operator=(const InlineFunction& o) {
    if (this != &o) {
      InlineFunction copy(o);  // may throw: leaves *this untouched
      reset();
      take(copy);
    }
    return *this;
  }
  InlineFunction& operator=(InlineFunction&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  InlineFunction& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!detail::is_inline_function<D>::value &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  InlineFunction& operator=(F&& f) {
    InlineFunction made(std::forward<F>(f));
    reset();
    take(made);
    return *this;
  }

  ~InlineFunction() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  friend bool operator==(const InlineFunction& f, std::nullptr_t) noexcept { return !f; }

  R operator()(Args... args) const {
    if (ops_ == nullptr) throw std::bad_function_call();
    return ops_->call(buf_, std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    R (*call)(void* self, Args&&... args);
    void (*move)(void* to, void* from) noexcept;  // move-constructs `to`, destroys `from`
    void (*copy)(void* to, const void* from);
    void (*destroy)(void* self) noexcept;
  };

  template <class D>
  static constexpr Ops kInline{
      [](void* s, Args&&... a) -> R {
        return std::invoke(*static_cast<D*>(s), std::forward<Args>(a)...);
      },
      [](void* to, void* from) noexcept {
        D* f = static_cast<D*>(from);
        ::new (to) D(std::move(*f));
        f->~D();
      },
      [](void* to, const void* from) { ::new (to) D(*static_cast<const D*>(from)); },
      [](void* s) noexcept { static_cast<D*>(s)->~D(); },
  };
  template <class D>
  static constexpr Ops kHeap{
      [](void* s, Args&&... a) -> R {
        return std::invoke(**static_cast<D**>(s), std::forward<Args>(a)...);
      },
      [](void* to, void* from) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* to, const void* from) { ::new (to) D*(new D(**static_cast<D* const*>(from))); },
      [](void* s) noexcept { delete *static_cast<D**>(s); },
  };

  void take(InlineFunction& o) noexcept {  // *this is empty
    if (o.ops_ != nullptr) {
      o.ops_->move(buf_, o.buf_);
      ops_ = o.ops_;
      o.ops_ = nullptr;
    }
  }
  void reset() noexcept {
    if (ops_ != nullptr) {
      const Ops* ops = ops_;
      ops_ = nullptr;  // a callable whose destructor drops the last reference to us sees us empty
      ops->destroy(buf_);
    }
  }

  alignas(void*) mutable unsigned char buf_[Capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace lockwire::loop
