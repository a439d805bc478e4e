// Helpers shared by the NFSv4.1 engine's source files (not installed).
#pragma once

#include "nfsshim/nfs/engine.h"
#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/fattr4.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/types.h"
#include "nfsshim/nfs41/engine.h"

namespace nfsshim::nfs41 {

void to_attr(const nfs4::Fattr4& f, nfs::Attr* a);
nfs4::SetAttrs to_setattrs(const nfs::SetAttr& sa);
// PUTFH of F from where it lies (a copy into an Fh4 was an allocation per compound).
inline int encode_putfh(nfs4::Compound& k, const nfs::Fh& f) {
  return nfs4::encode_putfh(k, f.data.data(), f.data.size());
}
// True on a recovering thread once one of the recovery's own calls found the session or
// client id lost again (the server restarted in the middle): the pass is void, and
// new_client_locked starts over.
bool recovery_lost();
// How a log line names an open file: files opened by handle have no name.
inline std::string log_name(const OpenFile& f) { return f.name.empty() ? "(by handle)" : f.name; }
inline nfs::Fh fh3(const nfs4::Fh4& f) { return nfs::Fh{std::string(f.begin(), f.end())}; }

// In a decode callback: the server stops at the first failing op, so results end early;
// that is not malformed. Returns from the callback on a malformed result.
#define NFS41_STEP(r, expr)               \
  do {                                    \
    if ((r).results_left() == 0) return 0; \
    if ((expr) < 0) return -EBADMSG;      \
  } while (0)

}  // namespace nfsshim::nfs41
