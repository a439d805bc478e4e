#include "nfsshim/nfs41/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "nfsshim/log.h"

namespace nfsshim::nfs41 {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ReadSink::detach() {
  Conn* conn;
  {
    std::lock_guard<std::mutex> g(mu);
    dst = nullptr;
    if (!receiving) return;
    conn = receiver;
  }
  // To the loop thread, outside MU (the loop's queue lock is not taken under it).
  std::weak_ptr<ReadSink> w = weak_from_this();
  conn->loop_->post([conn, w] {
    if (auto s = w.lock()) conn->stop_ring_recv(s);
  });
  std::unique_lock<std::mutex> g(mu);
  receiving_done.wait(g, [&] { return !receiving; });
}

void Call::complete(int e, rpc::Record r) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (done_) return;
    err = e;
    reply = std::move(r);
    done_ = true;
  }
  // After the unlock: a waiter woken under the lock would only block on it again. The
  // caller of complete() holds a reference, so the Call outlives this.
  cv_.notify_all();
}

CallPtr Call::again() const {
  auto c = std::make_shared<Call>();
  c->xid = xid;
  c->wire = wire;
  c->tail = tail;
  c->sink = sink;
  return c;
}

int Call::wait(int timeout_ms) {
  std::unique_lock<std::mutex> g(mu_);
  if (!cv_.wait_for(g, std::chrono::milliseconds(timeout_ms), [&] { return done_; }))
    return -ETIMEDOUT;
  return 0;
}

Conn::Conn(int index, std::string addr, int port, Hooks hooks)
    : index_(index), addr_(std::move(addr)), port_(port), hooks_(std::move(hooks)) {}

Conn::~Conn() { stop(); }

nfs::IoBackend Conn::backend() const { return loop_ ? loop_->backend() : nfs::IoBackend::kAuto; }

nfs::LoopStats Conn::loop_stats() const { return loop_ ? loop_->stats() : nfs::LoopStats{}; }

int Conn::begin_connect(bool* done, std::string* why) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port_));
  if (inet_pton(AF_INET, addr_.c_str(), &sa.sin_addr) != 1) {
    *why = "not an IPv4 address: '" + addr_ + "'";
    return -EINVAL;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int e = errno;
    *why = std::string("socket: ") + std::strerror(e);
    return -e;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *done = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  if (*done || errno == EINPROGRESS || errno == EINTR) return fd;  // EINTR: it goes on
  return end_connect(fd, errno, why);
}

// The outcome of a non-blocking connect() once the socket is writable: 0 or its errno.
static int socket_error(int fd) {
  int e = 0;
  socklen_t len = sizeof e;
  return getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 ? errno : e;
}

int Conn::end_connect(int fd, int err, std::string* why) {
  if (err != 0) {
    ::close(fd);
    *why = "connect " + addr_ + ":" + std::to_string(port_) + ": " + std::strerror(err);
    return -err;
  }
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0)
    local_port_.store(ntohs(local.sin_port));
  return fd;
}

// The first connect, on the opener's thread: bounded by poll, signals do not cut it short.
int Conn::connect_socket(std::string* why) {
  bool done = false;
  int fd = begin_connect(&done, why);
  if (fd < 0) return fd;
  if (done) return end_connect(fd, 0, why);
  int64_t deadline = now_ms() + kConnectTimeoutMs;
  pollfd p{fd, POLLOUT, 0};
  int n;
  do {
    n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, deadline - now_ms())));
  } while (n < 0 && errno == EINTR);
  int e = n == 0 ? ETIMEDOUT : n < 0 ? errno : socket_error(fd);
  return end_connect(fd, e, why);
}

int ConnLoop::create(nfs::IoBackend io, std::string* why) {
  return nfs::EventLoop::create(io, &loop_, why);
}

void ConnLoop::start() { thread_ = std::thread([this] { thread_main(); }); }

void ConnLoop::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  loop_->post([] {});
  thread_.join();
}

void ConnLoop::thread_main() {
  for (Conn* c : conns_) c->rearm();
  while (!stopping_.load()) {
    bool down = std::any_of(conns_.begin(), conns_.end(), [](Conn* c) {
      return c->state_ == Conn::State::kDown || c->state_ == Conn::State::kConnecting;
    });
    loop_->run_once(down ? 20 : 200);
    for (Conn* c : conns_) {
      if (stopping_.load()) break;
      c->tick();
    }
  }
}

