// Redis' INFO (genRedisInfoString) for the sections and fields the model can answer: server,
// memory (used memory is the model's estimate), stats, replication. Sections come in Redis'
// order whatever the argument order, separated by a blank line; RESP3 gets a verbatim "txt"
// string. The fields are a subset of Redis', in Redis' order.
#include <cstdio>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

enum : unsigned { S_SERVER = 1, S_MEMORY = 2, S_STATS = 4, S_REPLICATION = 8 };

struct Section {
  const char* name;
  unsigned bit;
};
constexpr Section kSections[] = {
    {"server", S_SERVER},
    {"memory", S_MEMORY},
    {"stats", S_STATS},
    {"replication", S_REPLICATION},
};
constexpr unsigned kDefault = S_SERVER | S_MEMORY | S_STATS | S_REPLICATION;

void field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(":").append(value).append("\r\n");
}

void server(const Impl& s, std::string& out) {
  out += "# Server\r\n";
  field(out, "redis_version", "7.0.15");
  field(out, "redis_git_sha1", "00000000");
  field(out, "redis_git_dirty", "0");
  field(out, "redis_mode", "standalone");
  field(out, "arch_bits", "64");
  field(out, "server_time_usec", std::to_string(s.hooks.wall_us ? s.hooks.wall_us() : 0));
  field(out, "hz", "10");
  field(out, "configured_hz", "10");
}

void memory(const Impl& s, std::string& out) {
  const std::uint64_t used = s.used_memory();
  out += "# Memory\r\n";
  field(out, "used_memory", std::to_string(used));
  field(out, "used_memory_human", bytes_to_human(used));
  field(out, "maxmemory", std::to_string(s.maxmemory));
  field(out, "maxmemory_human", bytes_to_human(s.maxmemory));
  field(out, "maxmemory_policy", policy_name(s.policy));
}

void stats(const Impl& s, std::string& out) {
  out += "# Stats\r\n";
  field(out, "total_commands_processed", std::to_string(s.processed));
  field(out, "expired_keys", std::to_string(s.expired_keys));
  field(out, "evicted_keys", std::to_string(s.evicted_keys));
}

void replication(const Impl& s, std::string& out) {
  out += "# Replication\r\n";
  if (s.replica) {
    field(out, "role", "slave");
    field(out, "master_host", s.master_host);
    field(out, "master_port", std::to_string(s.master_port));
    field(out, "master_link_status", "up");
    field(out, "slave_read_only", "1");
    field(out, "connected_slaves", "0");
  } else {
    field(out, "role", "master");
    field(out, "connected_slaves", std::to_string(s.replica_acks.size()));
  }
  field(out, "master_failover_state", "no-failover");
  field(out, "master_repl_offset", std::to_string(s.repl_offset));
}

}  // namespace

std::string bytes_to_human(std::uint64_t n) {
  char buf[64];
  const char* units = "KMGTP";
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(n));
    return buf;
  }
  double scale = 1024;
  for (int i = 0; i < 5; ++i, scale *= 1024) {
    if (static_cast<double>(n) < scale * 1024) {
      std::snprintf(buf, sizeof buf, "%.2f%c", static_cast<double>(n) / scale, units[i]);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(n));
  return buf;
}

void cmd_info(Impl& s, Client& c, Args& a) {
  unsigned want = a.size() == 1 ? kDefault : 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (ieq(a[i], "default") || ieq(a[i], "all") || ieq(a[i], "everything")) want |= kDefault;
    for (auto& sec : kSections)
      if (ieq(a[i], sec.name)) want |= sec.bit;
  }
  std::string out;
  auto add = [&](unsigned bit, void (*gen)(const Impl&, std::string&)) {
    if (!(want & bit)) return;
    if (!out.empty()) out += "\r\n";
    gen(s, out);
  };
  add(S_SERVER, server);
  add(S_MEMORY, memory);
  add(S_STATS, stats);
  add(S_REPLICATION, replication);
  s.verbatim(c, out);
}

}  // namespace lockwire::sim::model
