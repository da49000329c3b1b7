// Redis' networking.c: connections, request parsing (inline and multibulk, with Redis' protocol
// errors), output flushing and closing, and the connection commands it owns (HELLO, QUIT, RESET).
#include <algorithm>
#include <cctype>
#include <limits>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

// Redis' sdssplitargs: inline command tokenizer with "..." and '...' quoting.
bool split_args(std::string_view line, Args& out) {
  out.clear();
  std::size_t i = 0;
  auto hexval = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
  };
  auto ishex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  while (true) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) return true;
    bool inq = false, insq = false, done = false;
    std::string cur;
    while (!done) {
      if (inq) {
        if (i >= line.size()) return false;
        if (line[i] == '\\' && i + 3 < line.size() && line[i + 1] == 'x' && ishex(line[i + 2]) &&
            ishex(line[i + 3])) {
          cur.push_back(static_cast<char>(hexval(line[i + 2]) * 16 + hexval(line[i + 3])));
          i += 3;
        } else if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          char c = line[i];
          switch (c) {
            case 'n':
              c = '\n';
              break;
            case 'r':
              c = '\r';
              break;
            case 't':
              c = '\t';
              break;
            case 'b':
              c = '\b';
              break;
            case 'a':
              c = '\a';
              break;
            default:
              break;
          }
          cur.push_back(c);
        } else if (line[i] == '"') {
          if (i + 1 < line.size() && !std::isspace(static_cast<unsigned char>(line[i + 1])))
            return false;
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else if (insq) {
        if (i >= line.size()) return false;
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;
          cur.push_back('\'');
        } else if (line[i] == '\'') {
          if (i + 1 < line.size() && !std::isspace(static_cast<unsigned char>(line[i + 1])))
            return false;
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else {
        if (i >= line.size()) {
          done = true;
          break;
        }
        const char c = line[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') {
          done = true;
        } else if (c == '"') {
          inq = true;
        } else if (c == '\'') {
          insq = true;
        } else {
          cur.push_back(c);
        }
      }
      if (i < line.size()) ++i;
    }
    out.push_back(std::move(cur));
  }
}

bool valid_name(std::string_view n) {
  for (unsigned char ch : n)
    if (ch < '!' || ch > '~') return false;
  return true;
}

}  // namespace

