// Fuzz target: the nfs:// URL parser (libshim nfs/url.h parse_nfs_url, to_string).
// Input: the URL (cut at the first NUL: URLs come from argv and fstab, as C strings).
// Invariants:
//   - rejected: -EINVAL and a non-empty message; the output is left untouched;
//   - accepted: a host without '@', an export path that starts with '/' and has no
//     trailing '/', every number within its documented range;
//   - round trip: when host and export hold none of the URL's own delimiters (% ? &),
//     to_string() parses back to the same settings.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "nfsshim/nfs/url.h"

using nfsshim::nfs::NfsUrl;

namespace {

bool same_settings(const NfsUrl& a, const NfsUrl& b) {  // the fields to_string writes
  return a.host == b.host && a.export_path == b.export_path && a.vers_major == b.vers_major &&
         a.vers_minor == b.vers_minor && a.nconnect == b.nconnect && a.nfsport == b.nfsport &&
         a.mountport == b.mountport && a.uid == b.uid && a.gid == b.gid &&
         a.timeo_ds == b.timeo_ds && a.retrans == b.retrans && a.hard == b.hard && a.io == b.io;
}

void check_ranges(const std::string& url, const NfsUrl& u) {
  const char* q = url.c_str();
  FUZZ_CHECK(!u.host.empty() && u.host.find('@') == std::string::npos, "%s: host %s", q,
             fuzz_quote(u.host).c_str());
  FUZZ_CHECK(!u.export_path.empty() && u.export_path[0] == '/', "%s: export %s", q,
             fuzz_quote(u.export_path).c_str());
  FUZZ_CHECK(u.export_path == "/" || u.export_path.back() != '/', "%s: export %s", q,
             fuzz_quote(u.export_path).c_str());
  FUZZ_CHECK((u.vers_major == 3 && u.vers_minor == 0) || (u.vers_major == 4 && u.vers_minor == 1),
             "%s: vers %d.%d", q, u.vers_major, u.vers_minor);
  FUZZ_CHECK(u.nconnect >= 1 && u.nconnect <= 16, "%s: nconnect %d", q, u.nconnect);
  FUZZ_CHECK(u.nfsport >= 0 && u.nfsport <= 65535 && u.mountport >= 0 && u.mountport <= 65535,
             "%s: ports %d %d", q, u.nfsport, u.mountport);
  FUZZ_CHECK(u.uid >= -1 && u.uid < UINT32_MAX && u.gid >= -1 && u.gid < UINT32_MAX,
             "%s: uid %lld gid %lld", q, static_cast<long long>(u.uid), static_cast<long long>(u.gid));
  FUZZ_CHECK(u.timeo_ds >= 1 && u.timeo_ds <= 36000 && u.retrans >= 0 && u.retrans <= 100,
             "%s: timeo %d retrans %d", q, u.timeo_ds, u.retrans);
  FUZZ_CHECK(u.rsize >= 4096 && u.rsize <= (1u << 20) && u.wsize >= 4096 && u.wsize <= (1u << 20),
             "%s: rsize %u wsize %u", q, u.rsize, u.wsize);
  FUZZ_CHECK(u.slots >= 1 && u.slots <= 1024 && u.max_inflight_mb >= 1 && u.max_inflight_mb <= 4096,
             "%s: slots %d max_inflight_mb %d", q, u.slots, u.max_inflight_mb);
  FUZZ_CHECK(u.max_unstable_mb >= 1 && u.max_unstable_mb <= 65536 && u.commit_secs >= 1 && u.commit_secs <= 3600,
             "%s: max_unstable_mb %d commit_secs %d", q, u.max_unstable_mb, u.commit_secs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string url(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data), size));
  NfsUrl u;
  u.host = "untouched";
  std::string why;
  int rv = nfsshim::nfs::parse_nfs_url(url, &u, &why);
  if (rv != 0) {
    FUZZ_CHECK(rv == -EINVAL, "%s: returned %d", fuzz_quote(url).c_str(), rv);
    FUZZ_CHECK(!why.empty(), "%s rejected without a message", fuzz_quote(url).c_str());
    FUZZ_CHECK(u.host == "untouched", "%s: output changed on failure", fuzz_quote(url).c_str());
    return 0;
  }
  check_ranges(fuzz_quote(url), u);
  if (u.host.find_first_of("%?&/[]") != std::string::npos ||
      u.export_path.find_first_of("%?&") != std::string::npos)
    return 0;
  std::string canon = nfsshim::nfs::to_string(u);
  NfsUrl back;
  std::string why2;
  FUZZ_CHECK(nfsshim::nfs::parse_nfs_url(canon, &back, &why2) == 0, "%s -> %s rejected: %s",
             fuzz_quote(url).c_str(), fuzz_quote(canon).c_str(), why2.c_str());
  FUZZ_CHECK(same_settings(u, back), "%s -> %s parses to other settings", fuzz_quote(url).c_str(),
             fuzz_quote(canon).c_str());
  return 0;
}
