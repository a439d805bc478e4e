// getxattr, setxattr, listxattr, removexattr through /proc/self/fd. There is no race-free
// way to reach a symlink's own xattrs from an O_PATH descriptor before Linux 6.13
// (getxattrat): symlinks answer ENOTSUP, as in libfuse's passthrough_hp.
//
// setxattr and removexattr run as the caller (as_caller.h): -o default_permissions does not
// cover them. The kernel leaves system.* (and security.*) to the filesystem, and before
// Linux 6.2 a FUSE mount without FUSE_POSIX_ACL gets system.posix_acl_* as plain xattrs with
// no owner check; system.nfs4_acl on NFS on any kernel. Done as root, any local user could
// give themselves access to root's files; as the caller, the backing filesystem judges them.
// listxattr runs as root, so it leaves out trusted.* names for callers other than root.
#include <sys/xattr.h>

#include <cstring>
#include <vector>

#include "as_caller.h"
#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {
namespace {

std::shared_ptr<Inode> xattr_inode(fuse_req_t req, fuse_ino_t ino) {
  auto inode = fs_of(req).inodes->get(ino);
  if (!inode) {
    fuse_reply_err(req, ESTALE);
    return nullptr;
  }
  if (inode->type == S_IFLNK) {
    fuse_reply_err(req, ENOTSUP);
    return nullptr;
  }
  return inode;
}

// Replies to a get/list call: the size if SIZE is 0, else the bytes.
template <typename Call>
void reply_sized(fuse_req_t req, size_t size, Call call) {
  if (size == 0) {
    ssize_t n = call(nullptr, 0);
    if (n < 0) return (void)fuse_reply_err(req, errno);
    return (void)fuse_reply_xattr(req, static_cast<size_t>(n));
  }
  std::vector<char> buf(size);
  ssize_t n = call(buf.data(), size);
  if (n < 0) return (void)fuse_reply_err(req, errno);
  fuse_reply_buf(req, buf.data(), static_cast<size_t>(n));
}

}  // namespace

void getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto inode = xattr_inode(req, ino);
  if (!inode) return;
  const ProcPath path(inode->fd.get());
  // The kernel reads ACLs here for its permission checks (FUSE_POSIX_ACL) and takes only
  // ENODATA for "none": any other error fails the check, for every caller but the owner.
  // A SOURCE without ACLs says EOPNOTSUPP (NFSv4 before Linux 6.2, vfat, noacl, ramfs);
  // an unreachable one EIO: the mode bits decide then, as before FUSE_POSIX_ACL.
  const bool acl = std::strcmp(name, "system.posix_acl_access") == 0 ||
                   std::strcmp(name, "system.posix_acl_default") == 0;
  reply_sized(req, size, [&](char* b, size_t n) {
    ssize_t rv = ::getxattr(path.c_str(), name, b, n);
    if (rv < 0 && acl && errno != ERANGE) errno = ENODATA;
    return rv;
  });
}

// The names of PATH's xattrs without trusted.*, in *OUT; the kernel lists those only to a
// caller with CAP_SYS_ADMIN (we list as root, whoever asks). Negative errno on failure.
static int names_without_trusted(const char* path, std::vector<char>* out) {
  std::vector<char> all;
  for (int tries = 0; tries < 8; ++tries) {  // the list may grow between size and read
    ssize_t n = ::listxattr(path, nullptr, 0);
    if (n < 0) return -errno;
    all.resize(static_cast<size_t>(n));
    n = n == 0 ? 0 : ::listxattr(path, all.data(), all.size());
    if (n < 0 && errno == ERANGE) continue;
    if (n < 0) return -errno;
    all.resize(static_cast<size_t>(n));
    out->clear();
    for (size_t i = 0; i < all.size();) {
      size_t len = ::strnlen(&all[i], all.size() - i) + 1;
      if (std::strncmp(&all[i], "trusted.", 8) != 0) out->insert(out->end(), &all[i], &all[i] + len);
      i += len;
    }
    return 0;
  }
  return -ERANGE;
}

void listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto inode = xattr_inode(req, ino);
  if (!inode) return;
  const ProcPath path(inode->fd.get());
  // A caller with CAP_SYS_ADMIN sees what listxattr gives us (not every uid 0 has it).
  if (caller_has_cap(req, 21 /* CAP_SYS_ADMIN */))
    return reply_sized(req, size, [&](char* b, size_t n) { return ::listxattr(path.c_str(), b, n); });
  std::vector<char> names;
  if (int rv = names_without_trusted(path.c_str(), &names); rv < 0) return (void)fuse_reply_err(req, -rv);
  if (size == 0) return (void)fuse_reply_xattr(req, names.size());
  if (names.size() > size) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, names.data(), names.size());
}

void setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  auto inode = xattr_inode(req, ino);
  if (!inode) return;
  int rv;
  {
    AsCaller as(req, fs_of(req));
    rv = as.error();
    if (rv == 0)
      rv = static_cast<int>(neg(::setxattr(ProcPath(inode->fd.get()).c_str(), name, value, size, flags)));
  }
  reply_status(req, rv);
}

void removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  auto inode = xattr_inode(req, ino);
  if (!inode) return;
  int rv;
  {
    AsCaller as(req, fs_of(req));
    rv = as.error();
    if (rv == 0) rv = static_cast<int>(neg(::removexattr(ProcPath(inode->fd.get()).c_str(), name)));
  }
  reply_status(req, rv);
}

}  // namespace nfsshim::fuse::ops
