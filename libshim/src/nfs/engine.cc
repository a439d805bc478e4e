// Engine: mount, connection pool, scheduling and backpressure. Ops are in ops.cc.
#include "nfsshim/nfs/engine.h"

#include <netdb.h>
#include <nfsc/libnfs-raw-mount.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "internal.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs/nfs3_errno.h"

namespace nfsshim::nfs {
namespace {

std::string where(const NfsUrl& u, int port, const char* service) {
  return std::string(service) + " service at " + u.host + ":" +
         (port ? std::to_string(port) : std::string("(portmapper)"));
}

// HOST's first address, as libnfs would pick it (getaddrinfo's first answer), in numeric
// form, as the kernel client resolves the server's name once at mount.
int resolve(const std::string& host, std::string* addr, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    *why = "cannot resolve the server name '" + host + "': " + (rc ? gai_strerror(rc) : "no address");
    return -EHOSTUNREACH;
  }
  char buf[NI_MAXHOST] = {};
  rc = ::getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(res);
  if (rc != 0) {
    *why = "cannot resolve the server name '" + host + "': " + gai_strerror(rc);
    return -EHOSTUNREACH;
  }
  *addr = buf;
  return 0;
}

struct MountState {
  bool done = false;
  int status = RPC_STATUS_SUCCESS;
  std::string err;
  int mnt_status = -1;
  std::string fh;
};

}  // namespace

// "Connection refused" rather than libnfs's "Socket failed with POLLHUP".
std::string socket_error(int fd, int revents) {
  if (!(revents & (POLLERR | POLLHUP)) || fd < 0) return "";
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0) return "";
  return std::strerror(err);
}

namespace {

// Drives a private RPC context on the calling thread until *DONE (start-up only).
int drive(rpc_context* rpc, const bool* done, Clock::time_point deadline, std::string* why) {
  while (!*done) {
    if (Clock::now() > deadline) {
      *why = "timed out";
      return -ETIMEDOUT;
    }
    struct pollfd p;
    p.fd = rpc_get_fd(rpc);
    p.events = static_cast<short>(rpc_which_events(rpc));
    p.revents = 0;
    int n = ::poll(&p, 1, 100);
    if (n < 0 && errno != EINTR) return -errno;
    std::string sock_err = socket_error(p.fd, n > 0 ? p.revents : 0);
    if (rpc_service(rpc, n > 0 ? p.revents : 0) < 0 || (*done && !sock_err.empty())) {
      *why = !sock_err.empty() ? sock_err : rpc_get_error(rpc) ? rpc_get_error(rpc) : "connection failed";
      return -EIO;
    }
  }
  return 0;
}

const char* mnt_status_text(int s) {
  switch (s) {
    case MNT3ERR_PERM: return "not permitted (MNT3ERR_PERM)";
    case MNT3ERR_NOENT: return "no such export (MNT3ERR_NOENT)";
    case MNT3ERR_IO: return "I/O error (MNT3ERR_IO)";
    case MNT3ERR_ACCES: return "no such export, or not exported to this client (MNT3ERR_ACCES)";
    case MNT3ERR_NOTDIR: return "not a directory (MNT3ERR_NOTDIR)";
    case MNT3ERR_INVAL: return "invalid export path (MNT3ERR_INVAL)";
    case MNT3ERR_NAMETOOLONG: return "export path too long (MNT3ERR_NAMETOOLONG)";
    default: return "MOUNT error";
  }
}

}  // namespace

// ---- loop threads ----

LoopThread::LoopThread(std::unique_ptr<EventLoop> loop, int index) : loop_(std::move(loop)), index_(index) {}

LoopThread::~LoopThread() { stop(); }

void LoopThread::start() { thread_ = std::thread([this] { run(); }); }

void LoopThread::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  loop_->post([] {});
  thread_.join();
}

