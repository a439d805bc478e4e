#include "holders.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

HolderScan scan_holders(const std::vector<InodeKey>& keys, const char* proc) {
  HolderScan out;
  out.holder.assign(keys.size(), 0);
  DIR* pd = ::opendir(proc);
  if (!pd) {
    out.complete = false;
    out.incomplete_why = std::string("cannot list ") + proc + ": " + std::strerror(errno);
    return out;
  }
  std::string maps;
  while (struct dirent* de = ::readdir(pd)) {
    if (!all_digits(de->d_name)) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(de->d_name));
    int piddir = ::openat(::dirfd(pd), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0) continue;  // exited
    int err = 0;
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
