// RequestBuilder and RequestShape: the builder's bytes are resp::append_command's, and the shape
// it records command by command is the one RequestShape::of finds by walking those bytes — for
// valid requests of every kind and for every kind of refusal.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/request.hpp"
#include "lockwire/resp/encoder.hpp"

namespace lockwire::loop {
namespace {

using Cmds = std::vector<std::vector<std::string_view>>;

Request build(const Cmds& cmds) {
  RequestBuilder b;
  for (const auto& c : cmds) b.add(std::span<const std::string_view>(c));
  return b.done();
}

std::string encode(const Cmds& cmds) {
  std::string out;
  for (const auto& c : cmds) resp::append_command(out, std::span<const std::string_view>(c));
  return out;
}

// After an error only the error counts (the builder goes on counting commands, the walk stops).
void expect_same(const RequestShape& a, const RequestShape& b) {
  EXPECT_EQ(std::string(a.error() ? a.error() : "-"), std::string(b.error() ? b.error() : "-"));
  if (a.error() != nullptr) return;
  EXPECT_EQ(a.commands(), b.commands());
  EXPECT_EQ(a.replies(), b.replies());
  EXPECT_EQ(a.kind(), b.kind());
  EXPECT_TRUE(std::equal(a.subscribes().begin(), a.subscribes().end(), b.subscribes().begin(),
                         b.subscribes().end()));
}

TEST(Request, BuilderWritesAppendCommandBytesAndCountsCommands) {
  const Request r =
      RequestBuilder().add("SET", "k", std::string("v"), "PX", 3000).add({"GET", "k"}).done();
  std::string want;
  resp::append_command(want, "SET", "k", "v", "PX", 3000);
  resp::append_command(want, {"GET", "k"});
  EXPECT_EQ(r.bytes, want);
  EXPECT_EQ(r.commands, 2u);
  EXPECT_EQ(r.kind, RequestKind::plain);
  EXPECT_EQ(r.shape().replies(), 2u);
  EXPECT_EQ(r.shape().error(), nullptr);
  EXPECT_TRUE(r.shape().describes(r));
}

TEST(Request, BuilderInfersTheKind) {
  EXPECT_EQ(RequestBuilder().add("MULTI").add("INCR", "n").add("EXEC").done().kind,
            RequestKind::atomic);
  EXPECT_EQ(RequestBuilder().add("multi").add("DISCARD").done().kind, RequestKind::atomic);
  EXPECT_EQ(RequestBuilder().add("WATCH", "k").add("GET", "k").done().kind, RequestKind::watch);
  EXPECT_EQ(RequestBuilder().add("PING").done().kind, RequestKind::plain);
}

// Plain commands may come before or after the one block (a pipelined "pop, then the block"
// is one request); the block must be closed and single, and WatchTxn::exec takes it alone.
TEST(Request, PlainCommandsAroundOneBlockMakeOneAtomicRequest) {
  const Request around = RequestBuilder()
                             .add("ZADD", "a", "0", "t")
                             .add("BZPOPMIN", "w", "1")
                             .add("MULTI")
                             .add("INCR", "n")
                             .add("EXEC")
                             .add("SET", "d", "1", "XX")
                             .done();
  EXPECT_EQ(around.shape().error(), nullptr);
  EXPECT_EQ(around.kind, RequestKind::atomic);
  EXPECT_EQ(around.shape().replies(), 6u);
  EXPECT_FALSE(around.shape().block_only());
  EXPECT_TRUE(RequestBuilder().add("MULTI").add("INCR", "n").add("EXEC").done().shape().block_only());
  EXPECT_TRUE(RequestBuilder().add("MULTI").add("DISCARD").done().shape().block_only());
  const std::vector<Cmds> refused = {
      {{"GET", "k"}, {"MULTI"}, {"GET", "k"}},            // never closed
      {{"EXEC"}, {"MULTI"}, {"EXEC"}},                    // an EXEC before the block
      {{"MULTI"}, {"MULTI"}, {"EXEC"}},                   // nested
      {{"MULTI"}, {"EXEC"}, {"GET", "k"}, {"MULTI"}, {"EXEC"}},  // two blocks
      {{"SUBSCRIBE", "c"}, {"MULTI"}, {"EXEC"}},          // a subscribe beside the block
      {{"MULTI"}, {"EXEC"}, {"UNSUBSCRIBE"}},
      {{"GET", "k"}, {"MULTI"}, {"EXEC"}, {"UNWATCH"}},
  };
  for (const Cmds& c : refused) {
    SCOPED_TRACE(encode(c));
    EXPECT_NE(build(c).shape().error(), nullptr);
    EXPECT_NE(RequestShape::of(encode(c)).error(), nullptr);
  }
}

TEST(Request, BuilderStartsOverAfterDone) {
  RequestBuilder b;
  b.add("PING");
  EXPECT_EQ(b.commands(), 1u);
  const Request first = b.done();
  EXPECT_EQ(b.commands(), 0u);
  EXPECT_EQ(b.size(), 0u);
  const Request second = b.add("MULTI").add("EXEC").done();
  EXPECT_EQ(first.commands, 1u);
  EXPECT_EQ(second.commands, 2u);
  EXPECT_EQ(second.kind, RequestKind::atomic);
  EXPECT_EQ(second.shape().replies(), 2u);
}

TEST(Request, RecordedShapeEqualsTheShapeOfTheBytes) {
  const std::vector<Cmds> cases = {
      {{"PING"}},
      {{"GET", "k"}, {"SET", "k", "v"}},
      {{"MULTI"}, {"SET", "a", "1"}, {"INCR", "b"}, {"EXEC"}},
      {{"MULTI"}, {"DISCARD"}},
      {{"WATCH", "k"}, {"GET", "k"}, {"HGETALL", "h"}},
      {{"SUBSCRIBE", "a", "b", "c"}, {"GET", "k"}, {"PSUBSCRIBE", "p*"}},
      {{"SSUBSCRIBE", "s"}, {"UNSUBSCRIBE"}, {"PUNSUBSCRIBE", "x"}, {"PING"}},
      {{"client", "tracking", "on"}, {"CLIENT", "ID"}},
      // Refused, each for its own reason.
      {{"HELLO", "3"}},
      {{"GET", "k"}, {"reset"}},
      {{"MONITOR"}},
      {{"CLIENT", "REPLY", "OFF"}},
      {{"MULTI"}, {"SUBSCRIBE", "a"}, {"EXEC"}},
      {{"SUBSCRIBE"}},
      {{"EXEC"}},
      {{"MULTI"}, {"GET", "k"}},
      {{"GET", "k"}, {"MULTI"}, {"EXEC"}},  // accepted: plain commands around one block
      {{"MULTI"}, {"INCR", "n"}, {"EXEC"}, {"SET", "d", "1"}},
      {{"MULTI"}, {"EXEC"}, {"MULTI"}, {"EXEC"}},
      {{"MULTI"}, {"WATCH", "k"}, {"EXEC"}},
      {{"WATCH", "k"}, {"UNWATCH"}},
      {{"WATCH", "k"}, {"MULTI"}, {"EXEC"}},
      {{"UNWATCH"}},
      {{"SUBSCRIBE", "1"},
       {"SUBSCRIBE", "2"},
       {"SUBSCRIBE", "3"},
       {"SUBSCRIBE", "4"},
       {"SUBSCRIBE", "5"},
       {"SUBSCRIBE", "6"},
       {"SUBSCRIBE", "7"},
       {"SUBSCRIBE", "8"},
       {"SUBSCRIBE", "9"}},
      {{}},  // a command without a name
  };
  for (const Cmds& c : cases) {
    SCOPED_TRACE(encode(c));
    const Request r = build(c);
    EXPECT_EQ(r.bytes, encode(c));
    expect_same(r.shape(), RequestShape::of(r.bytes));
  }
}

TEST(Request, SubscribeSlotsAndAcknowledgements) {
  const Request r = RequestBuilder()
                        .add("GET", "k")
                        .add("SUBSCRIBE", "a", "b")
                        .add("UNSUBSCRIBE", "z")
                        .add("PSUBSCRIBE", "p*")
                        .done();
  EXPECT_EQ(r.shape().replies(), 3u);  // UNSUBSCRIBE has no reply
  const std::vector<RequestShape::Subscribe> want{{1, 2}, {2, 1}};
  EXPECT_TRUE(std::equal(r.shape().subscribes().begin(), r.shape().subscribes().end(), want.begin(),
                         want.end()));
}

TEST(Request, ErrorsOfRawBytes) {
  EXPECT_STREQ(RequestShape::of("").error(), "empty request");
  EXPECT_STREQ(RequestBuilder().done().shape().error(), "empty request");
  EXPECT_NE(RequestShape::of("PING\r\n").error(), nullptr);
  EXPECT_NE(RequestShape::of("*1\r\n$4\r\nPIN").error(), nullptr);
  EXPECT_NE(RequestShape::of("*1\r\n$4\r\nPINGxx").error(), nullptr);
  EXPECT_NE(RequestShape::of("*0\r\n").error(), nullptr);
  EXPECT_EQ(RequestShape::of("*1\r\n$4\r\nPING\r\n").error(), nullptr);
}

TEST(Request, OnlyAnUnchangedBuiltRequestCarriesItsShape) {
  Request r = RequestBuilder().add("GET", "k").done();
  EXPECT_TRUE(r.shape().describes(r));
  Request hand;
  resp::append_command(hand.bytes, {"GET", "k"});
  EXPECT_FALSE(hand.shape().describes(hand));  // made by hand: walked by the connection
  Request grown = r;
  resp::append_command(grown.bytes, {"HELLO", "3"});
  ++grown.commands;
  EXPECT_FALSE(grown.shape().describes(grown));  // changed since: walked again
  EXPECT_NE(RequestShape::of(grown.bytes).error(), nullptr);
  Request recounted = r;
  recounted.commands = 2;
  EXPECT_FALSE(recounted.shape().describes(recounted));
}

}  // namespace
}  // namespace lockwire::loop
