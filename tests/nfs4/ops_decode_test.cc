// COMPOUND reply decoding against replies written by hand from RFC 8881's XDR, and
// malformed variants that must fail with -EBADMSG (never crash, never over-read: the
// sanitizer builds run these too).
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>

#include "hex.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_lock.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

using namespace nfsshim::nfs4;
using nfs4test::hex;
using nfsshim::rpc::XdrDecoder;

namespace {

// RPC reply xid 1, accepted, AUTH_NONE verifier, SUCCESS; COMPOUND4res status, tag "", n.
std::string rhead(uint32_t status, uint32_t n) {
  char buf[64];
  snprintf(buf, sizeof buf, "%08x 00000000 %08x ", status, n);
  return std::string("00000001 00000001 00000000 00000000 00000000 00000000 ") + buf;
}

const char* kSession = "00010203 04050607 08090a0b 0c0d0e0f";
const char* kStateid = "00000001 a0a1a2a3 a4a5a6a7 a8a9aaab";
const std::string kSeqOk = std::string("00000035 00000000 ") + kSession +
                           " 00000001 00000002 000000b3 000000b3 00000000 ";

// fattr4 for getattr_bitmap(): 116 bytes of values.
const std::string kFullAttrs =
    "00000002 0010011a 0030a03a 00000074 "
    "00000001 "                              // type NF4REG
    "00000000 00000005 "                     // change
    "00000000 00001000 "                     // size
    "00000000 00000001 00000000 00000002 "   // fsid
    "00000000 0000002a "                     // fileid
    "000001a4 "                              // mode 0644
    "00000001 "                              // numlinks
    "00000004 31303030 "                     // owner "1000"
    "00000007 75736572 73407800 "            // owner_group "users@x"
    "00000000 00002000 "                     // space_used
    "00000000 00000064 00000001 "            // time_access
    "00000000 00000065 00000002 "            // time_metadata
    "00000000 00000066 00000003 ";           // time_modify

// Runs `body` on a decoded reply: returns its result, or the first failure.
using Body = std::function<int(ReplyReader&)>;
int run(const std::vector<uint8_t>& b, const Body& body) {
  XdrDecoder d(b);
  nfsshim::rpc::ReplyHeader h;
  if (int rc = decode_compound_rpc(d, 1, &h); rc != 0) return rc;
  ReplyReader r(d);
  if (r.begin() < 0) return -EBADMSG;
  if (int rc = body(r); rc < 0) return rc;
  return r.finish();
}
int run(const std::string& h, const Body& body) { return run(hex(h), body); }

// Every proper prefix must fail cleanly; every single-byte corruption must not crash.
void hostile_variants(const std::string& h, const Body& body) {
  auto full = hex(h);
  ASSERT_EQ(run(full, body), 0);
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    EXPECT_EQ(run(cut, body), -EBADMSG) << "prefix of " << n << " bytes";
  }
  for (size_t i = 0; i < full.size(); ++i) {
    auto bad = full;
    bad[i] ^= 0xff;
    (void)run(bad, body);  // may be valid or not; must stay in bounds
  }
}

}  // namespace

TEST(Nfs4Decode, SequencePutfhGetattr) {
  std::string reply = rhead(0, 3) + kSeqOk + "00000016 00000000 00000009 00000000 " + kFullAttrs;
  SequenceRes seq;
  uint32_t putfh;
  GetattrRes ga;
  Body body = [&](ReplyReader& r) {
    if (decode_sequence(r, &seq) < 0 || decode_status_only(r, OP_PUTFH, &putfh) < 0) return -EBADMSG;
    return decode_getattr(r, getattr_bitmap(), &ga);
  };
  ASSERT_EQ(run(reply, body), 0);
  EXPECT_EQ(seq.status, 0u);
  EXPECT_EQ(seq.sessionid[15], 0x0f);
  EXPECT_EQ(seq.sequenceid, 1u);
  EXPECT_EQ(seq.slotid, 2u);
  EXPECT_EQ(seq.highest_slotid, 179u);
  EXPECT_EQ(seq.target_highest_slotid, 179u);
  const Fattr4& a = ga.attrs;
  EXPECT_EQ(a.present, getattr_bitmap());
  EXPECT_EQ(a.type, NF4REG);
  EXPECT_EQ(a.change, 5u);
  EXPECT_EQ(a.size, 4096u);
  EXPECT_EQ(a.fsid.major, 1u);
  EXPECT_EQ(a.fsid.minor, 2u);
  EXPECT_EQ(a.fileid, 42u);
  EXPECT_EQ(a.mode, 0644u);
  EXPECT_EQ(a.numlinks, 1u);
  EXPECT_EQ(a.owner, "1000");
  EXPECT_EQ(a.owner_group, "users@x");
  EXPECT_EQ(a.space_used, 8192u);
  EXPECT_EQ(a.time_access.seconds, 100);
  EXPECT_EQ(a.time_access.nseconds, 1u);
  EXPECT_EQ(a.time_metadata.seconds, 101);
  EXPECT_EQ(a.time_modify.nseconds, 3u);
  uint32_t id = 0;
  EXPECT_TRUE(numeric_id(a.owner, &id));
  EXPECT_EQ(id, 1000u);
  EXPECT_FALSE(numeric_id(a.owner_group, &id));
  hostile_variants(reply, body);
}

