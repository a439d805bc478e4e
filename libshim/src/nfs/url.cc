#include "nfsshim/nfs/url.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <set>

namespace nfsshim::nfs {
namespace {

int bad(std::string* why, const std::string& msg) {
  *why = msg;
  return -EINVAL;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int h = hexval(in[i + 1]), l = hexval(in[i + 2]);
    if (h < 0 || l < 0) return false;
    char c = static_cast<char>(h * 16 + l);
    if (c == '\0') return false;
    out->push_back(c);
    i += 2;
  }
  return true;
}

// Whole-string decimal in [lo, hi].
bool parse_int(const std::string& s, long long lo, long long hi, long long* out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

int int_key(const std::string& key, const std::string& val, long long lo, long long hi,
            long long* out, std::string* why) {
  if (!parse_int(val, lo, hi, out))
    return bad(why, "bad value '" + val + "' for '" + key + "' (want an integer " +
                        std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return 0;
}

int set_key(NfsUrl* u, const std::string& key, const std::string& val, bool has_value,
            std::string* why) {
  long long v = 0;
  int rv = 0;
  if (key == "vers" || key == "version") {
    if (val == "3") {
      u->vers_major = 3;
      u->vers_minor = 0;
    } else if (val == "4.1") {
      u->vers_major = 4;
      u->vers_minor = 1;
    } else {
      return bad(why, "bad value '" + val + "' for '" + key + "' (want 3 or 4.1)");
    }
  } else if (key == "nconnect") {
    if ((rv = int_key(key, val, 1, 16, &v, why)) == 0) u->nconnect = static_cast<int>(v);
  } else if (key == "nfsport") {
    if ((rv = int_key(key, val, 1, 65535, &v, why)) == 0) u->nfsport = static_cast<int>(v);
  } else if (key == "mountport") {
    if ((rv = int_key(key, val, 1, 65535, &v, why)) == 0) u->mountport = static_cast<int>(v);
  } else if (key == "uid") {
    if ((rv = int_key(key, val, 0, UINT32_MAX - 1, &v, why)) == 0) u->uid = v;
  } else if (key == "gid") {
    if ((rv = int_key(key, val, 0, UINT32_MAX - 1, &v, why)) == 0) u->gid = v;
  } else if (key == "timeo") {
    if ((rv = int_key(key, val, 1, 36000, &v, why)) == 0) u->timeo_ds = static_cast<int>(v);
  } else if (key == "retrans") {
    if ((rv = int_key(key, val, 0, 100, &v, why)) == 0) u->retrans = static_cast<int>(v);
  } else if (key == "rsize" || key == "wsize") {
    if ((rv = int_key(key, val, 4096, 1 << 20, &v, why)) == 0)
      (key == "rsize" ? u->rsize : u->wsize) = static_cast<uint32_t>(v);
  } else if (key == "slots") {
    if ((rv = int_key(key, val, 1, 1024, &v, why)) == 0) u->slots = static_cast<int>(v);
  } else if (key == "max_inflight_mb") {
    if ((rv = int_key(key, val, 1, 4096, &v, why)) == 0) u->max_inflight_mb = static_cast<int>(v);
  } else if (key == "max_unstable_mb") {
    if ((rv = int_key(key, val, 1, 65536, &v, why)) == 0) u->max_unstable_mb = static_cast<int>(v);
  } else if (key == "commit_secs") {
    if ((rv = int_key(key, val, 1, 3600, &v, why)) == 0) u->commit_secs = static_cast<int>(v);
  } else if (key == "hard" || key == "soft") {
    if (has_value && !val.empty())
      return bad(why, "'" + key + "' takes no value (got '" + val + "')");
    u->hard = key == "hard";
  } else if (key == "io") {
    if (val == "uring" || val == "io_uring") u->io = IoBackend::kUring;
    else if (val == "epoll") u->io = IoBackend::kEpoll;
    else if (val == "auto") u->io = IoBackend::kAuto;
    else return bad(why, "bad value '" + val + "' for 'io' (want uring, epoll or auto)");
  } else {
    return bad(why, "unknown key '" + key +
                        "' (known: vers, version, nconnect, nfsport, mountport, uid, gid, timeo, "
                        "retrans, hard, soft, io, rsize, wsize, slots, max_inflight_mb, max_unstable_mb, "
                        "commit_secs)");
  }
  return rv;
}

}  // namespace

const char* io_backend_name(IoBackend b) {
  switch (b) {
    case IoBackend::kUring: return "io_uring";
    case IoBackend::kEpoll: return "epoll";
    case IoBackend::kAuto: break;
  }
  return "auto";
}

int parse_nfs_url(const std::string& url, NfsUrl* out, std::string* why) {
  static const std::string kScheme = "nfs://";
  if (url.compare(0, kScheme.size(), kScheme) != 0)
    return bad(why, "'" + url + "' is not an nfs:// URL");
  NfsUrl u;
  std::string rest = url.substr(kScheme.size());
  std::string query;
  size_t q = rest.find('?');
  if (q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  size_t slash = rest.find('/');
  if (slash == std::string::npos) return bad(why, "no export path in '" + url + "' (nfs://HOST/EXPORT)");
  std::string authority = rest.substr(0, slash);
  if (!percent_decode(rest.substr(slash), &u.export_path))
    return bad(why, "bad percent-escape in the export path of '" + url + "'");
  while (u.export_path.size() > 1 && u.export_path.back() == '/') u.export_path.pop_back();

  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    size_t close = authority.find(']');
    if (close == std::string::npos) return bad(why, "unterminated '[' in host of '" + url + "'");
    u.host = authority.substr(1, close - 1);
    std::string tail = authority.substr(close + 1);
    if (!tail.empty()) {
      if (tail[0] != ':') return bad(why, "junk after ']' in host of '" + url + "'");
      port = tail.substr(1);
      if (port.empty()) return bad(why, "empty port in '" + url + "'");
    }
  } else {
    size_t colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return bad(why, "empty port in '" + url + "'");
    }
  }
  if (u.host.empty()) return bad(why, "no host in '" + url + "'");
  if (u.host.find('@') != std::string::npos)
    return bad(why, "user info in the host part is not supported ('" + u.host + "'); use uid=/gid=");
  long long v = 0;
  if (!port.empty()) {
    if (!parse_int(port, 1, 65535, &v)) return bad(why, "bad port '" + port + "' in '" + url + "'");
    u.nfsport = static_cast<int>(v);
  }
  int port_from_authority = u.nfsport;

  std::set<std::string> seen;
  size_t pos = 0;
  while (!query.empty() && pos <= query.size()) {
    size_t amp = query.find('&', pos);
    std::string item = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    pos = amp == std::string::npos ? query.size() + 1 : amp + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), val;
    bool has_value = eq != std::string::npos;
    if (has_value && !percent_decode(item.substr(eq + 1), &val))
      return bad(why, "bad percent-escape in the value of '" + key + "'");
    if (key.empty()) return bad(why, "empty key in the query of '" + url + "'");
    std::string canon = key == "version" ? "vers" : key == "soft" ? "hard" : key;
    if (!seen.insert(canon).second) return bad(why, "key '" + key + "' given twice");
    if (!has_value && key != "hard" && key != "soft")
      return bad(why, "key '" + key + "' needs a value (" + key + "=...)");
    int rv = set_key(&u, key, val, has_value, why);
    if (rv < 0) return rv;
  }
  if (port_from_authority && seen.count("nfsport") && u.nfsport != port_from_authority)
    return bad(why, "port " + std::to_string(port_from_authority) + " in the host part contradicts nfsport=" +
                        std::to_string(u.nfsport));
  *out = u;
  return 0;
}

std::string to_string(const NfsUrl& u) {
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  std::string s = "nfs://" + host + u.export_path + "?vers=" +
                  (u.vers_major == 3 ? std::string("3") : "4.1") +
                  "&nconnect=" + std::to_string(u.nconnect);
  if (u.nfsport) s += "&nfsport=" + std::to_string(u.nfsport);
  if (u.mountport) s += "&mountport=" + std::to_string(u.mountport);
  if (u.uid >= 0) s += "&uid=" + std::to_string(u.uid);
  if (u.gid >= 0) s += "&gid=" + std::to_string(u.gid);
  s += "&timeo=" + std::to_string(u.timeo_ds) + "&retrans=" + std::to_string(u.retrans);
  s += u.hard ? "&hard" : "&soft";
  s += std::string("&io=") + (u.io == IoBackend::kUring ? "uring" : u.io == IoBackend::kEpoll ? "epoll" : "auto");
  return s;
}

}  // namespace nfsshim::nfs
