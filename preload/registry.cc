#include "registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "nfsshim/log.h"
#include "nfsshim/metrics.h"
#include "nfsshim/sys.h"

namespace nfsshim::preload {

Registry& Registry::get() {
  static Registry* r = new Registry;  // never destroyed: close() runs after static dtors
  return *r;
}

bool Registry::fd_tracked(int fd) const {
  if (empty()) return false;
  if (fd < 0) return false;
  if (fd >= kFdBits || unsure_.load(std::memory_order_acquire) != 0) return true;  // the locked path decides
  auto* bits = bits_.load(std::memory_order_acquire);
  return bits && (bits[fd / 64].load(std::memory_order_relaxed) >> (fd % 64) & 1);
}

void Registry::set_fd_bit(int fd, bool on) {
  if (fd < 0 || fd >= kFdBits) return;
  auto* bits = bits_.load(std::memory_order_acquire);
  if (!bits) {
    // 128 KiB of zero pages, only touched where fds are tracked. Raw syscall: our own
    // mmap wrapper must not see it.
    void* p = reinterpret_cast<void*>(::syscall(SYS_mmap, nullptr, kFdBits / 8, PROT_READ | PROT_WRITE,
                                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return;
    bits = static_cast<std::atomic<uint64_t>*>(p);
    bits_.store(bits, std::memory_order_release);
  }
  uint64_t mask = uint64_t{1} << (fd % 64);
  if (on) bits[fd / 64].fetch_or(mask, std::memory_order_relaxed);
  else bits[fd / 64].fetch_and(~mask, std::memory_order_relaxed);
}

void Registry::set_refs_locked(Entry* e, const Refs& refs) {
  if (e->unsure != !refs.complete) {
    e->unsure = !refs.complete;
    if (e->unsure) unsure_.fetch_add(1, std::memory_order_acq_rel);
    else unsure_.fetch_sub(1, std::memory_order_acq_rel);
  }
  size_t old_maps = e->maps.size();
  for (int fd : e->fds) set_fd_bit(fd, false);
  e->fds = refs.fds;
  e->maps = refs.maps;
  for (int fd : e->fds) set_fd_bit(fd, true);
  map_count_.fetch_add(e->maps.size(), std::memory_order_acq_rel);
  map_count_.fetch_sub(old_maps, std::memory_order_acq_rel);
}

void Registry::remove_locked(size_t i) {
  Entry& e = list_[i];
  if (e.unsure) unsure_.fetch_sub(1, std::memory_order_acq_rel);
  for (int fd : e.fds) set_fd_bit(fd, false);
  map_count_.fetch_sub(e.maps.size(), std::memory_order_acq_rel);
  int rv = e.grave->remove(e.name);
  if (rv < 0 && rv != -ENOENT) {
    Counters::inc(counters().errors);
    if (log::first_time("remove-entry"))
      SHIM_LOG_WARN("cannot remove graveyard entry '{}': {} (crash recovery will retry)", e.name,
                    std::strerror(-rv));
  }
  list_.erase(list_.begin() + static_cast<long>(i));
  entries_.store(list_.size(), std::memory_order_release);
  update_gauges_locked();
}

// Whether every reference in REFS still is one to KEY, asking the filesystem nothing
// (statx DONT_SYNC: on NFS a stat would write back a mapping's dirty pages).
static bool still_held(const InodeKey& key, const Refs& refs) {
  auto is_key = [&](int fd) {
    dev_t dev = 0;
    ino_t ino = 0;
    return sys::fd_inode(fd, &dev, &ino) == 0 && dev == key.dev && ino == key.ino;
  };
  for (int fd : refs.fds)
    if (!is_key(fd)) return false;
  if (refs.maps.empty()) return true;
  sys::Fd dir(sys::open_proc_self("map_files", O_RDONLY | O_DIRECTORY));
  if (!dir.valid()) return false;
  for (const auto& m : refs.maps) {
    char name[40];
    std::snprintf(name, sizeof name, "%lx-%lx", static_cast<unsigned long>(m.start),
                  static_cast<unsigned long>(m.end));
    sys::Fd file(sys::openat(dir.get(), name, O_PATH));  // the mapped file, not opened
    if (file.valid()) {
      if (!is_key(file.get())) return false;
      continue;
    }
    // Following a map_files link takes CAP_SYS_ADMIN (a broker is not root): whether the
    // range's first page is still mapped. A mapping made there since by another file keeps
    // the entry until the next recount, as before this check.
    if (file.get() != -EPERM && file.get() != -EACCES) return false;
    unsigned char in_core;
    if (::syscall(SYS_mincore, m.start, 1, &in_core) != 0) return false;
  }
  return true;
}

// Sets the references REFS[i] of the entries from FIRST on (KEYS[i]) and checks them once
// their bits are set: they were read before, and one released in between went through its
// wrapper untracked. From here on a release sees the bits (the wrappers check after their
// real call); one before is seen here (the fence pairs with theirs). Scans again while one
// is gone; after three scans such an entry is unsure (the next close or munmap scans).
void Registry::track_locked(size_t first, const std::vector<InodeKey>& keys, std::vector<Refs>* refs) {
  for (int scans = 1;; ++scans) {
    for (size_t i = 0; i < keys.size(); ++i) set_refs_locked(&list_[first + i], (*refs)[i]);
    full_barrier();
    std::vector<size_t> gone;
    for (size_t i = 0; i < keys.size(); ++i)
      if ((*refs)[i].complete && (*refs)[i].any() && !still_held(keys[i], (*refs)[i])) gone.push_back(i);
    if (gone.empty()) return;
    if (scans == 3) {
      for (size_t i : gone) {
        (*refs)[i].complete = false;
        set_refs_locked(&list_[first + i], (*refs)[i]);
      }
      return;
    }
    *refs = scan_refs(keys);
    Counters::inc(counters().scans);
  }
}

void Registry::add(const InodeKey& key, Graveyard* grave, const std::string& entry,
                   Refs refs) {
  std::lock_guard<std::mutex> lock(mu_1);
  // The same inode buried twice (two names of one file): one entry each; both go
  // when the inode's references are gone.
  Entry e;
  e.key = key;
  e.grave = grave;
  e.name = entry;
  list_.push_back(std::move(e));
  entries_.store(list_.size(), std::memory_order_release);
  counters().live_entries.store(list_.size(), std::memory_order_relaxed);
  if (!refs.any()) {
    remove_locked(list_.size() - 1);
    Counters::inc(counters().removed_at_once);
    return;
  }
  std::vector<Refs> found{std::move(refs)};
  track_locked(list_.size() - 1, {key}, &found);
  if (!found[0].any()) {
    remove_locked(list_.size() - 1);
    Counters::inc(counters().removed_last_ref);
    return;
  }
  update_gauges_locked();
  SHIM_LOG_DEBUG("buried '{}' ({} fds, {} mappings)", entry, found[0].fds.size(), found[0].maps.size());
}

void Registry::recount() {
  std::lock_guard<std::mutex> lock(mu_1);
  if (list_.empty()) return;
  std::vector<InodeKey> keys;
  for (const auto& e : list_) keys.push_back(e.key);
  std::vector<Refs> refs = scan_refs(keys);
  Counters::inc(counters().scans);
  track_locked(0, keys, &refs);
  for (size_t i = list_.size(); i-- > 0;) {
    if (refs[i].any()) continue;
    SHIM_LOG_DEBUG("last reference gone: removing '{}'", list_[i].name);
    remove_locked(i);
    Counters::inc(counters().removed_last_ref);
  }
  update_gauges_locked();
}

void Registry::update_gauges_locked() {
  uint64_t fds = 0, maps = 0;
  for (const auto& e : list_) fds += e.fds.size(), maps += e.maps.size();
  counters().tracked_fds.store(fds, std::memory_order_relaxed);
  counters().tracked_maps.store(maps, std::memory_order_relaxed);
  counters().live_entries.store(list_.size(), std::memory_order_relaxed);
}

bool Registry::overlaps(uintptr_t addr, size_t len) {
  std::lock_guard<std::mutex> lock(mu_1);
  if (unsure_.load(std::memory_order_relaxed) != 0) return true;  // any mapping may be one
  uintptr_t end = addr + len;
  for (const auto& e : list_)
    for (const auto& m : e.maps)
      if (addr < m.end && m.start < end) return true;
  return false;
}

void Registry::dup_fd(int oldfd, int newfd) {
  std::lock_guard<std::mutex> lock(mu_1);
  for (auto& e : list_)
    if (std::find(e.fds.begin(), e.fds.end(), oldfd) != e.fds.end()) {
      e.fds.push_back(newfd);
      set_fd_bit(newfd, true);
    }
  update_gauges_locked();
}

void Registry::mapped(int fd, uintptr_t addr, size_t len) {
  std::lock_guard<std::mutex> lock(mu_1);
  for (auto& e : list_)
    if (std::find(e.fds.begin(), e.fds.end(), fd) != e.fds.end()) {
      e.maps.push_back({addr, addr + len});
      map_count_.fetch_add(1, std::memory_order_acq_rel);
    }
  update_gauges_locked();
}

void Registry::remove_all() {
  std::lock_guard<std::mutex> lock(mu_1);
  while (!list_.empty()) {
    remove_locked(list_.size() - 1);
    Counters::inc(counters().removed_last_ref);
  }
}

void Registry::after_fork_child() {
  // The entries belong to the parent (their names carry its pid): the child neither
  // tracks nor removes them. Descriptors it inherited are plain descriptors to it.
  // atfork_prepare holds mu_1 (in this, the child's only thread) until the end.
  for (auto& e : list_)
    for (int fd : e.fds) set_fd_bit(fd, false);
  list_.clear();
  entries_.store(0, std::memory_order_release);
  map_count_.store(0, std::memory_order_release);
  unsure_.store(0, std::memory_order_release);
  counters().live_entries.store(0, std::memory_order_relaxed);
  mu_1.unlock();
}

}  // namespace nfsshim::preload
