// FUSE low-level operations over a direct engine (client.h). Every op: take the caller's
// identity, make the NFS calls, reply once. Errors from the client are -errno; replies
// take +errno.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "loop.h"
#include "splice_read.h"
#include "nfs/nfs_fs.h"
#include "nfsshim/log.h"

namespace nfsshim::fuse::nfsfs {
namespace {

NfsFs& fs_of(fuse_req_t req) { return *static_cast<NfsFs*>(fuse_req_userdata(req)); }

// AUTH_SYS identity of the request: the caller's, unless the URL fixed one. Supplementary
// groups cost a /proc read, so only metadata ops (WITH_GROUPS) fetch them.
nfs::Cred cred_of(fuse_req_t req, bool with_groups = true) {
  NfsFs& fs = fs_of(req);
  const fuse_ctx* ctx = fuse_req_ctx(req);
  nfs::Cred c;
  const int fixed_uid = fs.client->fixed_uid(), fixed_gid = fs.client->fixed_gid();
  c.uid = fixed_uid >= 0 ? static_cast<uint32_t>(fixed_uid) : ctx->uid;
  c.gid = fixed_gid >= 0 ? static_cast<uint32_t>(fixed_gid) : ctx->gid;
  if (with_groups && fixed_uid < 0) {
    gid_t groups[16];
    int n = fuse_req_getgroups(req, 16, groups);
    for (int i = 0; i < n && i < 16; ++i) c.groups.push_back(groups[i]);
  }
  return c;
}

// The identity open HANDLE of N was made with (groups included): its I/O goes as the opener,
// as the kernel client's does. A request's own (without groups) if the open is unknown.
std::shared_ptr<const nfs::Cred> open_cred(fuse_req_t req, Node& n, uint64_t handle) {
  {
    std::lock_guard<std::mutex> g(n.mu);
    auto it = n.open_creds.find(handle);
    if (it != n.open_creds.end()) return it->second;
  }
  return std::make_shared<const nfs::Cred>(cred_of(req, false));
}

void to_stat(const nfs::Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.fileid;
  st->st_mode = a.st_mode();
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blocks = static_cast<blkcnt_t>((a.used + 511) / 512);
  st->st_blksize = 1 << 20;
  st->st_rdev = makedev(a.rdev_major, a.rdev_minor);
  st->st_atim = a.atime;
  st->st_mtim = a.mtime;
  st->st_ctim = a.ctime;
}

std::shared_ptr<Node> node(fuse_req_t req, fuse_ino_t ino) {
  auto n = fs_of(req).nodes->get(ino);
  if (!n) SHIM_LOG_ERROR("[ino {}] unknown inode", ino);
  return n;
}

bool hidden(fuse_ino_t parent, const char* name, const NfsFs& fs) {
  return parent == FUSE_ROOT_ID && fs.graveyard_name == name;
}

// N's graveyard entry if nothing needs it any more (taken out of N), else "". N->mu held.
// Needed while open; for a file replaced by rename (keep_while_known) also while the
// kernel knows it: an open of it may be on its way (README "ESTALE from open").
std::string entry_done_locked(Node& n) {
  if (n.buried.empty() || n.nopen > 0 || (n.keep_while_known && n.nlookup > 0)) return {};
  n.keep_while_known = false;
  std::string e;
  e.swap(n.buried);
  return e;
}

void remove_entry(NfsFs& fs, const Node& n, const std::string& entry) {
  int rv = fs.client->remove(fs.client->default_cred(), fs.graveyard_fh(), entry);
  // Gone with a graveyard removed on the export (made again since, or not yet): nothing left.
  if (rv == -ENOENT || rv == -ESTALE)
    SHIM_LOG_INFO("[ino {}] graveyard entry {} already gone ({}): was the graveyard removed?", n.ino, entry,
                  std::strerror(-rv));
  else if (rv < 0)
    SHIM_LOG_WARN("[ino {}] removing graveyard entry {}: {}", n.ino, entry, std::strerror(-rv));
}

// The kernel drops COUNT lookups of INO: at the last one a graveyard entry kept for it goes
// (under the removal guard, like a last release).
void forget_node(NfsFs& fs, uint64_t ino, uint64_t count) {
  auto n = fs.nodes->get(ino);
  if (!n) return;
  std::unique_lock<std::shared_mutex> guard(n->removal_mu);
  fs.nodes->forget(ino, count);
  std::string entry;
  {
    std::lock_guard<std::mutex> g(n->mu);
    entry = entry_done_locked(*n);
  }
  if (!entry.empty()) remove_entry(fs, *n, entry);
}

std::shared_ptr<FileIo> io_of(const std::shared_ptr<Node>& n) {
  std::lock_guard<std::mutex> g(n->mu);
  return n->io;
}

ssize_t write_all(FileIo& io, const nfs::Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                  int stable = nfs::kUnstable);

// Sends an answered write (registered as TICKET, holding one of the mount's limit) and ends
// it; an error is kept for the file's next flush or fsync.
void land(NfsFs& fs, Node& n, const std::shared_ptr<FileIo>& io, int64_t ticket, const nfs::Cred& c,
          uint64_t off, std::shared_ptr<const std::string> data) {
  const size_t size = data->size();
  ssize_t rv = io ? write_all(*io, c, off, std::move(data)) : -EBADF;
  n.wb.end(ticket, static_cast<int>(std::min<ssize_t>(rv, 0)));
  fs.wb_limit->release(rv < 0);
  if (rv < 0)
    SHIM_LOG_WARN("[ino {}] write of {} bytes at {}, answered before the server's reply, failed: {} "
                  "(reported at the next flush or fsync)", n.ino, size, off, std::strerror(static_cast<int>(-rv)));
}

// Sends N's gathered batch B (answered already).
void send_batch(NfsFs& fs, Node& n, const std::shared_ptr<FileIo>& io, Batch b) {
  fs.gather->ended();
  fs.wb_limit->acquire();
  land(fs, n, io, b.ticket, b.cred, b.off, std::move(b.data));
}

// N's WriteBehind waits, sending the gathered batch that holds one up.
void wait_before(NfsFs& fs, const std::shared_ptr<Node>& n, uint64_t point) {
  Batch b;
  while (n->wb.wait_before(point, &b)) send_batch(fs, *n, io_of(n), std::move(b));
}
void wait_overlapping(NfsFs& fs, const std::shared_ptr<Node>& n, uint64_t off, uint64_t len) {
  Batch b;
  while (n->wb.wait_overlapping(off, len, &b)) send_batch(fs, *n, io_of(n), std::move(b));
}

// A server that restarted may have lost what N's writer keeps for COMMIT (written
// UNSTABLE, answered, not committed yet): it then has an older size and older bytes. The
// kernel would take that size (a shrink: an O_APPEND write goes to the old end, over our
// data, and the COMMIT's re-send then puts back only what that write did not cover) and
// reads would return the old bytes. The kernel's NFS client keeps such data in its page
// cache and never shrinks i_size while it has unstable pages; we keep no cache, so the
// data goes back to the server before its size or bytes are used: a COMMIT, whose new
// verifier makes the writer re-send it. Only for data written before the engine last saw
// the server come back (a v3 reconnect, a v4.1 new client id): otherwise nothing is sent.
// Called after a fetch from the server, since the restart may be noticed during it.
// 1 committed (fetch again), 0 nothing such kept, -errno: the re-send failed and the
// server's view is not the file, so the caller fails rather than hand it on.
// IO: N's (null: not open, nothing kept).
int restore_lost(const Node& n, FileIo* io) {
  int rv = io ? io->commit_if_restarted() : 0;
  if (rv < 0)
    SHIM_LOG_WARN("[ino {}] re-sending written data the restarted server may have lost: {}", n.ino,
                  std::strerror(-rv));
  return rv;
}

// GETATTR of N, after restore_lost if it was needed.
int fetch_attr(NfsFs& fs, const nfs::Cred& c, const std::shared_ptr<Node>& n, nfs::Attr* a) {
  int rv = fs.client->getattr(c, n->fh, a);
  if (rv < 0) return rv;
  rv = restore_lost(*n, io_of(n).get());
  return rv > 0 ? fs.client->getattr(c, n->fh, a) : rv;
}

// A, the attributes of FH fetched by a call begun at POINT (WriteBehind::now()), fetched
// again if a write of the file answered before POINT may have landed meanwhile: their
// size would set the file back in the kernel (write_behind.h); or if the server may have
// lost written data (restore_lost). 0 or -errno.
int settle_attr(NfsFs& fs, const nfs::Cred& c, const nfs::Fh& fh, uint64_t point, nfs::Attr* a) {
  auto n = fs.nodes->find(fh);
  if (!n) return 0;
  const bool raced = n->wb.raced(point);
  if (raced) wait_before(fs, n, point);
  int lost = restore_lost(*n, io_of(n).get());
  if (lost < 0) return lost;
  return raced || lost > 0 ? fs.client->getattr(c, fh, a) : 0;
}

// Replies the entry of a call begun at POINT that returned RV with FH and A, or its error.
void reply_entry(fuse_req_t req, uint64_t point, int rv, const nfs::Fh& fh, nfs::Attr a) {
  NfsFs& fs = fs_of(req);
  if (rv == 0) rv = settle_attr(fs, cred_of(req, false), fh, point, &a);
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  auto n = fs.nodes->remember(fh);
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = n->ino;
  to_stat(a, &e.attr);
  e.attr_timeout = fs.opts.attr_timeout;
  e.entry_timeout = fs.opts.entry_timeout;
  if (fuse_reply_entry(req, &e) == -ENOENT) forget_node(fs, n->ino, 1);  // interrupted
}

#define NODE_OR_FAIL(n, req, ino)   \
  auto n = node(req, ino);          \
  if (!n) {                         \
    fuse_reply_err(req, ESTALE);    \
    return;                         \
  }

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  nfs::Fh fh;
  nfs::Attr a;
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->lookup(cred_of(req), p->fh, name, &fh, &a);
  reply_entry(req, point, rv, fh, a);
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) noexcept {
  forget_node(fs_of(req), ino, nlookup);
  fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) noexcept {
  for (size_t i = 0; i < count; ++i) forget_node(fs_of(req), forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) noexcept {
  NODE_OR_FAIL(n, req, ino);
  wait_before(fs_of(req), n, WriteBehind::now());  // the size the kernel takes includes them
  nfs::Attr a;
  int rv = fetch_attr(fs_of(req), cred_of(req, false), n, &a);
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  struct stat st;
  to_stat(a, &st);
  fuse_reply_attr(req, &st, fs_of(req).opts.attr_timeout);
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) noexcept {
  NODE_OR_FAIL(n, req, ino);
  NfsFs& fs = fs_of(req);
  nfs::Cred c = cred_of(req);
  nfs::SetAttr sa;
  sa.set_mode = to_set & FUSE_SET_ATTR_MODE;
  sa.mode = attr->st_mode & 07777;
  sa.set_uid = to_set & FUSE_SET_ATTR_UID;
  sa.uid = attr->st_uid;
  sa.set_gid = to_set & FUSE_SET_ATTR_GID;
  sa.gid = attr->st_gid;
  sa.set_size = to_set & FUSE_SET_ATTR_SIZE;
  sa.size = static_cast<uint64_t>(attr->st_size);
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) sa.atime = nfs::SetAttr::Time::kServerNow;
  else if (to_set & FUSE_SET_ATTR_ATIME) sa.atime = nfs::SetAttr::Time::kClient;
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) sa.mtime = nfs::SetAttr::Time::kServerNow;
  else if (to_set & FUSE_SET_ATTR_MTIME) sa.mtime = nfs::SetAttr::Time::kClient;
  sa.atime_val = attr->st_atim;
  sa.mtime_val = attr->st_mtim;
  // Answered writes land first: a truncate after them, and the attributes replied.
  wait_before(fs, n, WriteBehind::now());
  {
    // Kept data is committed before any SETATTR (as the kernel's nfs_setattr syncs first):
    // re-sent after a server restart it would come back after a truncate, or move the
    // mtime set now (tar, cp -p).
    std::shared_ptr<FileIo> io;
    {
      std::lock_guard<std::mutex> g(n->mu);
      io = n->io;
    }
    // A truncate fails if they cannot be made stable (a failed resend: ENOSPC, a soft
    // timeout): they would come back after it, and its caller's fsync would fail too. Other
    // changes go on, as in the kernel (which ignores its sync's result there), and commit
    // as the writer: the caller of a chmod or utimes may not be allowed to write.
    int cr = !io ? 0 : sa.set_size ? io->commit(c) : io->commit_kept();
    if (cr < 0 && sa.set_size) {
      fuse_reply_err(req, -cr);
      return;
    }
    if (cr < 0)
      SHIM_LOG_WARN("[ino {}] COMMIT before a SETATTR failed ({}): the data stays kept for the next one",
                    ino, std::strerror(-cr));
  }
  int rv = fs.client->setattr(c, n->fh, sa);
  nfs::Attr a;
  if (rv == 0) rv = fetch_attr(fs, c, n, &a);
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  struct stat st;
  to_stat(a, &st);
  fuse_reply_attr(req, &st, fs.opts.attr_timeout);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) noexcept {
  NODE_OR_FAIL(n, req, ino);
  std::string target;
  int rv = fs_of(req).client->readlink(cred_of(req), n->fh, &target);
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  fuse_reply_readlink(req, target.c_str());
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  nfs::Fh fh;
  nfs::Attr a;
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->mkdir(cred_of(req), p->fh, name, mode & 07777, &fh, &a);
  reply_entry(req, point, rv, fh, a);
}

