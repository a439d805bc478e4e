// ONC RPC version 2 messages (RFC 5531): the call header with AUTH_NONE or AUTH_SYS
// credentials, and the reply header (accepted or denied, and why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"

namespace nfsshim::rpc {

constexpr uint32_t kRpcVersion = 2;
constexpr uint32_t kMsgCall = 0;
constexpr uint32_t kMsgReply = 1;

constexpr uint32_t kAuthNone = 0;
constexpr uint32_t kAuthSys = 1;
constexpr size_t kMaxAuthBytes = 400;     // opaque_auth body<400>
constexpr size_t kMaxMachineName = 255;   // authsys_parms machinename<255>
constexpr size_t kMaxAuthSysGids = 16;    // authsys_parms gids<16>

// reply_stat, accept_stat, reject_stat, auth_stat (RFC 5531 section 9).
enum ReplyStat : uint32_t { kMsgAccepted = 0, kMsgDenied = 1 };
enum AcceptStat : uint32_t {
  kSuccess = 0, kProgUnavail = 1, kProgMismatch = 2, kProcUnavail = 3,
  kGarbageArgs = 4, kSystemErr = 5,
};
enum RejectStat : uint32_t { kRpcMismatch = 0, kAuthError = 1 };
enum AuthStat : uint32_t {
  kAuthOk = 0, kAuthBadCred = 1, kAuthRejectedCred = 2, kAuthBadVerf = 3,
  kAuthRejectedVerf = 4, kAuthTooWeak = 5, kAuthInvalidResp = 6, kAuthFailed = 7,
};

struct AuthSys {
  uint32_t stamp = 0;
  std::string machinename;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;  // at most kMaxAuthSysGids
};

struct Credential {
  uint32_t flavor = kAuthNone;  // kAuthNone or kAuthSys
  AuthSys sys;                  // used when flavor == kAuthSys
};

struct CallHeader {
  uint32_t xid = 0;
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  Credential cred;
};

// authsys_parms alone (also used inside CREATE_SESSION's callback_sec_parms4).
// -EINVAL if the machine name or the group list is over its limit.
int encode_auth_sys(XdrEncoder& enc, const AuthSys& sys);
// The call header up to and including the verifier (AUTH_NONE); the procedure's
// arguments follow. -EINVAL on a bad credential, nothing is written then.
int encode_call_header(XdrEncoder& enc, const CallHeader& h);

struct ReplyHeader {
  uint32_t xid = 0;
  uint32_t reply_stat = 0;
  uint32_t accept_stat = 0;  // when accepted
  uint32_t reject_stat = 0;  // when denied
  uint32_t auth_stat = 0;    // when denied with kAuthError
  uint32_t mismatch_low = 0, mismatch_high = 0;  // kProgMismatch / kRpcMismatch
  uint32_t verf_flavor = 0;
};

// Decodes the reply header; on success the decoder stands at the procedure's
// results (meaningful only when reply_errno() == 0). -EBADMSG if malformed or not
// a reply.
int decode_reply_header(XdrDecoder& dec, ReplyHeader* h);
// 0 for an accepted, successful call; otherwise the -errno the caller reports:
// -EPROTONOSUPPORT (program/version/RPC mismatch), -EOPNOTSUPP (procedure),
// -EPROTO (server could not decode our arguments), -EIO (server system error),
// -EACCES (authentication refused).
int reply_errno(const ReplyHeader& h);

}  // namespace nfsshim::rpc
