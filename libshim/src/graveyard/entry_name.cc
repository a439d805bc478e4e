#include "nfsshim/entry_name.h"

#include <cctype>
#include <climits>
#include <charconv>
#include <vector>

namespace nfsshim {

std::string EntryName::format() const {
  std::string s;
  s.reserve(owner.host.size() + 64);
  s += kind;
  s += '~';
  s += owner.host;
  s += '~';
  s += owner.boot;
  if (!owner.pidns.empty()) {
    s += '.';
    s += owner.pidns;
  }
  s += '~';
  s += std::to_string(owner.pid);
  s += '~';
  s += std::to_string(owner.start);
  s += '~';
  s += std::to_string(seq);
  return s;
}

template <typename T>
static bool parse_num(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::optional<EntryName> EntryName::parse(std::string_view name) {
  std::vector<std::string_view> f;
  size_t pos = 0;
  while (f.size() < 6) {
    size_t t = f.size() == 5 ? std::string_view::npos : name.find('~', pos);
    if (t == std::string_view::npos) {
      f.push_back(name.substr(pos));
      break;
    }
    f.push_back(name.substr(pos, t - pos));
    pos = t + 1;
  }
  if (f.size() != 6) return std::nullopt;
  EntryName e;
  if (f[0].size() != 1 || (f[0][0] != 'b' && f[0][0] != 'n' && f[0][0] != 's')) return std::nullopt;
  e.kind = f[0][0];
  if (f[1].empty() || f[2].empty()) return std::nullopt;
  e.owner.host = std::string(f[1]);
  // BOOT or BOOT.PIDNS (since 2026-12-04), both hex.
  const size_t dot = f[2].find('.');
  e.owner.boot = std::string(f[2].substr(0, dot));
  if (dot != std::string_view::npos) {
    e.owner.pidns = std::string(f[2].substr(dot + 1));
    if (e.owner.pidns.empty()) return std::nullopt;
  }
  if (e.owner.boot.empty()) return std::nullopt;
  for (const std::string* h : {&e.owner.boot, &e.owner.pidns})
    for (char c : *h)
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  long pid = 0;
  // A pid is a positive int (pid_t): anything wider would be truncated to another pid.
  if (!parse_num(f[3], &pid) || pid <= 0 || pid > INT_MAX) return std::nullopt;
  e.owner.pid = static_cast<pid_t>(pid);
  if (!parse_num(f[4], &e.owner.start)) return std::nullopt;
  if (!parse_num(f[5], &e.seq)) return std::nullopt;
  return e;
}

}  // namespace nfsshim
