// The inodes the kernel knows about. An inode number handed to the kernel is
// (generation << 32 | slot): the slot indexes a table, the generation changes every time a
// slot is reused, so a stale number is refused (ESTALE) instead of reaching another file.
//
// Locks (take in this order, never both at once in this code):
//   InodeTable::mu_   inode_table_mu_0: slots, free list, key map, nlookup
//   Inode::mu         inode_mu_1: nopen, grave_entry, the passthrough counts
#pragma once

#include "fuse_api.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "nfsshim/sys.h"

namespace nfsshim::fuse {

struct InodeKey {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const InodeKey& o) const { return dev == o.dev && ino == o.ino; }
};

inline InodeKey key_of(const struct stat& st) { return {st.st_dev, st.st_ino}; }

struct InodeKeyHash {
  size_t operator()(const InodeKey& k) const noexcept {
    return std::hash<uint64_t>()(static_cast<uint64_t>(k.ino) * 0x9E3779B97F4A7C15ull ^
                                 static_cast<uint64_t>(k.dev));
  }
};

// One backing inode. Ops hold a shared_ptr while they run, so a concurrent forget never
// closes the descriptor under them.
struct Inode {
  Inode(sys::Fd f, const InodeKey& k, mode_t t) : fd(std::move(f)), key(k), type(t) {}
  Inode(const Inode&) = delete;
  Inode& operator=(const Inode&) = delete;

  const sys::Fd fd;    // O_PATH descriptor of the backing inode
  const InodeKey key;  // backing (st_dev, st_ino)
  const mode_t type;   // S_IFMT bits

  std::mutex mu;                // inode_mu_1
  uint64_t nopen = 0;           // open files (create/open minus release)
  std::string grave_entry;      // graveyard entry holding the data, while unlinked-but-open
  // Kernel passthrough (passthrough.h): the open files go either all through backing id
  // BACKING_ID or all through the page cache, never both at once.
  int backing_id = 0;
  uint64_t passthrough_opens = 0;
  uint64_t cached_opens = 0;
  // Once opened through passthrough, a mapping may hold the backing file after the release
  // (the kernel maps the backing file itself): on NFS or FUSE its unlinks always go through
  // the graveyard (bury).
  bool passthrough_seen = false;
};

class InodeTable {
 public:
  // The root (FUSE_ROOT_ID) is SOURCE: FD is its O_PATH descriptor. Never forgotten.
  InodeTable(sys::Fd root_fd, const struct stat& st);
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  // The inode behind INO, or nullptr if INO is unknown or stale.
  std::shared_ptr<Inode> get(fuse_ino_t ino) const;
  // The inode with KEY, if the kernel knows it.
  std::shared_ptr<Inode> find(const InodeKey& key) const;
  // One more kernel lookup of the inode ST describes: finds it, or makes it from FD (an
  // O_PATH descriptor of that inode; dropped if the inode is known already). Returns the
  // inode number and its generation.
  fuse_ino_t add_lookup(sys::Fd fd, const struct stat& st, uint64_t* generation);
  // How many inodes the table has made so far. Read it before a stat by name whose key
  // add_known_lookup then takes: an inode made before the stat held its file (and so its
  // number) the whole time, so the name named that file.
  uint64_t made() const { return made_.load(std::memory_order_acquire); }
  // One more kernel lookup of the inode with KEY if it is known and was made before MADE
  // was read (its number, or 0 if not). A newer one may be a file that took the number of
  // the one stat'ed, deleted on SOURCE since (local filesystems reuse freed numbers).
  fuse_ino_t add_known_lookup(const InodeKey& key, uint64_t made, uint64_t* generation);
  // INODE's file is gone although the kernel still knows its number (a FUSE or NFS backing
  // filesystem reused its inode number): later lookups of the key must not find it.
  void retire(const Inode& inode);
  // The kernel forgets N lookups; the slot is freed at zero.
  void forget(fuse_ino_t ino, uint64_t n);
  // Every live inode (shutdown cleanup).
  std::vector<std::shared_ptr<Inode>> all() const;
  size_t size() const;

 private:
  struct Slot {
    std::shared_ptr<Inode> inode;
    uint64_t nlookup = 0;
    uint32_t gen = 0;
    uint64_t made = 0;  // made_ when the inode was made
  };
  static fuse_ino_t make_ino(uint32_t slot, uint32_t gen) {
    return (static_cast<uint64_t>(gen) << 32) | slot;
  }

  mutable std::mutex mu_;  // inode_table_mu_0
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::unordered_map<InodeKey, uint32_t, InodeKeyHash> by_key_;
  std::atomic<uint64_t> made_{0};  // written under mu_
};

static_assert(sizeof(fuse_ino_t) >= 8, "inode numbers carry a 32-bit generation");

}  // namespace nfsshim::fuse
