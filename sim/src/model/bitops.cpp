// Redis' bitops.c (SETBIT GETBIT BITCOUNT BITPOS BITOP), sort.c (SORT SORT_RO) and the part of
// object.c's MEMORY that clients call (USAGE, with the model's memory estimate).
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

// getBitOffsetFromArgument (no '#' form here): a bit offset within proto-max-bulk-len.
bool bit_offset(Impl& s, Client& c, const std::string& arg, std::uint64_t& off) {
  std::int64_t v = 0;
  if (!string2ll(arg, v) || v < 0 ||
      static_cast<std::uint64_t>(v >> 3) >= s.opt.max_bulk) {
    s.error(c, "bit offset is not an integer or out of range");
    return false;
  }
  off = static_cast<std::uint64_t>(v);
  return true;
}

bool bit_at(const std::string& str, std::uint64_t i) {
  const std::uint64_t byte = i >> 3;
  if (byte >= str.size()) return false;
  return (static_cast<unsigned char>(str[byte]) >> (7 - (i & 7))) & 1;
}

// The range arguments of BITCOUNT / BITPOS as a bit range [first, last] (first > last: empty).
bool bit_range(Impl& s, Client& c, Args& a, std::size_t start_idx, bool has_end,
               std::size_t mode_idx, std::uint64_t len, std::int64_t& first, std::int64_t& last,
               bool& end_given) {
  std::int64_t start = 0, end = 0;
  bool isbit = false;
  if (!get_ll(s, c, a[start_idx], start)) return false;
  if (mode_idx < a.size()) {
    if (ieq(a[mode_idx], "bit")) {
      isbit = true;
    } else if (!ieq(a[mode_idx], "byte")) {
      s.syntax(c);
      return false;
    }
  }
  auto total = static_cast<std::int64_t>(len);
  if (has_end) {
    if (!get_ll(s, c, a[start_idx + 1], end)) return false;
    end_given = true;
  } else {
    end = isbit ? total * 8 + 7 : total - 1;
  }
  if (isbit) total <<= 3;
  if (start < 0) start += total;
  if (end < 0) end += total;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= total) end = total - 1;
  if (isbit) {
    first = start;
    last = end;
  } else {
    first = start * 8;
    last = end * 8 + 7;
    if (start > end) last = first - 1;
  }
  return true;
}

}  // namespace

void cmd_setbit(Impl& s, Client& c, Args& a) {
  std::uint64_t off = 0;
  if (!bit_offset(s, c, a[2], off)) return;
  std::int64_t on = 0;
  if (!string2ll(a[3], on) || (on & ~1)) return s.error(c, "bit is not an integer or out of range");
  Value* v = s.lookup(c, a[1]);
  if (v != nullptr && v->kind != Value::Kind::string) return s.wrongtype(c);
  Db& db = DB(s, c);
  bool dirty = false;
  if (v == nullptr) {
    Value nv;
    v = &s.db_add(db, a[1], std::move(nv));
    dirty = true;
  }
  const std::uint64_t byte = off >> 3;
  if (v->str.size() < byte + 1) {
    v->str.resize(byte + 1, '\0');
    dirty = true;
  }
  const int bit = 7 - static_cast<int>(off & 7);
  auto& ch = reinterpret_cast<unsigned char&>(v->str[byte]);
  const bool was = (ch >> bit) & 1;
  if (dirty || was != static_cast<bool>(on)) {
    ch = static_cast<unsigned char>((ch & ~(1u << bit)) | (static_cast<unsigned>(on) << bit));
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_STRING, "setbit", a[1], c);
    s.propagate(c, a);
  }
  s.integer(c, was ? 1 : 0);
}

void cmd_getbit(Impl& s, Client& c, Args& a) {
  std::uint64_t off = 0;
  if (!bit_offset(s, c, a[2], off)) return;
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::string, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v && bit_at(v->str, off) ? 1 : 0);
}

void cmd_bitcount(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::string, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  const std::string& str = v->str;
  std::int64_t first = 0, last = static_cast<std::int64_t>(str.size()) * 8 - 1;
  if (a.size() == 4 || a.size() == 5) {
    std::int64_t st = 0, en = 0;
    if (!get_ll(s, c, a[2], st) || !get_ll(s, c, a[3], en)) return;
    if (st < 0 && en < 0 && st > en) return s.integer(c, 0);
    bool end_given = false;
    if (!bit_range(s, c, a, 2, true, 4, str.size(), first, last, end_given)) return;
  } else if (a.size() != 2) {
    return s.syntax(c);
  }
  std::int64_t n = 0;
  for (std::int64_t i = first; i <= last; ++i) n += bit_at(str, static_cast<std::uint64_t>(i));
  s.integer(c, n);
}

