// AsCaller (as_caller.h): the thread's fsuid, fsgid and groups, switched and restored.
#include "as_caller.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "fs.h"
#include "nfsshim/log.h"

namespace nfsshim::fuse {
namespace {

int set_groups(const std::vector<gid_t>& g) {
  return ::syscall(SYS_setgroups, g.size(), g.empty() ? nullptr : g.data()) == 0 ? 0 : -errno;
}

// setfsuid/setfsgid return the previous id and never fail visibly: asking again with an
// invalid id (-1) returns the current one.
bool set_fsuid(uid_t u) {
  ::syscall(SYS_setfsuid, u);
  return static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1))) == u;
}
bool set_fsgid(gid_t g) {
  ::syscall(SYS_setfsgid, g);
  return static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1))) == g;
}

}  // namespace

AsCaller::AsCaller(fuse_req_t req, const Fs& fs) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == fs.uid && ctx->gid == fs.gid) return;
  uid_ = static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1)));
  gid_ = static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1)));
  int n = static_cast<int>(::syscall(SYS_getgroups, 0, nullptr));
  if (n >= 0) {
    groups_.resize(static_cast<size_t>(n));
    n = static_cast<int>(::syscall(SYS_getgroups, n, groups_.data()));
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
  theirs.resize(k > 0 ? static_cast<size_t>(std::min<int>(k, static_cast<int>(theirs.size()))) : 0);
  switched_ = true;
  if (set_groups(theirs) != 0 || !set_fsgid(ctx->gid) || !set_fsuid(ctx->uid)) {
    if (log::first_time("as_caller"))
      SHIM_LOG_WARN("cannot make nodes as the calling user (uid {}): the daemon lacks the right to switch "
                    "(CAP_SETUID/CAP_SETGID); mkdir, mknod and symlink by other users fail with EPERM",
                    ctx->uid);
    error_ = -EPERM;
  }
}

AsCaller::~AsCaller() {
  if (!switched_) return;
  // The daemon's fsuid first: it brings back the capabilities the switch took away.
  set_fsuid(uid_);
  set_fsgid(gid_);
  set_groups(groups_);
}

}  // namespace nfsshim::fuse
