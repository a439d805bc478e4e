#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "hex.h"
#include "nfsshim/rpc/record_marking.h"

using namespace nfsshim::rpc;
using nfs4test::hex;
using nfs4test::to_hex;

static const uint8_t* u8(const char* s) { return reinterpret_cast<const uint8_t*>(s); }

TEST(RecordMarking, FramesIntoFragmentsWithLastBit) {
  std::vector<uint8_t> out;
  frame_record(&out, u8("abcde"), 5, 2);
  EXPECT_EQ(to_hex(out), to_hex(hex("00000002 6162 00000002 6364 80000001 65")));
  out.clear();
  frame_record(&out, u8("abcde"), 5);
  EXPECT_EQ(to_hex(out), to_hex(hex("80000005 6162636465")));
  out.clear();
  frame_record(&out, nullptr, 0);
  EXPECT_EQ(to_hex(out), to_hex(hex("80000000")));
}

TEST(RecordMarking, DeframesByteByByte) {
  // Record 1 in two fragments ("ab" + "c"), record 2 in one ("xyz"), record 3 empty.
  auto stream = hex("00000002 6162 80000001 63 80000003 78797a 80000000");
  RecordFramer f(100);
  for (uint8_t b : stream) ASSERT_EQ(f.feed(&b, 1), 0);
  std::vector<uint8_t> r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "abc");
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "xyz");
  ASSERT_TRUE(f.next(&r));
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(f.next(&r));
}

TEST(RecordMarking, DeframesInOneFeedAndKeepsPartialRecords) {
  auto stream = hex("80000003 616263 80000004 7778");
  RecordFramer f(100);
  ASSERT_EQ(f.feed(stream.data(), stream.size()), 0);
  EXPECT_EQ(f.pending_records(), 1u);
  std::vector<uint8_t> r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_FALSE(f.next(&r));  // "wx" of 4 bytes so far
  auto rest = hex("797a");
  ASSERT_EQ(f.feed(rest.data(), rest.size()), 0);
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "wxyz");
}

TEST(RecordMarking, OversizedFragmentIsRefusedBeforeBuffering) {
  auto stream = hex("ffffffff 00");  // 2 GiB announced
  RecordFramer f(1 << 20);
  EXPECT_EQ(f.feed(stream.data(), stream.size()), -EMSGSIZE);
  EXPECT_TRUE(f.failed());
  auto more = hex("80000001 61");
  EXPECT_EQ(f.feed(more.data(), more.size()), -EMSGSIZE);  // the stream stays dead
}

TEST(RecordMarking, RecordSumOverMaxIsRefused) {
  auto stream = hex("00000003 616263 80000003 646566");  // 6 bytes > max 5
  RecordFramer f(5);
  EXPECT_EQ(f.feed(stream.data(), stream.size()), -EMSGSIZE);
  std::vector<uint8_t> r;
  EXPECT_FALSE(f.next(&r));
}

TEST(RecordMarking, RoundTripLargeRecord) {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> wire;
  frame_record(&wire, data.data(), data.size(), 4096);
  RecordFramer f(data.size());
  for (size_t off = 0; off < wire.size(); off += 1000) {
    size_t n = std::min<size_t>(1000, wire.size() - off);
    ASSERT_EQ(f.feed(wire.data() + off, n), 0);
  }
  std::vector<uint8_t> r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(r, data);
}
