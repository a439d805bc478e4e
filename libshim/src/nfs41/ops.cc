// Metadata operations of the NFSv4.1 engine: one compound each (PUTFH, the op, and
// GETFH/GETATTR where the v3 engine's signature returns a handle or attributes).
#include <cerrno>

#include "idmap.h"
#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs4/constants.h"
#include "nfsshim/nfs4/nfsstat4.h"
#include "nfsshim/nfs4/ops_attr.h"
#include "nfsshim/nfs4/ops_dir.h"
#include "nfsshim/nfs4/ops_fh.h"

namespace nfsshim::nfs41 {

using namespace nfs4;

void to_attr(const Fattr4& f, nfs::Attr* a) {
  a->type = static_cast<int>(f.type);  // nfs_ftype4 REG..FIFO have ftype3's values
  a->mode = f.mode & 07777;
  a->nlink = f.numlinks;
  a->uid = owner_to_id(f.owner, false);
  a->gid = owner_to_id(f.owner_group, true);
  a->size = f.size;
  a->used = f.space_used;
  a->fsid = f.fsid.major ^ (f.fsid.minor << 32);
  a->fileid = f.fileid;
  a->rdev_major = f.rawdev_major;
  a->rdev_minor = f.rawdev_minor;
  a->atime = {static_cast<time_t>(f.time_access.seconds), static_cast<long>(f.time_access.nseconds)};
  a->mtime = {static_cast<time_t>(f.time_modify.seconds), static_cast<long>(f.time_modify.nseconds)};
  a->ctime = {static_cast<time_t>(f.time_metadata.seconds),
              static_cast<long>(f.time_metadata.nseconds)};
}

SetAttrs to_setattrs(const nfs::SetAttr& sa) {
  SetAttrs s;
  s.set_size = sa.set_size;
  s.size = sa.size;
  s.set_mode = sa.set_mode;
  s.mode = sa.mode & 07777;
  s.set_owner = sa.set_uid;
  s.owner = std::to_string(sa.uid);
  s.set_owner_group = sa.set_gid;
  s.owner_group = std::to_string(sa.gid);
  auto how = [](nfs::SetAttr::Time t) {
    switch (t) {
      case nfs::SetAttr::Time::kServerNow: return TimeHow::kServerTime;
      case nfs::SetAttr::Time::kClient: return TimeHow::kClientTime;
      default: return TimeHow::kDontChange;
    }
  };
  s.atime_how = how(sa.atime);
  s.atime = {sa.atime_val.tv_sec, static_cast<uint32_t>(sa.atime_val.tv_nsec)};
  s.mtime_how = how(sa.mtime);
  s.mtime = {sa.mtime_val.tv_sec, static_cast<uint32_t>(sa.mtime_val.tv_nsec)};
  return s;
}

// PUTFH + GETATTR of WANT.
int Engine::getattr4(const Cred& c, const Fh& fh, const Bitmap4& want, Fattr4* out) {
  GetattrRes ga;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        return encode_getattr(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_getattr(r, want, &ga));
        return 0;
      });
  if (rv == 0) *out = std::move(ga.attrs);
  return rv;
}

int Engine::getattr(const Cred& c, const Fh& fh, Attr* out) {
  Fattr4 f;
  int rv = getattr4(c, fh, getattr_bitmap(), &f);
  if (rv == 0 && out) to_attr(f, out);
  return rv;
}

int Engine::setattr(const Cred& c, const Fh& fh, const SetAttr& sa, Attr* post) {
  SetAttrs s = to_setattrs(sa);
  Bitmap4 want = getattr_bitmap();
  SetattrRes sr;
  GetattrRes ga;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        if (int rc = encode_setattr(k, Stateid4{}, s); rc < 0) return rc;
        return encode_getattr(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_setattr(r, s, &sr));
        NFS41_STEP(r, decode_getattr(r, want, &ga));
        return 0;
      });
  if (rv == 0 && post) to_attr(ga.attrs, post);
  return rv;
}

