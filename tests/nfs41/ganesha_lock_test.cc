// Byte-range locks of the NFSv4.1 engine (lock.cc) against a real nfs-ganesha (started by
// ganesha_test.sh). Two Opens of one file with different lock owners stand for two
// processes; what one holds the other must see as a conflict, named by LOCKT. For the
// io_uring and the epoll loop.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "ganesha_env.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using nfs41test::env;
using nfs41test::ganesha_options;
using LT = Engine::LockType;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kA = 0x1111, kB = 0x2222;  // two callers' lock owners (FUSE lock_owner)

class Nfs41Lock : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(env("NFS41_TEST_PORT").empty()) << "run through ganesha_test.sh";
    std::string why;
    ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &e_, &why), 0) << why;
    c_ = e_->default_cred();
    name_ = "lk" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& ch : name_)
      if (ch == '/') ch = '_';
    ASSERT_EQ(e_->open(c_, e_->root(), name_, true, false, 0644, &fa_, nullptr), 0);
    ASSERT_EQ(e_->open(c_, e_->root(), name_, false, false, 0644, &fb_, nullptr), 0);
  }
  void TearDown() override {
    if (!e_) return;
    if (fa_) {
      EXPECT_EQ(e_->release_locks(c_, fa_), 0);
      EXPECT_EQ(e_->close(c_, fa_), 0);
    }
    if (fb_) {
      EXPECT_EQ(e_->release_locks(c_, fb_), 0);
      EXPECT_EQ(e_->close(c_, fb_), 0);
    }
    EXPECT_EQ(e_->remove(c_, e_->root(), name_), 0);
    EXPECT_EQ(e_->shutdown(), 0);
  }
  std::unique_ptr<Engine> e_;
  Cred c_;
  std::string name_;
  Open fa_, fb_;
};

TEST_P(Nfs41Lock, ConflictIsDeniedAndLocktNamesTheHolder) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 100, 50, 0), 0);
  Engine::LockConflict cf;
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 120, 10, 0, &cf), -EAGAIN);
  EXPECT_EQ(cf.off, 100u);
  EXPECT_EQ(cf.len, 50u);
  EXPECT_TRUE(cf.ours);
  EXPECT_EQ(cf.owner, kA);
  EXPECT_EQ(cf.type, LT::kWrite);
  cf = {};
  EXPECT_EQ(e_->test_lock(c_, fb_, kB, LT::kRead, 0, 0, &cf), -EAGAIN);  // whole file
  EXPECT_EQ(cf.off, 100u);
  EXPECT_EQ(cf.len, 50u);
  EXPECT_TRUE(cf.ours);
  EXPECT_EQ(cf.owner, kA);
  // The holder itself sees no conflict (LOCKT with its own owner), nor does a range
  // outside the lock.
  EXPECT_EQ(e_->test_lock(c_, fa_, kA, LT::kWrite, 0, 0, &cf), 0);
  EXPECT_EQ(e_->test_lock(c_, fb_, kB, LT::kWrite, 150, 10, &cf), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 150, 10, 0), 0);  // adjacent after
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 90, 10, 0), 0);   // adjacent before
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 99, 2, 0, &cf), -EAGAIN);  // overlaps by 1
  EXPECT_EQ(cf.owner, kA);
}

TEST_P(Nfs41Lock, UnlockReleases) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 0, 0), 0);  // to the end of the file
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 1u << 30, 1, 0), -EAGAIN);
  // A partial unlock leaves the rest held.
  ASSERT_EQ(e_->unlock(c_, fa_, kA, 0, 4096), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 4096, 0), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 4096, 1, 0), -EAGAIN);
  ASSERT_EQ(e_->unlock(c_, fa_, kA, 0, 0), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 4096, 1, 0), 0);
  EXPECT_EQ(e_->unlock(c_, fb_, kB, 0, 0), 0);
  EXPECT_EQ(e_->unlock(c_, fb_, 0x3333, 0, 0), 0);  // an owner that holds nothing
  Engine::LockConflict cf;
  EXPECT_EQ(e_->test_lock(c_, fa_, kA, LT::kWrite, 0, 0, &cf), 0);
}

TEST_P(Nfs41Lock, ReadLocksShareWriteLocksDoNot) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kRead, 0, 1000, 0), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kRead, 500, 1000, 0), 0);  // overlapping reads
  Engine::LockConflict cf;
  EXPECT_EQ(e_->test_lock(c_, fb_, kB, LT::kRead, 0, 0, &cf), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 10, 0, &cf), -EAGAIN);
  EXPECT_EQ(cf.type, LT::kRead);
  EXPECT_EQ(cf.owner, kA);
  // One owner upgrades its own read lock where nobody else reads.
  EXPECT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 400, 0), 0);
  EXPECT_EQ(e_->test_lock(c_, fb_, kB, LT::kRead, 0, 400, &cf), -EAGAIN);
  EXPECT_EQ(cf.type, LT::kWrite);
  // The same owner through the other Open: no conflict with itself (POSIX).
  EXPECT_EQ(e_->lock(c_, fb_, kA, LT::kWrite, 0, 100, 0), 0);
}

