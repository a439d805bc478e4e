// With io_uring_setup denied (seccomp, as kernel.io_uring_disabled=2 or a container profile
// does), io=auto must fall back to epoll and io=uring must fail with the errno. Its own
// process: the probe result is cached per process.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "nfsshim/nfs/event_loop.h"

using nfsshim::nfs::EventLoop;
using nfsshim::nfs::IoBackend;

static int deny_io_uring_setup(int err) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return -errno;
  return 0;
}

int main() {
  int fails = 0;
  if (deny_io_uring_setup(EPERM) != 0) {
    std::perror("seccomp");
    return 1;
  }
  if (nfsshim::nfs::probe_io_uring() != -EPERM) {
    std::fprintf(stderr, "FAIL: probe_io_uring() = %d, want -EPERM\n", nfsshim::nfs::probe_io_uring());
    ++fails;
  }
  std::unique_ptr<EventLoop> l;
  std::string why;
  int rv = EventLoop::create(IoBackend::kAuto, &l, &why);
  if (rv != 0 || l->backend() != IoBackend::kEpoll) {
    std::fprintf(stderr, "FAIL: io=auto: rv=%d backend=%s (%s)\n", rv,
                 l ? nfsshim::nfs::io_backend_name(l->backend()) : "-", why.c_str());
    ++fails;
  }
  l.reset();
  rv = EventLoop::create(IoBackend::kUring, &l, &why);
  if (rv != -EPERM || why.find("io_uring is not available") == std::string::npos) {
    std::fprintf(stderr, "FAIL: io=uring forced: rv=%d why='%s'\n", rv, why.c_str());
    ++fails;
  } else {
    std::printf("io=uring forced without io_uring: %s\n", why.c_str());
  }
  std::printf(fails ? "FAILED\n" : "ok: fallback to epoll, forced uring refused\n");
  return fails ? 1 : 0;
}
