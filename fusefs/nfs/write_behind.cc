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

uint64_t WriteBehind::register_locked(uint64_t off, uint64_t len) {
  const uint64_t ticket = tick();  // under mu_: a later point finds it registered
  inflight_.emplace(ticket, Range{off, off + len});
  bytes_ += len;
  peak_ = std::max(peak_, bytes_);
  return ticket;
}

bool WriteBehind::fits_locked(uint64_t off, uint64_t len, uint64_t budget) const {
  return !overlaps_locked(off, off + len) && (inflight_.empty() || bytes_ + len <= budget);
}

bool WriteBehind::take_locked(Batch* send) {
  if (!send || !pending_.data) return false;
  // The engine keeps the batch until COMMIT: a batch sent before it filled gives back the
  // room reserved for the rest (else 16 KiB could hold 1 MiB there).
  if (pending_.data->capacity() > 2 * pending_.data->size()) pending_.data->shrink_to_fit();
  *send = std::move(pending_);
  pending_ = Batch{};
  return true;
}

int64_t WriteBehind::begin(uint64_t off, uint64_t len, uint64_t budget, Batch* send) {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    if (error_ != 0) return error_;
    if (fits_locked(off, len, budget)) break;
    if (take_locked(send)) return 0;
    cv_.wait(g);
  }
  return static_cast<int64_t>(register_locked(off, len));
}

int WriteBehind::gather(uint64_t off, const char* buf, size_t len, const nfs::Cred& c, size_t max,
                        uint64_t budget, bool start, Batch* send, int64_t* ticket) {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    if (error_ != 0) return error_;
    if (pending_.data) {
      std::string& d = *pending_.data;
      // Not onto another write in flight (the batch's own range ends at OFF): two
      // overlapping WRITEs on the wire land in either order.
      if (pending_.off + d.size() == off && d.size() + len <= max && bytes_ + len <= budget &&
          pending_.cred == c && !overlaps_locked(off, off + len)) {
        d.append(buf, len);
        inflight_[static_cast<uint64_t>(pending_.ticket)].end = off + len;
        bytes_ += len;
        peak_ = std::max(peak_, bytes_);
        if (d.size() == max) take_locked(send);
        return kAppended;
      }
      take_locked(send);
      return kSendFirst;
    }
    if (!start) return kNotGathered;
    if (fits_locked(off, len, budget)) break;
    cv_.wait(g);  // a write in flight holds it up; one gathered meanwhile is taken above
  }
  pending_.ticket = static_cast<int64_t>(register_locked(off, len));
  pending_.off = off;
  pending_.data = std::make_shared<std::string>();
  pending_.data->reserve(max);
  pending_.data->append(buf, len);
  pending_.cred = c;
  *ticket = pending_.ticket;
  return kStarted;
}

bool WriteBehind::take_pending(int64_t ticket, Batch* send) {
  std::lock_guard<std::mutex> g(mu_);
  return pending_.data && pending_.ticket == ticket && take_locked(send);
}

void WriteBehind::end(int64_t ticket, int err) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = inflight_.find(static_cast<uint64_t>(ticket));
    if (it == inflight_.end()) return;
    bytes_ -= it->second.end - it->second.off;
    inflight_.erase(it);
    if (err < 0 && error_ == 0) {  // another failure before anyone was told is the same one
      error_ = last_error_ = err;
      ++errors_;
    }
    last_end_ = tick();
  }
  cv_.notify_all();
}

bool WriteBehind::wait_before(uint64_t point, Batch* send) {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    if (inflight_.empty() || inflight_.begin()->first > point) return false;
    if (pending_.data && static_cast<uint64_t>(pending_.ticket) < point && take_locked(send)) return true;
    cv_.wait(g);
  }
}

bool WriteBehind::wait_overlapping(uint64_t off, uint64_t len, Batch* send) {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    if (!overlaps_locked(off, off + len)) return false;
    if (pending_.data && pending_.off < off + len && off < pending_.off + pending_.data->size() &&
        take_locked(send))
      return true;
    cv_.wait(g);
  }
}

bool WriteBehind::raced(uint64_t point) {
  std::lock_guard<std::mutex> g(mu_);
  return (!inflight_.empty() && inflight_.begin()->first < point) || last_end_ > point;
}

void WriteBehind::opened(uint64_t handle, bool writes) {
  std::lock_guard<std::mutex> g(mu_);
  // A failure no one was told of yet is this open's too (errseq_sample).
  opens_[handle] = Open{error_ != 0 ? errors_ - 1 : errors_, writes};
}

void WriteBehind::closed(uint64_t handle) {
  std::lock_guard<std::mutex> g(mu_);
  opens_.erase(handle);
}

bool WriteBehind::writes(uint64_t handle) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = opens_.find(handle);
  return it != opens_.end() && it->second.writes;
}

int WriteBehind::take_error(uint64_t handle) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = opens_.find(handle);
  const uint64_t told = it != opens_.end() ? it->second.told : error_ != 0 ? errors_ - 1 : errors_;
  if (told == errors_) return 0;
  if (it != opens_.end()) it->second.told = errors_;
  if (error_ != 0) {
    error_ = 0;
    cv_.notify_all();
  }
  return last_error_;
}

uint64_t WriteBehind::peak_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  return peak_;
}

}  // namespace nfsshim::fuse::nfsfs
