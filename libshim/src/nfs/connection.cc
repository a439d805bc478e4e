// One libnfs context = one TCP connection, driven by its loop thread only (libnfs 4.0 has no
// locking). Calls arrive through a locked inbox (any thread) and wait in pending_ until the
// connection is up; on loss every call in flight is re-sent through the engine.
#include <poll.h>

#include <cstring>

#include "internal.h"
#include "nfsshim/log.h"

namespace nfsshim::nfs {

Connection::Connection(Engine* e, LoopThread* lt, int index) : e_(e), lt_(lt), index_(index) {}

Connection::~Connection() {
  if (rpc_) rpc_destroy_context(rpc_);
}

std::string Connection::last_error() {
  std::lock_guard<std::mutex> g(err_mu_);
  return last_error_;
}

void Connection::set_error(const std::string& e) {
  std::lock_guard<std::mutex> g(err_mu_);
  last_error_ = e;
}

void Connection::enqueue(Call* call) {
  bool kick = false;
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    inbox_.push_back(call);
    if (!kicked_) kick = kicked_ = true;
  }
  if (kick) lt_->loop().post([this] { drain_inbox(); });
}

void Connection::drain_inbox() {
  std::vector<Call*> batch;
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    batch.swap(inbox_);
    kicked_ = false;
  }
  for (Call* c : batch) pending_.push_back(c);
  issue_pending();
}

void Connection::start() { connect(); }

void Connection::connect() {
  const NfsUrl& u = e_->url_;
  rpc_ = rpc_init_context();
  if (!rpc_) {
    set_error("out of memory creating an RPC context");
    retry_at_ = Clock::now() + std::chrono::milliseconds(500);
    return;
  }
  // Distinct XID ranges per connection: the server's reply cache keys on them.
  rpc_set_next_xid(rpc_, (static_cast<uint32_t>(index_ + 1) << 26) ^
                             static_cast<uint32_t>(Clock::now().time_since_epoch().count()));
  auth_set_ = false;
  connect_failed_ = false;
  const char* addr = e_->addr_.c_str();  // resolved at open: no DNS on the loop thread
  int rv = u.nfsport ? rpc_connect_port_async(rpc_, addr, u.nfsport, NFS_PROGRAM, NFS_V3, &Connection::connect_cb, this)
                     : rpc_connect_program_async(rpc_, addr, NFS_PROGRAM, NFS_V3, &Connection::connect_cb, this);
  if (rv != 0) {
    std::string err = rpc_get_error(rpc_) ? rpc_get_error(rpc_) : "connect failed";
    set_error(err);
    connect_failures.fetch_add(1);
    rpc_destroy_context(rpc_);
    rpc_ = nullptr;
    backoff_ms_ = std::min(std::max(backoff_ms_ * 2, 50), 2000);
    retry_at_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
    return;
  }
  state_ = State::kConnecting;
  connect_started_ = Clock::now();
  rearm();
}

void Connection::connect_cb(rpc_context* rpc, int status, void* data, void* priv) {
  (void)rpc;
  auto* self = static_cast<Connection*>(priv);
  if (status == RPC_STATUS_SUCCESS) {
    self->state_ = State::kUp;
    self->up.store(true);
    self->backoff_ms_ = 0;
    self->complained_ = false;
    if (self->ever_up_) {
      // Before the calls waiting for this connection go out: their replies may come from a
      // restarted server (Engine::restart_generation).
      self->e_->restart_gen_.fetch_add(1);
      self->reconnects.fetch_add(1);
      SHIM_LOG_WARN("[conn {}] reconnected to {}", self->index_, self->e_->url_.host);
    }
    self->ever_up_ = true;
    return;  // pending calls go out after rpc_service returns (on_fd_ready)
  }
  const char* msg = data ? static_cast<const char*>(data) : "connection cancelled";
  self->set_error(msg);
  self->connect_failures.fetch_add(1);
  self->connect_failed_ = true;
}

