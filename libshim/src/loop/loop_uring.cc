// io_uring backend: every arm is a one-shot POLL_ADD SQE and the eventfd is watched by one
// multishot POLL_ADD (a one-shot one before 5.13), so one io_uring_enter per iteration both
// submits the re-arms and waits. recv() is a RECV SQE with MSG_WAITALL; cancel_recv() and
// forget() wait for its completion, so its buffer is the caller's again when they return.
#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "nfsshim/nfs/event_loop.h"

namespace nfsshim::nfs {
namespace {

// user_data: generation (30 bits) | fd (32 bits) | kind (2 bits). A poll completion whose
// generation is not the fd's current one is stale (replaced or forgotten) and dropped.
enum Kind : uint64_t { kPoll = 0, kWake = 1, kIgnore = 2, kRecv = 3 };
constexpr uint64_t kGenMask = (1ull << 30) - 1;

uint64_t make_ud(uint64_t gen, int fd, Kind k) {
  return ((gen & kGenMask) << 34) | (static_cast<uint64_t>(static_cast<uint32_t>(fd)) << 2) | k;
}
int ud_fd(uint64_t ud) { return static_cast<int>(static_cast<uint32_t>(ud >> 2)); }
uint64_t ud_gen(uint64_t ud) { return ud >> 34; }
Kind ud_kind(uint64_t ud) { return static_cast<Kind>(ud & 3); }

std::atomic<bool> g_oneshot_wake_for_test{false};

class UringLoop final : public EventLoop {
 public:
  int init(std::string* why) {
    if (wake_fd() < 0) {
      *why = std::string("eventfd: ") + std::strerror(errno);
      return -errno;
    }
    struct io_uring_params p;
    std::memset(&p, 0, sizeof p);
    // COOP_TASKRUN (5.19): completions are run when we enter, not by interrupting us.
    p.flags = IORING_SETUP_COOP_TASKRUN;
    int rv = io_uring_queue_init_params(256, &ring_, &p);
    if (rv == -EINVAL) {
      std::memset(&p, 0, sizeof p);
      rv = io_uring_queue_init_params(256, &ring_, &p);
    }
    if (rv < 0) {
      *why = std::string("io_uring_queue_init: ") + std::strerror(-rv);
      return rv;
    }
    ready_ = true;
    recv_ok_ = probe_recv();
    arm_wake();
    return 0;
  }
  ~UringLoop() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  IoBackend backend() const override { return IoBackend::kUring; }

  int arm(int fd, uint32_t events, FdHandler* h) override {
    Entry& e = fds_[fd];
    e.handler = h;
    uint32_t want = events & (POLLIN | POLLOUT);
    if (e.in_flight) {
      if ((e.events & want) == want) return 0;  // the armed poll already covers it
      cancel(fd, e);                             // widen: replace the armed poll
    }
    e.gen = ++gen_;
    e.events = want;
    e.in_flight = true;
    struct io_uring_sqe* sqe = get_sqe();
    io_uring_prep_poll_add(sqe, fd, want);
    io_uring_sqe_set_data64(sqe, make_ud(e.gen, fd, kPoll));
    return 0;
  }

  void forget(int fd) override {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    if (it->second.recv_in_flight) cancel_recv(fd);  // (no handler runs: IT stays valid)
    if (it->second.in_flight) cancel(fd, it->second);
    fds_.erase(it);
    // The cancel must reach the kernel before the caller closes FD (and its number is reused).
    syscalls_.fetch_add(1, std::memory_order_relaxed);
    io_uring_submit(&ring_);
  }

  int recv(int fd, void* buf, size_t len, FdHandler* h) override {
    if (!recv_ok_) return -EOPNOTSUPP;
    if (len == 0 || len > UINT32_MAX) return -EINVAL;
    Entry& e = fds_[fd];
    if (e.recv_in_flight) return -EBUSY;
    e.recv_handler = h;
    e.recv_gen = ++gen_;
    e.recv_in_flight = true;
    struct io_uring_sqe* sqe = get_sqe();
    io_uring_prep_recv(sqe, fd, buf, len, MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, make_ud(e.recv_gen, fd, kRecv));
    return 0;
  }

