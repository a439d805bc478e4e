// AsCaller (as_caller.h): the thread's fsuid, fsgid and groups, switched and restored.
#include "as_caller.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fs.h"
#include "nfsshim/log.h"

// 32-bit x86 and ARM have 16-bit ids behind the plain numbers; the *32 calls take gid_t.
#ifdef SYS_setgroups32
#define NFSSHIM_SYS_SETGROUPS SYS_setgroups32
#define NFSSHIM_SYS_GETGROUPS SYS_getgroups32
#define NFSSHIM_SYS_SETFSUID SYS_setfsuid32
#define NFSSHIM_SYS_SETFSGID SYS_setfsgid32
#else
#define NFSSHIM_SYS_SETGROUPS SYS_setgroups
#define NFSSHIM_SYS_GETGROUPS SYS_getgroups
#define NFSSHIM_SYS_SETFSUID SYS_setfsuid
#define NFSSHIM_SYS_SETFSGID SYS_setfsgid
#endif

namespace nfsshim::fuse {
namespace {

int set_groups(const std::vector<gid_t>& g) {
  return ::syscall(NFSSHIM_SYS_SETGROUPS, g.size(), g.empty() ? nullptr : g.data()) == 0 ? 0 : -errno;
}

// setfsuid/setfsgid return the previous id and never fail visibly: asking again with an
// invalid id (-1) returns the current one.
uid_t fsuid_now() { return static_cast<uid_t>(::syscall(NFSSHIM_SYS_SETFSUID, static_cast<uid_t>(-1))); }
gid_t fsgid_now() { return static_cast<gid_t>(::syscall(NFSSHIM_SYS_SETFSGID, static_cast<gid_t>(-1))); }
bool set_fsuid(uid_t u) {
  ::syscall(NFSSHIM_SYS_SETFSUID, u);
  return fsuid_now() == u;
}
bool set_fsgid(gid_t g) {
  ::syscall(NFSSHIM_SYS_SETFSGID, g);
  return fsgid_now() == g;
}

}  // namespace

AsCaller::AsCaller(fuse_req_t req, const Fs& fs) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == fs.uid && ctx->gid == fs.gid) return;
  if (ctx->uid == fs.uid && fs.uid != 0) {
    // A daemon run by this very user (no right to switch): only the group is the caller's
    // (sg, newgrp), set afterwards by chown_group(); the user may only change its own
    // files' group, so a name swapped meanwhile gives nothing away.
    group_ = ctx->gid;
    return;
  }
  uid_ = fsuid_now();
  gid_ = fsgid_now();
  int n = static_cast<int>(::syscall(NFSSHIM_SYS_GETGROUPS, 0, nullptr));
  if (n >= 0) {
    groups_.resize(static_cast<size_t>(n));
    n = static_cast<int>(::syscall(NFSSHIM_SYS_GETGROUPS, n, groups_.data()));
  }
  if (n < 0) {
    error_ = -EPERM;
    return;
  }
  groups_.resize(static_cast<size_t>(n));
  // The caller's supplementary groups (libfuse reads them from /proc); a caller gone
  // meanwhile has only its primary group.
  std::vector<gid_t> theirs(64);
  int k = fuse_req_getgroups(req, static_cast<int>(theirs.size()), theirs.data());
  if (k > static_cast<int>(theirs.size())) {
    theirs.resize(static_cast<size_t>(k));
    k = fuse_req_getgroups(req, k, theirs.data());
  }
  if (k < 0 && log::first_time("as_caller_groups"))
    SHIM_LOG_WARN("cannot read the supplementary groups of pid {} (uid {}): {}; nodes are made with its "
                  "primary group only (a directory writable through another of its groups refuses them)",
                  ctx->pid, ctx->uid, std::strerror(-k));
  theirs.resize(k > 0 ? static_cast<size_t>(std::min<int>(k, static_cast<int>(theirs.size()))) : 0);
  // Each step only after the one before it worked; the destructor undoes exactly those.
  groups_set_ = set_groups(theirs) == 0;
  fsgid_set_ = groups_set_ && set_fsgid(ctx->gid);
  fsuid_set_ = fsgid_set_ && set_fsuid(ctx->uid);
  if (!fsuid_set_) {
    if (log::first_time("as_caller"))
      SHIM_LOG_WARN("cannot act as the calling user (uid {}): the daemon lacks the right to switch "
                    "(CAP_SETUID/CAP_SETGID); create, mkdir, mknod, symlink, setxattr and removexattr by other "
                    "users fail with EPERM",
                    ctx->uid);
    error_ = -EPERM;
  }
}

AsCaller::~AsCaller() {
  // The daemon's fsuid first: it brings back the capabilities the switch took away.
  bool ok = !fsuid_set_ || set_fsuid(uid_);
  ok = (!fsgid_set_ || set_fsgid(gid_)) && ok;
  ok = (!groups_set_ || set_groups(groups_) == 0) && ok;
  // This worker thread would serve the next requests as the caller: never.
  if (!ok) {
    SHIM_LOG_ERROR("cannot restore the daemon's identity on a worker thread after a caller's create/mkdir/mknod/"
                   "symlink/setxattr/removexattr; stopping");
    std::abort();
  }
}

// GROUP for the node made in DIRFD, named by AT/NAME/FLAGS for fchownat.
static int give_group(gid_t group, int dirfd, int at, const char* name, int flags) {
  if (group == static_cast<gid_t>(-1)) return 0;
  struct stat pst;
  if (::fstat(dirfd, &pst) == 0 && (pst.st_mode & S_ISGID)) return 0;  // the directory's group, as the kernel chose
  return ::fchownat(at, name, static_cast<uid_t>(-1), group, flags) == 0 ? 0 : -errno;
}

int AsCaller::chown_group(int dirfd, const char* name) const {
  return give_group(group_, dirfd, dirfd, name, AT_SYMLINK_NOFOLLOW);
}

int AsCaller::chown_group(int dirfd, int fd) const { return give_group(group_, dirfd, fd, "", AT_EMPTY_PATH); }

CallerUmask::CallerUmask(fuse_req_t req, const Fs& fs) {
  if (!fs.dont_mask) return;  // the kernel applied it
  const mode_t caller = fuse_req_ctx(req)->umask & 0777;
  // 1: this thread has its own umask; -1: it cannot (then the mode is masked).
  static thread_local int own = 0;
  if (own == 0) {
    own = ::unshare(CLONE_FS) == 0 ? 1 : -1;
    if (own < 0 && log::first_time("umask-unshare"))
      SHIM_LOG_WARN("unshare(CLONE_FS): {}; new nodes get the caller's umask even under a default ACL",
                    std::strerror(errno));
  }
  if (own > 0) {
    ::umask(caller);
    set_ = true;
  } else {
    mask_ = caller;
  }
}

CallerUmask::~CallerUmask() {
  if (set_) ::umask(0);  // the daemon's: backing calls create with the mode they are given
}

}  // namespace nfsshim::fuse
