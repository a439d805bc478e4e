#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
  Record r;
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
  Record r;
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
  Record r;
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
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::vector<uint8_t>(r.begin(), r.end()), data);
}

// --- payload_span()/payload_written(): the transport recv()s a fragment's payload
// straight into the record. These drive the framer the way Conn::read_ready does.

// Copies up to n bytes of src into the framer: into payload_span() when a payload is due
// (as a direct recv() would), else through feed(). Returns the bytes taken.
static size_t put(RecordFramer& f, const uint8_t* src, size_t n) {
  RecordFramer::Span s = f.payload_span();
  if (s.len == 0) {
    EXPECT_EQ(f.feed(src, n), 0);
    return n;
  }
  size_t take = std::min(n, s.len);
  std::memcpy(s.data, src, take);
  EXPECT_EQ(f.payload_written(take), 0);
  return take;
}

TEST(RecordMarking, SpanIsEmptyUntilAHeaderIsComplete) {
  RecordFramer f(100);
  EXPECT_EQ(f.payload_span().len, 0u);
  auto hdr = hex("80000005");
  ASSERT_EQ(f.feed(hdr.data(), 3), 0);  // a split header: no payload due yet
  EXPECT_EQ(f.payload_span().len, 0u);
  ASSERT_EQ(f.feed(hdr.data() + 3, 1), 0);
  RecordFramer::Span s = f.payload_span();
  ASSERT_EQ(s.len, 5u);
  std::memcpy(s.data, "hel", 3);
  ASSERT_EQ(f.payload_written(3), 0);
  EXPECT_EQ(f.payload_span().len, 2u);  // the rest of the same fragment
  EXPECT_EQ(f.pending_records(), 0u);
  ASSERT_EQ(f.feed(u8("lo"), 2), 0);    // feed() continues where the span left off
  EXPECT_EQ(f.payload_span().len, 0u);  // next bytes are a header
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "hello");
}

TEST(RecordMarking, SpanCoversOneFragmentOfARecordInSeveral) {
  // "ab" + "cde" + "f" in three fragments, then "xy" in one.
  auto stream = hex("00000002 6162 00000003 636465 80000001 66 80000002 7879");
  RecordFramer f(100);
  std::vector<size_t> spans;  // every span length offered, to check fragment bounds
  size_t pos = 0;
  while (pos < stream.size()) {
    RecordFramer::Span s = f.payload_span();
    if (s.len == 0) {
      ASSERT_EQ(f.feed(stream.data() + pos, 4), 0);  // exactly one header
      pos += 4;
      continue;
    }
    spans.push_back(s.len);
    std::memcpy(s.data, stream.data() + pos, s.len);  // a whole fragment at once
    ASSERT_EQ(f.payload_written(s.len), 0);
    pos += s.len;
    if (spans.size() < 3) {
      EXPECT_EQ(f.pending_records(), 0u);
    }
  }
  EXPECT_EQ(spans, (std::vector<size_t>{2, 3, 1, 2}));
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "abcdef");
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "xy");
  EXPECT_FALSE(f.next(&r));
}

TEST(RecordMarking, BigFragmentOverManyRecvsThroughSpan) {
  // Two 300000-byte records (the first in fragments of 100000), as many short recv()s
  // of odd sizes: headers and payload starts go through feed(), the rest into the span.
  std::vector<uint8_t> a(300000), b(300000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint8_t>(i * 7 + 1);
    b[i] = static_cast<uint8_t>(i * 13 + 5);
  }
  std::vector<uint8_t> wire;
  frame_record(&wire, a.data(), a.size(), 100000);
  frame_record(&wire, b.data(), b.size());
  RecordFramer f(300000);
  size_t pos = 0, chunk = 1;
  std::vector<std::vector<uint8_t>> got;
  while (pos < wire.size()) {
    chunk = chunk * 5 % 9973 + 1;  // 1..9973 bytes, varying
    pos += put(f, wire.data() + pos, std::min(chunk, wire.size() - pos));
    Record r;
    while (f.next(&r)) got.emplace_back(r.begin(), r.end());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0] == a);
  EXPECT_TRUE(got[1] == b);
}

TEST(RecordMarking, PayloadWrittenBeyondTheSpanIsRefused) {
  RecordFramer f(100);
  EXPECT_EQ(f.payload_written(1), -EINVAL);  // no fragment started
  EXPECT_EQ(f.payload_written(0), 0);
  auto hdr = hex("80000002");
  ASSERT_EQ(f.feed(hdr.data(), hdr.size()), 0);
  EXPECT_EQ(f.payload_written(3), -EINVAL);  // only 2 due
  std::memcpy(f.payload_span().data, "ok", 2);
  ASSERT_EQ(f.payload_written(2), 0);
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "ok");
}

