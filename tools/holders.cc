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

// Marks KEYS held by PID's descriptors. False (with ERR) if they cannot be listed.
static bool scan_fds(int piddir, pid_t pid, const std::vector<InodeKey>& keys, HolderScan* out, int* err) {
  int fdd = ::openat(piddir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fdd < 0) {
    *err = errno;
    return false;
  }
  DIR* d = ::fdopendir(fdd);
  if (!d) {
    *err = errno;
    ::close(fdd);
    return false;
  }
  while (struct dirent* de = ::readdir(d)) {
    if (!all_digits(de->d_name)) continue;
    struct stat st;
    // Follows the magic link: the file the descriptor refers to.
    if (::fstatat(fdd, de->d_name, &st, 0) != 0) {
      if (errno == ENOENT) continue;  // closed meanwhile
      *err = errno;  // e.g. EACCES: a process we may not inspect
      ::closedir(d);
      return false;
    }
    for (size_t i = 0; i < keys.size(); ++i)
      if (st.st_dev == keys[i].dev && st.st_ino == keys[i].ino && !out->holder[i]) out->holder[i] = pid;
  }
  ::closedir(d);
  return true;
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
  std::string maps;
  while (struct dirent* de = ::readdir(pd)) {
    if (!all_digits(de->d_name)) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(de->d_name));
    int err = 0;
    int piddir = ::openat(::dirfd(pd), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0) {
      // ENOENT/ESRCH: exited. Anything else (EPERM under hidepid, EACCES) is a process
      // that may hold the file for all we know.
      err = errno;
      if (err != ENOENT && err != ESRCH && out.complete) {
        out.complete = false;
        out.incomplete_why = "cannot inspect process " + std::to_string(pid) + ": " + std::strerror(err);
      }
      continue;
    }
    bool ok = scan_fds(piddir, pid, keys, &out, &err);
    if (ok) {
      ok = read_all(piddir, "maps", &maps, &err);
      if (ok) {
        std::vector<Refs> refs(keys.size());
        parse_maps(maps.data(), maps.size(), keys, &refs);
        for (size_t i = 0; i < keys.size(); ++i)
          if (!refs[i].maps.empty() && !out.holder[i]) out.holder[i] = pid;
      }
    }
    // Kernel threads and zombies (empty cmdline) hold no files, readable or not.
    std::string cmdline;
    int ignored = 0;
    if (!ok && read_all(piddir, "cmdline", &cmdline, &ignored) && cmdline.empty()) ok = true;
    ::close(piddir);
    // ENOENT/ESRCH: the process exited while we looked; it holds nothing now.
    if (!ok && err != ENOENT && err != ESRCH && out.complete) {
      out.complete = false;
      out.incomplete_why = "cannot inspect process " + std::to_string(pid) + ": " + std::strerror(err);
    }
  }
  ::closedir(pd);
  return out;
}

}  // namespace nfsshim::tools