void LoopThread::run() {
  // rpc_service must see timeouts and reconnect backoffs even when nothing is ready.
  const auto tick = std::chrono::milliseconds(100);
  Clock::time_point next = Clock::now() + tick;
  while (!stop_.load()) {
    Clock::time_point now = Clock::now();
    int wait_ms = now >= next ? 0 : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) + 1;
    loop_->run_once(wait_ms);
    now = Clock::now();
    if (now >= next) {
      for (Connection* c : conns_) c->tick(now);
      next = now + tick;
    }
  }
  loop_->run_once(0);  // posted work (submissions) not yet seen
  for (Connection* c : conns_) c->shutdown();
}

// ---- engine ----

mode_t Attr::st_mode() const {
  mode_t t = 0;
  switch (type) {
    case NF3REG: t = S_IFREG; break;
    case NF3DIR: t = S_IFDIR; break;
    case NF3BLK: t = S_IFBLK; break;
    case NF3CHR: t = S_IFCHR; break;
    case NF3LNK: t = S_IFLNK; break;
    case NF3SOCK: t = S_IFSOCK; break;
    case NF3FIFO: t = S_IFIFO; break;
    default: break;
  }
  return t | (mode & 07777);
}

bool Attr::lost_exclusive_create_of(uint32_t owner) const {
  return S_ISREG(st_mode()) && size == 0 && uid == owner;
}

struct timespec Attr::now() {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

bool Attr::changed_since(const struct timespec& since) const {
  return ctime.tv_sec > since.tv_sec - 1 || (ctime.tv_sec == since.tv_sec - 1 && ctime.tv_nsec >= since.tv_nsec);
}

Cred Engine::default_cred() const {
  Cred c;
  c.uid = url_.uid >= 0 ? static_cast<uint32_t>(url_.uid) : ::geteuid();
  c.gid = url_.gid >= 0 ? static_cast<uint32_t>(url_.gid) : ::getegid();
  return c;
}

int Engine::open(const NfsUrl& url, std::unique_ptr<Engine>* out, std::string* why) {
  if (url.vers_major != 3) {
    *why = "this is the NFSv3 engine: NFSv4.1 URLs go to the NFSv4.1 session engine (nfs41::Engine)";
    return -EPROTONOSUPPORT;
  }
  std::unique_ptr<Engine> e(new Engine());
  e->url_ = url;
  int rv = resolve(url.host, &e->addr_, why);
  if (rv < 0) return rv;
  rv = e->mount(why);
  if (rv < 0) return rv;
  rv = e->start(why);
  if (rv < 0) return rv;
  *out = std::move(e);
  return 0;
}

int Engine::mount(std::string* why) {
  const NfsUrl& u = url_;
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(u.timeo_ds) * 100);
  rpc_context* rpc = rpc_init_context();
  if (!rpc) {
    *why = "out of memory";
    return -ENOMEM;
  }
  Cred c = default_cred();
  rpc_set_auth(rpc, libnfs_authunix_create("nfsshim", c.uid, c.gid, 0, nullptr));
  MountState st;
  auto connect_cb = [](rpc_context*, int status, void* data, void* priv) {
    auto* s = static_cast<MountState*>(priv);
    s->status = status;
    if (status != RPC_STATUS_SUCCESS) s->err = data ? static_cast<const char*>(data) : "cancelled";
    s->done = true;
  };
  int rv = u.mountport ? rpc_connect_port_async(rpc, addr_.c_str(), u.mountport, MOUNT_PROGRAM, MOUNT_V3,
                                                connect_cb, &st)
                       : rpc_connect_program_async(rpc, addr_.c_str(), MOUNT_PROGRAM, MOUNT_V3, connect_cb, &st);
  std::string err;
  if (rv != 0) {
    err = rpc_get_error(rpc) ? rpc_get_error(rpc) : "cannot connect";
  } else {
    rv = drive(rpc, &st.done, deadline, &err);
    if (rv == 0 && st.status != RPC_STATUS_SUCCESS) {
      rv = -ECONNREFUSED;
      err = st.err;
    }
  }
  if (rv != 0) {
    *why = "cannot reach the " + where(u, u.mountport, "MOUNT") + ": " + err;
    rpc_destroy_context(rpc);
    return rv < 0 ? rv : -EIO;
  }
  st.done = false;
  auto mnt_cb = [](rpc_context*, int status, void* data, void* priv) {
    auto* s = static_cast<MountState*>(priv);
    s->status = status;
    if (status == RPC_STATUS_SUCCESS) {
      auto* res = static_cast<mountres3*>(data);
      s->mnt_status = res->fhs_status;
      if (res->fhs_status == MNT3_OK)
        s->fh.assign(res->mountres3_u.mountinfo.fhandle.fhandle3_val,
                     res->mountres3_u.mountinfo.fhandle.fhandle3_len);
    } else {
      s->err = data ? static_cast<const char*>(data) : "cancelled";
    }
    s->done = true;
  };
  rv = rpc_mount3_mnt_async(rpc, mnt_cb, const_cast<char*>(u.export_path.c_str()), &st);
  if (rv != 0) {
    err = rpc_get_error(rpc) ? rpc_get_error(rpc) : "cannot send MOUNT";
  } else {
    rv = drive(rpc, &st.done, deadline, &err);
    if (rv == 0 && st.status != RPC_STATUS_SUCCESS) {
      rv = -EIO;
      err = st.err;
    }
  }
  rpc_destroy_context(rpc);
  if (rv != 0) {
    *why = "MOUNT of '" + u.export_path + "' on " + u.host + " failed: " + err;
    return rv < 0 ? rv : -EIO;
  }
  if (st.mnt_status != MNT3_OK) {
    *why = "export '" + u.export_path + "' on " + u.host + ": " + mnt_status_text(st.mnt_status);
    return st.mnt_status == MNT3ERR_NOENT ? -ENOENT : st.mnt_status == MNT3ERR_ACCES ? -EACCES : -EIO;
  }
  root_.data = st.fh;
  return 0;
}

