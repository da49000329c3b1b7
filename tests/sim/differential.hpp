// The differential harness: one command script, run against the in-process model and against a
// real TCP server (redis-server 7.0.15, or `lockwire-sim serve`), reply bytes compared exactly.
//
// Script syntax (one string, steps separated by " | "):
//   SET k v             command on connection 1 (args split on spaces; "a b" quotes, \r \n \xNN)
//   2> GET k            command on connection 2 (connections open on first use)
//   ~TIME               compare only the reply's shape (types and sizes), for values that
//                       cannot match (TIME, CLIENT ID, PTTL, SCAN cursors)
//   %SMEMBERS s         compare with aggregate elements sorted (hash-table order in Redis)
//   ?INFO memory        INFO text: same frame type, the model's sections in the same order and
//                       its fields present in them (in order); values compared only for the
//                       fields in kInfoExact (the rest, e.g. used_memory, cannot match)
//   @sleep 150          wait (real time on TCP, virtual time in the model)
//   @raw PING\r\n       send raw bytes (inline commands, protocol errors)
//   2> @pipe A x ; B y  several commands, RESP-encoded, in ONE write on connection 2 (split on
//                       " ; "; each part tokenized as a plain step, {id:N} allowed); e.g. a
//                       blocking pop with a MULTI block queued behind it (docs/handoff-one-rtt.md)
//   ... {id:2} ...      the client id of connection 2 on that server (learnt with a silent
//                       CLIENT ID when the connection opens), e.g. CLIENT TRACKING ON REDIRECT
//                       {id:2}
// HELLO's "id" field is masked everywhere (client ids differ between servers).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lockwire/sim/redis_model.hpp"
#include "resp_frames.hpp"

namespace lockwire::sim::test {

struct Step {
  int conn = 1;
  char mode = '=';  // '=', '~' shape, '%' unordered, '?' INFO fields
  bool sleep = false;
  int sleep_ms = 0;
  std::string bytes;  // what to send
  std::string text;   // for messages
  std::string templ;  // command text with {id:N} placeholders (encoded per server at run time)
  bool pipe = false;  // @pipe: bytes/templ hold several commands separated by " ; "
};

// Replaces {id:N} with the ids in `ids` and encodes the command.
inline std::string expand(const Step& st, const std::map<int, std::string>& ids);

inline std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == 'r') {
        out += '\r';
        ++i;
      } else if (n == 'n') {
        out += '\n';
        ++i;
      } else if (n == 'x' && i + 3 < s.size()) {
        out += static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16));
        i += 3;
      } else if (n == '\\') {
        out += '\\';
        ++i;
      } else {
        out += s[i];
      }
    } else {
      out += s[i];
    }
  }
  return out;
}

inline std::string encode_command(const std::vector<std::string>& args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (auto& a : args)
    out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  return out;
}

inline std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i >= s.size()) break;
    std::string tok;
    if (s[i] == '"') {
      ++i;
      while (i < s.size() && s[i] != '"') tok += s[i++];
      ++i;
      tok = unescape(tok);
    } else {
      while (i < s.size() && s[i] != ' ') tok += s[i++];
      tok = unescape(tok);
    }
    out.push_back(tok);
  }
  return out;
}

// "A x ; B y" -> both commands encoded, back to back (one write).
inline std::string encode_pipeline(std::string_view cmds) {
  std::string out;
  while (true) {
    const auto semi = cmds.find(" ; ");
    out += encode_command(tokenize(cmds.substr(0, semi)));
    if (semi == std::string_view::npos) return out;
    cmds.remove_prefix(semi + 3);
  }
}

