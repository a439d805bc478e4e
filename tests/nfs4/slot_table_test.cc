#include <gtest/gtest.h>

#include <cerrno>

#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/slot_table.h"

using namespace nfsshim::nfs4;

namespace {
SequenceRes ok_for(const SlotTable::Ticket& t, uint32_t highest, uint32_t target, uint32_t flags = 0) {
  SequenceRes r;
  r.slotid = t.slotid;
  r.sequenceid = t.seqid;
  r.highest_slotid = highest;
  r.target_highest_slotid = target;
  r.status_flags = flags;
  return r;
}
}  // namespace

TEST(SlotTable, HandsOutLowestSlotsStartingAtSeqidOne) {
  SlotTable st(3);
  SlotTable::Ticket a, b, c, d;
  ASSERT_EQ(st.acquire(&a), 0);
  ASSERT_EQ(st.acquire(&b), 0);
  ASSERT_EQ(st.acquire(&c), 0);
  EXPECT_EQ(st.acquire(&d), -EAGAIN);
  EXPECT_EQ(a.slotid, 0u);
  EXPECT_EQ(b.slotid, 1u);
  EXPECT_EQ(c.slotid, 2u);
  EXPECT_EQ(a.seqid, 1u);
  EXPECT_EQ(c.seqid, 1u);
  EXPECT_EQ(a.highest_slotid, 0u);
  EXPECT_EQ(c.highest_slotid, 2u);
  EXPECT_EQ(st.in_use(), 3u);
  EXPECT_EQ(st.peak_in_use(), 3u);
  ASSERT_EQ(st.on_sequence_ok(b.slotid, ok_for(b, 2, 2)), 0);
  ASSERT_EQ(st.acquire(&d), 0);
  EXPECT_EQ(d.slotid, 1u);
  EXPECT_EQ(d.seqid, 2u);  // the slot's next request
}

TEST(SlotTable, SequenceErrorDoesNotConsumeTheSeqid) {
  SlotTable st(1);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_TRUE(st.on_sequence_error(t.slotid, NFS4ERR_DELAY));
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 1u);
  EXPECT_FALSE(st.on_sequence_error(t.slotid, NFS4ERR_SEQ_MISORDERED));  // not after abandon
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 1u);
}

TEST(SlotTable, RetryUncachedReplyConsumesTheSeqid) {
  SlotTable st(2);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(t.seqid, 1u);
  // The server ran seqid 1 but kept no reply: the next request must use 2, not 1 again
  // (1 would be taken as a replay).
  EXPECT_TRUE(st.on_sequence_error(t.slotid, NFS4ERR_RETRY_UNCACHED_REP));
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 2u);
}

// SEQ_FALSE_RETRY (RFC 8881 2.10.6.1.3): the server holds a reply for this seqid, of
// another request. Sending the seqid again can only get FALSE_RETRY again (it did, for
// good, on the slot every request lands on first): the next request uses the next one.
TEST(SlotTable, FalseRetryConsumesTheSeqid) {
  SlotTable st(1);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 0, 0)), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(t.seqid, 2u);
  EXPECT_TRUE(st.on_sequence_error(t.slotid, NFS4ERR_SEQ_FALSE_RETRY));
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 3u);
}

// A replay given up while the server still runs the original (it answers the replay
// DELAY): the seqid is the server's. session.cc stepped it back (on_sequence_error(DELAY)),
// so the slot's next request reused it and, once the original finished, got its reply.
TEST(SlotTable, AGivenUpReplayKeepsItsSeqidUsed) {
  SlotTable st(1);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(st.on_connection_lost(t.slotid), 0);
  ASSERT_EQ(st.replay(t.slotid, &t), 0);
  ASSERT_EQ(t.seqid, 1u);
  ASSERT_EQ(st.give_up_replay(t.slotid), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 2u);
  // Not in doubt: a SEQ_MISORDERED now (the original still runs) does not step back
  // twice, and is worth a retry with the same next seqid, not an EIO.
  EXPECT_TRUE(st.on_sequence_error(t.slotid, NFS4ERR_SEQ_MISORDERED));
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 2u);
  // Once the original is done, the slot is an ordinary one again.
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 0, 0)), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 3u);
  EXPECT_FALSE(st.on_sequence_error(t.slotid, NFS4ERR_SEQ_MISORDERED));
}

// A given-up slot is handed out only when no other is free: every new request landed on
// it (the lowest) and met SEQ_MISORDERED while the server still ran the original.
TEST(SlotTable, AGivenUpSlotIsTheLastPick) {
  SlotTable st(2);
  SlotTable::Ticket t, u;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(t.slotid, 0u);
  ASSERT_EQ(st.on_connection_lost(t.slotid), 0);
  ASSERT_EQ(st.replay(t.slotid, &t), 0);
  ASSERT_EQ(st.give_up_replay(t.slotid), 0);
  ASSERT_EQ(st.acquire(&u), 0);
  EXPECT_EQ(u.slotid, 1u) << "the given-up slot was picked while another was free";
  ASSERT_EQ(st.acquire(&t), 0);  // none other free: the given-up one
  EXPECT_EQ(t.slotid, 0u);
  EXPECT_EQ(t.seqid, 2u);
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 1, 1)), 0);
  ASSERT_EQ(st.on_sequence_ok(u.slotid, ok_for(u, 1, 1)), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.slotid, 0u) << "a slot that succeeded again is an ordinary one";
}

