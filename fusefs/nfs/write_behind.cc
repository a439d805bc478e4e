// Write-behind bookkeeping of one file (write_behind.h): writes in flight, the kept error.
#include "nfs/write_behind.h"

#include <algorithm>
#include <atomic>

namespace nfsshim::fuse::nfsfs {
namespace {
// One clock for the whole mount: tickets of writes, ends, and the points of calls that
// fetch attributes (the node such a call reaches is known only after it).
std::atomic<uint64_t> g_clock{0};
uint64_t tick() { return g_clock.fetch_add(1) + 1; }
}  // namespace

void WriteBehindLimit::acquire() {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [this] { return writes_ < max_; });
  ++writes_;
  ++total_;
  peak_ = std::max(peak_, writes_);
}

void WriteBehindLimit::release(bool failed) {
  {
    std::lock_guard<std::mutex> g(mu_);
    --writes_;
    if (failed) ++failed_;
  }
  cv_.notify_one();
}

void WriteBehindLimit::counts(uint64_t* writes, unsigned* peak, uint64_t* failed) {
  std::lock_guard<std::mutex> g(mu_);
  *writes = total_;
  *peak = peak_;
  *failed = failed_;
}

uint64_t WriteBehind::now() { return tick(); }

bool WriteBehind::overlaps_locked(uint64_t off, uint64_t end) const {
  for (const auto& w : inflight_)
    if (w.second.off < end && off < w.second.end) return true;
  return false;
}

int64_t WriteBehind::begin(uint64_t off, uint64_t len, uint64_t budget) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] {
    return error_ != 0 ||
           (!overlaps_locked(off, off + len) && (inflight_.empty() || bytes_ + len <= budget));
  });
  if (error_ != 0) return error_;
  const uint64_t ticket = tick();  // under mu_: a later point finds it registered
  inflight_.emplace(ticket, Range{off, off + len});
  bytes_ += len;
  peak_ = std::max(peak_, bytes_);
  return static_cast<int64_t>(ticket);
}

void WriteBehind::end(int64_t ticket, int err) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = inflight_.find(static_cast<uint64_t>(ticket));
    if (it == inflight_.end()) return;
    bytes_ -= it->second.end - it->second.off;
    inflight_.erase(it);
    if (err < 0 && error_ == 0) error_ = err;
    last_end_ = tick();
  }
  cv_.notify_all();
}

void WriteBehind::wait_before(uint64_t point) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] { return inflight_.empty() || inflight_.begin()->first > point; });
}

void WriteBehind::wait_overlapping(uint64_t off, uint64_t len) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] { return !overlaps_locked(off, off + len); });
}

bool WriteBehind::raced(uint64_t point) {
  std::lock_guard<std::mutex> g(mu_);
  return (!inflight_.empty() && inflight_.begin()->first < point) || last_end_ > point;
}

int WriteBehind::take_error() {
  std::lock_guard<std::mutex> g(mu_);
  int e = error_;
  error_ = 0;
  if (e != 0) cv_.notify_all();
  return e;
}

uint64_t WriteBehind::peak_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  return peak_;
}

}  // namespace nfsshim::fuse::nfsfs
