// OPEN/CLOSE, the re-opens of a recovery (CLAIM_PREVIOUS reclaim, else CLAIM_FH) and the
// data path of the NFSv4.1 engine: reads and writes split into
// rsize/wsize pieces run in parallel across slots; UNSTABLE writes checked against the
// COMMIT verifier.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_fh.h"
#include "nfsshim/nfs4/ops_io.h"
#include "nfsshim/nfs4/ops_open.h"
#include "nfsshim/nfs4/ops_session.h"

namespace nfsshim::nfs41 {

using namespace nfs4;

namespace {
WriteVerf verf64(const Verifier4& v) {
  WriteVerf w;
  std::memcpy(&w, v.data(), sizeof w);
  return w;
}
}  // namespace

// CLAIM_NULL (DIR/NAME, maybe creating) when NAME is given, else CLAIM_FH of f->fh.
int Engine::open_once(const Cred& c, const Fh& dir, const std::string& name, bool create,
                      const uint64_t* excl_verf, uint32_t mode, OpenFile* f, Attr* attr,
                      Bitmap4* attrset, bool* rerun, bool truncate) {
  const bool by_fh = name.empty();
  OpenArgs a;
  a.share_access = f->access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
  a.claim = by_fh ? CLAIM_FH : CLAIM_NULL;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  {
    std::lock_guard<std::mutex> g(mu_);
    a.owner.clientid = clientid_;
  }
  a.owner.owner = f->owner_;
  a.create = create;
  if (create) {
    a.createmode = UNCHECKED4;
    if (excl_verf && no_exclusive4_1_) {
      a.createmode = GUARDED4;
    } else if (excl_verf) {
      a.createmode = EXCLUSIVE4_1;
      std::memcpy(a.createverf.data(), excl_verf, sizeof *excl_verf);
    }
    a.createattrs.set_mode = true;
    a.createattrs.mode = mode & 07777;
    // An UNCHECKED4 create that meets a file made since the caller's LOOKUP opens it; size
    // 0 truncates it (RFC 8881 18.16.3; the kernel's O_TRUNC open sends it too).
    a.createattrs.set_size = truncate && a.createmode == UNCHECKED4;
  }
  a.name = name;
  const Fh cur = by_fh ? f->fh : dir;
  Bitmap4 want = getattr_bitmap();
  OpenRes res;
  GetfhRes gf;
  GetattrRes ga;
  int rv = run(c,
      [&](Compound& k) {
        {
          std::lock_guard<std::mutex> g(mu_);  // a new client id since: its clientid
          a.owner.clientid = clientid_;
        }
        if (int rc = encode_putfh(k, cur); rc < 0) return rc;
        if (int rc = encode_open(k, a); rc < 0) return rc;
        encode_getfh(k);
        return encode_getattr(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_open(r, &res));
        NFS41_STEP(r, decode_getfh(r, &gf));
        NFS41_STEP(r, decode_getattr(r, want, &ga));
        return 0;
      },
      true, rerun);
  if ((rv == -EINVAL || rv == -EOPNOTSUPP) && a.createmode == EXCLUSIVE4_1 &&
      !no_exclusive4_1_.exchange(true)) {
    // NFS4ERR_INVAL/NOTSUPP: a server without EXCLUSIVE4_1 (optional before RFC 8881).
    SHIM_LOG_WARN("nfs41: the server refused an EXCLUSIVE4_1 create ({}): O_EXCL creates are "
                  "GUARDED from now on (a create re-sent after a server restart may then "
                  "answer EEXIST)", std::strerror(-rv));
    return open_once(c, dir, name, create, excl_verf, mode, f, attr, attrset, rerun);
  }
  if (rv != 0) return rv;
  {
    std::lock_guard<std::mutex> g(f->mu_);
    f->stateid_ = res.stateid;
  }
  f->fh = fh3(gf.fh);
  f->rflags = res.rflags;
  f->preserve_unlinked = nfs4::preserves_unlinked(res);
  if (res.delegation.type == OPEN_DELEGATE_READ || res.delegation.type == OPEN_DELEGATE_WRITE)
    SHIM_LOG_WARN("nfs41: server granted a delegation although none was wanted");
  if (attr) to_attr(ga.attrs, attr);
  // Not exclusive: the mode went with the create, nothing more to set.
  if (attrset) *attrset = a.createmode == EXCLUSIVE4_1 ? res.attrset : Bitmap4().set(FATTR4_MODE);
  return 0;
}

// After an EXCLUSIVE4_1 create: what the server did not set from the create's attributes
// (ATTRSET) is set now; times it used to keep the verifier (RFC 8881 18.16.3) become the
// server's time. Not in the OPEN's compound: a retry of that must still find the verifier.
int Engine::finish_exclusive(const Cred& c, const Bitmap4& attrset, uint32_t mode, OpenFile* f,
                             Attr* attr) {
  SetAttr sa;
  if (!attrset.test(FATTR4_MODE)) {
    sa.set_mode = true;
    sa.mode = mode & 07777;
  }
  if (attrset.test(FATTR4_TIME_ACCESS) || attrset.test(FATTR4_TIME_MODIFY))
    sa.atime = sa.mtime = SetAttr::Time::kServerNow;
  if (!sa.set_mode && sa.atime == SetAttr::Time::kKeep) return 0;
  Attr post;
  int rv = setattr(c, f->fh, sa, &post);
  if (rv == 0 && attr) *attr = post;
  return rv;
}

int Engine::open(const Cred& c, const Fh& dir, const std::string& name, bool create,
                 bool exclusive, uint32_t mode, Open* out, Attr* attr, uint32_t access,
                 bool truncate) {
  if (int rc = check_component(name); rc < 0) return rc;
  if (create && exclusive) {
    // Unique per engine and create: the boot verifier's time plus a counter.
    uint64_t boot;
    std::memcpy(&boot, boot_verf_.data(), sizeof boot);
    return create_exclusive(c, dir, name, mode, boot + create_counter_.fetch_add(1), out, attr);
  }
  if (access < OPEN4_SHARE_ACCESS_READ || access > OPEN4_SHARE_ACCESS_BOTH) return -EINVAL;
  // ACCESS, not both: an O_RDONLY|O_CREAT that meets a file the caller may only read opens it.
  auto f = new_open_file(c, access);
  f->dir = dir;
  f->name = name;
  if (int rc = open_once(c, dir, name, create, nullptr, mode, f.get(), attr, nullptr, nullptr,
                         truncate);
      rc != 0)
    return rc;
  remember_open(f);
  *out = f;
  return 0;
}

int Engine::create_exclusive(const Cred& c, const Fh& dir, const std::string& name,
                             uint32_t mode, uint64_t verifier, Open* out, Attr* attr) {
  if (int rc = check_component(name); rc < 0) return rc;
  auto f = new_open_file(c, OPEN4_SHARE_ACCESS_BOTH);
  f->dir = dir;
  f->name = name;
  Bitmap4 attrset;
  bool rerun = false;
  const timespec sent = Attr::now();
  int rv = open_once(c, dir, name, true, &verifier, mode, f.get(), attr, &attrset, &rerun);
  if (rv == -EEXIST && rerun) {
    // Run again in a new session (the reply lost with a server restart): a server that
    // died between making the file and storing the verifier answers EXIST. An empty
    // regular file of the caller's own made since our first run is taken as that run's
    // (as the NFSv3 engine does); it is opened, and the mode set below. An older one is
    // another's O_EXCL lock file: EEXIST.
    rv = exist_after_rerun(c, "OPEN (EXCLUSIVE4_1)", dir, name,
        [&](const Fh&, const Attr& a) { return a.lost_exclusive_create_of(c.uid) && a.changed_since(sent); },
        nullptr, nullptr);
    if (rv == 0) rv = open_once(c, dir, name, false, nullptr, mode, f.get(), attr);
    attrset = Bitmap4();
  }
  if (rv != 0) return rv;
  remember_open(f);
  if (int rc = finish_exclusive(c, attrset, mode, f.get(), attr); rc != 0) {
    close(c, f);
    return rc;
  }
  *out = f;
  return 0;
}

int Engine::open_fh(const Cred& c, const Fh& fh, uint32_t access, Open* out) {
  if (access < OPEN4_SHARE_ACCESS_READ || access > OPEN4_SHARE_ACCESS_BOTH) return -EINVAL;
  auto f = new_open_file(c, access);
  f->fh = fh;
  if (int rc = open_once(c, Fh{}, std::string(), false, nullptr, 0, f.get(), nullptr); rc != 0)
    return rc;
  remember_open(f);
  *out = f;
  return 0;
}

Open Engine::new_open_file(const Cred& c, uint32_t access) {
  auto f = std::make_shared<OpenFile>();
  f->cred_ = c;
  // One open-owner per OPEN: each open has its own stateid, closed on its own.
  std::string own = "o" + std::to_string(owner_counter_.fetch_add(1));
  f->owner_.assign(own.begin(), own.end());
  f->access = access;
  return f;
}

void Engine::remember_open(const Open& f) {
  std::lock_guard<std::mutex> g(opens_mu_);
  open_files_.push_back(f);
}

int Engine::close(const Cred& c, const Open& f) {
  if (!f) return -EBADF;
  // Lock state taken through F first: the server refuses CLOSE while it exists
  // (NFS4ERR_LOCKS_HELD) and would keep both the open and the locks.
  if (int rv = release_locks(c, f); rv < 0)
    SHIM_LOG_WARN("nfs41: releasing locks before CLOSE: {}", std::strerror(-rv));
  {
    std::lock_guard<std::mutex> g(opens_mu_);
    auto it = std::find(open_files_.begin(), open_files_.end(), f);
    if (it == open_files_.end()) return -EBADF;
    open_files_.erase(it);
  }
  CloseRes cr;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
        return encode_close(k, f->stateid());
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_close(r, &cr));
        return 0;
      });
  // The state is gone with the old client id anyway: nothing left to close.
  if (rv == -EIO || rv == -ESTALE) return 0;
  return rv;
}

