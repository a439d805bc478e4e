// When a listing the server failed part-way starts again (engine.h, ReaddirRestarts); the
// v3 and v4.1 engines share it so that both answer churn alike.
#include <cerrno>
#include <chrono>
#include <thread>

#include "nfsshim/log.h"
#include "nfsshim/nfs/engine.h"

namespace nfsshim::nfs {

namespace {
int64_t mono_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ReaddirRestarts::ReaddirRestarts() : start_ms_(mono_ms()) {}

ReaddirRestarts::Next ReaddirRestarts::after(int* errp, uint64_t cookie,
                                             const std::function<int()>& dir_status,
                                             const char* what) {
  const int err = *errp;
  // At cookie 0 an EINVAL is about the request, not a cookie the server forgot.
  bool cookie_lost = err == -EINVAL && cookie != 0;
  bool entry_gone = err == -ESTALE || err == -ENOENT;
  if (!cookie_lost && !entry_gone) return kFail;
  const int64_t spent = mono_ms() - start_ms_;
  if (n_ >= kReaddirMinRestarts && spent >= kReaddirRestartMs) {
    SHIM_LOG_WARN("{}: the directory kept changing under the listing: {} retries in {} ms, giving up ({})",
                  what, n_, spent, err);
    if (entry_gone) *errp = -EIO;
    return kFail;
  }
  // The directory itself gone is the answer, not a reason to list it again; a GETATTR that
  // fails otherwise cannot tell (EIO, not an empty listing).
  if (entry_gone) {
    int st = dir_status();
    if (st < 0) {
      *errp = st == -ENOENT || st == -ESTALE ? st : -EIO;
      return kFail;
    }
  }
  // A server that refuses every cookie at once is not hammered for the whole budget.
  if (n_ >= kReaddirMinRestarts) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ++n_;
  const bool same = entry_gone && !(again_at_ && again_cookie_ == cookie);
  again_at_ = same;
  again_cookie_ = cookie;
  SHIM_LOG_DEBUG("{}: {} at cookie {}: the directory changed, asking again {} ({})", what, err,
                 cookie, same ? "there" : "from the start", n_);
  return same ? kSameCookie : kFromStart;
}

}  // namespace nfsshim::nfs
