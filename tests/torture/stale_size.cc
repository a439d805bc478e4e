// `torture_driver stale-size`: a file grows by appends (the writer keeps it open) while a
// reader maps it up to the size fstat reports and touches the last page, and another
// thread lists the directory (readdir: READDIRPLUS through FUSE, which carries sizes). A
// size the kernel learns that is older than appends it already saw shrinks the file under
// the mapping: SIGBUS (the process dies of it, with sigbus_report's details). Regression
// test of README.md "Found and fixed: SIGBUS on a mapping".
#include "stale_size.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "common.h"
#include "pattern.h"
#include "sigbus_report.h"

namespace torture {
namespace {

constexpr size_t kChunk = 4096;
constexpr off_t kMaxSize = 64 << 20;  // then the appends stop

std::atomic<off_t> g_written{0};  // appended and returned by pwrite (what a Kafka reader knows)
bool g_fstat = true;               // the mapper sizes its mapping by fstat, else by g_written
std::atomic<uint64_t> g_touches{0}, g_listings{0}, g_appends{0}, g_failures{0};

void fail(const char* what, const std::string& path, int err) {
  if (g_failures++ < 10) std::fprintf(stderr, "torture[%d]: stale-size: %s %s: %s\n", getpid(), what, path.c_str(),
                                      std::strerror(err));
}

void mapper(const std::string& path, double end) {
  long page = ::sysconf(_SC_PAGESIZE);
  while (now_s() < end) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT) fail("open", path, errno);
      continue;
    }
    for (int i = 0; i < 50 && now_s() < end; ++i) {
      struct stat st;
      if (::fstat(fd, &st) != 0) {
        fail("fstat", path, errno);
        break;
      }
      off_t size = g_fstat ? st.st_size : g_written.load();
      if (size < page) continue;
      size_t len = static_cast<size_t>(size);
      void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        fail("mmap", path, errno);
        break;
      }
      // The last byte fstat promised: a SIGBUS here if the kernel's size went back.
      volatile uint8_t b = static_cast<const uint8_t*>(m)[len - 1];
      (void)b;
      ::munmap(m, len);
      ++g_touches;
    }
    ::close(fd);
  }
}

void lister(const std::string& dir, double end) {
  while (now_s() < end) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      fail("opendir", dir, errno);
      continue;
    }
    // Appends go on between opendir and readdir (an application may take its time): the
    // sizes the listing carries must be of the readdir's time, not of the opendir's.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    while (::readdir(d)) {
    }
    ::closedir(d);
    ++g_listings;
  }
}

}  // namespace

int run_stale_size(const std::string& dir, double seconds, bool list, bool size_by_fstat) {
  install_sigbus_report();
  g_fstat = size_by_fstat;
  // Some neighbours, so that a listing takes more than one READDIRPLUS entry.
  for (int i = 0; i < 8; ++i) {
    std::string p = dir + "/n" + std::to_string(i);
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
  const std::string path = dir + "/growing";
  const double end = now_s() + seconds;
  std::vector<uint8_t> buf(kChunk);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail("open", path, errno);
    return 1;
  }
  std::thread m(mapper, path, end), l(lister, dir, list ? end : 0);
  const uint64_t id = 1;
  off_t size = 0;
  while (now_s() < end) {
    if (size >= kMaxSize) {  // big enough: the others go on (no truncation: that would SIGBUS)
      ::usleep(1000);
      continue;
    }
    fill(id, static_cast<uint64_t>(size), buf.data(), buf.size());
    ssize_t w = ::pwrite(fd, buf.data(), buf.size(), size);
    if (w != static_cast<ssize_t>(buf.size())) {
      fail("pwrite", path, w < 0 ? errno : EIO);
      break;
    }
    size += w;
    g_written = size;
    ++g_appends;
  }
  m.join();
  l.join();
  if (fd >= 0) ::close(fd);
  std::printf("stale-size %s: %llu appends, %llu mapped touches, %llu listings, %llu failures\n", path.c_str(),
              static_cast<unsigned long long>(g_appends.load()), static_cast<unsigned long long>(g_touches.load()),
              static_cast<unsigned long long>(g_listings.load()), static_cast<unsigned long long>(g_failures.load()));
  return g_failures == 0 && g_touches > 0 && (g_listings > 0 || !list) ? 0 : 1;
}

}  // namespace torture
