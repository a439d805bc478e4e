// create, open, flush, fsync, release: the open count that decides delete-on-last-close.
#include <fcntl.h>
#include <unistd.h>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

// Flags for the backing open. With the writeback cache the kernel may read from a file
// opened write-only and keeps the file size itself, so O_APPEND would be applied twice.
static int backing_flags(const Fs& fs, int flags) {
  flags &= ~O_NOFOLLOW;  // the kernel resolved the path; we open the inode itself
  if (fs.opts.writeback) {
    if ((flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
    flags &= ~O_APPEND;
  }
  return flags | O_CLOEXEC;
}

static void set_open_flags(const Fs& fs, const Inode& inode, fuse_file_info* fi) {
  fi->keep_cache = fs.opts.keep_cache;
  fi->direct_io = 0;  // page cache: shared writable mmap works
#if NFSSHIM_LIBFUSE_VERSION >= 311
  // flush only matters where close reports errors (NFS, FUSE): on a local filesystem the
  // kernel skips the FLUSH round trip at every close (one request fewer per create+close).
  fi->noflush = fs.stable(inode.key);
#else
  (void)inode;
#endif
}

void create(fuse_req_t req, fuse_ino_t parent_ino, const char* name, mode_t mode,
            fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, EEXIST);
  int fd = static_cast<int>(
      neg(::openat(parent->fd.get(), name, backing_flags(fs, fi->flags) | O_CREAT, mode)));
  if (fd < 0) return (void)fuse_reply_err(req, -fd);
  int rv = chown_new(req, fs, *parent, parent->fd.get(), name);
  fuse_entry_param e{};
  if (rv == 0) rv = do_lookup(fs, parent_ino, name, &e, true);
  if (rv < 0) {
    ::close(fd);
    return (void)fuse_reply_err(req, -rv);
  }
  auto inode = fs.inodes->get(e.ino);
  open_ref(*inode);
  fi->fh = static_cast<uint64_t>(fd);
  set_open_flags(fs, *inode, fi);
  if (fuse_reply_create(req, &e, fi) != 0) {  // interrupted: no release will come
    ::close(fd);
    release_ref(fs, *inode);
    fs.inodes->forget(e.ino, 1);
  }
}

void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  // Counted before the backing open: an unlink racing with us then buries the file.
  open_ref(*inode);
  int fd = static_cast<int>(neg(::open(ProcPath(inode->fd.get()).c_str(), backing_flags(fs, fi->flags))));
  if (fd < 0) {
    release_ref(fs, *inode);
    return (void)fuse_reply_err(req, -fd);
  }
  fi->fh = static_cast<uint64_t>(fd);
  set_open_flags(fs, *inode, fi);
  if (fuse_reply_open(req, fi) != 0) {
    ::close(fd);
    release_ref(fs, *inode);
  }
}

void flush(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  // Called at every close(2) of the caller's descriptor. Closing a duplicate makes NFS
  // write back and report errors now, as a close on the NFS mount itself would.
  int dup = ::dup(static_cast<int>(fi->fh));
  if (dup == -1) return (void)fuse_reply_err(req, errno);
  reply_status(req, neg(::close(dup)));
}

void fsync(fuse_req_t req, fuse_ino_t, int datasync, fuse_file_info* fi) {
  int fd = static_cast<int>(fi->fh);
  reply_status(req, neg(datasync ? ::fdatasync(fd) : ::fsync(fd)));
}

void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  // Close first: on NFS a graveyard entry still open here would be silly-renamed.
  ::close(static_cast<int>(fi->fh));
  if (auto inode = fs.inodes->get(ino)) release_ref(fs, *inode);
  fuse_reply_err(req, 0);
}

}  // namespace nfsshim::fuse::ops
