// Shared pieces of the torture driver: counters, the error policy, small helpers.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace torture {

// Counters a worker reports to its supervisor (cumulative, "name=value" pairs).
#define TORTURE_COUNTERS(X)                                                              \
  X(ops) X(bytes_written) X(bytes_verified) X(bytes_lost) X(forbidden) X(plain_errors)   \
  X(unexpected) X(enospc) X(enoent) X(disconnects) X(rolls) X(retention_deletes)         \
  X(partition_deletes) X(partition_moves) X(checkpoints) X(fetches) X(cross_reads)       \
  X(recovered_files) X(zero_pages) X(stale_dirs)

struct Counters {
#define TORTURE_FIELD(n) std::atomic<uint64_t> n{0};
  TORTURE_COUNTERS(TORTURE_FIELD)
#undef TORTURE_FIELD
  std::string line() const;  // "ops=1 bytes_written=2 ..."
};
using Totals = std::map<std::string, uint64_t>;
void parse_counters(const std::string& line, Totals* out);

// What an error may be, besides a bug.
struct Policy {
  bool plain_ok = false;       // EBUSY/ENOTEMPTY are what the plain call gives (graveyard unusable)
  bool enospc_ok = false;      // the filesystem is meant to fill up
  bool disconnect_ok = false;  // the FUSE daemon is meant to be killed under us
};

extern Counters g_count;
extern Policy g_policy;
extern std::atomic<bool> g_stop;

// Classifies errno ERR of OP on PATH: counts it, logs the first few, and stops the
// worker on a disconnect. ENOENT is fine where ENOENT_OK (a racing delete or move).
void note_error(const char* op, const std::string& path, int err, bool enoent_ok);

std::string hex16(uint64_t v);
double now_s();                   // CLOCK_MONOTONIC seconds
long rss_kib(int pid);            // VmRSS of PID in KiB, -1 if gone
bool name_is_silly(const char* name);  // .nfs* or .fuse_hidden*

}  // namespace torture
