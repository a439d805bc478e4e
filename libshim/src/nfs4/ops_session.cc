#include "nfsshim/nfs4/ops_session.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {
namespace {

void put_impl_id(rpc::XdrEncoder& e, const ImplId4& id) {
  e.string(id.domain);
  e.string(id.name);
  put_nfstime(e, id.date);
}

int get_impl_id(rpc::XdrDecoder& d, ImplId4* id) {
  d.string(&id->domain, kOpaqueLimit);
  d.string(&id->name, kOpaqueLimit);
  return get_nfstime(d, &id->date);
}

void put_channel_attrs(rpc::XdrEncoder& e, const ChannelAttrs4& a) {
  e.u32(a.headerpadsize);
  e.u32(a.maxrequestsize);
  e.u32(a.maxresponsesize);
  e.u32(a.maxresponsesize_cached);
  e.u32(a.maxoperations);
  e.u32(a.maxrequests);
  e.u32(a.has_rdma_ird ? 1 : 0);
  if (a.has_rdma_ird) e.u32(a.rdma_ird);
}

int get_channel_attrs(rpc::XdrDecoder& d, ChannelAttrs4* a) {
  d.u32(&a->headerpadsize);
  d.u32(&a->maxrequestsize);
  d.u32(&a->maxresponsesize);
  d.u32(&a->maxresponsesize_cached);
  d.u32(&a->maxoperations);
  d.u32(&a->maxrequests);
  uint32_t n;
  if (d.array_count(&n, 1, 4, "channel_attrs4 ca_rdma_ird has more than one value") < 0) {
    return -EBADMSG;
  }
  a->has_rdma_ird = n == 1;
  if (a->has_rdma_ird) d.u32(&a->rdma_ird);
  return d.ok() ? 0 : -EBADMSG;
}

}  // namespace

int encode_exchange_id(Compound& c, const ExchangeIdArgs& a) {
  if (a.owner_id.empty() || a.owner_id.size() > kOpaqueLimit) return c.fail(-EINVAL);
  if (a.send_impl_id && (a.impl_id.domain.size() > kOpaqueLimit ||
                         a.impl_id.name.size() > kOpaqueLimit)) {
    return c.fail(-EINVAL);
  }
  c.begin_op(OP_EXCHANGE_ID);
  rpc::XdrEncoder& e = c.enc();
  e.fixed_opaque(a.verifier.data(), a.verifier.size());
  e.opaque(a.owner_id.data(), a.owner_id.size());
  e.u32(a.flags);
  e.u32(SP4_NONE);
  e.u32(a.send_impl_id ? 1 : 0);
  if (a.send_impl_id) put_impl_id(e, a.impl_id);
  return 0;
}

