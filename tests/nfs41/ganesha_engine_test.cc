// The NFSv4.1 engine against a real nfs-ganesha (started by ganesha_test.sh, which exports
// NFS41_TEST_ADDR, NFS41_TEST_PORT, NFS41_EXPORT_DIR and NFS41_RESTART). Every test runs
// for the io_uring and the epoll loop. Results are checked through the engine and on the
// exported directory itself.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "nfsshim/nfs4/constants.h"
#include "ganesha_env.h"
#include "nfsshim/nfs41/engine.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;
using nfs41test::env;
using nfs41test::ganesha_options;

namespace {

const char* name_of(IoBackend b) { return b == IoBackend::kUring ? "uring" : "epoll"; }


double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Deterministic content: a different stream per file and offset.
void fill(std::vector<char>* buf, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < buf->size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (size_t j = 0; j < 8 && i + j < buf->size(); ++j) (*buf)[i + j] = static_cast<char>(x >> (8 * j));
  }
}

uint64_t fnv(const char* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

uint64_t fnv_file(const std::string& path, uint64_t* size) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> all((std::istreambuf_iterator<char>(f)), {});
  *size = all.size();
  return fnv(all.data(), all.size());
}

std::string prefix() { return "e" + std::to_string(getpid()) + "-"; }

class Nfs41 : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override { ASSERT_FALSE(env("NFS41_TEST_PORT").empty()) << "run through ganesha_test.sh"; }
  std::unique_ptr<Engine> open_engine(int nconnect) {
    std::unique_ptr<Engine> e;
    std::string why;
    int rv = Engine::open(ganesha_options(GetParam(), nconnect), &e, &why);
    EXPECT_EQ(rv, 0) << why;
    if (e) {
      EXPECT_EQ(e->backend(), GetParam());
    }
    return e;
  }
};

// One file per thread: CHUNKS chunks of CHUNK bytes written UNSTABLE (verifiers kept),
// COMMIT, then read back. Checksums compared through the engine and on the server's disk.
struct IntegrityResult {
  double write_mibs = 0, read_mibs = 0;
};
IntegrityResult integrity(Engine& e, const std::string& tag, int threads, size_t chunk, int chunks,
                          const std::function<void(int, int)>& between = nullptr) {
  IntegrityResult res;
  const Cred c = e.default_cred();
  std::vector<Open> files(threads);
  std::vector<std::string> names(threads);
  for (int t = 0; t < threads; ++t) {
    names[t] = prefix() + tag + "-" + std::to_string(t);
    EXPECT_EQ(e.open(c, e.root(), names[t], true, false, 0644, &files[t], nullptr), 0);
  }
  std::vector<uint64_t> sums(threads, 1469598103934665603ull);
  std::atomic<int> failures{0};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ws;
  for (int t = 0; t < threads; ++t) {
    ws.emplace_back([&, t] {
      std::vector<char> buf(chunk);
      for (int k = 0; k < chunks; ++k) {
        if (between) between(t, k);
        fill(&buf, static_cast<uint64_t>(t) * 100000 + k);
        sums[t] = fnv(buf.data(), buf.size(), sums[t]);
        ssize_t n = e.write_committed(c, files[t], uint64_t(k) * chunk, chunk, buf.data());
        if (n != static_cast<ssize_t>(chunk)) {
          ADD_FAILURE() << "write " << names[t] << " chunk " << k << ": " << n;
          ++failures;
          return;
        }
      }
    });
  }
  for (auto& w : ws) w.join();
  double wsec = secs_since(t0);
  res.write_mibs = threads * chunks * (chunk / 1048576.0) / wsec;
  if (failures) return res;

  t0 = std::chrono::steady_clock::now();
  ws.clear();
  std::vector<uint64_t> back(threads, 1469598103934665603ull);
  for (int t = 0; t < threads; ++t) {
    ws.emplace_back([&, t] {
      std::vector<char> buf(chunk);
      for (int k = 0; k < chunks; ++k) {
        ssize_t n = e.read(c, files[t], uint64_t(k) * chunk, chunk, buf.data());
        if (n != static_cast<ssize_t>(chunk)) {
          ADD_FAILURE() << "read " << names[t] << " chunk " << k << ": " << n;
          return;
        }
        back[t] = fnv(buf.data(), buf.size(), back[t]);
      }
    });
  }
  for (auto& w : ws) w.join();
  double rsec = secs_since(t0);
  res.read_mibs = threads * chunks * (chunk / 1048576.0) / rsec;
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(back[t], sums[t]) << names[t] << ": read back differs";
    uint64_t size = 0;
    EXPECT_EQ(fnv_file(env("NFS41_EXPORT_DIR") + "/" + names[t], &size), sums[t])
        << names[t] << ": the server's file differs";
    EXPECT_EQ(size, uint64_t(chunks) * chunk);
    EXPECT_EQ(e.close(c, files[t]), 0);
    EXPECT_EQ(e.remove(c, e.root(), names[t]), 0);
  }
  return res;
}

