// The FUSE backend's client over the NFSv4.1 session engine. Every FUSE open of a file is
// its own OPEN (CLAIM_FH, share access from the open flags, its own open-owner and
// stateid), closed at that open's release; reads and writes go through those stateids.
#include <fcntl.h>

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "nfs/client_forward.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs41/engine.h"
#include "nfsshim/nfs4/constants.h"

namespace nfsshim::fuse::nfsfs {
namespace {

using nfs41::Open;

uint32_t share_access(int flags) {
  switch (flags & O_ACCMODE) {
    case O_RDONLY: return nfs4::OPEN4_SHARE_ACCESS_READ;
    case O_WRONLY: return nfs4::OPEN4_SHARE_ACCESS_WRITE;
    default: return nfs4::OPEN4_SHARE_ACCESS_BOTH;
  }
}

nfs41::Engine::LockType lock_type(short l_type) {
  return l_type == F_RDLCK ? nfs41::Engine::LockType::kRead : nfs41::Engine::LockType::kWrite;
}

struct CreatedOpen41 final : CreatedOpen {
  explicit CreatedOpen41(Open o) : open(std::move(o)) {}
  Open open;
};

class FileIo41 final : public FileIo {
 public:
  FileIo41(nfs41::Engine& e, const nfs::Fh& fh, bool assume_preserved, nfs::UnstableLimit* limit)
      : e_(e),
        fh_(fh),
        assume_preserved_(assume_preserved),
        writer_(
            [this](const nfs::Cred& c, uint64_t off, size_t len, const char* buf, int stable,
                   std::vector<nfs::Engine::PieceVerf>* verfs,
                   const std::shared_ptr<const void>& owner) -> ssize_t {
              InUse o(*this, 0, nfs4::OPEN4_SHARE_ACCESS_WRITE);
              if (!o.open) return -EBADF;
              return e_.write(c, o.open, off, len, buf, stable, verfs, owner);
            },
            [this](const nfs::Cred& c, nfs::WriteVerf* verf) { return e_.commit(c, fh_, verf); },
            nfs::UnstableWriter::kMaxRetained, limit, [this] { return e_.restart_generation(); }) {}

  int open(const nfs::Cred& c, int flags, std::unique_ptr<CreatedOpen> created,
           uint64_t* handle) override {
    Open o;
    if (auto* co = dynamic_cast<CreatedOpen41*>(created.get())) {
      o = co->open;  // the creator's open (access from its flags)
    } else {
      {
        std::lock_guard<std::mutex> g(mu_);
        ++pending_;  // server_keeps_unlinked() is false until this OPEN's answer is known
      }
      int rv = e_.open_fh(c, fh_, share_access(flags), &o);
      std::lock_guard<std::mutex> g(mu_);
      --pending_;
      if (rv != 0) return rv;
    }
    std::lock_guard<std::mutex> g(mu_);
    *handle = next_++;
    opens_.emplace(*handle, std::move(o));
    return 0;
  }

  int close(const nfs::Cred& c, uint64_t handle) override {
    Open o;
    {
      std::unique_lock<std::mutex> g(mu_);
      auto it = opens_.find(handle);
      if (it == opens_.end()) return -EBADF;
      o = std::move(it->second);
      opens_.erase(it);  // no new I/O picks it; what picked it ends before its CLOSE
      idle_.wait(g, [&] { return busy_.count(o.get()) == 0; });
    }
    return e_.close(c, o);  // releases the lock state taken through it first
  }

  ssize_t read(const nfs::Cred& c, uint64_t handle, uint64_t off, size_t len, char* buf) override {
    InUse o(*this, handle, nfs4::OPEN4_SHARE_ACCESS_READ);
    if (!o.open) return -EBADF;
    return e_.read(c, o.open, off, len, buf);
  }
  ssize_t write(const nfs::Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                int stable) override {
    return writer_.write(c, off, std::move(data), stable);
  }
  int commit(const nfs::Cred& c) override { return writer_.commit(c); }
  int commit_kept() override { return writer_.commit_kept(); }
  bool kept_before_restart() override { return writer_.kept_before_restart(); }
  int commit_if_restarted() override { return writer_.commit_if_restarted(); }
  size_t kept_bytes() override { return writer_.retained_bytes(); }

