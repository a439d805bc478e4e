// The deadline of gathered writes (gather_flusher.h).
#include "nfs/gather_flusher.h"

#include <pthread.h>

namespace nfsshim::fuse::nfsfs {

GatherFlusher::GatherFlusher(std::chrono::microseconds delay, unsigned max_pending)
    : delay_(delay), max_(max_pending) {}

GatherFlusher::~GatherFlusher() { stop(); }

void GatherFlusher::start(Send send) {
  send_ = std::move(send);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "nfsshim-gather");
    run();
  });
}

void GatherFlusher::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool GatherFlusher::room() const {
  return !stop_.load(std::memory_order_relaxed) && pending_.load(std::memory_order_relaxed) < static_cast<long>(max_);
}

void GatherFlusher::started(const std::shared_ptr<Node>& n, int64_t ticket) {
  bool first;
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.fetch_add(1, std::memory_order_relaxed);
    ++batches_;
    first = due_.empty();
    due_.push_back(Due{n, ticket, std::chrono::steady_clock::now() + delay_});
  }
  if (first) cv_.notify_all();  // later ones are due after it: the thread wakes for it anyway
}

void GatherFlusher::ended() { pending_.fetch_sub(1, std::memory_order_relaxed); }

void GatherFlusher::counts(uint64_t* batches, uint64_t* writes) const {
  std::lock_guard<std::mutex> g(mu_);
  *batches = batches_;
  *writes = writes_.load(std::memory_order_relaxed);
}

void GatherFlusher::run() {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    if (due_.empty()) {
      if (stop_) return;
      cv_.wait(g);
      continue;
    }
    // In order of start, so the front is due first; at stop everything is due.
    if (!stop_ && cv_.wait_until(g, due_.front().at) != std::cv_status::timeout) continue;
    if (due_.empty()) continue;
    Due d = std::move(due_.front());
    due_.pop_front();
    g.unlock();
    if (auto n = d.node.lock()) send_(n, d.ticket);  // nothing if it left already
    g.lock();
  }
}

}  // namespace nfsshim::fuse::nfsfs
