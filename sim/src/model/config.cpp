// Redis' config.c, as one file as Redis keeps it (most of its length is the parameter table):
// CONFIG GET / SET / RESETSTAT over 7.0.15's parameter table — every
// parameter with its aliases, type, bounds and default, answering and failing as Redis does
// (numeric parsing with memory units, percentages and octal, bound errors, enum lists, immutable
// and protected parameters, duplicates, all-or-nothing with the old values restored). Most
// parameters only keep their value; those the model acts on are bound to its state: maxmemory,
// maxmemory-policy, maxclients, notify-keyspace-events, client-output-buffer-limit, requirepass
// (the default user's password), proto-max-bulk-len, client-query-buffer-limit, hz,
// tracking-table-max-keys, replicaof (read-only), port, dir, databases, enable-debug-command.
// One file, as Redis' model is split by Redis' own sources (docs/design.md): most of its length is
// the parameter table itself, one row per parameter; the code around it is one parser and one
// setter per type.
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

enum Type : std::uint8_t {
  T_BOOL,
  T_STRING,
  T_ENUM,
  T_INT,
  T_UINT,
  T_ULONG,
  T_LL,
  T_ULL,
  T_SIZET,
  T_SSIZET,
  T_SPECIAL
};
enum : unsigned { IMM = 1, PROT = 2, HID = 4, DENYL = 8, SENS = 16, MULTI = 32 };
enum : unsigned { N_MEM = 1, N_PCT = 2, N_OCT = 4 };

constexpr long long kIntMin = INT_MIN, kIntMax = INT_MAX, kUIntMax = UINT_MAX;
constexpr long long kLLMax = LLONG_MAX, kULLMax = -1;  // ULLONG_MAX, compared unsigned

struct EnumVal {
  const char* name;
  int val;
};
constexpr EnumVal kSupervised[] = {{"upstart", 1}, {"systemd", 2}, {"auto", 3}, {"no", 0}, {}};
constexpr EnumVal kSyslog[] = {{"user", 8},    {"local0", 128}, {"local1", 136},
                               {"local2", 144}, {"local3", 152}, {"local4", 160},
                               {"local5", 168}, {"local6", 176}, {"local7", 184}, {}};
constexpr EnumVal kDisklessLoad[] = {{"disabled", 0}, {"on-empty-db", 1}, {"swapdb", 2}, {}};
constexpr EnumVal kLoglevel[] = {{"debug", 0}, {"verbose", 1}, {"notice", 2}, {"warning", 3}, {}};
constexpr EnumVal kPolicy[] = {{"volatile-lru", 0},   {"volatile-lfu", 1},  {"volatile-random", 2},
                               {"volatile-ttl", 3},   {"allkeys-lru", 4},   {"allkeys-lfu", 5},
                               {"allkeys-random", 6}, {"noeviction", 7},    {}};
constexpr EnumVal kFsync[] = {{"everysec", 1}, {"always", 2}, {"no", 0}, {}};
constexpr EnumVal kOomAdj[] = {{"no", 0}, {"yes", 1}, {"relative", 1}, {"absolute", 2}, {}};
constexpr EnumVal kAclPubsub[] = {{"allchannels", 1}, {"resetchannels", 0}, {}};
constexpr EnumVal kSanitize[] = {{"no", 0}, {"yes", 1}, {"clients", 2}, {}};
constexpr EnumVal kProtected[] = {{"no", 0}, {"yes", 1}, {"local", 2}, {}};
constexpr EnumVal kEndpoint[] = {{"ip", 0}, {"hostname", 1}, {"unknown-endpoint", 2}, {}};
constexpr EnumVal kPropagation[] = {{"ignore", 0}, {"panic", 1}, {"panic-on-replicas", 2}, {}};
constexpr EnumVal kShutdown[] = {{"default", 0}, {"save", 1}, {"nosave", 2}, {"now", 4},
                                 {"force", 8},   {}};
constexpr EnumVal kTlsAuth[] = {{"no", 0}, {"yes", 1}, {"optional", 2}, {}};

struct ParamDef {
  const char* name;
  const char* alias;
  unsigned flags;
  Type type;
  long long lo, hi;
  unsigned num;     // N_* for numeric types
  const char* def;  // the default as CONFIG GET prints it
  const EnumVal* enums;
};