// OPEN CLAIM_PREVIOUS (RFC 8881 18.16.3) of F's file with its old access and open-owner:
// the server gives back the share state held before its restart. *STATUS: the OPEN's.
int Engine::reclaim_open(OpenFile* f, uint32_t* status) {
  OpenArgs a;
  a.share_access = f->access;  // no WANT_* flags: they have no meaning for a reclaim
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner.owner = f->owner_;
  a.claim = CLAIM_PREVIOUS;
  a.delegate_type = OPEN_DELEGATE_NONE;  // this engine never holds delegations
  OpenRes res;
  int rv = run(f->cred_,
      [&](Compound& k) {
        {
          std::lock_guard<std::mutex> g(mu_);
          a.owner.clientid = clientid_;
        }
        if (int rc = encode_putfh(k, f->fh); rc < 0) return rc;
        return encode_open(k, a);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_open(r, &res));
        return 0;
      },
      true);
  *status = res.status;
  if (rv != 0) return rv;
  std::lock_guard<std::mutex> g(f->mu_);
  f->stateid_ = res.stateid;
  return 0;
}

void Engine::reclaim_opens(std::vector<Open>* reclaimed, std::vector<Open>* lost) {
  std::vector<Open> files;
  {
    std::lock_guard<std::mutex> g(opens_mu_);
    files.assign(open_files_.begin(), open_files_.end());
  }
  bool no_grace = false;
  for (auto& f : files) {
    const std::string name = log_name(*f);
    if (no_grace) {  // the server takes no reclaims at all: do not ask for each file
      lost->push_back(f);
      continue;
    }
    uint32_t st = 0;
    int rv = reclaim_open(f.get(), &st);
    if (rv == 0) {
      reclaimed_opens_.fetch_add(1);
      reclaimed->push_back(f);
      continue;
    }
    if (recovery_lost()) return;  // not refused: the server restarted again, all over
    no_grace = st == NFS4ERR_NO_GRACE;
    SHIM_LOG_WARN("nfs41: reclaim of the open of '{}' refused ({}): re-opened without "
                  "reclaim after RECLAIM_COMPLETE; its byte-range locks are lost",
                  name, st ? nfs4_status_name(st) : std::strerror(-rv));
    lost->push_back(f);
  }
}

