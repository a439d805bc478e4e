#include "sigbus_report.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace torture {
namespace {

// Only async-signal-safe calls below (open, read, write, stat, close): no stdio, no malloc.
char g_maps[1 << 20];  // /proc/self/maps of a worker is a few KiB

struct Out {
  char buf[1024];
  size_t n = 0;
  void s(const char* p) {
    while (*p && n < sizeof buf - 1) buf[n++] = *p++;
  }
  void num(uint64_t v, unsigned base) {
    char t[24];
    int i = 0;
    do t[i++] = "0123456789abcdef"[v % base]; while ((v /= base) && i < 24);
    if (base == 16) s("0x");
    while (i && n < sizeof buf - 1) buf[n++] = t[--i];
  }
  void flush() { (void)!::write(2, buf, n); n = 0; }
};

uint64_t parse_hex(const char** p) {
  uint64_t v = 0;
  for (;; ++*p) {
    char c = **p;
    if (c >= '0' && c <= '9') v = v * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else return v;
  }
}

void on_sigbus(int, siginfo_t* si, void*) {
  int saved = errno;
  uint64_t addr = reinterpret_cast<uintptr_t>(si->si_addr);
  Out o;
  o.s("torture[");
  o.num(static_cast<uint64_t>(::getpid()), 10);
  o.s("]: SIGBUS at ");
  o.num(addr, 16);
  o.s(" code ");
  o.num(static_cast<uint64_t>(si->si_code), 10);
  o.s(si->si_code == BUS_ADRERR ? " (BUS_ADRERR: page-in failed or past the size)" : "");
  // When (UTC time of day, ms), to be matched with the daemon's log.
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t ms = static_cast<uint64_t>(ts.tv_sec % 86400) * 1000 + static_cast<uint64_t>(ts.tv_nsec / 1000000);
  auto two = [&o](uint64_t v) {
    if (v < 10) o.s("0");
    o.num(v, 10);
  };
  o.s(" at ");
  two(ms / 3600000);
  o.s(":");
  two(ms / 60000 % 60);
  o.s(":");
  two(ms / 1000 % 60);
  o.s(".");
  if (ms % 1000 < 100) o.s("0");
  two(ms % 1000);
  o.s(" UTC\n");
  o.flush();
  size_t len = 0;
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r;
    while (len < sizeof g_maps - 1 && (r = ::read(fd, g_maps + len, sizeof g_maps - 1 - len)) > 0)
      len += static_cast<size_t>(r);
    ::close(fd);
  }
  g_maps[len] = 0;
  for (char* line = g_maps; *line;) {
    char* end = std::strchr(line, '\n');
    if (end) *end = 0;
    const char* p = line;
    uint64_t lo = parse_hex(&p);
    ++p;
    uint64_t hi = parse_hex(&p);
    if (addr >= lo && addr < hi) {
      // "lo-hi perms offset dev inode   path"
      p = std::strchr(p + 1, ' ');
      uint64_t off = p ? (++p, parse_hex(&p)) : 0;
      const char* path = std::strchr(line, '/');
      o.s("  mapping: ");
      o.s(line);
      o.s("\n  file offset ");
      o.num(addr - lo + off, 10);
      o.s(", mapping length ");
      o.num(hi - lo, 10);
      struct stat st;
      if (path && ::stat(path, &st) == 0) {
        o.s(", file size now ");
        o.num(static_cast<uint64_t>(st.st_size), 10);
      } else {
        o.s(", stat of the path failed");
      }
      o.s("\n");
      o.flush();
      break;
    }
    if (!end) break;
    line = end + 1;
  }
  errno = saved;
  // The process dies of it as it would without us (SA_RESETHAND made the action the
  // default): not by returning, since the fault may not repeat (a size the kernel was late
  // with has caught up meanwhile) and the SIGBUS would go uncounted.
  ::kill(::getpid(), SIGBUS);
}

}  // namespace

void install_sigbus_report() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace torture
