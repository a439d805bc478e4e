// The server restarts again in the middle of the client's recovery from a restart
// (libshim/src/nfs41: session.cc new_client_locked, io.cc reclaim_opens, lock.cc
// reclaim_locks), against the scripted server of fake_server.h: after a reclaim was
// granted, or between EXCHANGE_ID and CREATE_SESSION. The call that ran the recovery
// must not fail (a write-behind WRITE's data would be dropped), the recovery starts over
// from EXCHANGE_ID and reclaims every open and lock again, a lock reclaimed by the
// aborted pass included. Also a CREATE_SESSION answered DELAY during recovery, and a
// file gone from the server, which fails its own I/O only. For
// io_uring and epoll, hard and soft.
#include <gtest/gtest.h>

#include <future>
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
using Step = FakeNfs41Server::Step;
constexpr uint64_t kOwner = 7;

std::string dump(const std::vector<Logged>& log) {
  std::ostringstream o;
  for (const Logged& l : log) {
    o << "  epoch " << l.epoch << " op " << l.op << " " << nfs4_status_name(l.status) << " fh "
      << l.fh;
    if (l.op == OP_OPEN) o << " claim " << l.claim;
    if (l.op == OP_LOCK) o << (l.reclaim ? " reclaim" : "");
    o << "\n";
  }
  return o.str();
}

// How many ops of EPOCH in LOG match PRED.
template <typename Pred>
size_t count(const std::vector<Logged>& log, int epoch, Pred pred) {
  size_t n = 0;
  for (const Logged& l : log) n += l.epoch == epoch && pred(l);
  return n;
}

struct Param {
  IoBackend io;
  bool hard;
};
void PrintTo(const Param& p, std::ostream* os) {  // not its padding bytes
  *os << (p.io == IoBackend::kUring ? "uring" : "epoll") << (p.hard ? " hard" : " soft");
}

class Nfs41RestartInRecovery : public ::testing::TestWithParam<Param> {
 protected:
  Options options() const {
    Options o;
    o.addr = "127.0.0.1";
    o.port = srv_.port();
    o.export_path = "/export";
    o.io = GetParam().io;
    o.hard = GetParam().hard;
    o.timeout_ms = 1000;
    o.retrans = 2;
    return o;
  }