void Engine::reopen(const std::vector<Open>& files) {
  for (auto& f : files) {
    // CLAIM_FH: the file may have been renamed (or buried) since it was opened by name.
    int rv = open_once(f->cred_, Fh{}, std::string(), false, nullptr, 0, f.get(), nullptr);
    reopens_.fetch_add(1);
    if (rv != 0) {
      SHIM_LOG_ERROR("nfs41: re-open of '{}' failed: {}; its I/O fails", log_name(*f),
                     std::strerror(-rv));
    }
  }
}

namespace {

// The reply to SEQUENCE, PUTFH, READ up to READ's data: 24 bytes of RPC reply header
// (AUTH_NONE verifier), 12 of COMPOUND4res (status, our empty tag, count), SEQUENCE 44,
// PUTFH 8, READ 16 (op, status, eof, length). A reply whose head is otherwise (another
// verifier, an error) keeps its data in the record.
constexpr size_t kReadReplyHead = 104;
// Smaller READs are copied from the record: a sink's extra first read would cost more.
constexpr size_t kSinkMinRead = 64 * 1024;

bool read_reply_head(const uint8_t* rec, size_t n, uint32_t xid, size_t* at, size_t* len) {
  rpc::XdrDecoder d(rec, n);
  rpc::ReplyHeader h;
  if (decode_compound_rpc(d, xid, &h) != 0) return false;
  ReplyReader r(d);
  SequenceRes sr;
  uint32_t st, count;
  bool eof;
  if (r.begin() < 0 || decode_sequence(r, &sr) < 0 || sr.status != NFS4_OK) return false;
  if (decode_status_only(r, OP_PUTFH, &st) < 0 || st != NFS4_OK) return false;
  if (r.next(OP_READ, &st) < 0 || st != NFS4_OK) return false;
  if (d.boolean(&eof) < 0 || d.u32(&count) < 0) return false;
  *at = d.pos();
  *len = count;
  return true;
}

}  // namespace

