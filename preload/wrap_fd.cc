// Calls that drop or copy a descriptor: close, fclose, freopen, close_range, closefrom, dup,
// dup2, dup3, fcntl(F_DUPFD*), and glibc's other names for some of them (__close, __dup2,
// _IO_fclose: exported since GLIBC_2.2.5). Not fcloseall: glibc's only flushes, every
// descriptor stays open. Only descriptors of buried files cost anything: the
// check is one bit in a lock-free bitmap.
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "export.h"
#include "guard.h"
#include "nfsshim/sys.h"
#include "real.h"
#include "registry.h"

using namespace nfsshim::preload;

namespace {

// A tracked reference may have gone: re-read /proc and drop entries with none left.
void recount() noexcept {
  ErrnoKeeper keep;
  try {
    Registry::get().recount();
  } catch (...) {
  }
}

void dup_tracked(int oldfd, int newfd) noexcept {
  ErrnoKeeper keep;
  try {
    Registry::get().dup_fd(oldfd, newfd);
  } catch (...) {
  }
}

// FP's descriptor, or -1. fileno sets EBADF for a stream without one (open_memstream,
// fmemopen, fopencookie), which a successful fclose must not show.
int stream_fd(FILE* fp) noexcept {
  ErrnoKeeper keep;
  return fileno(fp);
}

// Whether a release just made (the real call has returned) may have dropped a tracked
// reference. Asked after the call, not before: a bury registers the references it
// scanned and then checks them again (Registry::add), so a release before that check is
// seen there and one after it sees the bit here. The fence pairs with add()'s.
bool released_tracked(int fd) noexcept {
  full_barrier();
  return Registry::get().fd_tracked(fd);
}

// The next definition of NAME, for glibc's aliases (no declaration to take a type from).
template <typename Fn>
Fn real_alias(std::atomic<void*>* slot, const char* name) {
  return reinterpret_cast<Fn>(real_symbol(slot, name));
}

int close_with(int (*real)(int), int fd) {
  if (!real) return missing_symbol();
  int rv = real(fd);
  if (!released_tracked(fd)) return rv;
  Guard g;
  if (g.outermost()) recount();
  return rv;
}

int fclose_with(int (*real)(FILE*), FILE* fp) {
  if (!real) return missing_symbol();
  if (!fp) return real(fp);
  int fd = stream_fd(fp);
  int rv = real(fp);
  if (!released_tracked(fd)) return rv;
  Guard g;
  if (g.outermost()) recount();
  return rv;
}

}  // namespace

NFSSHIM_EXPORT int close(int fd) { return close_with(REAL(close), fd); }

NFSSHIM_EXPORT int __close(int fd) {
  static std::atomic<void*> slot{nullptr};
  return close_with(real_alias<int (*)(int)>(&slot, "__close"), fd);
}

NFSSHIM_EXPORT int fclose(FILE* fp) { return fclose_with(REAL(fclose), fp); }

NFSSHIM_EXPORT int _IO_fclose(FILE* fp) {
  static std::atomic<void*> slot{nullptr};
  return fclose_with(real_alias<int (*)(FILE*)>(&slot, "_IO_fclose"), fp);
}

// freopen closes the stream's old descriptor, maybe the last reference to a buried file.
template <typename Fn>
static FILE* reopen(Fn real, const char* path, const char* mode, FILE* fp) {
  if (!real) {
    errno = ENOSYS;
    return nullptr;
  }
  if (!fp) return real(path, mode, fp);
  int fd = stream_fd(fp);
  FILE* rv = real(path, mode, fp);
  if (!released_tracked(fd)) return rv;
  Guard g;
  if (g.outermost()) recount();
  return rv;
}

NFSSHIM_EXPORT FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return reopen(REAL(freopen), path, mode, fp);
}

NFSSHIM_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return reopen(REAL(freopen64), path, mode, fp);
}

