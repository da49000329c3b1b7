// Issue #31, the CLI as an operator holds it: credentials never printed and never needed in argv
// (--password-file, $LOCKWIRE_PASSWORD, $REDISCLI_AUTH), input rules (control characters,
// invalid UTF-8, the minimum TTL), one JSON object for every failure under --json, and a peer
// that does not speak RESP named as such. The real binary against private redis-servers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "args.hpp"
#include "cli_proc.hpp"
#include "redis_server.hpp"

namespace {

using namespace lockwire::test;

class OperatorCli : public ::testing::Test {
 protected:
  // Runs lockwire with none of the variables it reads unless `env` sets them.
  Result lw(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    env.insert(env.begin(), {"LOCKWIRE_URL", "LOCKWIRE_PASSWORD", "REDISCLI_AUTH"});
    Proc p(args, dir_, false, env);
    const int st = p.wait();
    return {st, p.out(), p.err()};
  }
  // `text` must be exactly one line holding one JSON object, for which `expr` (python, over
  // `j`) holds. Checked together by one python3 at the end of the test.
  void one_json(const std::string& text, const std::string& expr) {
    checks_.emplace_back(text, expr);
  }
  bool json_verify() {
    std::string program = "import json, sys\nok = True\n";
    for (std::size_t i = 0; i < checks_.size(); ++i) {
      const std::string data = dir_.file("json-" + std::to_string(i));
      std::ofstream(data) << checks_[i].first;
      program += "try:\n    lines = open('" + data +
                 "').read().splitlines()\n"
                 "    assert len(lines) == 1, 'not one line'\n"
                 "    j = json.loads(lines[0])\n"
                 "    assert isinstance(j, dict)\n"
                 "    assert (" +
                 checks_[i].second +
                 ")\n"
                 "except Exception as e:\n"
                 "    ok = False\n"
                 "    print('JSON check failed:', " +
                 std::to_string(i) + ", repr(e), repr(open('" + data + "').read()))\n";
    }
    program += "sys.exit(0 if ok else 1)\n";
    checks_.clear();
    const std::string script = dir_.file("check.py");
    std::ofstream(script) << program;
    return std::system(("python3 " + script).c_str()) == 0;
  }
  std::string write(const std::string& name, const std::string& content) {
    const std::string path = dir_.file(name);
    std::ofstream(path) << content;
    return path;
  }

  TempDir dir_;
  std::vector<std::pair<std::string, std::string>> checks_;
};

// ---- finding 5: credentials ------------------------------------------------------------------

TEST_F(OperatorCli, CredentialsAreNeverPrinted) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
  };
  const std::vector<Case> usage = {
      {{"inspect", "R", "--url", "redis://u:hunter2@127.0.0.1:notaport"}, {}},
      {{"inspect", "R", "--url=redis://u:hunter2/x@127.0.0.1"}, {}},  // an unencoded '/'
      {{"inspect", "R", "redis://u:hunter2@127.0.0.1"}, {}},          // --url forgotten
      {{"inspect", "R", "--url", "redis-sentinel://127.0.0.1?sentinel_password=hunter2"}, {}},
      {{"inspect", "R", "--url", "redis://127.0.0.1?password=hunter2&db=x"}, {}},
      {{"inspect", "R", "--json"}, {"LOCKWIRE_URL=redis://u:hunter2@127.0.0.1:notaport"}},
  };
  for (const Case& c : usage) {
    Result r = lw(c.args, c.env);
    EXPECT_EQ(r.status, 64) << r.err;
    EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("hunter2"), std::string::npos) << r.out;
  }
  Result shown = lw({"inspect", "R", "--url", "redis://u:hunter2@127.0.0.1:notaport"});
  EXPECT_NE(shown.err.find("redis://u:***@127.0.0.1:notaport"), std::string::npos) << shown.err;

  // A bad $LOCKWIRE_URL says where it came from.
  Result env = lw({"inspect", "R"}, {"LOCKWIRE_URL=redis://u:hunter2@127.0.0.1:notaport"});
  EXPECT_EQ(env.status, 64);
  EXPECT_NE(env.err.find("$LOCKWIRE_URL"), std::string::npos) << env.err;

  // A server that echoes HELLO's arguments (HELLO renamed away), and a wrong password.
  RedisServer echo({"--requirepass", "hunter2-pw", "--rename-command", "HELLO", ""});
  const std::string at = "127.0.0.1:" + std::to_string(echo.port());
  Result e = lw({"inspect", "R", "--url", "redis://:hunter2-pw@" + at});
  EXPECT_EQ(e.status, 69) << e.err;
  EXPECT_NE(e.err.find("unknown command"), std::string::npos) << e.err;
  EXPECT_EQ(e.err.find("hunter2"), std::string::npos) << e.err;
  RedisServer locked({"--requirepass", "right-pw"});
  Result w = lw({"inspect", "R", "--json", "--url",
                 "redis://:hunter2-wrong@127.0.0.1:" + std::to_string(locked.port())});
  EXPECT_EQ(w.status, 69) << w.err;
  EXPECT_EQ(w.err.find("hunter2"), std::string::npos) << w.err;
  EXPECT_EQ(w.out.find("hunter2"), std::string::npos) << w.out;
}