// redis-server 7.0.15's static_configs (with TLS, as Debian builds it), in its order.
const ParamDef kDefs[] = {
    {"rdbchecksum", nullptr, IMM, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"daemonize", nullptr, IMM, T_BOOL, 0, 0, 0, "no", nullptr},
    {"io-threads-do-reads", nullptr, IMM, T_BOOL, 0, 0, 0, "no", nullptr},
    {"always-show-logo", nullptr, IMM, T_BOOL, 0, 0, 0, "no", nullptr},
    {"protected-mode", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"rdbcompression", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"rdb-del-sync-files", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"activerehashing", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"stop-writes-on-bgsave-error", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"set-proc-title", nullptr, IMM, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"dynamic-hz", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"lazyfree-lazy-eviction", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"lazyfree-lazy-expire", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"lazyfree-lazy-server-del", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"lazyfree-lazy-user-del", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"lazyfree-lazy-user-flush", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"repl-disable-tcp-nodelay", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"repl-diskless-sync", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"aof-rewrite-incremental-fsync", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"no-appendfsync-on-rewrite", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"cluster-require-full-coverage", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"rdb-save-incremental-fsync", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"aof-load-truncated", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"aof-use-rdb-preamble", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"aof-timestamp-enabled", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"cluster-replica-no-failover", "cluster-slave-no-failover", 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"replica-lazy-flush", "slave-lazy-flush", 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"replica-serve-stale-data", "slave-serve-stale-data", 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"replica-read-only", "slave-read-only", 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"replica-ignore-maxmemory", "slave-ignore-maxmemory", 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"jemalloc-bg-thread", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"activedefrag", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"syslog-enabled", nullptr, IMM, T_BOOL, 0, 0, 0, "no", nullptr},
    {"cluster-enabled", nullptr, IMM, T_BOOL, 0, 0, 0, "no", nullptr},
    {"appendonly", nullptr, DENYL, T_BOOL, 0, 0, 0, "no", nullptr},
    {"cluster-allow-reads-when-down", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"cluster-allow-pubsubshard-when-down", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"crash-log-enabled", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"crash-memcheck-enabled", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"use-exit-on-panic", nullptr, HID, T_BOOL, 0, 0, 0, "no", nullptr},
    {"disable-thp", nullptr, IMM, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"cluster-allow-replica-migration", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"replica-announced", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"latency-tracking", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"aof-disable-auto-gc", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"replica-ignore-disk-write-errors", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"aclfile", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"unixsocket", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"pidfile", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"replica-announce-ip", "slave-announce-ip", 0, T_STRING, 0, 0, 0, "", nullptr},
    {"masteruser", nullptr, SENS, T_STRING, 0, 0, 0, "", nullptr},
    {"cluster-announce-ip", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"cluster-config-file", nullptr, IMM, T_STRING, 0, 0, 0, "nodes.conf", nullptr},
    {"cluster-announce-hostname", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"syslog-ident", nullptr, IMM, T_STRING, 0, 0, 0, "redis", nullptr},
    {"dbfilename", nullptr, PROT, T_STRING, 0, 0, 0, "dump.rdb", nullptr},
    {"appendfilename", nullptr, IMM, T_STRING, 0, 0, 0, "appendonly.aof", nullptr},
    {"appenddirname", nullptr, IMM, T_STRING, 0, 0, 0, "appendonlydir", nullptr},
    {"server_cpulist", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"bio_cpulist", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"aof_rewrite_cpulist", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"bgsave_cpulist", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"ignore-warnings", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"proc-title-template", nullptr, 0, T_STRING, 0, 0, 0, "{title} {listen-addr} {server-mode}", nullptr},
    {"bind-source-addr", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"logfile", nullptr, IMM, T_STRING, 0, 0, 0, "", nullptr},
    {"masterauth", nullptr, SENS, T_STRING, 0, 0, 0, "", nullptr},
    {"requirepass", nullptr, SENS, T_STRING, 0, 0, 0, "", nullptr},
    {"supervised", nullptr, IMM, T_ENUM, 0, 0, 0, "no", kSupervised},
    {"syslog-facility", nullptr, IMM, T_ENUM, 0, 0, 0, "local0", kSyslog},
    {"repl-diskless-load", nullptr, DENYL, T_ENUM, 0, 0, 0, "disabled", kDisklessLoad},
    {"loglevel", nullptr, 0, T_ENUM, 0, 0, 0, "notice", kLoglevel},
    {"maxmemory-policy", nullptr, 0, T_ENUM, 0, 0, 0, "noeviction", kPolicy},
    {"appendfsync", nullptr, 0, T_ENUM, 0, 0, 0, "everysec", kFsync},
    {"oom-score-adj", nullptr, 0, T_ENUM, 0, 0, 0, "no", kOomAdj},
    {"acl-pubsub-default", nullptr, 0, T_ENUM, 0, 0, 0, "resetchannels", kAclPubsub},
    {"sanitize-dump-payload", nullptr, 0, T_ENUM, 0, 0, 0, "no", kSanitize},
    {"enable-protected-configs", nullptr, IMM, T_ENUM, 0, 0, 0, "no", kProtected},
    {"enable-debug-command", nullptr, IMM, T_ENUM, 0, 0, 0, "no", kProtected},
    {"enable-module-command", nullptr, IMM, T_ENUM, 0, 0, 0, "no", kProtected},
    {"cluster-preferred-endpoint-type", nullptr, 0, T_ENUM, 0, 0, 0, "ip", kEndpoint},
    {"propagation-error-behavior", nullptr, 0, T_ENUM, 0, 0, 0, "ignore", kPropagation},
    {"shutdown-on-sigint", nullptr, MULTI, T_ENUM, 0, 0, 0, "default", kShutdown},
    {"shutdown-on-sigterm", nullptr, MULTI, T_ENUM, 0, 0, 0, "default", kShutdown},
    {"databases", nullptr, IMM, T_INT, 1, kIntMax, 0, "16", nullptr},
    {"port", nullptr, 0, T_INT, 0, 65535, 0, "6379", nullptr},
    {"io-threads", nullptr, IMM, T_INT, 1, 128, 0, "1", nullptr},
    {"auto-aof-rewrite-percentage", nullptr, 0, T_INT, 0, kIntMax, 0, "100", nullptr},
    {"cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, T_INT, 0, kIntMax, 0, "10", nullptr},
    {"list-max-listpack-size", "list-max-ziplist-size", 0, T_INT, kIntMin, kIntMax, 0, "-2", nullptr},
    {"tcp-keepalive", nullptr, 0, T_INT, 0, kIntMax, 0, "300", nullptr},
    {"cluster-migration-barrier", nullptr, 0, T_INT, 0, kIntMax, 0, "1", nullptr},
    {"active-defrag-cycle-min", nullptr, 0, T_INT, 1, 99, 0, "1", nullptr},
    {"active-defrag-cycle-max", nullptr, 0, T_INT, 1, 99, 0, "25", nullptr},
    {"active-defrag-threshold-lower", nullptr, 0, T_INT, 0, 1000, 0, "10", nullptr},
    {"active-defrag-threshold-upper", nullptr, 0, T_INT, 0, 1000, 0, "100", nullptr},
    {"lfu-log-factor", nullptr, 0, T_INT, 0, kIntMax, 0, "10", nullptr},
    {"lfu-decay-time", nullptr, 0, T_INT, 0, kIntMax, 0, "1", nullptr},
    {"replica-priority", "slave-priority", 0, T_INT, 0, kIntMax, 0, "100", nullptr},
    {"repl-diskless-sync-delay", nullptr, 0, T_INT, 0, kIntMax, 0, "5", nullptr},
    {"maxmemory-samples", nullptr, 0, T_INT, 1, kIntMax, 0, "5", nullptr},
    {"maxmemory-eviction-tenacity", nullptr, 0, T_INT, 0, 100, 0, "10", nullptr},
    {"timeout", nullptr, 0, T_INT, 0, kIntMax, 0, "0", nullptr},
    {"replica-announce-port", "slave-announce-port", 0, T_INT, 0, 65535, 0, "0", nullptr},
    {"tcp-backlog", nullptr, IMM, T_INT, 0, kIntMax, 0, "511", nullptr},
    {"cluster-port", nullptr, IMM, T_INT, 0, 65535, 0, "0", nullptr},
    {"cluster-announce-bus-port", nullptr, 0, T_INT, 0, 65535, 0, "0", nullptr},
    {"cluster-announce-port", nullptr, 0, T_INT, 0, 65535, 0, "0", nullptr},
    {"cluster-announce-tls-port", nullptr, 0, T_INT, 0, 65535, 0, "0", nullptr},
    {"repl-timeout", nullptr, 0, T_INT, 1, kIntMax, 0, "60", nullptr},
    {"repl-ping-replica-period", "repl-ping-slave-period", 0, T_INT, 1, kIntMax, 0, "10", nullptr},
    {"list-compress-depth", nullptr, 0, T_INT, 0, kIntMax, 0, "0", nullptr},
    {"rdb-key-save-delay", nullptr, HID, T_INT, kIntMin, kIntMax, 0, "0", nullptr},
    {"key-load-delay", nullptr, HID, T_INT, kIntMin, kIntMax, 0, "0", nullptr},
    {"active-expire-effort", nullptr, 0, T_INT, 1, 10, 0, "1", nullptr},
    {"hz", nullptr, 0, T_INT, 0, kIntMax, 0, "10", nullptr},
    {"min-replicas-to-write", "min-slaves-to-write", 0, T_INT, 0, kIntMax, 0, "0", nullptr},
    {"min-replicas-max-lag", "min-slaves-max-lag", 0, T_INT, 0, kIntMax, 0, "10", nullptr},
    {"watchdog-period", nullptr, HID, T_INT, 0, kIntMax, 0, "0", nullptr},
    {"shutdown-timeout", nullptr, 0, T_INT, 0, kIntMax, 0, "10", nullptr},
    {"repl-diskless-sync-max-replicas", nullptr, 0, T_INT, 0, kIntMax, 0, "0", nullptr},
    {"maxclients", nullptr, 0, T_UINT, 1, kUIntMax, 0, "10000", nullptr},
    {"unixsocketperm", nullptr, IMM, T_UINT, 0, 0777, N_OCT, "0", nullptr},
    {"socket-mark-id", nullptr, IMM, T_UINT, 0, kUIntMax, 0, "0", nullptr},
    {"active-defrag-max-scan-fields", nullptr, 0, T_ULONG, 1, kLLMax, 0, "1000", nullptr},
    {"slowlog-max-len", nullptr, 0, T_ULONG, 0, kLLMax, 0, "128", nullptr},
    {"acllog-max-len", nullptr, 0, T_ULONG, 0, kLLMax, 0, "128", nullptr},
    {"busy-reply-threshold", "lua-time-limit", 0, T_LL, 0, kLLMax, 0, "5000", nullptr},
    {"cluster-node-timeout", nullptr, 0, T_LL, 0, kLLMax, 0, "15000", nullptr},
    {"slowlog-log-slower-than", nullptr, 0, T_LL, -1, kLLMax, 0, "10000", nullptr},
    {"latency-monitor-threshold", nullptr, 0, T_LL, 0, kLLMax, 0, "0", nullptr},
    {"proto-max-bulk-len", nullptr, 0, T_LL, 1048576, kLLMax, N_MEM, "536870912", nullptr},
    {"stream-node-max-entries", nullptr, 0, T_LL, 0, kLLMax, 0, "100", nullptr},
    {"repl-backlog-size", nullptr, 0, T_LL, 1, kLLMax, N_MEM, "1048576", nullptr},
    {"maxmemory", nullptr, 0, T_ULL, 0, kULLMax, N_MEM, "0", nullptr},
    {"cluster-link-sendbuf-limit", nullptr, 0, T_ULL, 0, kULLMax, N_MEM, "0", nullptr},
    {"hash-max-listpack-entries", "hash-max-ziplist-entries", 0, T_SIZET, 0, kLLMax, 0, "512", nullptr},
    {"set-max-intset-entries", nullptr, 0, T_SIZET, 0, kLLMax, 0, "512", nullptr},
    {"zset-max-listpack-entries", "zset-max-ziplist-entries", 0, T_SIZET, 0, kLLMax, 0, "128", nullptr},
    {"active-defrag-ignore-bytes", nullptr, 0, T_SIZET, 1, kLLMax, N_MEM, "104857600", nullptr},
    {"hash-max-listpack-value", "hash-max-ziplist-value", 0, T_SIZET, 0, kLLMax, N_MEM, "64", nullptr},
    {"stream-node-max-bytes", nullptr, 0, T_SIZET, 0, kLLMax, N_MEM, "4096", nullptr},
    {"zset-max-listpack-value", "zset-max-ziplist-value", 0, T_SIZET, 0, kLLMax, N_MEM, "64", nullptr},
    {"hll-sparse-max-bytes", nullptr, 0, T_SIZET, 0, kLLMax, N_MEM, "3000", nullptr},
    {"tracking-table-max-keys", nullptr, 0, T_SIZET, 0, kLLMax, 0, "1000000", nullptr},
    {"client-query-buffer-limit", nullptr, 0, T_SIZET, 1048576, kLLMax, N_MEM, "1073741824", nullptr},
    {"maxmemory-clients", nullptr, 0, T_SSIZET, -100, kLLMax, N_MEM|N_PCT, "0", nullptr},
    {"repl-backlog-ttl", nullptr, 0, T_LL, 0, kLLMax, 0, "3600", nullptr},
    {"auto-aof-rewrite-min-size", nullptr, 0, T_LL, 0, kLLMax, N_MEM, "67108864", nullptr},
    {"loading-process-events-interval-bytes", nullptr, HID, T_LL, 1024, kIntMax, 0, "2097152", nullptr},
    {"tls-port", nullptr, 0, T_INT, 0, 65535, 0, "0", nullptr},
    {"tls-session-cache-size", nullptr, 0, T_INT, 0, kIntMax, 0, "20480", nullptr},
    {"tls-session-cache-timeout", nullptr, 0, T_INT, 0, kIntMax, 0, "300", nullptr},
    {"tls-cluster", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"tls-replication", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"tls-auth-clients", nullptr, 0, T_ENUM, 0, 0, 0, "yes", kTlsAuth},
    {"tls-prefer-server-ciphers", nullptr, 0, T_BOOL, 0, 0, 0, "no", nullptr},
    {"tls-session-caching", nullptr, 0, T_BOOL, 0, 0, 0, "yes", nullptr},
    {"tls-cert-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-key-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-key-file-pass", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-client-cert-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-client-key-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-client-key-file-pass", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-dh-params-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-ca-cert-file", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-ca-cert-dir", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-protocols", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-ciphers", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"tls-ciphersuites", nullptr, 0, T_STRING, 0, 0, 0, "", nullptr},
    {"dir", nullptr, PROT | DENYL, T_SPECIAL, 0, 0, 0, "", nullptr},
    {"save", nullptr, MULTI, T_SPECIAL, 0, 0, 0, "3600 1 300 100 60 10000", nullptr},
    {"client-output-buffer-limit", nullptr, MULTI, T_SPECIAL, 0, 0, 0, "", nullptr},
    {"oom-score-adj-values", nullptr, MULTI, T_SPECIAL, 0, 0, 0, "0 200 800", nullptr},
    {"notify-keyspace-events", nullptr, 0, T_SPECIAL, 0, 0, 0, "", nullptr},
    {"bind", nullptr, MULTI, T_SPECIAL, 0, 0, 0, "* -::*", nullptr},
    {"replicaof", "slaveof", IMM | MULTI, T_SPECIAL, 0, 0, 0, "", nullptr},
    {"latency-tracking-info-percentiles", nullptr, MULTI, T_SPECIAL, 0, 0, 0, "50 99 99.9",
     nullptr},
};

// A name CONFIG knows: the parameter and the name as the table spells it (an alias is a
// parameter of its own name sharing the canonical one's value).
struct Named {
  const ParamDef* def = nullptr;
  const char* name = nullptr;
};

Named lookup_param(std::string_view name) {
  for (const auto& d : kDefs) {
    if (ieq(d.name, name)) return {&d, d.name};
    if (d.alias != nullptr && ieq(d.alias, name)) return {&d, d.alias};
  }
  return {};
}

bool is_unsigned(Type t) {
  return t == T_UINT || t == T_ULL || t == T_SIZET || t == T_ULONG;
}

// Redis' memtoull: digits, then an optional unit (b k kb m mb g gb, any case); no sign, no
// fraction; an overlong number saturates (strtoull) and the multiplication wraps.
bool parse_memory(std::string_view s, std::uint64_t& out) {
  if (!s.empty() && s[0] == '-') return false;
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  const std::string_view unit = s.substr(digits);
  std::uint64_t mul = 0;
  struct Unit {
    const char* name;
    std::uint64_t mul;
  };
  for (const Unit& u : {Unit{"", 1}, Unit{"b", 1}, Unit{"k", 1000}, Unit{"kb", 1024},
                        Unit{"m", 1000 * 1000}, Unit{"mb", 1024 * 1024},
                        Unit{"g", 1000ull * 1000 * 1000}, Unit{"gb", 1024ull * 1024 * 1024}})
    if (ieq(unit, u.name)) mul = u.mul;
  if (mul == 0 || digits >= 128) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    v = v > (~0ull - d) / 10 ? ~0ull : v * 10 + d;
  }
  out = v * mul;
  return true;
}

// numericParseString
bool parse_numeric(const ParamDef& d, const std::string& v, long long& out, std::string& err) {
  if (d.num & N_MEM) {
    std::uint64_t u = 0;
    if (parse_memory(v, u)) {
      out = static_cast<long long>(u);
      return true;
    }
  }
  std::int64_t ll = 0;
  if ((d.num & N_PCT) && v.size() > 1 && v.back() == '%' &&
      string2ll(std::string_view(v).substr(0, v.size() - 1), ll) && ll >= 0) {
    out = -ll;
    return true;
  }
  if (d.num & N_OCT) {
    char* end = nullptr;
    errno = 0;
    const long long o = std::strtoll(v.c_str(), &end, 8);
    if (errno == 0 && *end == '\0') {
      out = o;
      return true;
    }
  }
  if (d.num == 0 && string2ll(v, ll)) {
    out = ll;
    return true;
  }
  if ((d.num & N_MEM) && (d.num & N_PCT)) {
    err = "argument must be a memory or percent value";
  } else if (d.num & N_MEM) {
    err = "argument must be a memory value";
  } else if (d.num & N_OCT) {
    err = "argument couldn't be parsed as an octal number";
  } else {
    err = "argument couldn't be parsed into an integer";
  }
  return false;
}

// numericBoundaryCheck
bool check_bounds(const ParamDef& d, long long ll, std::string& err) {
  char buf[160];
  if (is_unsigned(d.type)) {
    const auto u = static_cast<unsigned long long>(ll);
    const auto lo = static_cast<unsigned long long>(d.lo);
    const auto hi = static_cast<unsigned long long>(d.hi);
    if (u > hi || u < lo) {
      std::snprintf(buf, sizeof buf,
                    (d.num & N_OCT) ? "argument must be between %llo and %llo inclusive"
                                    : "argument must be between %llu and %llu inclusive",
                    lo, hi);
      err = buf;
      return false;
    }
    return true;
  }
  if ((d.num & N_PCT) && ll < 0) {
    if (ll < d.lo) {
      std::snprintf(buf, sizeof buf, "percentage argument must be less or equal to %lld", -d.lo);
      err = buf;
      return false;
    }
    return true;
  }
  if (ll > d.hi || ll < d.lo) {
    std::snprintf(buf, sizeof buf, "argument must be between %lld and %lld inclusive", d.lo,
                  d.hi);
    err = buf;
    return false;
  }
  return true;
}

std::string format_numeric(const ParamDef& d, long long v) {
  char buf[64];
  if ((d.num & N_PCT) && v < 0) {
    std::snprintf(buf, sizeof buf, "%lld%%", -v);
  } else if (d.num & N_MEM) {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  } else if (d.num & N_OCT) {
    std::snprintf(buf, sizeof buf, "%llo", v);
  } else if (is_unsigned(d.type)) {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%lld", v);
  }
  return buf;
}

// sdssplitlen(value, " "): empty tokens kept, nothing for an empty value.
std::vector<std::string> split_spaces(const std::string& v) {
  std::vector<std::string> out;
  if (v.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const auto sp = v.find(' ', start);
    out.push_back(v.substr(start, sp == std::string::npos ? std::string::npos : sp - start));
    if (sp == std::string::npos) break;
    start = sp + 1;
  }
  return out;
}

int enum_value(const EnumVal* e, const std::vector<std::string>& argv, bool bitflags) {
  if (argv.empty() || (!bitflags && argv.size() != 1)) return INT_MIN;
  int values = 0;
  for (auto& a : argv) {
    bool matched = false;
    for (const EnumVal* x = e; x->name != nullptr; ++x) {
      if (ieq(a, x->name)) {
        values |= x->val;
        matched = true;
      }
    }
    if (!matched) return INT_MIN;
  }
  return values;
}

std::string enum_name(const EnumVal* e, int values, bool bitflags) {
  std::string names;
  int unmatched = values;
  for (const EnumVal* x = e; x->name != nullptr; ++x) {
    if (values == x->val) return x->name;
    if (bitflags && x->val != 0 && x->val == (unmatched & x->val)) {
      if (!names.empty()) names += ' ';
      names += x->name;
      unmatched &= ~x->val;
    }
  }
  if (names.empty() || unmatched != 0) return "unknown";
  return names;
}

int enum_default(const ParamDef& d) {
  const bool bits = (d.flags & MULTI) != 0;
  return enum_value(d.enums, split_spaces(d.def), bits);
}

std::string obuf_get(const Impl& s) {
  static const char* const names[] = {"normal", "slave", "pubsub"};
  std::string out;
  for (int j = 0; j < 3; ++j) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s %llu %llu %lld", names[j],
                  static_cast<unsigned long long>(s.obuf_limits[j].hard),
                  static_cast<unsigned long long>(s.obuf_limits[j].soft),
                  static_cast<long long>(s.obuf_limits[j].soft_seconds));
    if (j) out += ' ';
    out += buf;
  }
  return out;
}

