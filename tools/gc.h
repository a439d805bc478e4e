// The parts of `nfsshim gc`. Each prints one line per entry it judged:
//   removed: PATH (why)   would remove: PATH (why)   kept: PATH (why)   failed: PATH (error)
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "nfsshim/config.h"

namespace nfsshim::tools {

struct GcOptions {
  bool dry_run = false;
  int64_t max_age_s = 0;  // for entries of other hosts/boots, swept leftovers, silly renames
  time_t now = 0;
  std::string proc = "/proc";  // where to look for processes that hold files
};

struct GcResult {
  unsigned removed = 0;
  unsigned kept = 0;
  unsigned failed = 0;
  void add(const GcResult& o) {
    removed += o.removed;
    kept += o.kept;
    failed += o.failed;
  }
};

// Reaps the graveyard(s) of PATH: a mount root or watched directory holding one, or
// a graveyard directory itself. As root every u<UID> subdirectory, else our own.
GcResult gc_graveyards(const std::string& path, const Config& cfg, const GcOptions& opt);

// Removes silly-renamed files under PATH older than max_age that no process here holds.
GcResult gc_silly(const std::string& path, const GcOptions& opt);

// Removes the stats files of dead processes from DIR (ours only unless root).
GcResult gc_stats(const std::string& dir, const GcOptions& opt);

// Prints one action line (stdout).
void report(const char* action, const std::string& path, const std::string& why);

}  // namespace nfsshim::tools
