// redis-server --sentinel's command table (sentinel.c, sentinelcmds): the connection commands
// of a data node, copied from its table, plus the commands a sentinel answers itself. SENTINEL,
// ROLE and INFO are the host's (Hooks::sentinel: sim/src/sentinel*.cpp knows the monitored
// masters); the model checks arity and subcommand names first, with the usual error texts.
#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

void sentinel_forward(Impl& s, Client& c, Args& a) {
  if (!s.hooks.sentinel) return s.error(c, "sentinel state unavailable");
  c.out += s.hooks.sentinel(a, c.resp);
  s.mark(c);
}

// sentinelPublishCommand: only the hello channel, which the model's sentinels do not use.
void sentinel_publish(Impl& s, Client& c, Args& a) {
  if (a[1] != "__sentinel__:hello")
    return s.error(c, "Only HELLO messages are accepted by Sentinel instances.");
  s.integer(c, s.publish(a[1], a[2]));
}

}  // namespace

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

const std::vector<CmdDef>& RedisModel::Impl::sentinel_table() {
  static const std::vector<CmdDef> t = [] {
    std::vector<CmdDef> v;
    for (const char* name : {"ping", "hello", "auth", "client", "subscribe", "unsubscribe",
                             "psubscribe", "punsubscribe"}) {
      v.push_back(*lookup_in(table(), name));
    }
    constexpr std::uint32_t ADM = C_ADMIN | C_SLOW | C_DANGEROUS;
    constexpr std::uint32_t LS = F_LOADING | F_STALE;
    v.push_back({"publish", 3, F_PUBSUB | LS | F_FAST, sentinel_publish, 0, 0, 0,
                 C_PUBSUB | C_FAST, {}});
    v.push_back({"info", -1, LS, sentinel_forward, 0, 0, 0, C_SLOW | C_DANGEROUS, {}});
    v.push_back({"role", 1, F_LOADING | F_STALE | F_FAST, sentinel_forward, 0, 0, 0,
                 C_ADMIN | C_FAST | C_DANGEROUS, {}});
    v.push_back({"sentinel",
                 -2,
                 0,
                 nullptr,
                 0,
                 0,
                 0,
                 ADM,
                 {
                     {"get-master-addr-by-name", 3, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                     {"master", 3, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                     {"masters", 2, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                     {"failover", 3, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                     {"myid", 2, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                     {"ckquorum", 3, LS, sentinel_forward, 0, 0, 0, ADM, {}},
                 }});
    return v;
  }();
  return t;
}

std::int64_t RedisModel::publish(const std::string& channel, const std::string& message) {
  const std::int64_t n = impl_->publish(channel, message);
  impl_->before_sleep();
  impl_->flush_outputs();
  return n;
}

}  // namespace lockwire::sim