// updateClientOutputBufferLimit: all classes checked before any changes.
bool obuf_set(Impl& s, const std::vector<std::string>& argv, std::string& err) {
  if (argv.size() % 4 != 0) {
    err = "Wrong number of arguments in buffer limit configuration.";
    return false;
  }
  Impl::ObufLimit values[3];
  bool classes[3] = {false, false, false};
  for (std::size_t j = 0; j < argv.size(); j += 4) {
    int cls = -1;
    if (ieq(argv[j], "normal")) cls = 0;
    if (ieq(argv[j], "slave") || ieq(argv[j], "replica")) cls = 1;
    if (ieq(argv[j], "pubsub")) cls = 2;
    if (cls < 0) {
      err = "Invalid client class specified in buffer limit configuration.";
      return false;
    }
    std::uint64_t hard = 0, soft = 0;
    const bool hard_ok = parse_memory(argv[j + 1], hard);
    const bool soft_ok = parse_memory(argv[j + 2], soft);
    char* end = nullptr;
    const long long secs = std::strtoll(argv[j + 3].c_str(), &end, 10);
    if (!hard_ok || !soft_ok || secs < 0 || *end != '\0') {
      err = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      return false;
    }
    values[cls] = {hard, soft, static_cast<std::int64_t>(static_cast<int>(secs))};
    classes[cls] = true;
  }
  for (int j = 0; j < 3; ++j)
    if (classes[j]) s.obuf_limits[j] = values[j];
  return true;
}