namespace {
// One READ or WRITE piece: what its compound is made of and what its reply gave. A piece's
// build and decode capture only a pointer to it, which std::function keeps in place; with
// the values captured, each was a heap allocation per piece.
struct ReadPiece {
  const Open* f;
  uint64_t off;
  uint32_t len;
  char* dst;
  size_t got = 0;
  bool eof = false;
};
struct WritePiece {
  const Open* f;
  uint64_t off;
  size_t len;
  const uint8_t* src;
  uint32_t stable;
  const std::shared_ptr<const void>* owner;
  WriteRes res;
};
}  // namespace

ssize_t Engine::read_pieces(const Cred& c, const Open& f, uint64_t off, size_t len, char* buf,
                            bool* eof) {
  size_t n = (len + rsize_ - 1) / rsize_;
  std::vector<ReadPiece> rp(n);
  std::vector<Piece> pieces(n);
  for (size_t i = 0; i < n; ++i) {
    ReadPiece* p = &rp[i];
    *p = {&f, off + i * rsize_, static_cast<uint32_t>(std::min<size_t>(rsize_, len - i * rsize_)),
          buf + i * rsize_};
    pieces[i].build = [p](Compound& k) {
      if (int rc = encode_putfh(k, (*p->f)->fh); rc < 0) return rc;
      return encode_read(k, (*p->f)->stateid(), p->off, p->len);
    };
    pieces[i].cachethis = false;
    if (p->len >= kSinkMinRead) {
      auto sink = std::make_shared<ReadSink>();
      sink->locate = read_reply_head;
      sink->head = kReadReplyHead;
      sink->dst = reinterpret_cast<uint8_t*>(p->dst);
      sink->cap = p->len;
      pieces[i].sink = std::move(sink);
    }
    pieces[i].decode = [p](ReplyReader& r) {
      uint32_t st;
      NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
      ReadRes rr;
      NFS41_STEP(r, decode_read(r, p->len, &rr));
      if (rr.status == 0) {
        if (!rr.placed) std::memcpy(p->dst, rr.data, rr.len);  // else it is there already
        p->got = rr.len;
        p->eof = rr.eof;
      }
      return 0;
    };
  }
  if (int rc = run_parallel(c, pieces); rc != 0) return rc;
  size_t total = 0;
  *eof = false;
  for (const ReadPiece& p : rp) {
    total += p.got;
    if (p.got < p.len) {
      *eof = p.eof;
      break;
    }
  }
  return static_cast<ssize_t>(total);
}

