#include <gtest/gtest.h>

#include <cerrno>

#include "hex.h"
#include "nfsshim/nfs4/fattr4.h"

using namespace nfsshim::nfs4;
using nfs4test::hex;
using nfs4test::to_hex;
using nfsshim::rpc::XdrDecoder;
using nfsshim::rpc::XdrEncoder;

TEST(Bitmap4, EncodesOnlyTheWordsNeeded) {
  XdrEncoder e;
  put_bitmap(e, Bitmap4());
  put_bitmap(e, Bitmap4().set(FATTR4_SIZE));
  put_bitmap(e, Bitmap4().set(FATTR4_MOUNTED_ON_FILEID));  // bit 55: word 1, bit 23
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("00000000 00000001 00000010 00000002 00000000 00800000")));
}

TEST(Bitmap4, ServerSetsAreTruncatedOurMasksAreNot) {
  auto b = hex("00000004 00000003 00000000 00000000 00000001");  // bit 96 set
  Bitmap4 m;
  XdrDecoder d(b);
  EXPECT_EQ(get_bitmap_truncating(d, &m), 0);
  EXPECT_TRUE(m.test(0));
  EXPECT_TRUE(m.test(1));
  XdrDecoder d2(b);
  EXPECT_EQ(get_bitmap(d2, &m), -EBADMSG);
  auto longer = hex("00000009" + std::string(9 * 8, '0'));
  XdrDecoder d3(longer);
  EXPECT_EQ(get_bitmap_truncating(d3, &m), -EBADMSG);  // over kMaxBitmapWords
}

TEST(Fattr4, SupportedAttrsAndLeaseTime) {
  Bitmap4 asked = Bitmap4().set(FATTR4_SUPPORTED_ATTRS).set(FATTR4_LEASE_TIME);
  auto b = hex("00000001 00000401 00000010 00000002 0010011a 0030a03a 0000003c");
  XdrDecoder d(b);
  Fattr4 a;
  ASSERT_EQ(get_fattr4(d, asked, &a), 0);
  EXPECT_EQ(a.lease_time, 60u);
  EXPECT_EQ(a.supported_attrs, getattr_bitmap());
  EXPECT_EQ(d.expect_end("end"), 0);
}

TEST(Fattr4, SetAttrsRoundTripThroughAGetattrDecoder) {
  SetAttrs s;
  s.set_size = true;
  s.size = 77;
  s.set_mode = true;
  s.mode = 0600;
  s.set_owner = true;
  s.owner = "1000";
  XdrEncoder e;
  ASSERT_EQ(put_fattr4(e, s), 0);
  // The settable attributes size/mode/owner are also readable: decode them back.
  XdrDecoder d(e.bytes());
  Fattr4 a;
  ASSERT_EQ(get_fattr4(d, setattrs_bitmap(s), &a), 0);
  EXPECT_EQ(a.size, 77u);
  EXPECT_EQ(a.mode, 0600u);
  EXPECT_EQ(a.owner, "1000");
  s.atime_how = TimeHow::kClientTime;
  s.atime.nseconds = 1000000000u;
  EXPECT_EQ(put_fattr4(e, s), -EINVAL);
}

TEST(Fattr4, NumericIds) {
  uint32_t id = 7;
  EXPECT_TRUE(numeric_id("0", &id));
  EXPECT_EQ(id, 0u);
  EXPECT_TRUE(numeric_id("4294967295", &id));
  EXPECT_EQ(id, 4294967295u);
  EXPECT_FALSE(numeric_id("4294967296", &id));
  EXPECT_FALSE(numeric_id("", &id));
  EXPECT_FALSE(numeric_id("root@localdomain", &id));
  EXPECT_FALSE(numeric_id("-1", &id));
}

TEST(Fattr4, FilehandleAndFsstatAttributes) {
  // RFC 8881 5.8.1.6 / 5.8.2.x: filehandle (19) is an nfs_fh4, files_* (21-23) and
  // space_* (42-44) are uint64. Word 0 = bits 19,21,22,23 = 0x00e80000; word 1 = bits
  // 42,43,44 = 0x00001c00.
  Bitmap4 asked = fsstat_bitmap().set(FATTR4_FILEHANDLE);
  auto b = hex("00000002 00e80000 00001c00 00000038 "
               "00000004 deadbeef "
               "00000000 00000064 00000000 00000065 00000000 00000066 "
               "00000001 00000000 00000002 00000000 00000003 00000000");
  XdrDecoder d(b);
  Fattr4 a;
  ASSERT_EQ(get_fattr4(d, asked, &a), 0);
  EXPECT_EQ(a.filehandle, (Fh4{0xde, 0xad, 0xbe, 0xef}));
  EXPECT_EQ(a.files_avail, 100u);
  EXPECT_EQ(a.files_free, 101u);
  EXPECT_EQ(a.files_total, 102u);
  EXPECT_EQ(a.space_avail, 1ull << 32);
  EXPECT_EQ(a.space_free, 2ull << 32);
  EXPECT_EQ(a.space_total, 3ull << 32);
  // A filehandle longer than NFS4_FHSIZE (128) is malformed.
  auto big = hex("00000001 00080000 00000088 00000084" + std::string(132 * 2, 'a'));
  XdrDecoder d2(big);
  EXPECT_EQ(get_fattr4(d2, asked, &a), -EBADMSG);
}