std::string notify_get(int flags) {
  std::string r;
  if ((flags & NOTIFY_ALL) == NOTIFY_ALL) {
    r += 'A';
  } else {
    const std::pair<int, char> order[] = {
        {NOTIFY_GENERIC, 'g'}, {NOTIFY_STRING, '$'}, {NOTIFY_LIST, 'l'},   {NOTIFY_SET, 's'},
        {NOTIFY_HASH, 'h'},    {NOTIFY_ZSET, 'z'},   {NOTIFY_EXPIRED, 'x'}, {NOTIFY_EVICTED, 'e'},
        {NOTIFY_STREAM, 't'},  {NOTIFY_MODULE, 'd'}, {NOTIFY_NEW, 'n'}};
    for (auto& [bit, ch] : order)
      if (flags & bit) r += ch;
  }
  if (flags & NOTIFY_KEYSPACE) r += 'K';
  if (flags & NOTIFY_KEYEVENT) r += 'E';
  if (flags & NOTIFY_KEY_MISS) r += 'm';
  return r;
}

int notify_parse(std::string_view classes) {
  int flags = 0;
  for (char ch : classes) {
    switch (ch) {
      case 'A': flags |= NOTIFY_ALL; break;
      case 'g': flags |= NOTIFY_GENERIC; break;
      case '$': flags |= NOTIFY_STRING; break;
      case 'l': flags |= NOTIFY_LIST; break;
      case 's': flags |= NOTIFY_SET; break;
      case 'h': flags |= NOTIFY_HASH; break;
      case 'z': flags |= NOTIFY_ZSET; break;
      case 'x': flags |= NOTIFY_EXPIRED; break;
      case 'e': flags |= NOTIFY_EVICTED; break;
      case 'K': flags |= NOTIFY_KEYSPACE; break;
      case 'E': flags |= NOTIFY_KEYEVENT; break;
      case 't': flags |= NOTIFY_STREAM; break;
      case 'm': flags |= NOTIFY_KEY_MISS; break;
      case 'd': flags |= NOTIFY_MODULE; break;
      case 'n': flags |= NOTIFY_NEW; break;
      default: return -1;
    }
  }
  return flags;
}

