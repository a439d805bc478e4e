// The NFSv4.1 engine against a broken server (fake_server.h):
// - its READDIR never says eof and repeats its last cookie: the listing ends in EIO after
//   the first reply that makes no progress, instead of asking again and again and growing
//   its entry list (the fake gives eof after 1000 replies, so that a client without the
//   check ends too, with 1000 entries);
// - its READDIR has no entries and no eof: EIO, not an empty listing taken for the whole;
// - its directory changes under a listing (kChurn): an entry removed mid-scan comes with
//   rdattr_error and is left out (asked for, ganesha fails the READDIR without it); a
//   cookie refused past 0 (NOT_SAME, BAD_COOKIE) starts the listing again, whose result
//   replaces the partial one; ESTALE/ENOENT while the directory is there asks again at the
//   same cookie;
// - it goes silent on a connection without a reset (power loss): at the call's timeout the
//   engine drops that connection and replays the call on a new one, hard or soft, instead
//   of waiting forever (hard) or failing (soft);
// - it goes away again in the middle of recovery (it said BADSESSION, then CREATE_SESSION
//   gets no reply for a while): a hard mount waits it out as it waits for any call, and
//   the call succeeds; a soft one fails the call.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
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

Options options(int port) {
  Options o;
  o.addr = "127.0.0.1";
  o.port = port;
  o.export_path = "/export";
  o.io = IoBackend::kEpoll;
  o.timeout_ms = 5000;
  return o;
}

// Quick to give up on a silent server: 300 ms per try, 2 retries (soft: 0.9 s in all).
Options quick_options(int port, bool hard) {
  Options o = options(port);
  o.hard = hard;
  o.timeout_ms = 300;
  o.retrans = 2;
  return o;
}

TEST(Nfs41BrokenServer, ReaddirThatNeverAdvancesEndsInEio) {
  nfs41test::FakeNfs41Server srv;
  Options o = options(srv.port());
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  std::vector<nfsshim::nfs::DirEntry> ents;
  EXPECT_EQ(e->readdir(e->default_cred(), e->root(), &ents), -EIO);
  EXPECT_EQ(srv.readdirs(), 2) << "asked again after a reply that made no progress";
  EXPECT_EQ(e->shutdown(), 0);
}

// A READ answered with no bytes and no eof in the middle of the file (the fake's file is
// 8 bytes, its READs stop at 4) is EIO, as in the kernel's nfs_readpage_retry: it was
// passed on as a short read, which FUSE takes for end of file (the kernel cuts its cached
// size there, and cp copies a truncated file without an error).
TEST(Nfs41BrokenServer, ReadWithoutBytesOrEofMidFileIsEio) {
  nfs41test::FakeNfs41Server srv;
  Options o = options(srv.port());
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const Cred c = e->default_cred();
  Open f;
  ASSERT_EQ(e->open(c, e->root(), "f", true, false, 0644, &f, nullptr), 0);
  ASSERT_EQ(e->write(c, f, 0, 8, "abcdefgh", FILE_SYNC4, nullptr), 8);
  char buf[8];
  ASSERT_EQ(e->read(c, f, 0, 8, buf), 8) << "control: a whole read";
  srv.stall_reads_at(4);
  EXPECT_EQ(e->read(c, f, 0, 8, buf), -EIO) << "a READ without bytes or eof taken for end of file";
  EXPECT_GE(srv.empty_reads(), 1) << "no empty READ: the case is not made";
  EXPECT_EQ(e->read(c, f, 4, 4, buf), -EIO);
  srv.stall_reads_at(UINT64_MAX);
  EXPECT_EQ(e->read(c, f, 0, 8, buf), 8);
  EXPECT_EQ(e->read(c, f, 8, 8, buf), 0) << "end of file (eof) stays 0";
  EXPECT_EQ(e->close(c, f), 0);
  EXPECT_EQ(e->shutdown(), 0);
}

TEST(Nfs41BrokenServer, ReaddirWithNoEntriesAndNoEofIsEio) {
  nfs41test::FakeNfs41Server srv;
  srv.script_readdir(nfs41test::FakeNfs41Server::Readdir::kEmptyNoEof);
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(options(srv.port()), &e, &why), 0) << why;
  std::vector<nfsshim::nfs::DirEntry> ents;
  EXPECT_EQ(e->readdir(e->default_cred(), e->root(), &ents), -EIO) << "taken as the end";
  EXPECT_EQ(srv.readdirs(), 1);
  EXPECT_EQ(e->shutdown(), 0);
}

