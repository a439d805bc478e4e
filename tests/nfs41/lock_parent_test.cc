// Which Open a caller's lock state on a file is made from (lock.cc), against the scripted
// server of fake_server.h. One owner locks through open A, unlocks (close(2) of A's fd
// drops the process's locks), locks again through open B, and then A is closed: its
// RELEASE can come after B's lock (it is asynchronous; a forked child or a mapping may
// keep A open long after). A's CLOSE must not free the lock state B's lock is held under,
// which then still unlocks. For io_uring and epoll.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fake_server.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs41/engine.h"

using nfs41test::FakeNfs41Server;
using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using namespace nfsshim::nfs4;

namespace {

using Logged = FakeNfs41Server::Logged;
using LT = Engine::LockType;
constexpr uint64_t kOwner = 7;

const char* op_name(uint32_t op) {
  switch (op) {
    case OP_OPEN: return "OPEN";
    case OP_CLOSE: return "CLOSE";
    case OP_LOCK: return "LOCK";
    case OP_LOCKU: return "LOCKU";
    case OP_FREE_STATEID: return "FREE_STATEID";
    default: return "?";
  }
}

// The server's log, for a failure message: stateids by the server's counter in them.
std::string dump(const std::vector<Logged>& log) {
  std::ostringstream o;
  for (const Logged& l : log) {
    if (l.op == OP_RECLAIM_COMPLETE) continue;
    o << "  " << op_name(l.op) << " " << nfs4_status_name(l.status)
      << (l.new_lock_owner ? " new" : "") << " sent #" << static_cast<int>(l.sent.other[4])
      << " given #" << static_cast<int>(l.given.other[4]) << "\n";
  }
  return o.str();
}

class Nfs41LockParent : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    Options o;
    o.addr = "127.0.0.1";
    o.port = srv_.port();
    o.export_path = "/export";
    o.io = GetParam();
    o.timeout_ms = 5000;
    std::string why;
    ASSERT_EQ(Engine::open(o, &e_, &why), 0) << why;
    c_ = e_->default_cred();
    ASSERT_EQ(e_->open(c_, e_->root(), "f", true, false, 0644, &a_, nullptr), 0);
    ASSERT_EQ(e_->open(c_, e_->root(), "f", false, false, 0644, &b_, nullptr), 0);
  }
  void TearDown() override {
    if (e_) {
      EXPECT_EQ(e_->shutdown(), 0);
    }
  }
  FakeNfs41Server srv_;
  std::unique_ptr<Engine> e_;
  Cred c_;
  Open a_, b_;
};

TEST_P(Nfs41LockParent, LockThroughBSurvivesTheLateCloseOfA) {
  ASSERT_EQ(e_->lock(c_, a_, kOwner, LT::kWrite, 0, 10, 0), 0);
  ASSERT_EQ(e_->unlock(c_, a_, kOwner, 0, 0), 0);
  ASSERT_EQ(e_->lock(c_, b_, kOwner, LT::kWrite, 0, 10, 0), 0);
  std::vector<Logged> log = srv_.log();
  ASSERT_EQ(log.back().op, OP_LOCK) << dump(log);
  const size_t b_lock = log.size() - 1;
  const Stateid4 held = log.back().given;  // the lock stateid B's lock is held under
  ASSERT_EQ(e_->close(c_, a_), 0);
  log = srv_.log();
  int frees = 0;  // LOCKU or FREE_STATEID of that lock state
  for (size_t i = b_lock + 1; i < log.size(); ++i)
    frees += (log[i].op == OP_LOCKU || log[i].op == OP_FREE_STATEID) &&
             log[i].sent.other == held.other;
  EXPECT_EQ(frees, 0) << "A's CLOSE freed the lock state of the lock held through B\n"
                      << dump(log);
  // The lock is still known, and its unlock goes out on that lock state.
  ASSERT_EQ(e_->unlock(c_, b_, kOwner, 0, 0), 0);
  log = srv_.log();
  ASSERT_EQ(log.back().op, OP_LOCKU) << "no LOCKU: the lock was forgotten\n" << dump(log);
  EXPECT_EQ(log.back().status, NFS4_OK) << dump(log);
  EXPECT_TRUE(log.back().sent.other == held.other) << dump(log);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41LockParent,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
