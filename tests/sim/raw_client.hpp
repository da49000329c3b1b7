// A raw RESP client on the simulated network for the simulator's own suites: it writes commands
// as bytes and keeps every frame it receives (replies and pushes), so each byte is visible.
#pragma once

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/sim/world.hpp"
#include "resp_frames.hpp"

namespace lockwire::sim::test {

inline std::string enc(std::initializer_list<std::string_view> args) {
  std::string out = "*";
  out += std::to_string(args.size());
  out += "\r\n";
  for (auto a : args) {
    out += "$";
    out += std::to_string(a.size());
    out += "\r\n";
    out.append(a);
    out += "\r\n";
  }
  return out;
}

// Sends commands, collects frames.
struct Raw : loop::StreamHandler {
  World& w;
  std::unique_ptr<loop::Stream> s;
  std::string buf;
  std::vector<std::string> frames;
  bool connected = false, closed = false;
  Raw(World& world, Node& from, const loop::Endpoint& ep) : w(world) {
    s = from.loop().connect(ep, *this, std::chrono::seconds(1));
    w.run_until([&] { return connected || closed; }, w.now() + std::chrono::seconds(2));
  }
  void on_connected(std::error_code ec) override {
    connected = !ec;
    closed = static_cast<bool>(ec);
  }
  void on_data(std::string_view b) override {
    buf.append(b);
    std::size_t rest = 0;
    for (auto& f : test::split_frames(buf, &rest)) frames.push_back(f);
    buf.erase(0, rest);
  }
  void on_closed(std::error_code) override { closed = true; }
  // Sends one command and runs the world until its reply (or a close / 2 s of virtual time).
  std::string call(std::initializer_list<std::string_view> args) {
    const std::size_t before = frames.size();
    s->write(enc(args));
    w.run_until([&] { return frames.size() > before || closed; },
                w.now() + std::chrono::seconds(2));
    return frames.size() > before ? frames[before] : std::string("<none>");
  }
};

}  // namespace lockwire::sim::test