TEST(Nfs4Decode, FailedOpEndsTheResults) {
  std::string reply = rhead(NFS4ERR_STALE, 2) + kSeqOk + "00000016 00000046";
  SequenceRes seq;
  uint32_t st;
  ASSERT_EQ(run(reply, [&](ReplyReader& r) {
              decode_sequence(r, &seq);
              return decode_status_only(r, OP_PUTFH, &st);
            }), 0);
  EXPECT_EQ(st, static_cast<uint32_t>(NFS4ERR_STALE));
  // The reader refuses to read a result after the failure.
  std::string extra = rhead(NFS4ERR_STALE, 3) + kSeqOk + "00000016 00000046 0000000a 00000000";
  EXPECT_EQ(run(extra, [&](ReplyReader& r) {
              decode_sequence(r, &seq);
              decode_status_only(r, OP_PUTFH, &st);
              GetfhRes fh;
              return decode_getfh(r, &fh);
            }), -EBADMSG);
}

TEST(Nfs4Decode, StructuralErrorsAreRejected) {
  SequenceRes seq;
  Body just_seq = [&](ReplyReader& r) { return decode_sequence(r, &seq); };
  // a PUTFH result where SEQUENCE was expected
  EXPECT_EQ(run(rhead(0, 1) + "00000016 00000000", just_seq), -EBADMSG);
  // compound status differs from the last result's
  EXPECT_EQ(run(rhead(NFS4ERR_DELAY, 1) + kSeqOk, just_seq), -EBADMSG);
  // more results than read
  EXPECT_EQ(run(rhead(0, 2) + kSeqOk + "00000016 00000000", just_seq), -EBADMSG);
  // trailing garbage
  EXPECT_EQ(run(rhead(0, 1) + kSeqOk + "deadbeef", just_seq), -EBADMSG);
  // resarray count beyond what could fit
  EXPECT_EQ(run(rhead(0, 0xffffffff) + kSeqOk, just_seq), -EBADMSG);
  // SEQUENCE names a slot above its own highest slot
  EXPECT_EQ(run(rhead(0, 1) + "00000035 00000000 " + kSession +
                " 00000001 00000005 00000004 00000004 00000000", just_seq), -EBADMSG);
  // reply for another xid
  std::string other = rhead(0, 1) + kSeqOk;
  other[7] = '2';
  EXPECT_EQ(run(other, just_seq), -EBADMSG);
}

TEST(Nfs4Decode, IllegalOpResultIsAccepted) {
  uint32_t st;
  ASSERT_EQ(run(rhead(NFS4ERR_OP_ILLEGAL, 1) + "0000273c 0000273c",
                [&](ReplyReader& r) { return decode_status_only(r, OP_SAVEFH, &st); }), 0);
  EXPECT_EQ(st, static_cast<uint32_t>(NFS4ERR_OP_ILLEGAL));
}

TEST(Nfs4Decode, Fattr4IsExact) {
  Bitmap4 type_only = Bitmap4().set(FATTR4_TYPE);
  GetattrRes ga;
  Body body = [&](ReplyReader& r) { return decode_getattr(r, type_only, &ga); };
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000001 00000002 00000004 00000002", body), 0);
  EXPECT_EQ(ga.attrs.type, NF4DIR);
  // size (bit 4) was not asked for
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000001 00000012 0000000c "
                              "00000002 00000000 00000010", body), -EBADMSG);
  // attr_vals longer than its attributes
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000001 00000002 00000008 00000002 00000000",
                body), -EBADMSG);
  // attr_vals shorter than its attributes
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000001 00000002 00000000", body), -EBADMSG);
  // type out of range
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000001 00000002 00000004 0000000a", body),
            -EBADMSG);
  // a bit in word 5 of the mask
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000006 00000002 00000000 00000000 00000000 00000000 00000001 "
                              "00000004 00000002", body), -EBADMSG);
  Bitmap4 mode_time = Bitmap4().set(FATTR4_MODE).set(FATTR4_TIME_MODIFY);
  Body body2 = [&](ReplyReader& r) { return decode_getattr(r, mode_time, &ga); };
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000002 00000000 00200002 00000010 "
                              "000001ff 00000000 00000001 3b9ac9ff", body2), 0);
  // mode above 07777
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000002 00000000 00200002 00000010 "
                              "00001000 00000000 00000001 00000000", body2), -EBADMSG);
  // nseconds of 1e9
  EXPECT_EQ(run(rhead(0, 1) + "00000009 00000000 00000002 00000000 00200002 00000010 "
                              "000001ff 00000000 00000001 3b9aca00", body2), -EBADMSG);
}