  int getlk(const nfs::Cred& c, uint64_t handle, uint64_t owner, struct flock* lk) override {
    Open o = pick(handle, nfs4::OPEN4_SHARE_ACCESS_READ | nfs4::OPEN4_SHARE_ACCESS_WRITE);
    if (!o) return -EBADF;
    nfs41::Engine::LockConflict conflict;
    int rv = e_.test_lock(c, o, owner, lock_type(lk->l_type), static_cast<uint64_t>(lk->l_start),
                          static_cast<uint64_t>(lk->l_len), &conflict);
    if (rv == 0) {
      lk->l_type = F_UNLCK;
      return 0;
    }
    if (rv != -EAGAIN) return rv;
    lk->l_type = conflict.type == nfs41::Engine::LockType::kRead ? F_RDLCK : F_WRLCK;
    lk->l_whence = SEEK_SET;
    lk->l_start = static_cast<off_t>(conflict.off);
    lk->l_len = static_cast<off_t>(conflict.len);
    lk->l_pid = 0;  // held elsewhere (maybe another host): no pid of ours to name
    return 0;
  }

  int setlk(const nfs::Cred& c, uint64_t handle, uint64_t owner, const struct flock& lk, bool sleep,
            const std::atomic<bool>* cancel) override {
    Open o = pick(handle, nfs4::OPEN4_SHARE_ACCESS_READ | nfs4::OPEN4_SHARE_ACCESS_WRITE);
    if (!o) return -EBADF;
    const auto off = static_cast<uint64_t>(lk.l_start), len = static_cast<uint64_t>(lk.l_len);
    if (lk.l_type == F_UNLCK) return e_.unlock(c, o, owner, off, len);
    return e_.lock(c, o, owner, lock_type(lk.l_type), off, len, sleep ? -1 : 0, nullptr, cancel);
  }

  int unlock_owner(const nfs::Cred& c, uint64_t handle, uint64_t owner) override {
    Open o = pick(handle, nfs4::OPEN4_SHARE_ACCESS_READ | nfs4::OPEN4_SHARE_ACCESS_WRITE);
    return o ? e_.unlock(c, o, owner, 0, 0) : 0;
  }

  bool server_keeps_unlinked() override {
    std::lock_guard<std::mutex> g(mu_);
    if (pending_ > 0 || opens_.empty()) return false;
    for (const auto& kv : opens_)
      if (!kv.second->preserve_unlinked && !assume_preserved_) return false;
    return true;
  }

 private:
  // HANDLE's open if it has ACCESS, else any open that has it (a write from the page cache
  // may come through another open of the file). Null if none.
  Open pick(uint64_t handle, uint32_t access) {
    std::lock_guard<std::mutex> g(mu_);
    return pick_locked(handle, access);
  }
  Open pick_locked(uint64_t handle, uint32_t access) {
    auto it = opens_.find(handle);
    if (it != opens_.end() && (it->second->access & access)) return it->second;
    for (const auto& kv : opens_)
      if (kv.second->access & access) return kv.second;
    return nullptr;
  }
  // An open picked for a READ or WRITE, counted busy until the call ends: its CLOSE waits
  // for that, as the server would refuse the stateid of a closed open (BAD_STATEID: EIO,
  // which write-behind would then report for every later write of the file). Writes from
  // the page cache pick any open with write access, so another descriptor's close can race.
  struct InUse {
    InUse(FileIo41& io, uint64_t handle, uint32_t access) : io_(io) {
      std::lock_guard<std::mutex> g(io_.mu_);
      open = io_.pick_locked(handle, access);
      if (open) ++io_.busy_[open.get()];
    }
    ~InUse() {
      if (!open) return;
      std::lock_guard<std::mutex> g(io_.mu_);
      auto it = io_.busy_.find(open.get());
      if (--it->second == 0) {
        io_.busy_.erase(it);
        io_.idle_.notify_all();
      }
    }
    InUse(const InUse&) = delete;
    InUse& operator=(const InUse&) = delete;
    Open open;

