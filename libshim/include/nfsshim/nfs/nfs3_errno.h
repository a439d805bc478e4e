// NFSv3 status -> negative errno: the one table (tests/engine/nfs3_errno_test.cc).
#pragma once

namespace nfsshim::nfs {

// 0 for NFS3_OK, else -errno. Unknown codes give -EIO.
int nfs3_errno(int nfsstat3);
const char* nfs3_status_name(int nfsstat3);

}  // namespace nfsshim::nfs