void cmd_bitpos(Impl& s, Client& c, Args& a) {
  std::int64_t bit = 0;
  if (!get_ll(s, c, a[2], bit)) return;
  if (bit != 0 && bit != 1) return s.error(c, "The bit argument must be 1 or 0.");
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::string, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, bit ? -1 : 0);
  const std::string& str = v->str;
  std::int64_t first = 0, last = static_cast<std::int64_t>(str.size()) * 8 - 1;
  bool end_given = false;
  if (a.size() >= 4 && a.size() <= 6) {
    if (!bit_range(s, c, a, 3, a.size() >= 5, 5, str.size(), first, last, end_given)) return;
  } else if (a.size() != 3) {
    return s.syntax(c);
  }
  if (first > last) return s.integer(c, -1);
  for (std::int64_t i = first; i <= last; ++i)
    if (bit_at(str, static_cast<std::uint64_t>(i)) == static_cast<bool>(bit)) return s.integer(c, i);
  if (bit == 1 || end_given) return s.integer(c, -1);
  s.integer(c, ((last >> 3) + 1) * 8);  // clear bits past the string: the first one
}

void cmd_bitop(Impl& s, Client& c, Args& a) {
  const std::string op = lower(a[1]);
  if (op != "and" && op != "or" && op != "xor" && op != "not") return s.syntax(c);
  if (op == "not" && a.size() != 4)
    return s.error(c, "BITOP NOT must be called with a single source key.");
  std::vector<const std::string*> src;
  std::size_t maxlen = 0;
  static const std::string empty;
  for (std::size_t j = 3; j < a.size(); ++j) {
    Value* v = s.lookup_read(c, a[j]);
    if (v != nullptr && v->kind != Value::Kind::string) return s.wrongtype(c);
    src.push_back(v ? &v->str : &empty);
    maxlen = std::max(maxlen, src.back()->size());
  }
  std::string res(maxlen, '\0');
  for (std::size_t i = 0; i < maxlen; ++i) {
    auto byte = [&](std::size_t k) -> unsigned {
      return i < src[k]->size() ? static_cast<unsigned char>((*src[k])[i]) : 0u;
    };
    unsigned out = byte(0);
    if (op == "not") out = ~out;
    for (std::size_t k = 1; k < src.size(); ++k) {
      if (op == "and") out &= byte(k);
      if (op == "or") out |= byte(k);
      if (op == "xor") out ^= byte(k);
    }
    res[i] = static_cast<char>(out & 0xff);
  }
  Db& db = DB(s, c);
  if (maxlen) {
    s.set_key(c, db, a[2], res, false);
    s.notify(NOTIFY_STRING, "set", a[2], c);
  } else {
    s.expire_if_needed(db, a[2]);
    if (db.dict.count(a[2]) != 0) {
      s.db_delete(db, a[2]);
      s.signal_modified(&c, db, a[2]);
      s.notify(NOTIFY_GENERIC, "del", a[2], c);
    }
  }
  s.propagate(c, a);
  s.integer(c, static_cast<std::int64_t>(maxlen));
}

