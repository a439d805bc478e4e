#include "nfsshim/nfs4/compound.h"

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/rpc/record_marking.h"

namespace nfsshim::nfs4 {

namespace {
// RPC header with AUTH_SYS (up to 16 groups), SEQUENCE, PUTFH of a 128-byte handle and one
// op with its arguments stay under this; bigger ones grow as before.
constexpr size_t kTypicalCallBytes = 512;
constexpr size_t kTypicalOps = 8;
}  // namespace

Compound::Compound(Framed, uint32_t xid, const rpc::Credential& cred) : xid_(xid), framed_(true) {
  reserve_typical();
  enc_.reserve_u32();  // the record mark, filled in by finish_record()
  begin(cred, {});
}

Compound::Compound(uint32_t xid, const rpc::Credential& cred, const std::string& tag) : xid_(xid) {
  reserve_typical();
  begin(cred, tag);
}

void Compound::reserve_typical() {
  // Most compounds (SEQUENCE, PUTFH, one op) fit: one allocation each, not one per doubling.
  enc_.reserve(kTypicalCallBytes);
  ops_.reserve(kTypicalOps);
}

void Compound::begin(const rpc::Credential& cred, const std::string& tag) {
  rpc::CallHeader h;
  h.xid = xid_;
  h.prog = kNfsProgram;
  h.vers = kNfsVersion;
  h.proc = kProcCompound;
  h.cred = cred;
  if (tag.size() > kOpaqueLimit) {
    fail(-EINVAL);
    return;
  }
  if (int rc = rpc::encode_call_header(enc_, h); rc < 0) {
    fail(rc);
    return;
  }
  enc_.string(tag);
  enc_.u32(kMinorVersion);
  count_pos_ = enc_.reserve_u32();
}

void Compound::begin_op(uint32_t opnum) {
  ops_.push_back(opnum);
  enc_.u32(opnum);
}

int Compound::fail(int err) {
  if (err_ == 0) err_ = err;
  return err;
}

int Compound::finish(std::vector<uint8_t>* msg) {
  if (err_ < 0) return err_;
  enc_.patch_u32(count_pos_, static_cast<uint32_t>(ops_.size()));
  if (framed_ || tail_.data) return fail(-EINVAL);
  *msg = enc_.take();
  return 0;
}

void Compound::opaque_tail(const uint8_t* data, size_t len, std::shared_ptr<const void> owner) {
  if (tail_.data || !data || !owner || len > UINT32_MAX) {
    fail(-EINVAL);
    return;
  }
  enc_.u32(static_cast<uint32_t>(len));
  tail_ = rpc::Tail{data, len, static_cast<uint32_t>((4 - len % 4) % 4), std::move(owner)};
  tail_at_ = enc_.size();
}

int Compound::finish_record(std::vector<uint8_t>* wire) {
  if (tail_.data) return fail(-EINVAL);  // the caller would not send it
  rpc::Tail none;
  return finish_record(wire, &none);
}

int Compound::finish_record(std::vector<uint8_t>* wire, rpc::Tail* tail) {
  if (err_ < 0) return err_;
  if (tail_.data && enc_.size() != tail_at_) return fail(-EINVAL);  // encoded after the tail
  size_t body = enc_.size() - 4 + tail_.size();
  if (!framed_ || body > rpc::kMaxFragment) return fail(-EINVAL);
  enc_.patch_u32(count_pos_, static_cast<uint32_t>(ops_.size()));
  enc_.patch_u32(0, rpc::kLastFragment | static_cast<uint32_t>(body));
  *wire = enc_.take();
  *tail = std::move(tail_);
  tail_ = rpc::Tail{};
  return 0;
}

int decode_compound_rpc(rpc::XdrDecoder& dec, uint32_t xid, rpc::ReplyHeader* h) {
  if (rpc::decode_reply_header(dec, h) < 0) return -EBADMSG;
  if (h->xid != xid) return dec.fail("reply for another xid");
  return rpc::reply_errno(*h);
}

int ReplyReader::begin() {
  dec_.u32(&status_);
  const uint8_t* tag;
  size_t n;
  dec_.opaque_view(&tag, &n, kOpaqueLimit);
  // Each result is at least an opnum and a status.
  return dec_.array_count(&left_, kMaxResults, 8, "COMPOUND4res resarray too long");
}

int ReplyReader::next(uint32_t opnum, uint32_t* op_status) {
  if (!dec_.ok()) return -EBADMSG;
  if (left_ == 0) return dec_.fail("COMPOUND4res has fewer results than operations read");
  if (any_ && last_status_ != NFS4_OK) return dec_.fail("COMPOUND4res result after a failure");
  uint32_t got;
  dec_.u32(&got);
  if (dec_.u32(op_status) < 0) return -EBADMSG;
  if (got != opnum && !(got == OP_ILLEGAL && *op_status == NFS4ERR_OP_ILLEGAL)) {
    return dec_.fail("COMPOUND4res result for another operation");
  }
  --left_;
  any_ = true;
  last_status_ = *op_status;
  return 0;
}

int ReplyReader::finish() {
  if (!dec_.ok()) return -EBADMSG;
  if (left_ != 0) return dec_.fail("COMPOUND4res has more results than operations read");
  if (dec_.expect_end("trailing bytes after COMPOUND4res") < 0) return -EBADMSG;
  if (any_ && status_ != last_status_) return dec_.fail("COMPOUND4res status is not the last result's");
  return 0;
}

int decode_status_only(ReplyReader& r, uint32_t opnum, uint32_t* status) {
  return r.next(opnum, status);
}

}  // namespace nfsshim::nfs4