TEST(RecordMarking, HostileLengthGivesNoSpan) {
  // 2 GiB announced against 8 MiB: refused at the header, nothing to recv() into.
  RecordFramer f(8u << 20);
  auto hdr = hex("ffffffff");
  EXPECT_EQ(f.feed(hdr.data(), hdr.size()), -EMSGSIZE);
  EXPECT_EQ(f.payload_span().len, 0u);
  EXPECT_EQ(f.payload_written(0), -EMSGSIZE);
  // The bound is on the record: a second fragment pushing it over is refused too,
  // after the first one was received through the span.
  RecordFramer g(10);
  auto h1 = hex("00000006");
  ASSERT_EQ(g.feed(h1.data(), h1.size()), 0);
  ASSERT_EQ(g.payload_span().len, 6u);
  std::memcpy(g.payload_span().data, "abcdef", 6);
  ASSERT_EQ(g.payload_written(6), 0);
  auto h2 = hex("80000005");  // 6 + 5 > 10
  EXPECT_EQ(g.feed(h2.data(), h2.size()), -EMSGSIZE);
  EXPECT_EQ(g.payload_span().len, 0u);
  Record r;
  EXPECT_FALSE(g.next(&r));
  // Exactly at the bound is fine.
  RecordFramer h(10);
  auto ok = hex("00000006 616263646566 80000004");
  ASSERT_EQ(h.feed(ok.data(), ok.size()), 0);
  ASSERT_EQ(h.payload_span().len, 4u);
}

TEST(RecordMarking, PayloadTakenElsewhereIsLeftOutOfTheRecord) {
  // A record "head|DATA|tl" whose DATA a transport put elsewhere after seeing the head;
  // a second record follows. The first comes out as "headtl", the second whole.
  std::vector<uint8_t> wire;
  frame_record(&wire, u8("headDATAtl"), 10);
  frame_record(&wire, u8("next"), 4);
  RecordFramer f(100);
  EXPECT_TRUE(f.at_record_start());
  EXPECT_EQ(f.mark_bytes_due(), 4u);
  ASSERT_EQ(f.feed(wire.data(), 2), 0);  // half a mark
  EXPECT_EQ(f.mark_bytes_due(), 2u);
  EXPECT_TRUE(f.at_record_start());
  ASSERT_EQ(f.feed(wire.data() + 2, 6), 0);  // the rest of the mark and "head"
  EXPECT_FALSE(f.at_record_start());
  EXPECT_TRUE(f.in_last_fragment());
  size_t n;
  const uint8_t* p = f.partial(&n);
  EXPECT_EQ(std::string(p, p + n), "head");
  EXPECT_EQ(f.fragment_left(), 6u);
  EXPECT_EQ(f.payload_elsewhere(7), -EINVAL);  // more than is due
  ASSERT_EQ(f.payload_elsewhere(4), 0);       // "DATA"
  EXPECT_EQ(f.fragment_left(), 2u);
  ASSERT_EQ(f.feed(wire.data() + 12, wire.size() - 12), 0);  // "tl" and the next record
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "headtl");
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "next");
  EXPECT_TRUE(f.at_record_start());
}

TEST(RecordMarking, BytesFedCanBeTakenBackFromTheCurrentFragmentOnly) {
  // "ab" as a first fragment, then "cdEF": EF came in already and was moved elsewhere.
  std::vector<uint8_t> wire = hex("00000002 6162 80000004 63644546");
  RecordFramer f(100);
  ASSERT_EQ(f.feed(wire.data(), wire.size() - 2), 0);  // up to "cd"
  EXPECT_EQ(f.take_back(3), -EINVAL);  // "b" is in the first fragment
  EXPECT_EQ(f.fragment_left(), 2u);
  ASSERT_EQ(f.feed(wire.data() + wire.size() - 2, 2), 0);  // "EF": the record is complete
  Record r;
  ASSERT_TRUE(f.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "abcdEF");
  // Again, with "d" taken back before the rest comes.
  RecordFramer g(100);
  ASSERT_EQ(g.feed(wire.data(), wire.size() - 2), 0);
  ASSERT_EQ(g.take_back(1), 0);
  EXPECT_EQ(g.fragment_left(), 2u);
  ASSERT_EQ(g.feed(wire.data() + wire.size() - 2, 2), 0);
  ASSERT_TRUE(g.next(&r));
  EXPECT_EQ(std::string(r.begin(), r.end()), "abcEF");
}
