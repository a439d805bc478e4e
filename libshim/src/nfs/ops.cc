// NFSv3 procedures over Engine::run: build the args, decode the reply, map the status.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <ctime>

#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs/nfs3_errno.h"

namespace nfsshim::nfs {
namespace {

timespec ts_of(const nfstime3& t) {
  timespec ts;
  ts.tv_sec = t.seconds;
  ts.tv_nsec = t.nseconds;
  return ts;
}

char* name_arg(const std::string& s) { return const_cast<char*>(s.c_str()); }

diropargs3 dirop(const Fh& dir, const std::string& name) {
  diropargs3 d;
  d.dir = to_nfs_fh3(dir);
  d.name = name_arg(name);
  return d;
}

void post_attr(const post_op_attr& p, Attr* out) {
  if (out && p.attributes_follow) fattr_to_attr(p.post_op_attr_u.attributes, out);
}

sattr3 to_sattr(const SetAttr& sa) {
  sattr3 s;
  std::memset(&s, 0, sizeof s);
  s.mode.set_it = sa.set_mode;
  s.mode.set_mode3_u.mode = sa.mode & 07777;
  s.uid.set_it = sa.set_uid;
  s.uid.set_uid3_u.uid = sa.uid;
  s.gid.set_it = sa.set_gid;
  s.gid.set_gid3_u.gid = sa.gid;
  s.size.set_it = sa.set_size;
  s.size.set_size3_u.size = sa.size;
  auto how = [](SetAttr::Time t) {
    return t == SetAttr::Time::kKeep ? DONT_CHANGE : t == SetAttr::Time::kServerNow ? SET_TO_SERVER_TIME
                                                                                    : SET_TO_CLIENT_TIME;
  };
  s.atime.set_it = how(sa.atime);
  s.atime.set_atime_u.atime.seconds = static_cast<u_int>(sa.atime_val.tv_sec);
  s.atime.set_atime_u.atime.nseconds = static_cast<u_int>(sa.atime_val.tv_nsec);
  s.mtime.set_it = how(sa.mtime);
  s.mtime.set_mtime_u.mtime.seconds = static_cast<u_int>(sa.mtime_val.tv_sec);
  s.mtime.set_mtime_u.mtime.nseconds = static_cast<u_int>(sa.mtime_val.tv_nsec);
  return s;
}

sattr3 mode_only(uint32_t mode) {
  SetAttr sa;
  sa.set_mode = true;
  sa.mode = mode;
  return to_sattr(sa);
}

// New-object replies (CREATE/MKDIR/SYMLINK share this shape).
template <typename Ok>
int new_object(const Ok& ok, Fh* out, Attr* attr) {
  if (!ok.obj.handle_follows) return -EIO;  // we do not LOOKUP behind the server's back
  if (out) *out = fh_of(ok.obj.post_op_fh3_u.handle);
  post_attr(ok.obj_attributes, attr);
  return 0;
}

// Waits for N calls of one parallel request.
class Countdown {
 public:
  explicit Countdown(size_t n) : left_(n) {}
  void arrive() {
    std::lock_guard<std::mutex> g(m_);
    if (--left_ == 0) cv_.notify_one();
  }
  void wait() {
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [this] { return left_ == 0; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  size_t left_;
};

}  // namespace

void fattr_to_attr(const fattr3& f, Attr* a) {
  a->type = f.type;
  a->mode = f.mode & 07777;
  a->nlink = f.nlink;
  a->uid = f.uid;
  a->gid = f.gid;
  a->size = f.size;
  a->used = f.used;
  a->fsid = f.fsid;
  a->fileid = f.fileid;
  a->rdev_major = f.rdev.specdata1;
  a->rdev_minor = f.rdev.specdata2;
  a->atime = ts_of(f.atime);
  a->mtime = ts_of(f.mtime);
  a->ctime = ts_of(f.ctime);
}

Fh fh_of(const nfs_fh3& f) {
  Fh fh;
  fh.data.assign(f.data.data_val, f.data.data_len);
  return fh;
}

nfs_fh3 to_nfs_fh3(const Fh& fh) {
  nfs_fh3 f;
  f.data.data_len = static_cast<u_int>(fh.data.size());
  f.data.data_val = const_cast<char*>(fh.data.data());
  return f;
}

int Engine::null_call() {
  return run(default_cred(), "NULL", 0, true,
             [](rpc_context* rpc, RpcCb cb, void* priv) { return rpc_nfs3_null_async(rpc, cb, priv); },
             [](void*) { return 0; });
}

int Engine::getattr(const Cred& c, const Fh& fh, Attr* out) {
  return run(c, "GETATTR", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               GETATTR3args a;
               a.object = to_nfs_fh3(fh);
               return rpc_nfs3_getattr_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<GETATTR3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               fattr_to_attr(r->GETATTR3res_u.resok.obj_attributes, out);
               return 0;
             });
}

int Engine::setattr(const Cred& c, const Fh& fh, const SetAttr& sa, Attr* post) {
  return run(c, "SETATTR", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               SETATTR3args a;
               std::memset(&a, 0, sizeof a);
               a.object = to_nfs_fh3(fh);
               a.new_attributes = to_sattr(sa);
               return rpc_nfs3_setattr_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<SETATTR3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               post_attr(r->SETATTR3res_u.resok.obj_wcc.after, post);
               return 0;
             });
}

int Engine::lookup(const Cred& c, const Fh& dir, const std::string& name, Fh* out, Attr* attr) {
  return run(c, "LOOKUP", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               LOOKUP3args a;
               a.what = dirop(dir, name);
               return rpc_nfs3_lookup_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<LOOKUP3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               if (out) *out = fh_of(r->LOOKUP3res_u.resok.object);
               if (attr) {
                 if (!r->LOOKUP3res_u.resok.obj_attributes.attributes_follow) return -EIO;
                 post_attr(r->LOOKUP3res_u.resok.obj_attributes, attr);
               }
               return 0;
             });
}

