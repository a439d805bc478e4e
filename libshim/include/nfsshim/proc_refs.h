// What this process holds on an inode, read from the kernel's own tables:
// /proc/self/fd (every descriptor, however it was opened: open, fopen, openat,
// glibc-internal opens, raw syscalls) and /proc/self/maps (every file mapping, even
// after its descriptor was closed). Reading the kernel's view at the moment it matters
// (an unlink, a last close) means no open variant can slip past the shim.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace nfsshim {

struct InodeKey {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const InodeKey& o) const { return dev == o.dev && ino == o.ino; }
};

struct MapRange {
  uintptr_t start = 0;
  uintptr_t end = 0;  // exclusive
};

struct Refs {
  std::vector<int> fds;
  std::vector<MapRange> maps;
  bool complete = true;  // false if /proc could not be read: treat as still referenced
  bool any() const { return !complete || !fds.empty() || !maps.empty(); }
};

// One scan of /proc/self/{fd,maps} for several inodes at once: result[i] is KEYS[i].
// SKIP_FD is a descriptor to ignore (one being closed right now), or -1.
// With FDS_SUFFICE, /proc/self/maps (the expensive part: the kernel formats every
// mapping) is only read if some key has no descriptor: the caller then learns *that*
// the inode is referenced, without the list of its mappings.
std::vector<Refs> scan_refs(const std::vector<InodeKey>& keys, int skip_fd = -1,
                            bool fds_suffice = false);

// Parses maps text and appends, for each key, the ranges mapping it.
void parse_maps(const char* text, size_t len, const std::vector<InodeKey>& keys,
                std::vector<Refs>* out);

}  // namespace nfsshim
