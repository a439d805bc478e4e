// unlink, rmdir. An unlinked file that is still open goes to the graveyard (see bury()).
#include <fcntl.h>
#include <unistd.h>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

void unlink(fuse_req_t req, fuse_ino_t parent_ino, const char* name) {
  Fs& fs = fs_of(req);
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, ENOENT);
  const int dirfd = parent->fd.get();
  struct stat st;
  int rv = sys::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
  if (rv == 0) rv = sticky_check(req, dirfd, name, &st);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  if (auto inode = fs.inodes->find(key_of(st))) {
    int unlinked = 0;
    rv = bury_or(fs, *inode, dirfd, name, false, [&] { return sys::unlinkat(dirfd, name, 0); }, &unlinked);
    if (rv == 1) settle(fs, *inode);  // nothing open (NFS): the entry goes at once
    return reply_status(req, rv == 0 ? unlinked : rv < 0 ? rv : 0);
  }
  reply_status(req, sys::unlinkat(dirfd, name, 0));
}

void rmdir(fuse_req_t req, fuse_ino_t parent_ino, const char* name) {
  Fs& fs = fs_of(req);
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, ENOENT);
  if (int rv = sticky_check(req, parent->fd.get(), name); rv < 0) return (void)fuse_reply_err(req, -rv);
  reply_status(req, sys::unlinkat(parent->fd.get(), name, AT_REMOVEDIR));
}

}  // namespace nfsshim::fuse::ops
