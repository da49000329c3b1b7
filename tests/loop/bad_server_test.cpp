// Connection on UvLoop against a tiny scripted server that misbehaves after the handshake:
// malformed bytes, an unsolicited reply, a reply over the input limit. Each must be a clear
// error that drops the connection, not a hang or a mismatched reply.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "loop_check.hpp"

namespace lockwire::loop {
namespace {

using namespace std::chrono_literals;
using test::run_until;

// A tiny scripted server: answers HELLO, then sends `script` after the first command.
class FakeServer {
 public:
  explicit FakeServer(std::string script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("fake server");
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  void serve() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    const std::string hello = "%1\r\n$2\r\nid\r\n:1\r\n";
    if (::read(c, buf, sizeof buf) > 0 && ::write(c, hello.data(), hello.size()) > 0 &&
        ::read(c, buf, sizeof buf) > 0) {
      [[maybe_unused]] auto n = ::write(c, script_.data(), script_.size());
      while (::read(c, buf, sizeof buf) > 0) {
      }
    }
    ::close(c);
  }
  std::string script_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

void expect_fake_server_error(const std::string& script, Errc want, const char* detail) {
  FakeServer fake(script);
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  ConnectionOptions o;
  o.endpoint.port = fake.port();
  o.auto_reconnect = false;
  auto c = std::make_unique<Connection>(loop, o);
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  std::error_code req, drop;
  c->add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::disconnected) drop = ec;
  });
  bool answered = false;
  c->command({"GET", "k"}, [&](std::error_code ec, const Replies&) {
    answered = true;
    req = ec;
  });
  ASSERT_TRUE(run_until(loop, [&] { return answered && drop; }));
  // Oversized: the only reply is lost; otherwise the valid first reply was delivered.
  EXPECT_EQ(req,
            want == Errc::input_limit ? make_error_code(Errc::outcome_unknown) : std::error_code{});
  EXPECT_EQ(drop, want);
  EXPECT_NE(c->last_error().find(detail), std::string::npos) << c->last_error();
  c.reset();  // before the locals its handlers refer to
}

TEST(Connection, MalformedBytesFromAFakeServerAreAClearError) {
  expect_fake_server_error("$3\r\nabc\r\n:12x\r\n", Errc::protocol_error, "malformed");
}

TEST(Connection, UnsolicitedReplyFromAFakeServerIsAClearError) {
  expect_fake_server_error("+OK\r\n+SURPRISE\r\n", Errc::protocol_error, "unsolicited");
}

TEST(Connection, OversizedReplyHitsTheInputLimit) {
  expect_fake_server_error("$999999999999\r\n", Errc::input_limit, "malformed");
}

// Issue #31: an HTTP service on the port. What it sends back to HELLO is named as such, with a
// bounded, escaped excerpt of its first bytes — not "malformed RESP: unknown type byte".
TEST(Connection, APeerThatDoesNotSpeakRespIsNamedWithWhatItSent) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::uint16_t port = ntohs(a.sin_port);
  std::thread http([fd] {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    const std::string reply =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n"
        "Connection: close\r\n\r\n<html>\x01</html>";
    if (::read(c, buf, sizeof buf) > 0) {
      [[maybe_unused]] auto n = ::write(c, reply.data(), reply.size());
    }
    ::close(c);
  });
  {
    UvLoop loop;
    test::EmptyLoopAtExit at_exit(loop);
    ConnectionOptions o;
    o.endpoint.host = "127.0.0.1";
    o.endpoint.port = port;
    o.auto_reconnect = false;
    auto c = std::make_unique<Connection>(loop, o);
    std::error_code drop;
    c->add_state_handler([&](ConnectionState s, std::error_code ec) {
      if (s == ConnectionState::disconnected && ec && !drop) drop = ec;
    });
    c->start();
    ASSERT_TRUE(run_until(loop, [&] { return bool(drop); }));
    const std::string& why = c->last_error();
    const std::string want = "the server at 127.0.0.1:" + std::to_string(port) +
                             " does not speak RESP; it sent 'HTTP/1.1 400 Bad Request\\r\\n";
    EXPECT_EQ(why.rfind(want, 0), 0u) << why;
    EXPECT_TRUE(why.ends_with("'...")) << why;  // bounded: the rest is left out
    EXPECT_LT(why.size(), want.size() + 120) << why;
    EXPECT_EQ(why.find("unknown type byte"), std::string::npos) << why;
    c.reset();
  }
  http.join();
  ::close(fd);
}

}  // namespace
}  // namespace lockwire::loop