int Conn::start(nfs::IoBackend io, std::string* why) {
  own_ = std::make_unique<ConnLoop>();
  if (int rv = own_->create(io, why); rv < 0) return rv;
  if (int rv = attach(own_.get(), why); rv < 0) return rv;
  own_->start();
  return 0;
}

int Conn::attach(ConnLoop* l, std::string* why) {
  lt_ = l;
  loop_ = &l->loop();
  int fd = connect_socket(why);
  if (fd < 0) return fd;
  fd_ = fd;
  state_ = State::kUp;  // the first socket needs no bind: the session is made on it
  up_.store(true);
  l->conns_.push_back(this);
  return 0;
}

void Conn::stop() {
  if (!lt_) return;
  lt_->stop();
  if (fd_ >= 0) {
    loop_->forget(fd_);
    end_ring_recv();
    ::close(fd_);
    fd_ = -1;
  }
  for (auto& kv : pending_) kv.second->complete(-ESHUTDOWN, {});
  pending_.clear();
  sinks_pending_ = 0;
  in_ = {};
  for (auto& c : held_) c->complete(-ESHUTDOWN, {});
  held_.clear();
  up_.store(false);
}

void Conn::tick() {
  if (state_ == State::kDown && now_ms() >= reconnect_at_ms_) try_reconnect();
  else if (state_ == State::kConnecting && now_ms() >= connect_deadline_ms_) reconnect_failed();
}

void Conn::submit(const CallPtr& c) {
  inflight_.fetch_add(1);
  loop_->post([this, c] {
    if (state_ == State::kUp) {
      enqueue_locked_loop(c);
      flush();
      if (fd_ >= 0 && drop_next_.exchange(false)) {
        // Written, reply never read: the call is surely in flight when the socket dies.
        ::shutdown(fd_, SHUT_RDWR);
        lose("dropped by the test hook");
      }
    } else {
      held_.push_back(c);
    }
  });
}

void Conn::rebind() {
  loop_->post([this] {
    if (state_ == State::kUp) start_bind();
    // A bind in flight (a reconnect's) may be for the session this one replaces: bind
    // again once it is answered.
    else if (state_ == State::kBinding) rebind_after_ = true;
  });
}

void Conn::drop_for_test(bool on_next_call) {
  if (on_next_call) {
    drop_next_.store(true);
    return;
  }
  loop_->post([this] {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  });
}

void Conn::enqueue_locked_loop(const CallPtr& c) {
  pending_[c->xid] = c;
  if (c->sink) {
    ++sinks_pending_;
    sink_head_ = c->sink->head;
    std::lock_guard<std::mutex> g(c->sink->mu);
    c->sink->placed = 0;  // a re-sent call's earlier reply placed nothing that counts now
  }
  outq_.push_back(c);  // the Call keeps its bytes (and its tail's owner) until the reply: no copy
  calls_.fetch_add(1);
}

void Conn::start_bind() {
  CallPtr b = hooks_.make_bind ? hooks_.make_bind() : nullptr;
  if (!b) {
    state_ = State::kUp;
    up_.store(true);
    return;
  }
  state_ = State::kBinding;
  up_.store(false);
  bind_call_ = b;
  outq_.push_back(b);
  flush();
}

void Conn::flush() {
  static const uint8_t kZeros[4] = {};
  while (fd_ >= 0 && !outq_.empty()) {
    // The unsent rest of the front call: its wire bytes, then its tail and the tail's pad.
    const Call& c = *outq_.front();
    iovec iov[3];
    size_t niov = 0, skip = out_off_;
    auto add = [&](const uint8_t* p, size_t len) {
      if (skip >= len) {
        skip -= len;
        return;
      }
      iov[niov++] = iovec{const_cast<uint8_t*>(p) + skip, len - skip};
      skip = 0;
    };
    add(c.wire.data(), c.wire.size());
    add(c.tail.data, c.tail.len);
    add(kZeros, c.tail.pad);
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = niov;
    ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      lose(std::strerror(errno));
      return;
    }
    out_off_ += static_cast<size_t>(n);
    if (out_off_ == c.size()) {
      outq_.pop_front();
      out_off_ = 0;
    }
  }
  rearm();
}