void op_symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  nfs::Fh fh;
  nfs::Attr a;
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->symlink(cred_of(req), p->fh, name, link, &fh, &a);
  reply_entry(req, point, rv, fh, a);
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(newparent, newname, fs)) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  NODE_OR_FAIL(n, req, ino);
  NODE_OR_FAIL(p, req, newparent);
  nfs::Cred c = cred_of(req);
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->link(c, n->fh, p->fh, newname);
  nfs::Attr a;
  if (rv == 0) rv = fs.client->getattr(c, n->fh, &a);
  reply_entry(req, point, rv, n->fh, a);
}

// True if removing a name of N (attributes A) must keep the data for holders through the
// mount: bury it instead (client.h's must_bury).
bool held_open(const std::shared_ptr<Node>& n, const nfs::Attr& a) {
  std::shared_ptr<FileIo> io;
  int nopen;
  bool buried;
  {
    std::lock_guard<std::mutex> g(n->mu);
    io = n->io;
    nopen = n->nopen;
    buried = !n->buried.empty();
  }
  const bool keeps = io && io->server_keeps_unlinked();
  if (keeps && nopen > 0) SHIM_LOG_DEBUG("[ino {}] server preserves it while open: plain remove", n->ino);
  return must_bury(S_ISREG(a.st_mode()), nopen, buried, keeps);
}