// The value CONFIG GET prints.
std::string get_value(const Impl& s, const ParamDef& d) {
  const std::string name = d.name;
  if (name == "maxmemory") return std::to_string(s.maxmemory);
  if (name == "maxmemory-policy") return policy_name(s.policy);
  if (name == "maxclients") return std::to_string(s.maxclients);
  if (name == "notify-keyspace-events") return notify_get(s.notify_flags);
  if (name == "client-output-buffer-limit") return obuf_get(s);
  if (name == "proto-max-bulk-len") return std::to_string(s.opt.max_bulk);
  if (name == "client-query-buffer-limit") return std::to_string(s.opt.max_query_bytes);
  if (name == "databases") return std::to_string(s.dbs.size());
  if (name == "cluster-enabled") return s.opt.cluster_enabled ? "yes" : "no";
  if (name == "enable-debug-command") return s.opt.enable_debug_command ? "yes" : "no";
  if (name == "dir") return s.opt.dir;
  if (name == "replicaof")
    return s.replica ? s.master_host + " " + std::to_string(s.master_port) : std::string();
  auto it = s.config.find(name);
  if (d.type == T_ENUM) {
    const int v = it == s.config.end() ? enum_default(d) : std::atoi(it->second.c_str());
    return enum_name(d.enums, v, (d.flags & MULTI) != 0);
  }
  if (it == s.config.end()) {
    if (name == "port") return std::to_string(s.opt.tcp_port);
    if (name == "requirepass") return s.opt.requirepass;
    return d.def;
  }
  if (d.type >= T_INT && d.type <= T_SSIZET) return format_numeric(d, std::atoll(it->second.c_str()));
  return it->second;
}

