// lookup, forget, forget_multi: the only places that change lookup counts.
#include "fs.h"
#include "ops/ops.h"

namespace nfsshim::fuse::ops {

void lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Fs& fs = fs_of(req);
  fuse_entry_param e{};
  int rv = do_lookup(fs, parent, name, &e);
  if (rv == -ENOENT && fs.opts.negative_timeout > 0) {
    e = fuse_entry_param{};  // ino 0: a cacheable "no such name"
    e.entry_timeout = fs.opts.negative_timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  if (fuse_reply_entry(req, &e) != 0) fs.inodes->forget(e.ino, 1);  // interrupted
}

void forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  fs_of(req).inodes->forget(ino, nlookup);
  fuse_reply_none(req);
}

void forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Fs& fs = fs_of(req);
  for (size_t i = 0; i < count; ++i) fs.inodes->forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

}  // namespace nfsshim::fuse::ops
