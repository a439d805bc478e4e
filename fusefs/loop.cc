#include "loop.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "nfsshim/log.h"
#include "options.h"

namespace nfsshim::fuse {
namespace {

// Lock: Loop::mu (loop_mu_0) guards every field below it. It is never held across a
// libfuse call that waits (receive, process), only across counter changes.
struct Loop {
  fuse_session* se = nullptr;
  unsigned max_threads = 1;
  std::chrono::microseconds tick{100};
  int64_t spin_ns = 0;  // see receive()
  sem_t finish;  // posted once when the loop must end

  std::mutex mu;  // loop_mu_0
  std::condition_variable parked_cv;
  std::condition_variable dog_cv;  // the watchdog's tick, and its wake-up after idling
  std::vector<pthread_t> workers;
  unsigned readers = 0;  // threads reading requests, or called to and on their way
  unsigned busy = 0;     // threads processing a request
  unsigned parked = 0;   // threads waiting in parked_cv
  unsigned calls = 0;    // parked threads called to read that have not woken yet
  uint64_t started = 0;  // requests taken so far
  int64_t tick_ns = 0;
  bool long_seen = false;  // a request that ran a tick or longer ended since the last tick
  bool dog_asleep = false;
  bool stop = false;
  int error = 0;
  uint64_t stalls = 0;  // readers added because a request ran long (logged at the end)
};

void end_loop(Loop& l) {  // with l.mu held
  if (l.stop) return;
  l.stop = true;
  l.parked_cv.notify_all();
  l.dog_cv.notify_all();
  ::sem_post(&l.finish);
}

// Starts FN with the signals libfuse handles blocked, so that they reach the main thread.
int start_thread(pthread_t* tid, void* (*fn)(void*), Loop* l) {
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int rv = pthread_create(tid, nullptr, fn, l);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return -rv;
}

void* worker(void* arg);

int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The reading thread's view of its caller: when it last finished a request, and whether
// the next one came soon enough after the last that it is worth waiting for awake.
struct Pace {
  int64_t last_done = 0;
  bool spin = false;
};

// The next request. With spin_ns the device is non-blocking: a reader that finished a
// request less than spin_ns ago tries again (yielding the CPU) instead of sleeping, so a
// caller doing one request after another finds it awake. Going to sleep and being woken
// on the other CPU costs more than the whole request on a small VM (fusefs/README.md).
// The spin stops after one wait in vain and starts again only when a sleep ended that
// soon after the last request, so a quiet or sparse caller costs no CPU.
int receive(Loop& l, fuse_buf* buf, Pace* pace) {
  for (;;) {
    int res = fuse_session_receive_buf(l.se, buf);
    if (res != -EAGAIN) return res;
    if (pace->spin && now_ns() - pace->last_done < l.spin_ns) {
      sched_yield();
      continue;
    }
    pace->spin = false;
    struct pollfd p = {fuse_session_fd(l.se), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return -errno;
    pace->spin = now_ns() - pace->last_done < l.spin_ns;
  }
}

void free_buf(void* buf) { std::free(static_cast<fuse_buf*>(buf)->mem); }

// Puts one more thread on reading: a parked one, else a new one (up to max_threads).
void add_reader(Loop& l) {  // with l.mu held
  if (l.parked > l.calls) {
    ++l.calls;
    ++l.readers;
    l.parked_cv.notify_one();
    return;
  }
  if (l.workers.size() >= l.max_threads) return;  // the next thread to finish reads
  pthread_t tid;
  int rv = start_thread(&tid, worker, &l);
  if (rv < 0) {
    if (log::first_time("fuse:loop-thread"))
      SHIM_LOG_WARN("cannot start a request thread: {}", std::strerror(-rv));
    return;
  }
  l.workers.push_back(tid);
  ++l.readers;
}

// The loop of the request thread this is (null: another loop, or not a request thread).
thread_local Loop* t_loop = nullptr;

void* worker(void* arg) {
  Loop& l = *static_cast<Loop*>(arg);
  t_loop = &l;
  pthread_setname_np(pthread_self(), "nfsshim-req");
  // Only the wait for a request may be cancelled (at shutdown), as in libfuse's own loop.
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
  fuse_buf buf{};  // libfuse allocates buf.mem at the first request
  Pace pace;
  pthread_cleanup_push(free_buf, &buf);
  std::unique_lock<std::mutex> lock(l.mu);
  while (!l.stop && !fuse_session_exited(l.se)) {
    // This thread is counted in l.readers here.
    lock.unlock();
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, nullptr);
    int res = receive(l, &buf, &pace);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
    lock.lock();
    if (res == -EINTR) continue;
    --l.readers;
    if (res <= 0 || fuse_session_exited(l.se)) {  // 0: unmounted
      if (res < 0 && l.error == 0) l.error = res;
      end_loop(l);
      break;
    }
    ++l.busy;
    ++l.started;
    if (l.dog_asleep) {  // the first request after a quiet time
      l.dog_asleep = false;
      l.dog_cv.notify_one();
    }
    lock.unlock();
    const int64_t begun = now_ns();
    fuse_session_process_buf(l.se, &buf);
    const int64_t done = now_ns();
    if (l.spin_ns) pace.last_done = done;
    lock.lock();
    --l.busy;
    if (done - begun >= l.tick_ns) l.long_seen = true;
    if (l.readers > 0) {
      // Another thread reads already: park, so that one thread stays the hot reader.
      ++l.parked;
      l.parked_cv.wait(lock, [&l] { return l.calls > 0 || l.stop; });
      --l.parked;
      if (l.stop) break;
      --l.calls;  // add_reader counted this thread in l.readers
    } else {
      ++l.readers;
    }
  }
  lock.unlock();
  pthread_cleanup_pop(1);  // frees buf.mem
  return nullptr;
}

// Every tick while requests come: if requests run and nobody reads, and no request was
// taken since the last tick (so the running ones have taken a tick at least), adds a
// reader. Sleeps after kIdleTicks ticks without requests; the next request wakes it.
// The next tick comes later where no stall is near: kBesideTicks times while a thread
// reads beside running requests (long NFS READs and WRITEs), kFlowTicks times while quick
// requests flow (one was taken since the last tick, and none that ended took a tick or
// more). A request that stalls meanwhile gets its reader that much later: within about 2
// ticks after a quiet time or slow requests, 8 amid a flow of quick ones. Requests of a
// tick or more (NFS round trips) keep the 1-tick pace, so that they overlap.
void* watchdog(void* arg) {
  // One quiet tick is enough: each tick costs a timer wake-up (10-13 us of CPU on the test
  // VM), and 100 of them after every request made a caller with 450 requests/s cost the
  // watchdog 13% of a CPU (one tick: 1.7%; waking it costs the next request a futex call).
  constexpr int kIdleTicks = 1;
  // Ticking through every NFS READ and WRITE cost 10% of the daemon's CPU in 1 MiB reads
  // and writes through an nfs:// mount.
  constexpr int kBesideTicks = 8;
  // Ticking through a caller's quick requests (about one tick per create here) cost 11-13%
  // of create and unlink (3000 files, tmpfs SOURCE; fusefs/README.md).
  constexpr int kFlowTicks = 4;
  Loop& l = *static_cast<Loop*>(arg);
  pthread_setname_np(pthread_self(), "nfsshim-watch");
  std::unique_lock<std::mutex> lock(l.mu);
  uint64_t last_started = l.started;
  int idle = 0;
  int ticks = 1;  // the next wait, in ticks
  while (!l.stop) {
    if (idle >= kIdleTicks) {
      l.dog_asleep = true;
      l.dog_cv.wait(lock, [&l] { return !l.dog_asleep || l.stop; });
      idle = 0;
      ticks = 1;
      last_started = l.started;
      continue;
    }
    l.dog_cv.wait_for(lock, l.tick * ticks);
    if (l.stop) break;
    idle = l.busy == 0 && l.started == last_started ? idle + 1 : 0;
    const bool alone = l.readers == 0 && l.busy > 0;  // a request runs, nobody reads
    if (alone && l.started == last_started) {
      ++l.stalls;
      add_reader(l);
    }
    if (l.readers > 0 && l.busy > 0) ticks = kBesideTicks;
    else ticks = l.started != last_started && !l.long_seen ? kFlowTicks : 1;
    l.long_seen = false;
    last_started = l.started;
  }
  return nullptr;
}

}  // namespace

void request_goes_on() {
  Loop* l = t_loop;
  if (!l) return;
  std::lock_guard<std::mutex> lock(l->mu);
  if (l->readers == 0 && !l->stop) add_reader(*l);
}

int serve_init(fuse_session* se) {
  fuse_buf buf{};
  int res;
  do {
    res = fuse_session_receive_buf(se, &buf);
  } while (res == -EINTR);
  if (res > 0) fuse_session_process_buf(se, &buf);
  std::free(buf.mem);
  return res < 0 ? res : 0;
}

int run_adaptive_loop(fuse_session* se, unsigned max_threads, unsigned stall_us,
                      unsigned spin_us) {
  Loop l;
  l.se = se;
  l.max_threads = std::max(1u, max_threads);
  l.tick = std::chrono::microseconds(std::min(std::max(10u, stall_us), 1000000u));
  l.tick_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(l.tick).count();
  if (spin_us > 0) {
    int fd = fuse_session_fd(se);
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0)
      l.spin_ns = std::min(spin_us, 1000000u) * 1000LL;
    else
      SHIM_LOG_WARN("request loop: cannot make /dev/fuse non-blocking ({}): no spin",
                    std::strerror(errno));
  }
  ::sem_init(&l.finish, 0, 0);
  pthread_t dog;
  int rv = start_thread(&dog, watchdog, &l);
  if (rv == 0) {
    std::lock_guard<std::mutex> lock(l.mu);
    add_reader(l);
    if (l.workers.empty()) {
      rv = -EAGAIN;
      end_loop(l);
    }
  }
  if (rv < 0 && l.stop) {
    pthread_join(dog, nullptr);
  } else if (rv == 0) {
    // Signals (libfuse's handlers end the session) interrupt the wait here; one that lands
    // between the check and the wait is seen at the next timeout.
    while (!fuse_session_exited(se)) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += 1;
      if (::sem_timedwait(&l.finish, &until) == 0) break;
    }
    std::vector<pthread_t> threads;
    {
      std::lock_guard<std::mutex> lock(l.mu);
      end_loop(l);
      threads = l.workers;
    }
    // Threads waiting for a request are cancelled; busy ones finish their request first.
    for (pthread_t t : threads) pthread_cancel(t);
    for (pthread_t t : threads) pthread_join(t, nullptr);
    pthread_join(dog, nullptr);
    SHIM_LOG_INFO("request loop: {} threads, {} stalls over {} us", threads.size(), l.stalls,
                  l.tick.count());
    rv = l.error;
  }
  ::sem_destroy(&l.finish);
  return rv;
}