// performInterfaceSet: 0 error, 1 changed, 2 unchanged.
int set_value(Impl& s, const ParamDef& d, const std::string& value, std::string& err,
              bool startup = false) {
  const std::string name = d.name;
  const std::vector<std::string> argv =
      (d.flags & MULTI) ? split_spaces(value) : std::vector<std::string>{value};
  const std::string before = get_value(s, d);
  switch (d.type) {
    case T_BOOL: {
      if (!ieq(value, "yes") && !ieq(value, "no")) {
        err = "argument must be 'yes' or 'no'";
        return 0;
      }
      const std::string v = ieq(value, "yes") ? "yes" : "no";
      if (v == before) return 2;
      s.config[name] = v;
      return 1;
    }
    case T_STRING:
      if (value == before) return 2;
      s.config[name] = value;
      return 1;
    case T_ENUM: {
      const int v = enum_value(d.enums, argv, (d.flags & MULTI) != 0);
      if (v == INT_MIN) {
        err = "argument(s) must be one of the following: ";
        for (const EnumVal* x = d.enums; x->name != nullptr; ++x) {
          if (x != d.enums) err += ", ";
          err += x->name;
        }
        return 0;
      }
      if ((name == "shutdown-on-sigint" || name == "shutdown-on-sigterm") && (v & 1) && (v & 2)) {
        err = "shutdown options SAVE and NOSAVE can't be used simultaneously";  // isValidShutdownOnSigFlags
        return 0;
      }
      if (name == "maxmemory-policy") {
        MaxmemoryPolicy p{};
        parse_policy(enum_name(d.enums, v, false), p);
        if (p == s.policy) return 2;
        s.policy = p;
        return 1;
      }
      auto it = s.config.find(name);
      const int prev = it == s.config.end() ? enum_default(d) : std::atoi(it->second.c_str());
      if (prev == v) return 2;
      s.config[name] = std::to_string(v);
      return 1;
    }
    case T_SPECIAL:
      break;
    default: {
      long long ll = 0;
      if (!parse_numeric(d, value, ll, err) || !check_bounds(d, ll, err)) return 0;
      if (format_numeric(d, ll) == before) return 2;
      if (name == "maxmemory") {
        s.maxmemory = static_cast<std::uint64_t>(ll);
      } else if (name == "maxclients") {
        s.maxclients = static_cast<int>(static_cast<unsigned>(ll));
      } else if (name == "proto-max-bulk-len") {
        s.opt.max_bulk = static_cast<std::uint64_t>(ll);
      } else if (name == "client-query-buffer-limit") {
        s.opt.max_query_bytes = static_cast<std::size_t>(ll);
      } else {
        s.config[name] = std::to_string(ll);
      }
      return 1;
    }
  }
  // special parameters
  if (name == "client-output-buffer-limit") return obuf_set(s, argv, err) ? 1 : 0;
  if (name == "notify-keyspace-events") {
    if (argv.size() != 1) {
      err = "wrong number of arguments";
      return 0;
    }
    const int flags = notify_parse(argv[0]);
    if (flags == -1) {
      err = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
      return 0;
    }
    s.notify_flags = flags;
    return 1;
  }
  if (name == "save") {
    std::vector<std::string> args = argv;
    if (args.size() == 1 && args[0].empty()) args.clear();
    if (args.size() % 2 != 0) {
      err = "Invalid save parameters";
      return 0;
    }
    std::string joined;
    for (std::size_t j = 0; j < args.size(); ++j) {
      char* end = nullptr;
      const long long v = std::strtoll(args[j].c_str(), &end, 10);
      if (*end != '\0' || (j % 2 == 0 && v < 1) || (j % 2 == 1 && v < 0)) {
        err = "Invalid save parameters";
        return 0;
      }
      if (j) joined += ' ';
      joined += std::to_string(j % 2 == 0 ? v : static_cast<int>(v));
    }
    s.config[name] = joined;
    return 1;
  }
  if (name == "oom-score-adj-values") {
    if (argv.size() != 3) {
      err = "wrong number of arguments";
      return 0;
    }
    std::string joined;
    for (std::size_t j = 0; j < 3; ++j) {
      char* end = nullptr;
      const long long v = std::strtoll(argv[j].c_str(), &end, 10);
      if (*end != '\0' || v < -2000 || v > 2000) {
        err = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
        return 0;
      }
      if (j) joined += ' ';
      joined += std::to_string(v);
    }
    if (joined == before) return 2;
    s.config[name] = joined;
    return 1;
  }
  if (name == "bind") {
    if (argv.size() > 16) {
      err = "Too many bind addresses specified.";
      return 0;
    }
    std::string joined;
    if (!(argv.size() == 1 && argv[0].empty())) {
      for (std::size_t j = 0; j < argv.size(); ++j) {
        if (j) joined += ' ';
        joined += argv[j];
      }
    }
    if (joined == before || startup) {
      s.config[name] = joined;
      return 1;
    }
    // applyBind listens on the new addresses; the model cannot (serve mode keeps its socket).
    err = "Failed to bind to specified addresses.";
    return 0;
  }
  if (name == "latency-tracking-info-percentiles") {
    std::string joined;
    if (!(argv.size() == 1 && argv[0].empty())) {
      for (std::size_t j = 0; j < argv.size(); ++j) {
        double p = 0;
        if (!string2d(argv[j], p)) {
          err = "Invalid latency-tracking-info-percentiles parameters";
          return 0;
        }
        if (p > 100.0 || p < 0.0) {
          err = "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]";
          return 0;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%f", p);
        std::string t = buf;  // Redis prints %f, then trims trailing zeros and the point
        while (!t.empty() && t.back() == '0') t.pop_back();
        if (!t.empty() && t.back() == '.') t.pop_back();
        if (j) joined += ' ';
        joined += t;
      }
    }
    s.config[name] = joined;
    return 1;
  }
  err = "wrong number of arguments";  // dir (protected: never reached), replicaof (immutable)
  return 0;
}

}  // namespace

