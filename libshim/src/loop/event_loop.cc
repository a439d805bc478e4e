#include "nfsshim/nfs/event_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "nfsshim/log.h"

namespace nfsshim::nfs {

int loop_threads_for(int nconnect) {
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min({nconnect, cpus, 4}));
}

int EventLoop::create(IoBackend want, std::unique_ptr<EventLoop>* out, std::string* why) {
  if (want == IoBackend::kEpoll) return make_epoll_loop(out, why);
  int probe = probe_io_uring();
  if (want == IoBackend::kUring) {
    if (probe < 0) {
      *why = std::string("io_uring is not available: ") + std::strerror(-probe) +
             " (io=uring was forced; io=epoll or io=auto would fall back)";
      return probe;
    }
    return make_uring_loop(out, why);
  }
  if (probe == 0) {
    int rv = make_uring_loop(out, why);
    if (rv == 0) return 0;
    if (log::first_time("uring-fallback-setup"))
      SHIM_LOG_WARN("io_uring setup failed ({}), using epoll", *why);
  } else if (log::first_time("uring-fallback")) {
    SHIM_LOG_WARN("io_uring unavailable ({}), using epoll", std::strerror(-probe));
  }
  return make_epoll_loop(out, why);
}

EventLoop::EventLoop() : wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

EventLoop::~EventLoop() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void EventLoop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(posted_mu_);
    posted_.push_back(std::move(fn));
  }
  // One eventfd write per batch: the loop clears the flag before it takes the batch.
  if (!wake_pending_.exchange(true, std::memory_order_acq_rel)) {
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;  // EAGAIN only if the counter is saturated: the loop is awake anyway
    wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

int EventLoop::run_once(int timeout_ms) {
  if (wake_pending_.load(std::memory_order_acquire)) timeout_ms = 0;
  int rv = wait_and_dispatch(timeout_ms);
  iterations_.fetch_add(1, std::memory_order_relaxed);
  wake_pending_.store(false, std::memory_order_release);
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> g(posted_mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
  return rv;
}

LoopStats EventLoop::stats() const {
  LoopStats s;
  s.iterations = iterations_.load(std::memory_order_relaxed);
  s.syscalls = syscalls_.load(std::memory_order_relaxed);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace nfsshim::nfs
