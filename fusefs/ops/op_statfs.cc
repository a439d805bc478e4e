// statfs: the backing filesystem's numbers.
#include <sys/statvfs.h>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

void statfs(fuse_req_t req, fuse_ino_t ino) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  struct statvfs sv;
  if (::fstatvfs(inode->fd.get(), &sv) == -1) return (void)fuse_reply_err(req, errno);
  fuse_reply_statfs(req, &sv);
}

}  // namespace nfsshim::fuse::ops