TEST_F(OperatorCli, PasswordFromAFileOrTheEnvironmentInTheDocumentedOrder) {
  RedisServer server({"--requirepass", "s3cret-pw"});
  const std::string url = server.url();
  const std::string with_pw = "redis://:s3cret-pw@127.0.0.1:" + std::to_string(server.port());
  const std::string right = write("right", "s3cret-pw\n");
  const std::string wrong = write("wrong", "not-it\n");
  auto inspect = [&](std::vector<std::string> extra, std::vector<std::string> env,
                     const std::string& u) {
    std::vector<std::string> args{"inspect", "R", "--url", u};
    args.insert(args.end(), extra.begin(), extra.end());
    return lw(args, std::move(env)).status;
  };
  EXPECT_EQ(inspect({}, {}, url), 69);  // none given: the server says NOAUTH
  EXPECT_EQ(inspect({"--password-file", right}, {}, url), 0);
  EXPECT_EQ(inspect({}, {"LOCKWIRE_PASSWORD=s3cret-pw"}, url), 0);
  EXPECT_EQ(inspect({}, {"REDISCLI_AUTH=s3cret-pw"}, url), 0);
  // --password-file > the URL's password > $LOCKWIRE_PASSWORD > $REDISCLI_AUTH.
  EXPECT_EQ(inspect({"--password-file", right}, {"LOCKWIRE_PASSWORD=not-it"}, url), 0);
  EXPECT_EQ(inspect({"--password-file", wrong}, {"LOCKWIRE_PASSWORD=s3cret-pw"}, url), 69);
  EXPECT_EQ(inspect({"--password-file", right}, {},
                    "redis://:not-it@127.0.0.1:" + std::to_string(server.port())),
            0);
  EXPECT_EQ(inspect({}, {"LOCKWIRE_PASSWORD=not-it"}, with_pw), 0);
  EXPECT_EQ(inspect({}, {"LOCKWIRE_PASSWORD=s3cret-pw", "REDISCLI_AUTH=not-it"}, url), 0);
  EXPECT_EQ(inspect({}, {"LOCKWIRE_PASSWORD=not-it", "REDISCLI_AUTH=s3cret-pw"}, url), 69);
  // A missing or empty file is a usage error naming the file, not its content.
  Result missing = lw({"inspect", "R", "--url", url, "--password-file", dir_.file("nope")});
  EXPECT_EQ(missing.status, 64);
  EXPECT_NE(missing.err.find(dir_.file("nope")), std::string::npos) << missing.err;
  Result empty = lw({"inspect", "R", "--url", url, "--password-file", write("empty", "")});
  EXPECT_EQ(empty.status, 64);
  EXPECT_NE(empty.err.find("empty"), std::string::npos) << empty.err;
  // run keeps the lease with a password that was never in its argv.
  Result run = lw({"run", "--url", url, "--password-file", right, "R", "--", "true"});
  EXPECT_EQ(run.status, 0) << run.err;
}

// ---- finding 7: input rules ------------------------------------------------------------------

