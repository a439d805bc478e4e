// doctor: what the kernel and the system offer (preserve-unlinked, io_uring, FUSE).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doctor.h"

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425  // the same number on every architecture (Linux 5.1)
#endif

namespace nfsshim::tools {

namespace {

std::string read_small(const char* path) {
  char buf[256];
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return "";
  buf[n] = '\0';
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Tries to create a one-entry ring. "" if that works, else why not.
std::string io_uring_probe() {
  // struct io_uring_params is 120 bytes; zeroed means "no flags". Not taken from
  // <linux/io_uring.h>, which RHEL 8's headers lack.
  alignas(8) unsigned char params[120] = {};
  long fd = ::syscall(SYS_io_uring_setup, 1, params);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    return "";
  }
  return std::strerror(errno);
}

bool in_path(const char* prog) {
  const char* env = std::getenv("PATH");
  std::string path = std::string(env ? env : "") + ":/usr/bin:/bin:/usr/sbin:/sbin";
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find(':', pos);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(pos, end - pos);
    if (!dir.empty() && ::access((dir + "/" + prog).c_str(), X_OK) == 0) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

void check_host(Doctor* d) {
  Section& k = d->section("kernel");
  struct utsname u;
  ::uname(&u);
  k.add("release", u.release);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  bool preserve = major > 5 || (major == 5 && minor >= 18);
  k.add_bool("preserve_unlinked_client", preserve);
  if (!preserve && d->nfs)
    d->notes.push_back(std::string("kernel ") + u.release +
                       " is older than 5.18: the NFS client always silly-renames unlinked open files "
                       "(RHEL 8.7 and 9.1 carry the 5.18 change; it also needs NFSv4.1 and a server that sets the flag)");

  Section& r = d->section("io_uring");
  std::string disabled = read_small("/proc/sys/kernel/io_uring_disabled");
  r.add("io_uring_disabled", disabled.empty() ? "absent" : disabled);
  std::string why = io_uring_probe();
  r.add_bool("available", why.empty());
  if (!why.empty()) {
    r.add("error", why);
    d->notes.push_back("io_uring unavailable (" + why + "): the FUSE daemon will use its epoll loop");
  }

  Section& f = d->section("fuse");
  struct stat st;
  bool dev = ::stat("/dev/fuse", &st) == 0 && S_ISCHR(st.st_mode);
  bool usable = dev && ::access("/dev/fuse", R_OK | W_OK) == 0;
  bool fusermount = in_path("fusermount3");
  f.add_bool("dev_fuse", dev);
  f.add_bool("dev_fuse_usable", usable);
  f.add_bool("fusermount3", fusermount);
  if (!usable || !fusermount)
    d->notes.push_back(std::string("the FUSE overlay cannot run here (") +
                       (!dev ? "no /dev/fuse" : !usable ? "/dev/fuse not accessible" : "no fusermount3") +
                       "): use the preload");

  Section& s = d->section("stats");
  s.add("stats_dir", d->cfg.stats_dir);
  bool exists = ::stat(d->cfg.stats_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  s.add_bool("exists", exists);
  if (exists) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    s.add("mode", mode);
  }
  if (!exists || (st.st_mode & 07777) != 01777)
    d->notes.push_back("stats directory '" + d->cfg.stats_dir +
                       "' missing or not mode 1777: processes of users that cannot create it keep their "
                       "counters private ('nfsshim stat' will not see them); see nfsshim.conf(5)");
}

}  // namespace nfsshim::tools