void cmd_config_get(Impl& s, Client& c, Args& a) {
  // Keyed by the name as matched: an exact name is echoed as given (case-insensitively
  // unique), a pattern yields the table's names (hidden ones only by their exact name).
  std::vector<std::pair<std::string, const ParamDef*>> found;
  auto have = [&](std::string_view n) {
    for (auto& [k, d] : found)
      if (ieq(k, n)) return true;
    return false;
  };
  for (std::size_t i = 2; i < a.size(); ++i) {
    const std::string& arg = a[i];
    if (cstr(arg).find_first_of("[*?") == std::string_view::npos) {
      if (have(arg)) continue;
      const Named n = lookup_param(arg);
      if (n.def != nullptr) found.emplace_back(arg, n.def);
      continue;
    }
    for (const auto& d : kDefs) {
      if (d.flags & HID) continue;
      for (const char* n : {d.name, d.alias}) {
        if (n == nullptr || have(n)) continue;
        if (glob_match(cstr(arg), n, true)) found.emplace_back(n, &d);
      }
    }
  }
  s.map(c, found.size());
  for (auto& [name, d] : found) {
    s.bulk(c, name);
    s.bulk(c, get_value(s, *d));
  }
}

void cmd_config_set(Impl& s, Client& c, Args& a) {
  if (a.size() % 2 != 0) return s.syntax(c);
  struct Item {
    Named n;
    const std::string* value;
  };
  std::vector<Item> items;
  std::string invalid_arg, errstr, err_arg;
  bool invalid = false, deny_loading = false, unknown = false;
  for (std::size_t i = 2; i < a.size(); i += 2) {
    const Named n = lookup_param(a[i]);
    if (n.def == nullptr) {
      if (!invalid) {
        invalid_arg = std::string(cstr(a[i]));
        invalid = unknown = true;
      }
      continue;
    }
    if (invalid) continue;
    if ((n.def->flags & IMM) || (n.def->flags & PROT)) {
      errstr = (n.def->flags & IMM) ? "can't set immutable config" : "can't set protected config";
      err_arg = std::string(cstr(a[i]));
      invalid = true;
      continue;
    }
    if (s.loading && (n.def->flags & DENYL)) {
      deny_loading = true;
      invalid = true;
      continue;
    }
    for (auto& it : items) {
      if (it.n.name == n.name) {
        errstr = "duplicate parameter";
        err_arg = std::string(cstr(a[i]));
        invalid = true;
        break;
      }
    }
    items.push_back({n, &a[i + 1]});
  }
  if (!invalid) {
    // Set all, remembering the old values; on the first failure put them all back.
    std::vector<std::string> old;
    for (auto& it : items) old.push_back(get_value(s, *it.n.def));
    for (std::size_t i = 0; i < items.size() && !invalid; ++i) {
      std::string err;
      const int res = set_value(s, *items[i].n.def, *items[i].value, err);
      if (res == 0) {
        for (std::size_t j = 0; j <= i; ++j) {
          std::string ignored;
          set_value(s, *items[j].n.def, old[j], ignored);
        }
        errstr = err;
        err_arg = items[i].n.name;
        invalid = true;
      } else if (res == 1) {
        const std::string name = items[i].n.def->name;
        if (name == "maxmemory" && s.maxmemory != 0) s.eviction_due = true;  // evictionTimeProc
        if (name == "requirepass") {
          const std::string pw = get_value(s, *items[i].n.def);
          s.acl_setuser("default", {"resetpass", pw.empty() ? "nopass" : ">" + pw});
        }
        if (name == "maxmemory" || name == "maxmemory-policy")
          s.trace("maxmemory", std::to_string(s.maxmemory) + " " + policy_name(s.policy));
      }
    }
    if (!invalid) return s.ok(c);
  }
  if (deny_loading) return s.error(c, "-LOADING Redis is loading the dataset in memory");
  if (unknown)
    return s.error(c, "Unknown option or number of arguments for CONFIG SET - '" + invalid_arg +
                          "'");
  if (!errstr.empty())
    return s.error(c, "CONFIG SET failed (possibly related to argument '" + err_arg + "') - " +
                          errstr);
  s.error(c, "CONFIG SET failed (possibly related to argument '" + err_arg + "')");
}

