#include "read_ahead.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "loop.h"
#include "nfsshim/log.h"
#include "nfsshim/mount_table.h"
#include "nfsshim/sys.h"

namespace nfsshim::fuse {

void serve_init_then_read_ahead(fuse_session* se, const Options& opts) {
  if (serve_init(se) < 0) SHIM_LOG_WARN("no INIT request from the kernel");
  if (opts.read_ahead_kb == 0) return;
  dev_t dev = 0;
  for (const Mount& m : read_mountinfo())
    if (m.point == opts.mountpoint && m.fstype == kFsType) dev = m.dev;
  if (dev == 0) return;
  std::string path = "/sys/class/bdi/" + std::to_string(major(dev)) + ":" +
                     std::to_string(minor(dev)) + "/read_ahead_kb";
  std::string value = std::to_string(opts.read_ahead_kb);
  sys::Fd fd(sys::openat(AT_FDCWD, path.c_str(), O_WRONLY));
  if (fd.valid() && ::write(fd.get(), value.data(), value.size()) >= 0) return;
  const int err = fd.valid() ? errno : -fd.get();
  if (opts.read_ahead_kb_asked)
    SHIM_LOG_WARN("cannot set {} to {}: {}", path, value, std::strerror(err));
  else
    SHIM_LOG_INFO("readahead stays the kernel's: cannot set {} to {}: {}", path, value, std::strerror(err));
}

}  // namespace nfsshim::fuse