int Engine::access(const Cred& c, const Fh& fh, uint32_t want, uint32_t* granted) {
  return run(c, "ACCESS", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               ACCESS3args a;
               a.object = to_nfs_fh3(fh);
               a.access = want;
               return rpc_nfs3_access_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<ACCESS3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               *granted = r->ACCESS3res_u.resok.access;
               return 0;
             });
}

ssize_t Engine::read(const Cred& c, const Fh& fh, uint64_t off, size_t len, char* buf) {
  size_t total = 0;
  bool eof = false;
  Jukebox jb;
  while (total < len && !eof) {
    ssize_t n = read_pieces(c, fh, off + total, len - total, buf + total, &eof);
    if (n == -EAGAIN && jukebox_wait("READ", &jb)) continue;  // the first piece: NFS3ERR_JUKEBOX
    if (n == -EAGAIN) n = -EIO;
    if (n < 0) return n;  // not TOTAL alone: see engine.h
    if (n == 0 && !eof) return -EIO;  // no bytes, no eof: not end of file (nfs_readpage_retry)
    if (n == 0) break;  // end of file
    total += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(total);
}

// One round of parallel READs; returns the contiguous bytes from OFF (0 at end of file) and
// sets *EOF when the server said the file ends there.
ssize_t Engine::read_pieces(const Cred& c, const Fh& fh, uint64_t off, size_t len, char* buf, bool* eof) {
  const size_t piece = rsize_;
  const size_t n = (len + piece - 1) / piece;
  struct Slot {
    ssize_t got = 0;
    bool eof = false;
    int fail = 0;  // fail_reads_from_for_test
    bool empty = false;  // empty_reads_from_for_test
  };
  std::vector<Slot> slots(n);
  std::vector<Call> calls(n);
  Countdown cd(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t poff = off + i * piece;
    const uint32_t plen = static_cast<uint32_t>(std::min(piece, len - i * piece));
    char* dst = buf + i * piece;
    Call& call = calls[i];
    call.cred = c;
    call.what = "READ";
    call.bytes = plen;
    call.issue = [&fh, poff, plen](rpc_context* rpc, RpcCb cb, void* priv) {
      READ3args a;
      a.file = to_nfs_fh3(fh);
      a.offset = poff;
      a.count = plen;
      return rpc_nfs3_read_async(rpc, cb, &a, priv);
    };
    Slot* slot = &slots[i];
    if (poff >= fail_read_at_.load(std::memory_order_relaxed)) slot->fail = fail_read_err_.load();
    slot->empty = poff >= empty_read_at_.load(std::memory_order_relaxed);
    call.done = [slot, dst, plen, &cd](int err, void* res) {
      if (!err && slot->fail) err = slot->fail;
      if (!err) {
        auto* r = static_cast<READ3res*>(res);
        err = nfs3_errno(r->status);
        if (!err) {
          const READ3resok& ok = r->READ3res_u.resok;
          size_t got = slot->empty ? 0 : std::min<size_t>(ok.data.data_len, plen);
          std::memcpy(dst, ok.data.data_val, got);
          slot->got = static_cast<ssize_t>(got);
          slot->eof = !slot->empty && ok.eof;
        }
      }
      if (err) slot->got = err;
      cd.arrive();
    };
  }
  for (auto& call : calls) submit(&call);
  cd.wait();
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (slots[i].got < 0) return slots[i].got;  // a failed piece before end of file fails all
    total += static_cast<size_t>(slots[i].got);
    size_t asked = std::min(piece, len - i * piece);
    if (slots[i].eof) *eof = true;
    if (static_cast<size_t>(slots[i].got) < asked || slots[i].eof) break;  // short: the caller asks again
  }
  return static_cast<ssize_t>(total);
}

