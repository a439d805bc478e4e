// The metadata calls the two engines spell alike, forwarded once for both clients
// (client_v3.cc, client_v41.cc); each adds what differs (create, readdir, open files).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "nfs/client.h"

namespace nfsshim::fuse::nfsfs {

template <class Engine>
class ForwardingClient : public Client {
 public:
  const nfs::Fh& root() const override { return e_->root(); }
  nfs::Cred default_cred() const override { return e_->default_cred(); }
  int getattr(const nfs::Cred& c, const nfs::Fh& fh, nfs::Attr* out) override {
    return e_->getattr(c, fh, out);
  }
  int setattr(const nfs::Cred& c, const nfs::Fh& fh, const nfs::SetAttr& sa) override {
    return e_->setattr(c, fh, sa, nullptr);
  }
  int lookup(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, nfs::Fh* out,
             nfs::Attr* attr) override {
    return e_->lookup(c, dir, name, out, attr);
  }
  int readlink(const nfs::Cred& c, const nfs::Fh& fh, std::string* target) override {
    return e_->readlink(c, fh, target);
  }
  int mkdir(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, uint32_t mode, nfs::Fh* out,
            nfs::Attr* attr) override {
    return e_->mkdir(c, dir, name, mode, out, attr);
  }
  int symlink(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, const std::string& target,
              nfs::Fh* out, nfs::Attr* attr) override {
    return e_->symlink(c, dir, name, target, out, attr);
  }
  int access(const nfs::Cred& c, const nfs::Fh& fh, uint32_t want, uint32_t* granted) override {
    return e_->access(c, fh, want, granted);
  }
  int link(const nfs::Cred& c, const nfs::Fh& fh, const nfs::Fh& dir, const std::string& name) override {
    return e_->link(c, fh, dir, name);
  }
  int remove(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name) override {
    return e_->remove(c, dir, name);
  }
  int rmdir(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name) override {
    return e_->rmdir(c, dir, name);
  }
  int rename(const nfs::Cred& c, const nfs::Fh& from_dir, const std::string& from, const nfs::Fh& to_dir,
             const std::string& to) override {
    return e_->rename(c, from_dir, from, to_dir, to);
  }
  int fsstat(const nfs::Cred& c, const nfs::Fh& fh, nfs::FsStat* out) override {
    return e_->fsstat(c, fh, out);
  }

 protected:
  explicit ForwardingClient(std::unique_ptr<Engine> e) : e_(std::move(e)) {}
  std::unique_ptr<Engine> e_;
};

}  // namespace nfsshim::fuse::nfsfs