  size_t cancel_recv(int fd) override {
    auto it = fds_.find(fd);
    if (it == fds_.end() || !it->second.recv_in_flight) return 0;
    it->second.recv_in_flight = false;
    const uint64_t target = make_ud(it->second.recv_gen, fd, kRecv);
    int res = 0;
    // Its completion may be reaped already: in the batch being dispatched (a handler of
    // it cancels) or put aside by an earlier cancel_recv.
    if (take_reaped(&done_, target, &res) || take_reaped(&deferred_, target, &res))
      return res > 0 ? static_cast<size_t>(res) : 0;
    struct io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel64(sqe, target, 0);
    io_uring_sqe_set_data64(sqe, make_ud(0, 0, kIgnore));
    // The kernel may write to the buffer until the recv's own completion (data, error or
    // -ECANCELED) is posted: wait for exactly that one, keep the others for dispatch.
    do {
      syscalls_.fetch_add(1, std::memory_order_relaxed);
      int rv = io_uring_submit_and_wait(&ring_, 1);
      if (rv < 0 && rv != -EINTR && rv != -EAGAIN && rv != -EBUSY) break;  // ring unusable
      reap(&deferred_);
    } while (!take_reaped(&deferred_, target, &res));
    return res > 0 ? static_cast<size_t>(res) : 0;
  }

 protected:
  int wait_and_dispatch(int timeout_ms) override {
    int rv = 0;
    struct io_uring_cqe* cqe = nullptr;
    // Completions a cancel_recv() reaped while it waited for its own come first.
    done_.clear();
    done_.swap(deferred_);
    if (!done_.empty()) timeout_ms = 0;
    if (timeout_ms == 0) {
      if (io_uring_sq_ready(&ring_) > 0) {
        syscalls_.fetch_add(1, std::memory_order_relaxed);
        rv = io_uring_submit(&ring_);
      }
    } else {
      struct __kernel_timespec ts;
      ts.tv_sec = timeout_ms / 1000;
      ts.tv_nsec = (timeout_ms % 1000) * 1000000LL;
      syscalls_.fetch_add(1, std::memory_order_relaxed);
      rv = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, timeout_ms < 0 ? nullptr : &ts, nullptr);
      if (rv < 0 && rv != -ETIME && rv != -EINTR && rv != -EBUSY) return rv;
    }
    // Copy the batch out first: handlers queue new SQEs while we walk it.
    reap(&done_);
    int calls = 0;
    for (const Done& d : done_) {
      if (d.ud == LIBURING_UDATA_TIMEOUT) continue;
      switch (ud_kind(d.ud)) {
        case kWake:
          if (wake_multishot_ && d.res == -EINVAL) wake_multishot_ = false;  // kernel < 5.13
          if (!wake_multishot_) {
            drain_wake();  // a one-shot poll: the counter must be read, or it fires at once
            arm_wake();
          } else if (!(d.flags & IORING_CQE_F_MORE)) {
            arm_wake();  // the multishot poll has ended
          }
          break;
        case kIgnore: break;
        case kRecv: {
          int fd = ud_fd(d.ud);
          auto it = fds_.find(fd);
          if (it == fds_.end() || !it->second.recv_in_flight ||
              (it->second.recv_gen & kGenMask) != ud_gen(d.ud))
            break;  // cancelled (its completion went to cancel_recv) or forgotten
          it->second.recv_in_flight = false;
          it->second.recv_handler->on_recv_done(fd, d.res);  // may recv/forget again
          ++calls;
          break;
        }
        case kPoll: {
          int fd = ud_fd(d.ud);
          auto it = fds_.find(fd);
          if (it == fds_.end() || !it->second.in_flight || (it->second.gen & kGenMask) != ud_gen(d.ud))
            break;  // replaced or forgotten
          it->second.in_flight = false;
          if (d.res == -ECANCELED) break;
          uint32_t rev = d.res < 0 ? POLLERR : static_cast<uint32_t>(d.res);
          it->second.handler->on_fd_ready(fd, rev);  // may arm/forget (invalidates it)
          ++calls;
          break;
        }
      }
    }
    done_.clear();
    return calls;
  }

 private:
  struct Entry {
    FdHandler* handler = nullptr;
    uint64_t gen = 0;
    uint32_t events = 0;
    bool in_flight = false;
    FdHandler* recv_handler = nullptr;
    uint64_t recv_gen = 0;
    bool recv_in_flight = false;
  };
  struct Done {
    uint64_t ud;
    int res;
    uint32_t flags;
  };

