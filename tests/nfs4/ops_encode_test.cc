// COMPOUND encoding checked against bytes written by hand from RFC 8881's XDR.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>

#include "hex.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_lock.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"
#include "nfsshim/rpc/record_marking.h"

using namespace nfsshim::nfs4;
using nfs4test::hex;
using nfs4test::to_hex;

namespace {

// RPC call (xid 1, NFS 100003 v4 COMPOUND, AUTH_NONE) + COMPOUND4args (tag "",
// minorversion 1, N ops).
std::string head(int nops) {
  char n[9];
  snprintf(n, sizeof n, "%08x", nops);
  return std::string("00000001 00000000 00000002 000186a3 00000004 00000001 "
                     "00000000 00000000 00000000 00000000 "
                     "00000000 00000001 ") + n + " ";
}

const char* kSession = "00010203 04050607 08090a0b 0c0d0e0f";
SessionId session() {
  SessionId s;
  for (int i = 0; i < 16; ++i) s[i] = static_cast<uint8_t>(i);
  return s;
}
Stateid4 stateid() {
  Stateid4 s;
  s.seqid = 1;
  for (int i = 0; i < 12; ++i) s.other[i] = static_cast<uint8_t>(0xa0 + i);
  return s;
}
const char* kStateid = "00000001 a0a1a2a3 a4a5a6a7 a8a9aaab";

std::string finish(Compound& c) {
  std::vector<uint8_t> msg;
  EXPECT_EQ(c.finish(&msg), 0);
  return to_hex(msg);
}

}  // namespace

TEST(Nfs4Encode, SequencePutrootfhGetfhGetattr) {
  Compound c(1, {});
  SequenceArgs s;
  s.sessionid = session();
  s.sequenceid = 1;
  s.slotid = 2;
  s.highest_slotid = 3;
  encode_sequence(c, s);
  encode_putrootfh(c);
  encode_getfh(c);
  encode_getattr(c, getattr_bitmap());
  // getattr_bitmap: word0 = type(1) change(3) size(4) fsid(8) fileid(20) = 0x0010011a,
  // word1 = mode(33) numlinks(35) owner(36) owner_group(37) space_used(45)
  //         time_access(47) time_metadata(52) time_modify(53) = 0x0030a03a
  EXPECT_EQ(finish(c), to_hex(hex(head(4) + "00000035 " + kSession +
                                  " 00000001 00000002 00000003 00000000 "
                                  "00000018 0000000a "
                                  "00000009 00000002 0010011a 0030a03a")));
}

TEST(Nfs4Encode, ExchangeId) {
  Compound c(1, {});
  ExchangeIdArgs a;
  a.verifier = {1, 2, 3, 4, 5, 6, 7, 8};
  a.owner_id = {'a', 'b', 'c'};
  a.flags = EXCHGID4_FLAG_SUPP_MOVED_REFER;
  encode_exchange_id(c, a);
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "0000002a 01020304 05060708 00000003 61626300 "
                                            "00000001 00000000 00000000")));
}

TEST(Nfs4Encode, ExchangeIdWithImplId) {
  Compound c(1, {});
  ExchangeIdArgs a;
  a.owner_id = {'x'};
  a.send_impl_id = true;
  a.impl_id.domain = "d";
  a.impl_id.name = "nm";
  a.impl_id.date.seconds = 5;
  encode_exchange_id(c, a);
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "0000002a 00000000 00000000 00000001 78000000 "
                                            "00000000 00000000 00000001 00000001 64000000 "
                                            "00000002 6e6d0000 00000000 00000005 00000000")));
}

TEST(Nfs4Encode, CreateSessionAsks180Slots) {
  Compound c(1, {});
  CreateSessionArgs a;
  a.clientid = 0x0102030405060708ull;
  a.sequence = 1;
  a.fore = default_fore_channel(180);
  a.back = default_back_channel();
  a.cb_program = 0x40000000;
  encode_create_session(c, a);
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "0000002b 01020304 05060708 00000001 00000000 "
                                  // fore: pad, req 1 MiB+4 KiB, resp, cached 8 KiB, 16 ops, 180 slots, no rdma
                                  "00000000 00101000 00101000 00002000 00000010 000000b4 00000000 "
                                  "00000000 00001000 00001000 00000000 00000002 00000001 00000000 "
                                  "40000000 00000001 00000000")));
}

