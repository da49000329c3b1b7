// Servers below lockwire's minimum (issue #32): the connect probe finds PEXPIRE's NX/GT options
// missing, and every acquire is refused with Errc::unsupported_server, a message naming the
// server, its version and the minimum, and the server's own words — before anything is written.
// Once against a scripted server that answers as Redis 6.2.16 does (always runs), once against
// whichever redis-server is first on PATH (scripts/server-matrix.sh runs it on every server:
// supported ones must grant, 6.2 must refuse).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lockwire/lock/blocking.hpp"
#include "lockwire/loop/connection.hpp"
#include "redis_server.hpp"
#include "redis_topology.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

// A scripted RESP3 server that answers the handshake and the connect probe as redis-server
// 6.2.16 does (replies captured from it), records every command, and answers anything else
// with an error: the test checks that nothing else was sent.
class OldServer {
 public:
  OldServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("scripted server");
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OldServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::vector<std::string> commands() {
    std::lock_guard<std::mutex> l(mu_);
    return commands_;
  }

 private:
  static std::string bulk(const std::string& s) {
    // (appends: g++ 12 -Wrestrict misfires on literal + string)
    std::string out("$");
    out.append(std::to_string(s.size())).append("\r\n").append(s).append("\r\n");
    return out;
  }
  // Redis 6.2.16's answers (RESP3).
  static std::string answer(const std::vector<std::string>& cmd) {
    std::string name = cmd[0];
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string sub = cmd.size() > 1 ? cmd[1] : "";
    if (name == "HELLO") {
      return std::string("%7\r\n") + bulk("server") + bulk("redis") + bulk("version") +
             bulk("6.2.16") + bulk("proto") + ":3\r\n" + bulk("id") + ":7\r\n" + bulk("mode") +
             bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") + "*0\r\n";
    }
    if (name == "CLIENT" && (sub == "INFO" || sub == "info")) {
      return bulk(
          "id=7 addr=127.0.0.1:40000 laddr=127.0.0.1:6379 fd=8 name= age=0 idle=0 "
          "flags=N db=0 sub=0 psub=0 multi=-1 qbuf=26 qbuf-free=40928 argv-mem=10 "
          "obl=0 oll=0 omem=0 tot-mem=61466 events=r cmd=client user=default redir=-1");
    }
    if (name == "CLIENT" || name == "SELECT") return "+OK\r\n";
    if (name == "HMGET") return "*2\r\n_\r\n_\r\n";
    if (name == "INFO") return bulk("# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n");
    if (name == "TIME") return std::string("*2\r\n") + bulk("1796130511") + bulk("528412");
    if (name == "COMMAND" && cmd.size() == 3) {  // INFO PEXPIRE: arity 3, no options
      return "*1\r\n*7\r\n$7\r\npexpire\r\n:3\r\n~2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
             "~3\r\n+@keyspace\r\n+@write\r\n+@fast\r\n";
    }
    if (name == "PEXPIRE") {
      return cmd.size() == 3 ? ":0\r\n"
                             : "-ERR wrong number of arguments for 'pexpire' command\r\n";
    }
    return "-ERR not expected by this test\r\n";
  }
  // One whole command (an array of bulk strings) from the front of `in`, or false.
  static bool take(std::string& in, std::vector<std::string>& cmd) {
    cmd.clear();
    if (in.empty() || in[0] != '*') return false;
    std::size_t at = in.find("\r\n");
    if (at == std::string::npos) return false;
    const long n = std::stol(in.substr(1, at - 1));
    at += 2;
    for (long i = 0; i < n; ++i) {
      const std::size_t eol = in.find("\r\n", at);
      if (eol == std::string::npos || in[at] != '$') return false;
      const auto len = static_cast<std::size_t>(std::stol(in.substr(at + 1, eol - at - 1)));
      if (in.size() < eol + 2 + len + 2) return false;
      cmd.push_back(in.substr(eol + 2, len));
      at = eol + 2 + len + 2;
    }
    in.erase(0, at);
    return true;
  }
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      ssize_t n;
      while ((n = ::read(c, buf, sizeof buf)) > 0) {
        in.append(buf, static_cast<std::size_t>(n));
        std::vector<std::string> cmd;
        std::string out;
        while (take(in, cmd)) {
          std::string line;
          for (const auto& a : cmd) line += (line.empty() ? "" : " ") + a;
          {
            std::lock_guard<std::mutex> l(mu_);
            commands_.push_back(line);
          }
          out += answer(cmd);
        }
        if (!out.empty() && ::write(c, out.data(), out.size()) < 0) break;
      }
      ::close(c);
    }
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> commands_;
};

LockRequest request(const std::string& resource) {
  LockRequest r;
  r.resource = resource;
  r.owner = "support-test";
  r.ttl = 10s;
  r.wait = 3s;  // a wait: the refusal must come at once, not at the deadline
  return r;
}

std::string last_error_of(BlockingClient& c) {
  std::string e;
  c.run_on_loop([&](Client& cl) { e = cl.last_error(); });
  return e;
}

