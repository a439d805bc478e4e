// The adaptive request loop: one hot thread while requests are quick, more threads as soon
// as one stalls.
//
// Why: the kernel wakes the thread that has waited longest in read(/dev/fuse). With
// libfuse's multi-threaded loop every idle thread waits there, so a caller doing one
// request after another (create, stat, unlink in a loop) meets a different, cold thread
// each time, usually on the other CPU; on a small VM that cost 1.3-2x per request against
// one thread (fusefs/README.md). One thread alone would serialize every caller behind a
// slow request (an NFS round trip, an fsync).
//
// How: normally exactly one thread reads requests. It processes what it read itself and
// goes back to reading; threads that find another thread already reading park. A watchdog
// thread ticks every STALL_US while requests come (it sleeps when they stop): if requests
// are running, nobody reads and no request was taken for a whole tick, it wakes a parked
// thread (or starts one, up to MAX_THREADS) to read the next requests. A request stuck in
// the backing filesystem thus delays the others by at most about two ticks after a quiet
// time or slow requests, eight amid a flow of quick ones (then it ticks 4 times slower), nine while
// another thread reads beside running requests (8 times slower). That is the Go
// runtime's answer to blocking system calls (sysmon hands the processor to another thread
// after 20 us to 10 ms), applied to FUSE requests. A timer armed per request (timerfd) cost
// 4 us per request on the test VM (~15% of a FUSE round trip); the tick costs one wake-up
// per STALL_US while requests come and nothing per request.
//
// Between requests the reading thread spins for up to SPIN_US (non-blocking reads, with
// sched_yield) while its caller keeps it busy: a thread woken from sleep on another CPU is
// the dearest part of a FUSE round trip on a small VM (10000 creates: about 1.7-2x faster
// with 50 us, fusefs/README.md). One spin in vain turns it off until a request again comes
// within SPIN_US of the last, so an idle mount sleeps and a sparse caller costs nothing.
#pragma once

#include "fuse_api.h"
#include "options.h"

namespace nfsshim::fuse {

// The most request threads OPTS allow (-s: 1; max_threads, default 10). libfuse's own loop
// before 3.12 has no such bound; then this is what the adaptive loop would use.
unsigned request_threads(const Options& opts);

// Serves SE with the loop OPTS choose (-s: one thread; stall_us: the adaptive loop below;
// clone_fd, max_idle_threads or stall_us=0: libfuse's multi-threaded loop). Returns what
// the loop returns (0, or the signal that ended it, or -errno).
int run_loop(fuse_session* se, const Options& opts);

// Serves SE until the session exits (unmount, or a signal through libfuse's handlers).
// Returns 0, or -errno if no thread could be started.
// SPIN_US 0: the reader always sleeps in read(/dev/fuse).
int run_adaptive_loop(fuse_session* se, unsigned max_threads, unsigned stall_us,
                      unsigned spin_us);

// Called by a request that has replied and goes on working (write-behind sends its WRITE
// after the reply): another thread reads the next requests now, not a stall tick later. A
// no-op outside the adaptive loop.
void request_goes_on();

// Serves the first request of a new mount, INIT (0 or -errno). The kernel sets the mount's
// readahead from the INIT reply, so a larger readahead can only be set after it.
int serve_init(fuse_session* se);

}  // namespace nfsshim::fuse
