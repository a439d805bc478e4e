// Engine internals shared by engine.cc, connection.cc and ops.cc.
#pragma once

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "nfsshim/nfs/engine.h"
#include "nfsshim/nfs/event_loop.h"

namespace nfsshim::nfs {

using Clock = std::chrono::steady_clock;
using RpcCb = void (*)(rpc_context*, int, void*, void*);

// One RPC, from submit to its final result. Owned by whoever submitted it (the blocked caller).
struct Call {
  static constexpr uint32_t kMagic = 0x4c41434e;  // "NCAL"
  uint32_t magic = kMagic;
  Cred cred;
  const char* what = "";
  size_t bytes = 0;          // payload counted against max_inflight_mb
  bool idempotent = true;
  int attempts = 0;          // sends so far
  Clock::time_point submitted{};
  Connection* conn = nullptr;  // where it is queued or in flight (engine_mu_0)
  std::function<int(rpc_context*, RpcCb, void*)> issue;
  std::function<void(int err, void* res)> done;  // loop thread; last touch of the Call
};

// Handed to libnfs as private_data: outlives the Call if libnfs calls back late.
struct Ticket {
  static constexpr uint32_t kMagic = 0x544b4e54;  // "TKNT"
  uint32_t magic = kMagic;
  Call* call;
  Connection* conn;
  Clock::time_point sent_at;
  bool orphaned = false;  // the connection was torn down and the call re-sent already
};

class LoopThread {
 public:
  LoopThread(std::unique_ptr<EventLoop> loop, int index);
  ~LoopThread();
  void start();
  void stop();  // joins; connections are shut down on the loop thread
  EventLoop& loop() { return *loop_; }
  void add(Connection* c) { conns_.push_back(c); }

 private:
  void run();
  std::unique_ptr<EventLoop> loop_;
  int index_;
  std::vector<Connection*> conns_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

class Connection final : public FdHandler {
 public:
  Connection(Engine* e, LoopThread* lt, int index);
  ~Connection();
  // Any thread: queue CALL (already accounted to this connection).
  void enqueue(Call* call);
  // Loop thread.
  void start();
  void tick(Clock::time_point now);
  void shutdown();
  void on_fd_ready(int fd, uint32_t revents) override;

  int index() const { return index_; }
  std::atomic<bool> up{false};
  int load = 0;                       // queued + in flight (engine_mu_0)
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<int> connect_failures{0};
  std::string last_error();           // any thread

 private:
  enum class State { kDown, kConnecting, kUp };
  static void connect_cb(rpc_context* rpc, int status, void* data, void* priv);
  static void reply_cb(rpc_context* rpc, int status, void* data, void* priv);
  void connect();
  void drain_inbox();
  void issue_pending();
  void rearm();
  void fail(const std::string& why);
  // libnfs reports failed calls from inside rpc_service/rpc_disconnect; whether that is a
  // lost connection (re-send) or an RPC-level error (final) is known only afterwards.
  void settle_failures(bool conn_broken);
  void set_error(const std::string& e);

  Engine* e_;
  LoopThread* lt_;
  int index_;
  rpc_context* rpc_ = nullptr;
  int fd_ = -1;
  State state_ = State::kDown;
  Clock::time_point retry_at_{};
  Clock::time_point connect_started_{};
  bool ever_up_ = false;
  bool connect_failed_ = false;
  std::vector<std::pair<Call*, std::string>> failed_;  // see settle_failures
  int backoff_ms_ = 0;
  Clock::time_point down_since_{};
  bool complained_ = false;
  Cred auth_cred_;
  bool auth_set_ = false;
  std::deque<Call*> pending_;               // loop thread
  std::unordered_set<Ticket*> inflight_;    // loop thread

  std::mutex inbox_mu_;  // conn_inbox_mu_1: leaf
  std::vector<Call*> inbox_;
  bool kicked_ = false;
  std::mutex err_mu_;    // leaf
  std::string last_error_;
};

std::string socket_error(int fd, int revents);  // engine.cc

// Decoding helpers (ops.cc).
void fattr_to_attr(const fattr3& f, Attr* a);
Fh fh_of(const nfs_fh3& f);
nfs_fh3 to_nfs_fh3(const Fh& fh);  // points into fh.data: keep FH alive while it is used

}  // namespace nfsshim::nfs
