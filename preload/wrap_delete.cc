// unlink, unlinkat, remove, rmdir, rename, renameat, renameat2.
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "export.h"
#include "guard.h"
#include "ops.h"
#include "real.h"
#include "state.h"

using namespace nfsshim::preload;

namespace {

// Paths are not checked for NULL: glibc declares them nonnull, and a NULL reaching
// the kernel gives EFAULT to our stat (so: not ours) and then to the plain call.

// Runs OP (returning kPass, 0 or -errno) with the guard held and errno preserved;
// any exception means "let the plain call do it".
template <typename F>
int shim_op(F op) noexcept {
  ErrnoKeeper keep;
  try {
    return op();
  } catch (...) {
    return kPass;
  }
}

// Runs REAL (an rmdir); if it fails with ENOTEMPTY, sweeps silly-rename leftovers and
// removes the directory itself. That success leaves errno as a plain success does: the
// caller's value (rmdir, unlinkat), or SUCCESS_ERRNO if the plain call sets one anyway.
template <typename F>
int rmdir_or_sweep(F real, int dirfd, const char* path, int success_errno = 0) {
  const int before = errno;
  int rv = real();
  if (rv == 0 || errno != ENOTEMPTY) return rv;
  if (shim_op([&] { return sweep_rmdir(dirfd, path); }) != 0) {
    errno = ENOTEMPTY;  // the real call's failure
    return rv;
  }
  errno = success_errno != 0 ? success_errno : before;
  return 0;
}

}  // namespace

NFSSHIM_EXPORT int unlink(const char* path) noexcept {
  auto real = REAL(unlink);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(path);
  int rv = shim_op([&] { return bury_unlink(AT_FDCWD, path); });
  return rv == kPass ? real(path) : finish(rv);
}

NFSSHIM_EXPORT int unlinkat(int dirfd, const char* path, int flags) noexcept {
  auto real = REAL(unlinkat);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(dirfd, path, flags);
  if (flags == AT_REMOVEDIR) return rmdir_or_sweep([&] { return real(dirfd, path, flags); }, dirfd, path);
  if (flags != 0) return real(dirfd, path, flags);  // invalid flags: EINVAL from the kernel
  int rv = shim_op([&] { return bury_unlink(dirfd, path); });
  return rv == kPass ? real(dirfd, path, flags) : finish(rv);
}

NFSSHIM_EXPORT int rmdir(const char* path) noexcept {
  auto real = REAL(rmdir);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(path);
  return rmdir_or_sweep([&] { return real(path); }, AT_FDCWD, path);
}

// glibc's remove() calls its internal unlink/rmdir, which no interposer sees.
NFSSHIM_EXPORT int remove(const char* path) noexcept {
  auto real = REAL(remove);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(path);
  int rv = shim_op([&] { return bury_unlink(AT_FDCWD, path); });
  // EISDIR: a directory took the name as we buried it (put back): remove goes on to rmdir.
  if (rv != kPass && rv != -EISDIR) return finish(rv);
  // glibc's remove of a directory tries unlink first: a success leaves its EISDIR.
  return rmdir_or_sweep([&] { return real(path); }, AT_FDCWD, path, EISDIR);
}

NFSSHIM_EXPORT int rename(const char* oldpath, const char* newpath) noexcept {
  auto real = REAL(rename);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(oldpath, newpath);
  int rv = shim_op([&] { return bury_rename(AT_FDCWD, oldpath, AT_FDCWD, newpath); });
  return rv == kPass ? real(oldpath, newpath) : finish(rv);
}

NFSSHIM_EXPORT int renameat(int olddir, const char* oldpath, int newdir, const char* newpath) noexcept {
  auto real = REAL(renameat);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !anything_watched()) return real(olddir, oldpath, newdir, newpath);
  int rv = shim_op([&] { return bury_rename(olddir, oldpath, newdir, newpath); });
  return rv == kPass ? real(olddir, oldpath, newdir, newpath) : finish(rv);
}

// glibc has renameat2 since 2.28; call the kernel directly where it does not.
NFSSHIM_EXPORT int renameat2(int olddir, const char* oldpath, int newdir, const char* newpath,
                             unsigned int flags) noexcept {
  static std::atomic<void*> slot{nullptr};
  using Fn = int (*)(int, const char*, int, const char*, unsigned int);
  auto real = reinterpret_cast<Fn>(real_symbol(&slot, "renameat2"));
  auto plain = [&] {
    if (real) return real(olddir, oldpath, newdir, newpath, flags);
    return static_cast<int>(::syscall(SYS_renameat2, olddir, oldpath, newdir, newpath, flags));
  };
  // NOREPLACE and EXCHANGE never destroy a file: nothing to bury. WHITEOUT (overlayfs's,
  // refused by NFS) does replace its target, but passes through too: burying first cost
  // more than it saved where the plain call then fails (0ed699e).
  if (flags != 0) return plain();
  Guard g;
  if (!g.outermost() || !anything_watched()) return plain();
  int rv = shim_op([&] { return bury_rename(olddir, oldpath, newdir, newpath); });
  return rv == kPass ? plain() : finish(rv);
}
