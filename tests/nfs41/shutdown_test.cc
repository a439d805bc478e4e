// Engine::shutdown() (unmount, the daemon's SIGTERM) against the scripted server
// (fake_server.h), hard mounts with a 0.5 s timeout:
// - the server is gone for good (stopped: connections reset and refused; or silent: no
//   reply, no reset) while a lease renewal is in flight: shutdown() ends it and returns
//   within 2 timeouts (the renewer's hard retries held it for ever before);
// - a caller's call is in flight to a silent server: shutdown() returns in time, and the
//   call ends with -EIO (shutdown makes every call soft; it used to write o_.hard while
//   that call read it, a data race under TSan, and the call waited for ever);
// - the server is up: renewals went through, shutdown() returns 0 at once and the server
//   got DESTROY_SESSION, then DESTROY_CLIENTID.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_server.h"
#include "nfsshim/nfs4/compound.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using namespace nfsshim::nfs4;

namespace {

using Clock = std::chrono::steady_clock;
using nfs41test::FakeNfs41Server;
constexpr int kTimeoutMs = 500;

int64_t ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// F's result; one that takes over 20 s (a shutdown or call that waits for ever) fails the
// test and aborts it: it cannot be stopped, and the engine must outlive it.
template <typename F>
int within_20s(F f, const char* what) {
  auto call = std::async(std::launch::async, f);
  if (call.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << what << " still waits after 20 s (the server is gone)";
    std::fflush(nullptr);
    std::abort();
  }
  return call.get();
}

// Polls COND every 20 ms for up to 5 s.
template <typename C>
bool eventually(C cond) {
  for (int i = 0; i < 250; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

class Nfs41Shutdown : public ::testing::TestWithParam<IoBackend> {
 protected:
  // Hard, 0.5 s per try; a 1 s lease: a renewal every ~0.35 s when idle.
  void open_engine(uint32_t lease_s) {
    srv_.set_lease(lease_s);
    Options o;
    o.port = srv_.port();
    o.export_path = "/export";
    o.io = GetParam();
    o.hard = true;
    o.timeout_ms = kTimeoutMs;
    std::string why;
    ASSERT_EQ(Engine::open(o, &e_, &why), 0) << why;
    ASSERT_EQ(e_->stats().lease_s, lease_s);
  }
  // shutdown()'s time in ms (its result in *RV).
  int64_t timed_shutdown(int* rv) {
    const auto t0 = Clock::now();
    *rv = within_20s([this] { return e_->shutdown(); }, "shutdown()");
    return ms_since(t0);
  }
  // A renewal waits for its reply from a server that is gone: shutdown() ends it.
  void renewal_in_flight_then_shutdown() {
    ASSERT_TRUE(eventually([&] { return e_->stats().timeouts > 0; }))
        << "no renewal timed out: the case is not made";
    const uint64_t renewals = e_->stats().renewals;
    int rv = 0;
    const int64_t ms = timed_shutdown(&rv);
    EXPECT_LE(ms, 2 * kTimeoutMs + 250) << "shutdown() waited too long on a dead server";
    EXPECT_NE(rv, 0) << "the server is gone: teardown cannot have worked";
    EXPECT_EQ(e_->stats().renewals, renewals + 1) << "the renewal in flight did not end";
  }

  FakeNfs41Server srv_;
  std::unique_ptr<Engine> e_;
};

TEST_P(Nfs41Shutdown, EndsARenewalInFlightToAStoppedServer) {
  ASSERT_NO_FATAL_FAILURE(open_engine(1));
  srv_.stop();
  renewal_in_flight_then_shutdown();
}

TEST_P(Nfs41Shutdown, EndsARenewalInFlightToASilentServer) {
  ASSERT_NO_FATAL_FAILURE(open_engine(1));
  srv_.mute_all();
  renewal_in_flight_then_shutdown();
  EXPECT_GE(srv_.swallowed(), 1);
}

// A caller (a FUSE worker) has a call in flight when shutdown() begins (no renewal: the
// default 90 s lease). The call becomes soft and ends; so does shutdown().
TEST_P(Nfs41Shutdown, EndsACallerInFlightToASilentServer) {
  ASSERT_NO_FATAL_FAILURE(open_engine(90));
  srv_.mute_all();
  const auto t0 = Clock::now();
  auto call = std::async(std::launch::async, [this] {
    return e_->run(e_->default_cred(), [](Compound& k) { return encode_putrootfh(k); },
                   [](ReplyReader&) { return 0; });
  });
  ASSERT_TRUE(eventually([&] { return e_->stats().timeouts > 0; }))
      << "the call did not time out: the case is not made";
  int rv = 0;
  EXPECT_LE(timed_shutdown(&rv), 2 * kTimeoutMs + 250);
  EXPECT_NE(rv, 0);
  int call_rv = within_20s([&] { return call.get(); }, "the caller's call");
  EXPECT_EQ(call_rv, -EIO);
  EXPECT_LE(ms_since(t0), 5000);
}

// The server is up: teardown's calls are all sent and answered, at once.
TEST_P(Nfs41Shutdown, DestroysSessionAndClientIdWhenTheServerIsUp) {
  ASSERT_NO_FATAL_FAILURE(open_engine(1));
  ASSERT_TRUE(eventually([&] { return e_->stats().renewals >= 2; })) << "no renewals";
  int rv = -1;
  EXPECT_LE(timed_shutdown(&rv), kTimeoutMs);
  EXPECT_EQ(rv, 0);
  std::vector<uint32_t> destroys;
  for (const auto& l : srv_.log())
    if (l.op == OP_DESTROY_SESSION || l.op == OP_DESTROY_CLIENTID) destroys.push_back(l.op);
  EXPECT_EQ(destroys, (std::vector<uint32_t>{OP_DESTROY_SESSION, OP_DESTROY_CLIENTID}));
  EXPECT_EQ(e_->stats().timeouts, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Shutdown,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