TEST(Nfs4Encode, SessionTeardownAndBind) {
  Compound c(1, {});
  encode_reclaim_complete(c, false);
  encode_destroy_session(c, session());
  encode_destroy_clientid(c, 0x1122334455667788ull);
  encode_bind_conn_to_session(c, session(), CDFC4_FORE_OR_BOTH);
  EXPECT_EQ(finish(c), to_hex(hex(head(4) + "0000003a 00000000 0000002c " + kSession +
                                  " 00000039 11223344 55667788 00000029 " + kSession +
                                  " 00000003 00000000")));
}

TEST(Nfs4Encode, OpenCreateUncheckedWithMode) {
  Compound c(1, {});
  OpenArgs a;
  a.share_access = OPEN4_SHARE_ACCESS_WRITE;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner.clientid = 0x0102030405060708ull;
  a.owner.owner = {'o', 'w'};
  a.create = true;
  a.createmode = UNCHECKED4;
  a.createattrs.set_mode = true;
  a.createattrs.mode = 0644;
  a.name = "f";
  encode_open(c, a);
  // seqid, access, deny, owner{clientid, "ow"}, OPEN4_CREATE, UNCHECKED4,
  // fattr4{bitmap<2>{0, mode=bit 33}, vals<4>{0644}}, CLAIM_NULL, "f"
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000012 00000000 00000002 00000000 "
                                  "01020304 05060708 00000002 6f770000 "
                                  "00000001 00000000 00000002 00000000 00000002 00000004 000001a4 "
                                  "00000000 00000001 66000000")));
}

TEST(Nfs4Encode, OpenCreateExclusive41CarriesVerifierThenAttrs) {
  Compound c(1, {});
  OpenArgs a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.owner.owner = {'o', 'w'};
  a.create = true;
  a.createmode = EXCLUSIVE4_1;
  a.createverf = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8};
  a.createattrs.set_mode = true;
  a.createattrs.mode = 0640;
  a.name = "f";
  encode_open(c, a);
  // ... OPEN4_CREATE, EXCLUSIVE4_1 (3), creatverfattr{verifier4 (8 bytes),
  // fattr4{bitmap<2>{0, mode}, vals<4>{0640}}}, CLAIM_NULL, "f"
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000012 00000000 00000003 00000000 "
                                  "00000000 00000000 00000002 6f770000 "
                                  "00000001 00000003 a1a2a3a4 a5a6a7a8 "
                                  "00000002 00000000 00000002 00000004 000001a0 "
                                  "00000000 00000001 66000000")));
  Compound bad(1, {});
  a.createmode = EXCLUSIVE4;  // the v4.0 mode: not sent by this client
  EXPECT_EQ(encode_open(bad, a), -EINVAL);
}

TEST(Nfs4Encode, OpenNoCreateGuardedRejectsBadArgs) {
  Compound c(1, {});
  OpenArgs a;
  a.share_access = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
  a.share_deny = OPEN4_SHARE_DENY_WRITE;
  a.owner.owner = {'o'};
  a.name = "g";
  encode_open(c, a);
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000012 00000000 00000401 00000002 "
                                  "00000000 00000000 00000001 6f000000 "
                                  "00000000 00000000 00000001 67000000")));
  Compound bad(1, {});
  a.share_access = 0;
  EXPECT_EQ(encode_open(bad, a), -EINVAL);
  std::vector<uint8_t> msg;
  EXPECT_EQ(bad.finish(&msg), -EINVAL);
}