ssize_t Engine::write(const Cred& c, const Fh& fh, uint64_t off, size_t len, const char* buf, int stable,
                      std::vector<PieceVerf>* verfs) {
  size_t done_bytes = 0;
  Jukebox jb;
  while (done_bytes < len) {
    const size_t piece = wsize_;
    const size_t left = len - done_bytes;
    const size_t n = (left + piece - 1) / piece;
    struct Slot {
      ssize_t got = 0;
      WriteVerf verf = 0;
      bool stable = false;
    };
    std::vector<Slot> slots(n);
    std::vector<Call> calls(n);
    Countdown cd(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t poff = off + done_bytes + i * piece;
      const uint32_t plen = static_cast<uint32_t>(std::min(piece, left - i * piece));
      const char* src = buf + done_bytes + i * piece;
      Call& call = calls[i];
      call.cred = c;
      call.what = "WRITE";
      call.bytes = plen;
      call.issue = [&fh, poff, plen, src, stable](rpc_context* rpc, RpcCb cb, void* priv) {
        WRITE3args a;
        a.file = to_nfs_fh3(fh);
        a.offset = poff;
        a.count = plen;
        a.stable = static_cast<stable_how>(stable);
        a.data.data_len = plen;
        a.data.data_val = const_cast<char*>(src);
        return rpc_nfs3_write_async(rpc, cb, &a, priv);
      };
      Slot* slot = &slots[i];
      call.done = [slot, plen, &cd](int err, void* res) {
        if (!err) {
          auto* r = static_cast<WRITE3res*>(res);
          err = nfs3_errno(r->status);
          if (!err) {
            slot->got = std::min<ssize_t>(r->WRITE3res_u.resok.count, plen);
            std::memcpy(&slot->verf, r->WRITE3res_u.resok.verf, sizeof slot->verf);
            slot->stable = r->WRITE3res_u.resok.committed == FILE_SYNC;
          }
        }
        if (err) slot->got = err;
        cd.arrive();
      };
    }
    for (auto& call : calls) submit(&call);
    cd.wait();
    size_t round = 0;
    bool jukebox = false;
    for (size_t i = 0; i < n; ++i) {
      if (slots[i].got == -EAGAIN) {  // NFS3ERR_JUKEBOX: the rest again after a pause
        jukebox = true;
        break;
      }
      if (slots[i].got < 0) return done_bytes + round ? static_cast<ssize_t>(done_bytes + round) : slots[i].got;
      if (verfs && slots[i].got > 0)
        verfs->push_back({off + done_bytes + i * piece, static_cast<uint32_t>(slots[i].got), slots[i].verf,
                          slots[i].stable});
      round += static_cast<size_t>(slots[i].got);
      if (static_cast<size_t>(slots[i].got) < std::min(piece, left - i * piece)) break;  // short: rest again
    }
    done_bytes += round;
    if (jukebox) {
      if (!jukebox_wait("WRITE", &jb)) return done_bytes ? static_cast<ssize_t>(done_bytes) : -EIO;
      continue;
    }
    if (round == 0) return done_bytes ? static_cast<ssize_t>(done_bytes) : -EIO;
  }
  return static_cast<ssize_t>(done_bytes);
}