std::string config_startup(Impl& s, const std::string& name, const std::string& value) {
  const Named n = lookup_param(name);
  if (n.def == nullptr) return "Bad directive or wrong number of arguments";
  std::string err;
  if (set_value(s, *n.def, value, err, true) == 0) return err;
  return "";
}

void cmd_lastsave(Impl& s, Client& c, Args&) {
  s.integer(c, s.last_save_ms / 1000);
}

// SAVE / BGSAVE: the model keeps no files; a save is instantaneous (what it resets is the
// dirty counter and LASTSAVE). SimRedis' persistence is SimRedis::save().
void cmd_save(Impl& s, Client& c, Args&) {
  s.dirty = 0;
  s.last_save_ms = s.wall_ms();
  s.ok(c);
}

void cmd_bgsave(Impl& s, Client& c, Args& a) {
  if (a.size() > 2 || (a.size() == 2 && !ieq(a[1], "schedule"))) return s.syntax(c);
  s.dirty = 0;
  s.last_save_ms = s.wall_ms();
  s.status(c, "Background saving started");
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the host stops the server (serve mode exits);
// without a host hook nothing can stop, which Redis reports as a failed shutdown.
void cmd_shutdown(Impl& s, Client& c, Args& a) {
  bool nosave = false, save = false, abort = false;
  for (std::size_t j = 1; j < a.size(); ++j) {
    if (ieq(a[j], "nosave")) {
      nosave = true;
    } else if (ieq(a[j], "save")) {
      save = true;
    } else if (ieq(a[j], "now") || ieq(a[j], "force")) {
    } else if (ieq(a[j], "abort")) {
      abort = true;
    } else {
      return s.syntax(c);
    }
  }
  if ((abort && a.size() != 2) || (nosave && save)) return s.syntax(c);
  if (abort) return s.error(c, "No shutdown in progress.");
  if (!s.hooks.shutdown) return s.error(c, "Errors trying to SHUTDOWN. Check logs.");
  for (auto& [id, t] : s.clients) s.close_asap(t);
  s.hooks.shutdown();
}

void config_help(Impl& s, Client& c, Args& a) {
  help_reply(s, c, a,
             {"GET <pattern>",
              "    Return parameters matching the glob-like <pattern> and their values.",
              "SET <directive> <value>",
              "    Set the configuration <directive> to <value>.",
              "RESETSTAT",
              "    Reset statistics reported by the INFO command.",
              "REWRITE",
              "    Rewrite the configuration file."});
}

void cmd_config_resetstat(Impl& s, Client& c, Args&) {
  s.reset_stats();
  s.ok(c);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

model::Limits RedisModel::Impl::limits() const {
  auto get = [&](const char* name, std::size_t def) {
    auto it = config.find(name);
    return it == config.end() ? def : static_cast<std::size_t>(std::atoll(it->second.c_str()));
  };
  model::Limits l;
  l.hash_entries = get("hash-max-listpack-entries", 128);
  l.hash_value = get("hash-max-listpack-value", 64);
  l.set_intset = get("set-max-intset-entries", 512);
  l.zset_entries = get("zset-max-listpack-entries", 128);
  l.zset_value = get("zset-max-listpack-value", 64);
  return l;
}

}  // namespace lockwire::sim
