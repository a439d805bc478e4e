// Whether libfuse takes requests through a pipe (FUSE_CAP_SPLICE_READ), so that WRITE data
// reaches write_buf as the kernel's own pages instead of a copy in libfuse's buffer.
#pragma once

#include <string>

#include "fuse_api.h"

namespace nfsshim::fuse {

// In an init op: asks CONN for spliced requests if WANTED (-o splice) and they can work:
// offered (our passthrough io reads every request itself) and a pipe holds the largest
// request. libfuse needs max_write plus a page of headers in one pipe, else it reads every
// request anyway: a 2 MiB pipe for a 1 MiB max_write (sizes go by powers of two), above the
// 1 MiB fs.pipe-max-size of a process without CAP_SYS_RESOURCE. True if asked; else the
// want bit is cleared and WHY says why (left empty if not WANTED).
bool want_spliced_requests(fuse_conn_info* conn, bool wanted, std::string* why);

}  // namespace nfsshim::fuse
