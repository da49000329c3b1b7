// `lockwire-sim serve`: the simulated Redis on a real TCP port with the real clock, for real
// clients (redis-cli, redis-py, ioredis, Redis' own test suite, the differential suite).
//
// One thread, one epoll set, as redis-server's ae loop: every wait returns the sockets in the
// order they became ready, and each is served in that order — one read of at most 16 KiB
// (PROTO_IOBUF_LEN) fed to the model, so commands of different connections are applied in the
// order they arrived, and a connection with a long pipeline cannot starve the others. A turn
// ends as Redis' beforeSleep does: pending replies are written (what the kernel takes; the rest
// waits for EPOLLOUT), and every connection that got output is checked against its
// client-output-buffer-limit class (the model decides: normal 0 0 0, replica 256mb 64mb 60,
// pubsub 32mb 8mb 60 by default). Work per turn is proportional to the active connections;
// idle ones cost nothing. maxclients (10000 by default, CONFIG SET maxclients) is enforced at
// accept with Redis' error.
#include "serve.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "lockwire/sim/redis_model.hpp"

namespace lockwire::tools {
namespace {

using ClientId = sim::RedisModel::ClientId;

std::int64_t real_wall_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}
std::int64_t real_mono_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

constexpr std::size_t kReadChunk = 16 * 1024;  // PROTO_IOBUF_LEN
constexpr std::uint64_t kListener = 0;         // epoll data of the listening socket

struct Conn {
  int fd = -1;
  std::string out;     // reply bytes not yet taken by the kernel
  std::size_t sent = 0;  // prefix of `out` already written
  bool close_after_write = false;
  bool want_write = false;  // EPOLLOUT registered
  bool touched = false;     // in `active` for this turn
  [[nodiscard]] std::size_t unsent() const { return out.size() - sent; }
};

std::string peer_name(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// maxclients + Redis' CONFIG_MIN_RESERVED_FDS (32) descriptors, as far as the hard limit allows.
void raise_fd_limit(int maxclients) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(maxclients) + 32 + 16;
  if (rl.rlim_cur >= want) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

}  // namespace

int serve(const ServeOptions& opt) {
  ::signal(SIGPIPE, SIG_IGN);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(opt.port);
  if (::getaddrinfo(opt.host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    std::fprintf(stderr, "lockwire-sim serve: cannot resolve %s\n", opt.host.c_str());
    return 2;
  }
  const int lfd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (lfd >= 0) ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd < 0 || ::bind(lfd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(lfd, 511) != 0) {
    std::fprintf(stderr, "lockwire-sim serve: cannot listen on %s:%u: %s\n", opt.host.c_str(),
                 static_cast<unsigned>(opt.port), std::strerror(errno));
    ::freeaddrinfo(res);
    if (lfd >= 0) ::close(lfd);
    return 2;
  }
  ::freeaddrinfo(res);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    std::fprintf(stderr, "lockwire-sim serve: epoll_create1: %s\n", std::strerror(errno));
    ::close(lfd);
    return 2;
  }
  {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListener;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  }

  std::unordered_map<ClientId, Conn> conns;
  std::vector<ClientId> active;  // connections that got output this turn
  auto touch = [&](ClientId id, Conn& c) {
    if (!c.touched) {
      c.touched = true;
      active.push_back(id);
    }
  };
  sim::RedisModel::Hooks hooks;
  const bool trace_out = std::getenv("LOCKWIRE_SERVE_TRACE_OUT") != nullptr;
  hooks.write = [&](ClientId id, std::string_view bytes) {
    if (trace_out) {  // what each connection is sent (the first bytes, CR LF shown as |)
      std::string shown(bytes.substr(0, 120));
      for (auto& ch : shown) ch = (ch == '\r' || ch == '\n') ? '|' : ch;
      std::fprintf(stderr, "[%llu] out %s\n", static_cast<unsigned long long>(id), shown.c_str());
    }
    auto it = conns.find(id);
    if (it == conns.end()) return;
    it->second.out.append(bytes);
    touch(id, it->second);
  };
  hooks.close = [&](ClientId id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    it->second.close_after_write = true;
    touch(id, it->second);
  };
  bool shutdown = false;
  hooks.shutdown = [&shutdown] { shutdown = true; };
  ClientId feeding = 0;  // the connection whose bytes the model is reading (for the trace)
  if (std::getenv("LOCKWIRE_SERVE_TRACE") != nullptr) {  // every command and key event, on stderr
    hooks.trace = [&feeding](std::string_view what, std::string_view detail) {
      std::fprintf(stderr, "[%llu] %.*s %.*s\n", static_cast<unsigned long long>(feeding),
                   static_cast<int>(what.size()), what.data(), static_cast<int>(detail.size()),
                   detail.data());
    };
  }
  hooks.wall_us = real_wall_us;
  hooks.cpu = [](std::int64_t& sys_us, std::int64_t& user_us) {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    sys_us = static_cast<std::int64_t>(ru.ru_stime.tv_sec) * 1000000 + ru.ru_stime.tv_usec;
    user_us = static_cast<std::int64_t>(ru.ru_utime.tv_sec) * 1000000 + ru.ru_utime.tv_usec;
  };
  hooks.rss = [] {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
  };
  hooks.stall = [](std::int64_t us) { ::usleep(static_cast<useconds_t>(us)); };  // like Redis
  sim::RedisModelOptions mo;
  mo.requirepass = opt.requirepass;
  mo.enable_debug_command = opt.enable_debug_command;
  mo.tcp_port = opt.port;
  mo.process_id = ::getpid();
  {
    utsname u{};
    if (::uname(&u) == 0) mo.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) != nullptr) mo.dir = cwd;
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) mo.executable.assign(exe, static_cast<std::size_t>(n));
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0)
      mo.total_system_memory = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
  // What this server is: no persistence, listening where it was told.
  mo.config = {{"bind", opt.host}, {"save", ""}, {"appendonly", "no"}};
  for (auto& kv : opt.config) mo.config.push_back(kv);
  sim::RedisModel model(std::move(hooks), sim::Rng(opt.seed), mo);
  raise_fd_limit(model.maxclients());

  std::printf("lockwire-sim: simulated Redis 7.0.15 listening on %s:%u (seed %llu)\n",
              opt.host.c_str(), static_cast<unsigned>(opt.port),
              static_cast<unsigned long long>(opt.seed));
  std::fflush(stdout);

  // The connection goes now: the socket is closed, unsent output dropped.
  auto drop = [&](ClientId id, bool tell_model) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::epoll_ctl(ep, EPOLL_CTL_DEL, it->second.fd, nullptr);
    ::close(it->second.fd);
    conns.erase(it);
    if (tell_model) model.remove_client(id);
  };
  auto set_write_interest = [&](Conn& c, ClientId id, bool on) {
    if (c.want_write == on) return;
    c.want_write = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = id;
    ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  };
  // Writes what the kernel takes; false when the socket failed.
  auto write_some = [&](Conn& c) -> bool {
    while (c.unsent() > 0) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.unsent(), MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    if (c.sent == c.out.size()) {
      c.out.clear();
      if (c.out.capacity() > 64 * 1024) std::string().swap(c.out);
      c.sent = 0;
    } else if (c.sent > 1024 * 1024 && c.sent * 2 > c.out.size()) {
      c.out.erase(0, c.sent);
      c.sent = 0;
    }
    return true;
  };
  // After writing: the model's output limit, then CLOSE_AFTER_REPLY, then EPOLLOUT interest.
  auto settle = [&](ClientId id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    c.touched = false;
    if (!write_some(c)) return drop(id, !c.close_after_write);
    if (!c.close_after_write && model.output_backlog(id, c.unsent())) return drop(id, false);
    if (c.close_after_write && c.unsent() == 0) return drop(id, false);
    set_write_interest(c, id, c.unsent() > 0);
  };
  auto accept_all = [&] {
    for (int k = 0; k < 1000; ++k) {  // MAX_ACCEPTS_PER_CALL
      sockaddr_storage ss{};
      socklen_t sl = sizeof ss;
      const int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&ss), &sl,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (conns.size() >= static_cast<std::size_t>(model.maxclients())) {
        const char msg[] = "-ERR max number of clients reached\r\n";
        (void)!::send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL);
        ::close(fd);
        model.note_rejected_connection();
        continue;
      }
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sockaddr_storage ls{};
      socklen_t ll = sizeof ls;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ls), &ll);
      const ClientId id = model.add_client(peer_name(ss), peer_name(ls), fd);
      Conn& c = conns[id];
      c.fd = fd;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = id;
      ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
  };

  std::vector<epoll_event> events(1024);
  std::vector<char> buf(kReadChunk);
  std::int64_t next_cron = real_mono_us() + 100000;
  while (!opt.stop || !*opt.stop) {
    // Sleep until the next cron, a blocked client's deadline, or input.
    const std::int64_t now = real_mono_us();
    std::int64_t wait_us = next_cron - now;
    if (const std::int64_t d = model.next_deadline_us(); d >= 0)
      wait_us = std::min(wait_us, d - real_wall_us());
    if (opt.stop) wait_us = std::min<std::int64_t>(wait_us, 100000);
    const int timeout_ms = wait_us <= 0 ? 0 : static_cast<int>((wait_us + 999) / 1000);
    if (events.size() < conns.size() + 1 && events.size() < 65536)
      events.resize(std::min<std::size_t>(conns.size() + 1, 65536));
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t id = events[i].data.u64;
      if (id == kListener) {
        accept_all();
        continue;
      }
      auto it = conns.find(id);
      if (it == conns.end()) continue;  // closed earlier in this turn
      Conn& c = it->second;
      const std::uint32_t what = events[i].events;
      if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        const ssize_t r = ::recv(c.fd, buf.data(), buf.size(), 0);
        if (r > 0) {
          feeding = id;
          model.feed(id, std::string_view(buf.data(), static_cast<std::size_t>(r)));
          feeding = 0;
        } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          drop(id, true);  // the peer went: freeClient at once, as Redis on a read of 0
          continue;
        }
      }
      if (what & EPOLLOUT) {
        if (auto again = conns.find(id); again != conns.end()) touch(id, again->second);
      }
    }
    if (real_mono_us() >= next_cron) {
      model.cron();
      next_cron = real_mono_us() + 100000;
    } else if (const std::int64_t d = model.next_deadline_us(); d >= 0 && d <= real_wall_us()) {
      model.tick();
    }
    // beforeSleep: write pending replies of the connections this turn touched.
    auto turn = std::move(active);
    active.clear();
    for (auto id : turn) settle(id);
    if (shutdown) break;  // SHUTDOWN: the connections were closed by the model
  }
  for (auto& [id, c] : conns) ::close(c.fd);
  ::close(ep);
  ::close(lfd);
  return 0;
}

}  // namespace lockwire::tools
