// mkdir, mknod, symlink: make the node as the caller (as_caller.h), look it up.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "as_caller.h"
#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {
namespace {

// MAKE(dirfd, umask) creates PARENT/NAME (with umask.mode(mode)) and returns 0 or -errno. It runs as the caller
// (as_caller.h): the node is the caller's from the start, nothing to give it afterwards.
template <typename Make>
void make_node(fuse_req_t req, fuse_ino_t parent_ino, const char* name, Make make) {
  Fs& fs = fs_of(req);
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return (void)fuse_reply_err(req, ESTALE);
  if (fs.hidden_name(*parent, name)) return (void)fuse_reply_err(req, EEXIST);
  int rv;
  {
    CallerUmask um(req, fs);
    AsCaller as(req, fs);
    rv = as.error();
    if (rv == 0) rv = make(parent->fd.get(), um);
    if (rv == 0) rv = as.chown_group(parent->fd.get(), name);
  }
  fuse_entry_param e{};
  if (rv == 0) rv = do_lookup(fs, parent_ino, name, &e, true);
  if (rv < 0) return (void)fuse_reply_err(req, -rv);
  if (fuse_reply_entry(req, &e) != 0) fs.inodes->forget(e.ino, 1);
}

}  // namespace

void mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  make_node(req, parent, name, [&](int dirfd, const CallerUmask& um) { return sys::mkdirat(dirfd, name, um.mode(mode)); });
}

void mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  make_node(req, parent, name,
            [&](int dirfd, const CallerUmask& um) {
    return static_cast<int>(neg(::mknodat(dirfd, name, um.mode(mode), rdev)));
  });
}

void symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  make_node(req, parent, name,
            [&](int dirfd, const CallerUmask&) { return static_cast<int>(neg(::symlinkat(link, dirfd, name))); });
}

}  // namespace nfsshim::fuse::ops
