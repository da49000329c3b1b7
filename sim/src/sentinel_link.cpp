// A sentinel's PING link to a data node (sentinel_impl.hpp): a plain RESP connection on the
// sentinel node's SimLoop. Redis' sentinel also sends INFO and publishes hellos on it; the
// model reads replication state from the models instead, so only PING's replies matter here.
#include <memory>
#include <string>
#include <utility>

#include "lockwire/resp/encoder.hpp"
#include "sentinel_impl.hpp"

namespace lockwire::sim::sentinel {

PingLink::~PingLink() {
  if (stream_) stream_->close();
}

void PingLink::connect() {
  if (state_ != State::down) return;
  state_ = State::connecting;
  in_.clear();
  // hiredis' async connect sets no timeout: the kernel's SYN retries decide (127 s).
  stream_ = from_.loop().connect(to_, *this, Nanos(127s));
}

void PingLink::drop() {
  if (state_ == State::down) return;
  // Called from the cron, never from one of this stream's callbacks: freed at once.
  if (stream_) stream_->close();
  stream_.reset();
  state_ = State::down;
  in_.clear();
}

void PingLink::ping() {
  if (state_ != State::up) return;
  std::string b;
  resp::append_command(b, {"PING"});
  stream_->write(std::move(b));
}

void PingLink::on_connected(std::error_code ec) {
  if (ec) return on_closed(ec);
  state_ = State::up;
}

void PingLink::on_data(std::string_view bytes) {
  in_.append(bytes);
  // PING's replies are single lines (+PONG, or an error such as -LOADING or -NOAUTH).
  std::size_t at = 0;
  for (std::size_t nl; (nl = in_.find("\r\n", at)) != std::string::npos; at = nl + 2) {
    const std::string_view line(in_.data() + at, nl - at);
    const bool valid =
        line == "+PONG" || line.starts_with("-LOADING") || line.starts_with("-MASTERDOWN");
    if (on_reply) on_reply(valid);
  }
  in_.erase(0, at);
}

void PingLink::on_closed(std::error_code) {
  // Not destroyed inside its own callback: freed by a later task of this node.
  from_.loop().post([dead = std::shared_ptr<loop::Stream>(std::move(stream_))] {});
  state_ = State::down;
  if (on_down) on_down();
}

}  // namespace lockwire::sim::sentinel
