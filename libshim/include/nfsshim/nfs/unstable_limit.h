// A mount-wide bound on the UNSTABLE data that UnstableWriters keep for COMMIT (engine.h).
// Each file keeps what it wrote since its last COMMIT, up to its own bound (16 MiB), so that
// it can re-send it if the server restarts; COMMIT comes at fsync and close. Kafka keeps
// the active segment of every partition open for days and rarely fsyncs: without this a
// broker with hundreds of partitions would keep GiBs. As the kernel client commits its
// unstable pages under writeback pressure and after dirty_expire_centisecs, so does this:
// - over MAX_BYTES in all, the write that passed it commits the files that keep the most
//   (its own included) before it returns, until the total is back under the bound;
// - a thread commits the data of any file that has kept some longer than MAX_AGE (an open
//   file nobody writes), with the credentials of the file's last write.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace nfsshim::nfs {

class UnstableWriter;

class UnstableLimit {
 public:
  struct Stats {
    size_t peak_bytes = 0;          // most kept at once, all files together
    uint64_t pressure_commits = 0;  // COMMITs made to get back under MAX_BYTES
    uint64_t age_commits = 0;       // COMMITs of data older than MAX_AGE
    uint64_t failed_commits = 0;    // of both kinds (the data stays for the next try)
    uint64_t stable_bytes = 0;      // answered FILE_SYNC by the server: never kept
    uint64_t commits = 0;           // COMMITs the files sent, for any reason (fsync, close, ...)
  };
  UnstableLimit(size_t max_bytes, std::chrono::milliseconds max_age);
  ~UnstableLimit();  // stops the thread; every writer that uses it is gone by then
  UnstableLimit(const UnstableLimit&) = delete;
  UnstableLimit& operator=(const UnstableLimit&) = delete;
  size_t total_bytes();
  Stats stats();
  void commit_all();  // every file's kept data (the daemon stops with files open)

 private:
  friend class UnstableWriter;
  struct Entry {
    size_t bytes = 0;
    std::chrono::steady_clock::time_point since;  // when BYTES last became non-zero
    int busy = 0;                                 // COMMITs of it this limit is making
    std::chrono::steady_clock::time_point retry_after;  // after a failed COMMIT of ours
  };
  // Called by UnstableWriter only.
  void add(UnstableWriter* w);
  void remove(UnstableWriter* w);              // waits while this limit commits W
  // W keeps BYTES now; true if the total is over. COMMITTED: W just committed, so what it
  // keeps was written during that COMMIT (its age starts now).
  bool set(UnstableWriter* w, size_t bytes, bool committed = false);
  void relieve();                              // commits the largest until under the bound
  void add_stable(uint64_t bytes) { stable_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void add_commit() { commits_.fetch_add(1, std::memory_order_relaxed); }

  static bool committable(const Entry& e, std::chrono::steady_clock::time_point now);
  // Commits W (marked busy, MU_ released meanwhile); false if the COMMIT failed. COUNTER
  // (may be null): the stat it counts in.
  bool commit_locked(std::unique_lock<std::mutex>& g, UnstableWriter* w, uint64_t* counter);
  void run();

  const size_t max_bytes_;
  const std::chrono::milliseconds max_age_;
  std::mutex mu_;  // unstable_limit_mu_3: after a writer's own locks, never held across an RPC
  std::condition_variable cv_;  // a COMMIT of ours ended, or stop_
  std::unordered_map<UnstableWriter*, Entry> writers_;
  size_t total_ = 0;
  bool stop_ = false;
  Stats stats_;
  std::atomic<uint64_t> stable_bytes_{0}, commits_{0};  // for stats(), without mu_
  std::thread thread_;  // last: started once the rest is set up
};

}  // namespace nfsshim::nfs