// The file a removing call (unlink, rename over) is about to take a name from, with its
// removal guard held until the call is done: no open of it can count itself between our
// "is it open?" and the call (an open that came first is seen and the file buried; one that
// comes after finds the file gone and returns ESTALE, on which the kernel looks the name up
// again). A rename over a file keeps it by a hard link instead (keep_target) and lets the
// guard go during the RENAME.
struct Removal {
  NfsFs* fs = nullptr;
  std::shared_ptr<Node> node;
  std::unique_lock<std::shared_mutex> guard;
  std::chrono::steady_clock::time_point since;  // guard taken
  std::string kept;                             // keep_target's graveyard entry
  Removal() = default;
  Removal(const Removal&) = delete;
  Removal& operator=(const Removal&) = delete;
  ~Removal() {
    if (guard) {
      guard.unlock();
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since);
      if (ms.count() >= 100) SHIM_LOG_DEBUG("[ino {}] removal guard held {} ms", node->ino, ms.count());
    }
    if (node) fs->nodes->maybe_drop(node);
  }
};

// Looks DIR/NAME up for a removal: *R gets its node and holds its removal guard. 1 found
// (*FH, *A), 0 no such name, -errno.
int removal_target(NfsFs& fs, const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, Removal* r,
                   nfs::Fh* fh, nfs::Attr* a) {
  int rv = fs.client->lookup(c, dir, name, fh, a);
  if (rv < 0) return rv == -ENOENT ? 0 : rv;
  r->fs = &fs;
  r->node = fs.nodes->pin(*fh);
  r->guard = std::unique_lock<std::shared_mutex>(r->node->removal_mu);
  r->since = std::chrono::steady_clock::now();
  return 1;
}

// The target of *R (DIR/NAME, attributes A) is about to lose a name: if it is held
// open, moves it into the graveyard. 1 buried, 0 not held, -errno.
int bury_held(NfsFs& fs, const nfs::Fh& dir, const std::string& name, const nfs::Attr& a, Removal* r) {
  if (!held_open(r->node, a)) return 0;
  std::string entry;
  int rv = bury(fs, dir, name, &entry);
  if (rv < 0) return rv;
  {
    std::lock_guard<std::mutex> g(r->node->mu);
    r->node->buried = entry;  // nopen > 0 still: a last release waits for the guard
  }
  SHIM_LOG_DEBUG("buried {} as {}", name, entry);
  return 1;
}

// 0 if the server says C may remove FILE's name (attributes A) from DIR: ACCESS DELETE on
// DIR, from fresh attributes, not the kernel's cache. ACCESS names no file, so it cannot
// judge a sticky directory's rule (only the file's or the directory's owner may remove):
// there the owners are compared here, and a caller who is neither (root included: squashed
// or not, the server decides) gets -EPERM, as from a refused plain REMOVE; the caller's own
// REMOVE then decides. Else -EACCES.
int may_remove(NfsFs& fs, const nfs::Cred& c, const nfs::Fh& dir, const nfs::Attr& a) {
  constexpr uint32_t kAccessDelete = 0x10;  // ACCESS3_DELETE, ACCESS4_DELETE
  nfs::Attr d;
  if (fs.client->getattr(c, dir, &d) != 0) return -EACCES;
  if ((d.mode & S_ISVTX) && c.uid != a.uid && c.uid != d.uid) return -EPERM;  // root: C's REMOVE
  uint32_t granted = 0;
  return fs.client->access(c, dir, kAccessDelete, &granted) == 0 && (granted & kAccessDelete) ? 0 : -EACCES;
}

// Unlink by C of DIR/NAME: if the file is held open through the mount, the name moves into
// the graveyard (bury_held, as the mount). The server does not judge that RENAME as C, so
// it is asked first whether C may remove the name (may_remove): its ACLs, and modes
// newer than the kernel's cached ones (default_permissions), may forbid C what the mount
// may do. Where it says no, or the mount may not move the name (root_squash makes the
// daemon the anonymous uid, which cannot write C's 0755 directory): a hard link into the
// graveyard (as the mount) and then C's own REMOVE of the name, which the server judges
// as without the mount. 1 done (the name is gone), 0 not held or kept by its other names
// (the caller REMOVEs), -errno. *R keeps the file's removal guard.
int unlink_held(NfsFs& fs, const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, Removal* r) {
  nfs::Fh fh;
  nfs::Attr a;
  int rv = removal_target(fs, c, dir, name, r, &fh, &a);
  if (rv <= 0) return rv;
  if (!held_open(r->node, a)) return 0;
  const int allowed = may_remove(fs, c, dir, a);
  const bool may = allowed == 0;
  rv = may ? bury_held(fs, dir, name, a, r) : allowed;  // not granted: C's REMOVE decides
  if (rv != -EACCES && rv != -EPERM) return rv;
  const int moved = rv;
  std::string entry;
  rv = bury_link(fs, fh, &entry);
  if (rv < 0 && a.nlink > 1) {
    // Neither way into the graveyard: the file's other names keep it on the server (the
    // rule before must_bury counted no links), and C's plain REMOVE is judged as C.
    static std::atomic<bool> told_kept{false};
    if (!told_kept.exchange(true))
      SHIM_LOG_WARN("unlink of a held file with other names: it could not go into the graveyard ({}): a "
                    "plain remove, the other names keep it (logged once)", std::strerror(-rv));
    return 0;
  }
  if (rv < 0) return moved;  // the plain call's REMOVE would not help the holders: as before
  static std::atomic<bool> told{false};
  if (may && !told.exchange(true))
    SHIM_LOG_INFO("unlink of a file held open: the server refused the mount's RENAME into the graveyard "
                  "({}; root_squash?): linked there instead, and the name removed as the caller (logged once)",
                  std::strerror(-moved));
  rv = fs.client->remove(c, dir, name);
  if (rv == -EACCES || rv == -EPERM || rv == -EROFS) {
    // C may not remove it: the name stays as it is, and our link goes.
    remove_entry(fs, *r->node, entry);
    return rv;
  }
  // Done, or maybe done (a soft mount's lost reply, another client's REMOVE first): the
  // link stays for the holders either way, and goes at the last release.
  {
    std::lock_guard<std::mutex> g(r->node->mu);
    r->node->buried = entry;  // nopen > 0 still: a last release waits for the guard
  }
  if (rv < 0) return rv;
  SHIM_LOG_DEBUG("buried {} as {} (linked, then removed)", name, entry);
  return 1;
}

