// LockWaits (fusefs/nfs/lock_waits.h): blocking lock requests wait on threads of their own,
// at most MAX at once, and stop() ends every wait before the mount goes.
#include "nfs/lock_waits.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

namespace nfsshim::fuse::nfsfs {
namespace {

using namespace std::chrono_literals;

// Polls COND for up to 5 s.
template <typename F>
bool eventually(F cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

// A job that waits until RELEASE is set or it is cancelled, and says which (as a lock
// wait replies to its request: granted or interrupted).
struct Waiter {
  std::atomic<bool> release{false};
  std::atomic<int> granted{0}, cancelled{0};
  std::atomic<int> started{0};
  LockWaits::Job job() {
    return [this](std::atomic<bool>* cancel) {
      ++started;
      while (!release.load() && !cancel->load()) std::this_thread::sleep_for(1ms);
      ++(cancel->load() && !release.load() ? cancelled : granted);
    };
  }
};

TEST(LockWaits, AWaitRunsOnAThreadOfItsOwnUntilItEnds) {
  LockWaits waits(4);
  Waiter w;
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> other_thread{false};
  ASSERT_EQ(waits.start([&](std::atomic<bool>*) { other_thread = std::this_thread::get_id() != caller; }), 0);
  ASSERT_EQ(waits.start(w.job()), 0);  // start() returns while the job waits
  EXPECT_TRUE(eventually([&] { return w.started.load() == 1; }));
  EXPECT_TRUE(eventually([&] { return waits.running() == 1; })) << waits.running();
  EXPECT_TRUE(other_thread.load());
  w.release = true;
  EXPECT_TRUE(eventually([&] { return waits.running() == 0; }));
  EXPECT_EQ(w.granted.load(), 1);
  EXPECT_EQ(w.cancelled.load(), 0);
  EXPECT_FALSE(waits.stopped());
}

TEST(LockWaits, MoreThanMaxWaitsAtOnceIsEnolckAndASlotComesBack) {
  LockWaits waits(2);
  Waiter w;
  ASSERT_EQ(waits.start(w.job()), 0);
  ASSERT_EQ(waits.start(w.job()), 0);
  ASSERT_TRUE(eventually([&] { return w.started.load() == 2; }));
  Waiter third;
  EXPECT_EQ(waits.start(third.job()), -ENOLCK);
  EXPECT_EQ(third.started.load(), 0);
  w.release = true;
  ASSERT_TRUE(eventually([&] { return waits.running() == 0; }));
  third.release = true;
  EXPECT_EQ(waits.start(third.job()), 0);  // the ended threads were joined, their slots free
  EXPECT_TRUE(eventually([&] { return third.granted.load() == 1; }));
}

TEST(LockWaits, StopCancelsEveryWaitWaitsForThemAndRefusesNewOnes) {
  LockWaits waits(8);
  Waiter w;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(waits.start(w.job()), 0);
  ASSERT_TRUE(eventually([&] { return w.started.load() == 5; }));
  waits.stop();  // returns only when every job has ended (and replied)
  EXPECT_EQ(w.cancelled.load(), 5);
  EXPECT_EQ(w.granted.load(), 0);
  EXPECT_EQ(waits.running(), 0u);
  EXPECT_TRUE(waits.stopped());
  Waiter late;
  EXPECT_EQ(waits.start(late.job()), -EINTR);
  EXPECT_EQ(late.started.load(), 0);
}

}  // namespace
}  // namespace nfsshim::fuse::nfsfs
