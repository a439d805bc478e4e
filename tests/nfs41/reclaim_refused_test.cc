// A reclaim the server refuses after a restart (libshim/src/nfs41: session.cc
// new_client_locked, io.cc reclaim_opens/reopen, lock.cc), against the scripted server of
// fake_server.h: ganesha never answers RECLAIM_BAD or RECLAIM_CONFLICT. A file is open
// (CLAIM_NULL create), written and write-locked; the server restarts and answers the
// OPEN CLAIM_PREVIOUS with the scripted status. For a refusal the engine must send
// exactly one CLAIM_PREVIOUS, then RECLAIM_COMPLETE, then OPEN CLAIM_FH, use the
// CLAIM_FH stateid for its I/O (the server refuses any other), count 0 reclaimed and 1
// re-opened, and report the lock lost (-EIO at the next lock op, then it works). The
// control: CLAIM_PREVIOUS answered OK reclaims the open and the lock, no CLAIM_FH. With
// two files and one refused, the other is still reclaimed. For io_uring and epoll.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fake_server.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs41/engine.h"

using nfs41test::FakeNfs41Server;
using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using namespace nfsshim::nfs4;

namespace {

using Logged = FakeNfs41Server::Logged;
constexpr uint64_t kOwner = 7;

const char* op_name(uint32_t op) {
  switch (op) {
    case OP_SEQUENCE: return "SEQUENCE";
    case OP_CREATE_SESSION: return "CREATE_SESSION";
    case OP_RECLAIM_COMPLETE: return "RECLAIM_COMPLETE";
    case OP_OPEN: return "OPEN";
    case OP_CLOSE: return "CLOSE";
    case OP_WRITE: return "WRITE";
    case OP_READ: return "READ";
    case OP_LOCK: return "LOCK";
    case OP_LOCKU: return "LOCKU";
    case OP_FREE_STATEID: return "FREE_STATEID";
    default: return "?";
  }
}

// The server's log, for a failure message.
std::string dump(const std::vector<Logged>& log) {
  std::ostringstream o;
  for (const Logged& l : log) {
    o << "  epoch " << l.epoch << " " << op_name(l.op) << " " << nfs4_status_name(l.status)
      << " fh " << l.fh;
    if (l.op == OP_OPEN) o << " claim " << l.claim;
    if (l.op == OP_LOCK) o << (l.reclaim ? " reclaim" : "") << (l.new_lock_owner ? " new" : "");
    o << " sent " << l.sent.seqid << " given " << l.given.seqid << "\n";
  }
  return o.str();
}

// Indices into LOG of what is after the restart (epoch 1) and matches PRED.
template <typename Pred>
std::vector<size_t> after_restart(const std::vector<Logged>& log, Pred pred) {
  std::vector<size_t> out;
  for (size_t i = 0; i < log.size(); ++i)
    if (log[i].epoch == 1 && pred(log[i])) out.push_back(i);
  return out;
}

class Nfs41ReclaimRefused : public ::testing::TestWithParam<IoBackend> {
 protected:
  Options options() const {
    Options o;
    o.addr = "127.0.0.1";
    o.port = srv_.port();
    o.export_path = "/export";
    o.io = GetParam();
    o.timeout_ms = 5000;
    return o;
  }

