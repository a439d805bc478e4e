// init: what we ask of the kernel connection.
#include "fs.h"
#include "nfsshim/log.h"
#include "ops/ops.h"
#include "passthrough.h"
#include "splice_read.h"

namespace nfsshim::fuse::ops {

void init(void* userdata, fuse_conn_info* conn) {
  Fs& fs = *static_cast<Fs*>(userdata);
  // Asking for a capability the kernel lacks aborts the mount: only ask for capable ones.
  auto want = [conn](unsigned cap, bool on) {
    if (on && (conn->capable & cap)) conn->want |= cap;
    else conn->want &= ~cap;
  };
  want(FUSE_CAP_SPLICE_WRITE, fs.opts.splice);
  want(FUSE_CAP_SPLICE_MOVE, fs.opts.splice);
  std::string pipe_why;
  want_spliced_requests(conn, fs.opts.splice, &pipe_why);
  want(FUSE_CAP_WRITEBACK_CACHE, fs.opts.writeback);
  // Drop cached data when the backing file's mtime or size changed behind our back.
  want(FUSE_CAP_AUTO_INVAL_DATA, true);
  want(FUSE_CAP_PARALLEL_DIROPS, true);
  want(FUSE_CAP_ATOMIC_O_TRUNC, true);
  // No getlk/setlk/flock ops: the kernel keeps flock and POSIX locks itself, for every
  // process on this host (they are not forwarded to the NFS server).
  want(FUSE_CAP_POSIX_LOCKS, false);
  want(FUSE_CAP_FLOCK_LOCKS, false);
  // The kernel checks permissions (default_permissions) with the mode bits alone unless
  // it may read POSIX ACLs (system.posix_acl_access, through getxattr): without, an ACL on
  // SOURCE that denies a user is not seen, and the daemon, root, opens for them anyway.
#if defined(FUSE_CAP_POSIX_ACL) && defined(FUSE_CAP_DONT_MASK)
  want(FUSE_CAP_POSIX_ACL, true);
  fs.posix_acl = (conn->want & FUSE_CAP_POSIX_ACL) != 0;
  // With them, the umask is ours to apply (CallerUmask), as a default ACL on SOURCE
  // replaces it there; else the kernel applies it to every new node's mode.
  want(FUSE_CAP_DONT_MASK, fs.posix_acl);
  fs.dont_mask = (conn->want & FUSE_CAP_DONT_MASK) != 0;
#endif
  if (!fs.posix_acl)
    SHIM_LOG_WARN("the kernel does not offer FUSE_POSIX_ACL: POSIX ACLs on SOURCE are not checked");
  // libfuse already raised max_write to its buffer (1 MiB with max_pages on 3.6+).
  SHIM_LOG_INFO("connection: protocol {}.{}, max_write {}, max_readahead {}, splice of replies {}, "
                "of requests {}{}, writeback cache {}",
                conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead,
                (conn->want & FUSE_CAP_SPLICE_WRITE) ? "on" : "off",
                (conn->want & FUSE_CAP_SPLICE_READ) ? "on" : "off", pipe_why.empty() ? "" : " (" + pipe_why + ")",
                (conn->want & FUSE_CAP_WRITEBACK_CACHE) ? "on" : "off");
  // Our io read this INIT request already; its reply asks for passthrough if offered.
  if (!fs.opts.passthrough)
    SHIM_LOG_INFO("kernel passthrough: off (-o nopassthrough); classic path");
  else if (passthrough::kernel_offers())
    SHIM_LOG_INFO("kernel passthrough: on (data I/O of open files bypasses the daemon)");
  else
    passthrough::say_off(fs.opts.passthrough_asked,
                         NFSSHIM_HAVE_PASSTHROUGH ? "the kernel does not offer it (needs Linux 6.9); classic path"
                                                  : "not built (needs libfuse 3.14); classic path");
}

}  // namespace nfsshim::fuse::ops