inline std::vector<Step> parse_script(std::string_view script) {
  std::vector<Step> steps;
  std::size_t start = 0;
  while (start <= script.size()) {
    auto bar = script.find(" | ", start);
    std::string_view part =
        script.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    start = bar == std::string_view::npos ? script.size() + 1 : bar + 3;
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.empty()) continue;
    Step st;
    st.text = std::string(part);
    if (part.size() > 2 && part[0] >= '1' && part[0] <= '9' && part[1] == '>') {
      st.conn = part[0] - '0';
      part.remove_prefix(2);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    }
    if (!part.empty() && (part[0] == '~' || part[0] == '%' || part[0] == '?')) {
      st.mode = part[0];
      part.remove_prefix(1);
    }
    if (part.substr(0, 6) == "@sleep") {
      st.sleep = true;
      st.sleep_ms = std::stoi(std::string(part.substr(7)));
    } else if (part.substr(0, 4) == "@raw") {
      st.bytes = unescape(part.substr(5));
    } else if (part.substr(0, 5) == "@pipe") {
      st.pipe = true;
      if (part.find("{id:") != std::string_view::npos) {
        st.templ = std::string(part.substr(5));
      } else {
        st.bytes = encode_pipeline(part.substr(5));
      }
    } else if (part.find("{id:") != std::string_view::npos) {
      st.templ = std::string(part);
    } else {
      st.bytes = encode_command(tokenize(part));
    }
    steps.push_back(std::move(st));
  }
  return steps;
}

inline bool uses_ids(const std::vector<Step>& steps) {
  for (auto& st : steps)
    if (!st.templ.empty()) return true;
  return false;
}

inline std::string expand(const Step& st, const std::map<int, std::string>& ids) {
  if (st.templ.empty()) return st.bytes;
  std::string t = st.templ;
  for (auto& [n, id] : ids) {
    const std::string ph = "{id:" + std::to_string(n) + "}";
    for (auto p = t.find(ph); p != std::string::npos; p = t.find(ph)) t.replace(p, ph.size(), id);
  }
  return st.pipe ? encode_pipeline(t) : encode_command(tokenize(t));
}

// ":123\r\n" -> "123"
inline std::string int_reply(const std::string& f) {
  if (f.size() < 4 || f[0] != ':') return "0";
  return f.substr(1, f.size() - 3);
}

// Per step, per connection: frames received (and "<EOF>" when the server closed).
using Transcript = std::vector<std::map<int, std::vector<std::string>>>;

// The model with a virtual clock: cron runs every 100 ms of virtual time, like hz 10. `setup`
// runs once the model exists (e.g. set_replica).
inline Transcript run_model(const std::vector<Step>& steps, RedisModelOptions opt = {},
                            const std::function<void(RedisModel&)>& setup = {}) {
  std::int64_t now_us = 1767225600000000;
  std::map<RedisModel::ClientId, std::string> out;
  std::map<RedisModel::ClientId, bool> closed;
  RedisModel::Hooks h;
  h.write = [&](RedisModel::ClientId id, std::string_view b) { out[id].append(b); };
  h.close = [&](RedisModel::ClientId id) { closed[id] = true; };
  h.wall_us = [&] { return now_us; };
  RedisModel m(h, Rng(1), opt);
  if (setup) setup(m);
  std::map<int, RedisModel::ClientId> conns;
  std::map<RedisModel::ClientId, int> back;
  std::map<int, std::string> ids;
  const bool with_ids = uses_ids(steps);
  Transcript t;
  std::int64_t next_cron = now_us + 100000;
  for (auto& st : steps) {
    std::map<int, std::vector<std::string>> got;
    if (st.sleep) {
      const std::int64_t end = now_us + st.sleep_ms * 1000;
      while (next_cron <= end) {
        now_us = next_cron;
        m.cron();
        next_cron += 100000;
      }
      now_us = end;
    } else {
      if (!conns.count(st.conn)) {
        conns[st.conn] = m.add_client();
        back[conns[st.conn]] = st.conn;
        if (with_ids) {
          m.feed(conns[st.conn], encode_command({"CLIENT", "ID"}));
          ids[st.conn] = int_reply(out[conns[st.conn]]);
          out[conns[st.conn]].clear();
        }
      }
      now_us += 50;  // a command takes a little time
      m.feed(conns[st.conn], expand(st, ids));
    }
    for (auto& [id, bytes] : out) {
      if (bytes.empty()) continue;
      std::size_t rest = 0;
      auto frames = split_frames(bytes, &rest);
      bytes.erase(0, rest);
      for (auto& f : frames) got[back[id]].push_back(f);
    }
    for (auto& [id, c] : closed) {
      if (c) {
        got[back[id]].push_back("<EOF>");
        c = false;
        conns.erase(back[id]);
      }
    }
    t.push_back(std::move(got));
  }
  return t;
}

