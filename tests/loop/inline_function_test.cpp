// loop::InlineFunction (loop/include/lockwire/loop/inline_function.hpp), the type behind
// ReplyHandler: where a callable is kept (inside, or on the heap when it does not fit), that
// copies, moves, assignments and resets construct and destroy each callable exactly once, and
// that it behaves as std::function where callers rely on it (empty sources, empty calls, a
// mutable callable through a const reference).
#include "lockwire/loop/inline_function.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <string>

namespace lockwire::loop {
namespace {

// A callable that counts its live instances and the heap allocations made for it: the class's
// own operator new is what InlineFunction's heap path calls.
struct Counts {
  int alive = 0;
  int allocations = 0;
  int frees = 0;
};

template <std::size_t Bytes>
struct Probe {
  static inline Counts* counts = nullptr;
  std::array<unsigned char, Bytes> payload{};
  int* calls;

  explicit Probe(int* c) : calls(c) { ++counts->alive; }
  Probe(const Probe& o) : payload(o.payload), calls(o.calls) { ++counts->alive; }
  Probe(Probe&& o) noexcept : payload(o.payload), calls(o.calls) { ++counts->alive; }
  Probe& operator=(const Probe&) = delete;
  ~Probe() { --counts->alive; }
  int operator()(int x) const { return x + ++*calls; }

  static void* operator new(std::size_t n) {
    ++counts->allocations;
    return ::operator new(n);
  }
  static void operator delete(void* p) noexcept {
    ++counts->frees;
    ::operator delete(p);
  }
};

using Fn = InlineFunction<int(int), 48>;
using Small = Probe<32>;   // 32 + 8 bytes: fits in 48
using Large = Probe<128>;  // does not

static_assert(Fn::stores_inline<Small>);
static_assert(!Fn::stores_inline<Large>);

template <class P>
class InlineFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override { P::counts = &counts; }
  void TearDown() override {
    EXPECT_EQ(counts.alive, 0) << "a callable was leaked or destroyed twice";
    EXPECT_EQ(counts.allocations, counts.frees);
    P::counts = nullptr;
  }
  Counts counts;
};
using Sizes = ::testing::Types<Small, Large>;
TYPED_TEST_SUITE(InlineFunctionTest, Sizes);

TYPED_TEST(InlineFunctionTest, CopiesMovesAndResetsEachCallableOnce) {
  constexpr bool kInline = Fn::stores_inline<TypeParam>;
  int calls = 0;
  {
    Fn f = TypeParam(&calls);
    EXPECT_EQ(this->counts.alive, 1);
    EXPECT_EQ(this->counts.allocations, kInline ? 0 : 1);
    EXPECT_EQ(f(10), 11);

    Fn copy(f);  // a second callable, sharing the call counter
    EXPECT_EQ(this->counts.alive, 2);
    EXPECT_EQ(this->counts.allocations, kInline ? 0 : 2);
    EXPECT_EQ(copy(10), 12);

    Fn moved(std::move(f));
    EXPECT_FALSE(static_cast<bool>(f));  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(this->counts.alive, 2);
    EXPECT_EQ(this->counts.allocations, kInline ? 0 : 2) << "a move allocates nothing";
    EXPECT_EQ(moved(10), 13);

    copy = moved;  // replaces copy's callable
    EXPECT_EQ(this->counts.alive, 2);
    copy = std::move(moved);
    EXPECT_EQ(this->counts.alive, 1);
    copy = nullptr;
    EXPECT_EQ(this->counts.alive, 0);
    EXPECT_TRUE(copy == nullptr);

    f = TypeParam(&calls);  // assigned a callable again
    EXPECT_EQ(this->counts.alive, 1);
    EXPECT_EQ(f(0), 4);
  }
  EXPECT_EQ(this->counts.alive, 0);
}

TEST(InlineFunction, EmptySourcesGiveAnEmptyFunctionThatThrowsWhenCalled) {
  Fn by_default;
  Fn from_null = nullptr;
  Fn from_empty_std = std::function<int(int)>();
  int (*null_pointer)(int) = nullptr;
  Fn from_null_pointer = null_pointer;
  for (const Fn* f : {&by_default, &from_null, &from_empty_std, &from_null_pointer}) {
    EXPECT_FALSE(static_cast<bool>(*f));
    EXPECT_TRUE(*f == nullptr);
    EXPECT_THROW((*f)(1), std::bad_function_call);
  }
  Fn from_std = std::function<int(int)>([](int x) { return x * 2; });
  EXPECT_EQ(from_std(21), 42);
}

TEST(InlineFunction, CallsAMutableCallableThroughAConstReference) {
  const Fn counter = [n = 0](int x) mutable { return x + ++n; };
  EXPECT_EQ(counter(0), 1);
  EXPECT_EQ(counter(0), 2);
}

TEST(InlineFunction, PassesArgumentsAsDeclared) {
  // By value (moved in), by reference to const, and a reply-handler shaped signature.
  InlineFunction<std::size_t(std::unique_ptr<std::string>, const std::string&), 16> f =
      [](std::unique_ptr<std::string> owned, const std::string& seen) {
        return owned->size() + seen.size();
      };
  EXPECT_EQ(f(std::make_unique<std::string>("abc"), "de"), 5U);
}

// The owner of a function, destroyed from its callable's destructor (a handler holding the last
// shared_ptr to the object that holds the handler).
struct SelfOwner;
struct LastReference {
  std::shared_ptr<SelfOwner> owner;
  bool* saw_empty;
  void operator()(int) const {}
  ~LastReference();
};
struct SelfOwner {
  InlineFunction<void(int), 48> fn;
};
LastReference::~LastReference() {
  if (owner) *saw_empty = !owner->fn;
}

TEST(InlineFunction, ACallableThatDropsTheLastReferenceToItsOwnerSeesItEmpty) {
  // reset() must not touch the callable after destroying it, and the owner's function must
  // already read as empty while it goes.
  bool saw_empty = false;
  auto owner = std::make_shared<SelfOwner>();
  owner->fn = LastReference{owner, &saw_empty};
  SelfOwner* raw = owner.get();
  owner.reset();           // the callable inside raw->fn keeps it alive
  raw->fn = nullptr;       // destroys the callable, which destroys the owner
  EXPECT_TRUE(saw_empty);  // and nothing is read after that (ASan would say)
}

}  // namespace
}  // namespace lockwire::loop
