// Whether libfuse can take requests through a pipe (FUSE_CAP_SPLICE_READ), so that WRITE
// data reaches write_buf as the kernel's own pages instead of a copy in libfuse's buffer.
#pragma once

#include <cstddef>
#include <string>

namespace nfsshim::fuse {

// libfuse splices a request only into a pipe that holds the largest one (MAX_WRITE plus a
// page of headers) and otherwise reads every request. A 1 MiB max_write needs a 2 MiB pipe
// (sizes go by powers of two), above the 1 MiB fs.pipe-max-size that a process without
// CAP_SYS_RESOURCE may ask for. Tries such a pipe; false, with the reason in WHY, if none.
bool request_pipe_fits(size_t max_write, std::string* why);

}  // namespace nfsshim::fuse