int Engine::commit(const Cred& c, const Fh& fh, WriteVerf* verf) {
  return run(c, "COMMIT", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               COMMIT3args a;
               a.file = to_nfs_fh3(fh);
               a.offset = 0;
               a.count = 0;  // the whole file
               return rpc_nfs3_commit_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<COMMIT3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               std::memcpy(verf, r->COMMIT3res_u.resok.verf, sizeof *verf);
               return 0;
             });
}

int Engine::create(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, bool exclusive,
                   Fh* out, Attr* attr, bool truncate) {
  // O_EXCL is an EXCLUSIVE create with a verifier of its own, as the kernel client does: a
  // re-send after a lost connection or a server restart (the reply cache gone) finds the
  // verifier stored with the file and succeeds, where GUARDED would answer EEXIST for the
  // file we just made. The server keeps the verifier in the times, so the mode and times
  // are set after.
  static std::atomic<uint64_t> counter{0};
  const uint64_t verf = (static_cast<uint64_t>(::getpid()) << 40) ^
                        (static_cast<uint64_t>(::time(nullptr)) << 20) ^ counter.fetch_add(1);
  Fh fh;
  bool resent = false;
  const timespec sent = Attr::now();
  int rv = run(c, "CREATE", 0, true,
               [&](rpc_context* rpc, RpcCb cb, void* priv) {
                 CREATE3args a;
                 std::memset(&a, 0, sizeof a);
                 a.where = dirop(dir, name);
                 if (exclusive) {
                   a.how.mode = EXCLUSIVE;
                   std::memcpy(a.how.createhow3_u.verf, &verf, sizeof verf);
                 } else {
                   a.how.mode = UNCHECKED;
                   // O_TRUNC: an UNCHECKED create that meets a file made since the caller's
                   // LOOKUP opens it; size 0 truncates it (the kernel's nfs_do_create).
                   SetAttr sa;
                   sa.set_mode = true;
                   sa.mode = mode;
                   sa.set_size = truncate;
                   a.how.createhow3_u.obj_attributes = to_sattr(sa);
                 }
                 return rpc_nfs3_create_async(rpc, cb, &a, priv);
               },
               [&](void* res) {
                 auto* r = static_cast<CREATE3res*>(res);
                 if (r->status != NFS3_OK) return nfs3_errno(r->status);
                 return new_object(r->CREATE3res_u.resok, &fh, attr);
               },
               &resent);
  if (exclusive) {
    // A server that died between making the file and storing the verifier (ganesha's
    // FSAL_VFS does them in turn) answers the re-send EEXIST. An empty regular file of the
    // caller's own made since our first send is taken as ours: only another create of the
    // same name by the same user in that second could be mistaken for it. (An older one
    // is another's O_EXCL lock file: EEXIST.)
    rv = exist_after_resend(c, rv, resent, "CREATE", dir, name,
                            [&](const Fh&, const Attr& a) {
                              return a.lost_exclusive_create_of(c.uid) && a.changed_since(sent);
                            },
                            &fh, attr);
  }
  if (rv < 0 || !exclusive) {
    if (rv == 0 && out) *out = fh;
    return rv;
  }
  SetAttr sa;
  sa.set_mode = true;
  sa.mode = mode;
  sa.atime = SetAttr::Time::kServerNow;
  sa.mtime = SetAttr::Time::kServerNow;
  rv = setattr(c, fh, sa, attr);
  if (rv == 0 && out) *out = fh;
  return rv;
}