void Conn::rearm() {
  if (fd_ < 0) return;
  // While an io_uring recv takes the socket's input (and reports its errors), a poll is
  // needed only for output.
  uint32_t want = state_ == State::kConnecting
                      ? POLLOUT
                      : (recv_sink_ ? 0 : POLLIN) | (outq_.empty() ? 0 : POLLOUT);
  if (want == 0 || want == armed_) return;
  if (loop_->arm(fd_, want, this) == 0) armed_ = want;
}

void Conn::on_fd_ready(int fd, uint32_t revents) {
  if (fd != fd_) return;  // a socket closed since
  armed_ = 0;
  if (state_ == State::kConnecting) {
    connect_ready(revents);
    rearm();
    return;
  }
  if (revents & POLLOUT) flush();
  if (fd_ >= 0 && !recv_sink_ && (revents & (POLLIN | POLLERR | POLLHUP))) read_ready();
  rearm();
}

void Conn::read_ready() {
  // One recvmsg() fills two pieces: first the rest of the current fragment, straight
  // into its record (a READ reply's data: no user-space copy, as libnfs does) or, once a
  // READ reply's head has shown where its data lies, straight into the caller's buffer
  // (no copy at all); then BUF with whatever follows (record marks, small replies, the
  // start of the next big one), which feed() copies into its records. BUF is small so
  // little of a big reply goes that way; while READs with a sink are pending, a new reply
  // is read up to the end of a READ head first, so that its data can go to the sink.
  // With io_uring the kernel receives all of a sink's data itself (start_ring_recv).
  static thread_local std::vector<uint8_t> buf(64 * 1024);
  if (recv_sink_) return;  // (the recv's completion reads on)
  for (;;) {
    iovec iov[2];
    int niov = 0;
    size_t first = 0;  // bytes the first iovec takes (sink or record)
    bool to_sink = false;
    std::shared_ptr<ReadSink> sink;  // outlives the lock on its mutex
    std::unique_lock<std::mutex> sink_lock;
    if (in_.call) {
      sink = in_.call->sink;
      sink_lock = std::unique_lock<std::mutex>(sink->mu);
      if (sink->dst) {
        if (start_ring_recv(sink)) return;
        to_sink = true;
        first = in_.left;
        iov[niov++] = iovec{in_.at, in_.left};
      } else {
        sink_lock.unlock();
        in_ = {};  // the caller gave up: the rest goes into the record
      }
    }
    size_t buf_len = buf.size();
    if (!to_sink) {
      rpc::RecordFramer::Span direct = framer_.payload_span();
      if (direct.len > 0) {
        first = direct.len;
        iov[niov++] = iovec{direct.data, direct.len};
      } else if (sinks_pending_ > 0 && framer_.at_record_start()) {
        buf_len = framer_.mark_bytes_due() + sink_head_;
      }
    }
    iov[niov++] = iovec{buf.data(), buf_len};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<size_t>(niov);
    ssize_t n = ::recvmsg(fd_, &mh, MSG_DONTWAIT);
    int err = n < 0 ? errno : 0;
    if (n <= 0 && sink_lock.owns_lock()) sink_lock.unlock();
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) break;
    if (n <= 0) {
      lose(n == 0 ? "server closed the connection" : std::strerror(err));
      return;
    }
    size_t got = static_cast<size_t>(n);
    size_t in_first = std::min(got, first);
    int rc = 0;
    if (to_sink) {
      rc = framer_.payload_elsewhere(in_first);
      in_.at += in_first;
      in_.left -= in_first;
      if (in_.left == 0) sink_filled(*sink);
      sink_lock.unlock();
    } else {
      rc = framer_.payload_written(in_first);
    }
    if (rc < 0 || (got > in_first && framer_.feed(buf.data(), got - in_first) < 0)) {
      lose("bad record marking");
      return;
    }
    after_input();
    if (fd_ < 0) return;
    if (got < first + buf_len) break;  // drained; a full read may have more behind it
  }
}

void Conn::after_input() {
  rpc::Record rec;
  while (fd_ >= 0 && framer_.next(&rec)) dispatch(std::move(rec));
  if (fd_ >= 0 && sinks_pending_ > 0 && !in_.call) try_sink();
}

