// respcat [--json] [--max-depth N] [--max-bulk N] [FILE]: decodes a RESP2/RESP3 stream while
// reading it. Exit status: 0 input ended after a complete frame (or was empty), 1 usage or I/O
// error, 2 protocol error, 3 input ended inside a frame.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "format.hpp"
#include "lockwire/resp/parser.hpp"

namespace {

constexpr const char* kUsage =
    "usage: respcat [--json] [--max-depth N] [--max-bulk BYTES] [FILE]\n"
    "Decodes a RESP2/RESP3 byte stream (stdin when no FILE), one frame at a time.\n"
    "  --json           one JSON document per top-level frame, one per line\n"
    "  --max-depth N    maximum aggregate nesting (default 64, at most 1000)\n"
    "  --max-bulk BYTES maximum blob length (default 536870912)\n"
    "exit: 0 ok, 2 protocol error, 3 truncated frame, 1 usage or I/O error\n";

bool parse_u64(std::string_view s, std::uint64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

int usage_error(const char* why) {
  std::fprintf(stderr, "respcat: %s\n%s", why, kUsage);
  return 1;
}

bool write_all(std::string& out) {
  std::size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, out.data() + off, out.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  out.clear();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using lockwire::resp::ParseResult;
  bool json = false;
  const char* path = nullptr;
  lockwire::resp::Limits limits;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view value;
    bool has_value = false;
    auto take_value = [&](std::string_view flag) {
      if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
        value = a.substr(flag.size() + 1);
        return has_value = true;
      }
      if (a == flag && i + 1 < argc) {
        value = argv[++i];
        return has_value = true;
      }
      return a == flag;
    };
    if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (take_value("--max-depth")) {
      std::uint64_t v = 0;
      // Printing recurses per level: 1000 keeps it far from the stack limit.
      if (!has_value || !parse_u64(value, v) || v == 0 || v > 1000) {
        return usage_error("--max-depth needs a number from 1 to 1000");
      }
      limits.max_depth = static_cast<std::uint32_t>(v);
    } else if (take_value("--max-bulk")) {
      std::uint64_t v = 0;
      if (!has_value || !parse_u64(value, v)) return usage_error("--max-bulk needs a byte count");
      limits.max_blob = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option");
    } else if (path == nullptr) {
      path = argv[i];
    } else {
      return usage_error("at most one FILE");
    }
  }

  int fd = STDIN_FILENO;
  if (path != nullptr && std::strcmp(path, "-") != 0) {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "respcat: %s: %s\n", path, std::strerror(errno));
      return 1;
    }
  }

  lockwire::resp::Parser parser(limits);
  std::string buf;        // bytes received and not yet consumed by a complete frame
  std::size_t base = 0;   // stream offset of buf[0]
  std::size_t begin = 0;  // start of the current frame within buf
  std::string out;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "respcat: read error: %s\n", std::strerror(errno));
      return 1;
    }
    if (n == 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
    // Decode every frame now complete, print them, then read on.
    for (;;) {
      const ParseResult r = parser.parse(std::string_view(buf).substr(begin));
      if (r.status == ParseResult::Status::incomplete) break;
      if (r.status == ParseResult::Status::error) {
        write_all(out);
        std::fprintf(stderr, "respcat: protocol error at byte %zu: %s\n", base + begin + r.error_at,
                     make_error_code(r.error).message().c_str());
        return 2;
      }
      if (json) {
        lockwire::respcat::append_json(parser.frame(), out);
        out += '\n';
      } else {
        lockwire::respcat::append_human(parser.frame(), out);
      }
      begin += r.consumed;
    }
    if (!write_all(out)) return 1;
    // Drop consumed bytes once they dominate the buffer (amortised O(1) per byte).
    if (begin > 0 && begin >= buf.size() / 2) {
      buf.erase(0, begin);
      base += begin;
      begin = 0;
    }
  }
  if (begin < buf.size()) {
    std::fprintf(stderr, "respcat: truncated frame at byte %zu\n", base + begin);
    return 3;
  }
  return 0;
}