// Before a RENAME over DIR/NAME. A regular file with no other name that the kernel knows,
// or one with other names that is held open through the mount, gets a graveyard entry by
// a hard link first, so that it outlives the RENAME while it may still be opened: by its
// holders, and by opens whose path walk found it before the rename (the kernel does not
// order those with our RENAME: each got ESTALE, and a second one after the kernel's single
// retry reached the application). The rename stays atomic (the name
// is never missing). The entry goes at the last release or forget (entry_done_locked); the
// guard is let go during the RENAME. If the server refuses the LINK, a held file is buried
// by a rename instead. 0 or -errno.
int keep_target(NfsFs& fs, const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, Removal* r) {
  nfs::Fh fh;
  nfs::Attr a;
  int rv = removal_target(fs, c, dir, name, r, &fh, &a);
  if (rv <= 0) return rv;
  bool known;
  {
    std::lock_guard<std::mutex> g(r->node->mu);
    known = (r->node->nlookup > 0 || r->node->nopen > 0) && r->node->buried.empty();
  }
  if (!S_ISREG(a.st_mode()) || !known) return 0;  // the RENAME takes no one's file
  // With other names it stays on the server, reached through them, but is kept for its
  // holders all the same: another client may remove those names next (must_bury).
  const bool other_names = a.nlink > 1;
  if (other_names && !held_open(r->node, a)) return 0;
  std::string entry;
  rv = bury_link(fs, fh, &entry);
  if (rv < 0) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      SHIM_LOG_WARN("keeping a file replaced by rename: LINK into the graveyard failed ({}): files held "
                    "open are moved there instead, others are replaced at once (logged once)",
                    std::strerror(-rv));
    rv = bury_held(fs, dir, name, a, r);
    return rv < 0 && !other_names ? rv : 0;  // other names keep it: the RENAME may replace it
  }
  {
    std::lock_guard<std::mutex> g(r->node->mu);
    r->node->buried = entry;
    // The kernel knows the file by its other names too: the entry would outlive them all.
    r->node->keep_while_known = !other_names;
  }
  r->kept = entry;
  r->guard.unlock();  // an open of it may count itself during the RENAME: the file stays
  return 0;
}

// After the RENAME (RV) over keep_target's file: its entry goes now if nothing needs it
// (the kernel forgot the file meanwhile, or the RENAME failed and the file still has its
// name: then unless open, in case it did happen), else at the last release or forget.
void settle_kept(NfsFs& fs, Removal* r, int rv) {
  r->guard.lock();
  r->since = std::chrono::steady_clock::now();
  std::string entry;
  {
    std::lock_guard<std::mutex> g(r->node->mu);
    if (r->node->buried == r->kept) {
      if (rv < 0 && r->node->nopen == 0) r->node->keep_while_known = false;
      entry = entry_done_locked(*r->node);
    }
  }
  if (!entry.empty()) remove_entry(fs, *r->node, entry);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  nfs::Cred c = cred_of(req);
  int rv;
  {
    Removal r;
    rv = unlink_held(fs, c, p->fh, name, &r);
    if (rv == 0) rv = fs.client->remove(c, p->fh, name);
  }
  fuse_reply_err(req, rv < 0 ? -rv : 0);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  int rv = fs.client->rmdir(cred_of(req), p->fh, name);
  fuse_reply_err(req, -rv);
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
               unsigned int flags) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs) || hidden(newparent, newname, fs)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  if (flags != 0) {
    // NFS has no rename flags: EINVAL, as from the kernel's NFS client, on which callers of
    // RENAME_NOREPLACE fall back to what they do there (link + unlink). A LOOKUP then RENAME
    // would say "not replaced" and replace a file another client made in between.
    fuse_reply_err(req, EINVAL);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  NODE_OR_FAIL(np, req, newparent);
  nfs::Cred c = cred_of(req);
  Removal r;  // of the target, until the RENAME is done
  {
    // The target stays for its holders and for opens on their way (keep_target).
    int rv = keep_target(fs, c, np->fh, newname, &r);
    if (rv < 0) {
      fuse_reply_err(req, -rv);
      return;
    }
  }
  int rv = fs.client->rename(c, p->fh, name, np->fh, newname);
  if (!r.kept.empty()) settle_kept(fs, &r, rv);
  fuse_reply_err(req, -rv);
}

// Drops one open of N: at the last one the FileIo goes and a buried file is removed from
// the graveyard unless the kernel may still open it (entry_done_locked), under N's removal
// guard (an open counting itself waits, then finds the file gone: ESTALE, and the kernel
// looks its name up again). COMMITTED: the result of the last COMMIT of this open.
void drop_open(NfsFs& fs, const std::shared_ptr<Node>& n, int committed = 0) {
  std::unique_lock<std::shared_mutex> guard(n->removal_mu);
  std::string entry;
  std::shared_ptr<FileIo> last;
  {
    std::lock_guard<std::mutex> g(n->mu);
    if (--n->nopen == 0) {
      last = std::move(n->io);
      entry = entry_done_locked(*n);
    }
  }
  // Data still kept here never got a good COMMIT (ENOSPC on a re-send, a soft mount's
  // timeout): the server may not have it, and it goes with the FileIo. The kernel's NFS
  // client keeps such pages on the inode and retries; we do not keep them past the last
  // close (a v4.1 re-send needs an open), so the loss is at least said, with its size.
  if (last) {
    const size_t kept = last->kept_bytes();
    if (kept > 0)
      SHIM_LOG_ERROR("[ino {}] last close: {} bytes written through the mount were never committed ({}) "
                     "and are dropped: the server may not have them", n->ino, kept,
                     committed < 0 ? std::strerror(-committed) : "no COMMIT");
    last.reset();
  }
  if (!entry.empty()) remove_entry(fs, *n, entry);
  guard.unlock();
  fs.nodes->maybe_drop(n);
}

// Ends one open of N (HANDLE in its FileIo): data committed, its server state closed.
void end_open(NfsFs& fs, const nfs::Cred& c, const std::shared_ptr<Node>& n, uint64_t handle) {
  std::shared_ptr<FileIo> io;
  {
    std::lock_guard<std::mutex> g(n->mu);
    io = n->io;
  }
  int committed = 0;
  if (io) {
    wait_before(fs, n, WriteBehind::now());  // their stateid is this open's (v4.1)
    committed = io->commit(c);
    if (committed < 0) SHIM_LOG_WARN("[ino {}] COMMIT at release: {}", n->ino, std::strerror(-committed));
    int rv = io->close(c, handle);
    if (rv < 0) SHIM_LOG_WARN("[ino {}] close: {}", n->ino, std::strerror(-rv));
  }
  n->wb.closed(handle);
  {
    std::lock_guard<std::mutex> g(n->mu);
    n->open_creds.erase(handle);
  }
  drop_open(fs, n, committed);
}

