// WriteBehind (fusefs/nfs/write_behind.h): who waits for which answered write.
#include "nfs/write_behind.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <thread>

namespace nfsshim::fuse::nfsfs {
namespace {

using namespace std::chrono_literals;

// True if F is still running after a while: it waits (a wrong "waits" can only pass here,
// never fail, so each test also checks that it ends once the reason is gone).
template <typename T>
bool still_waiting(std::future<T>& f) {
  return f.wait_for(100ms) == std::future_status::timeout;
}

TEST(WriteBehind, AnOverlappingWriteWaitsForTheOneInFlight) {
  WriteBehind wb;
  int64_t a = wb.begin(0, 100, 1 << 20);
  ASSERT_GT(a, 0);
  auto b = std::async(std::launch::async, [&] { return wb.begin(50, 100, 1 << 20); });
  EXPECT_TRUE(still_waiting(b));
  // A write beside it (no overlap) goes at once.
  int64_t c = wb.begin(200, 100, 1 << 20);
  EXPECT_GT(c, a);
  wb.end(a, 0);
  ASSERT_EQ(b.wait_for(5s), std::future_status::ready);
  int64_t bt = b.get();
  EXPECT_GT(bt, c);
  wb.end(c, 0);
  wb.end(bt, 0);
}

TEST(WriteBehind, TheBudgetBoundsBytesInFlightButNeverStopsAWriteAlone) {
  WriteBehind wb;
  int64_t a = wb.begin(0, 4, 8);
  int64_t b = wb.begin(4, 4, 8);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  auto c = std::async(std::launch::async, [&] { return wb.begin(8, 4, 8); });
  EXPECT_TRUE(still_waiting(c));
  wb.end(a, 0);
  ASSERT_EQ(c.wait_for(5s), std::future_status::ready);
  int64_t ct = c.get();
  EXPECT_GT(ct, 0);
  EXPECT_EQ(wb.peak_bytes(), 8u);
  wb.end(b, 0);
  wb.end(ct, 0);
  // Larger than the budget, alone: goes (and budget 0 means one write at a time).
  int64_t big = wb.begin(0, 100, 8);
  EXPECT_GT(big, 0);
  auto next = std::async(std::launch::async, [&] { return wb.begin(1000, 1, 0); });
  EXPECT_TRUE(still_waiting(next));
  wb.end(big, 0);
  ASSERT_EQ(next.wait_for(5s), std::future_status::ready);
  wb.end(next.get(), 0);
}

TEST(WriteBehind, AFailedWriteFailsLaterWritesUntilAFlushTakesItsError) {
  WriteBehind wb;
  wb.opened(1, true);
  int64_t a = wb.begin(0, 4, 4);
  ASSERT_GT(a, 0);
  // A writer waiting for room hears the failure instead of waiting on.
  auto waiting = std::async(std::launch::async, [&] { return wb.begin(4, 4, 4); });
  EXPECT_TRUE(still_waiting(waiting));
  wb.end(a, -ENOSPC);
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), -ENOSPC);
  EXPECT_EQ(wb.begin(8, 4, 4), -ENOSPC);  // not cleared by being returned
  EXPECT_EQ(wb.take_error(1), -ENOSPC);
  EXPECT_EQ(wb.take_error(1), 0);  // reported once
  int64_t b = wb.begin(8, 4, 4);
  EXPECT_GT(b, 0);
  wb.end(b, 0);
  EXPECT_EQ(wb.take_error(1), 0);
}

// errseq, as the kernel keeps a file's writeback errors: each open at the failure is told
// once, whoever asks first; an open made before anyone was told is told too, a later one not.
TEST(WriteBehind, AFailedWriteIsToldToEveryOpenOnce) {
  WriteBehind wb;
  wb.opened(1, true);
  wb.opened(2, false);
  EXPECT_TRUE(wb.writes(1));
  EXPECT_FALSE(wb.writes(2));
  EXPECT_FALSE(wb.writes(9));  // unknown
  int64_t a = wb.begin(0, 4, 4);
  ASSERT_GT(a, 0);
  wb.end(a, -ENOSPC);
  wb.opened(3, true);  // before anyone was told
  EXPECT_EQ(wb.take_error(2), -ENOSPC);
  EXPECT_EQ(wb.take_error(2), 0);
  wb.opened(4, true);  // after: the failure is not its own
  EXPECT_EQ(wb.take_error(4), 0);
  EXPECT_EQ(wb.take_error(1), -ENOSPC);
  EXPECT_EQ(wb.take_error(3), -ENOSPC);
  EXPECT_EQ(wb.take_error(1), 0);
  // Writes fail only until the first open was told.
  int64_t b = wb.begin(4, 4, 4);
  ASSERT_GT(b, 0);
  wb.end(b, -EIO);  // a second failure: every open still there is told of it
  EXPECT_EQ(wb.begin(8, 4, 4), -EIO);
  for (uint64_t h : {1, 2, 3, 4}) EXPECT_EQ(wb.take_error(h), -EIO) << h;
  int64_t c = wb.begin(8, 4, 4);
  ASSERT_GT(c, 0);
  wb.end(c, 0);
  wb.closed(4);
  EXPECT_FALSE(wb.writes(4));
}