void Connection::reply_cb(rpc_context* rpc, int status, void* data, void* priv) {
  (void)rpc;
  auto* t = static_cast<Ticket*>(priv);
  if (t->magic != Ticket::kMagic) {
    SHIM_LOG_ERROR("nfs engine: reply with a bad ticket (magic {:#x}); dropped", t->magic);
    return;
  }
  if (t->orphaned) {  // already re-sent when its connection was torn down
    t->magic = 0;
    delete t;
    return;
  }
  Connection* self = t->conn;
  Call* c = t->call;
  self->inflight_.erase(t);
  t->magic = 0;
  delete t;
  if (c->magic != Call::kMagic) {
    SHIM_LOG_ERROR("[conn {}] reply for a call with bad magic; dropped", self->index_);
    return;
  }
  if (status == RPC_STATUS_SUCCESS) {
    self->calls.fetch_add(1, std::memory_order_relaxed);
    self->e_->finish(c, 0, data);
    return;
  }
  std::string why = status == RPC_STATUS_TIMEOUT ? "timeout"
                    : status == RPC_STATUS_CANCEL ? "cancelled"
                    : data ? static_cast<const char*>(data) : "RPC error";
  self->failed_.emplace_back(c, why);
}

void Connection::settle_failures(bool conn_broken) {
  std::vector<std::pair<Call*, std::string>> failed;
  failed.swap(failed_);
  for (auto& f : failed) {
    if (conn_broken) {
      e_->resend(f.first, this, f.second.c_str());
    } else {
      // The connection is fine: the server refused this call (garbage args, auth, ...).
      SHIM_LOG_ERROR("[conn {}] {} failed: {}", index_, f.first->what, f.second);
      e_->finish(f.first, -EIO, nullptr);
    }
  }
}

void Connection::issue_pending() {
  if (state_ != State::kUp || pending_.empty()) return;
  Clock::time_point now = Clock::now();
  while (!pending_.empty()) {
    Call* c = pending_.front();
    pending_.pop_front();
    if (!auth_set_ || c->cred != auth_cred_) {
      // AUTH_SYS is encoded into each PDU when it is queued, so switching per call is safe.
      uint32_t ngroups = static_cast<uint32_t>(std::min<size_t>(c->cred.groups.size(), 16));
      struct AUTH* a = libnfs_authunix_create("nfsshim", c->cred.uid, c->cred.gid, ngroups,
                                              const_cast<uint32_t*>(c->cred.groups.data()));
      if (a) {
        rpc_set_auth(rpc_, a);
        auth_cred_ = c->cred;
        auth_set_ = true;
      }
    }
    auto* t = new Ticket{Ticket::kMagic, c, this, now, false};
    ++c->attempts;
    if (c->issue(rpc_, &Connection::reply_cb, t) != 0) {
      const char* err = rpc_get_error(rpc_);
      SHIM_LOG_ERROR("[conn {}] cannot queue {}: {}", index_, c->what, err ? err : "?");
      delete t;
      e_->finish(c, -EIO, nullptr);
      continue;
    }
    inflight_.insert(t);
  }
  // Write now rather than after a POLLOUT round trip through the loop.
  if (rpc_service(rpc_, POLLOUT) < 0) {
    fail(rpc_get_error(rpc_) ? rpc_get_error(rpc_) : "write failed");
    return;
  }
  settle_failures(false);
  rearm();
}

void Connection::rearm() {
  if (!rpc_) return;
  int fd = rpc_get_fd(rpc_);
  // While connecting libnfs may replace the socket under the same number: register anew.
  if (fd_ >= 0 && (fd != fd_ || state_ != State::kUp)) {
    lt_->loop().forget(fd_);
    fd_ = -1;
  }
  if (fd < 0) return;
  fd_ = fd;
  lt_->loop().arm(fd_, static_cast<uint32_t>(rpc_which_events(rpc_)), this);
}

void Connection::on_fd_ready(int fd, uint32_t revents) {
  if (!rpc_) return;
  std::string sock_err = state_ == State::kConnecting ? socket_error(fd, static_cast<int>(revents)) : "";
  int rv = rpc_service(rpc_, static_cast<int>(revents));
  if (rv < 0 || connect_failed_) {
    if (!sock_err.empty()) set_error(sock_err);
    const char* err = rpc_get_error(rpc_);
    std::string why = !sock_err.empty() ? sock_err : rv < 0 && err && *err ? err : last_error();
    if (why.empty()) {  // libnfs gave no text (a reset seen as a failed read)
      why = revents & (POLLHUP | POLLERR) ? "connection closed by the server" : "socket error";
    }
    fail(why);
    return;
  }
  settle_failures(false);
  if (state_ == State::kUp && !pending_.empty()) {
    issue_pending();  // re-arms
    return;
  }
  rearm();
}

