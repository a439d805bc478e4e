// Buried files this process owns, and what still references them. A graveyard entry
// is removed when the last reference goes; the references are re-read from /proc at
// every event that can drop one (close of a tracked fd, munmap/mremap over a tracked
// mapping), so references made by any means are counted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "nfsshim/graveyard.h"
#include "nfsshim/proc_refs.h"

namespace nfsshim::preload {

// The full barrier between a release (a real close or munmap) and its check of the bits,
// paired with Registry's between setting the bits and checking the references it read.
// ThreadSanitizer does not model fences (GCC refuses them under -fsanitize=thread): there
// a seq_cst read-modify-write of one shared word, which it models and which orders the
// same way (every such RMW is in one total order).
#if defined(__SANITIZE_THREAD__)
#define NFSSHIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NFSSHIM_TSAN 1
#endif
#endif
inline void full_barrier() {
#ifdef NFSSHIM_TSAN
  static std::atomic<int> word{0};
  word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

class Registry {
 public:
  static Registry& get();

  // Fast checks, lock-free: false means the call cannot concern a buried file. While the
  // references of an entry are unknown (/proc could not be read: EMFILE) every descriptor
  // and mapping counts, so that the next close or munmap scans again.
  bool fd_tracked(int fd) const;
  bool maps_tracked() const {
    return map_count_.load(std::memory_order_acquire) != 0 || unsure_.load(std::memory_order_acquire) != 0;
  }
  bool empty() const { return entries_.load(std::memory_order_acquire) == 0; }

  // Takes ownership of ENTRY in GRAVE for KEY with the references REFS (already
  // scanned); removes it at once if REFS is empty. A descriptor in REFS closed (or a
  // mapping unmapped) since the scan went through its wrapper untracked: add() and
  // recount() check each reference again once they are tracked, and scan again if one is
  // gone. The wrappers check the bitmap after their real call, so every release by an
  // outermost call is seen by one side or the other, at one fence per close. (A close
  // nested in the shim, from a signal handler that interrupted it, is not looked at.)
  void add(const InodeKey& key, Graveyard* grave, const std::string& entry, Refs refs);

  // Re-reads the references of every entry; removes those with none left.
  void recount();
  // Did [addr, addr+len) overlap a tracked mapping?
  bool overlaps(uintptr_t addr, size_t len);
  // FD now references whatever OLD references (dup); no scan needed.
  void dup_fd(int oldfd, int newfd);
  // A mapping of FD was made at [addr, addr+len).
  void mapped(int fd, uintptr_t addr, size_t len);

  // At exit: remove every entry we own (the kernel keeps the data for the fds that
  // are still open until they close).
  void remove_all();

  std::mutex& mutex() { return mu_1; }
  void after_fork_child();

 private:
  struct Entry {
    InodeKey key;
    Graveyard* grave = nullptr;
    std::string name;
    std::vector<int> fds;
    std::vector<MapRange> maps;
    bool unsure = false;  // the last scan was incomplete: FDS and MAPS may miss some
  };
  void set_refs_locked(Entry* e, const Refs& refs);
  void track_locked(size_t first, const std::vector<InodeKey>& keys, std::vector<Refs>* refs);
  void remove_locked(size_t i);
  void update_gauges_locked();  // tracked_fds, tracked_maps, live_entries
  void set_fd_bit(int fd, bool on);

  std::mutex mu_1;
  std::vector<Entry> list_;
  std::atomic<size_t> entries_{0};
  std::atomic<size_t> map_count_{0};
  std::atomic<size_t> unsure_{0};  // entries whose references are unknown
  // One bit per descriptor below kFdBits; larger descriptors take the locked path.
  static constexpr int kFdBits = 1 << 20;
  std::atomic<std::atomic<uint64_t>*> bits_{nullptr};
};

}  // namespace nfsshim::preload