int Engine::exist_after_resend(const Cred& c, int rv, bool resent, const char* what, const Fh& dir,
                               const std::string& name,
                               const std::function<bool(const Fh&, const Attr&)>& made, Fh* out,
                               Attr* attr) {
  if ((rv != -EEXIST && rv != -ESTALE) || !resent) return rv;
  Fh fh;
  Attr a;
  if (lookup(c, dir, name, &fh, &a) != 0 || !made(fh, a)) return rv;
  SHIM_LOG_INFO("{} of '{}' re-sent after a lost connection answered {}: the first send made it", what,
                name, rv == -EEXIST ? "EEXIST" : "ESTALE");
  resent_exist_.fetch_add(1);
  if (rv == -ESTALE) resent_stale_.fetch_add(1);
  if (out) *out = fh;
  if (attr) *attr = a;
  return 0;
}

int Engine::mkdir(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, Fh* out, Attr* attr) {
  bool resent = false;
  const timespec sent = Attr::now();
  int rv = run(c, "MKDIR", 0, false,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               MKDIR3args a;
               std::memset(&a, 0, sizeof a);
               a.where = dirop(dir, name);
               a.attributes = mode_only(mode);
               return rpc_nfs3_mkdir_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<MKDIR3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               return new_object(r->MKDIR3res_u.resok, out, attr);
             },
             &resent);
  // A directory of before our first send is another's (a mkdir lock held): EEXIST.
  return exist_after_resend(c, rv, resent, "MKDIR", dir, name,
                            [&](const Fh&, const Attr& a) { return a.type == NF3DIR && a.changed_since(sent); },
                            out, attr);
}

int Engine::symlink(const Cred& c, const Fh& dir, const std::string& name, const std::string& target, Fh* out,
                    Attr* attr) {
  bool resent = false;
  int rv = run(c, "SYMLINK", 0, false,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               SYMLINK3args a;
               std::memset(&a, 0, sizeof a);
               a.where = dirop(dir, name);
               a.symlink.symlink_attributes = mode_only(0777);
               a.symlink.symlink_data = name_arg(target);
               return rpc_nfs3_symlink_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<SYMLINK3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               return new_object(r->SYMLINK3res_u.resok, out, attr);
             },
             &resent);
  return exist_after_resend(c, rv, resent, "SYMLINK", dir, name,
                            [&](const Fh& fh, const Attr& a) {
                              std::string t;
                              return a.type == NF3LNK && readlink(c, fh, &t) == 0 && t == target;
                            },
                            out, attr);
}

int Engine::readlink(const Cred& c, const Fh& fh, std::string* target) {
  return run(c, "READLINK", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               READLINK3args a;
               a.symlink = to_nfs_fh3(fh);
               return rpc_nfs3_readlink_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<READLINK3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               *target = r->READLINK3res_u.resok.data ? r->READLINK3res_u.resok.data : "";
               return 0;
             });
}

