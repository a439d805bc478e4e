// The two engines behind targets.h's Target.
#include "targets.h"

#include <cerrno>

#include "nfsshim/nfs/engine.h"
#include "nfsshim/nfs41/engine.h"

namespace {

namespace nfs = nfsshim::nfs;
namespace nfs41 = nfsshim::nfs41;

class V3 : public Target {
 public:
  V3(std::unique_ptr<nfs::Engine> e, int nconnect) : e_(std::move(e)), nconnect_(nconnect) {}
  const char* vers() const override { return "3"; }
  const char* io() const override { return nfs::io_backend_name(e_->backend()); }
  int nconnect() const override { return nconnect_; }
  uint32_t rsize() const override { return e_->rsize(); }
  uint32_t wsize() const override { return e_->wsize(); }
  int create(const std::string& name) override {
    nfs::Cred c = e_->default_cred();
    e_->remove(c, e_->root(), name);
    if (int rv = e_->create(c, e_->root(), name, 0644, false, &fh_, nullptr); rv < 0) return rv;
    w_.reset(new nfs::UnstableWriter(*e_, fh_));
    return 0;
  }
  int open_existing(const std::string& name) override {
    return e_->lookup(e_->default_cred(), e_->root(), name, &fh_, nullptr);
  }
  ssize_t write(uint64_t off, const char* buf, size_t n) override {
    return w_->write(e_->default_cred(), off, buf, n);
  }
  int commit() override { return w_->commit(e_->default_cred()); }
  ssize_t read(uint64_t off, size_t n, char* buf) override {
    return e_->read(e_->default_cred(), fh_, off, n, buf);
  }
  Counters counters() const override {
    nfs::EngineStats s = e_->stats();
    return Counters{s.calls, s.loop_syscalls, s.calls_per_conn};
  }

 private:
  std::unique_ptr<nfs::Engine> e_;
  int nconnect_;
  nfs::Fh fh_;
  std::unique_ptr<nfs::UnstableWriter> w_;
};

class V41 : public Target {
 public:
  explicit V41(std::unique_ptr<nfs41::Engine> e, int nconnect) : e_(std::move(e)), nconnect_(nconnect) {}
  ~V41() override {
    w_.reset();
    if (f_) e_->close(e_->default_cred(), f_);
  }
  const char* vers() const override { return "4.1"; }
  const char* io() const override { return nfs::io_backend_name(e_->backend()); }
  int nconnect() const override { return nconnect_; }
  uint32_t rsize() const override { return e_->rsize(); }
  uint32_t wsize() const override { return e_->wsize(); }
  int create(const std::string& name) override {
    nfs::Cred c = e_->default_cred();
    e_->remove(c, e_->root(), name);
    if (int rv = e_->open(c, e_->root(), name, true, false, 0644, &f_, nullptr); rv < 0) return rv;
    // The v3 engine's UnstableWriter policy, through the v4.1 stateid (as nfsshim-fuse does).
    nfs41::Engine* e = e_.get();
    nfs41::Open f = f_;
    w_.reset(new nfs::UnstableWriter(
        [e, f](const nfs::Cred& wc, uint64_t off, size_t len, const char* buf, int stable,
               std::vector<nfs::Engine::PieceVerf>* verfs, const std::shared_ptr<const void>& owner) {
          return e->write(wc, f, off, len, buf, stable, verfs, owner);
        },
        [e, f](const nfs::Cred& wc, nfs::WriteVerf* verf) { return e->commit(wc, f->fh, verf); }));
    return 0;
  }
  int open_existing(const std::string& name) override {
    return e_->open(e_->default_cred(), e_->root(), name, false, false, 0, &f_, nullptr);
  }
  ssize_t write(uint64_t off, const char* buf, size_t n) override {
    return w_->write(e_->default_cred(), off, buf, n);
  }
  int commit() override { return w_->commit(e_->default_cred()); }
  ssize_t read(uint64_t off, size_t n, char* buf) override {
    return e_->read(e_->default_cred(), f_, off, n, buf);
  }
  Counters counters() const override {
    nfs41::Stats s = e_->stats();
    return Counters{s.calls, s.loop_syscalls, s.calls_per_conn};
  }
  std::string extra() const override {
    nfs41::Stats s = e_->stats();
    // peak_slots: the most slots in use at once since the engine was opened (no reset).
    return " slots_granted=" + std::to_string(s.slots_granted) +
           " peak_slots=" + std::to_string(s.peak_slots) +
           " retries=" + std::to_string(s.retries) + " delays=" + std::to_string(s.delays) +
           " replays=" + std::to_string(s.replays) + " timeouts=" + std::to_string(s.timeouts) +
           " read_placed_MiB=" + std::to_string(s.read_placed_bytes >> 20) +
           " ring_recvs=" + std::to_string(s.read_ring_recvs) +
           " maxreq=" + std::to_string(s.maxrequest) + " maxresp=" + std::to_string(s.maxresponse);
  }

 private:
  std::unique_ptr<nfs41::Engine> e_;
  int nconnect_;
  nfs41::Open f_;
  std::unique_ptr<nfs::UnstableWriter> w_;
};

}  // namespace

int open_target(const std::string& url_s, std::unique_ptr<Target>* out, std::string* why) {
  nfs::NfsUrl url;
  if (int rv = nfs::parse_nfs_url(url_s, &url, why); rv < 0) return rv;
  if (url.vers_major == 4) {
    nfs41::Options o;
    if (int rv = nfs41::options_from_url(url, &o, why); rv < 0) return rv;
    std::unique_ptr<nfs41::Engine> e;
    if (int rv = nfs41::Engine::open(o, &e, why); rv < 0) return rv;
    out->reset(new V41(std::move(e), url.nconnect));
    return 0;
  }
  std::unique_ptr<nfs::Engine> e;
  if (int rv = nfs::Engine::open(url, &e, why); rv < 0) return rv;
  out->reset(new V3(std::move(e), url.nconnect));
  return 0;
}