TEST_F(OperatorCli, ControlCharactersInvalidUtf8AndTooShortTtlsAreRefused) {
  RedisServer server;
  const std::string url = server.url();
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {{"acquire", "R", "--ttl", "10s", "--owner", "two\nlines"}, "control character"},
      {{"acquire", "a\tb", "--ttl", "10s"}, "control character"},
      {{"run", "R\x1b[2J", "--", "true"}, "control character"},
      {{"release", "R", "--owner", "x\x7f"}, "control character"},
      {{"acquire", "R", "--ttl", "10s", "--owner", "caf\xe9"}, "UTF-8"},
      {{"inspect", "\xff\xfe"}, "UTF-8"},
      {{"acquire", "R", "--ttl", "1ms"}, "at least 500ms"},
      {{"run", "--ttl", "100ms", "R", "--", "true"}, "at least 500ms"},
      {{"renew", "R", "--owner", "o", "--ttl", "499ms"}, "at least 500ms"},
      {{"acquire", "R", "--ttl", "10s", "--json", "--owner", "a\rb"}, "control character"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin() + 1, {"--url", url});
    Result r = lw(args);
    EXPECT_EQ(r.status, 64) << c.needle << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
  }
  // The minimum itself is fine, and "inf" is "forever" (a persistent lease) for --ttl too.
  Result ok = lw({"acquire", "--url", url, "R", "--ttl", "500ms", "--owner", "café"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(lw({"acquire", "--url", url, "P", "--ttl", "inf", "--owner", "o"}).status, 0);
  Result p = lw({"inspect", "--url", url, "P"});
  EXPECT_NE(p.out.find("persistent"), std::string::npos) << p.out;
}

// The library is binary-safe, so another client may hold a lease under a name the tool would
// refuse. Text output escapes it (one line per holder, whatever the name); JSON carries its bytes.
TEST_F(OperatorCli, NamesWrittenByOtherClientsStayOneLineAndFaithful) {
  RedisServer server;
  const std::string url = server.url();
  server.cli({"HSET", "lockwire:{N}", "x:evil\nowner", "60000"});
  server.cli({"PEXPIRE", "lockwire:{N}", "60000"});
  server.cli({"HSET", "lockwire:{U}", "x:caf\xe9", "60000"});
  server.cli({"PEXPIRE", "lockwire:{U}", "60000"});
  Result text = lw({"inspect", "--url", url, "N"});
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("holder:     exclusive evil\\x0aowner ("), std::string::npos) << text.out;
  Result busy = lw({"acquire", "--url", url, "N", "--ttl", "10s", "--owner", "me"});
  EXPECT_EQ(busy.status, 75);
  EXPECT_NE(busy.err.find("held by 'evil\\x0aowner'"), std::string::npos) << busy.err;
  EXPECT_EQ(std::count(busy.err.begin(), busy.err.end(), '\n'), 1) << busy.err;
  Result bytes = lw({"inspect", "--url", url, "U", "--json"});
  one_json(bytes.out, "j['holders'][0]['owner'].encode('utf-8', 'surrogateescape') == b'caf\\xe9'");
  Result plain = lw({"inspect", "--url", url, "U"});
  EXPECT_NE(plain.out.find("exclusive caf\\xe9 ("), std::string::npos) << plain.out;
  EXPECT_TRUE(json_verify());
}

