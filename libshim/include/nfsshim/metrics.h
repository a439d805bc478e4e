// Process-wide counters. Plain relaxed atomics: updating one costs a few nanoseconds
// and never a syscall, so counting is free on every path.
#pragma once

#include <atomic>
#include <cstdint>

namespace nfsshim {

struct Counters {
  std::atomic<uint64_t> buried{0};          // files moved into a graveyard
  std::atomic<uint64_t> removed_last_ref{0};  // graveyard entries removed at the last reference
  std::atomic<uint64_t> removed_at_once{0};   // mode=all: buried but not referenced, removed at once
  std::atomic<uint64_t> reaped_dead{0};      // entries of dead owners removed (crash recovery)
  std::atomic<uint64_t> swept{0};            // .nfs*/.fuse_hidden* leftovers moved aside for rmdir
  std::atomic<uint64_t> fallbacks{0};        // plain calls because the graveyard could not be used
  std::atomic<uint64_t> scans{0};            // /proc reference scans
  std::atomic<uint64_t> tracked_fds{0};      // descriptors currently known to hold buried files
  std::atomic<uint64_t> tracked_maps{0};     // mappings currently known to hold buried files
  std::atomic<uint64_t> live_entries{0};     // entries this process owns right now
  std::atomic<uint64_t> errors{0};

  static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

Counters& counters();

}  // namespace nfsshim