class TcpConn {
 public:
  explicit TcpConn(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~TcpConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] bool ok() const { return fd_ >= 0; }
  void send(const std::string& b) {
    std::size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }
  // Reads until `want` frames (and EOF if expect_eof) or the timeout.
  std::vector<std::string> read_frames(std::size_t want, bool expect_eof, int timeout_ms) {
    std::vector<std::string> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      std::size_t rest = 0;
      auto frames = split_frames(buf_, &rest);
      if (frames.size() >= want && (!expect_eof || eof_)) {
        buf_.erase(0, rest);
        if (eof_ && expect_eof) frames.push_back("<EOF>");
        return frames;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0 || eof_) {
        buf_.erase(0, rest);
        if (eof_) frames.push_back("<EOF>");
        if (!buf_.empty()) frames.push_back("<partial:" + buf_ + ">");
        buf_.clear();
        return frames;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) > 0) {
        char tmp[65536];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0) {
          eof_ = true;
        } else {
          buf_.append(tmp, static_cast<std::size_t>(n));
        }
      }
    }
  }

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

inline Transcript run_tcp(const std::vector<Step>& steps, std::uint16_t port,
                          const Transcript& expected) {
  std::map<int, std::unique_ptr<TcpConn>> conns;
  std::map<int, std::string> ids;
  const bool with_ids = uses_ids(steps);
  Transcript t;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto& st = steps[i];
    std::map<int, std::vector<std::string>> got;
    if (st.sleep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(st.sleep_ms));
    } else {
      auto& c = conns[st.conn];
      if (!c) {
        c = std::make_unique<TcpConn>(port);
        if (with_ids) {
          c->send(encode_command({"CLIENT", "ID"}));
          auto f = c->read_frames(1, false, 2000);
          ids[st.conn] = f.empty() ? "0" : int_reply(f[0]);
        }
      }
      c->send(expand(st, ids));
    }
    // Read what the model produced for this step from each connection (or a quick drain).
    for (auto& [n, c] : conns) {
      if (!c) continue;
      std::size_t want = 0;
      bool eof = false;
      if (auto it = expected[i].find(n); it != expected[i].end()) {
        for (auto& f : it->second) {
          if (f == "<EOF>") {
            eof = true;
          } else {
            ++want;
          }
        }
      }
      auto frames = c->read_frames(want, eof, want > 0 || eof ? 2000 : 0);
      if (!frames.empty()) got[n] = std::move(frames);
      if (eof) c.reset();
    }
    t.push_back(std::move(got));
  }
  // Anything the model did not predict shows up here.
  std::map<int, std::vector<std::string>> tail;
  for (auto& [n, c] : conns) {
    if (!c) continue;
    auto frames = c->read_frames(1, false, 30);
    if (!frames.empty()) tail[n] = std::move(frames);
  }
  t.push_back(std::move(tail));
  return t;
}

inline std::string normalize(const std::string& frame, char mode) {
  static const std::regex id_re("\\$2\\r\\nid\\r\\n:[0-9]+\\r\\n");
  std::string f = std::regex_replace(frame, id_re, "$$2\r\nid\r\n:<id>\r\n");
  if (f == "<EOF>" || f.rfind("<partial", 0) == 0) return f;
  if (mode == '~') return shape(f);
  if (mode == '%') return sorted_elements(f);
  return f;
}

// INFO fields whose values are deterministic (configuration, role, counts the scripts control).
inline const std::set<std::string> kInfoExact = {
    "redis_version",
    "redis_mode",
    "arch_bits",
    "hz",
    "configured_hz",
    "maxmemory",
    "maxmemory_human",
    "maxmemory_policy",
    "evicted_keys",
    "role",
    "master_host",
    "master_port",
    "slave_read_only",
    "connected_slaves",
    "master_failover_state",
    "cluster_enabled",
    "loading",
    "aof_enabled",
    "rdb_bgsave_in_progress",
    "maxclients",
    "mem_allocator",
    "process_supervised",
    "io_threads_active",
    "multiplexing_api",
    "master_repl_offset",
};

// INFO sections whose lines come in hash-table order in Redis: compared as sets of names.
inline const std::set<std::string> kInfoUnordered = {"# Commandstats", "# Errorstats",
                                                     "# Latencystats", "# Keyspace"};

