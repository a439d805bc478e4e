#include "nfsshim/nfs4/ops_io.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {

int encode_read(Compound& c, const Stateid4& s, uint64_t offset, uint32_t count) {
  if (count > kMaxIoBytes) return c.fail(-EINVAL);
  c.begin_op(OP_READ);
  put_stateid(c.enc(), s);
  c.enc().u64(offset);
  c.enc().u32(count);
  return 0;
}

int decode_read(ReplyReader& r, uint32_t count, ReadRes* out) {
  const size_t placed = r.placed();
  if (r.next(OP_READ, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.boolean(&out->eof);
  if (placed == 0) return d.opaque_view(&out->data, &out->len, count);
  uint32_t len;
  if (d.u32(&len) < 0) return -EBADMSG;
  if (len > count) return d.fail("opaque longer than its limit");
  if (len != placed) return d.fail("READ data placed elsewhere is not the reply's length");
  if (d.skip(rpc::xdr_pad(len) - len) < 0) return -EBADMSG;  // the pad stayed
  out->data = nullptr;
  out->len = len;
  out->placed = true;
  return 0;
}

int encode_write(Compound& c, const Stateid4& s, uint64_t offset, uint32_t stable,
                 const uint8_t* data, size_t len, std::shared_ptr<const void> owner) {
  if (len > kMaxIoBytes || stable > FILE_SYNC4) return c.fail(-EINVAL);
  c.begin_op(OP_WRITE);
  put_stateid(c.enc(), s);
  c.enc().u64(offset);
  c.enc().u32(stable);
  if (owner && len > 0) c.opaque_tail(data, len, std::move(owner));
  else c.enc().opaque(data, len);
  return 0;
}

int decode_write(ReplyReader& r, size_t len, WriteRes* out) {
  if (r.next(OP_WRITE, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.u32(&out->count);
  d.u32(&out->committed);
  if (d.fixed_opaque(out->verifier.data(), out->verifier.size()) < 0) return -EBADMSG;
  if (out->count > len) return d.fail("WRITE count above what was sent");
  if (out->committed > FILE_SYNC4) return d.fail("WRITE committed is not a stable_how4");
  return 0;
}

int encode_commit(Compound& c, uint64_t offset, uint32_t count) {
  c.begin_op(OP_COMMIT);
  c.enc().u64(offset);
  c.enc().u32(count);
  return 0;
}

int decode_commit(ReplyReader& r, CommitRes* out) {
  if (r.next(OP_COMMIT, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return r.dec().fixed_opaque(out->verifier.data(), out->verifier.size());
}

}  // namespace nfsshim::nfs4