namespace {

// lookupKeyByPattern: "#" is the element; "pre*post" a string key, "pre*post->field" a hash
// field. nullptr when there is nothing there.
const std::string* by_pattern(Impl& s, Client& c, const std::string& pat, const std::string& e,
                              std::string& tmp) {
  if (pat == "#") return &e;
  const auto star = pat.find('*');
  if (star == std::string::npos) return nullptr;
  std::string field;
  std::size_t post_end = pat.size();
  const auto arrow = pat.find("->", star + 1);
  if (arrow != std::string::npos && arrow + 2 < pat.size()) {
    field = pat.substr(arrow + 2);
    post_end = arrow;
  }
  const std::string key = pat.substr(0, star) + e + pat.substr(star + 1, post_end - star - 1);
  Value* v = s.lookup_read(c, key);
  if (v == nullptr) return nullptr;
  if (!field.empty()) {
    if (v->kind != Value::Kind::hash) return nullptr;
    const std::string* f = hash_get(*v, field);
    if (f == nullptr) return nullptr;
    tmp = *f;
    return &tmp;
  }
  if (v->kind != Value::Kind::string) return nullptr;
  tmp = v->str;
  return &tmp;
}

void sort_generic(Impl& s, Client& c, Args& a, bool readonly) {
  bool desc = false, alpha = false, dontsort = false;
  std::int64_t limit_start = 0, limit_count = -1;
  const std::string* sortby = nullptr;
  const std::string* storekey = nullptr;
  std::vector<const std::string*> gets;
  for (std::size_t j = 2; j < a.size(); ++j) {
    const std::size_t left = a.size() - j - 1;
    if (ieq(a[j], "asc")) {
      desc = false;
    } else if (ieq(a[j], "desc")) {
      desc = true;
    } else if (ieq(a[j], "alpha")) {
      alpha = true;
    } else if (ieq(a[j], "limit") && left >= 2) {
      if (!get_ll(s, c, a[j + 1], limit_start) || !get_ll(s, c, a[j + 2], limit_count)) return;
      j += 2;
    } else if (!readonly && ieq(a[j], "store") && left >= 1) {
      storekey = &a[++j];
    } else if (ieq(a[j], "by") && left >= 1) {
      sortby = &a[++j];
      if (sortby->find('*') == std::string::npos) {
        dontsort = true;
      } else if (s.opt.cluster_enabled) {
        return s.error(c, "BY option of SORT denied in Cluster mode.");
      }
    } else if (ieq(a[j], "get") && left >= 1) {
      if (s.opt.cluster_enabled) return s.error(c, "GET option of SORT denied in Cluster mode.");
      gets.push_back(&a[++j]);
    } else {
      return s.syntax(c);
    }
  }
  Value* v = s.lookup_read(c, a[1]);
  if (v != nullptr && v->kind != Value::Kind::set && v->kind != Value::Kind::list &&
      v->kind != Value::Kind::zset)
    return s.wrongtype(c);
  if (dontsort && v != nullptr && v->kind == Value::Kind::set && storekey != nullptr) {
    dontsort = false;
    alpha = true;
    sortby = nullptr;
  }
  std::vector<std::string> elems;
  if (v != nullptr) {
    if (v->kind == Value::Kind::list) {
      elems.assign(v->list.begin(), v->list.end());
    } else if (v->kind == Value::Kind::set) {
      elems = set_members(*v);
    } else {
      for (auto& [sc, m] : v->zorder) elems.push_back(m);
    }
  }
  const auto vectorlen = static_cast<std::int64_t>(elems.size());
  std::int64_t start = std::min(std::max<std::int64_t>(limit_start, 0), vectorlen);
  limit_count = std::min(std::max<std::int64_t>(limit_count, -1), vectorlen);
  std::int64_t end = limit_count < 0 ? vectorlen - 1 : start + limit_count - 1;
  if (start >= vectorlen) {
    start = vectorlen - 1;
    end = vectorlen - 2;
  }
  if (end >= vectorlen) end = vectorlen - 1;
  if (dontsort && v != nullptr && v->kind != Value::Kind::set && desc)
    std::reverse(elems.begin(), elems.end());
  bool conversion_error = false;
  if (!dontsort) {
    struct Item {
      std::string e;
      double score = 0;
      bool has_cmp = false;
      std::string cmp;
    };
    std::vector<Item> items;
    for (auto& e : elems) {
      Item it;
      it.e = e;
      std::string tmp;
      const std::string* byval = &e;
      if (sortby != nullptr) byval = by_pattern(s, c, *sortby, e, tmp);
      if (byval != nullptr) {
        if (alpha) {
          if (sortby != nullptr) {
            it.has_cmp = true;
            it.cmp = *byval;
          }
        } else {
          const std::string z(cstr(*byval));
          char* endp = nullptr;
          errno = 0;
          it.score = std::strtod(z.c_str(), &endp);
          if (*endp != '\0' || errno == ERANGE || std::isnan(it.score)) conversion_error = true;
        }
      }
      items.push_back(std::move(it));
    }
    auto cmp = [&](const Item& x, const Item& y) {
      int r = 0;
      if (!alpha) {
        r = x.score > y.score ? 1 : x.score < y.score ? -1 : x.e.compare(y.e);
      } else if (sortby != nullptr) {
        if (!x.has_cmp || !y.has_cmp) {
          r = x.has_cmp == y.has_cmp ? 0 : (!x.has_cmp ? -1 : 1);
        } else {
          r = x.cmp.compare(y.cmp);
        }
      } else {
        r = x.e.compare(y.e);
      }
      return desc ? r > 0 : r < 0;
    };
    std::stable_sort(items.begin(), items.end(), cmp);
    elems.clear();
    for (auto& it : items) elems.push_back(std::move(it.e));
  } else if (v != nullptr && v->kind != Value::Kind::set) {
    // BY nosort on a list or zset keeps its order (reversed for DESC, done above).
  }
  if (conversion_error) return s.error(c, "One or more scores can't be converted into double");
  const std::int64_t n = end - start + 1;
  const std::int64_t outputlen = gets.empty() ? n : static_cast<std::int64_t>(gets.size()) * n;
  if (storekey == nullptr) {
    s.array(c, static_cast<std::size_t>(std::max<std::int64_t>(0, outputlen)));
    for (std::int64_t j = start; j <= end; ++j) {
      const std::string& e = elems[static_cast<std::size_t>(j)];
      if (gets.empty()) s.bulk(c, e);
      for (auto* g : gets) {
        std::string tmp;
        const std::string* val = by_pattern(s, c, *g, e, tmp);
        if (val == nullptr) {
          s.null(c);
        } else {
          s.bulk(c, *val);
        }
      }
    }
    return;
  }
  Value out;
  out.kind = Value::Kind::list;
  for (std::int64_t j = start; j <= end; ++j) {
    const std::string& e = elems[static_cast<std::size_t>(j)];
    if (gets.empty()) out.list.push_back(e);
    for (auto* g : gets) {
      std::string tmp;
      const std::string* val = by_pattern(s, c, *g, e, tmp);
      out.list.push_back(val ? *val : std::string());
    }
  }
  Db& db = DB(s, c);
  if (outputlen > 0) {
    s.set_value(c, db, *storekey, std::move(out), false);
    s.notify(NOTIFY_LIST, "sortstore", *storekey, c);
  } else {
    s.expire_if_needed(db, *storekey);
    if (db.dict.count(*storekey) != 0) {
      s.db_delete(db, *storekey);
      s.signal_modified(&c, db, *storekey);
      s.notify(NOTIFY_GENERIC, "del", *storekey, c);
    }
  }
  s.propagate(c, a);
  s.integer(c, std::max<std::int64_t>(0, outputlen));
}

}  // namespace