  // Open "f", write "before", write-lock [0, 10); restart the server answering
  // CLAIM_PREVIOUS with RECLAIM_STATUS; write "after!" at 6 (the recovery runs in it).
  void open_lock_restart(uint32_t reclaim_status) {
    std::string why;
    ASSERT_EQ(Engine::open(options(), &e_, &why), 0) << why;
    const Cred c = e_->default_cred();
    ASSERT_EQ(e_->open(c, e_->root(), "f", true, false, 0644, &f_, nullptr), 0);
    ASSERT_EQ(e_->write(c, f_, 0, 6, "before", FILE_SYNC4, nullptr), 6);
    ASSERT_EQ(e_->lock(c, f_, kOwner, Engine::LockType::kWrite, 0, 10, 0), 0);
    before_ = e_->stats();
    srv_.restart(reclaim_status);
    // Not ASSERTs: a failure here (the server refused the stateid) should not hide the
    // counts and the order of ops checked after it.
    EXPECT_EQ(e_->write(c, f_, 6, 6, "after!", FILE_SYNC4, nullptr), 6);
    const Stats s = e_->stats();
    EXPECT_EQ(s.clientid_recoveries - before_.clientid_recoveries, 1u);
    char buf[32] = {};
    EXPECT_EQ(e_->read(c, f_, 0, sizeof buf, buf), 12);
    EXPECT_EQ(std::string(buf, 12), "beforeafter!");
    EXPECT_EQ(srv_.data(FakeNfs41Server::file_fh("f")), "beforeafter!");
  }

  // Every WRITE and READ after the restart was answered OK and carried SID.
  void io_carried(const std::vector<Logged>& log, const Stateid4& sid) {
    auto io = after_restart(log, [](const Logged& l) { return l.op == OP_WRITE || l.op == OP_READ; });
    ASSERT_EQ(io.size(), 2u) << dump(log);  // the write that ran the recovery, the read
    for (size_t i : io) {
      EXPECT_EQ(log[i].status, NFS4_OK) << "op " << log[i].op << "\n" << dump(log);
      EXPECT_TRUE(log[i].sent == sid) << "op " << log[i].op << " with another stateid\n"
                                      << dump(log);
    }
    EXPECT_TRUE(f_->stateid() == sid);
  }

  void refused(uint32_t reclaim_status) {
    ASSERT_NO_FATAL_FAILURE(open_lock_restart(reclaim_status));
    const Cred c = e_->default_cred();
    const std::string fh = FakeNfs41Server::file_fh("f");
    const Stats s = e_->stats();
    EXPECT_EQ(s.reclaimed_opens - before_.reclaimed_opens, 0u);
    EXPECT_EQ(s.reopens - before_.reopens, 1u);
    EXPECT_EQ(s.reclaimed_locks - before_.reclaimed_locks, 0u);

    // One CLAIM_PREVIOUS (refused), RECLAIM_COMPLETE, one CLAIM_FH: in that order.
    std::vector<Logged> log = srv_.log();
    auto prev = after_restart(log, [&](const Logged& l) {
      return l.op == OP_OPEN && l.claim == CLAIM_PREVIOUS && l.fh == fh;
    });
    auto done = after_restart(log, [](const Logged& l) { return l.op == OP_RECLAIM_COMPLETE; });
    auto by_fh = after_restart(log, [&](const Logged& l) {
      return l.op == OP_OPEN && l.claim == CLAIM_FH && l.fh == fh;
    });
    auto opens = after_restart(log, [](const Logged& l) { return l.op == OP_OPEN; });
    ASSERT_EQ(prev.size(), 1u) << dump(log);
    ASSERT_EQ(done.size(), 1u) << dump(log);
    ASSERT_EQ(by_fh.size(), 1u) << dump(log);
    EXPECT_EQ(opens.size(), 2u) << dump(log);
    EXPECT_EQ(log[prev[0]].status, reclaim_status) << dump(log);
    EXPECT_EQ(log[by_fh[0]].status, NFS4_OK) << dump(log);
    EXPECT_LT(prev[0], done[0]) << dump(log);
    EXPECT_LT(done[0], by_fh[0]) << dump(log);
    EXPECT_TRUE(after_restart(log, [](const Logged& l) { return l.op == OP_LOCK; }).empty())
        << "a lock of a file whose open was refused was reclaimed\n" << dump(log);
    const Stateid4 sid = log[by_fh[0]].given;
    ASSERT_NO_FATAL_FAILURE(io_carried(log, sid));

    // The lock is lost: -EIO once, then a new lock from the CLAIM_FH open stateid.
    EXPECT_EQ(e_->lock(c, f_, kOwner, Engine::LockType::kWrite, 0, 10, 0), -EIO);
    EXPECT_EQ(e_->lock(c, f_, kOwner, Engine::LockType::kWrite, 0, 10, 0), 0);
    log = srv_.log();
    auto locks = after_restart(log, [](const Logged& l) { return l.op == OP_LOCK; });
    ASSERT_EQ(locks.size(), 1u) << dump(log);  // the -EIO one sent nothing
    EXPECT_EQ(log[locks[0]].status, NFS4_OK) << dump(log);
    EXPECT_TRUE(log[locks[0]].new_lock_owner && !log[locks[0]].reclaim);
    EXPECT_TRUE(log[locks[0]].sent == sid) << dump(log);
    EXPECT_EQ(e_->unlock(c, f_, kOwner, 0, 10), 0);

    EXPECT_EQ(e_->shutdown(), 0);
    log = srv_.log();
    auto closes = after_restart(log, [](const Logged& l) { return l.op == OP_CLOSE; });
    ASSERT_EQ(closes.size(), 1u) << dump(log);
    EXPECT_EQ(log[closes[0]].status, NFS4_OK) << dump(log);
  }