int Engine::lookup(const Cred& c, const Fh& dir, const std::string& name, Fh* out, Attr* attr) {
  if (int rc = check_component(name); rc < 0) return rc;
  Bitmap4 want = getattr_bitmap();
  GetfhRes gf;
  GetattrRes ga;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, dir); rc < 0) return rc;
        encode_lookup(k, name);
        encode_getfh(k);
        return encode_getattr(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_status_only(r, OP_LOOKUP, &st));
        NFS41_STEP(r, decode_getfh(r, &gf));
        NFS41_STEP(r, decode_getattr(r, want, &ga));
        return 0;
      });
  if (rv != 0) return rv;
  if (out) *out = fh3(gf.fh);
  if (attr) to_attr(ga.attrs, attr);
  return 0;
}

int Engine::lookup_path(const Cred& c, const std::string& path, Fh* out, Attr* attr) {
  std::vector<std::string> comps;
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) comps.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  for (auto& s : comps)
    if (int rc = check_component(s); rc < 0) return rc;
  uint32_t maxops;
  {
    std::lock_guard<std::mutex> g(mu_);
    maxops = maxops_;
  }
  // SEQUENCE PUTFH LOOKUP... GETFH GETATTR: longer paths go in several compounds.
  size_t per = maxops > 5 ? maxops - 4 : 1;
  Fh cur = root_;
  Attr a;
  if (comps.empty()) {
    if (out) *out = cur;
    return attr ? getattr(c, cur, attr) : 0;
  }
  for (size_t i = 0; i < comps.size(); i += per) {
    size_t n = std::min(per, comps.size() - i);
    Bitmap4 want = getattr_bitmap();
    GetfhRes gf;
    GetattrRes ga;
    int rv = run(c,
        [&](Compound& k) {
          if (int rc = encode_putfh(k, cur); rc < 0) return rc;
          for (size_t j = 0; j < n; ++j) encode_lookup(k, comps[i + j]);
          encode_getfh(k);
          return encode_getattr(k, want);
        },
        [&](ReplyReader& r) {
          uint32_t st;
          NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
          for (size_t j = 0; j < n; ++j) NFS41_STEP(r, decode_status_only(r, OP_LOOKUP, &st));
          NFS41_STEP(r, decode_getfh(r, &gf));
          NFS41_STEP(r, decode_getattr(r, want, &ga));
          return 0;
        });
    if (rv != 0) return rv;
    cur = fh3(gf.fh);
    to_attr(ga.attrs, &a);
  }
  if (out) *out = cur;
  if (attr) *attr = a;
  return 0;
}

int Engine::access(const Cred& c, const Fh& fh, uint32_t want, uint32_t* granted) {
  AccessRes ar;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        return encode_access(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_access(r, &ar));
        return 0;
      });
  if (rv == 0 && granted) *granted = ar.access;
  return rv;
}

int Engine::create_obj(const Cred& c, const Fh& dir, uint32_t type, const std::string& name,
                       const std::string& target, uint32_t mode, Fh* out, Attr* attr) {
  if (int rc = check_component(name); rc < 0) return rc;
  CreateArgs a;
  a.type = type;
  a.name = name;
  a.link_target = target;
  a.attrs.set_mode = true;
  a.attrs.mode = mode & 07777;
  Bitmap4 want = getattr_bitmap();
  CreateRes cr;
  GetfhRes gf;
  GetattrRes ga;
  bool rerun = false;
  const timespec sent = Attr::now();
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, dir); rc < 0) return rc;
        if (int rc = encode_create(k, a); rc < 0) return rc;
        encode_getfh(k);
        return encode_getattr(k, want);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_create(r, a, &cr));
        NFS41_STEP(r, decode_getfh(r, &gf));
        NFS41_STEP(r, decode_getattr(r, want, &ga));
        return 0;
      },
      true, &rerun);
  if (rv == -EEXIST && rerun) {
    return exist_after_rerun(c, type == NF4DIR ? "CREATE (directory)" : "CREATE (symlink)", dir, name,
        [&](const Fh& fh, const Attr& at) {
          // A directory of before our first run is another's (a mkdir lock held): EEXIST.
          if (type == NF4DIR) return at.type == NF4DIR && at.changed_since(sent);
          std::string t;
          return at.type == NF4LNK && readlink(c, fh, &t) == 0 && t == target;
        },
        out, attr);
  }
  if (rv != 0) return rv;
  if (out) *out = fh3(gf.fh);
  if (attr) to_attr(ga.attrs, attr);
  return 0;
}