void cmd_sort(Impl& s, Client& c, Args& a) {
  sort_generic(s, c, a, false);
}

void cmd_sort_ro(Impl& s, Client& c, Args& a) {
  sort_generic(s, c, a, true);
}

void memory_usage(Impl& s, Client& c, Args& a) {
  for (std::size_t j = 3; j < a.size(); ++j) {
    if (ieq(a[j], "samples") && j + 1 < a.size()) {
      std::int64_t n = 0;
      if (!get_ll(s, c, a[j + 1], n)) return;
      if (n < 0) return s.syntax(c);
      ++j;
    } else {
      return s.syntax(c);
    }
  }
  Db& db = DB(s, c);
  s.expire_if_needed(db, a[2]);
  auto it = db.dict.find(a[2]);
  if (it == db.dict.end()) return s.null(c);
  s.integer(c, static_cast<std::int64_t>(
                   s.key_memory(it->first, it->second, db.expires.count(a[2]) != 0)));
}

void memory_help(Impl& s, Client& c, Args& a) {
  help_reply(s, c, a,
             {"DOCTOR",
              "    Return memory problems reports.",
              "MALLOC-STATS",
              "    Return internal statistics report from the memory allocator.",
              "PURGE",
              "    Attempt to purge dirty pages for reclamation by the allocator.",
              "STATS",
              "    Return information about the memory usage of the server.",
              "USAGE <key> [SAMPLES <count>]",
              "    Return memory in bytes used by <key> and its value. Nested values are",
              "    sampled up to <count> times (default: 5, 0 means sample all)."});
}

void memory_purge(Impl& s, Client& c, Args&) {
  s.ok(c);
}

}  // namespace lockwire::sim::model
