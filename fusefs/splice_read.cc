#include "splice_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>

namespace nfsshim::fuse {
namespace {

bool request_pipe_fits(size_t max_write, std::string* why) {
  const size_t want = max_write + 4096;  // libfuse's FUSE_BUFFER_HEADER_SIZE
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    *why = std::string("pipe2: ") + std::strerror(errno);
    return false;
  }
  const int got = ::fcntl(p[0], F_SETPIPE_SZ, static_cast<int>(want));
  const int err = errno;
  ::close(p[0]);
  ::close(p[1]);
  if (got >= 0 && static_cast<size_t>(got) >= want) return true;
  std::string limit = "?";
  std::ifstream("/proc/sys/fs/pipe-max-size") >> limit;
  *why = "a pipe cannot hold a request of " + std::to_string(want) + " bytes (" +
         (got < 0 ? std::string(std::strerror(err)) : std::to_string(got) + " at most") +
         "; fs.pipe-max-size is " + limit + " and the daemon lacks CAP_SYS_RESOURCE)";
  return false;
}

}  // namespace

bool want_spliced_requests(fuse_conn_info* conn, bool wanted, std::string* why) {
  bool on = false;
  if (wanted && !(conn->capable & FUSE_CAP_SPLICE_READ)) *why = "not offered";
  else if (wanted) on = request_pipe_fits(conn->max_write, why);
  if (on) conn->want |= FUSE_CAP_SPLICE_READ;
  else conn->want &= ~FUSE_CAP_SPLICE_READ;
  return on;
}

}  // namespace nfsshim::fuse
