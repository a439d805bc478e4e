// The NFSv4.1 COMPOUND procedure: an RPC call carrying a list of operations, and a
// reply carrying their results up to the first failure (RFC 8881 section 16.2).
//
//   Compound c(xid, cred);
//   encode_sequence(c, seq); encode_putfh(c, fh); encode_getattr(c, bits);
//   std::vector<uint8_t> msg; if (c.finish(&msg) < 0) ...   // msg: the RPC message
//
//   rpc::XdrDecoder d(reply); rpc::ReplyHeader h;
//   int rc = decode_compound_rpc(d, xid, &h);  ReplyReader r(d); r.begin();
//   decode_sequence(r, &seq); ... r.finish();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nfsshim/rpc/record_marking.h"
#include "nfsshim/rpc/rpc_message.h"
#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"

namespace nfsshim::nfs4 {

class Compound {
 public:
  // Writes the RPC call header (NFS program 100003 v4, COMPOUND) and the
  // COMPOUND4args header (tag, minorversion 1). A bad credential or tag is
  // reported by finish().
  Compound(uint32_t xid, const rpc::Credential& cred, const std::string& tag = {});
  // The same, with room for the TCP record mark in front, for finish_record().
  struct Framed {};
  Compound(Framed, uint32_t xid, const rpc::Credential& cred);

  // Starts the next operation (writes its number). Operations append their args.
  void begin_op(uint32_t opnum);
  rpc::XdrEncoder& enc() { return enc_; }
  // Records the first encode error; finish() returns it. Always returns err.
  int fail(int err);

  uint32_t xid() const { return xid_; }
  const std::vector<uint32_t>& ops() const { return ops_; }
  // Fills in the operation count and hands over the message (without record mark).
  int finish(std::vector<uint8_t>* msg);
  // For a Framed compound: the message as one record (RFC 5531 record mark in front),
  // ready for the socket, without copying the message (a WRITE's data is big).
  int finish_record(std::vector<uint8_t>* wire);
  // Appends DATA as an XDR opaque that is not copied: the last thing in the message
  // (finish_record() fails if anything was encoded after it). OWNER keeps DATA alive.
  void opaque_tail(const uint8_t* data, size_t len, std::shared_ptr<const void> owner);
  // finish_record() for a message that may end in an opaque_tail(): *WIRE is the record
  // up to the tail (its mark counts the tail), *TAIL the data to send after it (empty
  // without one).
  int finish_record(std::vector<uint8_t>* wire, rpc::Tail* tail);

 private:
  void reserve_typical();
  void begin(const rpc::Credential& cred, const std::string& tag);
  rpc::XdrEncoder enc_;
  uint32_t xid_;
  size_t count_pos_ = 0;
  bool framed_ = false;
  std::vector<uint32_t> ops_;
  int err_ = 0;
  rpc::Tail tail_;
  size_t tail_at_ = 0;  // the message's size when the tail was added
};

// Decodes the RPC reply header, checks the xid, returns rpc::reply_errno (or
// -EBADMSG when malformed or for another xid). On 0 the COMPOUND4res follows.
int decode_compound_rpc(rpc::XdrDecoder& dec, uint32_t xid, rpc::ReplyHeader* h);

// Walks COMPOUND4res: status, tag, resarray<>.
class ReplyReader {
 public:
  explicit ReplyReader(rpc::XdrDecoder& dec) : dec_(dec) {}

  int begin();
  uint32_t status() const { return status_; }
  // Bytes of READ data the transport took out of this reply into the caller's buffer.
  void set_placed(size_t n) { placed_ = n; }
  size_t placed() const { return placed_; }
  uint32_t results_left() const { return left_; }
  // Reads the next result's operation number and status: -EBADMSG if there is
  // none left, it is for another operation (OP_ILLEGAL is accepted, its status is
  // NFS4ERR_OP_ILLEGAL), or a result follows a failed one.
  int next(uint32_t opnum, uint32_t* op_status);
  // Every result consumed, nothing after them, and the compound status is the last
  // result's (RFC 8881 16.2.3).
  int finish();
  rpc::XdrDecoder& dec() { return dec_; }

 private:
  rpc::XdrDecoder& dec_;
  uint32_t status_ = 0;
  uint32_t left_ = 0;
  size_t placed_ = 0;
  uint32_t last_status_ = 0;
  bool any_ = false;
};

// For operations whose result is only a status (PUTFH, PUTROOTFH, SAVEFH, RESTOREFH,
// RECLAIM_COMPLETE, DESTROY_SESSION, DESTROY_CLIENTID, FREE_STATEID).
int decode_status_only(ReplyReader& r, uint32_t opnum, uint32_t* status);

}  // namespace nfsshim::nfs4
