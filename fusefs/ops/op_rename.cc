// rename (with RENAME_NOREPLACE, RENAME_EXCHANGE or RENAME_WHITEOUT). A replaced target that is still open is
// buried first where SOURCE is not a local filesystem, so its holders keep their data and no
// silly rename happens.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"
#include "ops/ops.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

namespace nfsshim::fuse::ops {

static int do_rename(int olddir, const char* oldname, int newdir, const char* newname,
                     unsigned flags) {
  // The syscall: glibc < 2.28 has no renameat2 wrapper.
  if (flags == 0) return static_cast<int>(neg(::renameat(olddir, oldname, newdir, newname)));
  return static_cast<int>(neg(::syscall(SYS_renameat2, olddir, oldname, newdir, newname, flags)));
}

// The inode that renaming OLD over NEW would unlink, if it must be buried first.
static std::shared_ptr<Inode> replaced_inode(Fs& fs, int olddir, const char* oldname, int newdir,
                                             const char* newname, unsigned flags) {
  if (flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)) return nullptr;
  struct stat target, source;
  if (sys::fstatat(newdir, newname, &target, AT_SYMLINK_NOFOLLOW) != 0) return nullptr;
  if (!S_ISREG(target.st_mode)) return nullptr;
  // A rename the kernel refuses or treats as a no-op must stay exactly that.
  if (sys::fstatat(olddir, oldname, &source, AT_SYMLINK_NOFOLLOW) != 0) return nullptr;
  if (S_ISDIR(source.st_mode) || key_of(source) == key_of(target)) return nullptr;
  return fs.inodes->find(key_of(target));
}

void rename(fuse_req_t req, fuse_ino_t parent_ino, const char* name, fuse_ino_t newparent_ino,
            const char* newname, unsigned int flags) {
  Fs& fs = fs_of(req);
  // WHITEOUT replaces its target like a plain rename (the kernel checked CAP_MKNOD).
  if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
    return (void)fuse_reply_err(req, EINVAL);
  auto parent = fs.inodes->get(parent_ino);
  auto newparent = fs.inodes->get(newparent_ino);
  if (!parent || !newparent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, ENOENT);
  if (fs.hidden_name(*newparent, newname)) return (void)fuse_reply_err(req, EPERM);  // reserved
  const int olddir = parent->fd.get(), newdir = newparent->fd.get();
  // The sticky rule for the source and for a target it replaces (or exchanges with).
  int rv = sticky_check(req, olddir, name);
  if (rv == 0 && !(flags & RENAME_NOREPLACE)) rv = sticky_check(req, newdir, newname);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);

  auto victim = replaced_inode(fs, olddir, name, newdir, newname, flags);
  // A local filesystem keeps the replaced file for its holders by itself: the plain rename,
  // atomic, is all it takes. Burying first is two steps, the name missing in between (and
  // after a crash between them); it is needed only where SOURCE would hide the holders' file
  // beside its name (NFS: .nfs*, a FUSE SOURCE: .fuse_hidden*).
  if (victim && !fs.backing_nfs && fs.local_fs(*victim)) victim = nullptr;
  auto plain = [&] { return do_rename(olddir, name, newdir, newname, flags); };
  if (!victim) return reply_status(req, plain());
  // Pinned until the rename is done: a last release meanwhile must not remove the entry
  // that a failed rename puts back. Not buried: renamed under the victim's lock.
  int renamed = 0;
  int buried = bury_or(fs, *victim, newdir, newname, true, plain, &renamed);
  if (buried == 0) return reply_status(req, renamed);
  if (buried < 0) return reply_status(req, plain());  // the target vanished: the rename says what now
  rv = plain();
  if (rv < 0) unbury(fs, *victim, newdir, newname);
  release_ref(fs, *victim);  // the pin: the entry goes now if nothing else holds the file
  reply_status(req, rv);
}

}  // namespace nfsshim::fuse::ops
