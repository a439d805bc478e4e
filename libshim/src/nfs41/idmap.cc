// NFSv4 owner strings to local ids, as the Linux client maps them for sec=sys (the kernel
// tries the number first; nfsidmap(8)'s nsswitch method does "name@domain").
#include "idmap.h"

#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "nfsshim/log.h"
#include "nfsshim/nfs4/fattr4.h"

namespace nfsshim::nfs41 {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// What nfsidmap does without a Domain: the part of the host's canonical name after the
// first dot; "" if it has none.
std::string domain_from_host() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return {};
  if (const char* dot = std::strchr(host, '.'); dot && dot[1]) return dot + 1;
  addrinfo hints{};
  hints.ai_flags = AI_CANONNAME;
  addrinfo* res = nullptr;
  std::string d;
  if (getaddrinfo(host, nullptr, &hints, &res) == 0 && res && res->ai_canonname) {
    if (const char* dot = std::strchr(res->ai_canonname, '.'); dot && dot[1]) d = dot + 1;
  }
  if (res) freeaddrinfo(res);
  return d;
}

// Local names are cached for nfsidmap's key lifetime (600 s): NSS may be LDAP, and a
// listing maps an owner and a group per entry.
constexpr auto kTtl = std::chrono::seconds(600);
constexpr size_t kMaxCached = 4096;
constexpr size_t kMaxLogged = 64;  // distinct unmapped owners named in the log

// A failed lookup (the NSS source down: sssd, LDAP) is kept only briefly: as "no such user"
// for kTtl its owners would meet EACCES (default_permissions) long after the outage.
constexpr auto kErrorTtl = std::chrono::seconds(5);

struct Cached {
  bool found;
  uint32_t id;
  std::chrono::steady_clock::time_point expires;
};

std::mutex mu;
std::map<std::pair<bool, std::string>, Cached> cache;  // (group?, name) -> id
std::set<std::pair<bool, std::string>> logged;

const std::string& local_domain() {
  static const std::string d = [] {
    std::string v = idmapd_domain("/etc/idmapd.conf");
    const char* from = "/etc/idmapd.conf";
    if (v.empty()) {
      v = domain_from_host();
      from = "the host's DNS name";
    }
    if (v.empty()) {
      v = "localdomain";  // nfsidmap's built-in default
      from = "nfsidmap's default";
    }
    SHIM_LOG_INFO("nfs41: owners \"name@{}\" map to local users and groups (domain from {})", v, from);
    return v;
  }();
  return d;
}

// getpwnam_r / getgrnam_r of NAME: 1 and *id if there is such a user (group), 0 if there is
// none, -1 if the lookup failed.
int nss_lookup(bool group, const std::string& name, uint32_t* id) {
  std::vector<char> buf(16384);
  for (;;) {
    int rc;
    if (group) {
      struct group g, *res = nullptr;
      rc = getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &res);
      if (rc == 0) {
        if (res) *id = res->gr_gid;
        return res != nullptr ? 1 : 0;
      }
    } else {
      struct passwd p, *res = nullptr;
      rc = getpwnam_r(name.c_str(), &p, buf.data(), buf.size(), &res);
      if (rc == 0) {
        if (res) *id = res->pw_uid;
        return res != nullptr ? 1 : 0;
      }
    }
    // Some NSS modules say "not found" with an errno instead of 0 and no result.
    if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM) return 0;
    if (rc != ERANGE || buf.size() >= (size_t{1} << 20)) return -1;
    buf.resize(buf.size() * 2);
  }
}

}  // namespace

std::string idmapd_domain(const std::string& path) {
  std::ifstream in(path);
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      size_t end = line.find(']');
      section = trim(line.substr(1, end == std::string::npos ? std::string::npos : end - 1));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos || strcasecmp(section.c_str(), "General") != 0) continue;
    if (strcasecmp(trim(line.substr(0, eq)).c_str(), "Domain") != 0) continue;
    return trim(line.substr(eq + 1));
  }
  return {};
}

uint32_t owner_to_id(const std::string& owner, bool group) {
  uint32_t id;
  if (nfs4::numeric_id(owner, &id)) return id;
  size_t at = owner.find('@');
  auto key = std::make_pair(group, owner);
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = cache.find(key);
    if (it != cache.end() && now < it->second.expires) return it->second.found ? it->second.id : kNobody;
  }
  // Looked up outside the lock: a slow NSS source holds up only this owner's callers.
  const std::string& domain = local_domain();
  int looked = at != std::string::npos && at > 0 && strcasecmp(owner.c_str() + at + 1, domain.c_str()) == 0
                   ? nss_lookup(group, owner.substr(0, at), &id)
                   : 0;
  const bool found = looked == 1;
  std::lock_guard<std::mutex> g(mu);
  if (cache.size() >= kMaxCached) {
    for (auto it = cache.begin(); it != cache.end();)
      it = now >= it->second.expires ? cache.erase(it) : std::next(it);
    if (cache.size() >= kMaxCached) cache.clear();
  }
  cache[key] = Cached{found, found ? id : kNobody, now + (looked < 0 ? kErrorTtl : kTtl)};
  if (looked < 0) {
    if (log::first_time("nfs41-idmap-nss-error"))
      SHIM_LOG_WARN("nfs41: looking up {} '{}' failed (the user/group database did not answer): shown as {} {} "
                    "for a few seconds, then asked again (logged once)",
                    group ? "group" : "owner", owner, group ? "gid" : "uid", kNobody);
  } else if (!found && logged.size() < kMaxLogged && logged.insert(key).second) {
    SHIM_LOG_WARN("nfs41: {} '{}' from the server is no local {} (NFSv4 domain here: {}): shown as {} {}",
                  group ? "group" : "owner", owner, group ? "group" : "user", domain,
                  group ? "gid" : "uid", kNobody);
  }
  return found ? id : kNobody;
}

}  // namespace nfsshim::nfs41
