#include <gtest/gtest.h>

#include <cerrno>

#include "hex.h"
#include "nfsshim/rpc/rpc_message.h"

using namespace nfsshim::rpc;
using nfs4test::hex;
using nfs4test::to_hex;

TEST(RpcCall, AuthSysHeaderMatchesRfc5531) {
  CallHeader h;
  h.xid = 0x12345678;
  h.prog = 100003;
  h.vers = 4;
  h.proc = 1;
  h.cred.flavor = kAuthSys;
  h.cred.sys.stamp = 0x11;
  h.cred.sys.machinename = "host";
  h.cred.sys.uid = 1000;
  h.cred.sys.gid = 100;
  h.cred.sys.gids = {100, 200};
  XdrEncoder e;
  ASSERT_EQ(encode_call_header(e, h), 0);
  // xid, CALL, rpcvers 2, prog, vers, proc | cred: AUTH_SYS, body<> of 32 bytes:
  // stamp, "host", uid, gid, gids<2> | verf: AUTH_NONE, empty.
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("12345678 00000000 00000002 000186a3 00000004 00000001 "
                                          "00000001 00000020 00000011 00000004 686f7374 "
                                          "000003e8 00000064 00000002 00000064 000000c8 "
                                          "00000000 00000000")));
}

TEST(RpcCall, AuthNoneHeader) {
  CallHeader h;
  h.xid = 1;
  h.prog = 100003;
  h.vers = 4;
  h.proc = 0;
  XdrEncoder e;
  ASSERT_EQ(encode_call_header(e, h), 0);
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("00000001 00000000 00000002 000186a3 00000004 00000000 "
                                          "00000000 00000000 00000000 00000000")));
}

TEST(RpcCall, AuthSysLimitsAreEnforced) {
  CallHeader h;
  h.cred.flavor = kAuthSys;
  h.cred.sys.gids.assign(17, 1);
  XdrEncoder e;
  EXPECT_EQ(encode_call_header(e, h), -EINVAL);
  EXPECT_EQ(e.size(), 0u);
  h.cred.sys.gids.assign(16, 1);
  h.cred.sys.machinename.assign(256, 'm');
  EXPECT_EQ(encode_call_header(e, h), -EINVAL);
  h.cred.sys.machinename.assign(255, 'm');
  EXPECT_EQ(encode_call_header(e, h), 0);
  h.cred.flavor = 6;  // RPCSEC_GSS: not ours
  EXPECT_EQ(encode_call_header(e, h), -EINVAL);
}

static int decode(const std::string& h, ReplyHeader* out, size_t* pos = nullptr) {
  auto b = hex(h);
  XdrDecoder d(b);
  int rc = decode_reply_header(d, out);
  if (pos) *pos = d.pos();
  return rc;
}

TEST(RpcReply, AcceptedSuccess) {
  ReplyHeader h;
  size_t pos;
  ASSERT_EQ(decode("0000abcd 00000001 00000000 00000000 00000000 00000000 cafe0000", &h, &pos), 0);
  EXPECT_EQ(h.xid, 0xabcdu);
  EXPECT_EQ(reply_errno(h), 0);
  EXPECT_EQ(pos, 24u);  // stands at the results
}

TEST(RpcReply, AcceptedWithVerifierBody) {
  ReplyHeader h;
  ASSERT_EQ(decode("00000001 00000001 00000000 00000001 00000004 01020304 00000000", &h), 0);
  EXPECT_EQ(h.verf_flavor, 1u);
  EXPECT_EQ(reply_errno(h), 0);
}

TEST(RpcReply, AcceptStatsMapToErrno) {
  ReplyHeader h;
  ASSERT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000002 00000004 00000004", &h), 0);
  EXPECT_EQ(h.mismatch_low, 4u);
  EXPECT_EQ(reply_errno(h), -EPROTONOSUPPORT);
  ASSERT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000001", &h), 0);
  EXPECT_EQ(reply_errno(h), -EPROTONOSUPPORT);
  ASSERT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000003", &h), 0);
  EXPECT_EQ(reply_errno(h), -EOPNOTSUPP);
  ASSERT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000004", &h), 0);
  EXPECT_EQ(reply_errno(h), -EPROTO);
  ASSERT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000005", &h), 0);
  EXPECT_EQ(reply_errno(h), -EIO);
}

TEST(RpcReply, DeniedAuthErrorAndRpcMismatch) {
  ReplyHeader h;
  ASSERT_EQ(decode("00000001 00000001 00000001 00000001 00000005", &h), 0);
  EXPECT_EQ(h.auth_stat, static_cast<uint32_t>(kAuthTooWeak));
  EXPECT_EQ(reply_errno(h), -EACCES);
  ASSERT_EQ(decode("00000001 00000001 00000001 00000000 00000002 00000002", &h), 0);
  EXPECT_EQ(reply_errno(h), -EPROTONOSUPPORT);
}

TEST(RpcReply, MalformedHeadersAreRejected) {
  ReplyHeader h;
  EXPECT_EQ(decode("00000001 00000000 00000000", &h), -EBADMSG);  // a CALL
  EXPECT_EQ(decode("00000001 00000001 00000002", &h), -EBADMSG);  // reply_stat 2
  EXPECT_EQ(decode("00000001 00000001 00000000 00000000 00000000 00000009", &h), -EBADMSG);
  EXPECT_EQ(decode("00000001 00000001 00000001 00000007", &h), -EBADMSG);
  EXPECT_EQ(decode("00000001 00000001 00000000 00000000 00000191", &h), -EBADMSG);  // verf 401
  EXPECT_EQ(decode("00000001 00000001 00000000 00000000 00000000", &h), -EBADMSG);  // truncated
}
