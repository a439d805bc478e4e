// Reclaim after a server restart (RFC 8881 8.4.2) against a real nfs-ganesha WITH a grace
// period (CTest sets GANESHA_GRACE for ganesha_test.sh -> tests/nfs4/ganesha_up.sh): engine
// A holds a write lock and a read lock to the end of the file; ganesha is killed (-9) and
// started again; A's recovery reclaims its open (CLAIM_PREVIOUS) and both locks (LOCK
// reclaim) before RECLAIM_COMPLETE. Then a second client B, started after the restart, is
// refused both ranges and LOCKT names A's; A writes through the reclaimed open, unlocks
// (0, not EIO), and B gets the range. Without reclaim A's locks would be gone and B's
// LOCK granted (the graceless nfs41_ganesha_locks test shows that fallback: EIO once).
// Then the same through two restarts in a row. For io_uring and epoll.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "ganesha_env.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using nfs41test::env;
using nfs41test::ganesha_options;
using LT = Engine::LockType;

namespace {


class Nfs41Reclaim : public ::testing::TestWithParam<IoBackend> {};

TEST_P(Nfs41Reclaim, LocksAndOpenSurviveAServerRestart) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty()) << "run through ganesha_test.sh";
  ASSERT_FALSE(env("GANESHA_GRACE").empty()) << "needs GANESHA_GRACE (the CTest entry sets it)";
  constexpr uint64_t kW = 1, kR = 2, kB = 7;  // A's two lock owners, B's

  std::unique_ptr<Engine> a;
  std::string why;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &a, &why), 0) << why;
  const Cred c = a->default_cred();
  const std::string name = "reclaim" + std::to_string(getpid()) +
                           (GetParam() == IoBackend::kUring ? "u" : "e");
  Open fa;
  ASSERT_EQ(a->open(c, a->root(), name, true, false, 0644, &fa, nullptr), 0);
  ASSERT_EQ(a->write(c, fa, 0, 6, "before", 2, nullptr), 6);
  ASSERT_EQ(a->lock(c, fa, kW, LT::kWrite, 100, 50, 0), 0);
  ASSERT_EQ(a->lock(c, fa, kR, LT::kRead, 1000, 0, 0), 0);  // to the end of the file
  // Unlocked again before the restart: not reclaimed, so B may take it afterwards.
  ASSERT_EQ(a->lock(c, fa, kW, LT::kWrite, 300, 10, 0), 0);
  ASSERT_EQ(a->unlock(c, fa, kW, 300, 10), 0);

  const uint64_t graces_before = a->grace_waits();
  ASSERT_EQ(std::system(restart.c_str()), 0);
  nfsshim::nfs::Attr at;
  ASSERT_EQ(a->getattr(c, fa->fh, &at), 0);  // recovery: new client id, reclaims
  Stats s = a->stats();
  std::printf("after the restart: clientid recoveries %llu, reclaimed opens %llu, locks %llu, "
              "CLAIM_FH re-opens %llu, GRACE answers %llu\n",
              (unsigned long long)s.clientid_recoveries, (unsigned long long)s.reclaimed_opens,
              (unsigned long long)s.reclaimed_locks, (unsigned long long)s.reopens,
              (unsigned long long)(a->grace_waits() - graces_before));
  EXPECT_GE(s.clientid_recoveries, 1u);
  EXPECT_EQ(s.reclaimed_opens, 1u);
  EXPECT_EQ(s.reclaimed_locks, 2u);  // [100, 150) write and [1000, end) read
  EXPECT_EQ(s.reopens, 0u) << "the open was re-opened without reclaim";
  EXPECT_EQ(a->grace_waits(), graces_before) << "reclaims wait for no grace period";

  // B: its own client id, made after the restart.
  std::unique_ptr<Engine> b;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &b, &why), 0) << why;
  Open fb;
  ASSERT_EQ(b->open(c, b->root(), name, false, false, 0, &fb, nullptr), 0);
  Engine::LockConflict cf;
  EXPECT_EQ(b->lock(c, fb, kB, LT::kWrite, 120, 10, 0, &cf), -EAGAIN) << "A's lock is gone";
  EXPECT_EQ(cf.off, 100u);
  EXPECT_EQ(cf.len, 50u);
  EXPECT_EQ(cf.type, LT::kWrite);
  EXPECT_FALSE(cf.ours);
  Engine::LockConflict ct;
  EXPECT_EQ(b->test_lock(c, fb, kB, LT::kRead, 140, 100, &ct), -EAGAIN);
  EXPECT_EQ(ct.off, 100u);
  EXPECT_EQ(ct.len, 50u);
  EXPECT_EQ(ct.type, LT::kWrite);
  // The read lock to the end survived too: shared, not exclusive.
  EXPECT_EQ(b->lock(c, fb, kB, LT::kWrite, 5000, 10, 0, &cf), -EAGAIN);
  EXPECT_EQ(cf.off, 1000u);
  EXPECT_EQ(cf.len, 0u);
  EXPECT_EQ(cf.type, LT::kRead);
  EXPECT_EQ(b->lock(c, fb, kB, LT::kRead, 5000, 10, 0), 0);
  EXPECT_EQ(b->unlock(c, fb, kB, 5000, 10), 0);
  EXPECT_EQ(b->lock(c, fb, kB, LT::kWrite, 300, 10, 0), 0);  // unlocked before: not reclaimed
  EXPECT_EQ(b->unlock(c, fb, kB, 300, 10), 0);

  // A writes through the reclaimed open and reads it back.
  EXPECT_EQ(a->write(c, fa, 0, 6, "after!", 2, nullptr), 6);
  char got[7] = {};
  EXPECT_EQ(a->read(c, fa, 0, 6, got), 6);
  EXPECT_EQ(std::string(got), "after!");

  // A unlocks with the reclaimed lock stateid; then B gets the range and A is refused.
  EXPECT_EQ(a->unlock(c, fa, kW, 100, 50), 0);
  EXPECT_EQ(b->lock(c, fb, kB, LT::kWrite, 120, 10, 0), 0);
  EXPECT_EQ(a->lock(c, fa, kW, LT::kWrite, 100, 50, 0), -EAGAIN);
  EXPECT_EQ(a->unlock(c, fa, kR, 1000, 0), 0);
  EXPECT_EQ(b->lock(c, fb, kB, LT::kWrite, 5000, 10, 0), 0);

  EXPECT_EQ(b->close(c, fb), 0);  // releases B's locks
  EXPECT_EQ(b->shutdown(), 0);
  EXPECT_EQ(a->close(c, fa), 0);
  EXPECT_EQ(a->remove(c, a->root(), name), 0);
  EXPECT_EQ(a->shutdown(), 0);
}