unsigned request_threads(const Options& opts) {
  if (opts.singlethread) return 1;
  return opts.max_threads ? opts.max_threads : 10;
}

// Multi-threaded by default: on NFS each request waits for the server, and one thread
// would serialize every caller. The adaptive loop (loop.h) keeps one hot thread while
// requests are quick; libfuse's loop (stall_us=0, clone_fd, max_idle_threads) hands each
// request to another idle thread.
int run_loop(fuse_session* se, const Options& opts) {
  if (opts.singlethread) return fuse_session_loop(se);
  if (opts.stall_us && !opts.clone_fd && !opts.max_idle_threads)
    return run_adaptive_loop(se, request_threads(opts), opts.stall_us, opts.spin_us);
#if FUSE_USE_VERSION >= 312
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, opts.clone_fd);
  if (opts.max_idle_threads) fuse_loop_cfg_set_idle_threads(cfg, opts.max_idle_threads);
  if (opts.max_threads) fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
  int rv = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  return rv;
#else
  fuse_loop_config cfg{};
  cfg.clone_fd = opts.clone_fd;
  cfg.max_idle_threads = opts.max_idle_threads ? opts.max_idle_threads : 10;
  return fuse_session_loop_mt(se, &cfg);
#endif
}

}  // namespace nfsshim::fuse