// '?': the model's INFO reply is a faithful subset of the real one (see the syntax above).
inline bool info_matches(const std::string& model, const std::string& real) {
  auto body = [](const std::string& f, std::string& kind) -> std::optional<std::string> {
    const auto crlf = f.find("\r\n");
    if (crlf == std::string::npos || f.size() < crlf + 4) return std::nullopt;
    kind = f.substr(0, 1);
    std::string text = f.substr(crlf + 2, f.size() - crlf - 4);
    if (kind == "=") {
      kind += text.substr(0, 4);  // "txt:"
      text.erase(0, 4);
    }
    return text;
  };
  using Section = std::pair<std::string, std::vector<std::pair<std::string, std::string>>>;
  auto parse = [](const std::string& text) {
    std::vector<Section> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const auto end = text.find("\r\n", pos);
      const std::string line = text.substr(pos, end == std::string::npos ? end : end - pos);
      pos = end == std::string::npos ? text.size() : end + 2;
      if (line.empty()) continue;
      if (line[0] == '#') {
        out.push_back({line, {}});
      } else if (!out.empty()) {
        const auto colon = line.find(':');
        out.back().second.emplace_back(line.substr(0, colon),
                                       colon == std::string::npos ? "" : line.substr(colon + 1));
      }
    }
    return out;
  };
  std::string mk, rk;
  const auto mt = body(model, mk);
  const auto rt = body(real, rk);
  if (!mt || !rt || mk != rk) return false;
  const auto ms = parse(*mt);
  const auto rs = parse(*rt);
  if (mt->empty() != rt->empty()) return false;
  std::size_t ri = 0;
  for (const auto& [header, fields] : ms) {
    while (ri < rs.size() && rs[ri].first != header) ++ri;
    if (ri == rs.size()) return false;
    std::size_t fi = 0;
    const auto& rf = rs[ri].second;
    if (kInfoUnordered.count(header) != 0) {
      for (const auto& [name, value] : fields) {
        bool found = false;
        for (const auto& r : rf) found = found || r.first == name;
        if (!found) return false;
      }
      ++ri;
      continue;
    }
    for (const auto& [name, value] : fields) {
      while (fi < rf.size() && rf[fi].first != name) ++fi;
      if (fi == rf.size()) return false;
      if (kInfoExact.count(name) != 0 && rf[fi].second != value) return false;
    }
    ++ri;
  }
  return true;
}

// Returns a readable report of every difference (empty when identical).
inline std::string compare(const std::vector<Step>& steps, const Transcript& model,
                           const Transcript& real) {
  std::string report;
  auto show = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& f : v) {
      for (char ch : f) {
        if (ch == '\r') {
          s += "\\r";
        } else if (ch == '\n') {
          s += "\\n";
        } else {
          s += ch;
        }
      }
      s += " ";
    }
    return s;
  };
  for (std::size_t i = 0; i < real.size(); ++i) {
    const auto empty = std::map<int, std::vector<std::string>>{};
    const auto& m = i < model.size() ? model[i] : empty;
    const auto& r = real[i];
    const char mode = i < steps.size() ? steps[i].mode : '=';
    std::set<int> conns;
    for (auto& [n, v] : m) conns.insert(n);
    for (auto& [n, v] : r) conns.insert(n);
    for (int n : conns) {
      std::vector<std::string> mv, rv;
      if (auto it = m.find(n); it != m.end())
        for (auto& f : it->second) mv.push_back(normalize(f, mode));
      if (auto it = r.find(n); it != r.end())
        for (auto& f : it->second) rv.push_back(normalize(f, mode));
      if (mode == '?' && mv.size() == rv.size()) {
        bool same = true;
        for (std::size_t k = 0; k < mv.size(); ++k) same = same && info_matches(mv[k], rv[k]);
        if (same) continue;
      }
      if (mv != rv) {
        report += "step " + std::to_string(i + 1) + " [" +
                  (i < steps.size() ? steps[i].text : std::string("after the script")) + "] conn " +
                  std::to_string(n) + ":\n  model: " + show(mv) + "\n  real:  " + show(rv) + "\n";
      }
    }
  }
  return report;
}

}  // namespace lockwire::sim::test
