// Sends each gathered batch (write_behind.h) that nothing else sent within DELAY of its
// start: the bound on how long an answered write waits in the daemon before it goes to the
// server. One thread per mount; it sleeps while nothing is pending.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace nfsshim::fuse::nfsfs {

struct Node;

class GatherFlusher {
 public:
  // SEND(node, ticket) sends the node's pending batch if it is still TICKET's.
  using Send = std::function<void(const std::shared_ptr<Node>&, int64_t)>;
  GatherFlusher(std::chrono::microseconds delay, unsigned max_pending);
  ~GatherFlusher();
  void start(Send send);
  // Sends everything still pending, then ends the thread. Safe without start.
  void stop();

  // Room for another pending batch on the mount (at most MAX_PENDING at once: memory).
  bool room() const;
  void started(const std::shared_ptr<Node>& n, int64_t ticket);  // a batch began
  void ended();  // a batch left (sent by whoever)
  void gathered() { writes_.fetch_add(1, std::memory_order_relaxed); }  // a WRITE joined one
  // For the log at unmount: batches begun, WRITEs gathered into them.
  void counts(uint64_t* batches, uint64_t* writes) const;

 private:
  struct Due {
    std::weak_ptr<Node> node;
    int64_t ticket;
    std::chrono::steady_clock::time_point at;
  };
  void run();
  const std::chrono::microseconds delay_;
  const unsigned max_;
  Send send_;
  mutable std::mutex mu_;  // gather_mu_4: taken with no other lock held
  std::condition_variable cv_;
  std::deque<Due> due_;
  // Batches begun minus batches gone; ended() may come before started() (another thread
  // sent the batch first), so it may dip below 0 for a moment.
  std::atomic<long> pending_{0};  // read by room() at every small write: no lock
  uint64_t batches_ = 0;
  std::atomic<uint64_t> writes_{0};
  std::atomic<bool> stop_{false};  // set under mu_ (the thread waits on it); room() reads it too
  std::thread thread_;
};

}  // namespace nfsshim::fuse::nfsfs
