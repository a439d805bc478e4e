// create, open, flush, fsync, release: the open count that decides delete-on-last-close.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "as_caller.h"
#include "backing_cache.h"
#include "fs.h"
#include "nfsshim/log.h"
#include "ops/ops.h"
#include "passthrough.h"

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
  fi->noflush = fs.local_fs(inode);
#else
  (void)inode;
#endif
}

// Which way the open FI of INODE through backing descriptor FD goes: a backing id
// (passthrough), or 0 (page cache); counted until its release (end_open). The kernel
// refuses an inode open both ways at once, two backing ids for one inode, and keep_cache
// with passthrough (there is no page cache of ours to keep).
// Passthrough may go off for good at a registration (EPERM, ELOOP): files registered before
// keep their id until their last release, new ones go through the page cache.
static int begin_open(Fs& fs, Inode& inode, int fd, fuse_file_info* fi) {
  // No backing id can exist unless the kernel offered passthrough: classic mounts skip the lock.
  if (!S_ISREG(inode.type) || !passthrough::kernel_offers()) return 0;
  std::lock_guard<std::mutex> lock(inode.mu);
  if (inode.cached_opens == 0 && inode.backing_id == 0 && passthrough::active()) {
    int id = passthrough::backing_open(fd);
    if (id > 0) {
      inode.backing_id = id;
    } else {
      static std::atomic<int> last_cause{0};
      if (last_cause.exchange(-id) != -id)
        passthrough::say_off(fs.opts.passthrough_asked,
                             std::string("cannot register a backing file (") + std::strerror(-id) +
                                 (passthrough::active() ? "): this file is served through the page cache"
                                                        : "): every file is served through the page cache"));
    }
  }
  if (inode.backing_id > 0) {
    ++inode.passthrough_opens;
    inode.passthrough_seen = true;
    fi->keep_cache = 0;
    return inode.backing_id;
  }
  ++inode.cached_opens;
  return 0;
}

// One open of INODE is released (or its reply never reached the kernel).
static void end_open(Inode& inode) {
  if (!S_ISREG(inode.type) || !passthrough::kernel_offers()) return;
  std::lock_guard<std::mutex> lock(inode.mu);
  if (inode.passthrough_opens > 0) {
    if (--inode.passthrough_opens == 0) {
      passthrough::backing_close(inode.backing_id);
      inode.backing_id = 0;
    }
  } else if (inode.cached_opens > 0) {
    --inode.cached_opens;
  }
}

// An open begun as passthrough whose reply went out without the id: count it as cached.
static void open_went_cached(Inode& inode) {
  end_open(inode);
  std::lock_guard<std::mutex> lock(inode.mu);
  ++inode.cached_opens;
  SHIM_LOG_ERROR("passthrough: an open reply went out without its backing id");
}

// With atomic O_TRUNC the kernel leaves to us what a truncate by a caller without
// CAP_FSETID does: set-user-ID goes, and set-group-ID of a group-executable file. Our open
// ran as root, which keeps them.
static void kill_suid_after_truncate(fuse_req_t req, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return;
  mode_t kill = (st.st_mode & S_ISUID) | ((st.st_mode & S_IXGRP) ? (st.st_mode & S_ISGID) : 0);
  if (kill == 0 || caller_has_cap(req, 4 /* CAP_FSETID */)) return;
  if (::fchmod(fd, st.st_mode & 07777 & ~kill) != 0 && log::first_time("otrunc-suid"))
    SHIM_LOG_WARN("open with O_TRUNC: cannot clear the set-user/group-ID bits: {}", std::strerror(errno));
}

void create(fuse_req_t req, fuse_ino_t parent_ino, const char* name, mode_t mode,
            fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, EEXIST);
  // Always a new file: the kernel sends CREATE for a name it found absent, but the name
  // may exist by now (another NFS client, a program on SOURCE). Opened as root, a symlink
  // there would be followed anywhere and a file opened past its mode; ESTALE instead makes
  // the kernel look the name up again and open what is there with its own checks.
  // Made as the caller (as_caller.h), like mkdir: its owner, group and set-user/group-ID
  // bits are what the caller would get without the mount (a chown afterwards clears those
  // bits), and on NFS the server sees the caller.
  int fd;
  {
    CallerUmask um(req, fs);
    AsCaller as(req, fs);
    fd = as.error();
    if (fd == 0)
      fd = static_cast<int>(neg(::openat(parent->fd.get(), name,
                                         backing_flags(fs, fi->flags) | O_CREAT | O_EXCL | O_NOFOLLOW, um.mode(mode))));
    if (fd == -EEXIST && !(fi->flags & O_EXCL)) fd = -ESTALE;
    if (fd >= 0) {
      if (int rv = as.chown_group(parent->fd.get(), fd); rv < 0) {
        ::close(fd);
        fd = rv;
      }
    }
  }
  if (fd < 0) return (void)fuse_reply_err(req, -fd);
  fuse_entry_param e{};
  int rv = do_lookup(fs, parent_ino, name, &e, true);
  if (rv < 0) {
    ::close(fd);
    return (void)fuse_reply_err(req, -rv);
  }
  auto inode = fs.inodes->get(e.ino);
  // The name may hold another file by now: a racer on SOURCE (or another NFS client)
  // renamed one over ours. Handed that entry with our descriptor, the caller would get
  // another user's file (its attributes; with passthrough its data as well, and its later
  // opens our file). ESTALE makes the kernel look the name up again, with its own checks.
  struct stat opened;
  if (!inode || ::fstat(fd, &opened) != 0 || !(key_of(opened) == inode->key)) {
    ::close(fd);
    if (inode) fs.inodes->forget(e.ino, 1);
    return (void)fuse_reply_err(req, ESTALE);
  }
  open_ref(*inode);
  fi->fh = static_cast<uint64_t>(fd);
  set_open_flags(fs, *inode, fi);
  const int id = begin_open(fs, *inode, fd, fi);
  bool carried = false;
  if (passthrough::reply_create(req, &e, fi, id, &carried) != 0) {  // interrupted: no release will come
    end_open(*inode);
    ::close(fd);
    release_ref(fs, *inode);
    fs.inodes->forget(e.ino, 1);
  } else if (id > 0 && !carried) {
    open_went_cached(*inode);
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
  if (fi->flags & O_TRUNC) kill_suid_after_truncate(req, fd);
  fi->fh = static_cast<uint64_t>(fd);
  set_open_flags(fs, *inode, fi);
  const int id = begin_open(fs, *inode, fd, fi);
  bool carried = false;
  if (passthrough::reply_open(req, fi, id, &carried) != 0) {
    end_open(*inode);
    ::close(fd);
    release_ref(fs, *inode);
  } else if (id > 0 && !carried) {
    open_went_cached(*inode);
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
  int rv = static_cast<int>(neg(datasync ? ::fdatasync(fd) : ::fsync(fd)));
  if (rv == 0 && fs_of(req).opts.drop_backing_cache) drop_synced(fd);  // all clean now
  reply_status(req, rv);
}

void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  // Close first (the backing id holds the file open too): on NFS a graveyard entry still
  // open here would be silly-renamed.
  if (inode) end_open(*inode);
  ::close(static_cast<int>(fi->fh));
  if (inode) release_ref(fs, *inode);
  fuse_reply_err(req, 0);
}

}  // namespace nfsshim::fuse::ops
