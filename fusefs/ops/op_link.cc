// link, readlink.
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

void link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent_ino, const char* newname) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  auto newparent = fs.inodes->get(newparent_ino);
  if (!inode || !newparent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*newparent, newname)) return (void)fuse_reply_err(req, EEXIST);
  // Through /proc/self/fd: linkat(AT_EMPTY_PATH) would need CAP_DAC_READ_SEARCH.
  int rv = static_cast<int>(neg(::linkat(AT_FDCWD, ProcPath(inode->fd.get()).c_str(),
                                         newparent->fd.get(), newname, AT_SYMLINK_FOLLOW)));
  fuse_entry_param e{};
  if (rv == 0) rv = do_lookup(fs, newparent_ino, newname, &e);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  if (fuse_reply_entry(req, &e) != 0) fs.inodes->forget(e.ino, 1);
}

void readlink(fuse_req_t req, fuse_ino_t ino) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  char buf[PATH_MAX + 1];
  ssize_t n = sys::readlinkat(inode->fd.get(), "", buf, sizeof buf);
  if (n < 0) return (void)fuse_reply_err(req, static_cast<int>(-n));
  if (static_cast<size_t>(n) >= sizeof buf) return (void)fuse_reply_err(req, ENAMETOOLONG);
  buf[n] = '\0';
  fuse_reply_readlink(req, buf);
}

}  // namespace nfsshim::fuse::ops
