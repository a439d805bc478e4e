#include "nfsshim/nfs4/types.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"

namespace nfsshim::nfs4 {

void put_stateid(rpc::XdrEncoder& enc, const Stateid4& s) {
  enc.u32(s.seqid);
  enc.fixed_opaque(s.other.data(), s.other.size());
}

int get_stateid(rpc::XdrDecoder& dec, Stateid4* s) {
  dec.u32(&s->seqid);
  return dec.fixed_opaque(s->other.data(), s->other.size());
}

int get_change_info(rpc::XdrDecoder& dec, ChangeInfo4* c) {
  dec.boolean(&c->atomic);
  dec.u64(&c->before);
  return dec.u64(&c->after);
}

int get_nfstime(rpc::XdrDecoder& dec, Nfstime4* t) {
  dec.i64(&t->seconds);
  if (dec.u32(&t->nseconds) < 0) return -EBADMSG;
  if (t->nseconds >= 1000000000u) return dec.fail("nfstime4 nseconds >= 1e9");
  return 0;
}

void put_nfstime(rpc::XdrEncoder& enc, const Nfstime4& t) {
  enc.i64(t.seconds);
  enc.u32(t.nseconds);
}

int put_state_owner(rpc::XdrEncoder& enc, const StateOwner4& o) {
  if (o.owner.size() > kOpaqueLimit) return -EINVAL;
  enc.u64(o.clientid);
  enc.opaque(o.owner.data(), o.owner.size());
  return 0;
}

int get_state_owner(rpc::XdrDecoder& dec, StateOwner4* o) {
  dec.u64(&o->clientid);
  return dec.opaque(&o->owner, kOpaqueLimit);
}

int check_component(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return -EINVAL;
  if (name.size() > kMaxNameBytes) return -ENAMETOOLONG;
  for (char c : name) {
    if (c == '/' || c == '\0') return -EINVAL;
  }
  return 0;
}

}  // namespace nfsshim::nfs4
