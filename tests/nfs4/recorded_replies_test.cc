// Replies recorded from nfs-ganesha 4.3 (NFS4_RECORD_DIR=... ganesha_test.sh, see
// replies/README.md): they decode, and every truncation or single-byte corruption of
// them is rejected or decoded without reading out of bounds. OPEN's rflags patched to
// PRESERVE_UNLINKED stand in for the server that sets it (ONTAP), which we do not have.
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <iterator>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "reply_programs.h"

using namespace nfsshim::nfs4;
using nfs4test::Decoded;
using nfs4test::decode_reply;
using nfs4test::find_program;

namespace {

std::vector<uint8_t> load(const std::string& name) {
  std::ifstream f(std::string(NFS4_REPLIES_DIR) + "/" + name + ".bin", std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

int decode(const std::string& name, const std::vector<uint8_t>& b, Decoded* out) {
  const nfs4test::Program* p = find_program(name);
  if (p == nullptr) return -ENOENT;
  return decode_reply(b.data(), b.size(), *p, out);
}

}  // namespace

TEST(RecordedReplies, EveryFixtureDecodesAndResistsDamage) {
  for (size_t i = 0; i < nfs4test::kProgramCount; ++i) {
    const std::string name = nfs4test::kPrograms[i].name;
    SCOPED_TRACE(name);
    auto b = load(name);
    ASSERT_FALSE(b.empty()) << "missing replies/" << name << ".bin";
    Decoded ok;
    ASSERT_EQ(decode(name, b, &ok), 0);
    for (size_t n = 0; n < b.size(); ++n) {
      std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<long>(n));
      Decoded d;
      ASSERT_EQ(decode(name, cut, &d), -EBADMSG) << "prefix " << n;
    }
    for (size_t k = 0; k < b.size() && k < 4096; ++k) {
      auto bad = b;
      bad[k] ^= 0xa5;
      Decoded d;
      (void)decode(name, bad, &d);
    }
  }
}

TEST(RecordedReplies, SessionValues) {
  Decoded d;
  ASSERT_EQ(decode("exchange_id", load("exchange_id"), &d), 0);
  EXPECT_NE(d.exchange.clientid, 0u);
  EXPECT_EQ(d.exchange.flags & EXCHGID4_FLAG_SUPP_MOVED_REFER, EXCHGID4_FLAG_SUPP_MOVED_REFER);
  ASSERT_EQ(decode("create_session", load("create_session"), &d), 0);
  EXPECT_EQ(d.create_session.fore.maxrequests, 180u);
  ASSERT_EQ(decode("bind_conn", load("bind_conn"), &d), 0);
  EXPECT_EQ(d.bind.sessionid, d.create_session.sessionid);
  ASSERT_EQ(decode("getattr_export", load("getattr_export"), &d), 0);
  EXPECT_EQ(d.fs_attrs.attrs.lease_time, 20u);
  EXPECT_EQ(d.attrs.attrs.type, NF4DIR);
  ASSERT_EQ(decode("sequence_badsession", load("sequence_badsession"), &d), 0);
  EXPECT_EQ(d.status, static_cast<uint32_t>(NFS4ERR_BADSESSION));
  EXPECT_EQ(nfs4_recovery(d.status), Recovery::kNewSession);
}

TEST(RecordedReplies, IoAndLockValues) {
  Decoded d;
  ASSERT_EQ(decode("write_commit", load("write_commit"), &d), 0);
  EXPECT_EQ(d.write.count, 200000u);
  EXPECT_EQ(d.write.verifier, d.commit.verifier);
  auto rb = load("read");
  ASSERT_EQ(decode("read", rb, &d), 0);
  ASSERT_EQ(d.read.len, 100u);
  for (size_t i = 0; i < d.read.len; ++i) {
    ASSERT_EQ(d.read.data[i], static_cast<uint8_t>((i * 131) ^ (i >> 8))) << i;
  }
  ASSERT_EQ(decode("lockt_denied", load("lockt_denied"), &d), 0);
  EXPECT_EQ(d.status, static_cast<uint32_t>(NFS4ERR_DENIED));
  EXPECT_EQ(d.lockt.denied.length, 100u);
  ASSERT_EQ(decode("remove_noent", load("remove_noent"), &d), 0);
  EXPECT_EQ(nfs4_errno(d.status), -ENOENT);
  ASSERT_EQ(decode("readdir", load("readdir"), &d), 0);
  EXPECT_FALSE(d.readdir.entries.empty());
}

TEST(RecordedReplies, OpenRflagsPatchedToPreserveUnlinked) {
  auto b = load("open_create");
  Decoded d;
  ASSERT_EQ(decode("open_create", b, &d), 0);
  EXPECT_EQ(d.open.rflags, OPEN4_RESULT_LOCKTYPE_POSIX);  // what ganesha 4.3 sends
  EXPECT_FALSE(preserves_unlinked(d.open));

  // Find rflags by walking the reply up to it with the public decoders.
  nfsshim::rpc::XdrDecoder dec(b);
  nfsshim::rpc::ReplyHeader h;
  uint32_t xid = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  ASSERT_EQ(decode_compound_rpc(dec, xid, &h), 0);
  ReplyReader r(dec);
  ASSERT_EQ(r.begin(), 0);
  SequenceRes seq;
  uint32_t st;
  ASSERT_EQ(decode_sequence(r, &seq), 0);
  ASSERT_EQ(decode_status_only(r, OP_PUTFH, &st), 0);
  ASSERT_EQ(r.next(OP_OPEN, &st), 0);
  Stateid4 sid;
  ChangeInfo4 ci;
  ASSERT_EQ(get_stateid(dec, &sid), 0);
  ASSERT_EQ(get_change_info(dec, &ci), 0);
  size_t at = dec.pos();
  ASSERT_EQ(b[at + 3], OPEN4_RESULT_LOCKTYPE_POSIX);

  auto patched = b;
  patched[at + 3] |= OPEN4_RESULT_PRESERVE_UNLINKED;
  Decoded p;
  ASSERT_EQ(decode("open_create", patched, &p), 0);
  EXPECT_EQ(p.open.rflags, OPEN4_RESULT_LOCKTYPE_POSIX | OPEN4_RESULT_PRESERVE_UNLINKED);
  EXPECT_TRUE(preserves_unlinked(p.open));
  EXPECT_EQ(p.open.stateid, d.open.stateid);
  // A failed OPEN never claims the flag, whatever the bits.
  OpenRes failed;
  failed.status = NFS4ERR_ACCESS;
  failed.rflags = OPEN4_RESULT_PRESERVE_UNLINKED;
  EXPECT_FALSE(preserves_unlinked(failed));
}
