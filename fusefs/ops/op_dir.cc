// opendir, readdir, readdirplus, releasedir, fsyncdir. The graveyard is left out of listings.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {
namespace {

// One open directory. The kernel serializes readdir on one handle; offsets are the
// backing filesystem's own telldir cookies (d_off), so seekdir can resume anywhere.
struct DirHandle {
  DIR* dp = nullptr;
  off_t offset = 0;
  dirent* entry = nullptr;  // read but not yet sent (did not fit in the last reply)
  ~DirHandle() {
    if (dp) ::closedir(dp);
  }
};

DirHandle* handle_of(fuse_file_info* fi) { return reinterpret_cast<DirHandle*>(fi->fh); }

bool is_dot_or_dotdot(const char* n) {
  return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi,
                bool plus) {
  Fs& fs = fs_of(req);
  auto dir = fs.inodes->get(ino);
  if (!dir) return (void)fuse_reply_err(req, ESTALE);
  DirHandle* d = handle_of(fi);
  if (offset != d->offset) {
    ::seekdir(d->dp, offset);
    d->entry = nullptr;
    d->offset = offset;
  }
  std::vector<char> buf(size);
  size_t used = 0;
  int err = 0;
  for (;;) {
    if (!d->entry) {
      errno = 0;
      d->entry = ::readdir(d->dp);
      if (!d->entry) {
        err = errno;
        break;
      }
    }
    const dirent* de = d->entry;
    const off_t next = de->d_off;
    if (fs.hidden_name(*dir, de->d_name)) {
      d->entry = nullptr;
      d->offset = next;
      continue;
    }
    size_t entsize;
    if (plus) {
      fuse_entry_param e{};
      // No lookup (e.ino 0: the kernel adds the name only) for "." and "..", and for a
      // mount point: its attributes come from the mounted filesystem, which may never
      // answer; getdents on SOURCE does not ask it either (a stat of the name will).
      if (is_dot_or_dotdot(de->d_name) ||
          ((de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) &&
           is_mount_point(dir->fd.get(), de->d_name))) {
        e.attr.st_ino = fs.visible_ino(dir->key.dev, de->d_ino);
        e.attr.st_mode = static_cast<mode_t>(de->d_type) << 12;
      } else {
        int rv = do_lookup(fs, ino, de->d_name, &e);
        if (rv == -ENOENT) {  // removed since readdir saw it
          d->entry = nullptr;
          d->offset = next;
          continue;
        }
        if (rv < 0) {
          err = -rv;
          break;
        }
      }
      entsize = fuse_add_direntry_plus(req, buf.data() + used, size - used, de->d_name, &e, next);
      if (entsize > size - used) {
        // Not sent: the kernel will not count this lookup.
        if (e.ino) fs.inodes->forget(e.ino, 1);
        break;
      }
    } else {
      struct stat st{};
      st.st_ino = fs.visible_ino(dir->key.dev, de->d_ino);  // names live on DIR's device
      st.st_mode = static_cast<mode_t>(de->d_type) << 12;
      entsize = fuse_add_direntry(req, buf.data() + used, size - used, de->d_name, &st, next);
      if (entsize > size - used) break;
    }
    used += entsize;
    d->entry = nullptr;
    d->offset = next;
  }
  // An error may only be reported if no entry went out, or lookup counts would drift.
  if (err && used == 0) return (void)fuse_reply_err(req, err);
  fuse_reply_buf(req, buf.data(), used);
}

}  // namespace

void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Fs& fs = fs_of(req);
  auto inode = fs.inodes->get(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  int fd = sys::openat(inode->fd.get(), ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return (void)fuse_reply_err(req, -fd);
  auto d = std::make_unique<DirHandle>();
  d->dp = ::fdopendir(fd);
  if (!d->dp) {
    int e = errno;
    ::close(fd);
    return (void)fuse_reply_err(req, e);
  }
  fi->fh = reinterpret_cast<uint64_t>(d.get());
  fi->keep_cache = 0;
#if NFSSHIM_LIBFUSE_VERSION >= 305
  fi->cache_readdir = 0;  // other clients change NFS directories
#endif
  if (fuse_reply_open(req, fi) == 0) d.release();
}

void readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  do_readdir(req, ino, size, off, fi, false);
}

void readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  do_readdir(req, ino, size, off, fi, true);
}

void releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete handle_of(fi);
  fuse_reply_err(req, 0);
}

void fsyncdir(fuse_req_t req, fuse_ino_t, int datasync, fuse_file_info* fi) {
  int fd = ::dirfd(handle_of(fi)->dp);
  reply_status(req, neg(datasync ? ::fdatasync(fd) : ::fsync(fd)));
}

}  // namespace nfsshim::fuse::ops
