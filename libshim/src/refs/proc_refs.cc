#include "nfsshim/proc_refs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "nfsshim/sys.h"

namespace nfsshim {

namespace {

// Parses digits in BASE at *Q, never past END (strtoull would skip whitespace, newlines
// included, and read into the next line or past the buffer). False if there are none.
bool parse_uint(const char** q, const char* end, int base, uint64_t* v) {
  auto r = std::from_chars(*q, end, *v, base);
  if (r.ec != std::errc()) return false;
  *q = r.ptr;
  return true;
}

}  // namespace

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
    const char* q = p;
    uint64_t start = 0, stop = 0, maj = 0, min = 0, ino = 0;
    bool ok = parse_uint(&q, line_end, 16, &start) && q < line_end && *q++ == '-' &&
              parse_uint(&q, line_end, 16, &stop);
    // Skip perms and offset: two more space-separated fields.
    for (int field = 0; ok && field < 3; ++field) {
      while (q < line_end && *q == ' ') ++q;
      if (field == 2) break;
      while (q < line_end && *q != ' ') ++q;
    }
    ok = ok && parse_uint(&q, line_end, 16, &maj) && q < line_end && *q++ == ':' &&
         parse_uint(&q, line_end, 16, &min) && q < line_end && *q++ == ' ';
    while (ok && q < line_end && *q == ' ') ++q;
    ok = ok && parse_uint(&q, line_end, 10, &ino);
    if (ok && ino != 0) {
      auto key = static_cast<ino_t>(ino);
      auto it = std::lower_bound(by_ino.begin(), by_ino.end(), std::make_pair(key, size_t{0}));
      for (; it != by_ino.end() && it->first == key; ++it)
        if (keys[it->second].dev == makedev(maj, min))
          (*out)[it->second].maps.push_back({static_cast<uintptr_t>(start), static_cast<uintptr_t>(stop)});
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

  sys::Fd dir(sys::open_proc_self("fd", O_RDONLY | O_DIRECTORY));
  if (!dir.valid()) {
    incomplete();
    return out;
  }
  bool saw_dir = false;
  int rv = sys::for_each_name(dir.get(), [&](const char* name) {
    if (name[0] < '0' || name[0] > '9') return true;
    int fd = std::atoi(name);
    if (fd == dir.get()) saw_dir = true;
    if (fd == dir.get() || fd == skip_fd) return true;
    dev_t dev = 0;
    ino_t ino = 0;
    if (sys::fd_inode(fd, &dev, &ino) != 0) return true;  // closed meanwhile
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i].dev == dev && keys[i].ino == ino) out[i].fds.push_back(fd);
    return true;
  });
  // A listing without the descriptor we read it through is not this process's table
  // (an exited leader's, say): what it lacks may be held.
  if (rv < 0 || !saw_dir) incomplete();

  if (fds_suffice) {
    bool all = true;
    for (const auto& r : out) all = all && !r.fds.empty();
    if (all) return out;
  }
  // Stream /proc/self/maps through a small buffer: it can be megabytes in a JVM, and
  // zeroing or growing one big buffer per scan costs more than the scan itself.
  sys::Fd maps(sys::open_proc_self("maps", O_RDONLY));
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