// io_uring: one RECV (MSG_WAITALL) for all of in_'s data still due, straight into the
// sink; its completion (on_recv_done) goes on reading. Replaces a readiness event and a
// recvmsg() for each part of a 1 MiB reply that arrives (about three each on loopback).
// False where the loop cannot (epoll): the caller reads as before.
bool Conn::start_ring_recv(const std::shared_ptr<ReadSink>& s) {
  if (loop_->recv(fd_, in_.at, in_.left, this) != 0) return false;
  s->receiving = true;
  s->receiver = this;
  recv_sink_ = s;
  ring_recvs_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Conn::on_recv_done(int fd, ssize_t res) {
  if (fd != fd_ || !recv_sink_) return;
  ring_recv_done(res > 0 ? static_cast<size_t>(res) : 0);
  if (fd_ < 0) return;
  if (res <= 0) {
    lose(res == 0 ? "server closed the connection" : std::strerror(static_cast<int>(-res)));
    return;
  }
  read_ready();
  rearm();
}

// The sink's caller gives up (ReadSink::detach waits for this): the recv is cancelled,
// what it got counts, the rest of the reply goes into the record.
void Conn::stop_ring_recv(const std::shared_ptr<ReadSink>& s) {
  if (recv_sink_ != s || fd_ < 0) return;  // it ended meanwhile
  ring_recv_done(loop_->cancel_recv(fd_));
  if (fd_ < 0) return;
  read_ready();
  rearm();
}

// The recv is over with GOT bytes in the sink.
void Conn::ring_recv_done(size_t got) {
  std::shared_ptr<ReadSink> s = std::move(recv_sink_);
  recv_sink_.reset();
  got = std::min(got, in_.left);
  int rc;
  {
    std::lock_guard<std::mutex> g(s->mu);
    rc = framer_.payload_elsewhere(got);
    in_.at += got;
    in_.left -= got;
    if (in_.left == 0) sink_filled(*s);
    s->receiving = false;
    s->receiver = nullptr;
  }
  s->receiving_done.notify_all();
  if (rc < 0) {
    lose("bad record marking");
    return;
  }
  after_input();
}

// The socket was forgotten (its recv cancelled, the kernel done with the buffer): the
// sink's caller may take its buffer back; the stream is dropped, so nothing counts.
void Conn::end_ring_recv() {
  if (!recv_sink_) return;
  std::shared_ptr<ReadSink> s = std::move(recv_sink_);
  recv_sink_.reset();
  {
    std::lock_guard<std::mutex> g(s->mu);
    s->receiving = false;
    s->receiver = nullptr;
  }
  s->receiving_done.notify_all();
}

// If the reply being assembled is a READ's whose head is all in and whose data is all in
// this fragment, its data goes to the call's sink from now on; what of it came already
// (behind an earlier reply in BUF) is moved there first.
void Conn::try_sink() {
  size_t have;
  const uint8_t* rec = framer_.partial(&have);
  if (have < 4 || !framer_.in_last_fragment()) return;
  uint32_t xid = (uint32_t{rec[0]} << 24) | (uint32_t{rec[1]} << 16) | (uint32_t{rec[2]} << 8) | rec[3];
  auto it = pending_.find(xid);
  if (it == pending_.end() || !it->second->sink) return;
  ReadSink& s = *it->second->sink;
  size_t at, len;
  if (!s.locate(rec, have, xid, &at, &len) || len == 0 || len > s.cap || at > have ||
      have - at > len || len - (have - at) > framer_.fragment_left())
    return;  // anything else: the data (if any) stays in the record
  size_t early = have - at;
  std::lock_guard<std::mutex> g(s.mu);
  if (!s.dst) return;
  if (early > 0) std::memcpy(s.dst, rec + at, early);
  if (framer_.take_back(early) < 0) return;  // (not for a header from an earlier fragment)
  in_ = Incoming{it->second, s.dst + early, len - early, len};
  if (in_.left == 0) sink_filled(s);
}

// All of the reply's data is in S (its mutex held): the call's decode finds it there.
void Conn::sink_filled(ReadSink& s) {
  s.placed = in_.total;
  placed_bytes_.fetch_add(in_.total, std::memory_order_relaxed);
  in_ = {};
}

void Conn::dispatch(rpc::Record rec) {
  if (rec.size() < 4) return;
  uint32_t xid = (uint32_t{rec[0]} << 24) | (uint32_t{rec[1]} << 16) | (uint32_t{rec[2]} << 8) | rec[3];
  if (bind_call_ && xid == bind_call_->xid) {
    int rv = hooks_.check_bind(rec);
    bind_call_.reset();
    if (rv == 0) {
      binds_ok_.fetch_add(1);
      SHIM_LOG_INFO("nfs41: conn {} bound to the session (BIND_CONN_TO_SESSION)", index_);
    } else {
      // Still usable: with SP4_NONE the server binds on first SEQUENCE, and a dead
      // session is found (and recovered) by the callers' SEQUENCE.
      binds_failed_.fetch_add(1);
      SHIM_LOG_WARN("nfs41: conn {}: BIND_CONN_TO_SESSION failed ({})", index_, rv);
    }
    if (rebind_after_) {
      rebind_after_ = false;
      start_bind();  // to the newer session; held calls wait for its answer
      if (state_ == State::kBinding) return;
    }
    state_ = State::kUp;
    up_.store(true);
    while (!held_.empty()) {
      enqueue_locked_loop(held_.front());
      held_.pop_front();
    }
    flush();
    return;
  }
  auto it = pending_.find(xid);
  if (it == pending_.end()) return;  // abandoned (soft timeout) or a stray reply
  CallPtr c = it->second;
  pending_.erase(it);
  if (c->sink) --sinks_pending_;
  inflight_.fetch_sub(1);
  c->complete(0, std::move(rec));
}

void Conn::lose(const char* why) {
  if (fd_ < 0) return;
  SHIM_LOG_WARN("nfs41: conn {} lost: {}; {} calls in flight to replay", index_, why, pending_.size());
  loop_->forget(fd_);
  end_ring_recv();
  ::close(fd_);
  fd_ = -1;
  armed_ = 0;
  state_ = State::kDown;
  up_.store(false);
  framer_ = rpc::RecordFramer(8u << 20);
  outq_.clear();
  out_off_ = 0;
  bind_call_.reset();
  rebind_after_ = false;  // the reconnect binds to the session of then
  for (auto& kv : pending_) {
    inflight_.fetch_sub(1);
    kv.second->complete(-ECONNRESET, {});
  }
  pending_.clear();
  sinks_pending_ = 0;
  in_ = {};
  reconnect_at_ms_ = now_ms() + backoff_ms_;
}

// On the loop thread, without waiting: the connect() goes on while the loop serves the
// other sockets; POLLOUT (connect_ready) or the deadline (tick) ends it.
void Conn::try_reconnect() {
  std::string why;
  bool done = false;
  int fd = begin_connect(&done, &why);
  if (fd < 0) {
    reconnect_failed();
    return;
  }
  fd_ = fd;
  if (done) {
    reconnected();
    return;
  }
  state_ = State::kConnecting;
  connect_deadline_ms_ = now_ms() + kConnectTimeoutMs;
  rearm();
}

void Conn::connect_ready(uint32_t revents) {
  int e = socket_error(fd_);
  if (e == 0 && !(revents & POLLOUT)) e = ECONNABORTED;
  if (e != 0) {
    reconnect_failed();
    return;
  }
  std::string why;
  end_connect(fd_, 0, &why);  // (cannot fail without an error)
  reconnected();
}

// The server did not take the connection (refused, unreachable, no answer in time): try
// again after a backoff that doubles up to 2 s. lose() logged the loss once.
void Conn::reconnect_failed() {
  if (fd_ >= 0) {
    loop_->forget(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  armed_ = 0;
  state_ = State::kDown;
  backoff_ms_ = std::min(backoff_ms_ * 2, 2000);
  reconnect_at_ms_ = now_ms() + backoff_ms_;
}

void Conn::reconnected() {
  backoff_ms_ = 50;
  reconnects_.fetch_add(1);
  SHIM_LOG_INFO("nfs41: conn {} reconnected", index_);
  start_bind();
  if (state_ == State::kUp) {
    while (!held_.empty()) {
      enqueue_locked_loop(held_.front());
      held_.pop_front();
    }
    flush();
  }
  rearm();
}

}  // namespace nfsshim::nfs41