  // Files f0..f<N-1> open, "before" written to f0, write locks on [0, 10) of the first
  // LOCKED of them.
  void open_files(size_t n, size_t locked) {
    std::string why;
    ASSERT_EQ(Engine::open(options(), &e_, &why), 0) << why;
    const Cred c = e_->default_cred();
    fs_.resize(n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(e_->open(c, e_->root(), "f" + std::to_string(i), true, false, 0644, &fs_[i],
                         nullptr), 0);
    ASSERT_EQ(e_->write(c, fs_[0], 0, 6, "before", FILE_SYNC4, nullptr), 6);
    for (size_t i = 0; i < locked; ++i)
      ASSERT_EQ(e_->lock(c, fs_[i], kOwner, Engine::LockType::kWrite, 0, 10, 0), 0);
  }

  // The write that runs the recovery succeeds, the data is on the server, every file is
  // reclaimed in the last epoch (no CLAIM_FH re-open) and the locks of the first LOCKED
  // files are still held (unlock works, not EIO).
  void recovered(size_t locked) {
    const Cred c = e_->default_cred();
    EXPECT_EQ(e_->write(c, fs_[0], 6, 6, "after!", FILE_SYNC4, nullptr), 6)
        << "the call that ran the recovery failed\n" << dump(srv_.log());
    EXPECT_EQ(srv_.data(FakeNfs41Server::file_fh("f0")), "beforeafter!");
    const std::vector<Logged> log = srv_.log();
    const int last = srv_.epoch();
    for (size_t i = 0; i < fs_.size(); ++i) {
      const std::string fh = FakeNfs41Server::file_fh("f" + std::to_string(i));
      EXPECT_EQ(count(log, last, [&](const Logged& l) {
                  return l.op == OP_OPEN && l.claim == CLAIM_PREVIOUS && l.fh == fh &&
                         l.status == NFS4_OK;
                }), 1u) << fh << "\n" << dump(log);
      EXPECT_EQ(count(log, last, [&](const Logged& l) {
                  return l.op == OP_LOCK && l.reclaim && l.fh == fh && l.status == NFS4_OK;
                }), i < locked ? 1u : 0u) << fh << "\n" << dump(log);
    }
    EXPECT_EQ(count(log, last, [](const Logged& l) { return l.op == OP_OPEN && l.claim == CLAIM_FH; }),
              0u) << dump(log);
    for (size_t i = 0; i < locked; ++i)
      EXPECT_EQ(e_->unlock(c, fs_[i], kOwner, 0, 10), 0) << "the lock of f" << i << " was lost";
    EXPECT_EQ(e_->write(c, fs_[0], 12, 1, "!", FILE_SYNC4, nullptr), 1);
    EXPECT_EQ(e_->shutdown(), 0);
  }

  FakeNfs41Server srv_;
  std::unique_ptr<Engine> e_;
  std::vector<Open> fs_;
};

TEST_P(Nfs41RestartInRecovery, RestartAfterTheFirstOpenReclaim) {
  ASSERT_NO_FATAL_FAILURE(open_files(3, 0));
  srv_.restart(NFS4_OK);
  srv_.restart_after(Step::kReclaimOpen, 1);
  recovered(0);
  EXPECT_EQ(srv_.epoch(), 2);
}

TEST_P(Nfs41RestartInRecovery, LockReclaimedByTheAbortedPassIsReclaimedAgain) {
  ASSERT_NO_FATAL_FAILURE(open_files(3, 2));
  srv_.restart(NFS4_OK);
  srv_.restart_after(Step::kReclaimLock, 1);  // after f0's lock, before f1's
  recovered(2);
  EXPECT_EQ(srv_.epoch(), 2);
}

TEST_P(Nfs41RestartInRecovery, RestartBetweenExchangeIdAndCreateSession) {
  ASSERT_NO_FATAL_FAILURE(open_files(2, 1));
  srv_.restart(NFS4_OK);
  srv_.restart_after(Step::kExchangeId, 1);
  recovered(1);
  EXPECT_EQ(srv_.epoch(), 2);
}

TEST_P(Nfs41RestartInRecovery, CreateSessionDelayedDuringRecovery) {
  ASSERT_NO_FATAL_FAILURE(open_files(2, 1));
  srv_.restart(NFS4_OK);
  srv_.delay_create_sessions(3);
  recovered(1);
}

// A file removed on the server during the outage cannot be re-opened: that fails its own
// I/O, not the write to another file that ran the recovery.
TEST_P(Nfs41RestartInRecovery, AFileGoneFromTheServerFailsOnlyItsOwnIo) {
  ASSERT_NO_FATAL_FAILURE(open_files(2, 0));
  const Cred c = e_->default_cred();
  srv_.restart(NFS4_OK);
  srv_.remove_file(FakeNfs41Server::file_fh("f1"));
  EXPECT_EQ(e_->write(c, fs_[0], 6, 6, "after!", FILE_SYNC4, nullptr), 6)
      << "the re-open of f1 failed the write to f0\n" << dump(srv_.log());
  EXPECT_EQ(srv_.data(FakeNfs41Server::file_fh("f0")), "beforeafter!");
  EXPECT_LT(e_->write(c, fs_[1], 0, 1, "x", FILE_SYNC4, nullptr), 0);
  char buf[16] = {};
  EXPECT_EQ(e_->read(c, fs_[0], 0, sizeof buf, buf), 12);
  EXPECT_EQ(e_->stats().clientid_recoveries, 1u);
}

// A reclaim answered with a stateid error is refused, not taken for another restart: the
// server gives the same answer to every pass, so starting over looped forever (hard) or
// failed the call that ran the recovery (soft). That file is re-opened without reclaim.
TEST_P(Nfs41RestartInRecovery, AReclaimRefusedWithAStateidErrorIsNotARestart) {
  ASSERT_NO_FATAL_FAILURE(open_files(2, 0));
  const Cred c = e_->default_cred();
  srv_.restart(NFS4_OK, {{FakeNfs41Server::file_fh("f1"), NFS4ERR_BAD_STATEID}});
  auto fut = std::async(std::launch::async,
                        [&] { return e_->write(c, fs_[0], 6, 6, "after!", FILE_SYNC4, nullptr); });
  const bool done = fut.wait_for(std::chrono::seconds(8)) == std::future_status::ready;
  EXPECT_TRUE(done) << "recovery still running after 8 s: " << e_->stats().clientid_recoveries
                    << " client id recoveries";
  if (!done) {
    e_->shutdown();  // ends the passes
    fut.wait();
    return;
  }
  EXPECT_EQ(fut.get(), 6) << "the call that ran the recovery failed";
  EXPECT_EQ(e_->stats().clientid_recoveries, 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41RestartInRecovery,
                         ::testing::Values(Param{IoBackend::kUring, true},
                                           Param{IoBackend::kEpoll, true},
                                           Param{IoBackend::kEpoll, false}),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(i.param.io == IoBackend::kUring ? "uring" : "epoll") +
                                  (i.param.hard ? "_hard" : "_soft");
                         });

}  // namespace