int decode_exchange_id(ReplyReader& r, ExchangeIdRes* out) {
  if (r.next(OP_EXCHANGE_ID, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.u64(&out->clientid);
  d.u32(&out->sequenceid);
  d.u32(&out->flags);
  if (d.u32(&out->state_protect) < 0) return -EBADMSG;
  if (out->state_protect == SP4_MACH_CRED) {
    Bitmap4 enforce, allow;  // state_protect_ops4: which ops must/may use the machine cred
    get_bitmap_truncating(d, &enforce);
    get_bitmap_truncating(d, &allow);
  } else if (out->state_protect != SP4_NONE) {
    return d.fail("EXCHANGE_ID state protection we did not ask for");
  }
  d.u64(&out->server_minor_id);
  d.opaque(&out->server_major_id, kOpaqueLimit);
  d.opaque(&out->server_scope, kOpaqueLimit);
  uint32_t n;
  if (d.array_count(&n, 1, 20, "EXCHANGE_ID has more than one server impl id") < 0) return -EBADMSG;
  out->has_impl_id = n == 1;
  if (out->has_impl_id) get_impl_id(d, &out->server_impl_id);
  return d.ok() ? 0 : -EBADMSG;
}

ChannelAttrs4 default_fore_channel(uint32_t slots) {
  ChannelAttrs4 a;
  // 1 MiB of data plus room for the RPC and COMPOUND headers and a few attributes.
  a.maxrequestsize = (1u << 20) + 4096;
  a.maxresponsesize = (1u << 20) + 4096;
  a.maxresponsesize_cached = 8192;
  a.maxoperations = 16;
  a.maxrequests = slots;
  return a;
}

ChannelAttrs4 default_back_channel() {
  ChannelAttrs4 a;
  a.maxrequestsize = 4096;
  a.maxresponsesize = 4096;
  a.maxresponsesize_cached = 0;
  a.maxoperations = 2;
  a.maxrequests = 1;
  return a;
}

int encode_create_session(Compound& c, const CreateSessionArgs& a) {
  if (a.cb_sec.flavor != rpc::kAuthNone && a.cb_sec.flavor != rpc::kAuthSys) return c.fail(-EINVAL);
  if (a.fore.maxrequests == 0) return c.fail(-EINVAL);
  c.begin_op(OP_CREATE_SESSION);
  rpc::XdrEncoder& e = c.enc();
  e.u64(a.clientid);
  e.u32(a.sequence);
  e.u32(a.flags);
  put_channel_attrs(e, a.fore);
  put_channel_attrs(e, a.back);
  e.u32(a.cb_program);
  e.u32(1);  // csa_sec_parms<>: one entry
  e.u32(a.cb_sec.flavor);
  if (a.cb_sec.flavor == rpc::kAuthSys) return c.fail(rpc::encode_auth_sys(e, a.cb_sec.sys));
  return 0;
}

int decode_create_session(ReplyReader& r, CreateSessionRes* out) {
  if (r.next(OP_CREATE_SESSION, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.fixed_opaque(out->sessionid.data(), out->sessionid.size());
  d.u32(&out->sequence);
  d.u32(&out->flags);
  get_channel_attrs(d, &out->fore);
  get_channel_attrs(d, &out->back);
  if (!d.ok()) return -EBADMSG;
  if (out->fore.maxrequests == 0) return d.fail("CREATE_SESSION granted no slots");
  return 0;
}

int encode_sequence(Compound& c, const SequenceArgs& a) {
  if (a.slotid > a.highest_slotid) return c.fail(-EINVAL);
  c.begin_op(OP_SEQUENCE);
  rpc::XdrEncoder& e = c.enc();
  e.fixed_opaque(a.sessionid.data(), a.sessionid.size());
  e.u32(a.sequenceid);
  e.u32(a.slotid);
  e.u32(a.highest_slotid);
  e.boolean(a.cachethis);
  return 0;
}

int decode_sequence(ReplyReader& r, SequenceRes* out) {
  if (r.next(OP_SEQUENCE, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.fixed_opaque(out->sessionid.data(), out->sessionid.size());
  d.u32(&out->sequenceid);
  d.u32(&out->slotid);
  d.u32(&out->highest_slotid);
  d.u32(&out->target_highest_slotid);
  d.u32(&out->status_flags);
  if (!d.ok()) return -EBADMSG;
  if (out->slotid > out->highest_slotid) return d.fail("SEQUENCE slot above the highest slot");
  return 0;
}

int encode_reclaim_complete(Compound& c, bool one_fs) {
  c.begin_op(OP_RECLAIM_COMPLETE);
  c.enc().boolean(one_fs);
  return 0;
}

int encode_destroy_session(Compound& c, const SessionId& s) {
  c.begin_op(OP_DESTROY_SESSION);
  c.enc().fixed_opaque(s.data(), s.size());
  return 0;
}

int encode_destroy_clientid(Compound& c, uint64_t clientid) {
  c.begin_op(OP_DESTROY_CLIENTID);
  c.enc().u64(clientid);
  return 0;
}

int encode_bind_conn_to_session(Compound& c, const SessionId& s, uint32_t dir_from_client) {
  if (dir_from_client != CDFC4_FORE && dir_from_client != CDFC4_BACK &&
      dir_from_client != CDFC4_FORE_OR_BOTH && dir_from_client != CDFC4_BACK_OR_BOTH) {
    return c.fail(-EINVAL);
  }
  c.begin_op(OP_BIND_CONN_TO_SESSION);
  rpc::XdrEncoder& e = c.enc();
  e.fixed_opaque(s.data(), s.size());
  e.u32(dir_from_client);
  e.boolean(false);  // not RDMA
  return 0;
}

int decode_bind_conn_to_session(ReplyReader& r, BindConnRes* out) {
  if (r.next(OP_BIND_CONN_TO_SESSION, &out->status) < 0) return -EBADMSG;
  if (out->status != NFS4_OK) return 0;
  rpc::XdrDecoder& d = r.dec();
  d.fixed_opaque(out->sessionid.data(), out->sessionid.size());
  d.u32(&out->dir);
  if (d.boolean(&out->use_rdma) < 0) return -EBADMSG;
  if (out->dir < CDFS4_FORE || out->dir > CDFS4_BOTH) return d.fail("BIND_CONN_TO_SESSION direction");
  return 0;
}

}  // namespace nfsshim::nfs4
