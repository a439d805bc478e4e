// The NFSv4.1 engine's transport: one non-blocking TCP connection driven by its own
// EventLoop thread. Calls are framed with record marking and matched to replies by xid.
// A lost connection fails its in-flight calls with -ECONNRESET (the session layer replays
// them on their slot) and reconnects by itself; once a session exists, a new socket is
// bound to it with BIND_CONN_TO_SESSION before anything else is sent on it.
//
// Threading: submit(), rebind(), drop_for_test() and the counters from any thread;
// everything else runs on the connection's loop thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nfsshim/nfs/event_loop.h"
#include "nfsshim/rpc/record_marking.h"

namespace nfsshim::nfs41 {

class Conn;

// Where a READ reply's data can go instead of into the reply record: the caller's buffer,
// written straight from the socket (no copy), by the connection's loop thread (recvmsg) or
// by the kernel (an io_uring recv the loop started). The record then ends without the
// data (its XDR pad stays), and PLACED says it is in DST.
struct ReadSink : std::enable_shared_from_this<ReadSink> {
  // True with the data's offset and length if the reply's first N bytes are exactly its
  // head up to the data (a READ that succeeded); false for anything else.
  using Locate = bool (*)(const uint8_t* rec, size_t n, uint32_t xid, size_t* at, size_t* len);
  Locate locate = nullptr;
  size_t head = 0;  // the head's expected size: the first read of a reply stops there

  std::mutex mu;  // read_sink_mu_4: leaf; held by the loop thread while it writes DST
  uint8_t* dst = nullptr;
  size_t cap = 0;
  size_t placed = 0;  // all of the data went to DST (set before the call completes)
  // An io_uring recv into DST is in flight on RECEIVER (set and cleared by its loop thread,
  // under MU; RECEIVING_DONE is signalled when it clears).
  Conn* receiver = nullptr;
  bool receiving = false;
  std::condition_variable receiving_done;
  // A caller giving up on the call before its reply: no byte is written to DST after this
  // returns (a recv in flight is cancelled and waited for).
  void detach();
};

// One RPC in flight: the framed request and, once done, the reply record or -errno.
struct Call {
  uint32_t xid = 0;
  std::vector<uint8_t> wire;  // record-marked message (up to the tail, if it has one)
  rpc::Tail tail;             // sent after wire from where it lies (a WRITE's data)
  std::shared_ptr<ReadSink> sink;  // where the reply's READ data may go (or null)
  size_t size() const { return wire.size() + tail.size(); }
  // The same request again (same xid, bytes, tail and sink), not yet sent or answered.
  std::shared_ptr<Call> again() const;

  void complete(int err, rpc::Record reply);
  // 0 when done (then err/reply are valid), -ETIMEDOUT after TIMEOUT_MS.
  int wait(int timeout_ms);
  int err = 0;
  rpc::Record reply;

 private:
  std::mutex mu_;  // call_mu_3: leaf
  std::condition_variable cv_;
  bool done_ = false;
};
using CallPtr = std::shared_ptr<Call>;

// One event-loop thread serving one or more connections (each connection's state is touched
// by that thread only). The engine puts its nconnect sockets on loop_threads_for(nconnect) of
// them, as the NFSv3 engine does: a thread per socket meant a wake-up of a sleeping thread
// for most calls once there were more sockets than CPUs. A reconnect waits for its
// connect() on the loop like for any other socket event (kConnectTimeoutMs at most), so a
// server that does not answer one socket holds none of the others on the thread.
class ConnLoop {
 public:
  ConnLoop() = default;
  ~ConnLoop() { stop(); }
  ConnLoop(const ConnLoop&) = delete;
  ConnLoop& operator=(const ConnLoop&) = delete;

  int create(nfs::IoBackend io, std::string* why);  // the loop (backend IO), no thread yet
  void start();  // the thread; connections attached before it are served from then on
  void stop();   // joins the thread; idempotent
  nfs::EventLoop& loop() { return *loop_; }
  nfs::LoopStats stats() const { return loop_ ? loop_->stats() : nfs::LoopStats{}; }

 private:
  friend class Conn;
  void thread_main();
  std::unique_ptr<nfs::EventLoop> loop_;
  std::vector<Conn*> conns_;  // set before start()
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

class Conn : public nfs::FdHandler {
 public:
  struct Hooks {
    // A BIND_CONN_TO_SESSION call for the current session, or null before one exists.
    std::function<CallPtr()> make_bind;
    // Decodes the bind reply: 0 bound, else -errno / the nfsstat4 as a positive value.
    std::function<int(const rpc::Record&)> check_bind;
  };

  Conn(int index, std::string addr, int port, Hooks hooks);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Creates a loop thread of its own (backend IO), connects once (blocking), starts it.
  int start(nfs::IoBackend io, std::string* why);
  // Connects once (blocking) and joins LOOP, whose start() (not yet called) serves it.
  int attach(ConnLoop* loop, std::string* why);
  // Stops the loop thread (a shared one: for all its connections), then fails what is left.
  void stop();