int Engine::start(std::string* why) {
  const NfsUrl& u = url_;
  slots_ = u.slots;
  max_bytes_ = static_cast<size_t>(u.max_inflight_mb) << 20;
  const int nloops = loop_threads_for(u.nconnect);  // libnfs decodes into its buffers: a copy
  for (int i = 0; i < nloops; ++i) {
    std::unique_ptr<EventLoop> loop;
    int rv = EventLoop::create(u.io, &loop, why);
    if (rv < 0) return rv;
    backend_ = loop->backend();
    loops_.emplace_back(new LoopThread(std::move(loop), i));
  }
  for (int i = 0; i < u.nconnect; ++i) {
    LoopThread* lt = loops_[static_cast<size_t>(i % nloops)].get();
    conns_.emplace_back(new Connection(this, lt, i));
    lt->add(conns_.back().get());
  }
  for (auto& lt : loops_) lt->start();
  for (auto& c : conns_) {
    Connection* cp = c.get();
    // Connections are started on their loop thread: libnfs contexts stay on one thread.
    loops_[static_cast<size_t>(cp->index() % nloops)]->loop().post([cp] { cp->start(); });
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(u.timeo_ds) * 100);
  for (;;) {
    bool all_up = true;
    for (auto& c : conns_) {
      if (c->connect_failures.load() > 0) {
        *why = "cannot connect to the " + where(u, u.nfsport, "NFS") + ": " + c->last_error();
        stopping_.store(true);
        return -ECONNREFUSED;
      }
      all_up = all_up && c->up.load();
    }
    if (all_up) break;
    if (Clock::now() > deadline) {
      *why = "cannot connect to the " + where(u, u.nfsport, "NFS") + ": timed out";
      stopping_.store(true);
      return -ETIMEDOUT;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // FSINFO: the server's transfer limits cap rsize/wsize.
  Cred cred = default_cred();
  uint32_t rtmax = 0, wtmax = 0;
  Fh root = root_;
  int rv = run(cred, "FSINFO", 0, true,
               [&root](rpc_context* rpc, RpcCb cb, void* priv) {
                 FSINFO3args a;
                 std::memset(&a, 0, sizeof a);
                 a.fsroot = to_nfs_fh3(root);
                 return rpc_nfs3_fsinfo_async(rpc, cb, &a, priv);
               },
               [&](void* res) {
                 auto* r = static_cast<FSINFO3res*>(res);
                 if (r->status != NFS3_OK) return nfs3_errno(r->status);
                 rtmax = r->FSINFO3res_u.resok.rtmax;
                 wtmax = r->FSINFO3res_u.resok.wtmax;
                 return 0;
               });
  if (rv < 0) {
    *why = std::string("FSINFO on the export root failed: ") + std::strerror(-rv);
    stopping_.store(true);
    return rv;
  }
  auto cap = [](uint32_t want, uint32_t server) {
    uint32_t v = server ? std::min(want, server) : want;
    return std::max<uint32_t>(4096, v & ~4095u);
  };
  rsize_ = cap(u.rsize, rtmax);
  wsize_ = cap(u.wsize, wtmax);
  SHIM_LOG_INFO("nfs engine: {} mounted, {} connections on {} {} loops, rsize {} wsize {}", to_string(u),
                u.nconnect, loops_.size(), io_backend_name(backend_), rsize_, wsize_);
  return 0;
}

Engine::~Engine() {
  stopping_.store(true);
  for (auto& lt : loops_) lt->stop();
}

EngineStats Engine::stats() const {
  EngineStats s;
  s.calls = calls_.load();
  s.retries = retries_.load();
  s.timeouts = timeouts_.load();
  s.jukebox = jukebox_.load();
  s.resent_done = resent_done_.load();
  s.resent_exist = resent_exist_.load();
  s.resent_stale = resent_stale_.load();
  for (auto& c : conns_) {
    s.calls_per_conn.push_back(c->calls.load());
    s.reconnects += c->reconnects.load();
  }
  {
    std::lock_guard<std::mutex> g(const_cast<std::mutex&>(mu_));
    s.peak_conn_load = peak_conn_load_;
    s.peak_inflight_bytes = peak_inflight_bytes_;
  }
  for (auto& lt : loops_) {
    LoopStats ls = lt->loop().stats();
    s.loop_syscalls += ls.syscalls;
    s.loop_iterations += ls.iterations;
  }
  return s;
}

// Least-loaded connection that is up; ties go round-robin (the scan starts one further each
// time), so an idle pool still spreads requests over every connection and loop thread.
Connection* Engine::pick_locked() {
  const size_t n = conns_.size();
  const size_t start = rr_++ % n;
  Connection* best = nullptr;
  for (size_t k = 0; k < n; ++k) {
    Connection* c = conns_[(start + k) % n].get();
    if (c->up.load() && (!best || c->load < best->load)) best = c;
  }
  if (best) return best;
  for (size_t k = 0; k < n; ++k) {  // none up: queue where it will go out first after a reconnect
    Connection* c = conns_[(start + k) % n].get();
    if (!best || c->load < best->load) best = c;
  }
  return best;
}

void Engine::submit(Call* call) {
  call->submitted = Clock::now();
  Connection* to;
  {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      to = pick_locked();
      bool slot = to->load < slots_;
      bool bytes = inflight_bytes_ == 0 || inflight_bytes_ + call->bytes <= max_bytes_;
      if (slot && bytes) break;
      cv_.wait(lk);
    }
    ++to->load;
    inflight_bytes_ += call->bytes;
    peak_conn_load_ = std::max(peak_conn_load_, to->load);
    peak_inflight_bytes_ = std::max(peak_inflight_bytes_, inflight_bytes_);
    call->conn = to;
  }
  to->enqueue(call);
}

void Engine::finish(Call* call, int err, void* res) {
  {
    std::lock_guard<std::mutex> g(mu_);
    --call->conn->load;
    inflight_bytes_ -= call->bytes;
  }
  cv_.notify_all();
  calls_.fetch_add(1, std::memory_order_relaxed);
  call->done(err, res);  // the caller may free CALL from here on
}

void Engine::resend(Call* call, Connection* from, const char* why) {
  if (stopping_.load()) {
    finish(call, -ESHUTDOWN, nullptr);
    return;
  }
  retries_.fetch_add(1, std::memory_order_relaxed);
  if (!url_.hard) {
    auto limit = std::chrono::milliseconds(static_cast<int64_t>(url_.timeo_ds) * 100 * (url_.retrans + 1));
    if (Clock::now() - call->submitted > limit) {
      SHIM_LOG_ERROR("server {} not responding: {} failed after {} tries ({}; soft mount, EIO)", url_.host,
                     call->what, call->attempts, why);
      finish(call, -EIO, nullptr);
      return;
    }
  }
  Connection* to;
  {
    std::lock_guard<std::mutex> g(mu_);
    --from->load;
    to = pick_locked();
    ++to->load;  // re-sends skip the slot limit: a loop thread must never block
    call->conn = to;
  }
  SHIM_LOG_DEBUG("[conn {}] re-sending {} on conn {} ({})", from->index(), call->what, to->index(), why);
  to->enqueue(call);
}

int Engine::run(const Cred& c, const char* what, size_t bytes, bool idempotent,
                const std::function<int(rpc_context*, RpcCb, void*)>& issue,
                const std::function<int(void*)>& on_reply, bool* resent) {
  Jukebox jb;
  bool again = false;  // some round was sent more than once: its first send may have run
  for (;;) {
    int rv = run_once(c, what, bytes, idempotent, issue, on_reply, &again);
    if (rv != -EAGAIN) {
      if (resent) *resent = again;
      return rv;
    }
    if (!jukebox_wait(what, &jb)) return -EIO;
  }
}

bool Engine::jukebox_wait(const char* what, Jukebox* jb) {
  // Nothing was done; ask again later (the kernel waits 5 s each time; we start at 50 ms
  // and double up to 2 s: a broker stalls less).
  if (jukebox_.fetch_add(1) == 0)
    SHIM_LOG_INFO("server {} answered {} with NFS3ERR_JUKEBOX (busy with the file): waiting and asking "
                  "again (logged once; the count is in the engine's stats)", url_.host, what);
  const auto soft_limit = std::chrono::milliseconds(int64_t{url_.timeo_ds} * 100 * (url_.retrans + 1));
  if (!url_.hard && Clock::now() - jb->since >= soft_limit) {
    SHIM_LOG_ERROR("server {}: {} still NFS3ERR_JUKEBOX after {} ms (soft mount, EIO)", url_.host, what,
                   std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - jb->since).count());
    return false;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(jb->pause_ms));
  jb->pause_ms = std::min(jb->pause_ms * 2, 2000);
  return true;
}

