#include "holders.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nfsshim::tools {

static bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

static bool read_all(int dirfd, const char* name, std::string* out, int* err) {
  int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return false;
  }
  char buf[65536];
  out->clear();
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

static bool on_key_dev(dev_t dev, const std::vector<InodeKey>& keys) {
  for (const auto& k : keys)
    if (k.dev == dev) return true;
  return false;
}

// What the descriptor NAME in FDD (a /proc/PID/fd) refers to, by the attributes the kernel
// has (AT_STATX_DONT_SYNC): nothing is flushed and no NFS server or FUSE daemon is asked,
// so a hung one cannot hang gc. MASK 0 asks for st_dev alone. 0 or an errno.
static int cached_attrs(int fdd, const char* name, unsigned mask, struct statx* sx) {
  if (::statx(fdd, name, AT_STATX_DONT_SYNC, mask, sx) == 0) return 0;
  if (errno != ENOSYS) return errno;
  struct stat st;  // before Linux 4.11
  if (::fstatat(fdd, name, &st, 0) != 0) return errno;
  sx->stx_mask = STATX_BASIC_STATS;
  sx->stx_dev_major = major(st.st_dev);
  sx->stx_dev_minor = minor(st.st_dev);
  sx->stx_ino = st.st_ino;
  return 0;
}

// DIR/NAME opened for reading its entries, or null with *ERR.
static DIR* open_dir_at(int dir, const char* name, int* err) {
  int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    *err = errno;
    if (fd >= 0) ::close(fd);
  }
  return d;
}

// Marks KEYS held by the descriptors in DIR/fd as held by PID. 0, or the errno of a
// list that cannot be read or of a descriptor that may be one of KEYS but cannot be told.
static int scan_fds(int dir, pid_t pid, const std::vector<InodeKey>& keys, HolderScan* out) {
  int err = 0;
  DIR* d = open_dir_at(dir, "fd", &err);
  if (!d) return err;
  const int fdd = ::dirfd(d);
  while (struct dirent* de = ::readdir(d)) {
    if (!all_digits(de->d_name)) continue;
    struct statx sx;
    // Follows the magic link: the file the descriptor refers to.
    int e = cached_attrs(fdd, de->d_name, STATX_INO, &sx);
    if (e == ENOENT) continue;  // closed meanwhile
    if (e) {
      // A FUSE mount that gives other users no attributes (EACCES) still gives st_dev
      // to a request for none: a file on no candidate's device is none of ours. Any
      // other failure (EACCES of a process we may not inspect, ESTALE, EIO) proves
      // nothing: the descriptor might be one of KEYS.
      if (cached_attrs(fdd, de->d_name, 0, &sx) == 0 && !on_key_dev(makedev(sx.stx_dev_major, sx.stx_dev_minor), keys))
        continue;
      err = e;
      break;
    }
    const dev_t dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    if (!(sx.stx_mask & STATX_INO)) {
      if (!on_key_dev(dev, keys)) continue;
      err = EIO;  // no inode number on a candidate's device: cannot tell
      break;
    }
    for (size_t i = 0; i < keys.size(); ++i)
      if (dev == keys[i].dev && sx.stx_ino == keys[i].ino && !out->holder[i]) out->holder[i] = pid;
  }
  ::closedir(d);
  return err;
}

// Marks KEYS held by DIR's descriptors and mappings (DIR: /proc/PID or one of its
// /proc/PID/task/TID) as held by PID. 0 or an errno.
static int scan_task(int dir, pid_t pid, const std::vector<InodeKey>& keys, HolderScan* out) {
  int err = scan_fds(dir, pid, keys, out);
  std::string maps;
  if (err || !read_all(dir, "maps", &maps, &err)) return err;
  std::vector<Refs> refs(keys.size());
  parse_maps(maps.data(), maps.size(), keys, &refs);
  for (size_t i = 0; i < keys.size(); ++i)
    if (!refs[i].maps.empty() && !out->holder[i]) out->holder[i] = pid;
  return 0;
}

// Task flags as /proc/PID/stat shows them (include/linux/sched.h).
constexpr unsigned long kPfExiting = 0x4;
constexpr unsigned long kPfKthread = 0x00200000;

struct TaskState {
  char state = 0;
  unsigned long flags = 0;
};

// The state letter and flags in DIR/stat. 0 or an errno.
static int read_state(int dir, TaskState* ts) {
  std::string s;
  int err = 0;
  if (!read_all(dir, "stat", &s, &err)) return err;
  // "PID (COMM) STATE PPID PGRP SESSION TTY_NR TPGID FLAGS ...": COMM may hold ") ".
  size_t p = s.rfind(')');
  if (p == std::string::npos ||
      std::sscanf(s.c_str() + p + 1, " %c %*d %*d %*d %*d %*d %lu", &ts->state, &ts->flags) != 2)
    return EINVAL;
  return 0;
}

// No code of the task runs again: it is exiting or has exited (its fd table and memory
// may already be detached from it).
static bool exiting(const TaskState& ts) { return ts.state == 'Z' || ts.state == 'X' || (ts.flags & kPfExiting); }