void print_stats(const char* what, const Stats& s) {
  std::string per;
  for (auto n : s.calls_per_conn) per += std::to_string(n) + " ";
  std::printf("%s: calls=%llu per-conn=[ %s] slots granted=%u peak=%u lease=%us maxreq=%u "
              "retries=%llu replays=%llu reconnects=%llu binds ok=%llu failed=%llu "
              "session-recoveries=%llu clientid-recoveries=%llu reopens=%llu renewals=%llu "
              "resent=%llu read-placed=%llu\n",
              what, (unsigned long long)s.calls, per.c_str(), s.slots_granted, s.peak_slots,
              s.lease_s, s.maxrequest, (unsigned long long)s.retries,
              (unsigned long long)s.replays, (unsigned long long)s.reconnects,
              (unsigned long long)s.binds_ok, (unsigned long long)s.binds_failed,
              (unsigned long long)s.session_recoveries, (unsigned long long)s.clientid_recoveries,
              (unsigned long long)s.reopens, (unsigned long long)s.renewals,
              (unsigned long long)s.resent_bytes, (unsigned long long)s.read_placed_bytes);
}

}  // namespace

TEST_P(Nfs41, SessionGrantAndMetadataOps) {
  auto e = open_engine(1);
  ASSERT_TRUE(e);
  Stats s = e->stats();
  EXPECT_EQ(s.slots_granted, 180u);  // Slot_Table_Size = 180 in ganesha_up.sh
  EXPECT_EQ(s.lease_s, 5u);
  const Cred c = e->default_cred();
  const std::string dir = env("NFS41_EXPORT_DIR");
  const std::string p = prefix() + name_of(GetParam()) + "-meta";

  Attr a;
  ASSERT_EQ(e->getattr(c, e->root(), &a), 0);
  EXPECT_EQ(a.type, 2);  // directory

  Fh d;
  ASSERT_EQ(e->mkdir(c, e->root(), p, 0750, &d, &a), 0);
  EXPECT_EQ(a.mode, 0750u);
  struct stat st;
  ASSERT_EQ(::stat((dir + "/" + p).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));

  Open f;
  ASSERT_EQ(e->open(c, d, "f", true, true, 0640, &f, &a), 0);  // O_EXCL: EXCLUSIVE4_1
  EXPECT_EQ(a.type, 1);
  EXPECT_EQ(a.mode, 0640u);
  // ganesha keeps the create verifier in atime/mtime (and says so in the OPEN's attrset):
  // the engine set both to the server's time afterwards, here and on disk.
  const long now = static_cast<long>(::time(nullptr));
  EXPECT_LE(std::labs(a.atime.tv_sec - now), 60L);
  EXPECT_LE(std::labs(a.mtime.tv_sec - now), 60L);
  ASSERT_EQ(::stat((dir + "/" + p + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_LE(std::labs(st.st_mtime - now), 60L);
  EXPECT_LE(std::labs(st.st_atime - now), 60L);
  EXPECT_FALSE(e->preserves_unlinked(f));  // ganesha never sets PRESERVE_UNLINKED
  Open f2;
  EXPECT_EQ(e->open(c, d, "f", true, true, 0640, &f2, nullptr), -EEXIST);  // another verifier
  const std::string text = "hello nfs41";
  EXPECT_EQ(e->write(c, f, 0, text.size(), text.data(), nfsshim::nfs4::FILE_SYNC4, nullptr),
            static_cast<ssize_t>(text.size()));
  char buf[64] = {};
  EXPECT_EQ(e->read(c, f, 0, sizeof buf, buf), static_cast<ssize_t>(text.size()));  // eof
  EXPECT_EQ(std::string(buf), text);

  Fh looked;
  ASSERT_EQ(e->lookup_path(c, p + "/f", &looked, &a), 0);
  EXPECT_EQ(looked, f->fh);
  EXPECT_EQ(a.size, text.size());
  EXPECT_EQ(e->lookup(c, d, "missing", &looked, nullptr), -ENOENT);
  uint32_t granted = 0;
  EXPECT_EQ(e->access(c, f->fh, nfsshim::nfs4::ACCESS4_READ | nfsshim::nfs4::ACCESS4_MODIFY,
                      &granted), 0);
  EXPECT_EQ(granted, nfsshim::nfs4::ACCESS4_READ | nfsshim::nfs4::ACCESS4_MODIFY);

  SetAttr sa;
  sa.set_size = true;
  sa.size = 5;
  sa.set_mode = true;
  sa.mode = 0600;
  ASSERT_EQ(e->setattr(c, f->fh, sa, &a), 0);
  EXPECT_EQ(a.size, 5u);
  EXPECT_EQ(a.mode, 0600u);
  ASSERT_EQ(::stat((dir + "/" + p + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 5);

  Fh l;
  ASSERT_EQ(e->symlink(c, d, "sl", "f", &l, &a), 0);
  EXPECT_EQ(a.type, 5);
  std::string target;
  ASSERT_EQ(e->readlink(c, l, &target), 0);
  EXPECT_EQ(target, "f");
  ASSERT_EQ(e->link(c, f->fh, d, "hard"), 0);
  ASSERT_EQ(e->rename(c, d, "hard", d, "hard2"), 0);
  ASSERT_EQ(e->getattr(c, f->fh, &a), 0);
  EXPECT_EQ(a.nlink, 2u);

  std::vector<DirEntry> ents;
  ASSERT_EQ(e->readdir(c, d, &ents), 0);
  std::vector<std::string> names;
  for (auto& x : ents) names.push_back(x.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"f", "hard2", "sl"}));

  EXPECT_EQ(e->rmdir(c, e->root(), p), -ENOTEMPTY);
  EXPECT_EQ(e->close(c, f), 0);
  EXPECT_EQ(e->close(c, f), -EBADF);
  for (auto n : {"f", "hard2", "sl"}) EXPECT_EQ(e->remove(c, d, n), 0) << n;
  EXPECT_EQ(e->rmdir(c, e->root(), p), 0);
  EXPECT_NE(::stat((dir + "/" + p).c_str(), &st), 0);

  // Teardown: a file left open is closed, then DESTROY_SESSION and DESTROY_CLIENTID.
  Open left;
  ASSERT_EQ(e->open(c, e->root(), p + "-left", true, false, 0644, &left, nullptr), 0);
  EXPECT_EQ(e->shutdown(), 0);
  EXPECT_EQ(::unlink((dir + "/" + p + "-left").c_str()), 0);
}

// A REMOVE, RENAME, mkdir, symlink or link whose reply was lost with its session (a server
// restart after the server ran it) runs again as a new request in a new session and
// answers NOENT (EXIST): that is the first run's success, not an error for the
// application. The hook throws the reply away and makes a new session on the same,
// running ganesha. Without the lost reply a missing name stays ENOENT; a re-run RENAME
// whose TO is not there stays ENOENT; a name that is not what we made stays EEXIST.
TEST_P(Nfs41, NonIdempotentOpsRunAgainInANewSessionAreDone) {
  auto e = open_engine(2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  const std::string dir = env("NFS41_EXPORT_DIR") + "/";
  const std::string p = prefix() + "rerun-" + name_of(GetParam());
  auto make = [&](const std::string& n) {
    Open f;
    ASSERT_EQ(e->open(c, e->root(), n, true, false, 0644, &f, nullptr), 0) << n;
    ASSERT_EQ(e->write_committed(c, f, 0, 5, "hello"), 5);
    ASSERT_EQ(e->close(c, f), 0);
  };
  struct stat st;

  make(p + "-rm");
  const uint64_t sessions = e->stats().session_recoveries;
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->remove(c, e->root(), p + "-rm"), 0);
  EXPECT_EQ(e->stats().session_recoveries, sessions + 1) << "not run again in a new session";
  EXPECT_EQ(e->stats().resent_done, 1u);
  EXPECT_NE(::stat((dir + p + "-rm").c_str(), &st), 0);

  make(p + "-from");
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->rename(c, e->root(), p + "-from", e->root(), p + "-to"), 0);
  EXPECT_EQ(e->stats().session_recoveries, sessions + 2);
  EXPECT_EQ(e->stats().resent_done, 2u);
  EXPECT_NE(::stat((dir + p + "-from").c_str(), &st), 0);
  ASSERT_EQ(::stat((dir + p + "-to").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 5);

  // FROM never existed and TO is not there: the re-run's NOENT is the answer.
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->rename(c, e->root(), p + "-none", e->root(), p + "-none2"), -ENOENT);
  EXPECT_EQ(e->stats().session_recoveries, sessions + 3);
  // Nothing lost: NOENT is passed on.
  EXPECT_EQ(e->remove(c, e->root(), p + "-rm"), -ENOENT);
  EXPECT_EQ(e->stats().resent_done, 2u);

  // mkdir, symlink, link: the re-run answers EXIST for what the first run made.
  Fh made;
  Attr a;
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->mkdir(c, e->root(), p + "-d", 0755, &made, &a), 0);
  EXPECT_EQ(a.type, 2) << "not a directory's attributes";  // NF4DIR
  ASSERT_EQ(::stat((dir + p + "-d").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(a.fileid, static_cast<uint64_t>(st.st_ino));
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->symlink(c, e->root(), p + "-s", "target-x", nullptr, nullptr), 0);
  char buf[64] = {};
  EXPECT_EQ(::readlink((dir + p + "-s").c_str(), buf, sizeof buf - 1), 8);
  EXPECT_STREQ(buf, "target-x");
  Fh to;
  ASSERT_EQ(e->lookup(c, e->root(), p + "-to", &to, nullptr), 0);
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->link(c, to, e->root(), p + "-l"), 0);
  ASSERT_EQ(::stat((dir + p + "-l").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(e->stats().resent_exist, 3u);
  EXPECT_EQ(e->stats().session_recoveries, sessions + 6);
  // A name that was there before is no success of ours: a symlink to another target
  // made by someone else stays -EEXIST, re-run or not.
  ASSERT_EQ(::symlink("other", (dir + p + "-s2").c_str()), 0);
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->symlink(c, e->root(), p + "-s2", "target-x", nullptr, nullptr), -EEXIST);
  EXPECT_EQ(e->mkdir(c, e->root(), p + "-s2", 0755, nullptr, nullptr), -EEXIST);
  EXPECT_EQ(e->stats().resent_exist, 3u);

  // An O_EXCL lock file or a mkdir lock made (by the same user) before the first run is
  // no success of ours either: both were taken as the first run's (an empty regular file
  // of the caller's own; any directory), two holders of one lock.
  ASSERT_EQ(::close(::open((dir + p + "-lock").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644)), 0);
  ASSERT_EQ(::mkdir((dir + p + "-lockd").c_str(), 0755), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // older than the 1 s margin
  Open lf;
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->open(c, e->root(), p + "-lock", true, true, 0644, &lf, nullptr), -EEXIST)
      << "a re-run O_EXCL open took another's empty lock file as its own";
  e->lose_next_reply_for_test();
  EXPECT_EQ(e->mkdir(c, e->root(), p + "-lockd", 0755, nullptr, nullptr), -EEXIST)
      << "a re-run MKDIR took an existing directory as its own";
  EXPECT_EQ(e->stats().resent_exist, 3u);

  for (auto n : {"-to", "-s", "-l", "-s2", "-lock"}) EXPECT_EQ(e->remove(c, e->root(), p + n), 0) << n;
  EXPECT_EQ(e->rmdir(c, e->root(), p + "-d"), 0);
  EXPECT_EQ(e->rmdir(c, e->root(), p + "-lockd"), 0);
}

// An O_EXCL create (EXCLUSIVE4_1) whose reply was lost with its session runs again in a new
// one: the server finds its verifier and answers OK. A server that died between making
// the file and storing the verifier (ganesha's FSAL_VFS does them in turn) answers EXIST;
// played here by erasing the verifier (the file's times) between the lost reply and the
// re-run. An empty regular file of the caller's own is then the first run's; anyone
// else's file, or one with data, stays EEXIST.
TEST_P(Nfs41, ExclusiveCreateRunAgainWithoutItsVerifierIsDone) {
  auto e = open_engine(2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  const std::string dir = env("NFS41_EXPORT_DIR") + "/";
  const std::string p = prefix() + "xrerun-" + name_of(GetParam());
  const timespec erased[2] = {{1, 0}, {1, 0}};
  struct stat st;
  Open f;
  Attr a;

  e->lose_next_reply_for_test();
  ASSERT_EQ(e->open(c, e->root(), p + "-kept", true, true, 0640, &f, &a), 0);
  EXPECT_EQ(e->close(c, f), 0);
  EXPECT_EQ(e->stats().resent_exist, 0u) << "the verifier was there: the server's own OK";

  const std::string lost = dir + p + "-lost";
  e->lose_next_reply_for_test([&] { EXPECT_EQ(::utimensat(AT_FDCWD, lost.c_str(), erased, 0), 0); });
  ASSERT_EQ(e->open(c, e->root(), p + "-lost", true, true, 0640, &f, &a), 0);
  EXPECT_EQ(e->stats().resent_exist, 1u);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(e->write_committed(c, f, 0, 5, "hello"), 5) << "not opened for writing";
  EXPECT_EQ(e->close(c, f), 0);
  ASSERT_EQ(::stat(lost.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_size, 5);

  // Not ours: another user's empty file, our own file with data.
  for (const std::string n : {"-theirs", "-data"}) {
    const std::string path = dir + p + n;
    std::ofstream(path) << (n == "-data" ? "x" : "");
    if (n == "-theirs") {
      ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    }
    e->lose_next_reply_for_test();
    EXPECT_EQ(e->open(c, e->root(), p + n, true, true, 0640, &f, nullptr), -EEXIST) << n;
  }
  EXPECT_EQ(e->stats().resent_exist, 1u);
  for (auto n : {"-kept", "-lost", "-theirs", "-data"}) EXPECT_EQ(e->remove(c, e->root(), p + n), 0) << n;
}

TEST_P(Nfs41, IntegrityOneConnection) {
  auto e = open_engine(1);
  ASSERT_TRUE(e);
  IntegrityResult r = integrity(*e, std::string("i1-") + name_of(GetParam()), 4, 4u << 20, 6);
  Stats s = e->stats();
  print_stats("nconnect=1", s);
  std::printf("FIGURE nconnect=1 %s: write %.0f MiB/s read %.0f MiB/s (4 threads x 24 MiB) "
              "peak slots %u\n", name_of(GetParam()), r.write_mibs, r.read_mibs, s.peak_slots);
  EXPECT_GT(s.peak_slots, 1u);  // pieces really ran in parallel
  // The 1 MiB READs' data went from the socket into the callers' buffers (checked above).
  EXPECT_GE(s.read_placed_bytes, (96u << 20) / 2);
}

TEST_P(Nfs41, IntegrityEightTrunkedConnections) {
  auto e = open_engine(8);
  ASSERT_TRUE(e);
  IntegrityResult r = integrity(*e, std::string("i8-") + name_of(GetParam()), 4, 4u << 20, 6);
  Stats s = e->stats();
  print_stats("nconnect=8", s);
  std::printf("FIGURE nconnect=8 %s: write %.0f MiB/s read %.0f MiB/s (4 threads x 24 MiB) "
              "peak slots %u\n", name_of(GetParam()), r.write_mibs, r.read_mibs, s.peak_slots);
  // One session, eight connections: the seven later sockets were bound to it, and every
  // connection carried SEQUENCE'd calls of that session.
  EXPECT_EQ(s.binds_ok, 7u);
  EXPECT_EQ(s.binds_failed, 0u);
  ASSERT_EQ(s.calls_per_conn.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_GT(s.calls_per_conn[i], 0u) << "connection " << i;
  EXPECT_EQ(s.session_recoveries, 0u);
  EXPECT_GE(s.read_placed_bytes, (96u << 20) / 2);
}

TEST_P(Nfs41, IdleLongerThanTwiceTheLease) {
  auto e = open_engine(2);
  ASSERT_TRUE(e);
  const Cred c = e->default_cred();
  Attr a;
  ASSERT_EQ(e->getattr(c, e->root(), &a), 0);
  uint32_t lease = e->stats().lease_s;
  ASSERT_GT(lease, 0u);
  std::this_thread::sleep_for(std::chrono::seconds(2 * lease + 1));
  EXPECT_EQ(e->getattr(c, e->root(), &a), 0);
  Stats s = e->stats();
  print_stats("idle", s);
  EXPECT_GE(s.renewals, 3u);  // SEQUENCE every lease/3 while idle
  EXPECT_EQ(s.session_recoveries, 0u);  // the lease was kept, not recovered
  EXPECT_EQ(s.clientid_recoveries, 0u);
}

TEST_P(Nfs41, ConnectionDroppedMidRun) {
  auto e = open_engine(4);
  ASSERT_TRUE(e);
  std::atomic<bool> dropped{false};
  uint64_t before = 0;
  integrity(*e, std::string("drop-") + name_of(GetParam()), 4, 2u << 20, 8, [&](int t, int k) {
    if (t == 0 && k == 2 && !dropped.exchange(true)) {
      // Connection 1 goes down right after its next call is sent (other writers are busy).
      before = e->stats().calls_per_conn[1];
      e->drop_connection_for_test(1, true);
    }
  });
  ASSERT_TRUE(dropped);
  // The dropped connection comes back, bound to the same session, and carries calls again.
  const Cred c = e->default_cred();
  uint64_t after = 0;
  for (int i = 0; i < 200 && after <= before + 4; ++i) {
    std::vector<std::thread> ts;
    for (int j = 0; j < 8; ++j) {
      ts.emplace_back([&] {
        Attr mine;
        EXPECT_EQ(e->getattr(c, e->root(), &mine), 0);
      });
    }
    for (auto& t : ts) t.join();
    after = e->stats().calls_per_conn[1];
  }
  Stats s = e->stats();
  print_stats("drop", s);
  EXPECT_GE(s.reconnects, 1u);
  EXPECT_GE(s.binds_ok, 4u);  // 3 at start + the rebind
  EXPECT_GE(s.replays, 1u);   // in-flight calls went again on their slot
  EXPECT_GT(after, before + 4);
  EXPECT_EQ(s.session_recoveries, 0u);  // the session survived
}

TEST_P(Nfs41, ServerRestartedMidRun) {
  const std::string restart = env("NFS41_RESTART");
  ASSERT_FALSE(restart.empty());
  auto e = open_engine(2);
  ASSERT_TRUE(e);
  std::atomic<bool> done{false};
  std::thread restarter;
  integrity(*e, std::string("restart-") + name_of(GetParam()), 2, 2u << 20, 8, [&](int t, int k) {
    if (t == 0 && k == 3 && !done.exchange(true)) {
      // kill -9 and start again while both writers are busy.
      restarter = std::thread([&] { EXPECT_EQ(std::system(restart.c_str()), 0); });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  if (restarter.joinable()) restarter.join();
  Stats s = e->stats();
  print_stats("restart", s);
  EXPECT_GE(s.clientid_recoveries, 1u);
  EXPECT_GE(s.reopens, 2u);
}

// Soft: with the server gone, a call fails with EIO after (retrans + 1) timeouts instead of
// hanging; once the server is back (restarted: new session, new client id) calls work.
TEST_P(Nfs41, SoftMountGivesEioWhileTheServerIsDownThenRecovers) {
  const std::string stop = env("NFS41_STOP"), restart = env("NFS41_RESTART");
  ASSERT_FALSE(stop.empty());
  Options o = ganesha_options(GetParam(), 2);
  o.hard = false;
  o.timeout_ms = 1000;
  o.retrans = 1;
  std::unique_ptr<Engine> e;
  std::string why;
  ASSERT_EQ(Engine::open(o, &e, &why), 0) << why;
  const Cred c = e->default_cred();
  Attr a;
  ASSERT_EQ(e->getattr(c, e->root(), &a), 0);
  ASSERT_EQ(std::system(stop.c_str()), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(e->getattr(c, e->root(), &a), -EIO);
  double took = secs_since(t0);
  EXPECT_GE(took, 1.0);
  EXPECT_LT(took, 10.0);
  ASSERT_EQ(std::system(restart.c_str()), 0);
  int rv = -EIO;
  for (int i = 0; i < 20 && rv != 0; ++i) rv = e->getattr(c, e->root(), &a);
  EXPECT_EQ(rv, 0);
  Stats s = e->stats();
  print_stats("soft", s);
  std::printf("soft getattr with the server down failed after %.1f s\n", took);
  EXPECT_GE(s.timeouts, 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41, ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(name_of(i.param));
                         });