TEST(Nfs4Encode, OpenClaimFhHasNoName) {
  Compound c(1, {});
  OpenArgs a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.owner.owner = {'o'};
  a.claim = CLAIM_FH;
  encode_open(c, a);
  // seqid, access BOTH, deny NONE, owner{0, "o"}, OPEN4_NOCREATE, CLAIM_FH (4), nothing after
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000012 00000000 00000003 00000000 "
                                  "00000000 00000000 00000001 6f000000 "
                                  "00000000 00000004")));
  Compound named(1, {});
  a.name = "g";  // CLAIM_FH names no file
  EXPECT_EQ(encode_open(named, a), -EINVAL);
  Compound create(1, {});
  a.name.clear();
  a.create = true;  // and creates nothing
  EXPECT_EQ(encode_open(create, a), -EINVAL);
  Compound other(1, {});
  a.create = false;
  a.claim = 2;  // CLAIM_DELEGATE_CUR: not sent by this client
  EXPECT_EQ(encode_open(other, a), -EINVAL);
}

// RFC 8881 18.16.1: union open_claim4 switch (open_claim_type4 claim) {
//   case CLAIM_PREVIOUS: open_delegation_type4 delegate_type; ... }
TEST(Nfs4Encode, OpenClaimPreviousCarriesTheDelegationType) {
  Compound c(1, {});
  OpenArgs a;
  a.share_access = OPEN4_SHARE_ACCESS_WRITE;
  a.owner.clientid = 0x0102030405060708ull;
  a.owner.owner = {'a', 'b'};
  a.claim = CLAIM_PREVIOUS;
  EXPECT_EQ(CLAIM_PREVIOUS, 1u);
  a.delegate_type = OPEN_DELEGATE_NONE;
  EXPECT_EQ(encode_open(c, a), 0);
  // OPEN (18), seqid 0, access WRITE, deny NONE, owner{0x0102030405060708, "ab"},
  // OPEN4_NOCREATE, CLAIM_PREVIOUS (1), delegate_type OPEN_DELEGATE_NONE (0)
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000012 00000000 00000002 00000000 "
                                  "01020304 05060708 00000002 61620000 "
                                  "00000000 00000001 00000000")));
  Compound read_deleg(1, {});
  a.delegate_type = OPEN_DELEGATE_READ;
  EXPECT_EQ(encode_open(read_deleg, a), 0);
  EXPECT_EQ(finish(read_deleg), to_hex(hex(head(1) + "00000012 00000000 00000002 00000000 "
                                           "01020304 05060708 00000002 61620000 "
                                           "00000000 00000001 00000001")));
  Compound bad_deleg(1, {});
  a.delegate_type = 3;  // OPEN_DELEGATE_NONE_EXT is a reply, never a claim
  EXPECT_EQ(encode_open(bad_deleg, a), -EINVAL);
  Compound named(1, {});
  a.delegate_type = OPEN_DELEGATE_NONE;
  a.name = "g";  // the current fh is the file: no name
  EXPECT_EQ(encode_open(named, a), -EINVAL);
  Compound create(1, {});
  a.name.clear();
  a.create = true;  // and nothing to create
  EXPECT_EQ(encode_open(create, a), -EINVAL);
}

TEST(Nfs4Encode, CloseReadWriteCommit) {
  Compound c(1, {});
  encode_close(c, stateid());
  encode_read(c, stateid(), 0x10, 0x1000);
  const uint8_t data[] = {'h', 'e', 'l', 'l', 'o'};
  encode_write(c, stateid(), 0x10, UNSTABLE4, data, 5);
  encode_commit(c, 0, 0);
  EXPECT_EQ(finish(c), to_hex(hex(head(4) + "00000004 00000000 " + kStateid +
                                  " 00000019 " + kStateid + " 00000000 00000010 00001000"
                                  " 00000026 " + kStateid + " 00000000 00000010 00000000"
                                  " 00000005 68656c6c 6f000000"
                                  " 00000005 00000000 00000000 00000000")));
}

TEST(Nfs4Encode, DirectoryOps) {
  Compound c(1, {});
  encode_putfh(c, {0xfe, 0xed});
  encode_lookup(c, "dir");
  encode_savefh(c);
  encode_restorefh(c);
  encode_remove(c, "x");
  encode_rename(c, "a", "bc");
  encode_link(c, "ln");
  encode_readlink(c);
  EXPECT_EQ(finish(c), to_hex(hex(head(8) + "00000016 00000002 feed0000 "
                                  "0000000f 00000003 64697200 00000020 0000001f "
                                  "0000001c 00000001 78000000 "
                                  "0000001d 00000001 61000000 00000002 62630000 "
                                  "0000000b 00000002 6c6e0000 0000001b")));
}

