#include "nfsshim/proc_refs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "nfsshim/sys.h"

namespace nfsshim {

// One maps line: "start-end perms offset major:minor inode [path]".
static void parse_maps_line(const char* p, const char* line_end, const std::vector<InodeKey>& keys,
                            std::vector<Refs>* out) {
  char* q = nullptr;
  uintptr_t start = std::strtoull(p, &q, 16);
  if (q >= line_end || *q != '-') return;
  uintptr_t stop = std::strtoull(q + 1, &q, 16);
  while (q < line_end && *q == ' ') ++q;
  while (q < line_end && *q != ' ') ++q;  // perms
  std::strtoull(q, &q, 16);                 // offset
  unsigned long maj = std::strtoul(q, &q, 16);
  if (q >= line_end || *q != ':') return;
  unsigned long min = std::strtoul(q + 1, &q, 16);
  unsigned long long ino = std::strtoull(q, &q, 10);
  if (ino == 0) return;
  dev_t dev = makedev(maj, min);
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].dev == dev && keys[i].ino == static_cast<ino_t>(ino)) (*out)[i].maps.push_back({start, stop});
}

void parse_maps(const char* text, size_t len, const std::vector<InodeKey>& keys,
                std::vector<Refs>* out) {
  // Most lines map other files or nothing: only lines that contain one of the inode
  // numbers as a word are parsed in full (a JVM has thousands of mappings).
  std::vector<std::string> needles;
  for (const auto& k : keys) needles.push_back(" " + std::to_string(k.ino) + " ");
  const char* p = text;
  const char* end = text + len;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* line_end = nl ? nl : end;
    // An inode at the very end of a line (no path) has no trailing space: compare the
    // line with its terminator treated as a space.
    std::string_view line(p, static_cast<size_t>(line_end - p));
    bool hit = false;
    for (const auto& n : needles) {
      if (line.find(n) != std::string_view::npos ||
          (line.size() >= n.size() - 1 && line.compare(line.size() - (n.size() - 1), n.size() - 1, n, 0, n.size() - 1) == 0)) {
        hit = true;
        break;
      }
    }
    if (hit) parse_maps_line(p, line_end, keys, out);
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
