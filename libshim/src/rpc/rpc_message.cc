#include "nfsshim/rpc/rpc_message.h"

#include <cerrno>

namespace nfsshim::rpc {

static bool auth_sys_valid(const AuthSys& sys) {
  return sys.machinename.size() <= kMaxMachineName && sys.gids.size() <= kMaxAuthSysGids;
}

static void put_auth_sys(XdrEncoder& enc, const AuthSys& sys) {
  enc.u32(sys.stamp);
  enc.string(sys.machinename);
  enc.u32(sys.uid);
  enc.u32(sys.gid);
  enc.u32(static_cast<uint32_t>(sys.gids.size()));
  for (uint32_t g : sys.gids) enc.u32(g);
}

int encode_auth_sys(XdrEncoder& enc, const AuthSys& sys) {
  if (!auth_sys_valid(sys)) return -EINVAL;
  put_auth_sys(enc, sys);
  return 0;
}

int encode_call_header(XdrEncoder& enc, const CallHeader& h) {
  if (h.cred.flavor != kAuthNone && h.cred.flavor != kAuthSys) return -EINVAL;
  if (h.cred.flavor == kAuthSys && !auth_sys_valid(h.cred.sys)) return -EINVAL;
  enc.u32(h.xid);
  enc.u32(kMsgCall);
  enc.u32(kRpcVersion);
  enc.u32(h.prog);
  enc.u32(h.vers);
  enc.u32(h.proc);
  enc.u32(h.cred.flavor);
  if (h.cred.flavor == kAuthSys) {
    // The body is an opaque<400>: its length word, then authsys_parms.
    size_t len_pos = enc.reserve_u32();
    size_t start = enc.size();
    put_auth_sys(enc, h.cred.sys);
    enc.patch_u32(len_pos, static_cast<uint32_t>(enc.size() - start));
  } else {
    enc.u32(0);
  }
  enc.u32(kAuthNone);  // verifier
  enc.u32(0);
  return 0;
}

int decode_reply_header(XdrDecoder& dec, ReplyHeader* h) {
  uint32_t mtype;
  dec.u32(&h->xid);
  dec.u32(&mtype);
  dec.u32(&h->reply_stat);
  if (!dec.ok()) return -EBADMSG;
  if (mtype != kMsgReply) return dec.fail("RPC message is not a reply");
  if (h->reply_stat == kMsgAccepted) {
    const uint8_t* body;
    size_t n;
    dec.u32(&h->verf_flavor);
    dec.opaque_view(&body, &n, kMaxAuthBytes);
    if (dec.u32(&h->accept_stat) < 0) return -EBADMSG;
    if (h->accept_stat == kProgMismatch) {
      dec.u32(&h->mismatch_low);
      return dec.u32(&h->mismatch_high);
    }
    if (h->accept_stat > kSystemErr) return dec.fail("unknown RPC accept_stat");
    return 0;
  }
  if (h->reply_stat != kMsgDenied) return dec.fail("unknown RPC reply_stat");
  if (dec.u32(&h->reject_stat) < 0) return -EBADMSG;
  if (h->reject_stat == kRpcMismatch) {
    dec.u32(&h->mismatch_low);
    return dec.u32(&h->mismatch_high);
  }
  if (h->reject_stat != kAuthError) return dec.fail("unknown RPC reject_stat");
  return dec.u32(&h->auth_stat);
}

int reply_errno(const ReplyHeader& h) {
  if (h.reply_stat == kMsgDenied) return h.reject_stat == kAuthError ? -EACCES : -EPROTONOSUPPORT;
  switch (h.accept_stat) {
    case kSuccess: return 0;
    case kProgUnavail:
    case kProgMismatch: return -EPROTONOSUPPORT;
    case kProcUnavail: return -EOPNOTSUPP;
    case kGarbageArgs: return -EPROTO;
    default: return -EIO;
  }
}

}  // namespace nfsshim::rpc
