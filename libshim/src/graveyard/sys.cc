#include "nfsshim/sys.h"

#include <sys/resource.h>

#include <cstdlib>

namespace nfsshim::sys {

ssize_t read_file(int dirfd, const char* path, char* buf, size_t cap) {
  int fd = openat(dirfd, path, O_RDONLY);
  if (fd < 0) return fd;
  size_t got = 0;
  while (got < cap) {
    ssize_t n = read(fd, buf + got, cap - got);
    if (n == -EINTR) continue;
    if (n < 0) {
      close(fd);
      return n;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return static_cast<ssize_t>(got);
}

void close_from(int lowfd) {
  unsigned low = lowfd > 0 ? static_cast<unsigned>(lowfd) : 0;  // glibc's: MAX (0, lowfd)
#ifdef SYS_close_range
  if (ret(::syscall(SYS_close_range, low, ~0U, 0)) == 0) return;
#endif
  // Batches: closing while reading the listing could skip entries.
  for (;;) {
    int dir = open_proc_self("fd", O_RDONLY | O_DIRECTORY);
    if (dir < 0) break;
    int batch[256];
    size_t n = 0;
    bool more = false;
    int listed = for_each_name(dir, [&](const char* name) {
      if (name[0] < '0' || name[0] > '9') return true;
      int fd = std::atoi(name);
      if (fd == dir || static_cast<unsigned>(fd) < low) return true;
      if (n == sizeof batch / sizeof batch[0]) {
        more = true;
        return false;
      }
      batch[n++] = fd;
      return true;
    });
    close(dir);
    for (size_t i = 0; i < n; ++i) close(batch[i]);
    if (listed < 0) break;  // a listing cut short: the loop below closes the rest
    if (!more) return;
  }
  struct rlimit rl;
  rlim_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 65536;
  if (limit > (rlim_t{1} << 20)) limit = rlim_t{1} << 20;
  for (rlim_t fd = low; fd < limit; ++fd) close(static_cast<int>(fd));
}

}  // namespace nfsshim::sys
