// The mount-wide bound on UNSTABLE data kept for COMMIT (unstable_limit.h).
#include "nfsshim/nfs/unstable_limit.h"

#include <pthread.h>

#include <algorithm>
#include <set>
#include <cstring>

#include "nfsshim/log.h"
#include "nfsshim/nfs/engine.h"

namespace nfsshim::nfs {

UnstableLimit::UnstableLimit(size_t max_bytes, std::chrono::milliseconds max_age)
    : max_bytes_(max_bytes), max_age_(max_age) {
  thread_ = std::thread([this] { run(); });
}

UnstableLimit::~UnstableLimit() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

size_t UnstableLimit::total_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  return total_;
}

UnstableLimit::Stats UnstableLimit::stats() {
  std::lock_guard<std::mutex> g(mu_);
  Stats s = stats_;
  s.stable_bytes = stable_bytes_.load(std::memory_order_relaxed);
  s.commits = commits_.load(std::memory_order_relaxed);
  return s;
}

void UnstableLimit::add(UnstableWriter* w) {
  std::lock_guard<std::mutex> g(mu_);
  writers_.emplace(w, Entry{});
}

void UnstableLimit::remove(UnstableWriter* w) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] { return writers_.at(w).busy == 0; });
  total_ -= writers_.at(w).bytes;
  writers_.erase(w);
}

bool UnstableLimit::set(UnstableWriter* w, size_t bytes, bool committed) {
  std::lock_guard<std::mutex> g(mu_);
  Entry& e = writers_.at(w);
  if (bytes > 0 && (e.bytes == 0 || committed)) e.since = std::chrono::steady_clock::now();
  total_ = total_ - e.bytes + bytes;
  e.bytes = bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, total_);
  return total_ > max_bytes_;
}

// Whether this limit may commit E's file now: something kept, no COMMIT of ours on it,
// and not within MAX_AGE of one of ours that failed.
bool UnstableLimit::committable(const Entry& e, std::chrono::steady_clock::time_point now) {
  return e.busy == 0 && e.bytes > 0 && now >= e.retry_after;
}

bool UnstableLimit::commit_locked(std::unique_lock<std::mutex>& g, UnstableWriter* w, uint64_t* counter) {
  ++writers_.at(w).busy;  // remove(W) waits: W lives until this COMMIT ends
  g.unlock();
  int rv = w->commit_kept();
  g.lock();
  Entry& e = writers_.at(w);
  --e.busy;
  cv_.notify_all();
  if (rv < 0) {
    // Not again before MAX_AGE: a file the server lost (ESTALE) must not be every write's
    // first pick while the others could go.
    e.retry_after = std::chrono::steady_clock::now() + max_age_;
    ++stats_.failed_commits;
    SHIM_LOG_WARN("COMMIT of unstable data ({} of the mount's {} bytes kept): {}; kept for the next try",
                  e.bytes, total_, std::strerror(-rv));
    return false;
  }
  if (counter) ++*counter;
  return true;
}

void UnstableLimit::relieve() {
  std::unique_lock<std::mutex> g(mu_);
  while (total_ > max_bytes_) {
    const auto now = std::chrono::steady_clock::now();
    UnstableWriter* largest = nullptr;
    size_t most = 0, committing = 0;
    for (auto& [w, e] : writers_) {
      if (e.busy > 0) committing += e.bytes;
      if (committable(e, now) && e.bytes > most) {
        most = e.bytes;
        largest = w;
      }
    }
    // Writes that pass the bound together must not each commit another file: with the
    // COMMITs already under way the total may be under it. Then wait for one to end.
    if (largest && total_ - committing > max_bytes_) {
      if (!commit_locked(g, largest, &stats_.pressure_commits)) return;  // the age thread retries
    } else if (committing > 0) {
      cv_.wait(g);
    } else {
      return;
    }
  }
}

void UnstableLimit::commit_all() {
  // Each file once, a failed one of a moment ago too: there is no later try.
  std::unique_lock<std::mutex> g(mu_);
  std::set<UnstableWriter*> tried;
  for (;;) {
    UnstableWriter* next = nullptr;
    bool committing = false;
    for (auto& [w, e] : writers_) {
      if (e.busy > 0) committing = true;
      else if (e.bytes > 0 && !tried.count(w)) next = w;
    }
    if (next) {
      tried.insert(next);
      commit_locked(g, next, nullptr);  // counted as neither kind
    } else if (committing) {
      cv_.wait(g);  // the age thread's COMMIT: its file may need a try after it
    } else {
      break;
    }
  }
  size_t files = 0;
  for (auto& [w, e] : writers_) files += e.bytes > 0;
  if (files > 0)
    SHIM_LOG_ERROR("{} bytes of answered data in {} open files could not be committed before the "
                   "daemon stopped: the server holds them unstable and loses them if it restarts "
                   "before writing them out", total_, files);
}

// Every quarter of MAX_AGE, commits the files whose oldest kept data passed MAX_AGE.
void UnstableLimit::run() {
  pthread_setname_np(pthread_self(), "nfsshim-commit");
  const auto tick = std::max(max_age_ / 4, std::chrono::milliseconds(10));
  std::unique_lock<std::mutex> g(mu_);
  while (!stop_) {
    cv_.wait_for(g, tick);
    // One at a time: the map may change while a COMMIT runs. A file whose COMMIT failed
    // waits MAX_AGE for the next try, so this never spins on it.
    for (;;) {
      if (stop_) break;
      const auto now = std::chrono::steady_clock::now();
      UnstableWriter* oldest = nullptr;
      for (auto& [w, e] : writers_)
        if (committable(e, now) && now - e.since >= max_age_ &&
            (!oldest || e.since < writers_.at(oldest).since))
          oldest = w;
      if (!oldest || !commit_locked(g, oldest, &stats_.age_commits)) break;
    }
  }
}

}  // namespace nfsshim::nfs