TEST_P(Nfs41Lock, BlockingLockWaitsForTheUnlock) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 10, 0), 0);
  // A bounded wait gives up with EAGAIN after about its time.
  auto t0 = Clock::now();
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 10, 300), -EAGAIN);
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 3.0);
  uint64_t polls_before = e_->lock_waits();
  std::thread unlocker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    EXPECT_EQ(e_->unlock(c_, fa_, kA, 0, 10), 0);
  });
  t0 = Clock::now();
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 10, -1), 0);  // until granted
  waited = std::chrono::duration<double>(Clock::now() - t0).count();
  unlocker.join();
  uint64_t polls = e_->lock_waits() - polls_before;
  std::printf("blocking lock granted after %.2f s, %llu polls\n", waited,
              (unsigned long long)polls);
  EXPECT_GE(waited, 0.6);
  EXPECT_LT(waited, 3.0);
  EXPECT_GE(polls, 2u);
  EXPECT_LE(polls, 15u);  // backoff, not a busy loop
  // Cancelled while waiting: EINTR.
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.store(true);
  });
  EXPECT_EQ(e_->lock(c_, fa_, kA, LT::kRead, 0, 10, -1, nullptr, &cancel), -EINTR);
  canceller.join();
}

TEST_P(Nfs41Lock, LockSurvivesADroppedConnection) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 100, 0), 0);
  e_->drop_connection_for_test(0);
  e_->drop_connection_for_test(1);
  Engine::LockConflict cf;
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 50, 1, 0, &cf), -EAGAIN);
  EXPECT_EQ(cf.owner, kA);
  EXPECT_EQ(e_->unlock(c_, fa_, kA, 0, 100), 0);  // the lock stateid still works
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 50, 1, 0), 0);
  Stats s = e_->stats();
  EXPECT_GE(s.reconnects, 1u);
  EXPECT_EQ(s.clientid_recoveries, 0u);
}

TEST_P(Nfs41Lock, ReleaseLocksThenClose) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 100, 0), 0);
  ASSERT_EQ(e_->release_locks(c_, fa_), 0);
  // Released: the other owner gets the range, and CLOSE goes through.
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 100, 0), 0);
  EXPECT_EQ(e_->close(c_, fa_), 0);
  fa_.reset();
  EXPECT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 1, 0), -EBADF);
}

// One owner locks through A, unlocks (close(2) of a descriptor drops a process's locks),
// then locks again through B; A's CLOSE comes only now (a forked child or a mapping kept
// it open, or its RELEASE was late). The lock held through B must stay on the server.
TEST_P(Nfs41Lock, LockThroughBSurvivesTheLateCloseOfA) {
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 10, 0), 0);
  ASSERT_EQ(e_->unlock(c_, fa_, kA, 0, 0), 0);
  ASSERT_EQ(e_->lock(c_, fb_, kA, LT::kWrite, 0, 10, 0), 0);
  ASSERT_EQ(e_->close(c_, fa_), 0);
  fa_.reset();
  Engine::LockConflict cf;
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 5, 1, 0, &cf), -EAGAIN)
      << "the lock held through B went with A's CLOSE";
  EXPECT_EQ(cf.owner, kA);
  EXPECT_EQ(e_->test_lock(c_, fb_, kA, LT::kWrite, 0, 10, &cf), 0);  // its own: no conflict
  EXPECT_EQ(e_->unlock(c_, fb_, kA, 0, 0), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 5, 1, 0), 0);
}

// shutdown() with a lock still held: released (LOCKU, FREE_STATEID) before CLOSE, so the
// teardown succeeds and another client gets the range.
TEST_P(Nfs41Lock, ShutdownReleasesLocksLeft) {
  Options o;
  o.addr = env("NFS41_TEST_ADDR");
  o.port = std::stoi(env("NFS41_TEST_PORT"));
  o.export_path = "/export";
  o.io = GetParam();
  std::unique_ptr<Engine> e2;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e2, &why), 0) << why;
  Open f2;
  ASSERT_EQ(e2->open(c_, e2->root(), name_, false, false, 0, &f2, nullptr), 0);
  ASSERT_EQ(e2->lock(c_, f2, kA, LT::kWrite, 0, 0, 0), 0);
  Engine::LockConflict cf;
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 10, 1, 0, &cf), -EAGAIN);
  EXPECT_FALSE(cf.ours);  // another client's lock-owner
  EXPECT_FALSE(cf.raw_owner.empty());
  EXPECT_EQ(e2->shutdown(), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 10, 1, 0), 0);
}

// ganesha restarted, graceless: new client id; the reclaims (OPEN CLAIM_PREVIOUS) are
// refused with NFS4ERR_NO_GRACE, so the files are re-opened with CLAIM_FH and the locks
// are lost. The next lock op on the file says so (EIO) instead of using the dead lock
// stateid; then it starts afresh. (With a grace period they are reclaimed: reclaim_test.cc.)
TEST_P(Nfs41Lock, LocksLostWithTheClientIdGiveEio) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty());
  ASSERT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 100, 0), 0);
  ASSERT_EQ(std::system(restart.c_str()), 0);
  nfsshim::nfs::Attr a;
  ASSERT_EQ(e_->getattr(c_, fa_->fh, &a), 0);  // recovery: new client id, re-opens
  Stats s = e_->stats();
  EXPECT_GE(s.clientid_recoveries, 1u);
  EXPECT_EQ(s.reclaimed_opens, 0u);  // NO_GRACE: the fallback, not a reclaim
  EXPECT_EQ(s.reclaimed_locks, 0u);
  EXPECT_GE(s.reopens, 2u);          // fa_ and fb_ with CLAIM_FH
  EXPECT_EQ(e_->unlock(c_, fa_, kA, 0, 100), -EIO);
  EXPECT_EQ(e_->lock(c_, fa_, kA, LT::kWrite, 0, 100, 0), 0);
  EXPECT_EQ(e_->lock(c_, fb_, kB, LT::kWrite, 0, 100, 0), -EAGAIN);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Lock,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
