// Output helpers of the lockwire tool (output.hpp).
#include "output.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <ctime>
#include <random>

#include "args.hpp"

namespace lockwire::cli {

__attribute__((format(printf, 1, 2))) void print_err(const char* fmt, ...) {
  std::string line = "lockwire: ";
  va_list ap;
  va_start(ap, fmt);
  char buf[2048];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  line += printable(buf);
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : utf8_sequence_length(s, i);
    if (len == 0 || c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string kind_name(lock::Kind k) {
  return k == lock::Kind::shared ? "shared" : "exclusive";
}

std::string server_words(std::string_view message) {
  // Redis's error codes (the first word of an error reply) that can reach a lockwire message.
  static constexpr std::string_view kCodes[] = {
      "ERR",         "WRONGPASS", "NOAUTH",  "NOPERM",     "NOPROTO",   "OOM",
      "READONLY",    "LOADING",   "BUSY",    "MASTERDOWN", "MISCONF",   "NOREPLICAS",
      "CLUSTERDOWN", "TRYAGAIN",  "MOVED",   "ASK",        "CROSSSLOT", "EXECABORT",
      "WRONGTYPE",   "UNBLOCKED", "NOTBUSY", "BUSYKEY",    "NOSCRIPT",  "UNKILLABLE"};
  std::size_t best = std::string_view::npos;
  for (std::string_view code : kCodes) {
    for (std::size_t p = message.find(code); p != std::string_view::npos;
         p = message.find(code, p + 1)) {
      const bool starts = p == 0 || message[p - 1] == ' ' || message[p - 1] == '(' ||
                          message[p - 1] == '-' || message[p - 1] == '\'';
      const std::size_t e = p + code.size();
      if (starts && e < message.size() && message[e] == ' ') {
        best = std::min(best, p);
        break;
      }
    }
  }
  if (best == std::string_view::npos) return {};
  std::string_view w = message.substr(best);
  // A quoted error ends where its parenthesis closes, if the message opened one before it.
  if (best > 0 && message[best - 1] == '(' && w.find(')') != std::string_view::npos) {
    w = w.substr(0, w.rfind(')'));
  }
  return std::string(w);
}

void print_json_failure(int exit, std::string_view resource, std::string_view error,
                        std::string_view extra) {
  std::string line = "{\"ok\":false,\"exit\":";
  line.append(std::to_string(exit)).append(",\"resource\":");
  line.append(resource.empty() ? std::string("null") : json_string(resource));
  line.append(",\"error\":").append(json_string(error)).append(",\"server\":");
  const std::string words = server_words(error);
  line.append(words.empty() ? std::string("null") : json_string(words));
  line.append(extra).append("}\n");
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

std::string describe_endpoint(const loop::Endpoint& ep) {
  std::string s = ep.tls ? "rediss://" : "redis://";
  if (ep.kind == loop::Endpoint::Kind::unix_socket) return "unix://" + ep.path;
  return s + ep.host + ":" + std::to_string(ep.port);
}

std::string iso_time(loop::WallTime t) {
  const auto ns = t.since_epoch.count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((ns / 1'000'000) % 1000));
  return buf;
}

std::string default_owner() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "unknown");
  std::random_device rd;
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s:%ld:%08x", host, static_cast<long>(::getpid()),
                static_cast<unsigned>(rd()));
  return buf;
}

}  // namespace lockwire::cli