TEST(Nfs4Decode, OpenResultWithRflagsAndDelegations) {
  std::string open_none = std::string("00000012 00000000 ") + kStateid +
                          " 00000001 00000000 00000010 00000000 00000011 "
                          "0000000c 00000002 00000000 00000002 00000000";
  OpenRes o;
  Body body = [&](ReplyReader& r) { return decode_open(r, &o); };
  ASSERT_EQ(run(rhead(0, 1) + open_none, body), 0);
  EXPECT_EQ(o.stateid.seqid, 1u);
  EXPECT_EQ(o.stateid.other[11], 0xab);
  EXPECT_TRUE(o.cinfo.atomic);
  EXPECT_EQ(o.cinfo.before, 0x10u);
  EXPECT_EQ(o.cinfo.after, 0x11u);
  EXPECT_EQ(o.rflags, OPEN4_RESULT_PRESERVE_UNLINKED | OPEN4_RESULT_LOCKTYPE_POSIX);
  EXPECT_TRUE(o.attrset.test(FATTR4_MODE));
  EXPECT_EQ(o.delegation.type, OPEN_DELEGATE_NONE);
  hostile_variants(rhead(0, 1) + open_none, body);

  std::string head = std::string("00000012 00000000 ") + kStateid +
                     " 00000000 00000000 00000010 00000000 00000011 00000004 00000000 ";
  ASSERT_EQ(run(rhead(0, 1) + head + "00000002 " + kStateid +
                " 00000000 00000001 00000000 00100000 "
                "00000000 00000000 00000000 00000006 4f574e45 52400000", body), 0);
  EXPECT_EQ(o.delegation.type, OPEN_DELEGATE_WRITE);
  EXPECT_EQ(o.delegation.filesize, 0x100000u);
  EXPECT_EQ(o.delegation.permissions.who, "OWNER@");
  ASSERT_EQ(run(rhead(0, 1) + head + "00000001 " + kStateid +
                " 00000001 00000000 00000000 00000000 00000000", body), 0);
  EXPECT_EQ(o.delegation.type, OPEN_DELEGATE_READ);
  EXPECT_TRUE(o.delegation.recall);
  ASSERT_EQ(run(rhead(0, 1) + head + "00000003 00000007 00000001", body), 0);
  EXPECT_EQ(o.delegation.why_none, WND4_CONTENTION);
  EXPECT_TRUE(o.delegation.server_will_act);
  ASSERT_EQ(run(rhead(0, 1) + head + "00000003 00000001", body), 0);  // WND4_NOT_WANTED
  EXPECT_EQ(run(rhead(0, 1) + head + "00000004", body), -EBADMSG);
  EXPECT_EQ(run(rhead(0, 1) + head + "00000002 " + kStateid +
                " 00000000 00000003 00000000 00000000", body), -EBADMSG);  // bad limitby
}

TEST(Nfs4Decode, ReaddirListIsIterative) {
  ReaddirArgs sent;
  sent.attrs.set(FATTR4_TYPE);
  std::string reply = rhead(0, 1) +
                      "0000001a 00000000 01020304 05060708 "
                      "00000001 00000000 00000001 00000001 61000000 00000001 00000002 00000004 00000001 "
                      "00000001 00000000 00000002 00000002 62620000 00000001 00000002 00000004 00000002 "
                      "00000000 00000001";
  ReaddirRes rd;
  Body body = [&](ReplyReader& r) { return decode_readdir(r, sent, &rd); };
  ASSERT_EQ(run(reply, body), 0);
  ASSERT_EQ(rd.entries.size(), 2u);
  EXPECT_EQ(rd.entries[0].name, "a");
  EXPECT_EQ(rd.entries[0].attrs.type, NF4REG);
  EXPECT_EQ(rd.entries[1].cookie, 2u);
  EXPECT_EQ(rd.entries[1].name, "bb");
  EXPECT_EQ(rd.entries[1].attrs.type, NF4DIR);
  EXPECT_TRUE(rd.eof);
  EXPECT_EQ(rd.cookieverf[7], 8);
  hostile_variants(reply, body);
}

