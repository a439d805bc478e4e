// The NFSv4.1 engine's transport (libshim/src/nfs41/transport.cc) against an in-process
// TCP echo server on loopback: records framed, matched by xid, big records written in
// parts (also those whose end is sent from a buffer of its own), a dropped connection
// failing its calls with -ECONNRESET and coming back (with the bind call first when a
// session exists), a READ reply's data received straight into its caller's buffer. For
// the io_uring and the epoll loop.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "nfsshim/nfs41/transport.h"
#include "nfsshim/rpc/record_marking.h"
#include "record_server.h"

using nfsshim::nfs::IoBackend;
using namespace nfsshim::nfs41;

namespace {

// Echoes every record back. After DROP_AFTER records (0: never) on a connection it closes
// that connection without answering the last one.
class EchoServer : public nfs41test::RecordServer {
 public:
  EchoServer()
      : RecordServer([this](int fd, const std::vector<uint8_t>& rec, int n) { return echo(fd, rec, n); }) {}
  ~EchoServer() override { stop(); }
  std::atomic<int> drop_after{0};

 private:
  bool echo(int fd, const std::vector<uint8_t>& rec, int n) {
    if (drop_after.load() > 0 && n >= drop_after.load()) {
      drop_after.store(0);
      ::shutdown(fd, SHUT_RDWR);
      return false;
    }
    return send_record(fd, rec);
  }
};

// A call of SIZE message bytes; its last TAIL bytes (with their XDR pad) are sent from a
// buffer of their own, as a WRITE's data is.
CallPtr make_call(uint32_t xid, size_t size, size_t tail = 0) {
  auto c = std::make_shared<Call>();
  c->xid = xid;
  std::vector<uint8_t> msg(std::max<size_t>(size, 8 + tail));
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(xid * 31 + i);
  msg[0] = static_cast<uint8_t>(xid >> 24);
  msg[1] = static_cast<uint8_t>(xid >> 16);
  msg[2] = static_cast<uint8_t>(xid >> 8);
  msg[3] = static_cast<uint8_t>(xid);
  uint32_t pad = static_cast<uint32_t>((4 - tail % 4) % 4);
  size_t head = msg.size() - tail;
  nfsshim::rpc::frame_record(&c->wire, msg.data(), head);
  if (tail > 0) {
    uint32_t mark = nfsshim::rpc::kLastFragment | static_cast<uint32_t>(msg.size() + pad);
    for (int i = 0; i < 4; ++i) c->wire[i] = static_cast<uint8_t>(mark >> (24 - 8 * i));
    auto owned = std::make_shared<std::vector<uint8_t>>(msg.begin() + head, msg.end());
    c->tail = nfsshim::rpc::Tail{owned->data(), tail, pad, owned};
  }
  return c;
}

// The echoed record equals the message framed into the call (tail and pad included).
bool echoed(const Call& c) {
  std::vector<uint8_t> sent(c.wire.begin() + 4, c.wire.end());
  sent.insert(sent.end(), c.tail.data, c.tail.data + c.tail.len);
  sent.insert(sent.end(), c.tail.pad, uint8_t{0});
  return c.err == 0 && c.reply.size() == sent.size() &&
         std::memcmp(c.reply.data(), sent.data(), sent.size()) == 0;
}

class Nfs41Transport : public ::testing::TestWithParam<IoBackend> {};

TEST_P(Nfs41Transport, ManyCallsFromManyThreadsBigAndSmall) {
  EchoServer srv;
  Conn conn(0, "127.0.0.1", srv.port(), {});
  std::string why;
  ASSERT_EQ(conn.start(GetParam(), &why), 0) << why;
  EXPECT_EQ(conn.backend(), GetParam());
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      std::vector<CallPtr> calls;
      for (int i = 0; i < 100; ++i) {
        uint32_t xid = static_cast<uint32_t>(t * 100000 + i + 1);
        // Every 25th call is 2 MiB: more than a socket buffer, written in parts. Every
        // 3rd sends its second half from a buffer of its own (odd lengths: padded).
        size_t size = i % 25 == 0 ? (2u << 20) + i : 100 + i;
        calls.push_back(make_call(xid, size, i % 3 == 0 ? size / 2 : 0));
        conn.submit(calls.back());
      }
      for (auto& c : calls) {
        if (c->wait(20000) != 0 || !echoed(*c)) ++bad;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(conn.calls(), 400u);
  EXPECT_EQ(conn.inflight(), 0u);
  conn.stop();
}

TEST_P(Nfs41Transport, LostConnectionFailsInflightAndReconnects) {
  EchoServer srv;
  srv.drop_after.store(5);  // the 5th record kills the connection
  Conn conn(0, "127.0.0.1", srv.port(), {});
  std::string why;
  ASSERT_EQ(conn.start(GetParam(), &why), 0) << why;
  std::vector<CallPtr> calls;
  for (uint32_t i = 1; i <= 5; ++i) {
    calls.push_back(make_call(i, 64));
    conn.submit(calls.back());
  }
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(calls[i]->wait(10000), 0);
    EXPECT_TRUE(echoed(*calls[i])) << i;
  }
  ASSERT_EQ(calls[4]->wait(10000), 0);
  EXPECT_EQ(calls[4]->err, -ECONNRESET);
  // Reconnects by itself; later calls go through.
  auto again = make_call(99, 64);
  conn.submit(again);
  ASSERT_EQ(again->wait(10000), 0);
  EXPECT_TRUE(echoed(*again));
  EXPECT_EQ(conn.reconnects(), 1u);
  EXPECT_EQ(srv.connections.load(), 2);
  conn.stop();
}

TEST_P(Nfs41Transport, NewSocketIsBoundBeforeAnythingElse) {
  EchoServer srv;
  std::atomic<int> binds{0};
  std::vector<uint32_t> order;
  std::mutex order_mu;
  std::atomic<Call*> watched{nullptr};
  std::atomic<bool> answered_before_bind{false};
  Conn::Hooks hooks;
  hooks.make_bind = [&] { return make_call(0xB1D00000u + static_cast<uint32_t>(++binds), 32); };
  hooks.check_bind = [&](const nfsshim::rpc::Record& r) {
    std::lock_guard<std::mutex> g(order_mu);
    order.push_back((uint32_t{r[0]} << 24) | (uint32_t{r[1]} << 16) | (uint32_t{r[2]} << 8) | r[3]);
    Call* w = watched.load();
    if (w && w->wait(0) == 0 && w->err == 0) answered_before_bind = true;
    return 0;
  };
  Conn conn(0, "127.0.0.1", srv.port(), hooks);
  std::string why;
  ASSERT_EQ(conn.start(GetParam(), &why), 0) << why;
  conn.rebind();  // as the engine does once the session exists
  auto c1 = make_call(1, 64);
  conn.submit(c1);
  ASSERT_EQ(c1->wait(10000), 0);
  EXPECT_TRUE(echoed(*c1));
  conn.drop_for_test();
  // Submitted while down or binding: held until the bind reply came.
  auto c2 = make_call(2, 64);
  watched = c2.get();
  conn.submit(c2);
  ASSERT_EQ(c2->wait(10000), 0);
  if (c2->err == -ECONNRESET) {  // it raced into the dying socket: send it again
    auto fresh = make_call(2, 64);
    watched = fresh.get();  // before the old call is freed
    c2 = fresh;
    conn.submit(c2);
    ASSERT_EQ(c2->wait(10000), 0);
  }
  EXPECT_TRUE(echoed(*c2));
  EXPECT_FALSE(answered_before_bind.load());
  {
    std::lock_guard<std::mutex> g(order_mu);
    EXPECT_EQ(order, (std::vector<uint32_t>{0xB1D00001u, 0xB1D00002u}));
  }
  EXPECT_EQ(conn.binds_ok(), 2u);
  EXPECT_EQ(conn.reconnects(), 1u);
  conn.stop();
}

TEST_P(Nfs41Transport, RebindDuringABindBindsAgainAfterIt) {
  // A new session made while a reconnect's bind (for the old one) is in flight: the
  // engine's rebind() must not be lost, or the socket stays unbound to the new session.
  EchoServer srv;
  std::atomic<int> binds{0};
  Conn::Hooks hooks;
  hooks.make_bind = [&] { return make_call(0xB1D00000u + static_cast<uint32_t>(++binds), 32); };
  hooks.check_bind = [&](const nfsshim::rpc::Record&) { return 0; };
  Conn conn(0, "127.0.0.1", srv.port(), hooks);
  std::string why;
  ASSERT_EQ(conn.start(GetParam(), &why), 0) << why;
  conn.rebind();  // starts a bind
  conn.rebind();  // while it is (most likely) still unanswered
  for (int i = 0; i < 500 && conn.binds_ok() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(conn.binds_ok(), 2u);
  EXPECT_EQ(binds.load(), 2);
  auto c = make_call(7, 64);  // and calls go through after them
  conn.submit(c);
  ASSERT_EQ(c->wait(10000), 0);
  EXPECT_TRUE(echoed(*c));
  conn.stop();
}

// A listener on 127.0.0.1 that never accepts by itself, backlog 0: one connection waits in
// its queue, and while it does the kernel drops every further SYN, so a connect() to it
// hangs as to a server that does not answer. accept_one() makes room.
class SilentListener {
 public:
  SilentListener() { fd_ = nfs41test::listen_loopback(0, &port_); }
  ~SilentListener() {
    for (int fd : accepted_) ::close(fd);
    ::close(fd_);
  }
  int port() const { return port_; }
  void accept_one() {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    EXPECT_GE(fd, 0);
    if (fd >= 0) accepted_.push_back(fd);
  }

 private:
  int fd_ = -1, port_ = 0;
  std::vector<int> accepted_;
};

TEST_P(Nfs41Transport, HangingReconnectHoldsNoOtherSocketOfItsLoop) {
  // Two sockets on one loop thread, as the engine puts them; one loses its connection and
  // its server takes no new one (past the connect deadline, so a second try follows).
  EchoServer srv;
  SilentListener silent;
  ConnLoop loop;
  std::string why;
  ASSERT_EQ(loop.create(GetParam(), &why), 0) << why;
  Conn hanging(0, "127.0.0.1", silent.port(), {});
  Conn other(1, "127.0.0.1", srv.port(), {});
  ASSERT_EQ(hanging.attach(&loop, &why), 0) << why;  // queued, not accepted: connected
  ASSERT_EQ(other.attach(&loop, &why), 0) << why;
  loop.start();
  hanging.drop_for_test();
  // The other socket's calls are answered at once all along (a connect waited for on the
  // loop thread held them for its whole 3 s).
  auto t0 = std::chrono::steady_clock::now();
  int64_t worst_ms = 0;
  for (uint32_t i = 1; std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(4000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto c = make_call(i, 64);
    auto sent = std::chrono::steady_clock::now();
    other.submit(c);
    ASSERT_EQ(c->wait(10000), 0);
    EXPECT_TRUE(echoed(*c));
    worst_ms = std::max<int64_t>(worst_ms, std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - sent).count());
  }
  EXPECT_LT(worst_ms, 1500) << "a call waited behind the other socket's connect";
  EXPECT_EQ(hanging.reconnects(), 0u);
  EXPECT_FALSE(hanging.up());
  // Room in the queue: the socket comes back.
  silent.accept_one();
  for (int i = 0; i < 1000 && hanging.reconnects() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(hanging.reconnects(), 1u);
  EXPECT_TRUE(hanging.up());
  hanging.stop();  // stops the shared loop thread
  other.stop();
}

// Sink calls: the message is [xid][length][data]; its echo is taken for a READ reply
// whose 8-byte head says where the data is.
bool test_locate(const uint8_t* rec, size_t n, uint32_t, size_t* at, size_t* len) {
  if (n < 8) return false;
  *at = 8;
  *len = (size_t{rec[4]} << 24) | (size_t{rec[5]} << 16) | (size_t{rec[6]} << 8) | rec[7];
  return true;
}

struct SinkCall {
  CallPtr call;
  std::vector<uint8_t> data, dst;
};

std::unique_ptr<SinkCall> make_sink_call(uint32_t xid, size_t len, bool detached) {
  auto sc = std::make_unique<SinkCall>();
  std::vector<uint8_t> msg(8 + len);
  for (int i = 0; i < 4; ++i) {
    msg[i] = static_cast<uint8_t>(xid >> (24 - 8 * i));
    msg[4 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
  }
  for (size_t i = 0; i < len; ++i) msg[8 + i] = static_cast<uint8_t>(xid * 7 + i * 13);
  sc->data.assign(msg.begin() + 8, msg.end());
  sc->dst.assign(len, 0xAA);
  sc->call = std::make_shared<Call>();
  sc->call->xid = xid;
  nfsshim::rpc::frame_record(&sc->call->wire, msg.data(), msg.size());
  auto sink = std::make_shared<ReadSink>();
  sink->locate = test_locate;
  sink->head = 8;
  sink->dst = detached ? nullptr : sc->dst.data();
  sink->cap = len;
  sc->call->sink = sink;
  return sc;
}

TEST_P(Nfs41Transport, ReadDataGoesStraightIntoTheSinkOrStaysInTheRecord) {
  EchoServer srv;
  Conn conn(0, "127.0.0.1", srv.port(), {});
  std::string why;
  ASSERT_EQ(conn.start(GetParam(), &why), 0) << why;
  // Big and mid-sized replies back to back (a head and data behind another reply in one
  // read), small plain calls between them, every 7th sink detached before it is sent.
  std::vector<std::unique_ptr<SinkCall>> sinks;
  std::vector<CallPtr> plain;
  size_t placed_want = 0;
  for (uint32_t i = 1; i <= 60; ++i) {
    size_t len = i % 3 == 0 ? (2u << 20) + i : i % 3 == 1 ? 100000 + i : 70000 + 3 * i;
    bool detached = i % 7 == 0;
    sinks.push_back(make_sink_call(i, len, detached));
    conn.submit(sinks.back()->call);
    plain.push_back(make_call(1000 + i, 50 + i));
    conn.submit(plain.back());
  }
  size_t in_sink = 0;
  for (auto& sc : sinks) {
    const Call& c = *sc->call;
    ASSERT_EQ(sc->call->wait(20000), 0);
    ASSERT_EQ(c.err, 0);
    if (c.sink->placed > 0) {
      ++in_sink;
      placed_want += c.sink->placed;
      EXPECT_EQ(c.sink->placed, sc->data.size()) << c.xid;
      EXPECT_EQ(c.reply.size(), 8u) << c.xid;  // the head only
      EXPECT_TRUE(sc->dst == sc->data) << c.xid;
    } else {
      // Left in the record: the whole message; the buffer untouched.
      EXPECT_EQ(c.reply.size(), 8 + sc->data.size()) << c.xid;
      EXPECT_TRUE(std::equal(sc->data.begin(), sc->data.end(), c.reply.begin() + 8)) << c.xid;
      EXPECT_TRUE(std::all_of(sc->dst.begin(), sc->dst.end(), [](uint8_t b) { return b == 0xAA; }))
          << c.xid;
    }
    if (c.xid % 7 == 0) {
      EXPECT_EQ(c.sink->placed, 0u) << "detached sink " << c.xid << " was written";
    }
  }
  for (auto& c : plain) {
    ASSERT_EQ(c->wait(20000), 0);
    EXPECT_TRUE(echoed(*c));
  }
  // Each reply is one fragment: every attached sink takes its data, a detached one never.
  EXPECT_EQ(in_sink, sinks.size() - sinks.size() / 7);
  EXPECT_EQ(conn.placed_bytes(), placed_want);
  conn.stop();
}

// Echoes every record, but the reply to xid 1 stops after its head and FIRST data bytes
// until go() (then the rest follows) or cut() (then the connection is shut down).
class HalfwayServer : public nfs41test::RecordServer {
 public:
  explicit HalfwayServer(size_t first)
      : RecordServer([this](int fd, const std::vector<uint8_t>& rec, int) { return answer(fd, rec); }),
        first_(first) {}
  ~HalfwayServer() override {
    go();
    stop();
  }
  void go() { set(1); }
  void cut() { set(2); }

 private:
  void set(int v) {
    std::lock_guard<std::mutex> g(mu_);
    if (what_ == 0) what_ = v;
    cv_.notify_all();
  }
  static bool send_all(int fd, const uint8_t* p, size_t n) {
    for (size_t off = 0; off < n;) {
      ssize_t w = ::send(fd, p + off, n - off, MSG_NOSIGNAL);
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
    }
    return true;
  }
  bool answer(int fd, const std::vector<uint8_t>& rec) {
    if (rec.size() < 4 || rec[0] != 0 || rec[1] != 0 || rec[2] != 0 || rec[3] != 1)
      return send_record(fd, rec);
    std::vector<uint8_t> out;
    nfsshim::rpc::frame_record(&out, rec.data(), rec.size());
    size_t part = 4 + 8 + first_;
    if (!send_all(fd, out.data(), part)) return false;
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait(g, [&] { return what_ != 0; });
    if (what_ == 2) {
      ::shutdown(fd, SHUT_RDWR);
      return false;
    }
    return send_all(fd, out.data() + part, out.size() - part);
  }
  const size_t first_;
  std::mutex mu_;
  std::condition_variable cv_;
  int what_ = 0;
};

// Waits until the first N bytes of SC's buffer hold its data (the reply got that far).
bool wait_arrived(const SinkCall& sc, size_t n) {
  for (int i = 0; i < 1000; ++i) {
    {
      std::lock_guard<std::mutex> g(sc.call->sink->mu);  // (the loop writes under it with epoll)
      if (std::equal(sc.data.begin(), sc.data.begin() + n, sc.dst.begin())) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// A connection (backend IO) to a HalfwayServer with a 1 MiB sink call (xid 1) sent: its
// reply stops after FIRST bytes of data until srv.go() or srv.cut().
struct HalfwayRead {
  HalfwayRead(IoBackend io, size_t first) : srv(first), sc(make_sink_call(1, 1u << 20, false)) {
    conn = std::make_unique<Conn>(0, "127.0.0.1", srv.port(), Conn::Hooks{});
    std::string why;
    started = conn->start(io, &why) == 0;
    EXPECT_TRUE(started) << why;
    if (started) conn->submit(sc->call);
  }
  HalfwayServer srv;
  std::unique_ptr<SinkCall> sc;
  std::unique_ptr<Conn> conn;
  bool started = false;
};

// A caller that gives up while its READ data is arriving (a soft timeout): detach()
// returns at once, even though the rest does not come (with io_uring it cancels the
// kernel's recv into the buffer and waits for it), and nothing is written to the buffer
// after it returned. The rest of that reply then goes into the record and the stream
// stays in step: a later call is answered.
TEST_P(Nfs41Transport, CallerGivingUpWhileItsDataArrivesGetsItsBufferBackAtOnce) {
  const size_t first = 256 * 1024;
  HalfwayRead h(GetParam(), first);
  ASSERT_TRUE(h.started);
  auto& sc = h.sc;
  Conn& conn = *h.conn;
  ASSERT_TRUE(wait_arrived(*sc, first)) << "the first part never reached the buffer";
  auto t0 = std::chrono::steady_clock::now();
  sc->call->sink->detach();
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(2)) << "detach() waited for the rest of the reply";
  const std::vector<uint8_t> at_detach = sc->dst;
  h.srv.go();
  auto later = make_call(2, 100);
  conn.submit(later);
  ASSERT_EQ(later->wait(10000), 0);
  EXPECT_TRUE(echoed(*later));
  ASSERT_EQ(sc->call->wait(10000), 0);
  EXPECT_EQ(sc->call->err, 0);
  EXPECT_EQ(sc->call->sink->placed, 0u);
  EXPECT_TRUE(sc->dst == at_detach) << "the buffer was written after detach() returned";
  EXPECT_FALSE(std::equal(sc->data.begin() + first, sc->data.end(), sc->dst.begin() + first));
  if (GetParam() == IoBackend::kUring) EXPECT_GE(conn.ring_recvs(), 1u);
  else EXPECT_EQ(conn.ring_recvs(), 0u);
  conn.stop();
}

// The connection dies while a READ's data is arriving: the call fails with -ECONNRESET,
// its buffer is not written after that, and the connection comes back.
TEST_P(Nfs41Transport, ConnectionLostWhileDataArrivesFailsTheCallAndLeavesItsBuffer) {
  const size_t first = 300 * 1024;
  HalfwayRead h(GetParam(), first);
  ASSERT_TRUE(h.started);
  auto& sc = h.sc;
  Conn& conn = *h.conn;
  ASSERT_TRUE(wait_arrived(*sc, first));
  h.srv.cut();
  ASSERT_EQ(sc->call->wait(10000), 0);
  EXPECT_EQ(sc->call->err, -ECONNRESET);
  EXPECT_EQ(sc->call->sink->placed, 0u);
  const std::vector<uint8_t> at_fail = sc->dst;
  auto again = make_call(2, 64);
  conn.submit(again);
  ASSERT_EQ(again->wait(10000), 0);
  EXPECT_TRUE(echoed(*again));
  EXPECT_TRUE(sc->dst == at_fail);
  EXPECT_EQ(conn.reconnects(), 1u);
  conn.stop();
}

// conn.stop() with a READ's data half in: the call fails, stop() does not hang, and the
// buffer can go at once (with io_uring: the recv is cancelled before stop() returns).
TEST_P(Nfs41Transport, StopWhileDataArrivesEndsTheRecvBeforeItReturns) {
  const size_t first = 128 * 1024;
  HalfwayRead h(GetParam(), first);
  ASSERT_TRUE(h.started);
  auto& sc = h.sc;
  ASSERT_TRUE(wait_arrived(*sc, first));
  h.conn->stop();
  ASSERT_EQ(sc->call->wait(1000), 0);
  EXPECT_EQ(sc->call->err, -ESHUTDOWN);
  const std::vector<uint8_t> at_stop = sc->dst;
  h.srv.go();  // the rest, while the stopped connection's loop still exists: not for the buffer
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(sc->dst == at_stop) << "the buffer was written after stop() returned";
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs41Transport,
                         ::testing::Values(IoBackend::kUring, IoBackend::kEpoll),
                         [](const ::testing::TestParamInfo<IoBackend>& i) {
                           return std::string(i.param == IoBackend::kUring ? "uring" : "epoll");
                         });

}  // namespace
