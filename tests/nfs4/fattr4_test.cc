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