// Starts one open of N with open(2) FLAGS; *HANDLE for its release. CREATED: what create
// left open. 0 or -errno (then nothing is counted). The caller holds N's removal guard
// (shared), so no last release can remove the file meanwhile.
int start_open(NfsFs& fs, const nfs::Cred& c, const std::shared_ptr<Node>& n, int flags,
               std::unique_ptr<CreatedOpen> created, uint64_t* handle) {
  std::shared_ptr<FileIo> io;
  {
    std::lock_guard<std::mutex> g(n->mu);
    ++n->nopen;  // first: a concurrent last release must not drop the FileIo we use
    if (!n->io) n->io = fs.client->file_io(n->fh, fs.unstable.get());
    io = n->io;
  }
  int rv = io->open(c, flags, std::move(created), handle);
  if (rv < 0) {
    std::lock_guard<std::mutex> g(n->mu);
    if (--n->nopen == 0) n->io.reset();  // nothing buried: that needs an open
    return rv;
  }
  {
    std::lock_guard<std::mutex> g(n->mu);
    n->open_creds[*handle] = std::make_shared<const nfs::Cred>(c);
  }
  n->wb.opened(*handle, (flags & O_ACCMODE) != O_RDONLY);
  return 0;
}

// Records A as the file's attributes at this open: true if its size, mtime or ctime differ
// from the last open's (or this is the first).
bool changed_since_last_open(Node& n, const nfs::Attr& a) {
  auto same = [](const struct timespec& x, const struct timespec& y) {
    return x.tv_sec == y.tv_sec && x.tv_nsec == y.tv_nsec;
  };
  std::lock_guard<std::mutex> g(n.mu);
  const bool changed = !n.opened_before || n.open_size != a.size || !same(n.open_mtime, a.mtime) ||
                       !same(n.open_ctime, a.ctime);
  n.opened_before = true;
  n.open_size = a.size;
  n.open_mtime = a.mtime;
  n.open_ctime = a.ctime;
  return changed;
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  NfsFs& fs = fs_of(req);
  nfs::Cred c = cred_of(req);  // with groups: the open's I/O goes as this identity
  uint64_t handle = 0;
  int rv;
  std::chrono::milliseconds waited{0};
  {
    // The file exists now and stays (counted) until our release, or we fail: a removal of
    // its last name cannot fall between the check and the count.
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_lock<std::shared_mutex> guard(n->removal_mu);
    waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    // Close-to-open: fresh attributes at every open; the page cache is dropped (keep_cache 0).
    nfs::Attr a;
    rv = fetch_attr(fs, c, n, &a);
    if (rv == 0 && changed_since_last_open(*n, a)) {
      // The kernel's attributes may be older (attr_timeout): a read stops at the size it
      // holds, so another client's append would be cut off. Dropped, it asks again.
      fuse_lowlevel_notify_inval_inode(fs.se, ino, -1, 0);
    }
    if (rv == 0) rv = start_open(fs, c, n, fi->flags, nullptr, &handle);
  }
  if (rv < 0) {
    if (rv == -ESTALE)
      SHIM_LOG_DEBUG("[ino {}] open: ESTALE, removed meanwhile (waited {} ms for a removal)", ino, waited.count());
    fs.nodes->maybe_drop(n);
    fuse_reply_err(req, -rv);
    return;
  }
  fi->fh = handle;
  fi->keep_cache = 0;
  if (fuse_reply_open(req, fi) == -ENOENT) end_open(fs, c, n, handle);  // interrupted
}