int Engine::mkdir(const Cred& c, const Fh& dir, const std::string& name, uint32_t mode, Fh* out,
                  Attr* attr) {
  return create_obj(c, dir, NF4DIR, name, {}, mode, out, attr);
}

int Engine::symlink(const Cred& c, const Fh& dir, const std::string& name,
                    const std::string& target, Fh* out, Attr* attr) {
  if (target.empty()) return -EINVAL;
  return create_obj(c, dir, NF4LNK, name, target, 0777, out, attr);
}

int Engine::readlink(const Cred& c, const Fh& fh, std::string* target) {
  ReadlinkRes rr;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        return encode_readlink(k);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_readlink(r, &rr));
        return 0;
      });
  if (rv == 0) *target = rr.target;
  return rv;
}

int Engine::link(const Cred& c, const Fh& fh, const Fh& dir, const std::string& name) {
  if (int rc = check_component(name); rc < 0) return rc;
  LinkRes lr;
  bool rerun = false;
  int rv = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, fh); rc < 0) return rc;
        encode_savefh(k);
        if (int rc = encode_putfh(k, dir); rc < 0) return rc;
        return encode_link(k, name);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_status_only(r, OP_SAVEFH, &st));
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_link(r, &lr));
        return 0;
      },
      true, &rerun);
  if (rv != -EEXIST || !rerun) return rv;
  Attr src;
  if (getattr(c, fh, &src) != 0) return rv;
  return exist_after_rerun(c, "LINK", dir, name,
      [&](const Fh&, const Attr& at) { return at.fileid == src.fileid && at.fsid == src.fsid; },
      nullptr, nullptr);
}

int Engine::exist_after_rerun(const Cred& c, const char* what, const Fh& dir,
                              const std::string& name,
                              const std::function<bool(const Fh&, const Attr&)>& made, Fh* out,
                              Attr* attr) {
  Fh fh;
  Attr a;
  if (lookup(c, dir, name, &fh, &a) != 0 || !made(fh, a)) return -EEXIST;
  SHIM_LOG_INFO("nfs41: {} of '{}' run again in a new session answered EXIST: the lost first "
                "run made it", what, name);
  resent_exist_.fetch_add(1);
  if (out) *out = fh;
  if (attr) *attr = a;
  return 0;
}

int Engine::rerun_done(int rc, bool rerun, const char* what, const std::string& name) {
  if (rc != -ENOENT || !rerun) return rc;
  SHIM_LOG_INFO("nfs41: {} of '{}' run again in a new session answered NOENT: the lost first "
                "run did it", what, name);
  resent_done_.fetch_add(1);
  return 0;
}

int Engine::remove(const Cred& c, const Fh& dir, const std::string& name) {
  if (int rc = check_component(name); rc < 0) return rc;
  RemoveRes rr;
  bool rerun = false;
  int res = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, dir); rc < 0) return rc;
        return encode_remove(k, name);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_remove(r, &rr));
        return 0;
      },
      true, &rerun);
  return rerun_done(res, rerun, "REMOVE", name);
}

int Engine::rename(const Cred& c, const Fh& from_dir, const std::string& from, const Fh& to_dir,
                   const std::string& to) {
  if (int rc = check_component(from); rc < 0) return rc;
  if (int rc = check_component(to); rc < 0) return rc;
  RenameRes rr;
  bool rerun = false;
  int res = run(c,
      [&](Compound& k) {
        if (int rc = encode_putfh(k, from_dir); rc < 0) return rc;
        encode_savefh(k);
        if (int rc = encode_putfh(k, to_dir); rc < 0) return rc;
        return encode_rename(k, from, to);
      },
      [&](ReplyReader& r) {
        uint32_t st;
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_status_only(r, OP_SAVEFH, &st));
        NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
        NFS41_STEP(r, decode_rename(r, &rr));
        return 0;
      },
      true, &rerun);
  if (res == -ENOENT && rerun) {
    // Done by the lost first run only if TO is there now (FROM is gone, or ENOENT
    // would not have come back).
    Fh fh;
    Attr attr;
    if (lookup(c, to_dir, to, &fh, &attr) != 0) return res;
  }
  return rerun_done(res, rerun, "RENAME", to);
}

