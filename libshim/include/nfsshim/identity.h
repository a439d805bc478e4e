// Who owns a graveyard entry: host, boot, pid namespace, process. A process is named by
// its pid and its start time (field 22 of /proc/PID/stat), so a recycled pid is never
// mistaken for the owner. Pids mean something only in their own pid namespace: a
// container sharing the host's name and kernel (Kubernetes hostNetwork pods) sees other
// processes under the same numbers, so its entries are judged like another host's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace nfsshim {

// The boot of an identity whose boot id could not be read (and of entries named so).
inline constexpr const char kUnknownBoot[] = "0";

struct Identity {
  std::string host;   // hostname, with characters unsafe in an entry name replaced
  // First 8 hex digits of /proc/sys/kernel/random/boot_id, or kUnknownBoot.
  std::string boot;
  // The pid namespace's inode (/proc/self/ns/pid), hex; empty if unknown (entries named
  // before 2026-12-04 carry none: judged as before, as if in ours).
  std::string pidns;
  pid_t pid = 0;
  // Process start time, clock ticks since boot: raw boot time, as in the host's time
  // namespace (/proc shows it shifted by the reader's time namespace; see below).
  uint64_t start = 0;

  // An unknown boot is nobody's: two hosts of one name without boot ids are not one boot.
  bool same_boot(const Identity& o) const {
    return host == o.host && boot == o.boot && !boot.empty() && boot != kUnknownBoot;
  }
  // Pids of O are ours to look up (same boot; the same pid namespace, or one unknown).
  bool same_pids(const Identity& o) const {
    return same_boot(o) && (pidns.empty() || o.pidns.empty() || pidns == o.pidns);
  }
  bool same_process(const Identity& o) const {
    return same_pids(o) && pid == o.pid && start == o.start;
  }
};

// The calling process. Cheap after the first call; recomputed when the pid changes
// (after fork).
Identity self_identity();

// Start time of PID (raw boot time), or 0 if there is no such process. `proc` is the
// /proc root (tests point it elsewhere).
uint64_t process_start_time(pid_t pid, const char* proc = "/proc");

// True if PID is alive and started at START. A process whose stat exists but cannot be
// read or understood counts as alive: a reap never removes files on a doubt. So does one
// that PROC hides (hidepid) but kill(PID, 0) finds, when PROC is our pid namespace's proc.
bool process_alive(pid_t pid, uint64_t start, const char* proc = "/proc");

// A start time as /proc/PID/stat shows it to a reader whose time namespace has boottime
// offset OFFSET_NS, back in raw boot time (ticks of TICK_NS nanoseconds). Exact when the
// offset is a whole number of ticks (unshare takes seconds); else it may be one tick early.
uint64_t unshift_boottime(uint64_t ticks, int64_t offset_ns, uint64_t tick_ns);

// The first 8 hex digits of the boot id in PATH, or kUnknownBoot if it cannot be read
// or does not start with 8 hex digits.
std::string read_boot_id(const char* path = "/proc/sys/kernel/random/boot_id");

// Hostname made safe for entry names: '~', '/', control and non-ASCII bytes become '_'.
std::string sanitize_host(const std::string& host);

}  // namespace nfsshim
