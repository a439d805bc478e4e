// A restart WITH a grace period against a real nfs-ganesha (CTest sets GANESHA_GRACE for
// ganesha_test.sh -> tests/nfs4/ganesha_up.sh). Files are open and being written when
// ganesha is killed (-9) and started again: the engine gets a new client id and reclaims
// its opens (CLAIM_PREVIOUS) in the grace period, so the writes go on at once, before the
// period ends; no byte is lost. A new OPEN in the period is answered NFS4ERR_GRACE until
// it ends (polled). ganesha lifts the grace period early once every
// client it remembers has sent RECLAIM_COMPLETE, so a second client (a forked process
// with a file open) crashes together with the server: its record keeps the grace period
// for its whole length, as a crashed client does in real life. For io_uring and epoll.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "ganesha_env.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using nfs41test::env;
using nfs41test::ganesha_options;
using Clock = std::chrono::steady_clock;

namespace {


void fill(std::vector<char>* buf, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& ch : *buf) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ch = static_cast<char>(x);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// The other client: a child process with its own engine and a file open; SIGKILLed.
class CrashingClient {
 public:
  explicit CrashingClient(IoBackend io) {
    int p[2];
    if (pipe(p) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      ::close(p[0]);
      std::unique_ptr<Engine> e;
      std::string why;
      Open f;
      char ok = 'k';
      if (Engine::open(ganesha_options(io, 2), &e, &why) != 0 ||
          e->open(e->default_cred(), e->root(), "gh" + std::to_string(getpid()), true, false,
                  0644, &f, nullptr) != 0 ||
          e->write(e->default_cred(), f, 0, 1, &ok, 2, nullptr) != 1 ||
          ::write(p[1], &ok, 1) != 1) {
        _exit(1);
      }
      for (;;) pause();
    }
    ::close(p[1]);
    char ch = 0;
    ready_ = pid_ > 0 && ::read(p[0], &ch, 1) == 1 && ch == 'k';
    ::close(p[0]);
  }
  ~CrashingClient() { crash(); }
  bool ready() const { return ready_; }
  std::string file() const { return "gh" + std::to_string(pid_); }
  void crash() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
};

class Nfs41Grace : public ::testing::TestWithParam<IoBackend> {};

TEST_P(Nfs41Grace, RestartWithGracePeriodMidWriteLosesNothing) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty()) << "run through ganesha_test.sh";
  ASSERT_FALSE(env("GANESHA_GRACE").empty()) << "needs GANESHA_GRACE (the CTest entry sets it)";
  const int grace_s = std::stoi(env("GANESHA_GRACE"));
  // Forked before this process has an engine (and its threads).
  CrashingClient other(GetParam());
  ASSERT_TRUE(other.ready()) << "the second client did not come up";
  const std::string other_file = other.file();

  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(ganesha_options(GetParam(), 2), &e, &why), 0) << why;
  const Cred c = e->default_cred();
  constexpr int kThreads = 2, kChunks = 10;
  constexpr size_t kChunk = 1u << 20;
  std::vector<Open> files(kThreads);
  std::vector<std::string> names(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    names[t] = "grace" + std::to_string(getpid()) + "-" + std::to_string(t) +
               (GetParam() == IoBackend::kUring ? "u" : "e");
    ASSERT_EQ(e->open(c, e->root(), names[t], true, false, 0644, &files[t], nullptr), 0);
  }
  const uint64_t grace_before = e->grace_waits();
  std::atomic<bool> restarted{false};
  Clock::time_point t_restart{};
  std::thread restarter;
  std::vector<std::thread> ws;
  for (int t = 0; t < kThreads; ++t) {
    ws.emplace_back([&, t] {
      std::vector<char> buf(kChunk);
      for (int k = 0; k < kChunks; ++k) {
        if (t == 0 && k == 3 && !restarted.exchange(true)) {
          restarter = std::thread([&] {
            other.crash();
            t_restart = Clock::now();
            EXPECT_EQ(std::system(restart.c_str()), 0);
          });
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        fill(&buf, uint64_t(t) * 1000 + k);
        ssize_t n = e->write_committed(c, files[t], uint64_t(k) * kChunk, kChunk, buf.data());
        ASSERT_EQ(n, static_cast<ssize_t>(kChunk)) << names[t] << " chunk " << k;
      }
    });
  }
  for (auto& w : ws) w.join();
  if (restarter.joinable()) restarter.join();
  const double after_restart = std::chrono::duration<double>(Clock::now() - t_restart).count();
  ASSERT_TRUE(restarted);

  Stats s = e->stats();
  const uint64_t graces = e->grace_waits() - grace_before;
  std::printf("grace %d s: writes done %.1f s after the restart; GRACE answers %llu, "
              "clientid recoveries %llu, reclaimed opens %llu, CLAIM_FH reopens %llu, "
              "resent %llu bytes\n",
              grace_s, after_restart, (unsigned long long)graces,
              (unsigned long long)s.clientid_recoveries, (unsigned long long)s.reclaimed_opens,
              (unsigned long long)s.reopens, (unsigned long long)s.resent_bytes);
  EXPECT_GE(s.clientid_recoveries, 1u);
  EXPECT_EQ(s.reclaimed_opens, uint64_t{kThreads} * s.clientid_recoveries);
  EXPECT_EQ(s.reopens, 0u) << "an open was not reclaimed";
  // No GRACE answer: the writes did not wait for the period (their time, printed above,
  // is no check: the sanitizer builds run them several times slower).
  EXPECT_EQ(graces, 0u) << "reclaimed opens wait for no grace period";

  // New state in the grace period: a new OPEN is answered GRACE until the period ends.
  const std::string late = names[0] + "-late";
  Open lf;
  ASSERT_EQ(e->open(c, e->root(), late, true, false, 0644, &lf, nullptr), 0);
  const double opened = std::chrono::duration<double>(Clock::now() - t_restart).count();
  const uint64_t late_graces = e->grace_waits() - grace_before;
  std::printf("a new OPEN after the restart: done %.1f s after it, %llu GRACE answers\n",
              opened, (unsigned long long)late_graces);
  EXPECT_GE(late_graces, 2u) << "the new OPEN was never answered NFS4ERR_GRACE";
  EXPECT_GE(opened, grace_s - 1.0);
  EXPECT_EQ(e->close(c, lf), 0);
  EXPECT_EQ(e->remove(c, e->root(), late), 0);

  // Every byte: through the engine and on the server's disk.
  std::vector<char> want(kChunk), got(kChunk);
  for (int t = 0; t < kThreads; ++t) {
    std::string disk = read_file(env("NFS41_EXPORT_DIR") + "/" + names[t]);
    ASSERT_EQ(disk.size(), kChunks * kChunk) << names[t];
    for (int k = 0; k < kChunks; ++k) {
      fill(&want, uint64_t(t) * 1000 + k);
      ASSERT_EQ(e->read(c, files[t], uint64_t(k) * kChunk, kChunk, got.data()),
                static_cast<ssize_t>(kChunk));
      EXPECT_EQ(got, want) << names[t] << " chunk " << k << " (engine)";
      EXPECT_EQ(disk.compare(k * kChunk, kChunk, want.data(), kChunk), 0)
          << names[t] << " chunk " << k << " (disk)";
    }
    EXPECT_EQ(e->close(c, files[t]), 0);
    EXPECT_EQ(e->remove(c, e->root(), names[t]), 0);
  }
  EXPECT_EQ(e->remove(c, e->root(), other_file), 0);
  EXPECT_EQ(e->shutdown(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Grace,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