  // Moves the completions posted so far to the end of V.
  void reap(std::vector<Done>* v) {
    struct io_uring_cqe* cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      v->push_back({io_uring_cqe_get_data64(cqe), cqe->res, cqe->flags});
      ++n;
    }
    io_uring_cq_advance(&ring_, n);
  }
  // Takes TARGET's completion out of V (marked done there) into *RES.
  static bool take_reaped(std::vector<Done>* v, uint64_t target, int* res) {
    for (Done& d : *v) {
      if (d.ud != target) continue;
      *res = d.res;
      d.ud = make_ud(0, 0, kIgnore);
      return true;
    }
    return false;
  }
  bool probe_recv() {
    struct io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    if (!probe) return false;
    bool ok = io_uring_opcode_supported(probe, IORING_OP_RECV) &&
              io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
    io_uring_free_probe(probe);
    return ok;
  }
  struct io_uring_sqe* get_sqe() {
    struct io_uring_sqe* sqe;
    while ((sqe = io_uring_get_sqe(&ring_)) == nullptr) {  // SQ full: push it out, retry
      syscalls_.fetch_add(1, std::memory_order_relaxed);
      io_uring_submit(&ring_);
    }
    return sqe;
  }
  void cancel(int fd, Entry& e) {
    struct io_uring_sqe* sqe = get_sqe();
    io_uring_prep_poll_remove(sqe, make_ud(e.gen, fd, kPoll));
    io_uring_sqe_set_data64(sqe, make_ud(0, 0, kIgnore));
    e.in_flight = false;
  }
  void arm_wake() {
    struct io_uring_sqe* sqe = get_sqe();
    // The multishot poll never reads the eventfd: every post() write wakes it again, and a
    // counter that only grows (by one per batch) cannot reach its 2^64 - 2 limit. Before
    // 5.13 a one-shot poll, and drain_wake: not a READ SQE, which on those kernels ends at
    // once with EAGAIN on the non-blocking eventfd (no retry for O_NONBLOCK files): a loop
    // that never sleeps.
    if (wake_multishot_) io_uring_prep_poll_multishot(sqe, wake_fd(), POLLIN);
    else io_uring_prep_poll_add(sqe, wake_fd(), POLLIN);
    io_uring_sqe_set_data64(sqe, make_ud(0, 0, kWake));
  }
  void drain_wake() {
    uint64_t n;
    syscalls_.fetch_add(1, std::memory_order_relaxed);
    ssize_t r = ::read(wake_fd(), &n, sizeof n);  // EAGAIN: already drained
    (void)r;
  }

  struct io_uring ring_;
  bool ready_ = false;
  uint64_t gen_ = 0;
  bool wake_multishot_ = !g_oneshot_wake_for_test.load();
  bool recv_ok_ = false;
  std::unordered_map<int, Entry> fds_;
  std::vector<Done> done_;      // the batch being dispatched
  std::vector<Done> deferred_;  // reaped by cancel_recv, dispatched next
};

}  // namespace

int probe_io_uring() {
  // Once per process: the answer does not change while we run.
  static const int result = [] {
    struct io_uring ring;
    struct io_uring_params p;
    std::memset(&p, 0, sizeof p);
    int rv = io_uring_queue_init_params(4, &ring, &p);
    if (rv < 0) return rv;
    // The opcodes the uring loop uses.
    int missing = 0;
    struct io_uring_probe* probe = io_uring_get_probe_ring(&ring);
    if (probe) {
      if (!io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) ||
          !io_uring_opcode_supported(probe, IORING_OP_POLL_REMOVE) ||
          !io_uring_opcode_supported(probe, IORING_OP_READ))
        missing = 1;
      io_uring_free_probe(probe);
    } else {
      missing = 1;  // no probe support: kernel < 5.6, older than IORING_OP_READ
    }
    io_uring_queue_exit(&ring);
    return missing ? -EINVAL : 0;
  }();
  return result;
}

void use_oneshot_wake_poll_for_test(bool on) { g_oneshot_wake_for_test.store(on); }

int make_uring_loop(std::unique_ptr<EventLoop>* out, std::string* why) {
  std::unique_ptr<UringLoop> l(new UringLoop());
  int rv = l->init(why);
  if (rv < 0) return rv;
  *out = std::move(l);
  return 0;
}

}  // namespace nfsshim::nfs
