#include "nfsshim/stats_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "nfsshim/identity.h"
#include "nfsshim/sys.h"

namespace nfsshim {

// The file is read by other processes, so Counters must be plain uint64 words.
static_assert(std::is_standard_layout<Counters>::value, "Counters is mapped into a file");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "counters must be lock-free atomics");
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "counter words are 8 bytes");
static_assert(sizeof(StatsHeader) == 72, "StatsHeader is a file format: change kStatsVersion");
static_assert(kCounterCount == 11, "a counter was added to metrics.h: add it to kCounterInfo");

const CounterInfo kCounterInfo[kCounterCount] = {
    {"buried", "Files moved into a graveyard.", false, &Counters::buried},
    {"removed_last_ref", "Graveyard entries removed when their last reference went.", false,
     &Counters::removed_last_ref},
    {"removed_at_once", "Buried but unreferenced files removed at once (mode=all).", false,
     &Counters::removed_at_once},
    {"reaped_dead", "Graveyard entries of dead owners removed.", false, &Counters::reaped_dead},
    {"swept", "Silly-rename leftovers moved aside so that rmdir could succeed.", false,
     &Counters::swept},
    {"fallbacks", "Plain calls made because the graveyard could not be used.", false,
     &Counters::fallbacks},
    {"scans", "Reference scans of /proc.", false, &Counters::scans},
    {"tracked_fds", "Descriptors currently known to hold buried files.", true,
     &Counters::tracked_fds},
    {"tracked_maps", "Mappings currently known to hold buried files.", true,
     &Counters::tracked_maps},
    {"live_entries", "Graveyard entries the process owns right now.", true,
     &Counters::live_entries},
    {"errors", "Errors (graveyard unusable, failed removals).", false, &Counters::errors},
};

const char* to_string(StatsKind k) {
  switch (k) {
    case StatsKind::preload: return "preload";
    case StatsKind::fuse: return "fuse";
  }
  return "unknown";
}

