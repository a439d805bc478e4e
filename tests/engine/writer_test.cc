// UnstableWriter (libshim/src/nfs/writer.cc) against a fake server that loses its
// uncommitted data on a restart and then answers with a new verifier: overlapping writes,
// restarts between them and a failing COMMIT must still leave the file as the caller wrote
// it, and the WRITEs must be sent from the writer's own kept copy (OWNER). The real engines
// run it against nfs-ganesha in engine_test, chaos_test and the FUSE tests.
// UnstableLimit (the mount-wide bound, unstable_limit.h) is tested here with the same fake.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nfsshim/nfs/engine.h"

using namespace nfsshim::nfs;

namespace {

constexpr size_t kWsize = 1 << 16;  // the fake's pieces: one verifier per 64 KiB
constexpr int kFileSync = 2;        // Engine::write's STABLE values: 0 UNSTABLE, 2 FILE_SYNC

// A file on a server with a write cache: UNSTABLE data is lost by a restart, COMMIT and
// FILE_SYNC make it stable.
struct FakeServer {
  std::string stable, cache;
  WriteVerf verf = 1;
  int fail_commits = 0;
  int fail_sync_writes = 0;  // FILE_SYNC WRITEs (the re-sends) to fail with EIO
  bool answers_file_sync = false;  // writes UNSTABLE WRITEs stably too and says so
  size_t unstable_bytes = 0, sync_bytes = 0;
  int commits = 0;
  Cred commit_cred;                // of the last COMMIT
  std::function<void()> on_commit;  // called first by each COMMIT (to hold one up)
  std::string why_bad;  // set when the writer broke its promise about OWNER

  void put(std::string* f, uint64_t off, const char* buf, size_t len) {
    if (f->size() < off + len) f->resize(off + len, '\0');
    std::memcpy(&(*f)[off], buf, len);
  }
  std::mutex mu;  // a real server serves a WRITE and a COMMIT at once; on_commit runs outside