   private:
    FileIo41& io_;
  };

  nfs41::Engine& e_;
  const nfs::Fh fh_;
  const bool assume_preserved_;
  std::mutex mu_;  // fileio41_mu_3: opens_, pending_, next_, busy_; leaf, never held across a call
  std::condition_variable idle_;              // busy_ lost an entry
  std::map<uint64_t, Open> opens_;
  std::map<const nfs41::OpenFile*, int> busy_;  // opens in a READ or WRITE, and how many
  int pending_ = 0;
  uint64_t next_ = 1;
  nfs::UnstableWriter writer_;
};

class ClientV41 final : public ForwardingClient<nfs41::Engine> {
 public:
  ClientV41(const nfs::NfsUrl& url, std::unique_ptr<nfs41::Engine> e) : ForwardingClient(std::move(e)), url_(url) {
    // Test hook: no server here sets OPEN4_RESULT_PRESERVE_UNLINKED (ganesha never does), so
    // the plain-REMOVE path is tested by pretending it did (tests/engine/fuse_nfs_test.sh).
    if (std::getenv("NFSSHIM_TEST_ASSUME_PRESERVE_UNLINKED")) {
      assume_preserved_ = true;
      SHIM_LOG_WARN("test hook NFSSHIM_TEST_ASSUME_PRESERVE_UNLINKED: every OPEN counts as PRESERVE_UNLINKED");
    }
  }
  std::string describe() const override {
    nfs41::Stats s = e_->stats();
    return "direct NFSv4.1 engine, " + std::to_string(e_->conn_count()) + " connections, " +
           std::to_string(s.slots_granted) + " session slots, lease " + std::to_string(s.lease_s) + " s, " +
           nfs::io_backend_name(e_->backend());
  }
  int fixed_uid() const override { return url_.uid; }
  int fixed_gid() const override { return url_.gid; }
  int create(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, uint32_t mode, int flags,
             nfs::Fh* out, nfs::Attr* attr, std::unique_ptr<CreatedOpen>* created) override {
    Open o;
    int rv = e_->open(c, dir, name, true, (flags & O_EXCL) != 0, mode, &o, attr, share_access(flags),
                      (flags & O_TRUNC) != 0);
    if (rv != 0) return rv;
    *out = o->fh;
    if (created) {
      *created = std::make_unique<CreatedOpen41>(std::move(o));
    } else {
      e_->close(c, o);  // mknod: nothing stays open
    }
    return 0;
  }
  int readdirplus(const nfs::Cred& c, const nfs::Fh& dir, std::vector<nfs::DirEntry>* out) override {
    return e_->readdir(c, dir, out);
  }
  std::unique_ptr<FileIo> file_io(const nfs::Fh& fh, nfs::UnstableLimit* limit) override {
    return std::make_unique<FileIo41>(*e_, fh, assume_preserved_, limit);
  }
  bool server_locks() const override { return true; }

 private:
  const nfs::NfsUrl url_;
  bool assume_preserved_ = false;
};

}  // namespace

int open_client_v41(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why) {
  nfs41::Options o;
  int rv = nfs41::options_from_url(url, &o, why);
  if (rv < 0) return rv;
  std::unique_ptr<nfs41::Engine> e;
  rv = nfs41::Engine::open(o, &e, why);
  if (rv != 0) return rv < 0 ? rv : -EIO;
  *out = std::make_unique<ClientV41>(url, std::move(e));
  return 0;
}

}  // namespace nfsshim::fuse::nfsfs
