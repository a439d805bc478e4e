// Thin syscall layer for libshim. libshim runs inside the preload, which interposes
// close/unlink/rename/...: calling the libc symbols from here would re-enter the
// wrappers. Raw syscalls never do, and they keep errno handling in one place:
// every function returns >= 0 on success and -errno on failure.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>

namespace nfsshim::sys {

inline long ret(long rv) { return rv == -1 ? -errno : rv; }

inline int openat(int dirfd, const char* path, int flags, mode_t mode = 0) {
  return static_cast<int>(ret(::syscall(SYS_openat, dirfd, path, flags | O_CLOEXEC, mode)));
}
inline int close(int fd) { return static_cast<int>(ret(::syscall(SYS_close, fd))); }
inline int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return static_cast<int>(ret(::syscall(SYS_newfstatat, dirfd, path, st, flags)));
}
inline int fstat(int fd, struct stat* st) { return static_cast<int>(ret(::syscall(SYS_fstat, fd, st))); }
// FD's device and inode number from what the kernel holds, asking the filesystem nothing:
// fstat on NFS writes the file's dirty pages back (to report mtime) and may send a GETATTR.
// statx (Linux 4.11, glibc 2.28 headers) with AT_STATX_DONT_SYNC; fstat where statx fails
// for any reason (absent, or refused by a seccomp filter: a reference must not be missed).
// NLINK, if given, gets the link count (0 for a removed directory).
inline int fd_inode(int fd, dev_t* dev, ino_t* ino, nlink_t* nlink = nullptr) {
#if defined(SYS_statx) && defined(AT_STATX_DONT_SYNC) && defined(STATX_INO)
  struct statx sx;
  unsigned mask = STATX_INO | (nlink ? STATX_NLINK : 0u);
  if (ret(::syscall(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, mask, &sx)) == 0 &&
      (!nlink || (sx.stx_mask & STATX_NLINK))) {
    *dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    *ino = sx.stx_ino;
    if (nlink) *nlink = sx.stx_nlink;
    return 0;
  }
#endif
  struct stat st;
  int r = sys::fstat(fd, &st);
  if (r == 0) {
    *dev = st.st_dev;
    *ino = st.st_ino;
    if (nlink) *nlink = st.st_nlink;
  }
  return r;
}
inline int unlinkat(int dirfd, const char* path, int flags) {
  return static_cast<int>(ret(::syscall(SYS_unlinkat, dirfd, path, flags)));
}
inline int renameat(int olddir, const char* oldp, int newdir, const char* newp) {
  return static_cast<int>(ret(::syscall(SYS_renameat, olddir, oldp, newdir, newp)));
}
inline int renameat2(int olddir, const char* oldp, int newdir, const char* newp, unsigned flags) {
  return static_cast<int>(ret(::syscall(SYS_renameat2, olddir, oldp, newdir, newp, flags)));
}
inline int linkat(int olddir, const char* oldp, int newdir, const char* newp, int flags) {
  return static_cast<int>(ret(::syscall(SYS_linkat, olddir, oldp, newdir, newp, flags)));
}
inline int mkdirat(int dirfd, const char* path, mode_t mode) {
  return static_cast<int>(ret(::syscall(SYS_mkdirat, dirfd, path, mode)));
}
inline int fchmod(int fd, mode_t mode) { return static_cast<int>(ret(::syscall(SYS_fchmod, fd, mode))); }
inline ssize_t read(int fd, void* buf, size_t n) { return ret(::syscall(SYS_read, fd, buf, n)); }
inline ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t n) {
  return ret(::syscall(SYS_readlinkat, dirfd, path, buf, n));
}
inline int statfs(const char* path, struct statfs* sf) {
  return static_cast<int>(ret(::syscall(SYS_statfs, path, sf)));
}
inline int kill(pid_t pid, int sig) { return static_cast<int>(ret(::syscall(SYS_kill, pid, sig))); }
inline long getdents64(int fd, void* buf, size_t n) { return ret(::syscall(SYS_getdents64, fd, buf, n)); }

// Calls FN(name) for every entry of the directory open on FD, except "." and "..",
// reading from FD's current offset. FN returns false to stop early. Returns 0, or
// -errno if reading failed (entries seen so far were passed to FN).
template <typename Fn>
int for_each_name(int fd, Fn fn) {
  alignas(8) char buf[8192];
  for (;;) {
    long n = getdents64(fd, buf, sizeof buf);
    if (n == -EINTR) continue;
    if (n <= 0) return static_cast<int>(n);
    for (long off = 0; off < n;) {
      auto* de = reinterpret_cast<struct dirent64*>(buf + off);
      off += de->d_reclen;
      const char* nm = de->d_name;
      if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
      if (!fn(static_cast<const char*>(nm))) return 0;
    }
  }
}

// Reads a whole (small, /proc-like) file; returns bytes read or -errno.
ssize_t read_file(int dirfd, const char* path, char* buf, size_t cap);

// FN(path) with the calling thread's "/proc/thread-self/REL" (REL: "fd", "maps",
// "fdinfo/3"...), and again with "/proc/self/REL" if that gives -ENOENT (Linux < 3.17).
// /proc/self is the thread-group leader: once it called pthread_exit its fd list and its
// maps read empty, and every held file would look unheld.
template <typename Fn>
auto with_proc_self(const char* rel, Fn fn) {
  char path[128];
  std::snprintf(path, sizeof path, "/proc/thread-self/%s", rel);
  auto rv = fn(path);
  if (rv != -ENOENT) return rv;
  std::snprintf(path, sizeof path, "/proc/self/%s", rel);
  return fn(path);
}
inline int open_proc_self(const char* rel, int flags) {
  return with_proc_self(rel, [&](const char* path) { return openat(AT_FDCWD, path, flags); });
}

// closefrom(LOWFD) where libc has none (glibc < 2.34): close_range, and where the kernel
// has none either (before 5.9: RHEL 8) a close loop over /proc/thread-self/fd, or, if /proc
// cannot be read, up to the descriptor limit. Never closes nothing silently.
void close_from(int lowfd);

// RAII holder for a descriptor opened through this layer.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace nfsshim::sys