TEST(Nfs4Encode, CreateDirAndSymlink) {
  Compound c(1, {});
  CreateArgs d;
  d.type = NF4DIR;
  d.name = "d";
  d.attrs.set_mode = true;
  d.attrs.mode = 0755;
  encode_create(c, d);
  CreateArgs l;
  l.type = NF4LNK;
  l.name = "l";
  l.link_target = "t";
  encode_create(c, l);
  EXPECT_EQ(finish(c), to_hex(hex(head(2) + "00000006 00000002 00000001 64000000 "
                                  "00000002 00000000 00000002 00000004 000001ed "
                                  "00000006 00000005 00000001 74000000 00000001 6c000000 "
                                  "00000000 00000000")));
}

TEST(Nfs4Encode, SetattrSizeModeMtimeAndAccess) {
  Compound c(1, {});
  SetAttrs a;
  a.set_size = true;
  a.size = 4096;
  a.set_mode = true;
  a.mode = 0755;
  a.mtime_how = TimeHow::kServerTime;
  encode_setattr(c, Stateid4{}, a);
  encode_access(c, ACCESS4_READ | ACCESS4_MODIFY);
  // bitmap: size = bit 4 (word0 0x10); mode = bit 33, time_modify_set = bit 54
  // (word1 0x00400002); vals: size u64, mode, settime4 SET_TO_SERVER_TIME4
  EXPECT_EQ(finish(c), to_hex(hex(head(2) + "00000022 00000000 00000000 00000000 00000000 "
                                  "00000002 00000010 00400002 00000010 "
                                  "00000000 00001000 000001ed 00000000 "
                                  "00000003 00000005")));
}

TEST(Nfs4Encode, SetattrClientTimesAndOwners) {
  Compound c(1, {});
  SetAttrs a;
  a.set_owner = true;
  a.owner = "0";
  a.set_owner_group = true;
  a.owner_group = "10";
  a.atime_how = TimeHow::kClientTime;
  a.atime.seconds = 1;
  a.atime.nseconds = 2;
  encode_setattr(c, stateid(), a);
  // owner = bit 36, owner_group = bit 37, time_access_set = bit 48 -> word1 0x00010030
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "00000022 " + kStateid +
                                  " 00000002 00000000 00010030 00000020 "
                                  "00000001 30000000 00000002 31300000 "
                                  "00000001 00000000 00000001 00000002")));
}

TEST(Nfs4Encode, Readdir) {
  Compound c(1, {});
  ReaddirArgs a;
  a.dircount = 0x1000;
  a.maxcount = 0x8000;
  a.attrs.set(FATTR4_TYPE).set(FATTR4_FILEID);
  encode_readdir(c, a);
  EXPECT_EQ(finish(c), to_hex(hex(head(1) + "0000001a 00000000 00000000 00000000 00000000 "
                                  "00001000 00008000 00000001 00100002")));
}

TEST(Nfs4Encode, LockFamilyAndStateids) {
  Compound c(1, {});
  LockArgs l;
  l.locktype = WRITE_LT;
  l.length = ~0ull;
  l.open_stateid = stateid();
  l.lock_owner.clientid = 7;
  l.lock_owner.owner = {'L'};
  encode_lock(c, l);
  LockArgs e;
  e.locktype = READ_LT;
  e.offset = 1;
  e.length = 2;
  e.new_lock_owner = false;
  e.lock_stateid = stateid();
  encode_lock(c, e);
  encode_locku(c, WRITE_LT, stateid(), 0, ~0ull);
  encode_lockt(c, READ_LT, 0, 10, l.lock_owner);
  encode_test_stateid(c, {stateid()});
  encode_free_stateid(c, stateid());
  EXPECT_EQ(finish(c), to_hex(hex(
      head(6) +
      "0000000c 00000002 00000000 00000000 00000000 ffffffff ffffffff 00000001 "
      "00000000 " + kStateid + " 00000000 00000000 00000007 00000001 4c000000 "
      "0000000c 00000001 00000000 00000000 00000001 00000000 00000002 00000000 " + kStateid +
      " 00000000 "
      "0000000e 00000002 00000000 " + kStateid + " 00000000 00000000 ffffffff ffffffff "
      "0000000d 00000001 00000000 00000000 00000000 0000000a 00000000 00000007 00000001 4c000000 "
      "00000037 00000001 " + kStateid + " 0000002d " + kStateid)));
}