// Test hook NFSSHIM_TEST_CREATE_GATE=PATH: each create waits (at most 30 s) until PATH
// exists, so that a test can make the name on the server after the kernel's LOOKUP.
void create_gate(const char* name) {
  static const char* const gate = std::getenv("NFSSHIM_TEST_CREATE_GATE");
  if (!gate) return;
  SHIM_LOG_WARN("test hook NFSSHIM_TEST_CREATE_GATE: the create of '{}' waits for {}", name, gate);
  struct stat st;
  for (int i = 0; i < 3000 && ::stat(gate, &st) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) noexcept {
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  create_gate(name);
  nfs::Fh fh;
  nfs::Attr a;
  nfs::Cred c = cred_of(req);
  std::unique_ptr<CreatedOpen> created;
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->create(c, p->fh, name, mode & 07777, fi->flags, &fh, &a, &created);
  if (rv == 0) rv = settle_attr(fs, c, fh, point, &a);  // without O_EXCL: maybe a file being written
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  auto n = fs.nodes->remember(fh);
  uint64_t handle = 0;
  {
    std::shared_lock<std::shared_mutex> guard(n->removal_mu);
    rv = start_open(fs, c, n, fi->flags, std::move(created), &handle);
  }
  if (rv < 0) {
    forget_node(fs, n->ino, 1);
    fuse_reply_err(req, -rv);
    return;
  }
  fi->fh = handle;
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = n->ino;
  to_stat(a, &e.attr);
  e.attr_timeout = fs.opts.attr_timeout;
  e.entry_timeout = fs.opts.entry_timeout;
  fi->keep_cache = 0;
  if (fuse_reply_create(req, &e, fi) == -ENOENT) {  // interrupted
    end_open(fs, c, n, handle);
    forget_node(fs, n->ino, 1);
  }
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  auto io = io_of(n);
  if (!io) {
    SHIM_LOG_DEBUG("[ino {}] read {} at {}: not open", ino, size, off);
    fuse_reply_err(req, EBADF);
    return;
  }
  wait_overlapping(fs_of(req), n, static_cast<uint64_t>(off), size);  // answered writes first
  thread_local std::vector<char> buf;
  if (buf.size() < size) buf.resize(size);
  const uint64_t point = WriteBehind::now();
  ssize_t rv = io->read(*open_cred(req, *n, fi->fh), fi->fh, static_cast<uint64_t>(off), size, buf.data());
  if (rv >= 0 && static_cast<size_t>(rv) < size && n->wb.raced(point)) {
    // A short read is end of file to the kernel, which cuts the file's size there (a
    // mapped page past it is a SIGBUS): a write answered before this read that had not
    // reached the server when the READ did (still in flight, or landed meanwhile) must
    // land first, and the read goes again. Only those: writes answered later (a
    // producer appending meanwhile) must not hold it.
    wait_before(fs_of(req), n, point);
    rv = io->read(*open_cred(req, *n, fi->fh), fi->fh, static_cast<uint64_t>(off), size, buf.data());
  }
  if (rv >= 0) {
    // The server may have lost written bytes (a restart): they go back, and the read again.
    int lost = restore_lost(*n, io.get());
    if (lost > 0) rv = io->read(*open_cred(req, *n, fi->fh), fi->fh, static_cast<uint64_t>(off), size, buf.data());
    else if (lost < 0) rv = lost;
  }
  if (rv < 0) {
    // A page-in answered with an error is a SIGBUS in the application.
    SHIM_LOG_DEBUG("[ino {}] read {} at {}: {}", ino, size, off, std::strerror(static_cast<int>(-rv)));
    fuse_reply_err(req, static_cast<int>(-rv));
    return;
  }
  fuse_reply_buf(req, buf.data(), static_cast<size_t>(rv));
}

// All of DATA at OFF (the server may write less per call): its size or -errno.
ssize_t write_all(FileIo& io, const nfs::Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                  int stable) {
  const size_t size = data->size();
  size_t done = 0;
  while (done < size) {
    auto piece = done == 0 ? data : std::make_shared<const std::string>(*data, done);
    ssize_t rv = io.write(c, off + done, std::move(piece), stable);
    if (rv < 0) return rv;
    if (rv == 0) return -EIO;
    done += static_cast<size_t>(rv);
  }
  return static_cast<ssize_t>(size);
}

// A WRITE is answered once its data is copied and its turn has come (write_behind.h), then
// sent; O_SYNC, O_DSYNC and O_DIRECT writes and write_behind_kb=0 wait for the server.
// A WRITE of BUF (SIZE bytes at OFF). OWNED, if given, holds BUF already as a copy of its
// own (op_write_buf's); else the copy the write keeps is made here.
void write_data(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi,
                std::shared_ptr<const std::string> owned) {
  NODE_OR_FAIL(n, req, ino);
  auto io = io_of(n);
  if (!io) {
    fuse_reply_err(req, EBADF);
    return;
  }
  NfsFs& fs = fs_of(req);
  const auto cred = open_cred(req, *n, fi->fh);
  const nfs::Cred& c = *cred;
  const uint64_t at = static_cast<uint64_t>(off);
  // O_SYNC, O_DSYNC, O_DIRECT: on the server's stable storage before the reply (FILE_SYNC),
  // so the FSYNC the kernel sends after O_SYNC/O_DSYNC ones finds nothing to COMMIT (one
  // round trip, not two) and O_DIRECT ones, which get no FSYNC, are stable as with the
  // kernel's NFS client.
  const bool stable_now = (fi->flags & (O_SYNC | O_DSYNC | O_DIRECT)) != 0;
  const bool behind = fs.wb_budget > 0 && !stable_now;
  Batch b;
  if (behind && size < fs.gather_max) {
    int64_t started = 0;
    int r;
    while ((r = n->wb.gather(at, buf, size, c, fs.gather_max, fs.wb_budget, fs.gather->room(), &b,
                             &started)) == WriteBehind::kSendFirst)
      send_batch(fs, *n, io, std::move(b));
    if (r < 0) {  // an earlier answered write failed (ENOSPC, EDQUOT, ...)
      fuse_reply_err(req, -r);
      return;
    }
    if (r != WriteBehind::kNotGathered) {
      fs.gather->gathered();
      fuse_reply_write(req, size);
      if (r == WriteBehind::kStarted) fs.gather->started(n, started);
      if (b.data) {  // full: sent now, and the writer's next WRITE comes meanwhile
        request_goes_on();
        send_batch(fs, *n, io, std::move(b));
      }
      return;
    }
  }
  auto data = owned ? std::move(owned) : std::make_shared<const std::string>(buf, size);
  // Budget 0: waits until nothing of the file is in flight (one write at a time).
  int64_t ticket;
  while ((ticket = n->wb.begin(at, size, behind ? fs.wb_budget : 0, &b)) == 0)
    send_batch(fs, *n, io, std::move(b));
  if (ticket < 0) {  // an earlier answered write failed (ENOSPC, EDQUOT, ...)
    fuse_reply_err(req, static_cast<int>(-ticket));
    return;
  }
  // The mount's limit is taken only by a write about to be sent (registered already), so a
  // holder only ever waits for the server, never for another write.
  if (behind) {
    fs.wb_limit->acquire();
    fuse_reply_write(req, size);
    request_goes_on();  // the writer's next WRITE comes now
    land(fs, *n, io, ticket, c, at, std::move(data));
    return;
  }
  ssize_t rv = write_all(*io, c, at, std::move(data), stable_now ? nfs::kFileSync : nfs::kUnstable);
  n->wb.end(ticket, 0);  // its caller hears the error itself
  if (rv < 0) {
    fuse_reply_err(req, static_cast<int>(-rv));
    return;
  }
  fuse_reply_write(req, static_cast<size_t>(rv));
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) noexcept {
  write_data(req, ino, buf, size, off, fi, nullptr);
}

// With write_buf set, libfuse splices WRITE requests of more than a page from /dev/fuse into
// a pipe (FUSE_CAP_SPLICE_READ), and the kernel puts the written page-cache pages into it
// without copying them. One read from the pipe then makes the copy the write keeps. Through
// op_write the data was copied twice: by the kernel into libfuse's buffer (page by page,
// pinning each one), then into that copy.
void op_write_buf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* in, off_t off, fuse_file_info* fi) noexcept {
  const size_t size = fuse_buf_size(in);
  if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {  // small: libfuse read it already
    write_data(req, ino, static_cast<const char*>(in->buf[0].mem) + in->off, size, off, fi, nullptr);
    return;
  }
  // Writes smaller than a batch are gathered (copied into one) from a reused buffer.
  thread_local std::vector<char> scratch;
  std::shared_ptr<std::string> owned;
  char* dst;
  if (size < fs_of(req).gather_max) {
    if (scratch.size() < size) scratch.resize(size);
    dst = scratch.data();
  } else {
    owned = std::make_shared<std::string>(size, '\0');
    dst = &(*owned)[0];
  }
  fuse_bufvec to = FUSE_BUFVEC_INIT(size);
  to.buf[0].mem = dst;
  ssize_t got = fuse_buf_copy(&to, in, static_cast<fuse_buf_copy_flags>(0));
  if (got < 0 || static_cast<size_t>(got) != size) {
    int e = got < 0 ? static_cast<int>(-got) : EIO;
    SHIM_LOG_WARN("[ino {}] write {} at {}: reading the request's data: {}", ino, size, off,
                  got < 0 ? std::strerror(e) : "short");
    fuse_reply_err(req, e);
    return;
  }
  fs_of(req).piped_writes.fetch_add(1, std::memory_order_relaxed);
  write_data(req, ino, dst, size, off, fi, std::move(owned));
}

void op_init(void* userdata, fuse_conn_info* conn) noexcept {
  const NfsFs& fs = *static_cast<const NfsFs*>(userdata);
  // open(O_TRUNC) as a SETATTR of size 0 after the OPEN (op_setattr: answered writes land
  // and are committed first), as the kernel's NFSv3 client sends it. libfuse asks for
  // FUSE_CAP_ATOMIC_O_TRUNC by default, and then the kernel leaves the truncate to our OPEN.
  conn->want &= ~static_cast<unsigned>(FUSE_CAP_ATOMIC_O_TRUNC);
  // WRITE requests through a pipe (op_write_buf). Replies are not spliced: READ data is in
  // our memory, and libfuse would copy it into a pipe first.
  std::string why = fs.opts.splice ? "" : "-o nosplice";
  const bool on = want_spliced_requests(conn, fs.opts.splice, &why);
  SHIM_LOG_INFO("connection: protocol {}.{}, max_write {}, written data through a pipe (splice): {}{}",
                conn->proto_major, conn->proto_minor, conn->max_write, on ? "on" : "off, ", why);
}

// Close-to-open and fsync: every answered write landed, then COMMIT. The error of an
// answered write that failed is reported here, once to each open (HANDLE), before the
// COMMIT's own.
int commit_node(fuse_req_t req, const std::shared_ptr<Node>& n, uint64_t handle) {
  wait_before(fs_of(req), n, WriteBehind::now());
  auto io = io_of(n);
  int rv = io ? io->commit(*open_cred(req, *n, handle)) : 0;
  int kept = n->wb.take_error(handle);
  return kept < 0 ? kept : rv;
}