void Connection::fail(const std::string& why) {
  if (!rpc_) return;
  bool was_up = state_ == State::kUp;
  state_ = State::kDown;
  up.store(false);
  set_error(why);
  if (was_up)
    SHIM_LOG_WARN("[conn {}] connection to {} lost: {}; re-sending {} requests", index_,
                  e_->url_.host, why, inflight_.size() + failed_.size());
  if (fd_ >= 0) {
    lt_->loop().forget(fd_);
    fd_ = -1;
  }
  rpc_context* rpc = rpc_;
  rpc_ = nullptr;
  rpc_disconnect(rpc, why.c_str());  // calls back every call in flight (RPC_STATUS_ERROR)
  settle_failures(true);
  for (Ticket* t : inflight_) {       // anything libnfs did not call back
    t->orphaned = true;
    e_->resend(t->call, this, why.c_str());
  }
  inflight_.clear();
  rpc_destroy_context(rpc);
  failed_.clear();  // late callbacks from destroy are orphans: nothing to do
  if (!was_up) {
    backoff_ms_ = std::min(std::max(backoff_ms_ * 2, 50), 2000);
  } else {
    backoff_ms_ = 0;
    down_since_ = Clock::now();
  }
  retry_at_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
}

void Connection::tick(Clock::time_point now) {
  const NfsUrl& u = e_->url_;
  auto timeo = std::chrono::milliseconds(static_cast<int64_t>(u.timeo_ds) * 100);
  if (e_->stopping_.load()) return;
  if (state_ == State::kDown && !rpc_ && now >= retry_at_) connect();
  if (state_ == State::kConnecting && now - connect_started_ > timeo) {
    fail("connect timed out");
    return;
  }
  if (state_ == State::kUp) {
    for (Ticket* t : inflight_) {
      if (now - t->sent_at > timeo) {
        e_->timeouts_.fetch_add(1);
        SHIM_LOG_WARN("[conn {}] {} got no reply in {} ms: reconnecting", index_, t->call->what,
                      u.timeo_ds * 100);
        fail("request timed out");
        return;
      }
    }
  }
  if (state_ != State::kUp && !pending_.empty()) {
    if (!u.hard) {
      // Soft mount: calls waiting for a connection give up after timeo * (retrans + 1).
      auto limit = timeo * (u.retrans + 1);
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (now - (*it)->submitted > limit) {
          Call* c = *it;
          it = pending_.erase(it);
          SHIM_LOG_ERROR("[conn {}] server {} not responding: {} failed (soft mount, EIO)", index_,
                         u.host, c->what);
          e_->finish(c, -EIO, nullptr);
        } else {
          ++it;
        }
      }
    } else if (!complained_ && now - down_since_ > std::chrono::seconds(5)) {
      complained_ = true;
      SHIM_LOG_ERROR("[conn {}] server {} not responding ({}), still trying (hard mount)", index_,
                     u.host, last_error());
    }
  }
}

void Connection::shutdown() {
  drain_inbox();
  if (rpc_) {
    if (fd_ >= 0) lt_->loop().forget(fd_);
    fd_ = -1;
    rpc_context* rpc = rpc_;
    rpc_ = nullptr;
    state_ = State::kDown;
    up.store(false);
    rpc_disconnect(rpc, "engine shutting down");
    settle_failures(true);  // resend() fails them with -ESHUTDOWN while stopping
    for (Ticket* t : inflight_) {
      t->orphaned = true;
      e_->finish(t->call, -ESHUTDOWN, nullptr);
    }
    inflight_.clear();
    rpc_destroy_context(rpc);
  }
  for (Call* c : pending_) e_->finish(c, -ESHUTDOWN, nullptr);
  pending_.clear();
}

}  // namespace nfsshim::nfs