TEST(Nfs4Encode, BadArgumentsFailTheCompound) {
  auto fails = [](auto&& enc, int want) {
    Compound c(1, {});
    EXPECT_EQ(enc(c), want);
    std::vector<uint8_t> msg;
    EXPECT_EQ(c.finish(&msg), want);
    EXPECT_TRUE(c.ops().empty());
  };
  fails([](Compound& c) { return encode_lookup(c, "a/b"); }, -EINVAL);
  fails([](Compound& c) { return encode_lookup(c, ""); }, -EINVAL);
  fails([](Compound& c) { return encode_lookup(c, ".."); }, -EINVAL);
  fails([](Compound& c) { return encode_lookup(c, std::string(256, 'n')); }, -ENAMETOOLONG);
  fails([](Compound& c) { return encode_putfh(c, Fh4(129, 1)); }, -EINVAL);
  fails([](Compound& c) { return encode_putfh(c, Fh4()); }, -EINVAL);
  fails([](Compound& c) { return encode_getattr(c, Bitmap4().set(12)); }, -EINVAL);  // acl
  fails([](Compound& c) {
    SetAttrs a;
    a.set_mode = true;
    a.mode = 010000;
    return encode_setattr(c, Stateid4{}, a);
  }, -EINVAL);
  fails([](Compound& c) {
    CreateArgs a;
    a.type = NF4REG;
    a.name = "x";
    return encode_create(c, a);
  }, -EINVAL);
  fails([](Compound& c) { return encode_lockt(c, 9, 0, 1, StateOwner4{1, {'o'}}); }, -EINVAL);
  fails([](Compound& c) { return encode_test_stateid(c, {}); }, -EINVAL);
  fails([](Compound& c) {
    SequenceArgs s;
    s.slotid = 4;
    s.highest_slotid = 3;
    return encode_sequence(c, s);
  }, -EINVAL);
}

TEST(Nfs4Encode, AuthSysCredentialAndTag) {
  nfsshim::rpc::Credential cred;
  cred.flavor = nfsshim::rpc::kAuthSys;
  cred.sys.machinename = "h";
  Compound c(9, cred, "t");
  encode_putrootfh(c);
  EXPECT_EQ(finish(c), to_hex(hex("00000009 00000000 00000002 000186a3 00000004 00000001 "
                                  "00000001 00000018 00000000 00000001 68000000 00000000 "
                                  "00000000 00000000 00000000 00000000 "
                                  "00000001 74000000 00000001 00000001 00000018")));
}

TEST(Nfs4Encode, FramedCompoundIsTheRecordOfTheMessage) {
  // The same WRITE as a message and as a record built in place: one last fragment whose
  // header carries the message length, then the message's bytes unchanged.
  const uint8_t data[] = {'h', 'e', 'l', 'l', 'o'};
  Compound plain(7, {});
  encode_write(plain, stateid(), 0x10, UNSTABLE4, data, 5);
  std::vector<uint8_t> msg;
  ASSERT_EQ(plain.finish(&msg), 0);
  Compound framed(Compound::Framed{}, 7, {});
  encode_write(framed, stateid(), 0x10, UNSTABLE4, data, 5);
  std::vector<uint8_t> wire;
  ASSERT_EQ(framed.finish_record(&wire), 0);
  std::vector<uint8_t> want;
  nfsshim::rpc::frame_record(&want, msg.data(), msg.size());
  EXPECT_EQ(to_hex(wire), to_hex(want));
  EXPECT_EQ(wire[0], 0x80);  // last fragment
  // The two kinds are not interchangeable.
  Compound plain2(8, {});
  EXPECT_EQ(plain2.finish_record(&wire), -EINVAL);
  Compound framed2(Compound::Framed{}, 8, {});
  EXPECT_EQ(framed2.finish(&msg), -EINVAL);
}