// One owner, two opens of one file (two descriptors): locked through the first and unlocked
// before a restart, the lock entry survives with no state; locked through the second after
// it, the new lock-owner is made from the second open. LOCKT must then name that
// lock-owner (the owner's own lock is no conflict), and closing the second open frees its
// lock state (a CLOSE with lock state left is refused, NFS4ERR_LOCKS_HELD).
TEST_P(Nfs41Reclaim, ALockMadeThroughAnotherOpenAfterARestartIsTheOwners) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty()) << "run through ganesha_test.sh";
  constexpr uint64_t kP = 3;
  std::unique_ptr<Engine> a;
  std::string why;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 1), &a, &why), 0) << why;
  const Cred c = a->default_cred();
  const std::string name = "twoopens" + std::to_string(getpid()) +
                           (GetParam() == IoBackend::kUring ? "u" : "e");
  Open f1, f2;
  ASSERT_EQ(a->open(c, a->root(), name, true, false, 0644, &f1, nullptr), 0);
  ASSERT_EQ(a->open(c, a->root(), name, false, false, 0, &f2, nullptr), 0);
  ASSERT_EQ(a->lock(c, f1, kP, LT::kWrite, 0, 10, 0), 0);
  ASSERT_EQ(a->unlock(c, f1, kP, 0, 10), 0);
  ASSERT_EQ(std::system(restart.c_str()), 0);
  nfsshim::nfs::Attr at;
  ASSERT_EQ(a->getattr(c, f1->fh, &at), 0);  // recovery
  ASSERT_EQ(a->lock(c, f2, kP, LT::kWrite, 0, 10, 0), 0);
  Engine::LockConflict ct;
  EXPECT_EQ(a->test_lock(c, f2, kP, LT::kWrite, 0, 10, &ct), 0)
      << "LOCKT reported the owner's own lock as a conflict (ours=" << ct.ours << ")";
  EXPECT_EQ(a->test_lock(c, f1, kP, LT::kWrite, 0, 10, &ct), 0)
      << "through the other open too";
  EXPECT_EQ(a->close(c, f2), 0) << "CLOSE of the open the lock state was made from";
  EXPECT_EQ(a->close(c, f1), 0);
  EXPECT_EQ(a->remove(c, a->root(), name), 0);
  EXPECT_EQ(a->shutdown(), 0);
}

// Two restarts in a row: the state reclaimed after the first is reclaimed again after the
// second (the client id it now belongs to is the one the server knew).
TEST_P(Nfs41Reclaim, LockSurvivesTwoRestarts) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty()) << "run through ganesha_test.sh";
  std::unique_ptr<Engine> a;
  std::string why;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &a, &why), 0) << why;
  const Cred c = a->default_cred();
  const std::string name = "reclaim2-" + std::to_string(getpid()) +
                           (GetParam() == IoBackend::kUring ? "u" : "e");
  Open fa;
  ASSERT_EQ(a->open(c, a->root(), name, true, false, 0644, &fa, nullptr), 0);
  ASSERT_EQ(a->lock(c, fa, 1, LT::kWrite, 0, 0, 0), 0);  // the whole file, as Kafka's .lock
  nfsshim::nfs::Attr at;
  for (int round = 1; round <= 2; ++round) {
    ASSERT_EQ(std::system(restart.c_str()), 0);
    ASSERT_EQ(a->getattr(c, fa->fh, &at), 0);
    Stats s = a->stats();
    EXPECT_EQ(s.reclaimed_locks, uint64_t(round)) << "restart " << round;
    EXPECT_EQ(s.reopens, 0u) << "restart " << round;
  }
  std::unique_ptr<Engine> b;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &b, &why), 0) << why;
  Open fb;
  ASSERT_EQ(b->open(c, b->root(), name, false, false, 0, &fb, nullptr), 0);
  EXPECT_EQ(b->lock(c, fb, 7, LT::kWrite, 4096, 1, 0), -EAGAIN);
  EXPECT_EQ(a->unlock(c, fa, 1, 0, 0), 0);
  EXPECT_EQ(b->lock(c, fb, 7, LT::kWrite, 4096, 1, 0), 0);
  EXPECT_EQ(b->close(c, fb), 0);
  EXPECT_EQ(b->shutdown(), 0);
  EXPECT_EQ(a->close(c, fa), 0);
  EXPECT_EQ(a->remove(c, a->root(), name), 0);
  EXPECT_EQ(a->shutdown(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Reclaim,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
