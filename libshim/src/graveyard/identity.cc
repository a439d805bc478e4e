#include "nfsshim/identity.h"

#include <unistd.h>

#include <cctype>
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

uint64_t process_start_time(pid_t pid, const char* proc) {
  char path[64];
  std::snprintf(path, sizeof path, "%s/%d/stat", proc, static_cast<int>(pid));
  char buf[1024];
  ssize_t n = sys::read_file(AT_FDCWD, path, buf, sizeof buf - 1);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // comm (field 2) may contain spaces and ')': fields resume after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  // After ')' come fields 3..: state is field 3, starttime is field 22.
  int field = 2;
  for (; *p && field < 22; ++p)
    if (*p == ' ') ++field;
  if (field != 22) return 0;
  return std::strtoull(p, nullptr, 10);
}

bool process_alive(pid_t pid, uint64_t start, const char* proc) {
  if (pid <= 0) return false;
  uint64_t s = process_start_time(pid, proc);
  return s != 0 && s == start;
}

Identity self_identity() {
  // Host and boot never change under a running process; pid and start time do after
  // fork, so they are read each time (this is only called on slow paths). No lock is
  // held while reading, so a fork from another thread cannot leave one behind.
  static const Identity machine = [] {
    Identity id;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    id.host = sanitize_host(host);
    char boot[64] = {};
    ssize_t n = sys::read_file(AT_FDCWD, "/proc/sys/kernel/random/boot_id", boot, sizeof boot - 1);
    for (ssize_t i = 0; i < n && id.boot.size() < 8; ++i)
      if (std::isxdigit(static_cast<unsigned char>(boot[i]))) id.boot.push_back(boot[i]);
    if (id.boot.empty()) id.boot = "0";
    return id;
  }();
  Identity id = machine;
  id.pid = static_cast<pid_t>(::syscall(SYS_getpid));
  id.start = process_start_time(id.pid);
  return id;
}

}  // namespace nfsshim
