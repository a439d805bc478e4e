// The FUSE backend's client over the NFSv3 engine (libnfs contexts on the event loops).
// NFSv3 has no open state: a FileIo only holds the file's UNSTABLE writer.
#include <atomic>
#include <memory>

#include "nfs/client_forward.h"

namespace nfsshim::fuse::nfsfs {
namespace {

class FileIo3 final : public FileIo {
 public:
  FileIo3(nfs::Engine& e, const nfs::Fh& fh, nfs::UnstableLimit* limit)
      : e_(e), fh_(fh), writer_(e, fh, nfs::UnstableWriter::kMaxRetained, limit) {}
  int open(const nfs::Cred&, int, std::unique_ptr<CreatedOpen>, uint64_t* handle) override {
    *handle = next_.fetch_add(1);  // for the write-behind's error reporting per open
    return 0;
  }
  int close(const nfs::Cred&, uint64_t) override { return 0; }
  ssize_t read(const nfs::Cred& c, uint64_t, uint64_t off, size_t len, char* buf) override {
    return e_.read(c, fh_, off, len, buf);
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
  bool server_keeps_unlinked() override { return false; }

 private:
  nfs::Engine& e_;
  const nfs::Fh fh_;
  nfs::UnstableWriter writer_;
  std::atomic<uint64_t> next_{1};
};

class ClientV3 final : public ForwardingClient<nfs::Engine> {
 public:
  explicit ClientV3(std::unique_ptr<nfs::Engine> e) : ForwardingClient(std::move(e)) {}
  std::string describe() const override {
    return "direct NFSv3 engine, " + std::to_string(e_->url().nconnect) + " connections, " +
           nfs::io_backend_name(e_->backend());
  }
  int fixed_uid() const override { return e_->url().uid; }
  int fixed_gid() const override { return e_->url().gid; }
  int create(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, uint32_t mode, int flags,
             nfs::Fh* out, nfs::Attr* attr, std::unique_ptr<CreatedOpen>*) override {
    return e_->create(c, dir, name, mode, (flags & O_EXCL) != 0, out, attr, (flags & O_TRUNC) != 0);
  }
  int readdirplus(const nfs::Cred& c, const nfs::Fh& dir, std::vector<nfs::DirEntry>* out) override {
    return e_->readdirplus(c, dir, out);
  }
  std::unique_ptr<FileIo> file_io(const nfs::Fh& fh, nfs::UnstableLimit* limit) override {
    return std::make_unique<FileIo3>(*e_, fh, limit);
  }
};

}  // namespace

// Locks are local to the host unless a client says otherwise (server_locks()).
int FileIo::getlk(const nfs::Cred&, uint64_t, uint64_t, struct flock*) { return -ENOSYS; }
int FileIo::setlk(const nfs::Cred&, uint64_t, uint64_t, const struct flock&, bool,
                  const std::atomic<bool>*) {
  return -ENOSYS;
}
int FileIo::unlock_owner(const nfs::Cred&, uint64_t, uint64_t) { return 0; }

int open_client_v3(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why) {
  std::unique_ptr<nfs::Engine> e;
  int rv = nfs::Engine::open(url, &e, why);
  if (rv < 0) return rv;
  *out = std::make_unique<ClientV3>(std::move(e));
  return 0;
}

int open_client(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why) {
  if (url.vers_major == 4 && url.vers_minor == 1) return open_client_v41(url, out, why);
  return open_client_v3(url, out, why);
}

}  // namespace nfsshim::fuse::nfsfs