int Engine::link(const Cred& c, const Fh& fh, const Fh& dir, const std::string& name) {
  bool resent = false;
  int rv = run(c, "LINK", 0, false,
               [&](rpc_context* rpc, RpcCb cb, void* priv) {
                 LINK3args a;
                 a.file = to_nfs_fh3(fh);
                 a.link = dirop(dir, name);
                 return rpc_nfs3_link_async(rpc, cb, &a, priv);
               },
               [&](void* res) { return nfs3_errno(static_cast<LINK3res*>(res)->status); }, &resent);
  if ((rv != -EEXIST && rv != -ESTALE) || !resent) return rv;
  Attr src;
  if (getattr(c, fh, &src) != 0) return rv;
  return exist_after_resend(c, rv, resent, "LINK", dir, name,
                            [&](const Fh&, const Attr& a) { return a.fileid == src.fileid && a.fsid == src.fsid; },
                            nullptr, nullptr);
}

int Engine::resent_noent(const Cred& c, int rv, bool resent, const char* what, const Fh& dir,
                         const std::string& name) {
  if ((rv != -ENOENT && rv != -ESTALE) || !resent) return rv;
  if (rv == -ESTALE && lookup(c, dir, name, nullptr, nullptr) != -ENOENT) return rv;
  SHIM_LOG_INFO("{} of '{}' re-sent after a lost connection answered {}: the first send did it", what,
                name, rv == -ENOENT ? "ENOENT" : "ESTALE");
  resent_done_.fetch_add(1);
  if (rv == -ESTALE) resent_stale_.fetch_add(1);
  return 0;
}

int Engine::remove(const Cred& c, const Fh& dir, const std::string& name) {
  bool resent = false;
  int rv = run(c, "REMOVE", 0, false,
               [&](rpc_context* rpc, RpcCb cb, void* priv) {
                 REMOVE3args a;
                 a.object = dirop(dir, name);
                 return rpc_nfs3_remove_async(rpc, cb, &a, priv);
               },
               [&](void* res) { return nfs3_errno(static_cast<REMOVE3res*>(res)->status); }, &resent);
  return resent_noent(c, rv, resent, "REMOVE", dir, name);
}

int Engine::rmdir(const Cred& c, const Fh& dir, const std::string& name) {
  bool resent = false;
  int rv = run(c, "RMDIR", 0, false,
               [&](rpc_context* rpc, RpcCb cb, void* priv) {
                 RMDIR3args a;
                 a.object = dirop(dir, name);
                 return rpc_nfs3_rmdir_async(rpc, cb, &a, priv);
               },
               [&](void* res) { return nfs3_errno(static_cast<RMDIR3res*>(res)->status); }, &resent);
  return resent_noent(c, rv, resent, "RMDIR", dir, name);
}

int Engine::rename(const Cred& c, const Fh& from_dir, const std::string& from, const Fh& to_dir,
                   const std::string& to) {
  bool resent = false;
  int rv = run(c, "RENAME", 0, false,
               [&](rpc_context* rpc, RpcCb cb, void* priv) {
                 RENAME3args a;
                 a.from = dirop(from_dir, from);
                 a.to = dirop(to_dir, to);
                 return rpc_nfs3_rename_async(rpc, cb, &a, priv);
               },
               [&](void* res) { return nfs3_errno(static_cast<RENAME3res*>(res)->status); }, &resent);
  // Re-sent after a lost reply (ganesha's reply cache is per connection): the source is
  // gone because the first send moved it (a graveyard bury too), if TO is there now.
  if ((rv == -ENOENT || rv == -ESTALE) && resent && lookup(c, to_dir, to, nullptr, nullptr) != 0) return rv;
  return resent_noent(c, rv, resent, "RENAME", from_dir, from);
}