int Engine::readdir(const Cred& c, const Fh& dir, std::vector<DirEntry>* out) {
  out->clear();
  ReaddirArgs a;
  a.dircount = 16384;
  a.maxcount = 65536;
  // RDATTR_ERROR: without it ganesha fails the whole READDIR when one entry's attributes
  // cannot be read (it was removed mid-scan); with it that entry carries the error.
  a.attrs = getattr_bitmap().set(FATTR4_FILEHANDLE).set(FATTR4_RDATTR_ERROR);
  nfs::ReaddirRestarts restarts;
  for (;;) {
    ReaddirRes rr;
    int rv = run(c,
        [&](Compound& k) {
          if (int rc = encode_putfh(k, dir); rc < 0) return rc;
          return encode_readdir(k, a);
        },
        [&](ReplyReader& r) {
          uint32_t st;
          NFS41_STEP(r, decode_status_only(r, OP_PUTFH, &st));
          NFS41_STEP(r, decode_readdir(r, a, &rr));
          return 0;
        },
        false);
    const uint64_t asked = a.cookie;
    auto dir_status = [&] {
      nfs::Attr at;
      return getattr(c, dir, &at);
    };
    if (rv < 0) {
      auto next = restarts.after(&rv, asked, dir_status, "nfs41: READDIR");
      if (next == nfs::ReaddirRestarts::kSameCookie) continue;
      if (next == nfs::ReaddirRestarts::kFromStart) {
        out->clear();
        a.cookie = 0;
        a.cookieverf = {};
        continue;
      }
    }
    if (rv != 0) return rv;
    for (auto& e : rr.entries) {
      a.cookie = e.cookie;
      // Gone between the server reading the name and its attributes: left out, as a name
      // removed during the listing may be. Another error (ACCESS, say): the name without
      // attributes, as the kernel lists it (its lookup then says what is wrong).
      const uint32_t err = e.attrs.present.test(FATTR4_RDATTR_ERROR) ? e.attrs.rdattr_error : NFS4_OK;
      if (err == NFS4ERR_NOENT || err == NFS4ERR_STALE) {
        SHIM_LOG_DEBUG("nfs41: READDIR: '{}' left out: {}", e.name, nfs4_status_name(err));
        continue;
      }
      DirEntry d;
      d.name = e.name;
      d.cookie = e.cookie;
      d.fileid = e.attrs.present.test(FATTR4_FILEID) ? e.attrs.fileid : 1;  // the kernel's default
      d.has_attr = err == NFS4_OK && e.attrs.present.test(FATTR4_TYPE) && e.attrs.present.test(FATTR4_MODE);
      if (d.has_attr) to_attr(e.attrs, &d.attr);
      d.has_fh = err == NFS4_OK && e.attrs.present.test(FATTR4_FILEHANDLE) && !e.attrs.filehandle.empty();
      if (d.has_fh) d.fh = fh3(e.attrs.filehandle);
      out->push_back(std::move(d));
    }
    a.cookieverf = rr.cookieverf;
    if (rr.eof) return 0;
    // No entries and no eof makes no progress, as a repeated cookie: a broken server (taking
    // it as the end would cut the listing short without a word).
    if (rr.entries.empty() || a.cookie == asked || out->size() > kMaxDirEntries) {
      SHIM_LOG_ERROR("nfs41: READDIR: the server's listing does not end ({} entries, cookie {} after {}): EIO",
                     out->size(), a.cookie, asked);
      return -EIO;
    }
  }
}

int Engine::fsstat(const Cred& c, const Fh& fh, nfs::FsStat* out) {
  Fattr4 f;
  int rv = getattr4(c, fh, fsstat_bitmap(), &f);
  if (rv != 0) return rv;
  out->tbytes = f.space_total;
  out->fbytes = f.space_free;
  out->abytes = f.space_avail;
  out->tfiles = f.files_total;
  out->ffiles = f.files_free;
  out->afiles = f.files_avail;
  return 0;
}

}  // namespace nfsshim::nfs41