// Before a lock is released (F_UNLCK, or a close that drops the owner's locks): the file's
// answered writes land, then COMMIT, as the kernel's NFS client does (do_unlk: nfs_wb_all
// writes back and commits). Not only landed: UNSTABLE data is still ours to re-send, and if
// the server restarted after the unlock, a re-send at our next fsync or close (the new
// verifier) would overwrite what another client wrote under the lock meanwhile. The COMMIT
// goes as HANDLE's opener if it may write, else with the credentials of the file's last
// write (a read-only open's caller may not be allowed to COMMIT). Its result does not stop
// the unlock (the kernel ignores it too): failed, the data stays kept for a later COMMIT
// (re-sent then if need be) and an answered write's error stays for fsync and close.
// Nothing kept: no COMMIT is sent.
void commit_before_unlock(fuse_req_t req, const std::shared_ptr<Node>& n, uint64_t handle, FileIo& io) {
  wait_before(fs_of(req), n, WriteBehind::now());
  int rv = n->wb.writes(handle) ? io.commit(*open_cred(req, *n, handle)) : io.commit_kept();
  if (rv < 0 && log::first_time("nfs:unlock-commit"))
    SHIM_LOG_WARN("[ino {}] COMMIT before releasing a lock: {}; unlocked anyway, the data is kept "
                  "for the next COMMIT (logged once)", n->ino, std::strerror(-rv));
}

void op_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  // close-to-open: stable on the server at close. Not for an open that cannot write, as
  // the kernel's NFS client (nfs_file_flush): it has nothing to flush or to be told.
  const bool writes = n->wb.writes(fi->fh);
  int rv = writes ? commit_node(req, n, fi->fh) : 0;
  // close(2) drops the process's POSIX locks on the file; with server locks the kernel
  // keeps no record of them, so that is ours to do (libfuse's flush contract).
  auto io = io_of(n);
  if (io && fi->lock_owner != 0 && fs_of(req).client->server_locks()) {
    // What the owner wrote under its locks is stable on the server before another client
    // can take them, as at F_UNLCK (op_setlk); commit_node did so already for a writable
    // open (its error is the close's).
    if (!writes) commit_before_unlock(req, n, fi->fh, *io);
    int lr = io->unlock_owner(*open_cred(req, *n, fi->fh), fi->fh, fi->lock_owner);
    if (lr < 0) SHIM_LOG_WARN("[ino {}] dropping locks at close: {}", ino, std::strerror(-lr));
  }
  fuse_reply_err(req, -rv);
}

void op_getlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) noexcept {
  NODE_OR_FAIL(n, req, ino);
  auto io = io_of(n);
  int rv = io ? io->getlk(*open_cred(req, *n, fi->fh), fi->fh, fi->lock_owner, lock) : -EBADF;
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  fuse_reply_lock(req, lock);
}

void interrupt_lock(fuse_req_t, void* data) {
  static_cast<std::atomic<bool>*>(data)->store(true);
}

// F_SETLKW on a thread of its own (lock_waits.h): the request thread goes back to reading,
// so INTERRUPTs (a signal to the waiter), the holder's F_UNLCK or close and every other
// request still come in however many processes wait. Replies from the wait thread.
void wait_for_lock(fuse_req_t req, std::shared_ptr<Node> n, std::shared_ptr<FileIo> io,
                   uint64_t handle, uint64_t owner, const struct flock& lock) {
  NfsFs& fs = fs_of(req);
  const uint64_t ino = n->ino;
  std::shared_ptr<const nfs::Cred> cred = open_cred(req, *n, handle);
  int rv = fs.lock_waits.start(
      [&fs, req, n = std::move(n), io = std::move(io), cred = std::move(cred), handle, owner,
       lock](std::atomic<bool>* cancel) {
        // An INTERRUPT that came before this point makes libfuse call interrupt_lock here.
        fuse_req_interrupt_func(req, interrupt_lock, cancel);
        int r = io->setlk(*cred, handle, owner, lock, true, cancel);
        // Under the request's lock: once it returns, no interrupt_lock runs or will run,
        // so CANCEL (freed after this job) is not touched after the reply frees REQ.
        fuse_req_interrupt_func(req, nullptr, nullptr);
        // Cancelled because the daemon stops: the kernel restarts a lock call answered
        // EINTR, and with no signal pending the caller would get errno 512. ENOLCK is
        // fcntl's "remote locking failed".
        if (r == -EINTR && fs.lock_waits.stopped()) r = -ENOLCK;
        fuse_reply_err(req, -r);
      });
  if (rv == 0) return;
  if (rv == -ENOLCK && log::first_time("nfs:lock-waits-full"))
    SHIM_LOG_WARN("[ino {}] F_SETLKW: {} processes wait for locks already: ENOLCK", ino,
                  fs.lock_waits.running());
  else if (rv == -EAGAIN && log::first_time("nfs:lock-waits-thread"))
    SHIM_LOG_WARN("[ino {}] F_SETLKW: cannot start a thread to wait on: ENOLCK", ino);
  fuse_reply_err(req, ENOLCK);  // also when the daemon stops (-EINTR): see above
}

void op_setlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep) noexcept {
  NODE_OR_FAIL(n, req, ino);
  auto io = io_of(n);
  if (!io) {
    fuse_reply_err(req, EBADF);
    return;
  }
  // A waiting F_SETLKW ends with EINTR when the caller is interrupted (a signal).
  if (sleep && lock->l_type != F_UNLCK) {
    wait_for_lock(req, std::move(n), std::move(io), fi->fh, fi->lock_owner, *lock);
    return;
  }
  // What was written under the lock is stable on the server before another client can take it.
  if (lock->l_type == F_UNLCK) commit_before_unlock(req, n, fi->fh, *io);
  int rv = io->setlk(*open_cred(req, *n, fi->fh), fi->fh, fi->lock_owner, *lock, false, nullptr);
  fuse_reply_err(req, -rv);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  fuse_reply_err(req, -commit_node(req, n, fi->fh));
}

void op_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  end_open(fs_of(req), *open_cred(req, *n, fi->fh), n, fi->fh);
  fuse_reply_err(req, 0);
}

// A directory listing is read from the server at the first READDIR(PLUS) (and again at
// offset 0), not at OPENDIR, and the attributes in it go to the kernel only in the reply to
// the request that read it. The kernel accepts the attributes in a READDIRPLUS reply if no
// change of the file finished before that request started; attributes read earlier (at
// OPENDIR, or for an earlier request) may predate a write that finished since, and would set
// the file's size back: a mapping then faults past the end (SIGBUS), reads end early.
// Later chunks of a long listing go without attributes (the kernel looks those names up).
struct DirHandle {
  std::shared_ptr<Node> node;
  bool loaded = false;
  uint64_t point = 0;  // WriteBehind::now() before the listing was read
  std::vector<nfs::DirEntry> entries;
};

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  NODE_OR_FAIL(n, req, ino);
  auto* d = new (std::nothrow) DirHandle;
  if (!d) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  d->node = n;
  fi->fh = reinterpret_cast<uint64_t>(d);
  if (fuse_reply_open(req, fi) == -ENOENT) delete d;
}

