// respcat: the JSON format (through its formatting library) and the tool's exit statuses,
// stderr messages and streaming behaviour (by running the binary).
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "format.hpp"
#include "lockwire/resp/parser.hpp"

extern char** environ;

namespace lockwire::respcat {
namespace {

std::string json(std::string_view in) {
  resp::Parser p;
  const auto r = p.parse(in);
  EXPECT_TRUE(r.ok()) << in;
  std::string out;
  append_json(p.frame(), out);
  return out;
}

TEST(RespcatJson, Scalars) {
  EXPECT_EQ(json("$3\r\nbar\r\n"), R"({"blob": "bar"})");
  EXPECT_EQ(json("+OK\r\n"), R"({"simple": "OK"})");
  EXPECT_EQ(json("-ERR x\r\n"), R"({"error": "ERR x"})");
  EXPECT_EQ(json("!3\r\nERR\r\n"), R"({"blob_error": "ERR"})");
  EXPECT_EQ(json("=6\r\nmkd:hi\r\n"), R"({"verbatim": "hi", "format": "mkd"})");
  EXPECT_EQ(json(":-9223372036854775808\r\n"), R"({"number": -9223372036854775808})");
  EXPECT_EQ(json(":+007\r\n"), R"({"number": 7})");
  EXPECT_EQ(json("(-123456789012345678901234567890\r\n"),
            R"({"big": "-123456789012345678901234567890"})");
  EXPECT_EQ(json(",3.25\r\n"), R"({"double": 3.25})");
  EXPECT_EQ(json(",1.0000000000000001e+300\r\n"), R"({"double": 1.0000000000000001e+300})");
  EXPECT_EQ(json(",+2\r\n"), R"({"double": 2})");
  EXPECT_EQ(json(",007.5\r\n"), R"({"double": 7.5})");
  EXPECT_EQ(json(",inf\r\n"), R"({"double": "inf"})");
  EXPECT_EQ(json(",-inf\r\n"), R"({"double": "-inf"})");
  EXPECT_EQ(json(",nan\r\n"), R"({"double": "nan"})");
  EXPECT_EQ(json(",-nan\r\n"), R"({"double": "nan"})");
  EXPECT_EQ(json("#t\r\n"), R"({"bool": true})");
  EXPECT_EQ(json("#f\r\n"), R"({"bool": false})");
  EXPECT_EQ(json("_\r\n"), R"({"null": true})");
  EXPECT_EQ(json("$-1\r\n"), R"({"null": true})");
  EXPECT_EQ(json("*-1\r\n"), R"({"null": true})");
}

TEST(RespcatJson, StringsAreByteFaithful) {
  EXPECT_EQ(json(std::string("$8\r\na\"\\\r\n\0\x7f\xff\r\n", 14)),
            R"({"blob": "a\"\\\u000d\u000a\u0000\u007f\u00ff"})");
  EXPECT_EQ(json("+ ~\r\n"), R"({"simple": " ~"})");
}

TEST(RespcatJson, Aggregates) {
  EXPECT_EQ(json("*0\r\n"), R"({"array": []})");
  EXPECT_EQ(json("*2\r\n:1\r\n*1\r\n_\r\n"),
            R"({"array": [{"number": 1}, {"array": [{"null": true}]}]})");
  EXPECT_EQ(json("~1\r\n+a\r\n"), R"({"set": [{"simple": "a"}]})");
  EXPECT_EQ(json(">1\r\n+a\r\n"), R"({"push": [{"simple": "a"}]})");
  EXPECT_EQ(json("%2\r\n+a\r\n:1\r\n+b\r\n#t\r\n"),
            R"({"map": [[{"simple": "a"}, {"number": 1}], [{"simple": "b"}, {"bool": true}]]})");
  EXPECT_EQ(json("%0\r\n"), R"({"map": []})");
  // Streamed forms print as their complete equivalents.
  EXPECT_EQ(json("$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n"), R"({"blob": "abc"})");
  EXPECT_EQ(json("*?\r\n:1\r\n.\r\n"), R"({"array": [{"number": 1}]})");
  EXPECT_EQ(json("%?\r\n+k\r\n+v\r\n.\r\n"), R"({"map": [[{"simple": "k"}, {"simple": "v"}]]})");
}

TEST(RespcatJson, Attributes) {
  EXPECT_EQ(json("|1\r\n+ttl\r\n:3\r\n:42\r\n"),
            R"({"number": 42, "attributes": [[{"simple": "ttl"}, {"number": 3}]]})");
  EXPECT_EQ(json("*2\r\n|1\r\n+a\r\n+b\r\n*1\r\n:1\r\n:2\r\n"),
            R"({"array": [{"array": [{"number": 1}], "attributes": [[{"simple": "a"}, )"
            R"({"simple": "b"}]]}, {"number": 2}]})");
  // Two attribute blocks before one value merge into one list.
  EXPECT_EQ(json("|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n"),
            R"({"null": true, "attributes": [[{"simple": "a"}, {"number": 1}], )"
            R"([{"simple": "b"}, {"number": 2}]]})");
  // An attribute on a map key.
  EXPECT_EQ(json("%1\r\n|1\r\n+x\r\n+y\r\n+k\r\n+v\r\n"),
            R"({"map": [[{"simple": "k", "attributes": [[{"simple": "x"}, {"simple": "y"}]]}, )"
            R"({"simple": "v"}]]})");
}

TEST(RespcatHuman, Layout) {
  resp::Parser p;
  ASSERT_TRUE(p.parse("*3\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n%1\r\n+k\r\n,1.5\r\n").ok());
  std::string out;
  append_human(p.frame(), out);
  EXPECT_EQ(out,
            "1) \"a\"\n"
            "2) 1) (integer) 1\n"
            "   2) (integer) 2\n"
            "3) 1# k => (double) 1.5\n");
}

// --- the binary ------------------------------------------------------------------------------

struct ToolRun {
  int status = -1;
  std::string out;
  std::string err;
};

ToolRun run_respcat(const std::vector<std::string>& args, const std::string& input) {
  const std::string dir = ::testing::TempDir();
  // Appends only: gcc 12 -O3 warns falsely (-Wrestrict) on chained string operator+.
  std::string in = dir, out = dir, err = dir;
  in.append("respcat_in");
  out.append("respcat_out");
  err.append("respcat_err");
  std::ofstream(in, std::ios::binary) << input;
  std::string cmd = RESPCAT_PATH;
  for (const auto& a : args) cmd.append(" '").append(a).append("'");
  cmd.append(" <").append(in).append(" >").append(out).append(" 2>").append(err);
  ToolRun r;
  const int st = std::system(cmd.c_str());
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::stringstream o, e;
  o << std::ifstream(out, std::ios::binary).rdbuf();
  e << std::ifstream(err, std::ios::binary).rdbuf();
  r.out = o.str();
  r.err = e.str();
  return r;
}

TEST(RespcatTool, ExitStatuses) {
  ToolRun r = run_respcat({"--json"}, "+OK\r\n:1\r\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "{\"simple\": \"OK\"}\n{\"number\": 1}\n");
  EXPECT_EQ(r.err, "");

  r = run_respcat({"--json"}, "");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "");

  r = run_respcat({"--json"}, "+OK\r\n:1x\r\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "{\"simple\": \"OK\"}\n");
  EXPECT_EQ(r.err, "respcat: protocol error at byte 7: malformed integer\n");

  r = run_respcat({"--json"}, "+OK\r\n*2\r\n:1\r\n");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, "{\"simple\": \"OK\"}\n");
  EXPECT_EQ(r.err, "respcat: truncated frame at byte 5\n");

  r = run_respcat({}, "*2\r\n$1\r\na\r\n:7\r\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1) \"a\"\n2) (integer) 7\n");

  r = run_respcat({"--bogus"}, "");
  EXPECT_EQ(r.status, 1);
}

TEST(RespcatTool, LimitFlags) {
  ToolRun r = run_respcat({"--json", "--max-depth", "1"}, "*1\r\n:1\r\n*1\r\n*1\r\n:1\r\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "{\"array\": [{\"number\": 1}]}\n");
  EXPECT_EQ(r.err, "respcat: protocol error at byte 12: nesting too deep\n");

  r = run_respcat({"--json", "--max-bulk=3"}, "$3\r\nabc\r\n$4\r\nabcd\r\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "respcat: protocol error at byte 10: blob too long\n");

  r = run_respcat({"--max-depth", "0"}, "");
  EXPECT_EQ(r.status, 1);
}

TEST(RespcatTool, LargeInputAcrossReads) {
  // More than one read() worth of frames, with a blob straddling read boundaries.
  std::string in, expected;
  for (int i = 0; i < 3000; ++i) {
    in.append(":").append(std::to_string(i)).append("\r\n");
    expected.append("{\"number\": ").append(std::to_string(i)).append("}\n");
  }
  in.append("$100000\r\n").append(100000, 'x').append("\r\n");
  expected.append("{\"blob\": \"").append(100000, 'x').append("\"}\n");
  ToolRun r = run_respcat({"--json"}, in);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, expected);
}

TEST(RespcatTool, DecodesWhileReading) {
  // Writes one frame and expects its line back before closing stdin.
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  posix_spawn_file_actions_addclose(&fa, to_child[1]);
  posix_spawn_file_actions_addclose(&fa, from_child[0]);
  char arg0[] = "respcat";
  char arg1[] = "--json";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, RESPCAT_PATH, &fa, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(to_child[0]);
  ::close(from_child[1]);
  ASSERT_EQ(::write(to_child[1], "+first\r\n*1\r\n", 12), 12);
  std::string got;
  pollfd pfd{from_child[0], POLLIN, 0};
  while (got.find('\n') == std::string::npos) {
    // Generous bound only so a broken tool cannot hang the suite.
    ASSERT_GT(::poll(&pfd, 1, 20000), 0) << "no output before end of input";
    char buf[256];
    const ssize_t n = ::read(from_child[0], buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(got, "{\"simple\": \"first\"}\n");
  ASSERT_EQ(::write(to_child[1], ":2\r\n", 4), 4);
  ::close(to_child[1]);
  char buf[256];
  ssize_t n;
  while ((n = ::read(from_child[0], buf, sizeof(buf))) > 0)
    got.append(buf, static_cast<std::size_t>(n));
  ::close(from_child[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(got, "{\"simple\": \"first\"}\n{\"array\": [{\"number\": 2}]}\n");
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

}  // namespace
}  // namespace lockwire::respcat
