#include "nfsshim/proc_refs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "nfsshim/sys.h"

namespace nfsshim {

void parse_maps(const char* text, size_t len, const std::vector<InodeKey>& keys,
                std::vector<Refs>* out) {
  // A JVM has thousands of mappings and a busy process may track hundreds of buried
  // inodes: parse each line once and look its inode up in a sorted list (no per-key
  // pass over the text).
  std::vector<std::pair<ino_t, size_t>> by_ino;
  for (size_t i = 0; i < keys.size(); ++i) by_ino.emplace_back(keys[i].ino, i);
  std::sort(by_ino.begin(), by_ino.end());
  const char* p = text;
  const char* end = text + len;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* line_end = nl ? nl : end;
    // start-end perms offset major:minor inode [path]
    char* q = nullptr;
    uintptr_t start = std::strtoull(p, &q, 16);
    if (q < line_end && *q == '-') {
      uintptr_t stop = std::strtoull(q + 1, &q, 16);
      // Skip perms and offset: two more space-separated fields.
      for (int field = 0; field < 2 && q < line_end; ++field) {
        while (q < line_end && *q == ' ') ++q;
        while (q < line_end && *q != ' ') ++q;
      }
      unsigned long maj = std::strtoul(q, &q, 16);
      if (q < line_end && *q == ':') {
        unsigned long min = std::strtoul(q + 1, &q, 16);
        auto ino = static_cast<ino_t>(std::strtoull(q, &q, 10));
        auto it = std::lower_bound(by_ino.begin(), by_ino.end(), std::make_pair(ino, size_t{0}));
        for (; ino != 0 && it != by_ino.end() && it->first == ino; ++it)
          if (keys[it->second].dev == makedev(maj, min)) (*out)[it->second].maps.push_back({start, stop});
      }
    }
    p = line_end + 1;
  }
}

std::vector<Refs> scan_refs(const std::vector<InodeKey>& keys, int skip_fd, bool fds_suffice) {
  std::vector<Refs> out(keys.size());
  if (keys.empty()) return out;
  auto incomplete = [&] {
    for (auto& r : out) r.complete = false;
  };

  sys::Fd dir(sys::openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY));
  if (!dir.valid()) {
    incomplete();
    return out;
  }
  int rv = sys::for_each_name(dir.get(), [&](const char* name) {
    if (name[0] < '0' || name[0] > '9') return true;
    int fd = std::atoi(name);
    if (fd == dir.get() || fd == skip_fd) return true;
    struct stat st;
    if (sys::fstat(fd, &st) != 0) return true;  // closed meanwhile
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i].dev == st.st_dev && keys[i].ino == st.st_ino) out[i].fds.push_back(fd);
    return true;
  });
  if (rv < 0) incomplete();

  if (fds_suffice) {
    bool all = true;
    for (const auto& r : out) all = all && !r.fds.empty();
    if (all) return out;
  }
  // Stream /proc/self/maps through a small buffer: it can be megabytes in a JVM, and
  // zeroing or growing one big buffer per scan costs more than the scan itself.
  sys::Fd maps(sys::openat(AT_FDCWD, "/proc/self/maps", O_RDONLY));
  if (!maps.valid()) {
    incomplete();
    return out;
  }
  constexpr size_t kChunk = 32 * 1024;
  std::unique_ptr<char[]> chunk(new char[kChunk]);
  size_t have = 0;  // bytes of an unfinished line kept at the start of the buffer
  for (;;) {
    ssize_t n = sys::read(maps.get(), chunk.get() + have, kChunk - have);
    if (n == -EINTR) continue;
    if (n < 0) {
      incomplete();
      return out;
    }
    size_t total = have + static_cast<size_t>(n);
    if (n == 0) {
      parse_maps(chunk.get(), total, keys, &out);
      break;
    }
    const char* last_nl = static_cast<const char*>(memrchr(chunk.get(), '\n', total));
    if (!last_nl) {  // a line longer than the buffer: only a path can be that long
      if (total == kChunk) have = 0;  // drop it (paths never hold the fields we need)
      else have = total;
      continue;
    }
    size_t done = static_cast<size_t>(last_nl - chunk.get()) + 1;
    parse_maps(chunk.get(), done, keys, &out);
    have = total - done;
    std::memmove(chunk.get(), chunk.get() + done, have);
  }
  return out;
}

}  // namespace nfsshim