TEST(Nfs4Encode, WriteDataInPlaceIsTheSameRecordInTwoPieces) {
  // A WRITE whose data is sent from where it lies: the record up to the data (its mark
  // counting the data and its pad), then the data, then the XDR pad, are byte for byte the
  // record of the copying encode. 5 bytes: 3 of pad.
  auto owner = std::make_shared<std::string>("hello");
  const auto* data = reinterpret_cast<const uint8_t*>(owner->data());
  Compound copied(Compound::Framed{}, 7, {});
  encode_putfh(copied, {0xfe, 0xed});
  encode_write(copied, stateid(), 0x10, UNSTABLE4, data, 5);
  std::vector<uint8_t> want;
  ASSERT_EQ(copied.finish_record(&want), 0);

  Compound inplace(Compound::Framed{}, 7, {});
  encode_putfh(inplace, {0xfe, 0xed});
  encode_write(inplace, stateid(), 0x10, UNSTABLE4, data, 5, owner);
  std::vector<uint8_t> wire;
  nfsshim::rpc::Tail tail;
  ASSERT_EQ(inplace.finish_record(&wire, &tail), 0);
  EXPECT_EQ(tail.data, data);  // not copied
  EXPECT_EQ(tail.len, 5u);
  EXPECT_EQ(tail.pad, 3u);
  EXPECT_EQ(tail.owner, owner);
  std::vector<uint8_t> sent(wire);
  sent.insert(sent.end(), tail.data, tail.data + tail.len);
  sent.insert(sent.end(), tail.pad, uint8_t{0});
  EXPECT_EQ(to_hex(sent), to_hex(want));
  EXPECT_EQ(wire.size() + 8, want.size());

  // Without a tail the two-piece form is the plain record and an empty tail.
  Compound none(Compound::Framed{}, 7, {});
  encode_putfh(none, {0xfe, 0xed});
  encode_write(none, stateid(), 0x10, UNSTABLE4, data, 5);
  ASSERT_EQ(none.finish_record(&wire, &tail), 0);
  EXPECT_EQ(to_hex(wire), to_hex(want));
  EXPECT_EQ(tail.data, nullptr);
  EXPECT_EQ(tail.size(), 0u);
  EXPECT_EQ(tail.owner, nullptr);
}

TEST(Nfs4Encode, WriteDataInPlaceMustEndTheMessage) {
  auto owner = std::make_shared<std::string>("12345678");
  const auto* data = reinterpret_cast<const uint8_t*>(owner->data());
  std::vector<uint8_t> wire, msg;
  nfsshim::rpc::Tail tail;
  // Anything encoded after the data would land before it on the wire.
  Compound after(Compound::Framed{}, 7, {});
  encode_write(after, stateid(), 0, UNSTABLE4, data, 8, owner);
  encode_commit(after, 0, 0);
  EXPECT_EQ(after.finish_record(&wire, &tail), -EINVAL);
  // The one-piece forms would drop the data: refused.
  Compound one(Compound::Framed{}, 7, {});
  encode_write(one, stateid(), 0, UNSTABLE4, data, 8, owner);
  EXPECT_EQ(one.finish_record(&wire), -EINVAL);
  Compound plain(7, {});
  encode_write(plain, stateid(), 0, UNSTABLE4, data, 8, owner);
  EXPECT_EQ(plain.finish(&msg), -EINVAL);
  // Two tails in one message cannot be sent as one.
  Compound two(Compound::Framed{}, 7, {});
  encode_write(two, stateid(), 0, UNSTABLE4, data, 4, owner);
  encode_write(two, stateid(), 4, UNSTABLE4, data + 4, 4, owner);
  EXPECT_EQ(two.finish_record(&wire, &tail), -EINVAL);
}
