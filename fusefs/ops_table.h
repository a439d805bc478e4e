#pragma once

#include "fuse_api.h"

namespace nfsshim::fuse {

// Every operation nfsshim-fuse implements, each behind a guard that keeps exceptions
// (bad_alloc) from crossing into libfuse.
fuse_lowlevel_ops make_ops();

}  // namespace nfsshim::fuse
