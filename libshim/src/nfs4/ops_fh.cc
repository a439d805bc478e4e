#include "nfsshim/nfs4/ops_fh.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {

int encode_putrootfh(Compound& c) {
  c.begin_op(OP_PUTROOTFH);
  return 0;
}

int encode_putfh(Compound& c, const Fh4& fh) { return encode_putfh(c, fh.data(), fh.size()); }

int encode_putfh(Compound& c, const void* fh, size_t len) {
  if (len == 0 || len > kFhSize) return c.fail(-EINVAL);
  c.begin_op(OP_PUTFH);
  c.enc().opaque(fh, len);
  return 0;
}

int encode_lookup(Compound& c, const std::string& name) {
  if (int rc = check_component(name); rc < 0) return c.fail(rc);
  c.begin_op(OP_LOOKUP);
  c.enc().string(name);
  return 0;
}

int encode_getfh(Compound& c) {
  c.begin_op(OP_GETFH);
  return 0;
}

int encode_savefh(Compound& c) {
  c.begin_op(OP_SAVEFH);
  return 0;
}

int encode_restorefh(Compound& c) {
  c.begin_op(OP_RESTOREFH);
  return 0;
}

int decode_getfh(ReplyReader& r, GetfhRes* out) {
  if (r.next(OP_GETFH, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  if (r.dec().opaque(&out->fh, kFhSize) < 0) return -EBADMSG;
  if (out->fh.empty()) return r.dec().fail("GETFH returned an empty filehandle");
  return 0;
}

}  // namespace nfsshim::nfs4
