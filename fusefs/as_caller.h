// The calling thread's filesystem identity switched to the FUSE caller's, for one node
// creation (create, mkdir, mknod, symlink) or one setxattr/removexattr. The node is then
// made as the caller would make it without the mount (its owner, its group or the
// set-group-ID directory's, the permission checks with its supplementary groups; on NFS the
// server sees the caller), and nothing is handed over afterwards: a chown by name could be
// raced by whoever may rename in the directory (another user's file put under the name in
// between, and given away).
// xattrs: the kernel checks neither system.* nor security.* for the caller with
// default_permissions (and POSIX ACLs not at all before Linux 6.2 without FUSE_POSIX_ACL):
// as root, the backing filesystem's owner check (inode_owner_or_capable, the NFS server's)
// would pass for anyone. A fsuid other than 0 also drops CAP_FOWNER, CAP_DAC_OVERRIDE etc.
//
// setfsuid, setfsgid and setgroups are the thread's own only as raw syscalls: glibc's
// setgroups (and setuid) change every thread of the process.
#pragma once

#include <sys/types.h>

#include <vector>

#include "fuse_api.h"

namespace nfsshim::fuse {

struct Fs;

class AsCaller {
 public:
  // Switches unless the caller is the daemon itself (then nothing to do).
  AsCaller(fuse_req_t req, const Fs& fs);
  ~AsCaller();
  AsCaller(const AsCaller&) = delete;
  AsCaller& operator=(const AsCaller&) = delete;
  // 0, or -EPERM if the thread could not take the caller's identity (a daemon without
  // CAP_SETUID/CAP_SETGID serving another user): nothing must be made or set then.
  int error() const { return error_; }
  // After the node DIRFD/NAME was made: a daemon that could not switch because it is the
  // caller's own user gives it the caller's group (unless DIRFD is set-group-ID). 0 or -errno.
  int chown_group(int dirfd, const char* name) const;
  // The same for a file made and opened as FD (create).
  int chown_group(int dirfd, int fd) const;

 private:
  bool groups_set_ = false, fsgid_set_ = false, fsuid_set_ = false;  // what to undo
  gid_t group_ = static_cast<gid_t>(-1);  // for chown_group; -1: nothing to do
  int error_ = 0;
  uid_t uid_ = 0;  // the daemon's, restored at the end
  gid_t gid_ = 0;
  std::vector<gid_t> groups_;
};

// With FUSE_DONT_MASK (asked for with FUSE_POSIX_ACL) the kernel sends a new node's mode
// unmasked and the caller's umask beside it: the umask applies unless the directory has a
// default ACL, which only the backing filesystem knows. So the thread takes the caller's umask for the creation (its
// own umask: unshare(CLONE_FS), once per thread); where that fails the mode is masked here.
class CallerUmask {
 public:
  CallerUmask(fuse_req_t req, const Fs& fs);
  ~CallerUmask();
  CallerUmask(const CallerUmask&) = delete;
  CallerUmask& operator=(const CallerUmask&) = delete;
  // The mode to create with.
  mode_t mode(mode_t m) const { return m & ~mask_; }

 private:
  bool set_ = false;
  mode_t mask_ = 0;
};

}  // namespace nfsshim::fuse