  void submit(const CallPtr& c);
  // Sends BIND_CONN_TO_SESSION again (after a new session); calls wait until it is answered.
  void rebind();
  // Test hook: shutdown(2) of the socket, as if the network dropped it; ON_NEXT_CALL:
  // right after the next call was written, so that call is surely in flight.
  void drop_for_test(bool on_next_call = false);
  // Gives up on the socket (a call on it timed out): its calls fail as on a lost
  // connection, to be replayed on another one, and it reconnects. A server that died
  // without a reset (power loss) would otherwise keep them waiting forever.
  void drop() { drop_for_test(false); }

  int index() const { return index_; }
  nfs::IoBackend backend() const;
  size_t inflight() const { return inflight_.load(); }
  bool up() const { return up_.load(); }
  uint64_t calls() const { return calls_.load(); }
  uint64_t reconnects() const { return reconnects_.load(); }
  uint64_t binds_ok() const { return binds_ok_.load(); }
  uint64_t binds_failed() const { return binds_failed_.load(); }
  uint64_t placed_bytes() const { return placed_bytes_.load(); }
  int local_port() const { return local_port_.load(); }
  nfs::LoopStats loop_stats() const;

  void on_fd_ready(int fd, uint32_t revents) override;
  void on_recv_done(int fd, ssize_t res) override;
  uint64_t ring_recvs() const { return ring_recvs_.load(); }  // io_uring recvs into sinks

 private:
  friend class ConnLoop;
  enum class State { kDown, kConnecting, kBinding, kUp };
  static constexpr int kConnectTimeoutMs = 3000;
  void tick();  // on the loop thread after each iteration: reconnect, or give up a connect
  // A non-blocking socket whose connect() has begun: the fd, or -errno (WHY says what).
  // *DONE: connected already (else EINPROGRESS: POLLOUT tells).
  int begin_connect(bool* done, std::string* why);
  int end_connect(int fd, int err, std::string* why);  // ERR: the connect's; closes FD on error
  int connect_socket(std::string* why);  // begin_connect, then poll (the first connect)
  void enqueue_locked_loop(const CallPtr& c);
  void start_bind();
  void flush();
  void read_ready();
  void dispatch(rpc::Record rec);
  void try_sink();
  void sink_filled(ReadSink& s);
  bool start_ring_recv(const std::shared_ptr<ReadSink>& s);  // S's mutex held
  void ring_recv_done(size_t got);
  void stop_ring_recv(const std::shared_ptr<ReadSink>& s);
  friend struct ReadSink;  // detach() asks for stop_ring_recv on the loop thread
  void end_ring_recv();  // the socket is forgotten: the recv is over, its bytes do not count
  void after_input();    // completed records dispatched, the next READ's sink looked for
  void lose(const char* why);
  void try_reconnect();
  void connect_ready(uint32_t revents);  // kConnecting: the socket's connect() is over
  void reconnect_failed();
  void reconnected();
  void rearm();

  const int index_;
  const std::string addr_;
  const int port_;
  Hooks hooks_;
  std::unique_ptr<ConnLoop> own_;  // start(): a loop thread of its own
  ConnLoop* lt_ = nullptr;          // the loop thread serving it (own_ or the engine's)
  nfs::EventLoop* loop_ = nullptr;

  // Loop-thread state.
  int fd_ = -1;
  State state_ = State::kDown;
  uint32_t armed_ = 0;
  rpc::RecordFramer framer_{8u << 20};
  std::unordered_map<uint32_t, CallPtr> pending_;  // written or queued on this socket
  std::deque<CallPtr> held_;                       // waiting for connect/bind
  std::deque<CallPtr> outq_;  // calls whose wire bytes are (partly) unsent
  size_t out_off_ = 0;
  size_t sinks_pending_ = 0;  // pending_ calls with a ReadSink
  size_t sink_head_ = 0;      // their reply head's size
  // The reply being received whose READ data goes to its call's sink.
  struct Incoming {
    CallPtr call;
    uint8_t* at = nullptr;
    size_t left = 0, total = 0;
  } in_;
  // in_'s sink while an io_uring recv of its data is in flight (no POLLIN meanwhile).
  std::shared_ptr<ReadSink> recv_sink_;
  CallPtr bind_call_;
  bool rebind_after_ = false;  // rebind() came while bind_call_ was in flight
  int64_t reconnect_at_ms_ = 0;
  int64_t connect_deadline_ms_ = 0;  // kConnecting
  int backoff_ms_ = 50;

  std::atomic<size_t> inflight_{0};
  std::atomic<bool> up_{false};
  std::atomic<uint64_t> calls_{0}, reconnects_{0}, binds_ok_{0}, binds_failed_{0}, placed_bytes_{0},
      ring_recvs_{0};
  std::atomic<int> local_port_{0};
  std::atomic<bool> drop_next_{false};
};

int64_t now_ms();

}  // namespace nfsshim::nfs41