// The names listed for STATUS at the first READDIR past cookie 0; COOKIES: those asked.
void readdir_under_churn(uint32_t status, const std::vector<uint64_t>& cookies) {
  nfs41test::FakeNfs41Server srv;
  srv.script_readdir(nfs41test::FakeNfs41Server::Readdir::kChurn, status);
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(options(srv.port()), &e, &why), 0) << why;
  std::vector<nfsshim::nfs::DirEntry> ents;
  ASSERT_EQ(e->readdir(e->default_cred(), e->root(), &ents), 0) << nfs4_status_name(status);
  std::string names;
  for (const auto& d : ents) names += d.name + "(" + std::to_string(d.fileid) + ") ";
  EXPECT_EQ(names, "a(103) b(105) c(106) ");
  EXPECT_EQ(srv.readdir_cookies(), cookies);
  EXPECT_EQ(e->shutdown(), 0);
}

// A cookie refused: from 0 again. An entry gone (the directory is there): the same cookie.
TEST(Nfs41BrokenServer, ReaddirUnderChurnRestartsOnNotSame) {
  readdir_under_churn(NFS4ERR_NOT_SAME, {0, 4, 0, 4});
}
TEST(Nfs41BrokenServer, ReaddirUnderChurnRestartsOnBadCookie) {
  readdir_under_churn(NFS4ERR_BAD_COOKIE, {0, 4, 0, 4});
}
TEST(Nfs41BrokenServer, ReaddirUnderChurnAsksAgainOnStale) { readdir_under_churn(NFS4ERR_STALE, {0, 4, 4}); }
TEST(Nfs41BrokenServer, ReaddirUnderChurnAsksAgainOnNoent) { readdir_under_churn(NFS4ERR_NOENT, {0, 4, 4}); }

// SEQUENCE + PUTROOTFH through E: its result. A call still waiting after SECS seconds
// (a client that never gives up, WHY) fails the test and aborts it.
int putrootfh_within(Engine& e, int secs, const char* why) {
  auto call = std::async(std::launch::async, [&] {
    return e.run(e.default_cred(), [](Compound& k) { return encode_putrootfh(k); },
                 [](ReplyReader& r) {
                   uint32_t st;
                   return r.results_left() ? decode_status_only(r, OP_PUTROOTFH, &st) : 0;
                 });
  });
  if (call.wait_for(std::chrono::seconds(secs)) != std::future_status::ready) {
    ADD_FAILURE() << "the call waited " << secs << " s " << why;
    std::fflush(nullptr);
    std::abort();
  }
  return call.get();
}

// SEQUENCE + PUTROOTFH through the engine, on a server that stops answering its
// connection; 0 when answered. Waits at most 20 s (a client that never gives up on the
// silent connection would hang here: then the test fails and aborts).
void silent_connection_then_answered(bool hard) {
  nfs41test::FakeNfs41Server srv;
  Options o = quick_options(srv.port(), hard);
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const int conns_before = srv.connections.load();
  srv.mute_next();
  EXPECT_EQ(putrootfh_within(*e, 20, "on a connection the server no longer answers"), 0)
      << "the call failed instead of going to a new connection";
  EXPECT_GE(srv.swallowed(), 1) << "the server never went silent: the case is not made";
  EXPECT_GT(srv.connections.load(), conns_before) << "no new connection";
  EXPECT_GE(e->stats().replays, 1u);
  EXPECT_EQ(e->shutdown(), 0);
}

TEST(Nfs41BrokenServer, HardMountSilentConnectionIsDroppedAndTheCallReplayed) {
  silent_connection_then_answered(true);
}

TEST(Nfs41BrokenServer, SoftMountSilentConnectionIsDroppedAndTheCallReplayed) {
  silent_connection_then_answered(false);
}