namespace {

// Counters start private (constant-initialized, so usable before any constructor)
// and move into the mapping when published.
Counters g_private;
std::atomic<Counters*> g_live{&g_private};

// What was published. Changed only at init, in a fork child and at exit, when no
// other thread of this process runs our code.
struct Published {
  StatsLayout* map = nullptr;
  StatsKind kind = StatsKind::preload;
  pid_t pid = 0;
  char dir[512] = {};
  char path[600] = {};
};
Published g_pub;

// Raw syscalls: inside the preload, libc's mmap/munmap are our own wrappers.
void* raw_mmap(size_t len, int prot, int fd) {
  long rv = ::syscall(SYS_mmap, nullptr, len, prot, MAP_SHARED, fd, 0L);
  return rv == -1 ? MAP_FAILED : reinterpret_cast<void*>(rv);
}
void raw_munmap(void* addr, size_t len) { ::syscall(SYS_munmap, addr, len); }
// Writes LEN zero bytes from offset 0: the file gets its blocks now. ftruncate alone leaves
// a hole, and on a full filesystem the first store into the mapped page is a SIGBUS.
int raw_fill_zeros(int fd, size_t len) {
  static const char zeros[512] = {};
  for (size_t done = 0; done < len;) {
    long n = ::syscall(SYS_pwrite64, fd, zeros, std::min(sizeof zeros, len - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? -errno : -ENOSPC;
    done += static_cast<size_t>(n);
  }
  return 0;
}
pid_t raw_getpid() { return static_cast<pid_t>(::syscall(SYS_getpid)); }

void copy_counters(const Counters& from, Counters* to) {
  for (const auto& c : kCounterInfo)
    (to->*c.member).store((from.*c.member).load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void remove_at_exit() {
  // Only the process that published removes the file (a fork child that did not
  // re-publish still has the parent's record).
  if (g_pub.map && g_pub.pid == raw_getpid()) sys::unlinkat(AT_FDCWD, g_pub.path, 0);
}

int fail(std::string* why, const char* what, const char* where, int rv) {
  if (why) *why = std::string(what) + " '" + where + "': " + std::strerror(-rv);
  return rv;
}

// Removes this process's own <pid>-<hex>.stats files (same owner, pid and start time): one
// published by its image before an exec, which no atexit removed and which readers would
// take for the live one. Only the second form: <pid>.stats map_file replaces anyway.
void remove_own_fallbacks(int dirfd, pid_t pid, uint64_t start) {
  char prefix[16];
  int plen = std::snprintf(prefix, sizeof prefix, "%d-", static_cast<int>(pid));
  sys::Fd d(sys::openat(dirfd, ".", O_RDONLY | O_DIRECTORY));  // its own offset
  if (!d.valid()) return;
  sys::for_each_name(d.get(), [&](const char* name) {
    if (std::strncmp(name, prefix, plen) != 0 || !is_stats_file_name(name)) return true;
    sys::Fd fd(sys::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
    struct stat st;
    StatsHeader h;
    if (fd.valid() && sys::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
        ::pread(fd.get(), &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && h.pid == pid && h.start == start)
      sys::unlinkat(dirfd, name, 0);
    return true;
  });
}

// Creates DIRFD/<pid>.stats, or a fallback name, maps it and switches the live counters to it.
int map_file(StatsKind kind, int dirfd, std::string* why) {
  pid_t pid = raw_getpid();
  uint64_t start = process_start_time(pid);
  if (start == 0) return fail(why, "cannot read the start time of pid", std::to_string(pid).c_str(), -ENOENT);
  char name[32];
  std::snprintf(name, sizeof name, "%d.stats", static_cast<int>(pid));
  std::snprintf(g_pub.path, sizeof g_pub.path, "%s/%s", g_pub.dir, name);
  // A file with our pid is stale: an earlier process's, or our own from before exec.
  // O_EXCL after that: never write through a name someone else planted.
  sys::unlinkat(dirfd, name, 0);
  sys::Fd fd(sys::openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  // Still there: another user's in the sticky directory (planted for future pids, so
  // that those processes would not publish). A name nobody can guess instead.
  if (fd.get() == -EEXIST) remove_own_fallbacks(dirfd, pid, start);
  for (int i = 0; fd.get() == -EEXIST && i < 3; ++i) {
    uint32_t r = 0;
    if (::syscall(SYS_getrandom, &r, sizeof r, 0) != static_cast<long>(sizeof r)) break;
    std::snprintf(name, sizeof name, "%d-%08x.stats", static_cast<int>(pid), r);
    std::snprintf(g_pub.path, sizeof g_pub.path, "%s/%s", g_pub.dir, name);
    fd = sys::Fd(sys::openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  }
  if (!fd.valid()) return fail(why, "cannot create", g_pub.path, fd.get());
  int rv = raw_fill_zeros(fd.get(), sizeof(StatsLayout));
  if (rv < 0) {
    sys::unlinkat(dirfd, name, 0);
    return fail(why, "cannot size", g_pub.path, rv);
  }
  void* p = raw_mmap(sizeof(StatsLayout), PROT_READ | PROT_WRITE, fd.get());
  if (p == MAP_FAILED) {
    sys::unlinkat(dirfd, name, 0);
    return fail(why, "cannot map", g_pub.path, -errno);
  }
  auto* map = static_cast<StatsLayout*>(p);
  StatsHeader& h = map->header;
  h.version = kStatsVersion;
  h.header_size = sizeof(StatsHeader);
  h.counter_count = kCounterCount;
  h.kind = static_cast<uint32_t>(kind);
  h.pid = pid;
  h.start = start;
  const char* prog = program_invocation_short_name;
  std::strncpy(h.name, prog ? prog : "", sizeof h.name - 1);
  Counters* live = new (&map->counters) Counters;
  copy_counters(*g_live.load(std::memory_order_acquire), live);
  // The magic goes in last: a reader never takes a half-written header for valid.
  // Readers are other processes reading the file, so only the compiler's order matters
  // (x86 and the kernel's page cache keep store order); TSan also rejects thread fences.
  std::atomic_signal_fence(std::memory_order_release);
  std::memcpy(h.magic, kStatsMagic, sizeof h.magic);
  g_live.store(live, std::memory_order_release);
  g_pub.map = map;
  g_pub.kind = kind;
  g_pub.pid = pid;
  static bool registered = false;
  if (!registered) registered = std::atexit(remove_at_exit) == 0;
  return 0;
}

}  // namespace

Counters& counters() { return *g_live.load(std::memory_order_acquire); }

int publish_counters(StatsKind kind, const std::string& dir, std::string* why) {
  if (g_pub.map) return 0;
  if (dir.empty() || dir[0] != '/' || dir.size() >= sizeof g_pub.dir)
    return fail(why, "unusable stats directory", dir.c_str(), -EINVAL);
  int rv = sys::mkdirat(AT_FDCWD, dir.c_str(), 01777);
  bool created = rv == 0;
  if (rv < 0 && rv != -EEXIST) return fail(why, "cannot create", dir.c_str(), rv);
  sys::Fd d(sys::openat(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (!d.valid()) return fail(why, "cannot open", dir.c_str(), d.get());
  // mkdir honours the umask; every user's processes publish here.
  if (created) sys::fchmod(d.get(), 01777);
  std::strcpy(g_pub.dir, dir.c_str());
  return map_file(kind, d.get(), why);
}

int republish_counters_after_fork() {
  if (!g_pub.map) return 0;
  // Never count into the parent's file: go private first, then publish our own.
  copy_counters(g_pub.map->counters, &g_private);
  g_live.store(&g_private, std::memory_order_release);
  raw_munmap(g_pub.map, sizeof(StatsLayout));
  g_pub.map = nullptr;
  sys::Fd d(sys::openat(AT_FDCWD, g_pub.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (!d.valid()) return d.get();
  return map_file(g_pub.kind, d.get(), nullptr);
}

std::string published_stats_path() { return g_pub.map ? std::string(g_pub.path) : std::string(); }

bool is_stats_file_name(const char* name) {
  // No leading 0: "04884.stats" beside "4884.stats" would show process 4884 twice.
  if (name[0] < '1' || name[0] > '9') return false;
  const char* p = name;
  while (*p >= '0' && *p <= '9') ++p;
  if (p - name > 10) return false;
  if (*p == '-') {  // <pid>-<8 hex>.stats: map_file's name when <pid>.stats was taken
    const char* h = ++p;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) ++p;
    if (p - h != 8) return false;
  }
  return std::strcmp(p, ".stats") == 0;
}

// The uid that owns /proc/PID: the process's (effective) user.
static bool proc_owner(pid_t pid, const char* proc, uid_t* uid) {
  char path[64];
  std::snprintf(path, sizeof path, "%s/%d", proc, static_cast<int>(pid));
  struct stat st;
  if (sys::fstatat(AT_FDCWD, path, &st, 0) != 0) return false;
  *uid = st.st_uid;
  return true;
}

int read_stats_file(int dirfd, const char* name, StatsSnapshot* out, const char* proc) {
  if (!is_stats_file_name(name)) return -EINVAL;
  sys::Fd fd(sys::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return fd.get();
  struct stat st;
  int rv = sys::fstat(fd.get(), &st);
  if (rv < 0) return rv;
  if (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(StatsLayout))) return -EINVAL;
  // Read, not mapped: the directory is shared (1777) and a file's owner may truncate it
  // after the fstat; a mapping would then kill us (gc runs as root, daily) with SIGBUS at
  // the first access. A short read is such a file: invalid. The kernel copies the bytes
  // without atomic loads, so a counter being incremented meanwhile may, rarely, read torn;
  // the counters are shown, nothing is decided on them.
  alignas(StatsLayout) unsigned char buf[sizeof(StatsLayout)];
  ssize_t n;
  do {
    n = ::pread(fd.get(), buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  if (static_cast<size_t>(n) != sizeof buf) return -EINVAL;
  const auto* l = reinterpret_cast<const StatsLayout*>(buf);
  StatsHeader h;
  std::memcpy(&h, &l->header, sizeof h);
  bool valid = std::memcmp(h.magic, kStatsMagic, sizeof h.magic) == 0 &&
               h.version == kStatsVersion && h.header_size == sizeof(StatsHeader) &&
               h.counter_count == kCounterCount &&
               (h.kind == static_cast<uint32_t>(StatsKind::preload) ||
                h.kind == static_cast<uint32_t>(StatsKind::fuse)) &&
               h.pid > 0 && std::strtol(name, nullptr, 10) == h.pid;
  if (valid)
    for (size_t i = 0; i < kCounterCount; ++i)
      out->values[i] = (l->counters.*kCounterInfo[i].member).load(std::memory_order_relaxed);
  if (!valid) return -EINVAL;
  h.name[sizeof h.name - 1] = '\0';
  out->kind = static_cast<StatsKind>(h.kind);
  out->pid = h.pid;
  out->start = h.start;
  out->name = h.name;
  out->file = name;
  if (!process_alive(h.pid, h.start, proc)) return -ESRCH;
  // In a sticky shared directory anyone may create a file named for another user's
  // pid: believe only files made by that process's user (or root).
  uid_t owner;
  if (!proc_owner(h.pid, proc, &owner)) return -ESRCH;
  if (st.st_uid != 0 && st.st_uid != owner) return -EPERM;
  return 0;
}

std::vector<StatsSnapshot> read_stats_dir(const std::string& dir, const char* proc) {
  std::vector<StatsSnapshot> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* de = ::readdir(d)) {
    StatsSnapshot s;
    if (is_stats_file_name(de->d_name) && read_stats_file(::dirfd(d), de->d_name, &s, proc) == 0)
      out.push_back(std::move(s));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const StatsSnapshot& a, const StatsSnapshot& b) { return a.pid < b.pid; });
  // One row per process (a process publishes one file; a copy its user made is not
  // another process).
  out.erase(std::unique(out.begin(), out.end(),
                        [](const StatsSnapshot& a, const StatsSnapshot& b) { return a.pid == b.pid; }),
            out.end());
  return out;
}

}  // namespace nfsshim