TEST(SlotTable, ConnectionLossReplaysWithTheSameSeqid) {
  SlotTable st(4);
  SlotTable::Ticket t, r, other;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 3, 3)), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(t.seqid, 2u);
  ASSERT_EQ(st.on_connection_lost(t.slotid), 0);
  EXPECT_EQ(st.lost_slots(), std::vector<uint32_t>{t.slotid});
  ASSERT_EQ(st.acquire(&other), 0);  // the lost slot is not handed out again
  EXPECT_NE(other.slotid, t.slotid);
  ASSERT_EQ(st.replay(t.slotid, &r), 0);
  EXPECT_EQ(r.slotid, t.slotid);
  EXPECT_EQ(r.seqid, 2u);
  EXPECT_EQ(r.highest_slotid, 1u);
  EXPECT_TRUE(st.lost_slots().empty());
  EXPECT_EQ(st.replay(t.slotid, &r), -EINVAL);  // not lost any more
  ASSERT_EQ(st.on_sequence_ok(r.slotid, ok_for(r, 3, 3)), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.slotid, 0u);
  EXPECT_EQ(t.seqid, 3u);
}

TEST(SlotTable, AbandonedRequestIsResolvedByMisordered) {
  SlotTable st(1);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);  // seqid 1, never reaches the server
  ASSERT_EQ(st.abandon(t.slotid), 0);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 2u);  // assumes the server ran it
  // ... it had not: the server expects 1 and answers SEQ_MISORDERED.
  EXPECT_TRUE(st.on_sequence_error(t.slotid, NFS4ERR_SEQ_MISORDERED));
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 1u);
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 0, 0)), 0);
}

TEST(SlotTable, TargetHighestSlotShrinksAndGrowsTheTable) {
  SlotTable st(8);
  SlotTable::Ticket t;
  ASSERT_EQ(st.acquire(&t), 0);
  ASSERT_EQ(st.on_sequence_ok(t.slotid, ok_for(t, 7, 1)), 0);  // wants only slots 0..1
  EXPECT_EQ(st.usable(), 2u);
  SlotTable::Ticket a, b, c;
  ASSERT_EQ(st.acquire(&a), 0);
  ASSERT_EQ(st.acquire(&b), 0);
  EXPECT_EQ(st.acquire(&c), -EAGAIN);
  ASSERT_EQ(st.on_sequence_ok(a.slotid, ok_for(a, 15, 15)), 0);  // now offers 16
  EXPECT_EQ(st.size(), 16u);
  EXPECT_EQ(st.usable(), 16u);
  ASSERT_EQ(st.acquire(&c), 0);
  EXPECT_EQ(c.slotid, 0u);
  for (int i = 0; i < 14; ++i) ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.slotid, 15u);
  EXPECT_EQ(t.seqid, 1u);  // a new slot starts at 1
  EXPECT_EQ(st.acquire(&t), -EAGAIN);
}

TEST(SlotTable, BadSlotShrinksBelowIt) {
  SlotTable st(4);
  SlotTable::Ticket a, b, c;
  st.acquire(&a);
  st.acquire(&b);
  st.acquire(&c);
  EXPECT_TRUE(st.on_sequence_error(c.slotid, NFS4ERR_BADSLOT));
  EXPECT_EQ(st.usable(), 2u);
  EXPECT_EQ(st.server_highest_slotid(), 1u);
}

TEST(SlotTable, MismatchedReplyIsAProtocolError) {
  SlotTable st(2);
  SlotTable::Ticket t;
  st.acquire(&t);
  SequenceRes r = ok_for(t, 1, 1);
  r.sequenceid = 7;
  EXPECT_EQ(st.on_sequence_ok(t.slotid, r), -EPROTO);
  EXPECT_EQ(st.in_use(), 0u);
  EXPECT_EQ(st.on_sequence_ok(t.slotid, r), -EINVAL);  // no longer in flight
  EXPECT_EQ(st.on_sequence_ok(99, r), -EINVAL);
}

TEST(SlotTable, StatusFlagsAccumulateUntilTaken) {
  SlotTable st(2);
  SlotTable::Ticket a, b;
  st.acquire(&a);
  st.acquire(&b);
  st.on_sequence_ok(a.slotid, ok_for(a, 1, 1, SEQ4_STATUS_CB_PATH_DOWN));
  st.on_sequence_ok(b.slotid, ok_for(b, 1, 1, SEQ4_STATUS_RESTART_RECLAIM_NEEDED));
  uint32_t f = st.take_status_flags();
  EXPECT_TRUE(seq4_backchannel_down(f));
  EXPECT_TRUE(seq4_reclaim_needed(f));
  EXPECT_FALSE(seq4_state_revoked(f));
  EXPECT_FALSE(seq4_lease_moved(f));
  EXPECT_EQ(st.take_status_flags(), 0u);
  EXPECT_TRUE(seq4_state_revoked(SEQ4_STATUS_ADMIN_STATE_REVOKED));
}

TEST(SlotTable, ResetStartsOver) {
  SlotTable st(2);
  SlotTable::Ticket t;
  st.acquire(&t);
  st.on_sequence_ok(t.slotid, ok_for(t, 1, 1));
  st.acquire(&t);
  st.reset(180);
  EXPECT_EQ(st.size(), 180u);
  EXPECT_EQ(st.in_use(), 0u);
  ASSERT_EQ(st.acquire(&t), 0);
  EXPECT_EQ(t.seqid, 1u);
  SlotTable clamp(5000);
  EXPECT_EQ(clamp.size(), SlotTable::kMaxSlots);
}
