#include "nfsshim/proc_refs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "nfsshim/sys.h"

namespace nfsshim {

void parse_maps(const char* text, size_t len, const std::vector<InodeKey>& keys,
                std::vector<Refs>* out) {
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
      while (q < line_end && *q == ' ') ++q;
      while (q < line_end && *q != ' ') ++q;  // perms
      std::strtoull(q, &q, 16);                 // offset
      unsigned long maj = std::strtoul(q, &q, 16);
      if (q < line_end && *q == ':') {
        unsigned long min = std::strtoul(q + 1, &q, 16);
        unsigned long long ino = std::strtoull(q, &q, 10);
        if (ino != 0) {
          dev_t dev = makedev(maj, min);
          for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i].dev == dev && keys[i].ino == static_cast<ino_t>(ino))
              (*out)[i].maps.push_back({start, stop});
        }
      }
    }
    p = line_end + 1;
  }
}

std::vector<Refs> scan_refs(const std::vector<InodeKey>& keys, int skip_fd) {
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
  alignas(8) char buf[8192];
  for (;;) {
    long n = sys::getdents64(dir.get(), buf, sizeof buf);
    if (n == -EINTR) continue;
    if (n < 0) {
      incomplete();
      break;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* de = reinterpret_cast<struct dirent64*>(buf + off);
      off += de->d_reclen;
      if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
      int fd = std::atoi(de->d_name);
      if (fd == dir.get() || fd == skip_fd) continue;
      struct stat st;
      if (sys::fstat(fd, &st) != 0) continue;  // closed meanwhile
      for (size_t i = 0; i < keys.size(); ++i)
        if (keys[i].dev == st.st_dev && keys[i].ino == st.st_ino) out[i].fds.push_back(fd);
    }
  }

  // maps can be large (a JVM has thousands of mappings): grow until it fits.
  std::string text;
  size_t cap = 256 * 1024;
  for (;;) {
    text.assign(cap, '\0');
    ssize_t n = sys::read_file(AT_FDCWD, "/proc/self/maps", &text[0], cap);
    if (n < 0) {
      incomplete();
      return out;
    }
    if (static_cast<size_t>(n) < cap) {
      parse_maps(text.data(), static_cast<size_t>(n), keys, &out);
      break;
    }
    cap *= 4;
  }
  return out;
}

}  // namespace nfsshim
