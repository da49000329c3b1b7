// A small job runner: workers compete for jobs, take a lock per job (lock::Client), do the work
// and write the result to a store that checks fencing tokens. The store refuses a write whose
// token is below the highest one it has seen for that job, so a worker that lost its lease
// while it was stalled (GC pause, swapped out, SIGSTOP) cannot overwrite the next holder's work.
//
// The code is written against loop::Loop only, so the same Worker runs on libuv in production
// and on a simulated node in job_runner_sim_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/seam.hpp"

namespace job_runner {

using Nanos = std::chrono::nanoseconds;

// The results store. In-process for brevity; a real one (a database row with a token column)
// does the same compare in its UPDATE ... WHERE token <= $1.
class Store {
 public:
  struct Write {
    std::string worker;
    std::uint64_t token = 0;  // 0: an unfenced write
  };
  // A worker announces that it starts a job with `token`; false: a later holder already did.
  bool begin(int job, std::uint64_t token);
  // Fenced write (token > 0): refused if a higher token was seen for the job. Unfenced (token 0):
  // always accepted -- what a store does when the caller does not pass the token.
  bool write(int job, const std::string& worker, std::uint64_t token);
  [[nodiscard]] bool done(int job) const { return writes_.count(job) != 0; }
  [[nodiscard]] const std::map<int, std::vector<Write>>& writes() const { return writes_; }
  [[nodiscard]] std::uint64_t refused() const { return refused_; }
  // Told of every write and its outcome (the simulation test puts them in the trace).
  std::function<void(int job, const std::string& worker, std::uint64_t token, bool accepted)>
      on_write;

 private:
  std::map<int, std::uint64_t> highest_;
  std::map<int, std::vector<Write>> writes_;
  std::uint64_t refused_ = 0;
};

struct WorkerOptions {
  std::string name = "worker";
  Nanos ttl = std::chrono::milliseconds(100);  // auto-renewed every ttl/3 while working
  Nanos min_work = std::chrono::milliseconds(40), max_work = std::chrono::milliseconds(120);
  Nanos retry = std::chrono::milliseconds(30);  // after a failed attempt
  // The deliberate bug of the broken variant: write without the fencing token.
  bool fenced = true;
};

// Takes the jobs in order; for each: lock "job:N", skip if done, work, write, release.
class Worker {
 public:
  Worker(lockwire::loop::Loop& loop, lockwire::loop::ConnectionOptions connection, Store& store,
         std::vector<int> jobs, WorkerOptions options);
  ~Worker();
  void start();
  void close();  // stops taking jobs; leases still held expire (see lock::Client::close)
  [[nodiscard]] bool finished() const { return queue_.empty(); }
  [[nodiscard]] const std::string& name() const { return options_.name; }

 private:
  void next();
  void work(int job, lockwire::lock::Lease lease);
  void finish(int job, const lockwire::lock::Lease& lease, bool done);
  void after(Nanos d, std::function<void()> fn);
  void later(Nanos d);
  lockwire::loop::Loop& loop_;
  Store& store_;
  WorkerOptions options_;
  lockwire::lock::Client locks_;
  std::vector<int> queue_;
  std::unique_ptr<lockwire::loop::Timer> timer_;
  std::function<void()> pending_;
  std::uint64_t attempt_ = 0;
};

}  // namespace job_runner
