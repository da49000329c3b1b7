// The job runner on a real Redis: the same Worker and Store as the simulation test, on libuv.
// Three workers compete for six jobs; each job is written once, with the token of its lock.
//   example_job_runner [redis://127.0.0.1:6379]
#include <cstdio>
#include <memory>
#include <vector>

#include "job_runner.hpp"
#include "lockwire/loop/uv_loop.hpp"

int main(int argc, char** argv) {
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379", conn)) {
    std::fprintf(stderr, "bad url: %s\n", ec.message().c_str());
    return 2;
  }
  lockwire::loop::UvLoop loop;
  job_runner::Store store;
  store.on_write = [](int job, const std::string& worker, std::uint64_t token, bool ok) {
    std::printf("job %d: %s by %s, token %llu\n", job, ok ? "written" : "REFUSED", worker.c_str(),
                static_cast<unsigned long long>(token));
  };
  const std::vector<int> jobs{1, 2, 3, 4, 5, 6};
  std::vector<std::unique_ptr<job_runner::Worker>> workers;
  for (int i = 1; i <= 3; ++i) {
    job_runner::WorkerOptions o;
    o.name = "worker-" + std::to_string(i);
    o.ttl = std::chrono::seconds(2);
    workers.push_back(std::make_unique<job_runner::Worker>(loop, conn, store, jobs, o));
    workers.back()->start();
  }
  // Done when every queue is empty; closing the clients lets run() return.
  std::unique_ptr<lockwire::loop::Timer> check;
  check = loop.make_timer([&] {
    for (auto& w : workers)
      if (!w->finished()) return;
    for (auto& w : workers) w->close();
    check->stop();
  });
  check->start(std::chrono::milliseconds(10), std::chrono::milliseconds(10));
  loop.run();
  for (int j : jobs) {
    const auto it = store.writes().find(j);
    if (it == store.writes().end() || it->second.size() != 1) {
      std::fprintf(stderr, "job %d was not written exactly once\n", j);
      return 1;
    }
  }
  std::printf("all %zu jobs written once\n", jobs.size());
  return 0;
}