int Engine::run_once(const Cred& c, const char* what, size_t bytes, bool idempotent,
                     const std::function<int(rpc_context*, RpcCb, void*)>& issue,
                     const std::function<int(void*)>& on_reply, bool* resent) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  int result = 0;
  Call call;
  call.cred = c;
  call.what = what;
  call.bytes = bytes;
  call.idempotent = idempotent;
  call.issue = issue;
  call.done = [&](int err, void* res) {
    int rv = err ? err : on_reply(res);
    if (call.attempts > 1) *resent = true;  // read by the waiter after the notify below
    std::lock_guard<std::mutex> g(m);  // notify under the lock: the waiter owns m, cv
    result = rv;
    done = true;
    cv.notify_one();
  };
  // send_next_twice_for_test: a twin of the call goes first, its reply dropped.
  Call twin;
  bool twin_done = true;
  if (!idempotent && twice_next_.load(std::memory_order_relaxed) && twice_next_.exchange(false)) {
    twin.cred = c;
    twin.what = what;
    twin.idempotent = false;
    twin.issue = issue;
    twin.done = [&](int, void*) {
      std::lock_guard<std::mutex> g(m);
      twin_done = true;
      cv.notify_one();
    };
    twin_done = false;
    *resent = true;
    submit(&twin);
  }
  if (resent_next_.load(std::memory_order_relaxed) && resent_next_.exchange(false)) *resent = true;
  submit(&call);
  std::unique_lock<std::mutex> lk(m);
  cv.wait(lk, [&] { return done && twin_done; });
  return result;
}

}  // namespace nfsshim::nfs
