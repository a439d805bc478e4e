#include "nfsshim/nfs4/ops_lock.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {
namespace {

constexpr uint32_t kMaxTestStateids = 64;

bool valid_locktype(uint32_t t) { return t >= READ_LT && t <= WRITEW_LT; }

int get_denied(rpc::XdrDecoder& d, LockDenied* den) {
  d.u64(&den->offset);
  d.u64(&den->length);
  d.u32(&den->locktype);
  return get_state_owner(d, &den->owner);
}

}  // namespace

int encode_lock(Compound& c, const LockArgs& a) {
  if (!valid_locktype(a.locktype) || a.length == 0) return c.fail(-EINVAL);
  if (a.new_lock_owner && (a.lock_owner.owner.empty() || a.lock_owner.owner.size() > kOpaqueLimit)) {
    return c.fail(-EINVAL);
  }
  c.begin_op(OP_LOCK);
  rpc::XdrEncoder& e = c.enc();
  e.u32(a.locktype);
  e.boolean(a.reclaim);
  e.u64(a.offset);
  e.u64(a.length);
  e.boolean(a.new_lock_owner);
  if (a.new_lock_owner) {
    e.u32(0);  // open_seqid: unused in v4.1
    put_stateid(e, a.open_stateid);
    e.u32(0);  // lock_seqid
    put_state_owner(e, a.lock_owner);
  } else {
    put_stateid(e, a.lock_stateid);
    e.u32(0);  // lock_seqid
  }
  return 0;
}

int decode_lock(ReplyReader& r, LockRes* out) {
  if (r.next(OP_LOCK, &out->status) < 0) return -EBADMSG;
  if (out->status == NFS4_OK) return get_stateid(r.dec(), &out->stateid);
  if (out->status == NFS4ERR_DENIED) return get_denied(r.dec(), &out->denied);
  return 0;
}

int encode_locku(Compound& c, uint32_t locktype, const Stateid4& lock_stateid, uint64_t offset,
                 uint64_t length) {
  if (!valid_locktype(locktype) || length == 0) return c.fail(-EINVAL);
  c.begin_op(OP_LOCKU);
  rpc::XdrEncoder& e = c.enc();
  e.u32(locktype);
  e.u32(0);  // seqid
  put_stateid(e, lock_stateid);
  e.u64(offset);
  e.u64(length);
  return 0;
}

int decode_locku(ReplyReader& r, LockuRes* out) {
  if (r.next(OP_LOCKU, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return get_stateid(r.dec(), &out->stateid);
}

int encode_lockt(Compound& c, uint32_t locktype, uint64_t offset, uint64_t length,
                 const StateOwner4& owner) {
  if (!valid_locktype(locktype) || length == 0) return c.fail(-EINVAL);
  if (owner.owner.empty() || owner.owner.size() > kOpaqueLimit) return c.fail(-EINVAL);
  c.begin_op(OP_LOCKT);
  rpc::XdrEncoder& e = c.enc();
  e.u32(locktype);
  e.u64(offset);
  e.u64(length);
  put_state_owner(e, owner);
  return 0;
}

int decode_lockt(ReplyReader& r, LocktRes* out) {
  if (r.next(OP_LOCKT, &out->status) < 0) return -EBADMSG;
  if (out->status == NFS4ERR_DENIED) return get_denied(r.dec(), &out->denied);
  return 0;
}

int encode_test_stateid(Compound& c, const std::vector<Stateid4>& ids) {
  if (ids.empty() || ids.size() > kMaxTestStateids) return c.fail(-EINVAL);
  c.begin_op(OP_TEST_STATEID);
  c.enc().u32(static_cast<uint32_t>(ids.size()));
  for (const Stateid4& s : ids) put_stateid(c.enc(), s);
  return 0;
}

int decode_test_stateid(ReplyReader& r, size_t sent, TestStateidRes* out) {
  if (r.next(OP_TEST_STATEID, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  uint32_t n;
  if (d.array_count(&n, kMaxTestStateids, 4, "TEST_STATEID too many codes") < 0) return -EBADMSG;
  if (n != sent) return d.fail("TEST_STATEID code count differs from stateids sent");
  out->codes.resize(n);
  for (uint32_t i = 0; i < n; ++i) d.u32(&out->codes[i]);
  return d.ok() ? 0 : -EBADMSG;
}

int encode_free_stateid(Compound& c, const Stateid4& s) {
  c.begin_op(OP_FREE_STATEID);
  put_stateid(c.enc(), s);
  return 0;
}

}  // namespace nfsshim::nfs4