TEST(OperatorCliJson, BytesThatAreNotUtf8AreEscapedFaithfully) {
  // Names written by other clients may hold any bytes: never U+FFFD (which loses them), but
  // \udcXX as Python's surrogateescape, from which the bytes come back.
  EXPECT_EQ(lockwire::cli::json_string("a\xff"
                                       "b"),
            "\"a\\udcffb\"");
  EXPECT_EQ(lockwire::cli::json_string("\xc3(\xe9"), "\"\\udcc3(\\udce9\"");
  EXPECT_EQ(lockwire::cli::json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}

// ---- finding 8: --json failures are JSON -----------------------------------------------------

TEST_F(OperatorCli, EveryFailureUnderJsonIsOneJsonObject) {
  RedisServer server;
  const std::string url = server.url();
  ASSERT_EQ(lw({"acquire", "--url", url, "J", "--ttl", "10s", "--owner", "alice"}).status, 0);
  Result busy = lw({"acquire", "--url", url, "J", "--ttl", "10s", "--owner", "bob", "--json"});
  EXPECT_EQ(busy.status, 75) << busy.err;
  EXPECT_NE(busy.err.find("not acquired"), std::string::npos) << busy.err;  // text still there
  one_json(busy.out,
           "j['ok'] is False and j['exit']==75 and 'alice' in j['error'] and "
           "j['server'] is None and j['resource']=='J'");
  Result quiet = lw({"acquire", "--url", url, "J", "--ttl", "10s", "-q", "--json"});
  EXPECT_EQ(quiet.status, 75);
  EXPECT_EQ(quiet.err, "");
  one_json(quiet.out, "j['ok'] is False and j['exit']==75");
  Result rel = lw({"release", "--url", url, "J", "--owner", "bob", "--json"});
  EXPECT_EQ(rel.status, 77);
  one_json(rel.out, "j['released'] is False and j['ok'] is False and j['exit']==77");
  Result usage = lw({"acquire", "--url", url, "J", "--json"});  // no --ttl
  EXPECT_EQ(usage.status, 64);
  one_json(usage.out, "j['ok'] is False and j['exit']==64 and '--ttl' in j['error']");
  Result ttl = lw({"acquire", "--url", url, "J", "--json", "--ttl", "1ms"});
  EXPECT_EQ(ttl.status, 64);
  one_json(ttl.out, "j['exit']==64 and '500ms' in j['error']");
  RedisServer gone;
  const std::string gone_url = gone.url();
  gone.stop();
  Result down = lw({"inspect", "--url", gone_url, "J", "--json"});
  EXPECT_EQ(down.status, 69);
  one_json(down.out, "j['ok'] is False and j['exit']==69 and 'connect' in j['error']");
  RedisServer locked({"--requirepass", "right-pw"});
  Result words =
      lw({"force-release", "--url", locked.url(), "J", "--json"}, {"LOCKWIRE_PASSWORD=wrong-pw"});
  EXPECT_EQ(words.status, 69);
  one_json(words.out, "j['exit']==69 and j['server'].startswith('WRONGPASS')");
  // A signal while waiting (exit 128+N) is a failure too.
  {
    Proc waiting({"acquire", "--url", url, "J", "--ttl", "10s", "--wait", "30s", "--json", "-v"},
                 dir_, false, {"LOCKWIRE_URL", "LOCKWIRE_PASSWORD", "REDISCLI_AUTH"});
    ASSERT_TRUE(eventually([&] { return waiting.err().find("connected to") != std::string::npos; }))
        << waiting.err();
    waiting.signal(SIGTERM);
    EXPECT_EQ(waiting.wait(), 128 + SIGTERM) << waiting.err();
    one_json(waiting.out(), "j['ok'] is False and j['exit']==143 and 'signal 15' in j['error']");
  }
  // Success is unchanged: one object without "ok".
  Result fine = lw({"inspect", "--url", url, "J", "--json"});
  EXPECT_EQ(fine.status, 0);
  one_json(fine.out, "j['state']=='exclusive' and 'ok' not in j");
  EXPECT_TRUE(json_verify());
}

// ---- finding 9: a peer that does not speak RESP ----------------------------------------------

TEST_F(OperatorCli, AnHttpServerOnThePortIsNamedAsSuch) {
  const std::uint16_t port = free_loopback_port();
  Proc http({"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", std::to_string(port),
             "--directory", dir_.file("")},
            dir_, true);
  ASSERT_TRUE(eventually([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return up;
  }));
  const std::string url = "redis://127.0.0.1:" + std::to_string(port);
  Result r = lw({"inspect", "--url", url, "R", "--json"});
  EXPECT_EQ(r.status, 69) << r.err;
  // Python's server takes HELLO's first line for an HTTP/0.9 request: its answer is HTML
  // without a status line.
  const std::string want =
      "the server at 127.0.0.1:" + std::to_string(port) + " does not speak RESP; it sent '";
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find(want + "HTTP/") != std::string::npos ||
              r.err.find(want + "<!DOCTYPE") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("unknown type byte"), std::string::npos) << r.err;
  one_json(r.out, "'does not speak RESP' in j['error'] and j['exit']==69");
  EXPECT_TRUE(json_verify());
  http.signal(SIGTERM);
  http.wait();
}

}  // namespace
