// The kernel readahead of our mount. The kernel sets it from the INIT reply (128 KiB unless
// the filesystem asks for less), so it is raised through sysfs once INIT has been served:
// with 128 KiB every sequential READ the daemon gets is 128 KiB.
#pragma once

#include "fuse_api.h"
#include "options.h"

namespace nfsshim::fuse {

// Right after fuse_session_mount (and our io, if any): serves INIT, then sets
// OPTS.read_ahead_kb (0: leaves the kernel's) on the mount at OPTS.mountpoint. A daemon
// that may not write sysfs logs it: a warning if -o read_ahead_kb asked for it.
void serve_init_then_read_ahead(fuse_session* se, const Options& opts);

}  // namespace nfsshim::fuse
