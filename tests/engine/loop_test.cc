#include "nfsshim/nfs/event_loop.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ostream>
#include <thread>

namespace nfsshim::nfs {
namespace {

struct Recorder : FdHandler {
  int calls = 0;
  uint32_t last = 0;
  int last_fd = -1;
  void on_fd_ready(int fd, uint32_t revents) override {
    ++calls;
    last = revents;
    last_fd = fd;
  }
};

// The backend, and for io_uring whether its eventfd is watched as before Linux 5.13 (a
// one-shot poll re-armed after each wake; this kernel has the multishot one).
struct LoopParam {
  IoBackend io;
  bool oneshot_wake;
};
// For gtest's test names: without it they show the struct's bytes, padding included.
void PrintTo(const LoopParam& p, std::ostream* os) {
  *os << io_backend_name(p.io) << (p.oneshot_wake ? ", one-shot wake poll" : "");
}

class LoopTest : public ::testing::TestWithParam<LoopParam> {
 protected:
  void SetUp() override {
    std::string why;
    use_oneshot_wake_poll_for_test(GetParam().oneshot_wake);
    int rv = EventLoop::create(GetParam().io, &loop_, &why);
    use_oneshot_wake_poll_for_test(false);
    ASSERT_EQ(rv, 0) << why;
    ASSERT_EQ(loop_->backend(), GetParam().io);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp_), 0);
  }
  void TearDown() override {
    ::close(sp_[0]);
    ::close(sp_[1]);
  }
  std::unique_ptr<EventLoop> loop_;
  int sp_[2] = {-1, -1};
};

TEST(EventLoopProbe, IoUringIsAvailableHere) {
  // The project's machines and CI run kernels with io_uring on: a failure here means the
  // uring tests below would silently test nothing.
  EXPECT_EQ(probe_io_uring(), 0);
  std::unique_ptr<EventLoop> l;
  std::string why;
  ASSERT_EQ(EventLoop::create(IoBackend::kAuto, &l, &why), 0) << why;
  EXPECT_EQ(l->backend(), IoBackend::kUring);
}

TEST_P(LoopTest, ReadinessIsOneShot) {
  Recorder r;
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &r), 0);
  EXPECT_EQ(loop_->run_once(20), 0);  // nothing to read yet
  EXPECT_EQ(r.calls, 0);
  ASSERT_EQ(::write(sp_[1], "x", 1), 1);
  EXPECT_EQ(loop_->run_once(1000), 1);
  EXPECT_EQ(r.calls, 1);
  EXPECT_TRUE(r.last & POLLIN);
  EXPECT_EQ(r.last_fd, sp_[0]);
  // Still readable, but not armed again: no second call.
  for (int i = 0; i < 3; ++i) loop_->run_once(10);
  EXPECT_EQ(r.calls, 1);
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &r), 0);
  EXPECT_EQ(loop_->run_once(1000), 1);
  EXPECT_EQ(r.calls, 2);
}

TEST_P(LoopTest, ReArmWidensToPollout) {
  Recorder r;
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &r), 0);
  loop_->run_once(10);
  EXPECT_EQ(r.calls, 0);
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN | POLLOUT, &r), 0);  // replaces the armed poll
  EXPECT_EQ(loop_->run_once(1000), 1);
  EXPECT_TRUE(r.last & POLLOUT);
  EXPECT_FALSE(r.last & POLLIN);
  // The replaced poll's completion must not produce a second call.
  for (int i = 0; i < 3; ++i) loop_->run_once(10);
  EXPECT_EQ(r.calls, 1);
}

TEST_P(LoopTest, ForgetStopsCalls) {
  Recorder r;
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &r), 0);
  loop_->run_once(0);
  loop_->forget(sp_[0]);
  ASSERT_EQ(::write(sp_[1], "x", 1), 1);
  for (int i = 0; i < 3; ++i) loop_->run_once(10);
  EXPECT_EQ(r.calls, 0);
}

TEST_P(LoopTest, HangupIsReported) {
  Recorder r;
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &r), 0);
  ::shutdown(sp_[1], SHUT_RDWR);
  EXPECT_EQ(loop_->run_once(1000), 1);
  EXPECT_TRUE(r.last & (POLLHUP | POLLIN));
}

