// What a sentinel answers (sentinel.c's sentinelCommand, sentinelRoleCommand, sentinelInfo), byte
// for byte as redis-server 7.0.15 in sentinel mode for the fields lockwire reads; values that
// depend on the run (ports, run ids, ages in ms) are modelled plausibly and masked by the
// differential suite (tests/sim/sentinel_differential_test.cpp).
#include <cctype>
#include <string>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "sentinel_impl.hpp"

namespace lockwire::sim {

namespace {

using sentinel::kNone;

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

std::string ms_since(Nanos now, Nanos t) {
  if (t == kNone) return "0";
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count());
}

void error(std::string& out, std::string_view msg) {
  resp::append_error(out, msg);
}

}  // namespace

std::size_t SimSentinels::Impl::reported_master(std::size_t i) const {
  // During a failover the leader already names the promoted replica once it saw the promotion
  // (failover-state reconf-slaves, ~90 ms before +switch-master).
  if (fo.active && fo.leader == i && fo.named) {
    return fo.to;
  }
  return s[i].master;
}

std::string SimSentinels::Impl::reply(std::size_t i, const std::vector<std::string>& argv,
                                      int resp_version) {
  const resp::Proto proto = resp_version == 2 ? resp::Proto::resp2 : resp::Proto::resp3;
  const Sentinel& st = s[i];
  const Nanos now = world.now();
  std::string out;
  const std::string& cmd = argv[0];
  if (ieq(cmd, "role")) {
    resp::append_array_header(out, 2);
    resp::append_blob(out, "sentinel");
    resp::append_array_header(out, 1);
    resp::append_blob(out, cfg().master_name);
    return out;
  }
  if (ieq(cmd, "info")) {
    const loop::Endpoint ep = data[st.master].redis->endpoint();
    const char* status = st.odown ? "odown" : st.inst[st.master].sdown ? "sdown" : "ok";
    const std::string text =
        "# Sentinel\r\nsentinel_masters:1\r\nsentinel_tilt:0\r\nsentinel_tilt_since_seconds:-1\r\n"
        "sentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\n"
        "sentinel_simulate_failure_flags:0\r\nmaster0:name=" +
        cfg().master_name + ",status=" + status + ",address=" + ep.host + ":" +
        std::to_string(ep.port) + ",slaves=" + std::to_string(data.size() - 1) +
        ",sentinels=" + std::to_string(s.size()) + "\r\n";
    resp::append_blob(out, text);
    return out;
  }
  // SENTINEL <sub> ...: the model checked arity and the subcommand's name.
  const std::string& sub = argv[1];
  if (ieq(sub, "myid")) {
    resp::append_blob(out, st.runid);
    return out;
  }
  const bool known = argv.size() >= 3 && argv[2] == cfg().master_name;
  if (ieq(sub, "get-master-addr-by-name")) {
    if (!known) {
      resp::append_null_array(out, proto);
      return out;
    }
    const loop::Endpoint ep = data[reported_master(i)].redis->endpoint();
    resp::append_array_header(out, 2);
    resp::append_blob(out, ep.host);
    resp::append_blob(out, std::to_string(ep.port));
    return out;
  }
  auto master_info = [&] {
    const std::size_t m = st.master;
    const Instance& in = st.inst[m];
    const loop::Endpoint ep = data[m].redis->endpoint();
    std::vector<std::pair<std::string, std::string>> f;
    std::string flags;
    if (in.sdown) flags += "s_down,";
    if (st.odown) flags += "o_down,";
    flags += "master,";
    if (!in.link->connected()) flags += "disconnected,";
    const bool leading = fo.active && fo.leader == i;
    if (leading) flags += "failover_in_progress,";
    flags.pop_back();
    f.emplace_back("name", cfg().master_name);
    f.emplace_back("ip", ep.host);
    f.emplace_back("port", std::to_string(ep.port));
    f.emplace_back("runid", data[m].runid);
    f.emplace_back("flags", flags);
    f.emplace_back("link-pending-commands", in.pending_since != kNone ? "1" : "0");
    f.emplace_back("link-refcount", "1");
    if (leading) f.emplace_back("failover-state", fo.promoted != kNone ? "wait_promotion" : "select_slave");
    f.emplace_back("last-ping-sent", ms_since(now, in.pending_since));
    // Redis starts both at the link's creation (createInstanceLink).
    f.emplace_back("last-ok-ping-reply", ms_since(now, in.last_ok == kNone ? in.created : in.last_ok));
    f.emplace_back("last-ping-reply",
                   ms_since(now, in.last_reply == kNone ? in.created : in.last_reply));
    if (in.sdown) f.emplace_back("s-down-time", ms_since(now, in.sdown_since));
    if (st.odown) f.emplace_back("o-down-time", ms_since(now, st.odown_since));
    f.emplace_back("down-after-milliseconds",
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      cfg().down_after)
                                      .count()));
    // INFO every 10 s (every 1 s while the master is down or failing over).
    const Nanos info_period = in.sdown || leading ? Nanos(1s) : Nanos(10s);
    f.emplace_back("info-refresh", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      now % info_period)
                                                      .count()));
    f.emplace_back("role-reported", in.reported_master ? "master" : "slave");
    f.emplace_back("role-reported-time", ms_since(now, in.role_changed));
    f.emplace_back("config-epoch", std::to_string(st.config_epoch));
    f.emplace_back("num-slaves", std::to_string(data.size() - 1));
    f.emplace_back("num-other-sentinels", std::to_string(s.size() - 1));
    f.emplace_back("quorum", std::to_string(cfg().quorum));
    f.emplace_back("failover-timeout",
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      cfg().failover_timeout)
                                      .count()));
    f.emplace_back("parallel-syncs", std::to_string(cfg().parallel_syncs));
    resp::append_map_header(out, f.size(), proto);
    for (const auto& [k, v] : f) {
      resp::append_blob(out, k);
      resp::append_blob(out, v);
    }
  };
  if (ieq(sub, "masters")) {
    resp::append_array_header(out, 1);
    master_info();
    return out;
  }
  if (!known) {
    error(out, "ERR No such master with that name");
    return out;
  }
  if (ieq(sub, "master")) {
    master_info();
    return out;
  }
  if (ieq(sub, "failover")) {
    const std::string err = start_failover(i, true);
    if (err.empty()) {
      resp::append_simple(out, "OK");
    } else {
      error(out, err.substr(1));
    }
    return out;
  }
  if (ieq(sub, "ckquorum")) {
    int usable = 0;
    for (std::size_t j = 0; j < s.size(); ++j)
      if (hears(i, j)) ++usable;
    const int majority = static_cast<int>(s.size() / 2 + 1);
    if (usable < cfg().quorum || usable < majority) {
      error(out, "NOQUORUM " + std::to_string(usable) + " usable Sentinels. Not enough available "
                 "Sentinels to reach the specified quorum for this master. Not enough available "
                 "Sentinels to reach the majority and authorize a failover");
    } else {
      resp::append_simple(out, "OK " + std::to_string(usable) +
                                   " usable Sentinels. Quorum and failover authorization can be "
                                   "reached");
    }
    return out;
  }
  error(out, "ERR Unknown sentinel subcommand");
  return out;
}

}  // namespace lockwire::sim
