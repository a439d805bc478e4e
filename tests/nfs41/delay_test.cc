// NFS4ERR_DELAY handling of the NFSv4.1 engine (libshim/src/nfs41/session.cc) against a
// scripted NFSv4.1 server on a loopback socket (fake_server.h): ganesha does not send
// DELAY on demand. A compound of exactly SEQUENCE + PUTROOTFH is the scripted one:
// answered with DELAY (at the PUTROOTFH or at the SEQUENCE) the first N times, then OK.
// Arrival times show the backoff between the retries. For the io_uring and the epoll loop.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fake_server.h"
#include "nfsshim/log.h"
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

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// SEQUENCE + PUTROOTFH through Engine::run: the scripted compound.
int putrootfh(Engine& e) {
  return e.run(e.default_cred(), [](Compound& k) { return encode_putrootfh(k); },
               [](ReplyReader& r) {
                 uint32_t st;
                 return r.results_left() ? decode_status_only(r, OP_PUTROOTFH, &st) : 0;
               });
}

class Nfs41Delay : public ::testing::TestWithParam<IoBackend> {
 protected:
  Options options(int port) const {
    Options o;
    o.addr = "127.0.0.1";
    o.port = port;
    o.export_path = "/export";
    o.io = GetParam();
    o.timeout_ms = 5000;
    return o;
  }
};

// A hard mount retries every DELAY with a growing pause and succeeds once the server says OK.
void delays_then_ok(const Options& o, FakeNfs41Server& srv, FakeNfs41Server::DelayAt at) {
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const Stats before = e->stats();
  srv.script(4, at);
  auto t0 = Clock::now();
  EXPECT_EQ(putrootfh(*e), 0);
  double took = ms_between(t0, Clock::now());
  auto arr = srv.arrivals();
  ASSERT_EQ(arr.size(), 5u);  // 4 DELAYs, then the OK
  EXPECT_EQ(srv.delays_sent(), 4);
  const Stats s = e->stats();
  EXPECT_EQ(s.delays - before.delays, 4u);
  EXPECT_EQ(s.retries - before.retries, 4u);
  // Backoff: every retry waits (also the first), and the waits grow.
  std::vector<double> gaps;
  for (size_t i = 1; i < arr.size(); ++i) gaps.push_back(ms_between(arr[i - 1], arr[i]));
  // The engine sleeps 10 ms, doubling: each gap is at least that (load only adds to it).
  EXPECT_GE(gaps[0], 9.0) << "the first retry after DELAY went out without a pause";
  for (size_t i = 1; i < gaps.size(); ++i) EXPECT_GE(gaps[i], 9.0 * (1 << i)) << "gap " << i;
  std::printf("DELAY x4 then OK (%s): retry gaps %.1f %.1f %.1f %.1f ms, total %.0f ms\n",
              at == FakeNfs41Server::DelayAt::kOp ? "op" : "SEQUENCE", gaps[0], gaps[1], gaps[2],
              gaps[3], took);
  EXPECT_EQ(e->shutdown(), 0);
}

TEST_P(Nfs41Delay, OpDelayIsRetriedWithBackoffThenSucceeds) {
  FakeNfs41Server srv;
  delays_then_ok(options(srv.port()), srv, FakeNfs41Server::DelayAt::kOp);
}

TEST_P(Nfs41Delay, SequenceDelayIsRetriedWithBackoffThenSucceeds) {
  FakeNfs41Server srv;
  delays_then_ok(options(srv.port()), srv, FakeNfs41Server::DelayAt::kSequence);
}

// Soft: a server that answers DELAY forever makes the call fail with EIO after about
// timeout x (retrans + 1), with a bounded number of retries (no busy loop).
TEST_P(Nfs41Delay, SoftMountEndlessDelayEndsInEio) {
  FakeNfs41Server srv;
  Options o = options(srv.port());
  o.hard = false;
  o.timeout_ms = 400;
  o.retrans = 1;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  srv.script(1000000, FakeNfs41Server::DelayAt::kOp);
  auto t0 = Clock::now();
  EXPECT_EQ(putrootfh(*e), -EIO);
  double took = ms_between(t0, Clock::now());
  size_t n = srv.arrivals().size();
  std::printf("soft, DELAY forever: EIO after %.0f ms and %zu attempts\n", took, n);
  EXPECT_GE(took, 790.0);
  EXPECT_LT(took, 2000.0);  // the last pause is cut to the budget, not a whole backoff
  EXPECT_GE(n, 3u);
  EXPECT_LE(n, 15u);
  srv.script(0, FakeNfs41Server::DelayAt::kOp);
  EXPECT_EQ(putrootfh(*e), 0);  // the server answers again: so does the engine
  EXPECT_EQ(e->shutdown(), 0);
}

// A hard mount waits out DELAY as long as the server asks, but says so once past the
// timeout (and again when the server answers), never a silent wait.
TEST_P(Nfs41Delay, HardMountLongDelayIsLoggedOnce) {
  FakeNfs41Server srv;
  Options o = options(srv.port());
  o.timeout_ms = 300;
  const std::string log = ::testing::TempDir() + "nfs41-delay-" + std::to_string(srv.port()) + ".log";
  std::remove(log.c_str());
  std::string why;
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "file:" + log, "info", &why)) << why;
  std::unique_ptr<Engine> e;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  srv.script(9, FakeNfs41Server::DelayAt::kOp);  // 10+20+..+1000 ms: about 2.5 s of DELAY
  EXPECT_EQ(putrootfh(*e), 0);
  EXPECT_EQ(srv.delays_sent(), 9);
  EXPECT_EQ(e->shutdown(), 0);
  nfsshim::log::get().flush();
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "stderr", "warn", &why)) << why;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  const std::string t = text.str();
  const std::string said = "has answered NFS4ERR_DELAY for ";
  size_t at = t.find(said);
  EXPECT_NE(at, std::string::npos) << t;
  EXPECT_EQ(t.find(said, at + 1), std::string::npos) << "logged more than once:\n" << t;
  EXPECT_NE(t.find("still trying (hard mount)"), std::string::npos) << t;
  EXPECT_NE(t.find("answered the call after"), std::string::npos) << t;
  std::remove(log.c_str());
}

// NFS4ERR_RESOURCE is not a "try later" (RFC 8881 15.1.1.4; the kernel maps it to
// EREMOTEIO and does not resend): a server that gives it for good (ganesha for a
// lock-owner it ties to another open-owner) must not hang a hard mount's call.
TEST_P(Nfs41Delay, ResourceFailsTheCallWithEremoteio) {
  for (auto at : {FakeNfs41Server::DelayAt::kOp, FakeNfs41Server::DelayAt::kSequence}) {
    FakeNfs41Server srv;
    std::unique_ptr<Engine> e;
    std::string why;
    ASSERT_EQ(Engine::open(options(srv.port()), &e, &why), 0) << why;
    srv.script(1000000, at, NFS4ERR_RESOURCE);
    auto t0 = Clock::now();
    EXPECT_EQ(putrootfh(*e), -EREMOTEIO);
    EXPECT_LT(ms_between(t0, Clock::now()), 2000.0);
    EXPECT_EQ(srv.arrivals().size(), 1u) << "RESOURCE was resent";
    srv.script(0, at);
    EXPECT_EQ(putrootfh(*e), 0);  // the slot is usable again
    EXPECT_EQ(e->shutdown(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Delay,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
