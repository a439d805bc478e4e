// One event loop per loop thread: readiness of sockets (libnfs contexts) and work posted
// from other threads. Two backends behind one interface: io_uring (one-shot POLL_ADD,
// re-armed by the handler; arming is an SQE, so a loop iteration costs one io_uring_enter)
// and epoll (level-triggered, epoll_ctl only when the wanted events change). io_uring can
// also receive into a buffer itself (recv): one completion for a whole READ reply's data,
// instead of a readiness event and a recvmsg() for each part of it that arrives.
//
// Threading: arm/forget/run_once only on the loop thread; post() from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nfsshim/nfs/url.h"

namespace nfsshim::nfs {

// 0 if io_uring can be used in this process, else -errno (ENOSYS: kernel without it,
// EPERM/EACCES: kernel.io_uring_disabled or seccomp, EINVAL: too old). Probed once.
int probe_io_uring();

class FdHandler {
 public:
  // REVENTS: POLLIN/POLLOUT/POLLERR/POLLHUP as poll(2) reports them.
  virtual void on_fd_ready(int fd, uint32_t revents) = 0;
  // The end of a recv() on FD: RES bytes received (fewer than asked only at EOF or on an
  // error), 0 at EOF, or -errno.
  virtual void on_recv_done(int fd, ssize_t res) {
    (void)fd;
    (void)res;
  }

 protected:
  ~FdHandler() = default;
};

struct LoopStats {
  uint64_t iterations = 0;  // run_once calls that waited
  uint64_t syscalls = 0;    // syscalls the loop itself made (enter/epoll_wait/epoll_ctl/eventfd)
  uint64_t wakeups = 0;     // eventfd writes by post()
};

// How many loop threads serve NCONNECT connections (both engines): one per connection up
// to the CPUs, at most 4. A loop thread copies every payload once, so more threads than
// CPUs only switch, and a call to a sleeping loop thread costs a wake-up.
int loop_threads_for(int nconnect);

class EventLoop {
 public:
  // Builds a loop with backend WANT (kAuto: io_uring if probe_io_uring() says so, else
  // epoll with a warning). Forcing kUring where it is unavailable fails with its -errno.
  static int create(IoBackend want, std::unique_ptr<EventLoop>* out, std::string* why);
  virtual ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  virtual IoBackend backend() const = 0;

  // Calls H->on_fd_ready once, when FD is ready for any of EVENTS (POLLIN|POLLOUT) or has an
  // error/hangup. One-shot: the handler arms again for more. Re-arming replaces EVENTS.
  virtual int arm(int fd, uint32_t events, FdHandler* h) = 0;
  // Drops FD (armed or not, a recv in flight cancelled as cancel_recv does); call before
  // closing it. No handler call for it follows.
  virtual void forget(int fd) = 0;

  // io_uring only: receives exactly LEN bytes from FD into BUF (MSG_WAITALL: the kernel
  // waits for all of them), then calls H->on_recv_done once. One at a time per FD; the
  // caller arms no POLLIN for FD meanwhile. -EOPNOTSUPP where the backend has no such
  // operation (epoll; a kernel without IORING_OP_RECV): read on readiness instead.
  virtual int recv(int fd, void* buf, size_t len, FdHandler* h) {
    (void)fd, (void)buf, (void)len, (void)h;
    return -EOPNOTSUPP;
  }
  // Ends FD's recv before its data is all in (its buffer's owner wants it back): cancels
  // it and waits until the kernel has stopped writing to the buffer. Returns the bytes it
  // received (they are gone from the socket), 0 if none or if no recv was in flight; no
  // on_recv_done follows.
  virtual size_t cancel_recv(int fd) {
    (void)fd;
    return 0;
  }

  // One iteration: waits up to TIMEOUT_MS (less if work was posted) for readiness, calls the
  // handlers, then runs posted work. May return early (EINTR). Returns the number of
  // handler calls or -errno.
  int run_once(int timeout_ms);

  // Any thread: FN runs on the loop thread in a later (or the current) run_once.
  void post(std::function<void()> fn);

  LoopStats stats() const;

 protected:
  EventLoop();
  // Backend part of run_once: waits, dispatches ready fds; eventfd wakes just return.
  virtual int wait_and_dispatch(int timeout_ms) = 0;
  int wake_fd() const { return wake_fd_; }
  std::atomic<uint64_t> syscalls_{0};
  std::atomic<uint64_t> iterations_{0};

 private:
  int wake_fd_ = -1;
  std::mutex posted_mu_;  // leaf lock
  std::vector<std::function<void()>> posted_;
  std::atomic<bool> wake_pending_{false};
  std::atomic<uint64_t> wakeups_{0};
};

// Backend factories (loop_uring.cc, loop_epoll.cc); -errno if the backend cannot start.
int make_uring_loop(std::unique_ptr<EventLoop>* out, std::string* why);
int make_epoll_loop(std::unique_ptr<EventLoop>* out, std::string* why);
// Tests: uring loops made from now on watch their eventfd as kernels before 5.13 make them
// (a one-shot poll, re-armed after each wake), the path this kernel would not take.
void use_oneshot_wake_poll_for_test(bool on);

}  // namespace nfsshim::nfs