  ssize_t write(uint64_t off, size_t len, const char* buf, int stable_how,
                std::vector<Engine::PieceVerf>* verfs, const std::shared_ptr<const void>& owner) {
    std::lock_guard<std::mutex> g(mu);
    // The data must lie inside the copy OWNER keeps: what an in-place engine sends from.
    const auto* kept = static_cast<const std::string*>(owner.get());
    if (!kept || buf < kept->data() || buf + len > kept->data() + kept->size())
      why_bad = "WRITE data is not inside its owner's copy";
    if (stable_how == kFileSync && fail_sync_writes > 0) {
      --fail_sync_writes;
      return -EIO;
    }
    for (size_t done = 0; done < len; done += kWsize) {
      size_t n = std::min(kWsize, len - done);
      put(&cache, off + done, buf + done, n);
      bool now_stable = stable_how == kFileSync || answers_file_sync;
      if (now_stable) {
        put(&stable, off + done, buf + done, n);
        sync_bytes += n;
      } else {
        unstable_bytes += n;
      }
      if (verfs) verfs->push_back({off + done, static_cast<uint32_t>(n), verf, now_stable});
    }
    return static_cast<ssize_t>(len);
  }
  int commit(const Cred& c, WriteVerf* v) {
    if (on_commit) on_commit();
    std::lock_guard<std::mutex> g(mu);
    ++commits;
    commit_cred = c;
    if (fail_commits > 0) {
      --fail_commits;
      return -EIO;
    }
    stable = cache;
    *v = verf;
    return 0;
  }
  void restart() {
    std::lock_guard<std::mutex> g(mu);
    cache = stable;  // the uncommitted data is gone
    ++verf;
  }
};

// Holds the first COMMIT a fake server receives until release() (BEFORE, if any, runs
// first inside it); later COMMITs pass.
struct CommitGate {
  std::mutex mu;
  std::condition_variable cv;
  bool held = false, released = false;
  void hold_first(FakeServer* s, std::function<void()> before = nullptr) {
    s->on_commit = [this, before] {
      std::unique_lock<std::mutex> g(mu);
      if (held) return;
      held = true;
      if (before) before();
      cv.notify_all();
      cv.wait(g, [&] { return released; });
    };
  }
  bool wait_held() {
    std::unique_lock<std::mutex> g(mu);
    return cv.wait_for(g, std::chrono::seconds(20), [&] { return held; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> g(mu);
      released = true;
    }
    cv.notify_all();
  }
};

UnstableWriter::WriteFn write_fn(FakeServer* s) {
  return [s](const Cred&, uint64_t off, size_t len, const char* buf, int stable,
             std::vector<Engine::PieceVerf>* verfs, const std::shared_ptr<const void>& owner) {
    return s->write(off, len, buf, stable, verfs, owner);
  };
}

UnstableWriter::CommitFn commit_fn(FakeServer* s) {
  return [s](const Cred& c, WriteVerf* v) { return s->commit(c, v); };
}

UnstableWriter make_writer(FakeServer* s, size_t max_retained = 64u << 20) {
  return UnstableWriter(write_fn(s), commit_fn(s), max_retained);
}

std::string pattern(size_t len, uint32_t seed) {
  std::string d(len, '\0');
  std::mt19937 rng(seed);
  for (auto& ch : d) ch = static_cast<char>(rng());
  return d;
}

void put_model(std::string* f, uint64_t off, const std::string& d) {
  if (f->size() < off + d.size()) f->resize(off + d.size(), '\0');
  std::memcpy(&(*f)[off], d.data(), d.size());
}

// 20 rounds of 40 random overlapping writes with restarts and COMMITs between them; the
// server answers one write in FILE_SYNC_ONE_IN (never if 0) FILE_SYNC. The file must end
// as written, stable on the server.
void random_writes_leave_what_was_written(uint32_t seed, uint32_t file_sync_one_in) {
  std::mt19937 rng(seed);
  for (int round = 0; round < 20; ++round) {
    FakeServer srv;
    UnstableWriter w = make_writer(&srv);
    std::string model;
    for (int i = 0; i < 40; ++i) {
      uint64_t off = rng() % (1 << 20);
      std::string d = pattern(1 + rng() % (3 * kWsize), rng());
      srv.answers_file_sync = file_sync_one_in > 0 && rng() % file_sync_one_in == 0;
      ASSERT_EQ(w.write(Cred{}, off, d.data(), d.size()), static_cast<ssize_t>(d.size()));
      put_model(&model, off, d);
      if (rng() % 8 == 0) srv.restart();
      if (rng() % 10 == 0) {
        ASSERT_EQ(w.commit(Cred{}), 0);
      }
    }
    ASSERT_EQ(w.commit(Cred{}), 0);
    EXPECT_EQ(w.retained_bytes(), 0u);
    EXPECT_EQ(srv.why_bad, "");
    EXPECT_EQ(w.stable_bytes() > 0, file_sync_one_in > 0);
    // Stable on the server, and exactly the caller's bytes (the model's zero gaps too).
    ASSERT_EQ(srv.stable.size(), model.size()) << "round " << round;
    EXPECT_TRUE(srv.stable == model) << "round " << round;
    srv.restart();
    EXPECT_TRUE(srv.cache == model) << "round " << round;
  }
}

TEST(UnstableWriter, OverlappingWritesAndRestartsLeaveWhatWasWritten) {
  random_writes_leave_what_was_written(42, 0);
}

// The same with a server that answers some WRITEs FILE_SYNC: those are not kept, and the
// older bytes they overwrote are not re-sent over them after a restart.
TEST(UnstableWriter, MixedStableAndUnstableRepliesLeaveWhatWasWritten) {
  random_writes_leave_what_was_written(7, 3);
}

// A server that writes everything stably at once (FILE_SYNC replies) gets no COMMIT, and
// nothing is kept for one.
TEST(UnstableWriter, FileSyncRepliesAreNeitherKeptNorCommitted) {
  FakeServer srv;
  srv.answers_file_sync = true;
  UnstableWriter w = make_writer(&srv, 2 * kWsize);  // a bound that kept data would pass
  std::string a = pattern(5 * kWsize + 3, 8);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  ASSERT_EQ(w.write(Cred{}, 2 * kWsize, a.data(), kWsize), static_cast<ssize_t>(kWsize));
  EXPECT_EQ(w.retained_bytes(), 0u);
  EXPECT_EQ(w.stable_bytes(), a.size() + kWsize);
  ASSERT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(srv.commits, 0);
  srv.restart();
  std::string model = a;
  model.replace(2 * kWsize, kWsize, a.substr(0, kWsize));
  EXPECT_EQ(srv.cache, model);
}

// Kept UNSTABLE bytes overwritten by a WRITE answered FILE_SYNC: after a restart only the
// rest is re-sent; the newer stable bytes stay.
TEST(UnstableWriter, AStableOverwriteIsNotUndoneByAResend) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv);
  std::string a = pattern(3 * kWsize, 9), b = pattern(kWsize, 10);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  srv.answers_file_sync = true;
  ASSERT_EQ(w.write(Cred{}, kWsize, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  EXPECT_EQ(w.retained_bytes(), 2 * kWsize);
  srv.restart();  // a's UNSTABLE bytes are gone, b is on stable storage
  ASSERT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(w.resent_bytes(), 2 * kWsize);
  std::string model = a;
  model.replace(kWsize, kWsize, b);
  EXPECT_EQ(srv.stable, model);
}

// Writes go on while a COMMIT is in flight. Here the server restarts before answering it:
// the re-send of the first write's lost bytes leaves out what a write made meanwhile.
TEST(UnstableWriter, WritesDuringACommitGoOnAndAreNotUndoneByItsResend) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv);
  std::string a = pattern(3 * kWsize, 11), b = pattern(kWsize, 12), c = pattern(kWsize, 13);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  CommitGate gate;
  gate.hold_first(&srv, [&] { srv.restart(); });  // A is lost
  std::thread committer([&] { EXPECT_EQ(w.commit(Cred{}), 0); });
  ASSERT_TRUE(gate.wait_held());
  std::atomic<bool> written{false};
  std::thread writer([&] {
    EXPECT_EQ(w.write(Cred{}, kWsize, b.data(), b.size()), static_cast<ssize_t>(b.size()));
    EXPECT_EQ(w.write(Cred{}, 5 * kWsize, c.data(), c.size()), static_cast<ssize_t>(c.size()));
    written = true;
  });
  for (int i = 0; i < 2000 && !written; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(written.load()) << "the writes waited for the COMMIT";
  gate.release();
  writer.join();
  committer.join();
  EXPECT_EQ(w.resent_bytes(), 2 * kWsize);  // A without B's range
  EXPECT_EQ(w.retained_bytes(), 2 * kWsize);  // B and C, for the next COMMIT
  ASSERT_EQ(w.commit(Cred{}), 0);
  std::string model = a;
  put_model(&model, kWsize, b);
  put_model(&model, 5 * kWsize, c);
  EXPECT_EQ(srv.stable, model);
  EXPECT_EQ(srv.why_bad, "");
}

// One thread writes (so the model is exact) while another commits, restarts the server and
// fails COMMITs at random: the file ends as written.
TEST(UnstableWriter, CommitsRestartsAndFailuresBesideAWriterLeaveWhatWasWritten) {
  for (int round = 0; round < 10; ++round) {
    FakeServer srv;
    UnstableWriter w = make_writer(&srv, 4 * kWsize);  // the writer commits on the way too
    std::string model;
    std::atomic<bool> done{false};
    std::thread other([&, round] {
      std::mt19937 rng(100 + round);
      while (!done) {
        switch (rng() % 4) {
          case 0: srv.restart(); break;
          case 1: {
            std::lock_guard<std::mutex> g(srv.mu);
            srv.fail_commits = 1;
            break;
          }
          default: break;
        }
        int rv = w.commit(Cred{});
        EXPECT_TRUE(rv == 0 || rv == -EIO) << rv;
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      }
    });
    std::mt19937 rng(round);
    for (int i = 0; i < 300; ++i) {
      uint64_t off = rng() % (16 * kWsize);
      std::string d = pattern(1 + rng() % (2 * kWsize), rng());
      {
        std::lock_guard<std::mutex> g(srv.mu);
        srv.answers_file_sync = rng() % 5 == 0;
      }
      ssize_t n = w.write(Cred{}, off, d.data(), d.size());
      // A write that commits on the way may report that COMMIT's failure; its data is kept.
      ASSERT_TRUE(n == static_cast<ssize_t>(d.size()) || n == -EIO) << n;
      put_model(&model, off, d);
    }
    done = true;
    other.join();
    srv.fail_commits = 0;
    ASSERT_EQ(w.commit(Cred{}), 0);
    EXPECT_EQ(w.retained_bytes(), 0u);
    ASSERT_EQ(srv.stable.size(), model.size()) << "round " << round;
    EXPECT_TRUE(srv.stable == model) << "round " << round;
    EXPECT_EQ(srv.why_bad, "");
  }
}

TEST(UnstableWriter, RetainedBytesCountEachOffsetOnce) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv);
  std::string a = pattern(3 * kWsize, 1), b = pattern(kWsize, 2);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  EXPECT_EQ(w.retained_bytes(), 3 * kWsize);
  // Into the middle of the first write: it is cut around the new bytes, not counted twice.
  ASSERT_EQ(w.write(Cred{}, kWsize + 100, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  EXPECT_EQ(w.retained_bytes(), 3 * kWsize);
  // Past the end: the union grows by what sticks out.
  ASSERT_EQ(w.write(Cred{}, 3 * kWsize - 10, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  EXPECT_EQ(w.retained_bytes(), 3 * kWsize - 10 + kWsize);
  ASSERT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(w.retained_bytes(), 0u);
}

TEST(UnstableWriter, FailedCommitKeepsTheDataForTheNextOne) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv);
  std::string d = pattern(2 * kWsize + 7, 3);
  ASSERT_EQ(w.write(Cred{}, 5, d.data(), d.size()), static_cast<ssize_t>(d.size()));
  srv.fail_commits = 1;
  EXPECT_EQ(w.commit(Cred{}), -EIO);
  EXPECT_EQ(w.retained_bytes(), d.size());
  srv.restart();  // the data written is gone from the server
  ASSERT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(w.resent_bytes(), d.size());
  EXPECT_EQ(srv.stable.substr(5), d);
  EXPECT_EQ(srv.why_bad, "");
}

// A re-send that fails (the server went away again) keeps what is not stable yet: the next
// COMMIT sends it, nothing is dropped.
TEST(UnstableWriter, AFailedResendKeepsWhatIsNotStableYet) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv);
  std::string a = pattern(kWsize, 5), b = pattern(kWsize, 6);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  ASSERT_EQ(w.write(Cred{}, 4 * kWsize, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  srv.restart();
  srv.fail_sync_writes = 1;
  EXPECT_EQ(w.commit(Cred{}), -EIO);
  EXPECT_EQ(w.retained_bytes(), 2 * kWsize);
  ASSERT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(w.retained_bytes(), 0u);
  ASSERT_EQ(srv.stable.size(), 5 * kWsize);
  EXPECT_EQ(srv.stable.substr(0, kWsize), a);
  EXPECT_EQ(srv.stable.substr(4 * kWsize), b);
}

// What a server may have lost by a restart (data kept from before the engine saw it come
// back: the generation) is told apart from what was written since, and put back by
// commit_if_restarted(); a failed re-send leaves it flagged for the next try.
TEST(UnstableWriter, DataWrittenBeforeARestartIsFlaggedUntilCommitted) {
  FakeServer srv;
  std::atomic<uint64_t> gen{1};
  UnstableWriter w(write_fn(&srv), commit_fn(&srv), 64u << 20, nullptr, [&gen] { return gen.load(); });
  std::string a = pattern(kWsize, 7), b = pattern(kWsize, 8);
  ASSERT_EQ(w.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  EXPECT_FALSE(w.kept_before_restart());
  EXPECT_EQ(w.commit_if_restarted(), 0);
  EXPECT_EQ(srv.commits, 0);  // nothing sent while no restart was seen
  srv.restart();
  ++gen;
  EXPECT_TRUE(w.kept_before_restart());
  ASSERT_EQ(w.write(Cred{}, 2 * kWsize, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  srv.fail_sync_writes = 1;  // the re-send fails once: still flagged
  EXPECT_EQ(w.commit_if_restarted(), -EIO);
  EXPECT_TRUE(w.kept_before_restart());
  EXPECT_EQ(w.commit_if_restarted(), 1);
  EXPECT_FALSE(w.kept_before_restart());
  EXPECT_EQ(w.retained_bytes(), 0u);
  EXPECT_EQ(srv.stable.substr(0, kWsize), a);
  EXPECT_EQ(srv.stable.substr(2 * kWsize), b);
  // Written after the restart was seen: not flagged, even while older data was kept.
  ASSERT_EQ(w.write(Cred{}, 0, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  EXPECT_FALSE(w.kept_before_restart());
  EXPECT_EQ(w.commit_if_restarted(), 0);
  // Without a generation (a writer that was given none): never.
  UnstableWriter plain = make_writer(&srv);
  ASSERT_EQ(plain.write(Cred{}, 0, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  ++gen;
  EXPECT_FALSE(plain.kept_before_restart());
  EXPECT_EQ(w.commit(Cred{}), 0);
  EXPECT_EQ(plain.commit(Cred{}), 0);
}

TEST(UnstableWriter, TheBoundCommitsOnTheWay) {
  FakeServer srv;
  UnstableWriter w = make_writer(&srv, 4 * kWsize);
  std::string d = pattern(kWsize, 4);
  for (uint64_t i = 0; i < 10; ++i) {
    ASSERT_EQ(w.write(Cred{}, i * kWsize, d.data(), d.size()), static_cast<ssize_t>(d.size()));
    EXPECT_LE(w.retained_bytes(), 4 * kWsize);
  }
  EXPECT_GE(srv.stable.size(), 5 * kWsize);  // committed before the end
}

// --- UnstableLimit: the mount-wide bound -------------------------------------------------

using std::chrono::milliseconds;
constexpr milliseconds kNoAge{3600 * 1000};

Cred cred_of(uint32_t uid) {
  Cred c;
  c.uid = uid;
  c.gid = uid;
  return c;
}

// One file of a mount: its own fake server and a writer counted in LIMIT.
struct LimitedFile {
  FakeServer srv;
  std::unique_ptr<UnstableWriter> w;
  LimitedFile(UnstableLimit* limit) {
    w = std::make_unique<UnstableWriter>(write_fn(&srv), commit_fn(&srv), UnstableWriter::kMaxRetained, limit);
  }
  void write_chunks(uint32_t uid, uint64_t first, int n) {
    std::string d = pattern(kWsize, static_cast<uint32_t>(first));
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(w->write(cred_of(uid), (first + i) * kWsize, d.data(), d.size()), static_cast<ssize_t>(kWsize));
  }
};

TEST(UnstableLimit, OverTheBoundTheWriteCommitsTheLargestFirst) {
  UnstableLimit limit(4 * kWsize, kNoAge);
  LimitedFile a(&limit), b(&limit), c(&limit);
  a.write_chunks(1001, 0, 3);
  b.write_chunks(1002, 0, 1);
  EXPECT_EQ(limit.total_bytes(), 4 * kWsize);  // at the bound, not over: nothing committed
  EXPECT_EQ(a.srv.commits + b.srv.commits, 0);
  c.write_chunks(1003, 0, 1);  // over: A, the largest, is committed with A's own credentials
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(a.srv.commit_cred.uid, 1001u);
  EXPECT_EQ(a.srv.stable.size(), 3 * kWsize);
  EXPECT_EQ(a.w->retained_bytes(), 0u);
  EXPECT_EQ(b.w->retained_bytes(), kWsize);
  EXPECT_EQ(c.w->retained_bytes(), kWsize);
  EXPECT_EQ(b.srv.commits + c.srv.commits, 0);
  EXPECT_EQ(limit.total_bytes(), 2 * kWsize);
  UnstableLimit::Stats st = limit.stats();
  EXPECT_EQ(st.pressure_commits, 1u);
  EXPECT_EQ(st.peak_bytes, 5 * kWsize);
  EXPECT_EQ(st.age_commits, 0u);
}

TEST(UnstableLimit, AFileThatCannotCommitIsNotEveryWritesFirstPick) {
  UnstableLimit limit(2 * kWsize, kNoAge);
  LimitedFile a(&limit), b(&limit);
  a.write_chunks(1, 0, 2);
  a.srv.fail_commits = 100;  // e.g. removed on the server by another client (ESTALE)
  b.write_chunks(2, 0, 1);   // over: A fails; the write itself still succeeds
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(a.w->retained_bytes(), 2 * kWsize);  // kept for the next try
  EXPECT_EQ(limit.stats().failed_commits, 1u);
  b.write_chunks(2, 1, 1);   // over again: B goes, A is not asked again so soon
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(b.srv.commits, 1);
  EXPECT_EQ(b.w->retained_bytes(), 0u);
  EXPECT_EQ(b.srv.stable.size(), 2 * kWsize);
}

// At unmount (commit_all) a file whose last COMMIT failed a moment ago is tried again:
// the daemon is going, there is no later try. It was skipped until MAX_AGE had passed,
// and its answered data was dropped with its writer unmade stable, without a word.
TEST(UnstableLimit, UnmountCommitsAFileWhoseCommitFailedJustBefore) {
  UnstableLimit limit(2 * kWsize, kNoAge);
  LimitedFile a(&limit), b(&limit);
  a.write_chunks(1, 0, 2);
  a.srv.fail_commits = 1;
  b.write_chunks(2, 0, 1);  // over the bound: A's COMMIT fails, A waits MAX_AGE for the next
  ASSERT_EQ(a.srv.commits, 1);
  ASSERT_EQ(a.w->retained_bytes(), 2 * kWsize);
  limit.commit_all();
  EXPECT_EQ(a.srv.commits, 2) << "the unmount did not try the failed file again";
  EXPECT_EQ(a.w->retained_bytes(), 0u);
  EXPECT_EQ(a.srv.stable.size(), 2 * kWsize);
  EXPECT_EQ(b.w->retained_bytes(), 0u);
  EXPECT_EQ(limit.total_bytes(), 0u);
}

// A file that still cannot commit at unmount is tried once, not forever.
TEST(UnstableLimit, UnmountTriesAFailingFileOnce) {
  UnstableLimit limit(64u << 20, kNoAge);
  LimitedFile a(&limit);
  a.write_chunks(1, 0, 1);
  a.srv.fail_commits = 100;
  limit.commit_all();
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(a.w->retained_bytes(), kWsize);
}

TEST(UnstableLimit, DataKeptLongerThanMaxAgeIsCommittedWithoutAnyCall) {
  const milliseconds age(300);
  UnstableLimit limit(64u << 20, age);
  LimitedFile a(&limit), idle(&limit);
  const auto start = std::chrono::steady_clock::now();
  a.write_chunks(4242, 0, 2);
  // Counted by the limit once the COMMIT returned (its lock orders what the COMMIT did
  // before what this thread reads next).
  while (limit.stats().age_commits == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
    std::this_thread::sleep_for(milliseconds(5));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(a.w->retained_bytes(), 0u);
  EXPECT_GE(waited, age);  // not before its time
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(a.srv.commit_cred.uid, 4242u);
  EXPECT_EQ(a.srv.stable.size(), 2 * kWsize);
  EXPECT_EQ(idle.srv.commits, 0);  // nothing kept: nothing to commit
  EXPECT_EQ(limit.stats().age_commits, 1u);
}

// A file closed while the limit commits it waits for that COMMIT (the writer's callbacks
// use the file's state): destroying the writer must not finish before it.
TEST(UnstableLimit, DestroyingAWriterWaitsForTheLimitsCommitOfIt) {
  UnstableLimit limit(64u << 20, milliseconds(20));
  LimitedFile a(&limit);
  CommitGate gate;
  gate.hold_first(&a.srv);
  a.write_chunks(7, 0, 1);
  ASSERT_TRUE(gate.wait_held());
  std::atomic<bool> destroyed{false};
  std::thread closer([&] {
    a.w.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(destroyed.load());
  gate.release();
  closer.join();
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(limit.total_bytes(), 0u);
}

// Writes go on during a COMMIT: what they leave kept is as old as that COMMIT's end, not
// as the data the COMMIT took (else the age thread would commit it again at its next tick).
TEST(UnstableLimit, DataWrittenDuringACommitAgesFromThatCommitsEnd) {
  const milliseconds age(1000);
  UnstableLimit limit(64u << 20, age);
  LimitedFile a(&limit);
  CommitGate gate;
  gate.hold_first(&a.srv);
  a.write_chunks(5, 0, 1);
  ASSERT_TRUE(gate.wait_held());  // the age thread's COMMIT of it, after AGE
  a.write_chunks(5, 1, 1);
  std::this_thread::sleep_for(milliseconds(1500));
  gate.release();
  std::this_thread::sleep_for(milliseconds(500));  // the thread ticks every 250 ms
  EXPECT_EQ(limit.stats().age_commits, 1u);
  EXPECT_EQ(a.w->retained_bytes(), kWsize);
  const auto start = std::chrono::steady_clock::now();
  while (limit.stats().age_commits < 2 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(limit.stats().age_commits, 2u);  // in its time
  EXPECT_EQ(a.w->retained_bytes(), 0u);
  EXPECT_EQ(a.srv.commits, 2);
}

// Two writes that pass the bound while the first one's COMMIT is under way: the second
// waits for it instead of committing another file, since the total will be under the
// bound once that COMMIT ends (each committed another file before: over many writes in
// flight together, every file of the mount, and nothing was left for commit_secs).
TEST(UnstableLimit, WritesOverTheBoundTogetherDoNotCommitAFileEach) {
  UnstableLimit limit(4 * kWsize, kNoAge);
  LimitedFile a(&limit), b(&limit), c(&limit), d(&limit);
  a.write_chunks(1, 0, 3);
  b.write_chunks(2, 0, 1);  // at the bound
  CommitGate gate;
  gate.hold_first(&a.srv);
  std::thread first([&] { c.write_chunks(3, 0, 1); });  // over: commits A, held up
  ASSERT_TRUE(gate.wait_held());
  std::thread second([&] { d.write_chunks(4, 0, 1); });  // 6 kept, 3 of them being committed
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(b.srv.commits + c.srv.commits + d.srv.commits, 0);
  gate.release();
  first.join();
  second.join();
  EXPECT_EQ(a.srv.commits, 1);
  EXPECT_EQ(b.srv.commits + c.srv.commits + d.srv.commits, 0);
  EXPECT_EQ(limit.total_bytes(), 3 * kWsize);
  EXPECT_EQ(limit.stats().pressure_commits, 1u);
}

// Many writers at once: what is kept stays within the bound plus one write per writer (each
// adds its own before it relieves), and every byte ends up stable.
TEST(UnstableLimit, ParallelWritersStayNearTheBound) {
  constexpr int kThreads = 8, kChunks = 48;
  UnstableLimit limit(6 * kWsize, kNoAge);
  std::vector<std::unique_ptr<LimitedFile>> files;
  for (int t = 0; t < kThreads; ++t) files.push_back(std::make_unique<LimitedFile>(&limit));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { files[t]->write_chunks(100 + t, 0, kChunks); });
  for (auto& th : threads) th.join();
  UnstableLimit::Stats st = limit.stats();
  EXPECT_LE(st.peak_bytes, 6 * kWsize + kThreads * kWsize);
  EXPECT_GT(st.pressure_commits, 0u);
  EXPECT_LE(limit.total_bytes(), 6 * kWsize);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(files[t]->w->commit(cred_of(100 + t)), 0);
    EXPECT_EQ(files[t]->srv.stable.size(), kChunks * kWsize) << t;
    EXPECT_EQ(files[t]->srv.why_bad, "");
  }
  EXPECT_EQ(limit.total_bytes(), 0u);
}

}  // namespace
