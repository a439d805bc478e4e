#include "nfsshim/identity.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nfsshim/sys.h"

namespace nfsshim {

std::string sanitize_host(const std::string& host) {
  std::string out;
  for (unsigned char c : host) {
    bool ok = (c > 0x20 && c < 0x7f && c != '~' && c != '/');
    out.push_back(ok ? static_cast<char>(c) : '_');
  }
  if (out.empty()) out = "unknown";
  return out;
}

std::string read_boot_id(const char* path) {
  char boot[64] = {};
  ssize_t n = sys::read_file(AT_FDCWD, path, boot, sizeof boot - 1);
  if (n < 8) return kUnknownBoot;
  for (int i = 0; i < 8; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(boot[i]))) return kUnknownBoot;
  return std::string(boot, 8);
}

uint64_t unshift_boottime(uint64_t ticks, int64_t offset_ns, uint64_t tick_ns) {
  if (offset_ns == 0 || tick_ns == 0) return ticks;
  // The kernel shows floor(((raw + offset) mod 2^64) / tick); undo it in nanoseconds,
  // modulo 2^64 as well, so that a negative offset (which can wrap) comes back too.
  uint64_t raw_ns = ticks * tick_ns - static_cast<uint64_t>(offset_ns);
  // Only an offset that is not a whole number of ticks, with a process started in the
  // first tick of boot, lands just below 0 here.
  if (raw_ns > static_cast<uint64_t>(INT64_MAX)) return 0;
  return raw_ns / tick_ns;
}

