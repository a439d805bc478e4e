#include "nfsshim/nfs4/ops_attr.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {

int encode_getattr(Compound& c, const Bitmap4& attrs) {
  if (!bitmap_decodable(attrs)) return c.fail(-EINVAL);
  c.begin_op(OP_GETATTR);
  put_bitmap(c.enc(), attrs);
  return 0;
}

int decode_getattr(ReplyReader& r, const Bitmap4& asked, GetattrRes* out) {
  if (r.next(OP_GETATTR, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return get_fattr4(r.dec(), asked, &out->attrs);
}

int encode_setattr(Compound& c, const Stateid4& stateid, const SetAttrs& attrs) {
  rpc::XdrEncoder tmp;  // validate before anything is appended
  if (int rc = put_fattr4(tmp, attrs); rc < 0) return c.fail(rc);
  c.begin_op(OP_SETATTR);
  put_stateid(c.enc(), stateid);
  c.enc().fixed_opaque(tmp.data(), tmp.size());
  return 0;
}

int decode_setattr(ReplyReader& r, const SetAttrs& sent, SetattrRes* out) {
  if (r.next(OP_SETATTR, &out->status) < 0) return -EBADMSG;
  if (get_bitmap(r.dec(), &out->attrsset) < 0) return -EBADMSG;
  if (!out->attrsset.subset_of(setattrs_bitmap(sent))) {
    return r.dec().fail("SETATTR set an attribute we did not send");
  }
  return 0;
}

int encode_access(Compound& c, uint32_t access) {
  if (access == 0 || access > 0x3f) return c.fail(-EINVAL);
  c.begin_op(OP_ACCESS);
  c.enc().u32(access);
  return 0;
}

int decode_access(ReplyReader& r, AccessRes* out) {
  if (r.next(OP_ACCESS, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  r.dec().u32(&out->supported);
  if (r.dec().u32(&out->access) < 0) return -EBADMSG;
  if ((out->access & ~out->supported) != 0) {
    return r.dec().fail("ACCESS granted a right it says it does not support");
  }
  return 0;
}

}  // namespace nfsshim::nfs4
