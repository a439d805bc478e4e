// nfs://HOST[:PORT]/EXPORT[?key=value&...]: the one place an NFS source is parsed.
// Keys are strict: an unknown key, a bad value or a contradiction is an error naming it.
#pragma once

#include <cstdint>
#include <string>

namespace nfsshim::nfs {

// Which event loop drives the connections (see event_loop.h).
enum class IoBackend { kAuto, kUring, kEpoll };
const char* io_backend_name(IoBackend b);

struct NfsUrl {
  std::string host;         // name or address; IPv6 literals without the brackets
  std::string export_path;  // "/export", percent-decoded, always starts with '/'
  int vers_major = 3;       // 3, or 4 with vers_minor 1 (parsed; the engine rejects it for now)
  int vers_minor = 0;
  // Connections per mount. 4 by default: on loopback ganesha a single connection stops at one
  // server worker and one client loop, and 4 already spreads over both (tools/bench/engine).
  int nconnect = 4;
  int nfsport = 0;          // 0: ask the portmapper (or HOST:PORT sets it)
  int mountport = 0;        // 0: ask the portmapper
  int64_t uid = -1;         // fixed AUTH_SYS identity; -1: the caller's (FUSE request) or ours
  int64_t gid = -1;
  int timeo_ds = 600;       // per-request timeout in tenths of a second, as the kernel's timeo
  int retrans = 2;          // soft mounts: give up (EIO) after retrans+1 timeouts
  bool hard = true;         // hard: retry forever (logging), soft: EIO after the retries
  IoBackend io = IoBackend::kAuto;
  uint32_t rsize = 1 << 20; // upper bounds; the server's FSINFO rtmax/wtmax may lower them
  uint32_t wsize = 1 << 20;
  int slots = 64;           // in-flight requests per connection (kernel: tcp_slot_table_entries)
  int max_inflight_mb = 64; // in-flight payload bytes, all connections together
  // UNSTABLE data kept for COMMIT, all files together (unstable_limit.h); data kept longer
  // than commit_secs is committed (the kernel's dirty_expire_centisecs is 30 s too).
  int max_unstable_mb = 256;
  int commit_secs = 30;
};

// Returns 0, or -EINVAL with *why naming the problem.
int parse_nfs_url(const std::string& url, NfsUrl* out, std::string* why);

// Canonical string (for logs): nfs://host/export?vers=3&nconnect=N...
std::string to_string(const NfsUrl& u);

}  // namespace nfsshim::nfs
