// getattr, setattr (chmod, chown, truncate, utimens).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  struct stat st;
  int rv = stat_inode(fs, *inode, &st);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  fuse_reply_attr(req, &st, fs.opts.attr_timeout);
}

// Applies the changes VALID selects; an open file (FI) is used where there is one, else the
// O_PATH descriptor through /proc/self/fd.
static int do_setattr(Inode& inode, const struct stat& attr, int valid, fuse_file_info* fi) {
  const int ifd = inode.fd.get();
  const ProcPath path(ifd);
  if (valid & FUSE_SET_ATTR_MODE) {
    long rv = fi ? ::fchmod(static_cast<int>(fi->fh), attr.st_mode)
                 : ::fchmodat(AT_FDCWD, path.c_str(), attr.st_mode, 0);
    if (rv == -1) return -errno;
  }
  if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
    uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr.st_uid : static_cast<uid_t>(-1);
    gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr.st_gid : static_cast<gid_t>(-1);
    if (::fchownat(ifd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1) return -errno;
  }
  if (valid & FUSE_SET_ATTR_SIZE) {
    long rv = fi ? ::ftruncate(static_cast<int>(fi->fh), attr.st_size)
                 : ::truncate(path.c_str(), attr.st_size);
    if (rv == -1) return -errno;
  }
  if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
    struct timespec tv[2];
    tv[0].tv_sec = tv[1].tv_sec = 0;
    tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
    if (valid & FUSE_SET_ATTR_ATIME_NOW) tv[0].tv_nsec = UTIME_NOW;
    else if (valid & FUSE_SET_ATTR_ATIME) tv[0] = attr.st_atim;
    if (valid & FUSE_SET_ATTR_MTIME_NOW) tv[1].tv_nsec = UTIME_NOW;
    else if (valid & FUSE_SET_ATTR_MTIME) tv[1] = attr.st_mtim;
    long rv = fi ? ::futimens(static_cast<int>(fi->fh), tv)
                 : ::utimensat(AT_FDCWD, path.c_str(), tv, 0);
    if (rv == -1) return -errno;
  }
  return 0;
}

void setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int valid, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  int rv = do_setattr(*inode, *attr, valid, fi);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  struct stat st;
  rv = stat_inode(fs, *inode, &st);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  fuse_reply_attr(req, &st, fs.opts.attr_timeout);
}

}  // namespace nfsshim::fuse::ops
