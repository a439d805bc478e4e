// epoll backend: level-triggered registrations kept across arms; epoll_ctl only when the
// wanted events change, so a steady connection costs one epoll_wait per iteration.
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "nfsshim/nfs/event_loop.h"

namespace nfsshim::nfs {
namespace {

uint32_t to_epoll(uint32_t ev) {
  uint32_t out = 0;
  if (ev & POLLIN) out |= EPOLLIN;
  if (ev & POLLOUT) out |= EPOLLOUT;
  return out;
}
uint32_t from_epoll(uint32_t ev) {
  uint32_t out = 0;
  if (ev & EPOLLIN) out |= POLLIN;
  if (ev & EPOLLOUT) out |= POLLOUT;
  if (ev & EPOLLERR) out |= POLLERR;
  if (ev & EPOLLHUP) out |= POLLHUP;
  return out;
}

class EpollLoop final : public EventLoop {
 public:
  int init(std::string* why) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0 || wake_fd() < 0) {
      *why = std::string("epoll/eventfd: ") + std::strerror(errno);
      return -errno;
    }
    struct epoll_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd();
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_fd(), &ev) != 0) {
      *why = std::string("epoll_ctl(eventfd): ") + std::strerror(errno);
      return -errno;
    }
    return 0;
  }
  ~EpollLoop() override {
    if (ep_ >= 0) ::close(ep_);
  }
  IoBackend backend() const override { return IoBackend::kEpoll; }

  int arm(int fd, uint32_t events, FdHandler* h) override {
    Entry& e = fds_[fd];
    e.handler = h;
    e.armed = true;
    uint32_t want = to_epoll(events);
    if (e.registered && e.kernel_events == want) return 0;
    struct epoll_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.fd = fd;
    syscalls_.fetch_add(1, std::memory_order_relaxed);
    if (::epoll_ctl(ep_, e.registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
      int err = -errno;
      fds_.erase(fd);
      return err;
    }
    e.registered = true;
    e.kernel_events = want;
    return 0;
  }

  void forget(int fd) override {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    if (it->second.registered) {
      syscalls_.fetch_add(1, std::memory_order_relaxed);
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    }
    fds_.erase(it);
  }

 protected:
  int wait_and_dispatch(int timeout_ms) override {
    struct epoll_event evs[64];
    syscalls_.fetch_add(1, std::memory_order_relaxed);
    int n = ::epoll_wait(ep_, evs, 64, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -errno;
    int calls = 0;
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == wake_fd()) {
        uint64_t v;
        syscalls_.fetch_add(1, std::memory_order_relaxed);
        ssize_t r = ::read(wake_fd(), &v, sizeof v);
        (void)r;
        continue;
      }
      auto it = fds_.find(fd);
      if (it == fds_.end()) continue;  // forgotten by an earlier handler of this batch
      if (!it->second.armed) {
        // Still ready but nobody armed it again: stop the level-triggered repeats.
        struct epoll_event ev;
        std::memset(&ev, 0, sizeof ev);
        ev.data.fd = fd;
        syscalls_.fetch_add(1, std::memory_order_relaxed);
        if (::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0) it->second.kernel_events = 0;
        continue;
      }
      it->second.armed = false;
      FdHandler* h = it->second.handler;
      h->on_fd_ready(fd, from_epoll(evs[i].events));  // may arm/forget (invalidates it)
      ++calls;
    }
    return calls;
  }

 private:
  struct Entry {
    FdHandler* handler = nullptr;
    bool armed = false;
    bool registered = false;
    uint32_t kernel_events = 0;
  };
  int ep_ = -1;
  std::unordered_map<int, Entry> fds_;
};

}  // namespace

int make_epoll_loop(std::unique_ptr<EventLoop>* out, std::string* why) {
  std::unique_ptr<EpollLoop> l(new EpollLoop());
  int rv = l->init(why);
  if (rv < 0) return rv;
  *out = std::move(l);
  return 0;
}

}  // namespace nfsshim::nfs
