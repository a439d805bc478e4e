#include "ops_table.h"

#include <cerrno>
#include <new>

#include "nfsshim/log.h"
#include "ops/ops.h"

namespace nfsshim::fuse {
namespace {

// Guard<&op>::call has op's signature and is noexcept: an exception becomes an error reply
// (ENOMEM for bad_alloc). Ops reply last, so a throw means no reply was sent yet.
template <auto F>
struct Guard;

template <typename... A, void (*F)(fuse_req_t, A...)>
struct Guard<F> {
  static void call(fuse_req_t req, A... args) noexcept {
    try {
      F(req, args...);
    } catch (const std::bad_alloc&) {
      fuse_reply_err(req, ENOMEM);
    } catch (...) {
      SHIM_LOG_ERROR("unexpected exception in a FUSE operation");
      fuse_reply_err(req, EIO);
    }
  }
};

}  // namespace

fuse_lowlevel_ops make_ops() {
  fuse_lowlevel_ops o{};
  o.init = ops::init;
  // forget never allocates and must not reply with an error: no guard.
  o.forget = ops::forget;
  o.forget_multi = ops::forget_multi;
  o.lookup = Guard<ops::lookup>::call;
  o.getattr = Guard<ops::getattr>::call;
  o.setattr = Guard<ops::setattr>::call;
  o.readlink = Guard<ops::readlink>::call;
  o.mknod = Guard<ops::mknod>::call;
  o.mkdir = Guard<ops::mkdir>::call;
  o.symlink = Guard<ops::symlink>::call;
  o.unlink = Guard<ops::unlink>::call;
  o.rmdir = Guard<ops::rmdir>::call;
  o.rename = Guard<ops::rename>::call;
  o.link = Guard<ops::link>::call;
  o.create = Guard<ops::create>::call;
  o.open = Guard<ops::open>::call;
  o.read = Guard<ops::read>::call;
  o.write_buf = Guard<ops::write_buf>::call;
  o.flush = Guard<ops::flush>::call;
  o.fsync = Guard<ops::fsync>::call;
  o.release = Guard<ops::release>::call;
  o.fallocate = Guard<ops::fallocate>::call;
#if NFSSHIM_HAVE_COPY_FILE_RANGE
  o.copy_file_range = Guard<ops::copy_file_range>::call;
#endif
#if NFSSHIM_HAVE_LSEEK
  o.lseek = Guard<ops::lseek>::call;
#endif
  o.opendir = Guard<ops::opendir>::call;
  o.readdir = Guard<ops::readdir>::call;
  o.readdirplus = Guard<ops::readdirplus>::call;
  o.releasedir = Guard<ops::releasedir>::call;
  o.fsyncdir = Guard<ops::fsyncdir>::call;
  o.statfs = Guard<ops::statfs>::call;
  o.setxattr = Guard<ops::setxattr>::call;
  o.getxattr = Guard<ops::getxattr>::call;
  o.listxattr = Guard<ops::listxattr>::call;
  o.removexattr = Guard<ops::removexattr>::call;
  return o;
}

}  // namespace nfsshim::fuse
