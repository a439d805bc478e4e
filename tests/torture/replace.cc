// `torture_driver replace`: one writer replaces DIR/f by rename(2) in a tight loop (write
// f.tmp, rename over f) while READERS threads open f, read it whole and close it. The name
// always exists, so every open must succeed and read one whole, verifying version:
// ENOENT, ESTALE or any other error, a short read or a bad byte is a failure.
// Regression test of README.md "Found and fixed: ESTALE from open of a file replaced by
// rename": through nfsshim-fuse over the NFS engine such opens got ESTALE twice in a row.
#include "replace.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "common.h"
#include "pattern.h"

namespace torture {
namespace {

constexpr size_t kSize = 8192;

struct Tally {
  std::atomic<uint64_t> replaces{0}, reads{0}, bad{0};
  std::atomic<int> shown{0};
  void fail(const char* what, const std::string& path, int err) {
    ++bad;
    if (shown++ < 10)
      std::fprintf(stderr, "torture[%d]: replace: %s %s: %s\n", getpid(), what, path.c_str(),
                   err ? std::strerror(err) : "short read or bad bytes");
  }
};

bool write_version(const std::string& path, uint64_t id, Tally* t) {
  std::vector<uint8_t> buf(kSize);
  fill(id, 0, buf.data(), buf.size());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    t->fail("open", path, errno);
    return false;
  }
  ssize_t w = ::write(fd, buf.data(), buf.size());
  int err = errno;
  ::close(fd);
  if (w != static_cast<ssize_t>(kSize)) {
    t->fail("write", path, w < 0 ? err : 0);
    return false;
  }
  return true;
}

void reader(const std::string& f, double end, Tally* t) {
  std::vector<uint8_t> buf(kSize + 1);
  while (now_s() < end) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      t->fail("open", f, errno);
      continue;
    }
    ssize_t r = ::pread(fd, buf.data(), buf.size(), 0);
    int err = errno;
    ::close(fd);
    uint64_t id = 0;
    if (r < 0) {
      t->fail("pread", f, err);
    } else if (r != static_cast<ssize_t>(kSize) || !parse_header(buf.data(), &id) ||
               good_prefix(id, 0, buf.data(), kSize) != kSize) {
      t->fail("read", f, 0);
    } else {
      ++t->reads;
    }
  }
}

}  // namespace

int run_replace(const std::string& dir, double seconds, int readers) {
  Tally t;
  const std::string f = dir + "/f", tmp = dir + "/f.tmp";
  uint64_t id = (static_cast<uint64_t>(getpid()) << 32) + 1;
  if (!write_version(f, id, &t)) return 1;
  const double end = now_s() + seconds;
  std::vector<std::thread> th;
  for (int i = 0; i < readers; ++i) th.emplace_back(reader, f, end, &t);
  while (now_s() < end) {
    if (!write_version(tmp, ++id, &t)) continue;
    if (::rename(tmp.c_str(), f.c_str()) != 0) t.fail("rename", tmp, errno);
    else ++t.replaces;
  }
  for (auto& x : th) x.join();
  std::printf("replace %s: %llu replaces, %llu whole reads, %llu failures\n", f.c_str(),
              static_cast<unsigned long long>(t.replaces.load()), static_cast<unsigned long long>(t.reads.load()),
              static_cast<unsigned long long>(t.bad.load()));
  ::unlink(f.c_str());
  return t.bad == 0 && t.replaces > 0 && t.reads > 0 ? 0 : 1;
}

}  // namespace torture