int Engine::readdirplus(const Cred& c, const Fh& dir, std::vector<DirEntry>* out) {
  out->clear();
  uint64_t cookie = 0;
  char verf[NFS3_COOKIEVERFSIZE] = {0};
  ReaddirRestarts restarts;
  for (;;) {
    bool eof = false;
    size_t before = out->size();
    const uint64_t asked = cookie;
    int rv = run(c, "READDIRPLUS", 0, true,
                 [&](rpc_context* rpc, RpcCb cb, void* priv) {
                   READDIRPLUS3args a;
                   std::memset(&a, 0, sizeof a);
                   a.dir = to_nfs_fh3(dir);
                   a.cookie = cookie;
                   std::memcpy(a.cookieverf, verf, sizeof verf);
                   a.dircount = 32768;
                   a.maxcount = 131072;
                   return rpc_nfs3_readdirplus_async(rpc, cb, &a, priv);
                 },
                 [&](void* res) {
                   auto* r = static_cast<READDIRPLUS3res*>(res);
                   if (r->status != NFS3_OK) return nfs3_errno(r->status);
                   const READDIRPLUS3resok& ok = r->READDIRPLUS3res_u.resok;
                   std::memcpy(verf, ok.cookieverf, sizeof verf);
                   // libnfs's decoder packs list entries at 4-byte alignment: copy each
                   // into an aligned struct before reading its 64-bit fields.
                   entryplus3 ent;
                   for (const entryplus3* ep = ok.reply.entries; ep; ep = ent.nextentry) {
                     std::memcpy(&ent, ep, sizeof ent);
                     const entryplus3* e = &ent;
                     DirEntry d;
                     d.name = e->name ? e->name : "";
                     d.fileid = e->fileid;
                     d.cookie = e->cookie;
                     d.has_attr = e->name_attributes.attributes_follow;
                     if (d.has_attr) fattr_to_attr(e->name_attributes.post_op_attr_u.attributes, &d.attr);
                     d.has_fh = e->name_handle.handle_follows;
                     if (d.has_fh) d.fh = fh_of(e->name_handle.post_op_fh3_u.handle);
                     cookie = e->cookie;
                     out->push_back(std::move(d));
                   }
                   eof = ok.reply.eof;
                   return 0;
                 });
    auto dir_status = [&] {
      Attr a;
      return getattr(c, dir, &a);
    };
    if (rv < 0) {
      auto next = restarts.after(&rv, asked, dir_status, "READDIRPLUS");
      if (next == ReaddirRestarts::kSameCookie) continue;  // COOKIE and VERF are still the asked ones
      if (next == ReaddirRestarts::kFromStart) {
        out->clear();
        cookie = 0;
        std::memset(verf, 0, sizeof verf);
        continue;
      }
    }
    if (rv < 0) return rv;
    if (eof) return 0;
    if (out->size() == before || cookie == asked || out->size() > kMaxDirEntries) {
      // No progress, or no end, and no eof: a broken server.
      SHIM_LOG_ERROR("READDIRPLUS: the server's listing does not end ({} entries, cookie {} after {}): EIO",
                     out->size(), cookie, asked);
      return -EIO;
    }
  }
}

int Engine::fsstat(const Cred& c, const Fh& fh, FsStat* out) {
  return run(c, "FSSTAT", 0, true,
             [&](rpc_context* rpc, RpcCb cb, void* priv) {
               FSSTAT3args a;
               a.fsroot = to_nfs_fh3(fh);
               return rpc_nfs3_fsstat_async(rpc, cb, &a, priv);
             },
             [&](void* res) {
               auto* r = static_cast<FSSTAT3res*>(res);
               if (r->status != NFS3_OK) return nfs3_errno(r->status);
               const FSSTAT3resok& ok = r->FSSTAT3res_u.resok;
               out->tbytes = ok.tbytes;
               out->fbytes = ok.fbytes;
               out->abytes = ok.abytes;
               out->tfiles = ok.tfiles;
               out->ffiles = ok.ffiles;
               out->afiles = ok.afiles;
               return 0;
             });
}

}  // namespace nfsshim::nfs
