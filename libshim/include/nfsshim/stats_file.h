// Published counters: every shimmed process (and the FUSE daemon) keeps its Counters
// in a shared mapping of <stats_dir>/<pid>.stats, so `nfsshim stat` can read them
// while the process runs, and counting stays a relaxed atomic add on plain memory.
//
// File layout (native byte order; the reader rejects anything else):
//   StatsHeader        magic, version, sizes, kind, pid, start time, short name
//   Counters           the uint64 counters of metrics.h, in declaration order
//
// Until publish_counters() succeeds (and when it fails), counters() is a private
// object; publishing copies the values so far into the mapping and switches to it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nfsshim/metrics.h"

namespace nfsshim {

inline constexpr char kStatsMagic[8] = {'N', 'F', 'S', 'S', 'T', 'A', 'T', 'S'};
inline constexpr uint32_t kStatsVersion = 1;

enum class StatsKind : uint32_t { preload = 1, fuse = 2 };
const char* to_string(StatsKind k);

struct StatsHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;    // sizeof(StatsHeader)
  uint32_t counter_count;  // kCounterCount
  uint32_t kind;           // StatsKind
  int32_t pid;
  uint32_t reserved;
  uint64_t start;          // process start time, clock ticks since boot (identity.h)
  char name[32];           // short program name, NUL-terminated
};

struct StatsLayout {
  StatsHeader header;
  Counters counters;
};

// One row per Counters member, in declaration order: the names `nfsshim stat` prints.
struct CounterInfo {
  const char* name;
  const char* help;
  bool gauge;  // a current level (set), not a running total (incremented)
  std::atomic<uint64_t> Counters::*member;
};
inline constexpr size_t kCounterCount = sizeof(Counters) / sizeof(std::atomic<uint64_t>);
extern const CounterInfo kCounterInfo[kCounterCount];

// Creates DIR (mode 1777) if missing, then DIR/<pid>.stats (DIR/<pid>-<8 random hex>.stats
// if another user holds that name), maps it and makes it the live Counters. 0, or -errno with WHY filled; the private counters stay in use then.
// Uses raw syscalls only (safe inside the preload). The file is removed at exit.
int publish_counters(StatsKind kind, const std::string& dir, std::string* why);

// In a fork child: the inherited mapping is the parent's. Moves the child's counters
// to a private copy, then publishes them under the child's pid (same kind and dir).
// Does nothing if the parent had not published.
int republish_counters_after_fork();

// The file the live counters are mapped from ("" if private).
std::string published_stats_path();

struct StatsSnapshot {
  StatsKind kind = StatsKind::preload;
  pid_t pid = 0;
  uint64_t start = 0;
  std::string name;
  std::string file;  // file name inside the stats directory
  uint64_t values[kCounterCount] = {};
};

// Reads DIRFD/NAME. 0 if it is a valid stats file of a live process; -ESRCH if its
// process is gone (or the pid was reused); -EINVAL if it is not a valid stats file;
// other -errno if it cannot be read. PROC is the /proc root (tests point elsewhere).
int read_stats_file(int dirfd, const char* name, StatsSnapshot* out, const char* proc = "/proc");

// True for names of the form <pid>.stats and <pid>-<8 hex>.stats.
bool is_stats_file_name(const char* name);

// Every live process's counters in DIR, sorted by pid, one per pid. A missing DIR is empty.
std::vector<StatsSnapshot> read_stats_dir(const std::string& dir, const char* proc = "/proc");

}  // namespace nfsshim