// An entry whose attributes the server could not read (removed mid-scan) carries only
// rdattr_error when that was asked for; the next entry decodes as usual.
TEST(Nfs4Decode, ReaddirEntryWithRdattrError) {
  ReaddirArgs sent;
  sent.attrs.set(FATTR4_TYPE).set(FATTR4_RDATTR_ERROR);
  std::string reply = rhead(0, 1) +
                      "0000001a 00000000 01020304 05060708 "
                      "00000001 00000000 00000001 00000001 61000000 00000001 00000800 00000004 00000002 "
                      "00000001 00000000 00000002 00000002 62620000 00000001 00000002 00000004 00000002 "
                      "00000000 00000001";
  ReaddirRes rd;
  Body body = [&](ReplyReader& r) { return decode_readdir(r, sent, &rd); };
  ASSERT_EQ(run(reply, body), 0);
  ASSERT_EQ(rd.entries.size(), 2u);
  EXPECT_TRUE(rd.entries[0].attrs.present.test(FATTR4_RDATTR_ERROR));
  EXPECT_FALSE(rd.entries[0].attrs.present.test(FATTR4_TYPE));
  EXPECT_EQ(rd.entries[0].attrs.rdattr_error, NFS4ERR_NOENT);
  EXPECT_EQ(rd.entries[1].attrs.type, NF4DIR);
  EXPECT_EQ(rd.entries[1].attrs.rdattr_error, 0u);
  hostile_variants(reply, body);
  // Not asked for: refused as any attribute not asked for.
  sent.attrs = Bitmap4().set(FATTR4_TYPE);
  EXPECT_EQ(run(reply, body), -EBADMSG);
}

TEST(Nfs4Decode, IoResultsAreBoundedByTheRequest) {
  ReadRes rd;
  std::string read = rhead(0, 1) + "00000019 00000000 00000001 00000005 68656c6c 6f000000";
  auto read_bytes = hex(read);  // rd.data points into it: keep it alive
  ASSERT_EQ(run(read_bytes, [&](ReplyReader& r) { return decode_read(r, 5, &rd); }), 0);
  EXPECT_TRUE(rd.eof);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rd.data), rd.len), "hello");
  EXPECT_EQ(run(read, [&](ReplyReader& r) { return decode_read(r, 4, &rd); }), -EBADMSG);

  WriteRes wr;
  std::string write = rhead(0, 1) + "00000026 00000000 00000005 00000000 01020304 05060708";
  ASSERT_EQ(run(write, [&](ReplyReader& r) { return decode_write(r, 5, &wr); }), 0);
  EXPECT_EQ(wr.count, 5u);
  EXPECT_EQ(wr.committed, UNSTABLE4);
  EXPECT_EQ(wr.verifier[0], 1);
  EXPECT_EQ(run(write, [&](ReplyReader& r) { return decode_write(r, 4, &wr); }), -EBADMSG);

  CommitRes cm;
  ASSERT_EQ(run(rhead(0, 1) + "00000005 00000000 01020304 05060708",
                [&](ReplyReader& r) { return decode_commit(r, &cm); }), 0);
  EXPECT_EQ(cm.verifier[7], 8);
}

TEST(Nfs4Decode, SessionResults) {
  ExchangeIdRes ex;
  std::string exch = rhead(0, 1) +
                     "0000002a 00000000 01020304 05060708 00000001 00010001 00000000 "
                     "00000000 00000009 00000002 61620000 00000001 73000000 "
                     "00000001 00000001 64000000 00000001 6e000000 00000000 00000001 00000000";
  Body b = [&](ReplyReader& r) { return decode_exchange_id(r, &ex); };
  ASSERT_EQ(run(exch, b), 0);
  EXPECT_EQ(ex.clientid, 0x0102030405060708u);
  EXPECT_EQ(ex.sequenceid, 1u);
  EXPECT_EQ(ex.flags, EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_SUPP_MOVED_REFER);
  EXPECT_EQ(ex.server_minor_id, 9u);
  EXPECT_EQ(ex.server_major_id.size(), 2u);
  EXPECT_EQ(ex.server_impl_id.name, "n");
  hostile_variants(exch, b);
  // SP4_SSV was never asked for
  EXPECT_EQ(run(rhead(0, 1) + "0000002a 00000000 01020304 05060708 00000001 00010001 00000002",
                b), -EBADMSG);

  CreateSessionRes cs;
  std::string create = rhead(0, 1) + "0000002b 00000000 " + kSession +
                       " 00000001 00000000 "
                       "00000000 00100000 00100000 00002000 00000010 000000b4 00000000 "
                       "00000000 00001000 00001000 00000000 00000002 00000001 00000000";
  Body c = [&](ReplyReader& r) { return decode_create_session(r, &cs); };
  ASSERT_EQ(run(create, c), 0);
  EXPECT_EQ(cs.fore.maxrequests, 180u);
  EXPECT_EQ(cs.back.maxoperations, 2u);
  hostile_variants(create, c);
  // ca_rdma_ird<1> with two values
  EXPECT_EQ(run(rhead(0, 1) + "0000002b 00000000 " + kSession + " 00000001 00000000 "
                "00000000 00100000 00100000 00002000 00000010 000000b4 00000002 00000001 00000002",
                c), -EBADMSG);

  BindConnRes bc;
  ASSERT_EQ(run(rhead(0, 1) + "00000029 00000000 " + kSession + " 00000003 00000000",
                [&](ReplyReader& r) { return decode_bind_conn_to_session(r, &bc); }), 0);
  EXPECT_EQ(bc.dir, CDFS4_BOTH);
}

