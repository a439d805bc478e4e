#include "nfsshim/sys.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nfsshim {
namespace {

// Makes system call NR fail with ERR in this process (a seccomp filter).
bool deny(long nr, int err) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<unsigned>(err)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Makes close_range fail with ENOSYS in this process, as on a kernel before 5.9 (RHEL 8).
bool close_range_enosys() {
#ifdef SYS_close_range
  return deny(SYS_close_range, ENOSYS);
#else
  return true;
#endif
}

// Runs close_from(901) in a child after SETUP (seccomp filters; false: it could not) with
// descriptors 900, 901 and 1500 open, and returns the child's exit status: 0 when 901 and
// 1500 are closed and 900 and the original stay; 2 SETUP failed; 6 descriptors from LOWFD
// up are still open; others, a step that failed.
int close_from_in_child(bool (*setup)()) {
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (!setup()) _exit(2);
    int base = open("/dev/null", O_RDONLY);
    if (base < 0 || dup2(base, 900) != 900 || dup2(base, 901) != 901 || dup2(base, 1500) != 1500)
      _exit(4);
    sys::close_from(901);
    if (fcntl(900, F_GETFD) < 0) _exit(5);  // below LOWFD: stays
    if (fcntl(901, F_GETFD) >= 0 || fcntl(1500, F_GETFD) >= 0) _exit(6);
    if (fcntl(base, F_GETFD) < 0) _exit(7);
    _exit(0);
  }
  int st = 0;
  if (waitpid(child, &st, 0) != child || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

// closefrom where libc has none (glibc < 2.34) and the kernel has no close_range: the
// descriptors from LOWFD up are closed all the same, by a /proc/thread-self/fd loop.
TEST(Sys, CloseFromWithoutCloseRange) {
  int rc = close_from_in_child([] {
    if (!close_range_enosys()) return false;
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 900u, ~0u, 0) != -1 || errno != ENOSYS) _exit(3);
#endif
    return true;
  });
  EXPECT_NE(rc, 2) << "cannot install the seccomp filter";
  EXPECT_NE(rc, 6) << "descriptors from LOWFD up are still open";
  EXPECT_EQ(rc, 0);
}

// The same where the /proc listing fails (a seccomp filter that refuses getdents64, a
// listing cut short): the descriptors it did not list are closed by the RLIMIT_NOFILE loop
// (before 4f804ad close_from returned with them open).
TEST(Sys, CloseFromWhenTheProcListingFails) {
  int rc = close_from_in_child([] { return close_range_enosys() && deny(SYS_getdents64, EIO); });
  EXPECT_NE(rc, 2) << "cannot install the seccomp filters";
  EXPECT_NE(rc, 6) << "descriptors from LOWFD up are still open";
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace nfsshim