TEST(ServerSupport, AServerWithoutPexpireOptionsIsRefusedAndNothingIsWritten) {
  OldServer server;
  loop::ConnectionOptions conn;
  ASSERT_FALSE(loop::parse_url("redis://127.0.0.1:" + std::to_string(server.port()), conn));
  BlockingClient locks(conn);
  // Exclusive, shared, a semaphore, fair order: every kind of acquire.
  for (int variant = 0; variant < 4; ++variant) {
    LockRequest req = request("invoice:42");
    req.kind = variant == 1 || variant == 2 ? Kind::shared : Kind::exclusive;
    if (variant == 2) req.permits = 3;
    req.fair = variant == 3;
    Lease lease;
    const auto t0 = std::chrono::steady_clock::now();
    const std::error_code ec = locks.lock(req, lease);
    EXPECT_EQ(ec, Errc::unsupported_server) << "variant " << variant;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "refused at once, not at the deadline";
    EXPECT_EQ(last_error_of(locks),
              std::string("invoice:42: redis 6.2.16 at 127.0.0.1:") +
                  std::to_string(server.port()) +
                  " is older than lockwire's minimum, Redis 7.0 or Valkey 7.2: it lacks "
                  "PEXPIRE's NX/GT options, which every acquire needs (COMMAND INFO PEXPIRE: "
                  "arity 3, no options)");
  }
  {
    ServerCapabilities caps;
    locks.run_on_loop([&](Client& c) { caps = c.capabilities(); });
    EXPECT_TRUE(caps.probed);
    EXPECT_NE(caps.unsupported.find("redis 6.2.16"), std::string::npos);
  }
  // Only the handshake and the connect probe reached the server: no acquire block, no write.
  for (const std::string& c : server.commands()) {
    const std::string name = c.substr(0, c.find(' '));
    EXPECT_TRUE(name == "HELLO" || name == "CLIENT" || name == "HMGET" || name == "INFO" ||
                name == "TIME" || name == "COMMAND" || name == "SELECT")
        << "sent to a refused server: " << c;
  }
}

// The server first on PATH: a supported one grants, one below the minimum refuses in its own
// words with nothing of ours left on it. Which one it is, is probed here the way the client
// does (PEXPIRE ... GT), not read from its version.
TEST(ServerSupport, TheServerOnPathGrantsOrRefusesClearly) {
  test::RedisServer server;
  const std::string probe = server.cli({"PEXPIRE", "absent", "1", "GT"});
  const bool has_options = probe.find("wrong number of arguments") == std::string::npos;
  loop::ConnectionOptions conn;
  ASSERT_FALSE(loop::parse_url(server.url(), conn));
  BlockingClient locks(conn);
  Lease lease;
  const std::error_code ec = locks.lock(request("invoice:42"), lease);
  const std::string why = last_error_of(locks);
  if (has_options) {
    EXPECT_FALSE(ec) << ec.message() << ": " << why;
    EXPECT_FALSE(locks.release(lease));
    return;
  }
  std::cout << "refused as expected: " << why << "\n";
  EXPECT_EQ(ec, Errc::unsupported_server);
  EXPECT_NE(why.find("is older than lockwire's minimum, Redis 7.0 or Valkey 7.2"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("(COMMAND INFO PEXPIRE: arity 3, no options)"), std::string::npos) << why;
  EXPECT_EQ(server.cli({"DBSIZE"}), "0\n") << "nothing written on a refused server";
  // What needs nothing newer still works there: inspect, force-release.
  LockInfo info;
  EXPECT_FALSE(locks.inspect("invoice:42", info)) << last_error_of(locks);
  std::size_t removed = 1;
  EXPECT_FALSE(locks.force_release("invoice:42", &removed)) << last_error_of(locks);
  EXPECT_EQ(removed, 0u);
}

// The same on a Cluster of the server on PATH: 6.2 has no CLUSTER SHARDS, where the slot map
// comes from; the client says so in the node's words and the minimum, and writes nothing.
TEST(ServerSupport, TheClusterOnPathGrantsOrRefusesClearly) {
  test::RedisCluster cluster(3, 0);
  const bool has_shards =
      cluster.node(0).cli({"CLUSTER", "SHARDS"}).find("nknown subcommand") == std::string::npos;
  loop::ConnectionOptions conn;
  ASSERT_FALSE(loop::parse_url(cluster.seeds_url(), conn));
  BlockingClient locks(conn);
  Lease lease;
  const std::error_code ec = locks.lock(request("invoice:42"), lease);
  const std::string why = last_error_of(locks);
  if (has_shards) {
    EXPECT_FALSE(ec) << ec.message() << ": " << why;
    EXPECT_FALSE(locks.release(lease));
    return;
  }
  std::cout << "refused as expected: " << ec.message() << ": " << why << "\n";
  EXPECT_EQ(ec, Errc::unsupported_server);
  EXPECT_NE(why.find("older than lockwire's minimum, Redis 7.0 or Valkey 7.2"), std::string::npos)
      << why;
  EXPECT_NE(why.find("for 'SHARDS'"), std::string::npos) << "the node's own words: " << why;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    EXPECT_EQ(cluster.node(i).cli({"DBSIZE"}), "0\n") << "nothing written on node " << i;
  }
}

}  // namespace
}  // namespace lockwire::lock