// The leader of PID has exited (pthread_exit in main) or is exiting: its fd and maps read
// empty, while the other threads may still hold files through the descriptor table and
// memory they share. One thread that is still not exiting after it was read has shown
// them all, so one is read, not every task (a JVM has hundreds). 0 or an errno.
static int scan_threads(int piddir, pid_t pid, const std::vector<InodeKey>& keys, HolderScan* out) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int err = 0;
    DIR* d = open_dir_at(piddir, "task", &err);
    if (!d) return err;
    bool others = false, live = false;
    while (!live && !err) {
      struct dirent* de = ::readdir(d);
      if (!de) break;
      if (!all_digits(de->d_name) || std::atoi(de->d_name) == pid) continue;
      others = true;
      int tdir = ::openat(::dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      int e = tdir < 0 ? errno : scan_task(tdir, pid, keys, out);
      TaskState ts;
      if (e == 0) e = read_state(tdir, &ts);
      live = e == 0 && !exiting(ts);
      if (e != ENOENT && e != ESRCH) err = e;  // else that thread is gone: the next
      if (tdir >= 0) ::close(tdir);
    }
    ::closedir(d);
    if (err || live || !others) return err;  // !others: a zombie holds nothing
    ::usleep(10000);  // all other threads exiting (or one just made): look again
  }
  return EAGAIN;
}

static bool has_cap_sys_ptrace() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  return data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE);
}

// A proc mounted with hidepid (other than off) hides other users' processes, or refuses
// them, to a caller without CAP_SYS_PTRACE: a scan that finds no holder there proves
// nothing. True (with WHY) if PROCFD is such a proc, or if its options cannot be read.
static bool proc_hides_processes(int procfd, const char* proc, std::string* why) {
  struct statfs sfs;
  struct stat st;
  if (::fstatfs(procfd, &sfs) != 0 || sfs.f_type != PROC_SUPER_MAGIC) return false;  // a tree of files
  if (has_cap_sys_ptrace()) return false;
  if (::fstat(procfd, &st) != 0) {
    *why = std::string("cannot stat ") + proc + ": " + std::strerror(errno);
    return true;
  }
  std::string info;
  int err = 0;
  if (!read_all(AT_FDCWD, "/proc/self/mountinfo", &info, &err)) {
    *why = std::string("cannot read /proc/self/mountinfo for the options of ") + proc + ": " + std::strerror(err);
    return true;
  }
  // "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS"; the
  // superblock's options (hidepid is one) are the same in every mount of it.
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  size_t pos = 0;
  while (pos < info.size()) {
    size_t end = info.find('\n', pos);
    if (end == std::string::npos) end = info.size();
    std::string line = info.substr(pos, end - pos);
    pos = end + 1;
    char id[32];
    size_t sep = line.find(" - proc ");
    if (std::sscanf(line.c_str(), "%*s %*s %31s", id) != 1 || dev != id || sep == std::string::npos) continue;
    size_t hp = line.find("hidepid=", line.find(' ', sep + 8));
    if (hp == std::string::npos) return false;
    std::string v = line.substr(hp + 8, line.find_first_of(", ", hp) - hp - 8);
    if (v == "0" || v == "off") return false;
    *why = std::string(proc) + " is mounted with hidepid=" + v +
           ": other users' processes cannot be inspected without CAP_SYS_PTRACE (run gc as root)";
    return true;
  }
  *why = std::string("cannot find the mount options of ") + proc + " in /proc/self/mountinfo";
  return true;
}

HolderScan scan_holders(const std::vector<InodeKey>& keys, const char* proc) {
  HolderScan out;
  out.holder.assign(keys.size(), 0);
  DIR* pd = ::opendir(proc);
  if (!pd) {
    out.complete = false;
    out.incomplete_why = std::string("cannot list ") + proc + ": " + std::strerror(errno);
    return out;
  }
  if (proc_hides_processes(::dirfd(pd), proc, &out.incomplete_why)) {
    out.complete = false;
    ::closedir(pd);
    return out;
  }
  while (struct dirent* de = ::readdir(pd)) {
    if (!all_digits(de->d_name)) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(de->d_name));
    int err = 0;
    int piddir = ::openat(::dirfd(pd), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0) {
      err = errno;  // EPERM under hidepid, EACCES: it may hold the file for all we know
    } else {
      err = scan_task(piddir, pid, keys, &out);
      // After the reading: a leader that is exiting or gone may have shown nothing of
      // what its other threads hold. (No stat at all: a tree of files, as in tests.)
      TaskState ts;
      int serr = read_state(piddir, &ts);
      if (serr == 0 && (ts.flags & kPfKthread)) err = 0;  // kernel threads hold no files
      else if (serr == 0 && exiting(ts)) err = scan_threads(piddir, pid, keys, &out);
      else if (err == 0 && serr != ENOENT && serr != ESRCH) err = serr;
      ::close(piddir);
    }
    // ENOENT/ESRCH: the process exited while we looked; it holds nothing now.
    if (err && err != ENOENT && err != ESRCH && out.complete) {
      out.complete = false;
      out.incomplete_why = "cannot inspect process " + std::to_string(pid) + ": " + std::strerror(err);
    }
  }
  ::closedir(pd);
  return out;
}

}  // namespace nfsshim::tools