// close_range: glibc 2.34+ only (RHEL 8's 2.28 lacks it); the kernel call otherwise.
NFSSHIM_EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
  static std::atomic<void*> slot{nullptr};
  using Fn = int (*)(unsigned int, unsigned int, int);
  auto real = reinterpret_cast<Fn>(real_symbol(&slot, "close_range"));
  auto plain = [&] {
    if (real) return real(first, last, flags);
#ifdef SYS_close_range
    return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
#else
    errno = ENOSYS;
    return -1;
#endif
  };
  Guard g;
  int rv = plain();
  full_barrier();  // as in released_tracked
  if (g.outermost() && !Registry::get().empty()) recount();
  return rv;
}

// closefrom: glibc 2.34+, which closes through its internal close_range, past the two
// wrappers above. Without glibc's (a program built elsewhere, run on RHEL 8's 2.28):
// close_range, or a /proc close loop where the kernel has none (4.18).
NFSSHIM_EXPORT void closefrom(int lowfd) {
  static std::atomic<void*> slot{nullptr};
  using Fn = void (*)(int);
  auto real = reinterpret_cast<Fn>(real_symbol(&slot, "closefrom"));
  auto plain = [&] {
    if (real) return real(lowfd);
    nfsshim::sys::close_from(lowfd);
  };
  Guard g;
  ErrnoKeeper keep;  // closefrom has no result and leaves errno alone
  plain();
  full_barrier();  // as in released_tracked
  if (g.outermost() && !Registry::get().empty()) recount();
}

NFSSHIM_EXPORT int dup(int oldfd) {
  auto real = REAL(dup);
  if (!real) return missing_symbol();
  int rv = real(oldfd);
  if (rv >= 0 && Registry::get().fd_tracked(oldfd)) {
    Guard g;
    if (g.outermost()) dup_tracked(oldfd, rv);
  }
  return rv;
}

// dup2/dup3 also close NEWFD if it was open, which may drop a tracked reference. NEWFD's
// bit still says so after the call (only a recount clears it).
static int dup_to(int rv, int oldfd, int newfd) {
  if (rv < 0 || oldfd == newfd) return rv;
  bool new_was_tracked = released_tracked(newfd);
  if (!new_was_tracked && !Registry::get().fd_tracked(oldfd)) return rv;
  Guard g;
  if (!g.outermost()) return rv;
  if (new_was_tracked) recount();
  else dup_tracked(oldfd, newfd);
  return rv;
}

static int dup2_with(int (*real)(int, int), int oldfd, int newfd) {
  if (!real) return missing_symbol();
  return dup_to(real(oldfd, newfd), oldfd, newfd);
}

NFSSHIM_EXPORT int dup2(int oldfd, int newfd) { return dup2_with(REAL(dup2), oldfd, newfd); }

NFSSHIM_EXPORT int __dup2(int oldfd, int newfd) {
  static std::atomic<void*> slot{nullptr};
  return dup2_with(real_alias<int (*)(int, int)>(&slot, "__dup2"), oldfd, newfd);
}

NFSSHIM_EXPORT int dup3(int oldfd, int newfd, int flags) {
  auto real = REAL(dup3);
  if (!real) return missing_symbol();
  return dup_to(real(oldfd, newfd, flags), oldfd, newfd);
}

// fcntl's third argument is an int, a long or a pointer depending on CMD; on every
// ABI we build for they travel in the same register, so pass it on as a long.
static int fcntl_common(void* sym, int fd, int cmd, unsigned long arg) {
  using Fn = int (*)(int, int, ...);
  if (!sym) return missing_symbol();
  int rv = reinterpret_cast<Fn>(sym)(fd, cmd, arg);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && rv >= 0 && Registry::get().fd_tracked(fd)) {
    Guard g;
    if (g.outermost()) dup_tracked(fd, rv);
  }
  return rv;
}

NFSSHIM_EXPORT int fcntl(int fd, int cmd, ...) {
  static std::atomic<void*> slot{nullptr};
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(real_symbol(&slot, "fcntl"), fd, cmd, arg);
}

NFSSHIM_EXPORT int fcntl64(int fd, int cmd, ...) {
  static std::atomic<void*> slot{nullptr};
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(real_symbol(&slot, "fcntl64"), fd, cmd, arg);
}
