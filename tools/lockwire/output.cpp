// Output helpers of the lockwire tool (output.hpp).
#include "output.hpp"

#include <cstdarg>
#include <cstring>
#include <ctime>
#include <random>

namespace lockwire::cli {

__attribute__((format(printf, 1, 2))) void print_err(const char* fmt, ...) {
  std::string line = "lockwire: ";
  va_list ap;
  va_start(ap, fmt);
  char buf[2048];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  line += buf;
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

std::string kind_name(lock::Kind k) {
  return k == lock::Kind::shared ? "shared" : "exclusive";
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
