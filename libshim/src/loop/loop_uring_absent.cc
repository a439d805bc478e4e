// Built without liburing (RHEL 8: no liburing in the base repositories, and its kernel has
// no io_uring): io=auto uses epoll, io=uring fails with a message saying why.
#include <cerrno>

#include "nfsshim/nfs/event_loop.h"

namespace nfsshim::nfs {

int probe_io_uring() { return -ENOSYS; }

void use_oneshot_wake_poll_for_test(bool) {}

int make_uring_loop(std::unique_ptr<EventLoop>*, std::string* why) {
  *why = "this nfsshim was built without liburing (io=epoll)";
  return -ENOSYS;
}

}  // namespace nfsshim::nfs