namespace {

// Nanoseconds per clock tick of /proc/PID/stat (USER_HZ).
uint64_t tick_ns() {
  static const uint64_t ns = [] {
    long hz = ::sysconf(_SC_CLK_TCK);
    return static_cast<uint64_t>(1000000000 / (hz > 0 ? hz : 100));
  }();
  return ns;
}

// Our time namespace's boottime offset in nanoseconds: /proc/self/timens_offsets, line
// "boottime <sec> <nsec>" (Linux 5.6; without the file, as on RHEL 8's 4.18: 0). 0 or
// -errno: a file that is there but cannot be read now (EMFILE at the descriptor limit)
// leaves every start time unknown rather than wrong. Read once per process: only a new
// process (fork) or a new image (exec) can be in another time namespace than before.
int boottime_offset_ns(int64_t* out) {
  static std::atomic<int64_t> offset{0};
  static std::atomic<pid_t> read_by{0};
  const pid_t me = static_cast<pid_t>(::syscall(SYS_getpid));
  if (read_by.load(std::memory_order_acquire) == me) {
    *out = offset.load(std::memory_order_relaxed);
    return 0;
  }
  int64_t ns = 0;
  char buf[256];
  ssize_t n = sys::read_file(AT_FDCWD, "/proc/self/timens_offsets", buf, sizeof buf - 1);
  if (n < 0 && n != -ENOENT) return static_cast<int>(n);
  if (n > 0) {
    buf[n] = '\0';
    long long sec = 0, nsec = 0;
    for (const char* line = buf; line; line = std::strchr(line, '\n')) {
      if (*line == '\n') ++line;
      if (std::sscanf(line, "boottime %lld %lld", &sec, &nsec) == 2) {
        ns = static_cast<int64_t>(sec) * 1000000000 + nsec;
        break;
      }
    }
  }
  offset.store(ns, std::memory_order_relaxed);
  read_by.store(me, std::memory_order_release);
  *out = ns;
  return 0;
}

// The start time of PID (clock ticks after boot) in *OUT; -ENOENT if there is no such
// process, another -errno if its stat could not be read or understood.
int read_start_time(pid_t pid, const char* proc, uint64_t* out) {
  char path[256];
  int w = std::snprintf(path, sizeof path, "%s/%d/stat", proc, static_cast<int>(pid));
  if (w < 0 || static_cast<size_t>(w) >= sizeof path) return -ENAMETOOLONG;
  char buf[1024];
  ssize_t n = sys::read_file(AT_FDCWD, path, buf, sizeof buf - 1);
  if (n < 0) return static_cast<int>(n);
  if (n == 0) return -ENOENT;  // a process that exited while we read
  buf[n] = '\0';
  // comm (field 2) may contain spaces and ')': fields resume after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return -EBADMSG;
  // After ')' come fields 3..: state is field 3, starttime is field 22.
  int field = 2;
  for (; *p && field < 22; ++p)
    if (*p == ' ') ++field;
  if (field != 22) return -EBADMSG;
  // Shown to us shifted by our own time namespace's boottime offset: take it off, so that
  // start times are compared as raw boot time whoever reads them.
  int64_t offset = 0;
  int rv = boottime_offset_ns(&offset);
  if (rv < 0) return rv == -ESRCH ? -EIO : rv;  // about us, not PID: never "no such process"
  *out = unshift_boottime(std::strtoull(p, nullptr, 10), offset, tick_ns());
  return 0;
}

// The calling process's pid namespace, "pid:[4026531836]" as hex, or "" if unreadable.
// Read at each call, not once: a child forked after unshare(CLONE_NEWPID) is in another
// one than its parent. A readlink, no descriptor: it works at the descriptor limit too.
std::string pid_namespace() {
  char ns[64] = {};
  ssize_t k = sys::readlinkat(AT_FDCWD, "/proc/self/ns/pid", ns, sizeof ns - 1);
  const char* digits = k > 0 ? std::strchr(ns, '[') : nullptr;
  if (!digits) return std::string();
  char* end = nullptr;
  unsigned long long ino = std::strtoull(digits + 1, &end, 10);
  char hex[32];
  if (!end || *end != ']' || ino == 0 || std::snprintf(hex, sizeof hex, "%llx", ino) <= 0) return std::string();
  return hex;
}

// True if PROC is a proc filesystem in which our own pid is our pid: there a pid names
// the process that kill(pid) reaches. Not a tree of files (tests), nor a proc of
// another pid namespace.
bool proc_of_our_pids(const char* proc) {
  struct statfs sf;
  if (sys::statfs(proc, &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC) return false;
  char path[256];
  int w = std::snprintf(path, sizeof path, "%s/self", proc);
  if (w < 0 || static_cast<size_t>(w) >= sizeof path) return false;
  char link[32] = {};
  ssize_t n = sys::readlinkat(AT_FDCWD, path, link, sizeof link - 1);
  return n > 0 && std::strtol(link, nullptr, 10) == static_cast<long>(::syscall(SYS_getpid));
}

}  // namespace

uint64_t process_start_time(pid_t pid, const char* proc) {
  uint64_t start = 0;
  return read_start_time(pid, proc, &start) == 0 ? start : 0;
}

bool process_alive(pid_t pid, uint64_t start, const char* proc) {
  if (pid <= 0) return false;
  uint64_t s = 0;
  int rv = read_start_time(pid, proc, &s);
  if (rv == -ENOENT || rv == -ESRCH) {
    // A proc mounted hidepid=2 or invisible hides a process we may not inspect (another
    // user's, or a non-dumpable one of ours) exactly as if it were gone. kill(pid, 0)
    // still finds it: 0 or EPERM, a process with that pid exists (its start time is
    // unknown to us, so it counts as the owner).
    if (!proc_of_our_pids(proc)) return false;
    int k = sys::kill(pid, 0);
    return k == 0 || k == -EPERM;
  }
  // Any other failure (EMFILE, EACCES, an odd stat line) says nothing about the owner: a
  // reap must never remove a live process's files on a doubt, so it counts as alive.
  if (rv < 0) return true;
  return s == start;
}

Identity self_identity() {
  // Host and boot never change under a running process; pid and start time do after
  // fork, so they are read each time (this is only called on slow paths). No lock is
  // held while reading, so a fork from another thread cannot leave one behind.
  // On the heap and never freed: threads may still bury while exit() runs destructors.
  static const Identity* const machine = [] {
    Identity* p = new Identity;
    Identity& id = *p;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    id.host = sanitize_host(host);
    id.boot = read_boot_id();
    return p;
  }();
  Identity id = *machine;
  id.pid = static_cast<pid_t>(::syscall(SYS_getpid));
  id.pidns = pid_namespace();
  // The start time is read once per pid (a fork gets its own): reading /proc can fail
  // later (EMFILE at the descriptor limit), and 0 is what then comes back. One word holds
  // both, pid in the low 22 bits (pid_max <= 2^22), so no reader pairs one pid with
  // another's start time.
  static std::atomic<uint64_t> cached{0};
  constexpr int kPidBits = 22;
  const uint64_t pid = static_cast<uint64_t>(id.pid);
  uint64_t c = cached.load(std::memory_order_relaxed);
  if (c != 0 && (c & ((1ull << kPidBits) - 1)) == pid) {
    id.start = c >> kPidBits;
  } else {
    id.start = process_start_time(id.pid);
    if (id.start != 0 && id.start < (1ull << (64 - kPidBits)) && pid < (1ull << kPidBits))
      cached.store((id.start << kPidBits) | pid, std::memory_order_relaxed);
  }
  return id;
}

}  // namespace nfsshim