void help_reply(Impl& s, Client& c, const Args& a, std::initializer_list<const char*> lines) {
  std::string cmd(a[0]);
  for (auto& ch : cmd) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  s.array(c, lines.size() + 3);
  s.status(c, cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (auto* l : lines) s.status(c, l);
  s.status(c, "HELP");
  s.status(c, "    Prints this help.");
}

void subcommand_syntax(Impl& s, Client& c, const Args& a) {
  std::string cmd(a[0]);
  for (auto& ch : cmd) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  s.error(c, "unknown subcommand or wrong number of arguments for '" +
                 std::string(cstr(a[1]).substr(0, 128)) + "'. Try " + cmd + " HELP.");
}

bool set_name(Impl& s, Client& c, const std::string& n) {
  if (!valid_name(n)) {
    s.error(c, "Client names cannot contain spaces, newlines or special characters.");
    return false;
  }
  c.name = n;
  return true;
}

void cmd_hello(Impl& s, Client& c, Args& a) {
  std::int64_t ver = 0;
  std::size_t next = 1;
  if (a.size() >= 2) {
    if (!string2ll(a[next++], ver))
      return s.error(c, "Protocol version is not an integer or out of range");
    if (ver < 2 || ver > 3) return s.error(c, "-NOPROTO unsupported protocol version");
  }
  const std::string *user = nullptr, *pass = nullptr, *name = nullptr;
  for (std::size_t j = next; j < a.size(); ++j) {
    const std::size_t more = a.size() - 1 - j;
    if (ieq(a[j], "AUTH") && more >= 2) {
      user = &a[j + 1];
      pass = &a[j + 2];
      j += 2;
    } else if (ieq(a[j], "SETNAME") && more >= 1) {
      name = &a[j + 1];
      ++j;
    } else {
      return s.error(c, "Syntax error in HELLO option '" + std::string(cstr(a[j])) + "'");
    }
  }
  if (user != nullptr) {
    User* u = auth_user(s, *user, *pass);
    if (u == nullptr)
      return s.error(c, "-WRONGPASS invalid username-password pair or user is disabled.");
    c.user = u;
    c.authenticated = true;
  }
  if (!c.authenticated)
    return s.error(c,
                   "-NOAUTH HELLO must be called with the client already authenticated, otherwise "
                   "the HELLO AUTH <user> <pass> option can be used to authenticate the "
                   "client and select the RESP protocol version at the same time");
  if (name != nullptr && !set_name(s, c, *name)) return;
  if (ver != 0) c.resp = static_cast<int>(ver);
  // A sentinel's reply has no "role" (7.0.15: six fields, mode "sentinel").
  s.map(c, s.opt.sentinel_mode ? 6 : 7);
  s.bulk(c, "server");
  s.bulk(c, "redis");
  s.bulk(c, "version");
  s.bulk(c, "7.0.15");
  s.bulk(c, "proto");
  s.integer(c, c.resp);
  s.bulk(c, "id");
  s.integer(c, static_cast<std::int64_t>(c.id));
  s.bulk(c, "mode");
  s.bulk(c, s.opt.sentinel_mode ? "sentinel" : (s.opt.cluster_enabled ? "cluster" : "standalone"));
  if (!s.opt.sentinel_mode) {
    s.bulk(c, "role");
    s.bulk(c, s.replica ? "replica" : "master");
  }
  s.bulk(c, "modules");
  s.array(c, 0);
}

void cmd_quit(Impl& s, Client& c, Args&) {
  s.ok(c);
  s.close_asap(c);
}

void cmd_reset(Impl& s, Client& c, Args&) {
  if (c.multi) discard_transaction(s, c);
  unwatch_all(s, c);
  c.dirty_cas = false;
  s.unsubscribe_all(c, false);
  s.punsubscribe_all(c, false);
  s.disable_tracking(c);
  c.db = 0;
  c.resp = 2;
  c.asking = false;
  c.readonly = false;
  c.name.clear();
  c.user = s.default_user;
  c.authenticated = s.default_user->nopass && s.default_user->enabled;
  s.status(c, "RESET");
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::free_client(Client& c) {
  c.gone = true;
  if (c.btype != Client::Btype::none) unblock_keys(c);
  unsubscribe_all(c, false);
  punsubscribe_all(c, false);
  disable_tracking(c);
  unwatch_all(*this, c);
  std::erase(postponed, c.id);
  std::erase(unblocked, c.id);
}

void RedisModel::Impl::protocol_error(Client& c, std::string_view msg) {
  error(c, "Protocol error: " + std::string(msg));
  close_asap(c);
}

// Returns true when argv holds a complete command.
// Redis looks for line ends with strchr() on the query buffer, which stops at a NUL byte: a
// line end after a NUL is not seen (the request waits, until it is too big).
static std::size_t find_line_end(std::string_view buf, char ch) {
  const auto nul = buf.find('\0');
  const auto at = buf.substr(0, nul).find(ch);
  return at;
}

bool RedisModel::Impl::parse_inline(Client& c) {
  const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
  const auto nl = find_line_end(buf, '\n');
  if (nl == std::string_view::npos) {
    if (buf.size() > kInlineMax) protocol_error(c, "too big inline request");
    return false;
  }
  std::string_view line = buf.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!split_args(line, c.argv)) {
    protocol_error(c, "unbalanced quotes in request");
    return false;
  }
  c.qpos += nl + 1;
  return true;
}

bool RedisModel::Impl::parse_multibulk(Client& c) {
  if (c.multibulklen == 0) {
    const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
    const auto cr = find_line_end(buf, '\r');
    if (cr == std::string_view::npos) {
      if (buf.size() > kInlineMax) protocol_error(c, "too big mbulk count string");
      return false;
    }
    if (cr + 2 > buf.size()) return false;
    std::int64_t ll = 0;
    const bool okn = string2ll(buf.substr(1, cr - 1), ll);
    if (!okn || ll > std::numeric_limits<int>::max()) {
      protocol_error(c, "invalid multibulk length");
      return false;
    }
    if (ll > 10 && auth_required(c)) {
      protocol_error(c, "unauthenticated multibulk length");
      return false;
    }
    c.qpos += cr + 2;
    if (ll <= 0) return true;  // empty command: skipped by the caller
    c.multibulklen = ll;
    c.argv.clear();
    c.argv_bytes = 0;
    c.argv.reserve(static_cast<std::size_t>(std::min<std::int64_t>(ll, 1024)));
  }
  while (c.multibulklen > 0) {
    if (c.bulklen == -1) {
      const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
      const auto cr = find_line_end(buf, '\r');
      if (cr == std::string_view::npos) {
        if (buf.size() > kInlineMax) protocol_error(c, "too big bulk count string");
        return false;
      }
      if (cr + 2 > buf.size()) return false;
      if (buf[0] != '$') {
        protocol_error(c, std::string("expected '$', got '") + buf[0] + "'");
        return false;
      }
      std::int64_t ll = 0;
      const bool okn = string2ll(buf.substr(1, cr - 1), ll);
      if (!okn || ll < 0 || static_cast<std::uint64_t>(ll) > opt.max_bulk) {
        protocol_error(c, "invalid bulk length");
        return false;
      }
      if (ll > 16384 && auth_required(c)) {
        protocol_error(c, "unauthenticated bulk length");
        return false;
      }
      c.qpos += cr + 2;
      c.bulklen = ll;
    }
    const auto need = static_cast<std::size_t>(c.bulklen) + 2;  // with its CRLF
    if (c.bulklen >= kBigArg) {
      // PROTO_MBULK_BIG_ARG: a big argument is read straight into its own string (one copy
      // of it in memory, the query buffer stays small).
      if (c.big.capacity() < need) c.big.reserve(need);
      const std::size_t take = std::min(need - c.big.size(), c.qbuf.size() - c.qpos);
      c.big.append(c.qbuf, c.qpos, take);
      c.qpos += take;
      if (c.big.size() < need) return false;
      c.big.resize(static_cast<std::size_t>(c.bulklen));
      c.argv.push_back(std::move(c.big));
      c.big = std::string();
      c.qpos -= 2;  // the CRLF is skipped below, with the normal path's
    } else {
      if (c.qbuf.size() - c.qpos < need) return false;
      c.argv.emplace_back(c.qbuf.data() + c.qpos, static_cast<std::size_t>(c.bulklen));
      c.qpos += static_cast<std::size_t>(c.bulklen);
    }
    // Arguments count against the query buffer limit too, so a huge count of tiny arguments
    // cannot allocate without bound (Redis closes such clients as well).
    c.argv_bytes += static_cast<std::size_t>(c.bulklen) + sizeof(std::string);
    if (c.argv_bytes > opt.max_query_bytes) {
      trace("client-limit", "query buffer limit reached");
      close_asap(c);
      return false;
    }
    c.qpos += 2;  // the CRLF is skipped unchecked
    c.bulklen = -1;
    --c.multibulklen;
  }
  return true;
}

void RedisModel::Impl::process_input(Client& c) {
  while (!c.closing && !c.gone && !c.blocked && !c.postponed && c.qpos < c.qbuf.size()) {
    if (c.reqtype == 0) c.reqtype = c.qbuf[c.qpos] == '*' ? 2 : 1;
    if (!(c.reqtype == 1 ? parse_inline(c) : parse_multibulk(c))) break;  // more bytes needed
    c.reqtype = 0;
    if (c.argv.empty()) continue;
    Args argv = std::move(c.argv);
    c.argv.clear();
    if (!process_command(c, argv)) {
      // CLIENT PAUSE holds it: the client waits (later input stays queued) until released.
      c.postponed = true;
      c.postponed_argv = std::move(argv);
      postponed.push_back(c.id);
    }
  }
  if (c.qpos > 0 && (c.qpos == c.qbuf.size() || c.qpos > 4096)) {
    c.qbuf.erase(0, c.qpos);
    c.qpos = 0;
    if (c.qbuf.empty() && c.qbuf.capacity() > 1024 * 1024) std::string().swap(c.qbuf);
  }
}

// ---- CLIENT PAUSE ----

bool RedisModel::Impl::paused() {
  if (pause == Pause::none) return false;
  if (pause_end_ms < wall_ms()) unpause_clients();  // Redis: end < mstime
  return pause != Pause::none;
}

void RedisModel::Impl::pause_clients(std::int64_t end_ms, Pause mode) {
  pause = std::max(pause, mode);
  pause_end_ms = std::max(pause_end_ms, end_ms);
}

void RedisModel::Impl::unpause_clients() {
  if (pause == Pause::none) return;
  pause = Pause::none;
  pause_end_ms = 0;
  trace("unpause", std::to_string(postponed.size()) + " client(s) released");
  // Released in the order they were held; they run before the turn ends (run_unblocked).
  unblocked.insert(unblocked.end(), postponed.begin(), postponed.end());
  postponed.clear();
}

void RedisModel::Impl::run_unblocked() {
  while (!unblocked.empty()) {
    const std::uint64_t id = unblocked.front();
    unblocked.erase(unblocked.begin());
    auto it = clients.find(id);
    if (it == clients.end() || it->second.gone || !it->second.postponed) continue;
    Client& c = it->second;
    c.postponed = false;
    Args argv = std::move(c.postponed_argv);
    c.postponed_argv.clear();
    if (!c.closing && !process_command(c, argv)) {
      c.postponed = true;  // paused again meanwhile
      c.postponed_argv = std::move(argv);
      postponed.push_back(c.id);
      continue;
    }
    process_input(c);
  }
}

bool RedisModel::Impl::obuf_limit_reached(Client& c, std::size_t unsent) {
  const ObufLimit& l = obuf_limits[c.pubsub_mode() ? 2 : 0];
  const bool hard = l.hard != 0 && unsent >= l.hard;
  bool soft = l.soft != 0 && unsent >= l.soft;
  const std::int64_t now = wall_ms();
  if (soft) {
    if (c.obuf_soft_since_ms == 0) {
      c.obuf_soft_since_ms = now;
      soft = false;
    } else if (now - c.obuf_soft_since_ms <= l.soft_seconds * 1000) {
      soft = false;
    }
  } else {
    c.obuf_soft_since_ms = 0;
  }
  return hard || soft;
}

void RedisModel::Impl::flush_outputs() {
  broadcast_invalidations();
  auto ids = std::move(dirty_clients);
  dirty_clients.clear();
  for (auto id : ids) {
    auto it = clients.find(id);
    if (it == clients.end()) continue;
    Client& c = it->second;
    c.dirty = false;
    if (c.gone) continue;
    if (!c.out.empty()) {
      std::string out;
      out.swap(c.out);
      net_output_bytes += out.size();
      ++writes_processed;
      if (hooks.write) hooks.write(id, out);
    }
  }
  // Closing after output, in id order for determinism.
  if (closing_clients.empty()) return;
  auto to_close = std::move(closing_clients);
  closing_clients.clear();
  std::sort(to_close.begin(), to_close.end());
  to_close.erase(std::unique(to_close.begin(), to_close.end()), to_close.end());
  for (auto id : to_close) {
    auto it = clients.find(id);
    if (it == clients.end() || it->second.gone) continue;
    free_client(it->second);
    clients.erase(it);
    if (hooks.close) hooks.close(id);
  }
}

}  // namespace lockwire::sim