TEST(WriteBehind, WaitBeforeWaitsOnlyForWritesBegunEarlier) {
  WriteBehind wb;
  int64_t early = wb.begin(0, 10, 1 << 20);
  const uint64_t point = WriteBehind::now();
  int64_t late = wb.begin(10, 10, 1 << 20);
  ASSERT_GT(static_cast<uint64_t>(late), point);
  auto w = std::async(std::launch::async, [&] { wb.wait_before(point); });
  EXPECT_TRUE(still_waiting(w));
  wb.end(early, 0);
  EXPECT_EQ(w.wait_for(5s), std::future_status::ready);  // LATE still in flight
  wb.end(late, 0);
}

TEST(WriteBehind, AReadWaitsOnlyForWritesItOverlaps) {
  WriteBehind wb;
  int64_t a = wb.begin(100, 10, 1 << 20);
  wb.wait_overlapping(0, 100);     // ends right before: no wait
  wb.wait_overlapping(110, 1000);  // starts right after: no wait
  auto r = std::async(std::launch::async, [&] { wb.wait_overlapping(105, 1); });
  EXPECT_TRUE(still_waiting(r));
  wb.end(a, 0);
  EXPECT_EQ(r.wait_for(5s), std::future_status::ready);
}

TEST(WriteBehind, RacedSaysWhenAttributesFetchedSinceAPointMayBeStale) {
  WriteBehind wb;
  const uint64_t p0 = WriteBehind::now();
  EXPECT_FALSE(wb.raced(p0));  // nothing written
  int64_t a = wb.begin(0, 10, 1 << 20);
  EXPECT_FALSE(wb.raced(p0));  // begun after P0: the kernel ignores older attributes itself
  const uint64_t p1 = WriteBehind::now();
  EXPECT_TRUE(wb.raced(p1));  // in flight, begun before P1
  wb.end(a, 0);
  EXPECT_TRUE(wb.raced(p1));  // landed after P1: a fetch begun at P1 may not include it
  const uint64_t p2 = WriteBehind::now();
  EXPECT_FALSE(wb.raced(p2));  // landed before P2
}

// Gathering (write_behind.h): appends that continue each other wait in one pending batch.
constexpr size_t kMax = 64;
const nfs::Cred kAlice{1000, 1000, {}};
const nfs::Cred kBob{1001, 1001, {}};

// One file's WriteBehind and 16-byte writes gathered into it.
class WriteBehindGather : public ::testing::Test {
 protected:
  int gather(uint64_t off, const nfs::Cred& c = kAlice, uint64_t budget = 1 << 20, bool start = true) {
    return wb.gather(off, chunk.data(), chunk.size(), c, kMax, budget, start, &send, &ticket);
  }
  WriteBehind wb;
  const std::string chunk = std::string(16, 'x');
  Batch send;
  int64_t ticket = 0;
};

TEST_F(WriteBehindGather, AppendsFillOneBatchThatIsHandedBackWhenFull) {
  ASSERT_EQ(gather(0), WriteBehind::kStarted);
  EXPECT_GT(ticket, 0);
  for (uint64_t off = 16; off < 48; off += 16)
    ASSERT_EQ(gather(off), WriteBehind::kAppended);
  EXPECT_FALSE(send.data);  // 48 of 64 bytes: still pending
  ASSERT_EQ(gather(48), WriteBehind::kAppended);
  ASSERT_TRUE(send.data);  // full
  EXPECT_EQ(send.off, 0u);
  EXPECT_EQ(send.data->size(), kMax);
  EXPECT_EQ(send.cred, kAlice);
  EXPECT_FALSE(wb.take_pending(send.ticket, &send));  // taken already
  wb.end(send.ticket, 0);
}

TEST_F(WriteBehindGather, AWriteThatDoesNotContinueTheBatchSendsItFirst) {
  ASSERT_EQ(gather(0), WriteBehind::kStarted);
  // A gap, another caller, a batch past MAX: each hands the pending batch back first.
  ASSERT_EQ(gather(32), WriteBehind::kSendFirst);
  ASSERT_TRUE(send.data);
  EXPECT_EQ(send.data->size(), 16u);
  wb.end(send.ticket, 0);
  send = Batch{};
  ASSERT_EQ(gather(32), WriteBehind::kStarted);
  ASSERT_EQ(gather(48, kBob), WriteBehind::kSendFirst);
  wb.end(send.ticket, 0);
  send = Batch{};
  // Without room for a new batch nothing is gathered.
  EXPECT_EQ(gather(48, kBob, 1 << 20, false), WriteBehind::kNotGathered);
  // An ordinary write that overlaps a pending batch hands it back instead of waiting.
  ASSERT_EQ(gather(48, kBob), WriteBehind::kStarted);
  EXPECT_EQ(wb.begin(50, 4, 1 << 20, &send), 0);
  ASSERT_TRUE(send.data);
  EXPECT_EQ(send.off, 48u);
  wb.end(send.ticket, 0);
}

