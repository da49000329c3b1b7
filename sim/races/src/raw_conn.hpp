// RawConn: a bare RESP2 client on a loop::Stream, for the strategies that need what
// loop::Connection refuses (two callers' WATCH ... EXEC interleaved on one socket).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockwire/lock/error.hpp"
#include "lockwire/loop/seam.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "strategy_util.hpp"

namespace lockwire::races::detail {

// A bare RESP2 connection with its own reply FIFO — no transaction lane, no reconnect. What a
// hand-rolled client (or a pool that hands one socket to two callers) does: lets two callers'
// WATCH ... EXEC sequences interleave on one socket, which loop::Connection refuses.
class RawConn final : public loop::StreamHandler {
 public:
  // One reply per command; scalars as text, integers as numbers, EXEC's array flattened.
  struct Reply {
    bool null = false, error = false;
    std::string text;
    std::optional<std::int64_t> num;
    std::vector<Reply> elems;
  };
  using Handler = std::function<void(Ec, const std::vector<Reply>&)>;

  RawConn(loop::Loop& loop, loop::Endpoint ep) : loop_(loop), ep_(std::move(ep)) {}
  ~RawConn() override { close(); }
  void start() { stream_ = loop_.connect(ep_, *this, std::chrono::seconds(1)); }
  void close() noexcept {
    if (stream_) stream_->close();
    stream_.reset();
    pending_.clear();
  }
  [[nodiscard]] std::size_t in_flight() const noexcept { return pending_.size(); }
  void send(std::vector<std::vector<std::string>> cmds, Handler h) {
    if (!stream_ || broken_) {
      loop_.post([h] { h(lock::Errc::connection, {}); });
      return;
    }
    std::string b;
    for (const auto& c : cmds) {
      std::vector<std::string_view> v(c.begin(), c.end());
      resp::append_command(b, std::span<const std::string_view>(v));
    }
    pending_.push_back(Pending{cmds.size(), {}, std::move(h)});
    if (connected_) {
      stream_->write(std::move(b));
    } else {
      unsent_.append(b);
    }
  }

  void on_connected(std::error_code ec) override {
    if (ec) return fail();
    connected_ = true;
    if (!unsent_.empty()) stream_->write(std::exchange(unsent_, {}));
  }
  void on_data(std::string_view bytes) override {
    in_.append(bytes);
    for (;;) {
      const auto r = parser_.parse(in_);
      if (r.status == resp::ParseResult::Status::incomplete) return;
      if (r.status == resp::ParseResult::Status::error) return fail();
      Reply v = convert(parser_.frame());
      in_.erase(0, r.consumed);
      if (pending_.empty()) continue;
      Pending& p = pending_.front();
      p.got.push_back(std::move(v));
      if (p.got.size() == p.expect) {
        Pending done = std::move(p);
        pending_.pop_front();
        done.h({}, done.got);
      }
    }
  }
  void on_closed(std::error_code) override { fail(); }

 private:
  struct Pending {
    std::size_t expect;
    std::vector<Reply> got;
    Handler h;
  };
  static Reply convert(const resp::Frame& f) {
    Reply v;
    if (f.empty()) return v;
    const resp::Node& n = f[0];
    if (n.type == resp::Type::null) {
      v.null = true;
    } else if (resp::is_aggregate(n.type)) {
      for (std::size_t i = 0; i < n.size; ++i) v.elems.push_back(convert(element(f, i)));
    } else {
      v.error = n.type == resp::Type::simple_error || n.type == resp::Type::blob_error;
      v.text = std::string(n.value);
      v.num = resp::to_int64(n);
    }
    return v;
  }
  void fail() {
    broken_ = true;
    auto p = std::move(pending_);
    pending_.clear();
    for (auto& x : p) x.h(lock::Errc::connection, {});
  }
  loop::Loop& loop_;
  loop::Endpoint ep_;
  std::unique_ptr<loop::Stream> stream_;
  resp::Parser parser_;
  std::string in_, unsent_;
  std::deque<Pending> pending_;
  bool connected_ = false, broken_ = false;
};

}  // namespace lockwire::races::detail