// SEQUENCE + PUTROOTFH after the server lost its state (restart: BADSESSION, then
// STALE_CLIENTID) and with its first 3 CREATE_SESSIONs unanswered (300 ms timeouts); with
// MUTE_CONNECTION the first one's connection goes silent for good instead.
int call_through_silent_recovery(bool hard, int* swallowed, bool mute_connection = false) {
  nfs41test::FakeNfs41Server srv;
  Options o = quick_options(srv.port(), hard);
  std::unique_ptr<Engine> e;
  std::string why;
  EXPECT_EQ(Engine::open(o, &e, &why), 0) << why;
  if (!e) return -EINVAL;
  srv.restart(NFS4_OK);
  if (mute_connection) srv.mute_at_create_session();
  else srv.swallow_create_sessions(3);
  int rv = putrootfh_within(*e, 30, "for a server that answers again after 1 s");
  *swallowed = srv.create_sessions_swallowed();
  EXPECT_EQ(e->shutdown(), 0);
  return rv;
}

TEST(Nfs41BrokenServer, HardMountWaitsOutAServerSilentDuringRecovery) {
  int swallowed = 0;
  EXPECT_EQ(call_through_silent_recovery(true, &swallowed), 0)
      << "a hard mount failed a call because the server was away during recovery";
  EXPECT_EQ(swallowed, 3) << "the server never went silent: the case is not made";
}

// The connection recovery talks on went silent (no reset): it is dropped at the timeout
// and recovery goes on over a new one, not resent on the dead one forever.
TEST(Nfs41BrokenServer, HardMountRecoveryLeavesAConnectionThatWentSilent) {
  int swallowed = 0;
  EXPECT_EQ(call_through_silent_recovery(true, &swallowed, true), 0);
  EXPECT_EQ(swallowed, 1) << "the server never went silent: the case is not made";
}

TEST(Nfs41BrokenServer, SoftMountFailsACallWhoseRecoveryGetsNoReply) {
  int swallowed = 0;
  EXPECT_LT(call_through_silent_recovery(false, &swallowed), 0);
  EXPECT_GE(swallowed, 1);
}

}  // namespace

namespace {

using Logged = nfs41test::FakeNfs41Server::Logged;

// A soft mount's client id recovery that stops halfway: the server restarted, EXCHANGE_ID
// got a new client id, then CREATE_SESSION got no reply, so the write that ran the
// recovery fails. The next write must finish the recovery (a session, the reclaim, the
// RECLAIM_COMPLETE) and work; it got a session alone, kept the old stateid and failed
// with EIO on STALE_STATEID, and so did every later call on every open file.
TEST(Nfs41BrokenServer, SoftMountFinishesARecoveryThatStoppedAfterExchangeId) {
  nfs41test::FakeNfs41Server srv;
  Options o = quick_options(srv.port(), false);
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const Cred c = e->default_cred();
  Open f;
  ASSERT_EQ(e->open(c, e->root(), "f", true, false, 0644, &f, nullptr), 0);
  ASSERT_EQ(e->write(c, f, 0, 6, "before", FILE_SYNC4, nullptr), 6);
  srv.restart(NFS4_OK);
  srv.swallow_create_sessions(1, true);
  EXPECT_LT(e->write(c, f, 6, 6, "lost!!", FILE_SYNC4, nullptr), 0)
      << "the recovery did not stop halfway: the case is not made";
  EXPECT_EQ(srv.create_sessions_swallowed(), 1);
  EXPECT_EQ(e->write(c, f, 6, 6, "after!", FILE_SYNC4, nullptr), 6)
      << "the file stays unusable after a recovery that stopped halfway";
  EXPECT_EQ(e->write(c, f, 12, 1, "!", FILE_SYNC4, nullptr), 1);
  EXPECT_EQ(srv.data(nfs41test::FakeNfs41Server::file_fh("f")), "beforeafter!!");
  bool reclaimed = false, completed = false;
  for (const Logged& l : srv.log()) {
    if (l.epoch != 1) continue;
    if (l.op == OP_OPEN && l.claim == CLAIM_PREVIOUS && l.status == NFS4_OK) reclaimed = true;
    if (l.op == OP_RECLAIM_COMPLETE && l.status == NFS4_OK) completed = true;
  }
  EXPECT_TRUE(reclaimed) << "the open was not reclaimed after the restart";
  EXPECT_TRUE(completed) << "no RECLAIM_COMPLETE after the restart";
  EXPECT_EQ(e->close(c, f), 0);
  EXPECT_EQ(e->shutdown(), 0);
}

}  // namespace