ssize_t Engine::read(const Cred& c, const Open& f, uint64_t off, size_t len, char* buf) {
  if (!f) return -EBADF;
  size_t done = 0;
  while (done < len) {
    bool eof = false;
    ssize_t n = read_pieces(c, f, off + done, len - done, buf + done, &eof);
    if (n < 0) return n;  // not DONE alone: a short FUSE read is taken for end of file
    // No bytes and no eof mid-file: a short read would cut the file there (the kernel's
    // nfs_readpage_retry gives EIO too).
    if (n == 0 && !eof) return -EIO;
    done += static_cast<size_t>(n);
    if (eof) break;  // a short piece without eof: ask again for the rest
  }
  return static_cast<ssize_t>(done);
}

ssize_t Engine::write_pieces(const Cred& c, const Open& f, uint64_t off, size_t len,
                             const char* buf, uint32_t stable, std::vector<PieceVerf>* verfs,
                             const std::shared_ptr<const void>& owner) {
  size_t n = (len + wsize_ - 1) / wsize_;
  std::vector<WritePiece> wp(n);
  std::vector<Piece> pieces(n);
  for (size_t i = 0; i < n; ++i) {
    WritePiece* p = &wp[i];
    *p = {&f, off + i * wsize_, std::min<size_t>(wsize_, len - i * wsize_),
          reinterpret_cast<const uint8_t*>(buf) + i * wsize_, stable, &owner, {}};
    pieces[i].build = [p](Compound& k) {
      if (int rc = encode_putfh(k, (*p->f)->fh); rc < 0) return rc;
      return encode_write(k, (*p->f)->stateid(), p->off, p->stable, p->src, p->len, *p->owner);
    };
    pieces[i].decode = [p](ReplyReader& r) {
      uint32_t st;
      NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
      NFS41_STEP(r, decode_write(r, p->len, &p->res));
      return 0;
    };
  }
  if (int rc = run_parallel(c, pieces); rc != 0) return rc;
  size_t total = 0;
  for (const WritePiece& p : wp) {
    if (verfs) verfs->push_back({p.off, p.res.count, verf64(p.res.verifier), p.res.committed == FILE_SYNC4});
    total += p.res.count;
    if (p.res.count < p.len) break;  // short: the caller writes the rest again
  }
  return static_cast<ssize_t>(total);
}

ssize_t Engine::write(const Cred& c, const Open& f, uint64_t off, size_t len, const char* buf,
                      int stable, std::vector<PieceVerf>* verfs,
                      const std::shared_ptr<const void>& owner) {
  if (!f) return -EBADF;
  if (stable < 0 || stable > 2) return -EINVAL;
  size_t done = 0;
  while (done < len) {
    ssize_t n = write_pieces(c, f, off + done, len - done, buf + done,
                             static_cast<uint32_t>(stable), verfs, owner);
    if (n < 0) return done ? static_cast<ssize_t>(done) : n;
    if (n == 0) return -EIO;  // the server wrote nothing: no progress is possible
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

int Engine::commit(const Cred& c, const Fh& fh, WriteVerf* verf) {
  CommitRes cr;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        return encode_commit(k, 0, 0);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_commit(r, &cr));
        return 0;
      });
  if (rv == 0 && verf) *verf = verf64(cr.verifier);
  return rv;
}

ssize_t Engine::write_committed(const Cred& c, const Open& f, uint64_t off, size_t len,
                                const char* buf) {
  std::vector<PieceVerf> verfs;
  ssize_t n = write(c, f, off, len, buf, UNSTABLE4, &verfs);
  if (n < 0) return n;
  if (std::all_of(verfs.begin(), verfs.end(), [](const PieceVerf& p) { return p.stable; }))
    return n;  // the server wrote it all to stable storage: nothing to COMMIT
  WriteVerf cv = 0;
  if (int rc = commit(c, f->fh, &cv); rc < 0) return rc;
  for (auto& p : verfs) {
    if (p.stable || p.verf == cv) continue;
    // Written before a server restart (or into a lost cache): write it again, stably.
    const char* src = buf + (p.off - off);
    ssize_t w = write(c, f, p.off, p.len, src, FILE_SYNC4, nullptr);
    if (w < 0) return w;
    resent_bytes_.fetch_add(p.len);
  }
  return n;
}

}  // namespace nfsshim::nfs41
