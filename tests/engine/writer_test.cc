// UnstableWriter (libshim/src/nfs/writer.cc) against a fake server that loses its
// uncommitted data on a restart and then answers with a new verifier: overlapping writes,
// restarts between them and a failing COMMIT must still leave the file as the caller wrote
// it, and the WRITEs must be sent from the writer's own kept copy (OWNER). The real engines
// run it against nfs-ganesha in engine_test, chaos_test and the FUSE tests.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
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
  size_t unstable_bytes = 0, sync_bytes = 0;
  std::string why_bad;  // set when the writer broke its promise about OWNER

  void put(std::string* f, uint64_t off, const char* buf, size_t len) {
    if (f->size() < off + len) f->resize(off + len, '\0');
    std::memcpy(&(*f)[off], buf, len);
  }
  ssize_t write(uint64_t off, size_t len, const char* buf, int stable_how,
                std::vector<Engine::PieceVerf>* verfs, const std::shared_ptr<const void>& owner) {
    // The data must lie inside the copy OWNER keeps: what an in-place engine sends from.
    const auto* kept = static_cast<const std::string*>(owner.get());
    if (!kept || buf < kept->data() || buf + len > kept->data() + kept->size())
      why_bad = "WRITE data is not inside its owner's copy";
    for (size_t done = 0; done < len; done += kWsize) {
      size_t n = std::min(kWsize, len - done);
      put(&cache, off + done, buf + done, n);
      if (stable_how == kFileSync) {
        put(&stable, off + done, buf + done, n);
        sync_bytes += n;
      } else {
        unstable_bytes += n;
      }
      if (verfs) verfs->push_back({off + done, static_cast<uint32_t>(n), verf});
    }
    return static_cast<ssize_t>(len);
  }
  int commit(WriteVerf* v) {
    if (fail_commits > 0) {
      --fail_commits;
      return -EIO;
    }
    stable = cache;
    *v = verf;
    return 0;
  }
  void restart() {
    cache = stable;  // the uncommitted data is gone
    ++verf;
  }
};

UnstableWriter make_writer(FakeServer* s, size_t max_retained = 64u << 20) {
  return UnstableWriter(
      [s](const Cred&, uint64_t off, size_t len, const char* buf, int stable,
          std::vector<Engine::PieceVerf>* verfs, const std::shared_ptr<const void>& owner) {
        return s->write(off, len, buf, stable, verfs, owner);
      },
      [s](const Cred&, WriteVerf* v) { return s->commit(v); }, max_retained);
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

TEST(UnstableWriter, OverlappingWritesAndRestartsLeaveWhatWasWritten) {
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    FakeServer srv;
    UnstableWriter w = make_writer(&srv);
    std::string model;
    for (int i = 0; i < 40; ++i) {
      uint64_t off = rng() % (1 << 20);
      std::string d = pattern(1 + rng() % (3 * kWsize), rng());
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
    // Stable on the server, and exactly the caller's bytes (the model's zero gaps too).
    ASSERT_EQ(srv.stable.size(), model.size()) << "round " << round;
    EXPECT_TRUE(srv.stable == model) << "round " << round;
    srv.restart();
    EXPECT_TRUE(srv.cache == model) << "round " << round;
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

}  // namespace