  FakeNfs41Server srv_;
  std::unique_ptr<Engine> e_;
  Open f_;
  Stats before_;
};

TEST_P(Nfs41ReclaimRefused, ReclaimBadReopensWithClaimFhAndLosesLock) {
  refused(NFS4ERR_RECLAIM_BAD);
}

TEST_P(Nfs41ReclaimRefused, ReclaimConflictReopensWithClaimFhAndLosesLock) {
  refused(NFS4ERR_RECLAIM_CONFLICT);
}

// The control: the server takes the reclaim. The open and the lock come back with
// CLAIM_PREVIOUS and LOCK reclaim before RECLAIM_COMPLETE; nothing is re-opened or lost.
TEST_P(Nfs41ReclaimRefused, ReclaimAcceptedIsNotReopened) {
  ASSERT_NO_FATAL_FAILURE(open_lock_restart(NFS4_OK));
  const Cred c = e_->default_cred();
  const Stats s = e_->stats();
  EXPECT_EQ(s.reclaimed_opens - before_.reclaimed_opens, 1u);
  EXPECT_EQ(s.reopens - before_.reopens, 0u);
  EXPECT_EQ(s.reclaimed_locks - before_.reclaimed_locks, 1u);

  std::vector<Logged> log = srv_.log();
  auto prev = after_restart(log, [](const Logged& l) {
    return l.op == OP_OPEN && l.claim == CLAIM_PREVIOUS;
  });
  auto done = after_restart(log, [](const Logged& l) { return l.op == OP_RECLAIM_COMPLETE; });
  auto relock = after_restart(log, [](const Logged& l) { return l.op == OP_LOCK; });
  ASSERT_EQ(prev.size(), 1u) << dump(log);
  ASSERT_EQ(done.size(), 1u) << dump(log);
  ASSERT_EQ(relock.size(), 1u) << dump(log);
  EXPECT_EQ(log[prev[0]].status, NFS4_OK) << dump(log);
  EXPECT_TRUE(log[relock[0]].reclaim && log[relock[0]].new_lock_owner) << dump(log);
  EXPECT_EQ(log[relock[0]].status, NFS4_OK) << dump(log);
  EXPECT_TRUE(log[relock[0]].sent == log[prev[0]].given) << dump(log);
  EXPECT_LT(prev[0], relock[0]) << dump(log);
  EXPECT_LT(relock[0], done[0]) << dump(log);
  EXPECT_TRUE(after_restart(log, [](const Logged& l) {
                return l.op == OP_OPEN && l.claim == CLAIM_FH;
              }).empty()) << dump(log);
  ASSERT_NO_FATAL_FAILURE(io_carried(log, log[prev[0]].given));

  // The lock was kept: the next lock op works on the reclaimed lock stateid.
  const Stateid4 lock_sid = log[relock[0]].given;
  EXPECT_EQ(e_->lock(c, f_, kOwner, Engine::LockType::kWrite, 0, 10, 0), 0);
  log = srv_.log();
  auto locks = after_restart(log, [](const Logged& l) { return l.op == OP_LOCK; });
  ASSERT_EQ(locks.size(), 2u) << dump(log);
  EXPECT_FALSE(log[locks[1]].new_lock_owner) << dump(log);
  EXPECT_TRUE(log[locks[1]].sent == lock_sid) << dump(log);
  EXPECT_EQ(log[locks[1]].status, NFS4_OK) << dump(log);
  EXPECT_EQ(e_->shutdown(), 0);
}

// Two files, the reclaim of one refused: RECLAIM_BAD is about that file (unlike NO_GRACE,
// which ends all reclaims), so the other is still reclaimed; only the refused one is
// re-opened, after RECLAIM_COMPLETE, and each file's I/O carries its own new stateid.
TEST_P(Nfs41ReclaimRefused, OneRefusedTheOtherReclaimed) {
  std::string why;
  ASSERT_EQ(Engine::open(options(), &e_, &why), 0) << why;
  const Cred c = e_->default_cred();
  Open a, b;
  ASSERT_EQ(e_->open(c, e_->root(), "a", true, false, 0644, &a, nullptr), 0);
  ASSERT_EQ(e_->open(c, e_->root(), "b", true, false, 0644, &b, nullptr), 0);
  const std::string fa = FakeNfs41Server::file_fh("a"), fb = FakeNfs41Server::file_fh("b");
  before_ = e_->stats();
  srv_.restart(NFS4_OK, {{fa, NFS4ERR_RECLAIM_BAD}});
  EXPECT_EQ(e_->write(c, a, 0, 1, "A", FILE_SYNC4, nullptr), 1);
  EXPECT_EQ(e_->write(c, b, 0, 1, "B", FILE_SYNC4, nullptr), 1);
  const Stats s = e_->stats();
  EXPECT_EQ(s.reclaimed_opens - before_.reclaimed_opens, 1u);
  EXPECT_EQ(s.reopens - before_.reopens, 1u);

  const std::vector<Logged> log = srv_.log();
  auto open_of = [&](const std::string& fh, uint32_t claim) {
    return after_restart(log, [&](const Logged& l) {
      return l.op == OP_OPEN && l.fh == fh && l.claim == claim;
    });
  };
  auto done = after_restart(log, [](const Logged& l) { return l.op == OP_RECLAIM_COMPLETE; });
  auto prev_a = open_of(fa, CLAIM_PREVIOUS), prev_b = open_of(fb, CLAIM_PREVIOUS);
  auto fh_a = open_of(fa, CLAIM_FH), fh_b = open_of(fb, CLAIM_FH);
  ASSERT_EQ(done.size(), 1u) << dump(log);
  ASSERT_EQ(prev_a.size(), 1u) << dump(log);
  ASSERT_EQ(prev_b.size(), 1u) << dump(log);
  ASSERT_EQ(fh_a.size(), 1u) << dump(log);
  EXPECT_TRUE(fh_b.empty()) << dump(log);
  EXPECT_EQ(log[prev_a[0]].status, NFS4ERR_RECLAIM_BAD);
  EXPECT_EQ(log[prev_b[0]].status, NFS4_OK);
  EXPECT_LT(prev_b[0], done[0]) << dump(log);
  EXPECT_LT(done[0], fh_a[0]) << dump(log);
  EXPECT_TRUE(a->stateid() == log[fh_a[0]].given);
  EXPECT_TRUE(b->stateid() == log[prev_b[0]].given);
  for (size_t i : after_restart(log, [](const Logged& l) { return l.op == OP_WRITE; })) {
    EXPECT_EQ(log[i].status, NFS4_OK) << dump(log);
    EXPECT_TRUE(log[i].sent == (log[i].fh == fa ? a : b)->stateid()) << dump(log);
  }
  EXPECT_EQ(srv_.data(fa), "A");
  EXPECT_EQ(srv_.data(fb), "B");
  EXPECT_EQ(e_->shutdown(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41ReclaimRefused,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
