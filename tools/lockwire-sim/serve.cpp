// `lockwire-sim serve`: the simulated Redis on a real TCP port with the real clock, for real
// clients (redis-cli, redis-py, the differential suite). POSIX sockets + poll, one thread.
#include "serve.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lockwire/sim/redis_model.hpp"

namespace lockwire::tools {
namespace {

std::int64_t real_wall_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}
std::int64_t real_mono_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

struct Conn {
  int fd = -1;
  sim::RedisModel::ClientId id = 0;
  std::string out;
  bool close_after_write = false;
};

constexpr std::size_t kMaxOutput = 256ull * 1024 * 1024;  // client-output-buffer-limit
constexpr std::size_t kMaxConns = 10000;                  // maxclients

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
  const int lfd = ::socket(res->ai_family, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd < 0 || ::bind(lfd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(lfd, 511) != 0) {
    std::fprintf(stderr, "lockwire-sim serve: cannot listen on %s:%u: %s\n", opt.host.c_str(),
                 static_cast<unsigned>(opt.port), std::strerror(errno));
    ::freeaddrinfo(res);
    return 2;
  }
  ::freeaddrinfo(res);
  ::fcntl(lfd, F_SETFL, ::fcntl(lfd, F_GETFL) | O_NONBLOCK);

  std::map<sim::RedisModel::ClientId, Conn> conns;
  std::map<int, sim::RedisModel::ClientId> by_fd;
  sim::RedisModel::Hooks hooks;
  hooks.write = [&](sim::RedisModel::ClientId id, std::string_view bytes) {
    auto it = conns.find(id);
    if (it != conns.end()) it->second.out.append(bytes);
  };
  hooks.close = [&](sim::RedisModel::ClientId id) {
    auto it = conns.find(id);
    if (it != conns.end()) it->second.close_after_write = true;
  };
  hooks.wall_us = real_wall_us;
  hooks.stall = [](std::int64_t us) { ::usleep(static_cast<useconds_t>(us)); };  // like Redis
  sim::RedisModelOptions mo;
  mo.requirepass = opt.requirepass;
  mo.enable_debug_command = opt.enable_debug_command;
  sim::RedisModel model(std::move(hooks), sim::Rng(opt.seed), mo);

  std::printf("lockwire-sim: simulated Redis 7.0.15 listening on %s:%u (seed %llu)\n",
              opt.host.c_str(), static_cast<unsigned>(opt.port),
              static_cast<unsigned long long>(opt.seed));
  std::fflush(stdout);

  std::int64_t next_cron = real_mono_ms() + 100;
  std::vector<pollfd> pfds;
  std::vector<char> buf(64 * 1024);
  auto drop = [&](sim::RedisModel::ClientId id, bool tell_model) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::close(it->second.fd);
    by_fd.erase(it->second.fd);
    conns.erase(it);
    if (tell_model) model.remove_client(id);
  };
  auto flush = [&](Conn& c) -> bool {  // false: connection must go
    while (!c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    if (c.out.size() > kMaxOutput) return false;
    return !(c.close_after_write && c.out.empty());
  };
  while (!opt.stop || !*opt.stop) {
    pfds.clear();
    pfds.push_back({lfd, POLLIN, 0});
    for (auto& [id, c] : conns)
      pfds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    const std::int64_t wait = std::max<std::int64_t>(0, next_cron - real_mono_ms());
    const int rc =
        ::poll(pfds.data(), pfds.size(), static_cast<int>(std::min<std::int64_t>(wait, 100)));
    if (rc < 0 && errno != EINTR) break;
    std::vector<sim::RedisModel::ClientId> gone;
    for (std::size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      auto f = by_fd.find(pfds[i].fd);
      if (f == by_fd.end()) continue;
      const auto id = f->second;
      Conn& c = conns[id];
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
        if (n > 0) {
          model.feed(id, std::string_view(buf.data(), static_cast<std::size_t>(n)));
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          gone.push_back(id);
          continue;
        }
      }
    }
    for (auto id : gone) drop(id, true);
    // Accept after reading so a burst of new connections cannot starve existing ones.
    if (pfds[0].revents & POLLIN) {
      for (int k = 0; k < 64; ++k) {
        sockaddr_storage ss{};
        socklen_t sl = sizeof ss;
        const int fd = ::accept(lfd, reinterpret_cast<sockaddr*>(&ss), &sl);
        if (fd < 0) break;
        if (conns.size() >= kMaxConns) {
          const char msg[] = "-ERR max number of clients reached\r\n";
          (void)!::send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL);
          ::close(fd);
          continue;
        }
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned peer_port = 0;
        if (ss.ss_family == AF_INET) {
          auto* a = reinterpret_cast<sockaddr_in*>(&ss);
          ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
          peer_port = ntohs(a->sin_port);
        }
        const auto id = model.add_client(std::string(host) + ":" + std::to_string(peer_port));
        conns[id] = Conn{fd, id, {}, false};
        by_fd[fd] = id;
      }
    }
    if (real_mono_ms() >= next_cron) {
      model.cron();
      next_cron = real_mono_ms() + 100;
    }
    std::vector<sim::RedisModel::ClientId> closing;
    for (auto& [id, c] : conns)
      if (!flush(c)) closing.push_back(id);
    for (auto id : closing) {
      const bool model_closed = conns[id].close_after_write;
      drop(id, !model_closed);
    }
  }
  for (auto& [id, c] : conns) ::close(c.fd);
  ::close(lfd);
  return 0;
}

}  // namespace lockwire::tools