TEST_F(WriteBehindGather, AnAppendOntoAWriteInFlightSendsTheBatchFirst) {
  // [64, 128) was answered and is in flight; a batch grows up to it, then onto it.
  const int64_t big = wb.begin(64, 64, 1 << 20, &send);
  ASSERT_GT(big, 0);
  ASSERT_EQ(gather(32), WriteBehind::kStarted);
  ASSERT_EQ(gather(48), WriteBehind::kAppended);  // [32, 64): beside it
  // [64, 80) overlaps the write in flight: two overlapping WRITEs on the wire could land in
  // either order, so the batch goes first and this write waits for the one in flight.
  ASSERT_EQ(gather(64), WriteBehind::kSendFirst);
  ASSERT_TRUE(send.data);
  EXPECT_EQ(send.off, 32u);
  EXPECT_EQ(send.data->size(), 32u);
  const int64_t batch = send.ticket;
  auto w = std::async(std::launch::async, [&] {
    Batch none;
    int64_t t = 0;
    int r = wb.gather(64, chunk.data(), chunk.size(), kAlice, kMax, 1 << 20, true, &none, &t);
    if (r == WriteBehind::kStarted) wb.take_pending(t, &none);
    return std::make_pair(r, t);
  });
  EXPECT_TRUE(still_waiting(w));
  wb.end(batch, 0);
  EXPECT_TRUE(still_waiting(w));  // the batch was not in its way
  wb.end(big, 0);
  ASSERT_EQ(w.wait_for(5s), std::future_status::ready);
  auto [r, t] = w.get();
  EXPECT_EQ(r, WriteBehind::kStarted);
  wb.end(t, 0);
}

TEST_F(WriteBehindGather, WaitsHandBackThePendingBatchTheyWouldWaitFor) {
  const uint64_t p0 = WriteBehind::now();
  ASSERT_EQ(gather(100), WriteBehind::kStarted);
  EXPECT_FALSE(wb.wait_before(p0, &send));  // begun after P0
  const uint64_t p1 = WriteBehind::now();
  EXPECT_TRUE(wb.raced(p1));  // pending counts as in flight: a fetch now would miss it
  EXPECT_FALSE(wb.wait_overlapping(0, 100, &send));  // a read beside it does not wait
  EXPECT_FALSE(send.data);
  ASSERT_TRUE(wb.wait_overlapping(110, 10, &send));  // a read of its bytes gets it to send
  ASSERT_TRUE(send.data);
  EXPECT_EQ(send.ticket, ticket);
  // Taken but not ended: now a wait before P1 waits for the send itself.
  auto w = std::async(std::launch::async, [&] {
    Batch none;
    return wb.wait_before(p1, &none);
  });
  EXPECT_TRUE(still_waiting(w));
  wb.end(send.ticket, 0);
  ASSERT_EQ(w.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(w.get());
  // wait_before hands back a batch begun before its point.
  send = Batch{};
  ASSERT_EQ(gather(200), WriteBehind::kStarted);
  EXPECT_TRUE(wb.wait_before(WriteBehind::now(), &send));
  EXPECT_EQ(send.ticket, ticket);
  EXPECT_FALSE(wb.take_pending(ticket, &send));
  wb.end(send.ticket, 0);
}

TEST_F(WriteBehindGather, AKeptErrorFailsGatheringAndTheBudgetHolds) {
  // Budget 32: the third append would pass it, so the batch is handed back.
  ASSERT_EQ(gather(0, kAlice, 32), WriteBehind::kStarted);
  ASSERT_EQ(gather(16, kAlice, 32), WriteBehind::kAppended);
  ASSERT_EQ(gather(32, kAlice, 32), WriteBehind::kSendFirst);
  wb.end(send.ticket, -ENOSPC);
  send = Batch{};
  EXPECT_EQ(gather(32, kAlice, 32), -ENOSPC);
  EXPECT_EQ(wb.take_error(7), -ENOSPC);
  EXPECT_EQ(gather(32, kAlice, 32), WriteBehind::kStarted);
  ASSERT_TRUE(wb.take_pending(ticket, &send));
  wb.end(send.ticket, 0);
}

TEST(WriteBehindLimit, BoundsWritesInFlightAndCountsThem) {
  WriteBehindLimit lim(2);
  lim.acquire();
  lim.acquire();
  auto third = std::async(std::launch::async, [&] { lim.acquire(); });
  EXPECT_TRUE(still_waiting(third));
  lim.release(true);
  ASSERT_EQ(third.wait_for(5s), std::future_status::ready);
  lim.release(false);
  lim.release(false);
  uint64_t writes, failed;
  unsigned peak;
  lim.counts(&writes, &peak, &failed);
  EXPECT_EQ(writes, 3u);
  EXPECT_EQ(peak, 2u);
  EXPECT_EQ(failed, 1u);
}

}  // namespace
}  // namespace nfsshim::fuse::nfsfs