// An NFSv4 server never lists "." and ".." (RFC 8881, READDIR); the kernel's v4 client adds
// them itself (nfs4_setup_readdir), and a vers=3 listing has them from the server. Without
// them here a vers=4.1 mount listed no dots. "." has the directory's fileid (one GETATTR per
// listing: we keep no attributes). ".." gets the same: the kernel passes no parent and a
// node has none (handles, hard links), the kernel itself does so at a mount's root, and no
// program goes by the d_ino of "..". Neither takes a lookup count (ino 0 in do_readdir).
int add_dots(fuse_req_t req, NfsFs& fs, DirHandle* d) {
  for (const auto& e : d->entries)
    if (e.name == "." || e.name == "..") return 0;  // the server sent them (vers=3)
  nfs::Attr a;
  if (int rv = fs.client->getattr(cred_of(req), d->node->fh, &a); rv < 0) return rv;
  nfs::DirEntry dot;
  dot.fileid = a.fileid;
  dot.has_attr = true;
  dot.attr = a;
  dot.name = ".";
  dot.cookie = 1;  // the cookies NFSv4 (RFC 7530, READDIR) keeps from servers for these two
  d->entries.insert(d->entries.begin(), dot);
  dot.name = "..";
  dot.cookie = 2;
  d->entries.insert(d->entries.begin() + 1, dot);
  return 0;
}

// Reads D's listing from the server; the graveyard is left out of the root's.
int load_listing(fuse_req_t req, NfsFs& fs, DirHandle* d) {
  d->point = WriteBehind::now();
  int rv = fs.client->readdirplus(cred_of(req), d->node->fh, &d->entries);
  if (rv < 0) return rv;
  if (rv = add_dots(req, fs, d); rv < 0) return rv;
  if (d->node->ino == FUSE_ROOT_ID) {
    auto& v = d->entries;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].name == fs.graveyard_name) v.erase(v.begin() + static_cast<long>(i--));
  }
  d->loaded = true;
  return 0;
}

// True if the attributes of FH read at POINT may predate an answered write (write_behind.h),
// or a restarted server may have lost written data of it (restore_lost): the entry then
// goes without them and the kernel looks the name up (LOOKUP puts the data back first).
bool raced(NfsFs& fs, const nfs::Fh& fh, uint64_t point) {
  auto n = fs.nodes->find(fh);
  if (!n) return false;
  if (n->wb.raced(point)) return true;
  auto io = io_of(n);
  return io && io->kept_before_restart();
}

void do_readdir(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  NfsFs& fs = fs_of(req);
  auto* d = reinterpret_cast<DirHandle*>(fi->fh);
  bool fresh = false;  // read for this request: its attributes may go to the kernel
  if (off == 0 || !d->loaded) {
    if (int rv = load_listing(req, fs, d); rv < 0) {
      fuse_reply_err(req, -rv);
      return;
    }
    fresh = true;
  }
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < d->entries.size(); ++i) {
    const nfs::DirEntry& de = d->entries[i];
    bool dot = de.name == "." || de.name == "..";
    size_t left = size - used;
    size_t len;
    if (plus && fresh && !dot && de.has_fh && de.has_attr && !raced(fs, de.fh, d->point)) {
      auto n = fs.nodes->remember(de.fh);
      fuse_entry_param e;
      std::memset(&e, 0, sizeof e);
      e.ino = n->ino;
      to_stat(de.attr, &e.attr);
      e.attr_timeout = fs.opts.attr_timeout;
      e.entry_timeout = fs.opts.entry_timeout;
      len = fuse_add_direntry_plus(req, buf.data() + used, left, de.name.c_str(), &e, static_cast<off_t>(i + 1));
      if (len > left) {  // did not fit: the kernel never sees this entry, so no lookup count
        forget_node(fs, n->ino, 1);
        break;
      }
    } else if (plus) {
      // No inode for the kernel (ino 0): ".", "..", no handle sent, or not fresh.
      fuse_entry_param e;
      std::memset(&e, 0, sizeof e);
      e.attr.st_ino = de.fileid;
      e.attr.st_mode = de.has_attr ? de.attr.st_mode() : 0;
      len = fuse_add_direntry_plus(req, buf.data() + used, left, de.name.c_str(), &e, static_cast<off_t>(i + 1));
      if (len > left) break;
    } else {
      struct stat st;
      std::memset(&st, 0, sizeof st);
      st.st_ino = de.fileid;
      st.st_mode = de.has_attr ? de.attr.st_mode() : 0;
      len = fuse_add_direntry(req, buf.data() + used, left, de.name.c_str(), &st, static_cast<off_t>(i + 1));
      if (len > left) break;
    }
    used += len;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) noexcept {
  do_readdir(req, size, off, fi, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) noexcept {
  do_readdir(req, size, off, fi, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) noexcept {
  delete reinterpret_cast<DirHandle*>(fi->fh);
  fuse_reply_err(req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t) noexcept {
  NfsFs& fs = fs_of(req);
  nfs::FsStat s;
  int rv = fs.client->fsstat(cred_of(req, false), fs.client->root(), &s);
  if (rv < 0) {
    fuse_reply_err(req, -rv);
    return;
  }
  struct statvfs v;
  std::memset(&v, 0, sizeof v);
  v.f_bsize = v.f_frsize = 4096;
  v.f_blocks = s.tbytes / 4096;
  v.f_bfree = s.fbytes / 4096;
  v.f_bavail = s.abytes / 4096;
  v.f_files = s.tfiles;
  v.f_ffree = s.ffiles;
  v.f_favail = s.afiles;
  v.f_namemax = 255;
  fuse_reply_statfs(req, &v);
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) noexcept {
  if (!S_ISREG(mode)) {  // devices, fifos, sockets: not needed by brokers
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  NfsFs& fs = fs_of(req);
  if (hidden(parent, name, fs)) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  NODE_OR_FAIL(p, req, parent);
  nfs::Fh fh;
  nfs::Attr a;
  const uint64_t point = WriteBehind::now();
  int rv = fs.client->create(cred_of(req), p->fh, name, mode & 07777, O_CREAT | O_EXCL, &fh, &a, nullptr);
  reply_entry(req, point, rv, fh, a);
}

}  // namespace

void send_gathered(NfsFs& fs, const std::shared_ptr<Node>& n, int64_t ticket) {
  Batch b;
  if (n->wb.take_pending(ticket, &b)) send_batch(fs, *n, io_of(n), std::move(b));
}

bool is_nfs_source(const std::string& source) { return source.rfind("nfs://", 0) == 0; }

fuse_lowlevel_ops make_nfs_ops(bool server_locks) {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
  ops.readlink = op_readlink;
  ops.mknod = op_mknod;
  ops.mkdir = op_mkdir;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.rename = op_rename;
  ops.open = op_open;
  ops.create = op_create;
  ops.read = op_read;
  ops.write = op_write;
  ops.write_buf = op_write_buf;  // (libfuse calls it, not write, and splices what it can)
  ops.flush = op_flush;
  ops.fsync = op_fsync;
  ops.release = op_release;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.statfs = op_statfs;
  if (server_locks) {  // else the kernel keeps POSIX locks itself (local to this host)
    ops.getlk = op_getlk;
    ops.setlk = op_setlk;
  }
  return ops;
}

}  // namespace nfsshim::fuse::nfsfs