TEST(Nfs4Decode, LockDeniedCarriesTheConflict) {
  LockRes lk;
  std::string denied = rhead(NFS4ERR_DENIED, 1) +
                       "0000000c 0000271a 00000000 00000000 ffffffff ffffffff 00000002 "
                       "00000000 00000007 00000001 4c000000";
  ASSERT_EQ(run(denied, [&](ReplyReader& r) { return decode_lock(r, &lk); }), 0);
  EXPECT_EQ(lk.status, static_cast<uint32_t>(NFS4ERR_DENIED));
  EXPECT_EQ(lk.denied.length, ~0ull);
  EXPECT_EQ(lk.denied.locktype, WRITE_LT);
  EXPECT_EQ(lk.denied.owner.clientid, 7u);
  LocktRes lt;
  ASSERT_EQ(run(rhead(0, 1) + "0000000d 00000000",
                [&](ReplyReader& r) { return decode_lockt(r, &lt); }), 0);
  TestStateidRes ts;
  ASSERT_EQ(run(rhead(0, 1) + "00000037 00000000 00000002 00000000 00002729",
                [&](ReplyReader& r) { return decode_test_stateid(r, 2, &ts); }), 0);
  EXPECT_EQ(ts.codes[1], static_cast<uint32_t>(NFS4ERR_BAD_STATEID));
  EXPECT_EQ(run(rhead(0, 1) + "00000037 00000000 00000002 00000000 00002729",
                [&](ReplyReader& r) { return decode_test_stateid(r, 1, &ts); }), -EBADMSG);
}

TEST(Nfs4Decode, DirectoryResults) {
  RenameRes rn;
  ASSERT_EQ(run(rhead(0, 1) + "0000001d 00000000 00000001 00000000 00000001 00000000 00000002 00000000 00000000 00000003 00000000 00000004",
                [&](ReplyReader& r) { return decode_rename(r, &rn); }), 0);
  EXPECT_EQ(rn.source_cinfo.after, 2u);
  EXPECT_FALSE(rn.target_cinfo.atomic);
  EXPECT_EQ(rn.target_cinfo.after, 4u);
  ReadlinkRes rl;
  ASSERT_EQ(run(rhead(0, 1) + "0000001b 00000000 00000003 2f746d00",
                [&](ReplyReader& r) { return decode_readlink(r, &rl); }), 0);
  EXPECT_EQ(rl.target, "/tm");
  CreateArgs sent;
  sent.type = NF4DIR;
  sent.name = "d";
  sent.attrs.set_mode = true;
  CreateRes cr;
  ASSERT_EQ(run(rhead(0, 1) + "00000006 00000000 00000001 00000000 00000001 00000000 00000002 00000002 00000000 00000002",
                [&](ReplyReader& r) { return decode_create(r, sent, &cr); }), 0);
  // the server claims to have set the size, which we did not send
  EXPECT_EQ(run(rhead(0, 1) + "00000006 00000000 00000001 00000000 00000001 00000000 00000002 00000001 00000010",
                [&](ReplyReader& r) { return decode_create(r, sent, &cr); }), -EBADMSG);
  SetattrRes sa;
  ASSERT_EQ(run(rhead(NFS4ERR_PERM, 1) + "00000022 00000001 00000000",
                [&](ReplyReader& r) { return decode_setattr(r, sent.attrs, &sa); }), 0);
  EXPECT_EQ(sa.status, static_cast<uint32_t>(NFS4ERR_PERM));
}