TEST_P(LoopTest, TimeoutWithoutEvents) {
  // A wait may end early with EINTR (io_uring task_work of a ring this thread closed
  // signals the thread), so wait again; a handful of waits, not a spin.
  auto t0 = std::chrono::steady_clock::now();
  long ms = 0;
  for (int i = 0; i < 20 && ms < 40; ++i) {
    EXPECT_EQ(loop_->run_once(50), 0);
    ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  }
  EXPECT_GE(ms, 40);
  EXPECT_LT(ms, 1000);
}

TEST_P(LoopTest, PostFromAnotherThreadWakesTheLoop) {
  std::atomic<int> ran{0};
  std::thread::id loop_tid = std::this_thread::get_id(), ran_on;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    loop_->post([&] {
      ran_on = std::this_thread::get_id();
      ran.fetch_add(1);
    });
  });
  auto t0 = std::chrono::steady_clock::now();
  while (ran.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    loop_->run_once(10000);  // would sleep 10 s without the wake-up
  t.join();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(ran_on, loop_tid);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// Every batch wakes a sleeping loop, not only the first (io_uring watches the eventfd with
// one multishot poll and never reads it), and an idle loop still sleeps between batches
// (a counter left readable must not make it spin).
TEST_P(LoopTest, EveryBatchWakesAndIdleStillSleeps) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      loop_->post([&] { ran.fetch_add(1); });
    });
    auto t0 = std::chrono::steady_clock::now();
    while (ran.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
      loop_->run_once(10000);
    t.join();
    ASSERT_EQ(ran.load(), 1) << "round " << round;
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "round " << round;
    // Nothing posted now: the next wait must last its timeout (EINTR may cut one short).
    auto t1 = std::chrono::steady_clock::now();
    long ms = 0;
    int waits = 0;
    for (; waits < 5 && ms < 20; ++waits) {
      loop_->run_once(25);
      ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t1).count();
    }
    ASSERT_GE(ms, 20) << "round " << round << ": the idle loop did not sleep (" << waits << " waits)";
  }
}

TEST_P(LoopTest, ManyPostsFewWakeups) {
  std::atomic<int> ran{0};
  const int n = 10000;
  std::thread t([&] {
    for (int i = 0; i < n; ++i) loop_->post([&] { ran.fetch_add(1); });
  });
  while (ran.load() < n) loop_->run_once(1000);
  t.join();
  EXPECT_EQ(ran.load(), n);
  EXPECT_LT(loop_->stats().wakeups, static_cast<uint64_t>(n));  // batched, not one per post
}

// Ping-pong over a socketpair: how many syscalls the loop itself makes per round trip.
// io_uring: re-arm and wait share one io_uring_enter; epoll: one epoll_wait (the mask is
// unchanged, so no epoll_ctl).
TEST_P(LoopTest, OneLoopSyscallPerIteration) {
  struct Echo : FdHandler {
    EventLoop* loop;
    int fd;
    int rounds = 0;
    void on_fd_ready(int, uint32_t) override {
      char c;
      while (::read(fd, &c, 1) == 1) ++rounds;
      loop->arm(fd, POLLIN, this);
    }
  } echo;
  echo.loop = loop_.get();
  echo.fd = sp_[0];
  ASSERT_EQ(loop_->arm(sp_[0], POLLIN, &echo), 0);
  loop_->run_once(0);
  LoopStats before = loop_->stats();
  const int rounds = 200;
  for (int i = 0; i < rounds; ++i) {
    ASSERT_EQ(::write(sp_[1], "x", 1), 1);
    loop_->run_once(1000);
  }
  LoopStats after = loop_->stats();
  EXPECT_EQ(echo.rounds, rounds);
  uint64_t sc = after.syscalls - before.syscalls;
  EXPECT_EQ(sc, static_cast<uint64_t>(rounds)) << io_backend_name(GetParam().io);
}

INSTANTIATE_TEST_SUITE_P(Backends, LoopTest,
                         ::testing::Values(LoopParam{IoBackend::kUring, false}, LoopParam{IoBackend::kEpoll, false},
                                           LoopParam{IoBackend::kUring, true}),
                         [](const ::testing::TestParamInfo<LoopParam>& i) {
                           if (i.param.io == IoBackend::kEpoll) return std::string("epoll");
                           return std::string(i.param.oneshot_wake ? "uring_oneshot_wake" : "uring");
                         });

}  // namespace
}  // namespace nfsshim::nfs
