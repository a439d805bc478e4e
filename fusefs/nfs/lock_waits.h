// Blocking lock requests (F_SETLKW) wait on threads of their own, not on a request thread.
// A request thread that waits for a lock can read nothing meanwhile: max_threads waiters
// stopped the whole mount, and with it the INTERRUPTs that would have ended their waits and
// the F_UNLCK or close of a holder on this host (fusefs/README.md, "Locks").
#pragma once

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace nfsshim::fuse::nfsfs {

class LockWaits {
 public:
  // JOB waits until granted or until *CANCEL is set, and replies to its request itself.
  using Job = std::function<void(std::atomic<bool>* cancel)>;

  explicit LockWaits(size_t max) : max_(max) {}
  ~LockWaits() { stop(); }
  LockWaits(const LockWaits&) = delete;
  LockWaits& operator=(const LockWaits&) = delete;

  // Runs JOB on a thread of its own. Not run: -ENOLCK with MAX waits running, -EINTR
  // after stop(), -EAGAIN when no thread could be started.
  int start(Job job) {
    std::vector<std::thread> finished;
    int rv = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      finished.swap(done_);
      if (stopped_) {
        rv = -EINTR;
      } else if (running_.size() >= max_) {
        rv = -ENOLCK;
      } else {
        running_.emplace_back();
        auto slot = std::prev(running_.end());
        // The signals the daemon handles stay with its main thread (as loop.cc's threads).
        sigset_t block, old;
        sigemptyset(&block);
        for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&block, sig);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        try {
          // mu_ is held until the handle is stored: the thread's end (finish) takes it.
          slot->thread = std::thread([this, slot, job = std::move(job)] {
            pthread_setname_np(pthread_self(), "nfsshim-lockw");
            job(&slot->cancel);
            finish(slot);
          });
        } catch (const std::system_error&) {
          running_.erase(slot);
          rv = -EAGAIN;
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
      }
    }
    for (std::thread& t : finished) t.join();  // ended already, or about to
    return rv;
  }

  // Sets every wait's CANCEL, waits for the jobs to end (they reply) and joins their
  // threads; later start()s fail.
  void stop() {
    std::unique_lock<std::mutex> g(mu_);
    stopped_ = true;
    for (Slot& s : running_) s.cancel.store(true);
    empty_cv_.wait(g, [this] { return running_.empty(); });
    std::vector<std::thread> finished;
    finished.swap(done_);
    g.unlock();
    for (std::thread& t : finished) t.join();
  }

  // stop() was called: a cancelled wait was not interrupted by a signal.
  bool stopped() {
    std::lock_guard<std::mutex> g(mu_);
    return stopped_;
  }

  size_t running() {
    std::lock_guard<std::mutex> g(mu_);
    return running_.size();
  }

 private:
  struct Slot {
    std::atomic<bool> cancel{false};
    std::thread thread;
  };

  // The last thing a wait thread does: hands its own handle over to be joined by the next
  // start() or by stop() (a thread cannot join itself), and frees its slot.
  void finish(std::list<Slot>::iterator slot) {
    std::lock_guard<std::mutex> g(mu_);
    done_.push_back(std::move(slot->thread));
    running_.erase(slot);
    if (running_.empty()) empty_cv_.notify_all();
  }

  const size_t max_;
  std::mutex mu_;  // lock_waits_mu: the fields below; no other lock is taken under it
  std::condition_variable empty_cv_;
  std::list<Slot> running_;        // a list: a slot stays where its thread found it
  std::vector<std::thread> done_;  // threads that ended their job, not joined yet
  bool stopped_ = false;
};

}  // namespace nfsshim::fuse::nfsfs
