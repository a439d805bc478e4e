#include "nfsshim/sys.h"

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

}  // namespace nfsshim::sys
