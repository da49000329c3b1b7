#include "job_runner.hpp"

#include <algorithm>
#include <utility>

namespace job_runner {

namespace lock = lockwire::lock;

bool Store::begin(int job, std::uint64_t token) {
  auto& h = highest_[job];
  if (token < h) return false;
  h = token;
  return true;
}

bool Store::write(int job, const std::string& worker, std::uint64_t token) {
  if (token != 0) {
    auto& h = highest_[job];
    if (token < h) {
      ++refused_;
      if (on_write) on_write(job, worker, token, false);
      return false;
    }
    h = token;
  }
  writes_[job].push_back({worker, token});
  if (on_write) on_write(job, worker, token, true);
  return true;
}

Worker::Worker(lockwire::loop::Loop& loop, lockwire::loop::ConnectionOptions connection,
               Store& store, std::vector<int> jobs, WorkerOptions options)
    : loop_(loop), store_(store), options_(std::move(options)),
      locks_(loop, std::move(connection)), queue_(std::move(jobs)) {
  std::reverse(queue_.begin(), queue_.end());  // back() is the next job
  // One timer, re-armed for each step: a worker does one thing at a time, and a timer is never
  // destroyed inside its own callback.
  timer_ = loop_.make_timer([this] {
    auto fn = std::move(pending_);
    fn();
  });
}

Worker::~Worker() {
  close();
}

void Worker::close() {
  timer_->stop();
  locks_.close();
}

void Worker::start() {
  locks_.start();
  next();
}

void Worker::after(Nanos d, std::function<void()> fn) {
  pending_ = std::move(fn);
  timer_->start(d);
}

void Worker::later(Nanos d) {
  after(d, [this] { next(); });
}

void Worker::next() {
  if (queue_.empty()) return;
  const int job = queue_.back();
  if (store_.done(job)) {  // someone else did it
    queue_.pop_back();
    return later(Nanos{0});
  }
  lock::LockRequest req;
  req.resource = "job:" + std::to_string(job);
  // A fresh owner per attempt: a lease this worker lost is never mistaken for the new one.
  req.owner = options_.name + "#" + std::to_string(++attempt_);
  req.ttl = options_.ttl;
  req.wait = std::chrono::milliseconds(500);
  req.auto_renew = true;
  locks_.lock(std::move(req), [this, job](std::error_code ec, lock::Lease lease) {
    if (ec) return later(options_.retry);  // busy, timed out, connection trouble: try again
    work(job, std::move(lease));
  });
}

void Worker::work(int job, lock::Lease lease) {
  if (store_.done(job) || (options_.fenced && !store_.begin(job, lease.token()))) {
    return finish(job, lease, store_.done(job));
  }
  // The work itself takes a while; all this time the lease must stay ours.
  const auto span = (options_.max_work - options_.min_work).count();
  const Nanos d = options_.min_work + Nanos(static_cast<std::int64_t>(
                                          loop_.random() % static_cast<std::uint64_t>(span + 1)));
  after(d, [this, job, lease] {
    const bool ok = store_.write(job, options_.name, options_.fenced ? lease.token() : 0);
    finish(job, lease, ok);
  });
}

void Worker::finish(int job, const lock::Lease& lease, bool done) {
  if (done) std::erase(queue_, job);
  // Not done (refused: a later holder has the job): try again, it will be done by then.
  locks_.release(lease, [this](std::error_code) { later(Nanos{0}); });
}

}  // namespace job_runner
