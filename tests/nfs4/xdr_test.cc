#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "hex.h"
#include "nfsshim/rpc/xdr_decoder.h"
#include "nfsshim/rpc/xdr_encoder.h"

using nfs4test::hex;
using nfs4test::to_hex;
using nfsshim::rpc::XdrDecoder;
using nfsshim::rpc::XdrEncoder;

TEST(XdrEncoder, IntegersAreBigEndian) {
  XdrEncoder e;
  e.u32(0x01020304);
  e.i32(-1);
  e.u64(0x0102030405060708ull);
  e.i64(-2);
  e.boolean(true);
  e.boolean(false);
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("01020304 ffffffff 01020304 05060708 "
                                          "ffffffff fffffffe 00000001 00000000")));
}

TEST(XdrEncoder, OpaquesArePaddedToFour) {
  XdrEncoder e;
  e.opaque("abc", 3);
  e.opaque("abcd", 4);
  e.opaque("", 0);
  e.fixed_opaque("abcde", 5);
  e.string("hello");
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("00000003 61626300 00000004 61626364 00000000 "
                                          "61626364 65000000 00000005 68656c6c 6f000000")));
}

TEST(XdrEncoder, PatchFillsAReservedWord) {
  XdrEncoder e;
  size_t pos = e.reserve_u32();
  e.u32(7);
  e.patch_u32(pos, 0xdeadbeef);
  EXPECT_EQ(to_hex(e.bytes()), to_hex(hex("deadbeef 00000007")));
}

TEST(XdrDecoder, ReadsWhatTheSpecSays) {
  auto b = hex("01020304 ffffffff 01020304 05060708 fffffffe fffffffe 00000001 "
               "00000003 61626300 00000005 68656c6c 6f000000 61626364 65000000");
  XdrDecoder d(b);
  uint32_t u;
  int32_t i;
  uint64_t u64;
  int64_t i64;
  bool flag;
  std::vector<uint8_t> op;
  std::string s;
  uint8_t fixed[5];
  ASSERT_EQ(d.u32(&u), 0);
  EXPECT_EQ(u, 0x01020304u);
  ASSERT_EQ(d.i32(&i), 0);
  EXPECT_EQ(i, -1);
  ASSERT_EQ(d.u64(&u64), 0);
  EXPECT_EQ(u64, 0x0102030405060708ull);
  ASSERT_EQ(d.i64(&i64), 0);
  EXPECT_EQ(i64, -4294967298ll);
  ASSERT_EQ(d.boolean(&flag), 0);
  EXPECT_TRUE(flag);
  ASSERT_EQ(d.opaque(&op, 3), 0);
  EXPECT_EQ(op, (std::vector<uint8_t>{'a', 'b', 'c'}));
  ASSERT_EQ(d.string(&s, 10), 0);
  EXPECT_EQ(s, "hello");
  ASSERT_EQ(d.fixed_opaque(fixed, 5), 0);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(fixed), 5), "abcde");
  EXPECT_EQ(d.expect_end("end"), 0);
}

TEST(XdrDecoder, TruncatedWordFailsWithoutReading) {
  auto b = hex("010203");
  XdrDecoder d(b);
  uint32_t u = 42;
  EXPECT_EQ(d.u32(&u), -EBADMSG);
  EXPECT_EQ(u, 42u);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(std::string(d.error()).find("truncated"), std::string::npos);
}

TEST(XdrDecoder, OpaqueLengthIsCheckedAgainstLimitAndRemainder) {
  {
    auto b = hex("00000005 68656c6c 6f000000");
    XdrDecoder d(b);
    std::string s;
    EXPECT_EQ(d.string(&s, 4), -EBADMSG);  // over the caller's maximum
    EXPECT_NE(std::string(d.error()).find("limit"), std::string::npos);
  }
  {
    auto b = hex("ffffffff 68656c6c");  // a hostile length: must not allocate 4 GiB
    XdrDecoder d(b);
    std::vector<uint8_t> v;
    EXPECT_EQ(d.opaque(&v, SIZE_MAX), -EBADMSG);
    EXPECT_TRUE(v.empty());
  }
  {
    auto b = hex("00000005 68656c6c 6f");  // padding missing
    XdrDecoder d(b);
    std::string s;
    EXPECT_EQ(d.string(&s, 100), -EBADMSG);
  }
}

TEST(XdrDecoder, BoolOtherThanZeroOrOneIsRejected) {
  auto b = hex("00000002");
  XdrDecoder d(b);
  bool v;
  EXPECT_EQ(d.boolean(&v), -EBADMSG);
}

TEST(XdrDecoder, FailureIsSticky) {
  auto b = hex("00000002 00000001");
  XdrDecoder d(b);
  bool v;
  uint32_t u;
  EXPECT_EQ(d.boolean(&v), -EBADMSG);
  EXPECT_EQ(d.u32(&u), -EBADMSG);  // data is there, but the stream is already bad
  EXPECT_STREQ(d.error(), "bool is neither 0 nor 1");
}

TEST(XdrDecoder, ArrayCountMustFitInWhatRemains) {
  auto b = hex("00000003 00000001 00000002");  // 3 words announced, 2 present
  XdrDecoder d(b);
  uint32_t n;
  EXPECT_EQ(d.array_count(&n, 100, 4, "too many"), -EBADMSG);
  auto b2 = hex("00000065");  // 101 > max 100
  XdrDecoder d2(b2);
  EXPECT_EQ(d2.array_count(&n, 100, 0, "too many"), -EBADMSG);
}

TEST(XdrDecoder, TrailingBytesAreReported) {
  auto b = hex("00000001 00000002");
  XdrDecoder d(b);
  uint32_t u;
  d.u32(&u);
  EXPECT_EQ(d.expect_end("trailing"), -EBADMSG);
}

TEST(XdrRoundTrip, EncodeThenDecode) {
  XdrEncoder e;
  std::string big(1000, 'x');
  e.u64(~0ull);
  e.string(big);
  e.i32(-123);
  auto bytes = e.take();
  XdrDecoder d(bytes);
  uint64_t a;
  std::string s;
  int32_t i;
  ASSERT_EQ(d.u64(&a), 0);
  ASSERT_EQ(d.string(&s, 1000), 0);
  ASSERT_EQ(d.i32(&i), 0);
  EXPECT_EQ(a, ~0ull);
  EXPECT_EQ(s, big);
  EXPECT_EQ(i, -123);
  EXPECT_EQ(d.expect_end("end"), 0);
}

TEST(XdrDecoder, HugeFixedLengthCannotWrapThePadding) {
  auto b = hex("01020304");
  XdrDecoder d(b);
  uint8_t dst[4];
  EXPECT_EQ(d.fixed_opaque(dst, SIZE_MAX - 1), -EBADMSG);  // padded, it would wrap to 0
}
