#include "nfsshim/nfs4/ops_open.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {
namespace {

int get_ace(rpc::XdrDecoder& d, Nfsace4* ace) {
  d.u32(&ace->type);
  d.u32(&ace->flag);
  d.u32(&ace->access_mask);
  return d.string(&ace->who, kMaxStringBytes);
}

int get_delegation(rpc::XdrDecoder& d, OpenDelegation* del) {
  if (d.u32(&del->type) < 0) return -EBADMSG;
  switch (del->type) {
    case OPEN_DELEGATE_NONE: return 0;
    case OPEN_DELEGATE_READ:
      get_stateid(d, &del->stateid);
      d.boolean(&del->recall);
      return get_ace(d, &del->permissions);
    case OPEN_DELEGATE_WRITE:
      get_stateid(d, &del->stateid);
      d.boolean(&del->recall);
      if (d.u32(&del->limitby) < 0) return -EBADMSG;
      if (del->limitby == NFS_LIMIT_SIZE) {
        d.u64(&del->filesize);
      } else if (del->limitby == NFS_LIMIT_BLOCKS) {
        d.u32(&del->num_blocks);
        d.u32(&del->bytes_per_block);
      } else {
        return d.fail("OPEN write delegation with an unknown space limit");
      }
      return get_ace(d, &del->permissions);
    case OPEN_DELEGATE_NONE_EXT:
      if (d.u32(&del->why_none) < 0) return -EBADMSG;
      if (del->why_none == WND4_CONTENTION || del->why_none == WND4_RESOURCE) {
        return d.boolean(&del->server_will_act);
      }
      return 0;
    default: return d.fail("OPEN delegation of an unknown type");
  }
}

}  // namespace

bool preserves_unlinked(const OpenRes& r) {
  return r.status == NFS4_OK && (r.rflags & OPEN4_RESULT_PRESERVE_UNLINKED) != 0;
}

int encode_open(Compound& c, const OpenArgs& a) {
  if (a.claim != CLAIM_NULL && a.claim != CLAIM_FH && a.claim != CLAIM_PREVIOUS)
    return c.fail(-EINVAL);
  // CLAIM_FH and CLAIM_PREVIOUS open the current fh: no name, nothing created.
  if (a.claim != CLAIM_NULL && (a.create || !a.name.empty())) return c.fail(-EINVAL);
  if (a.claim == CLAIM_PREVIOUS && a.delegate_type > OPEN_DELEGATE_WRITE) return c.fail(-EINVAL);
  if (a.claim == CLAIM_NULL) {
    if (int rc = check_component(a.name); rc < 0) return c.fail(rc);
  }
  uint32_t access = a.share_access & 0xff;  // the low byte is the access, the rest wants
  if (access < OPEN4_SHARE_ACCESS_READ || access > OPEN4_SHARE_ACCESS_BOTH) return c.fail(-EINVAL);
  if (a.share_deny > OPEN4_SHARE_DENY_BOTH) return c.fail(-EINVAL);
  if (a.owner.owner.empty() || a.owner.owner.size() > kOpaqueLimit) return c.fail(-EINVAL);
  if (a.create && a.createmode != UNCHECKED4 && a.createmode != GUARDED4 && a.createmode != EXCLUSIVE4_1)
    return c.fail(-EINVAL);
  rpc::XdrEncoder attrs;
  if (a.create) {
    if (int rc = put_fattr4(attrs, a.createattrs); rc < 0) return c.fail(rc);
  }
  c.begin_op(OP_OPEN);
  rpc::XdrEncoder& e = c.enc();
  e.u32(a.seqid);
  e.u32(a.share_access);
  e.u32(a.share_deny);
  put_state_owner(e, a.owner);
  e.u32(a.create ? OPEN4_CREATE : OPEN4_NOCREATE);
  if (a.create) {
    e.u32(a.createmode);
    // createhow4: UNCHECKED4/GUARDED4 carry fattr4, EXCLUSIVE4_1 creatverfattr (verifier4, fattr4)
    if (a.createmode == EXCLUSIVE4_1) e.fixed_opaque(a.createverf.data(), a.createverf.size());
    e.fixed_opaque(attrs.data(), attrs.size());
  }
  e.u32(a.claim);
  if (a.claim == CLAIM_NULL) e.string(a.name);
  if (a.claim == CLAIM_PREVIOUS) e.u32(a.delegate_type);  // open_claim4: delegate_type
  return 0;
}

int decode_open(ReplyReader& r, OpenRes* out) {
  if (r.next(OP_OPEN, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  get_stateid(d, &out->stateid);
  get_change_info(d, &out->cinfo);
  d.u32(&out->rflags);
  get_bitmap(d, &out->attrset);
  return get_delegation(d, &out->delegation);
}

int encode_close(Compound& c, const Stateid4& open_stateid) {
  c.begin_op(OP_CLOSE);
  c.enc().u32(0);  // seqid: unused in v4.1
  put_stateid(c.enc(), open_stateid);
  return 0;
}

int decode_close(ReplyReader& r, CloseRes* out) {
  if (r.next(OP_CLOSE, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  return get_stateid(r.dec(), &out->stateid);
}

}  // namespace nfsshim::nfs4
