// fuse_chaos_io write|read FILE MIB THREADS SEED [FLAGS...]: the application side of
// fuse_nfs_chaos_test.sh. Every 8-byte word of FILE is a function of (SEED, offset), so a
// lost, stale or misplaced 1 MiB piece shows as bad bytes.
//   write FILE MIB THREADS SEED [PROGRESS_FLAG AT_MIB [AGAIN_UNTIL]]
//       THREADS pwrite 1 MiB chunks (the next unwritten one each), then fsync and close.
//       Creates PROGRESS_FLAG once AT_MIB are written (the script then breaks connections).
//       With AGAIN_UNTIL, writes the same bytes over again, pass after pass, until that file
//       exists: the transfer lasts as long as the script's faults, however fast the machine.
//   read FILE MIB THREADS SEED [STOP_FLAG]
//       Passes over FILE until STOP_FLAG exists (at least one): each pass opens FILE
//       again and drops its cached pages, so the bytes come from the server, not the page cache.
// Any failed call prints its errno and exits 1 (the application must see no error); a byte
// that differs from the pattern exits 1 with the count.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kChunk = 1u << 20;

uint64_t word(uint64_t seed, uint64_t off) {  // splitmix64 of (seed, word index)
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + off / 8 + 1;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill(uint64_t seed, uint64_t off, char* buf) {
  for (size_t k = 0; k < kChunk; k += 8) {
    uint64_t w = word(seed, off + k);
    std::memcpy(buf + k, &w, 8);
  }
}

bool exists(const char* p) { return p && ::access(p, F_OK) == 0; }

void touch(const char* p) {
  int fd = ::open(p, O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) ::close(fd);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Job {
  std::string path;
  uint64_t chunks = 0;
  int threads = 1;
  uint64_t seed = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> bad_bytes{0};
  std::atomic<int> errors{0};
  std::atomic<bool> stop{false};
};

void fail_call(Job& j, const char* what, uint64_t off, ssize_t rv, int err) {
  std::fprintf(stderr, "fuse_chaos_io: %s %s at %llu MiB: %zd (%s)\n", what, j.path.c_str(),
               static_cast<unsigned long long>(off >> 20), rv, rv < 0 ? std::strerror(err) : "short");
  j.errors.fetch_add(1);
  j.stop = true;
}

void write_chunks(Job& j, int fd) {
  std::vector<char> buf(kChunk);
  for (uint64_t i = j.next.fetch_add(1); !j.stop && i < j.chunks; i = j.next.fetch_add(1)) {
    uint64_t off = i * kChunk;
    fill(j.seed, off, buf.data());
    ssize_t n = ::pwrite(fd, buf.data(), kChunk, static_cast<off_t>(off));
    if (n != static_cast<ssize_t>(kChunk)) return fail_call(j, "pwrite", off, n, errno);
    j.done.fetch_add(1);
  }
}

void read_chunks(Job& j, int fd, const char* stop_flag) {
  std::vector<char> buf(kChunk), want(kChunk);
  for (uint64_t i = j.next.fetch_add(1); !j.stop && i < j.chunks; i = j.next.fetch_add(1)) {
    uint64_t off = i * kChunk;
    size_t got = 0;
    while (got < kChunk) {  // a short read is legal; a 0 before the end is not
      ssize_t n = ::pread(fd, buf.data() + got, kChunk - got, static_cast<off_t>(off + got));
      if (n <= 0) return fail_call(j, "pread", off + got, n, errno);
      got += static_cast<size_t>(n);
    }
    fill(j.seed, off, want.data());
    uint64_t bad = 0;
    for (size_t k = 0; k < kChunk; ++k) bad += buf[k] != want[k];
    if (bad) {
      std::fprintf(stderr, "fuse_chaos_io: %s: %llu bad bytes in the MiB at %llu\n", j.path.c_str(),
                   static_cast<unsigned long long>(bad), static_cast<unsigned long long>(off >> 20));
      j.bad_bytes.fetch_add(bad);
    }
    j.done.fetch_add(1);
    if (exists(stop_flag)) j.stop = true;
  }
}

int run_write(Job& j, const char* flag, uint64_t flag_mib, const char* again_until) {
  auto t0 = std::chrono::steady_clock::now();
  int fd = ::open(j.path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "fuse_chaos_io: open %s: %s\n", j.path.c_str(), std::strerror(errno));
    return 1;
  }
  int passes = 0;
  do {
    j.next = 0;
    j.done = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < j.threads; ++t) ts.emplace_back([&j, fd] { write_chunks(j, fd); });
    while (flag && passes == 0 && j.done.load() < flag_mib && !j.stop && j.done.load() < j.chunks)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (flag && passes == 0 && !j.stop) touch(flag);
    for (auto& th : ts) th.join();
    ++passes;
  } while (again_until && !exists(again_until) && j.errors.load() == 0);
  if (passes > 1) std::printf("%d passes; ", passes);
  if (j.errors.load() == 0) {
    if (::fsync(fd) != 0) fail_call(j, "fsync", 0, -1, errno);
  }
  if (::close(fd) != 0) fail_call(j, "close", 0, -1, errno);
  std::printf("wrote %llu MiB with %d threads in %.1f s, errors %d\n",
              static_cast<unsigned long long>(j.done.load()), j.threads, seconds_since(t0), j.errors.load());
  return j.errors.load() == 0 && j.done.load() == j.chunks ? 0 : 1;
}

int run_read(Job& j, const char* stop_flag) {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t passes = 0, total = 0;
  for (;;) {
    int fd = ::open(j.path.c_str(), O_RDONLY);
    if (fd < 0) {
      std::fprintf(stderr, "fuse_chaos_io: open %s: %s\n", j.path.c_str(), std::strerror(errno));
      return 1;
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    j.next = 0;
    j.done = 0;
    std::vector<std::thread> ts;
    const char* stop_now = passes ? stop_flag : nullptr;  // the first pass always completes
    for (int t = 0; t < j.threads; ++t) ts.emplace_back([&j, fd, stop_now] { read_chunks(j, fd, stop_now); });
    for (auto& th : ts) th.join();
    ::close(fd);
    total += j.done.load();
    if (j.done.load() == j.chunks) ++passes;
    if (j.errors.load() || j.bad_bytes.load() || !stop_flag || exists(stop_flag)) break;
  }
  std::printf("read %llu MiB (%llu full passes) with %d threads in %.1f s, bad bytes %llu, errors %d\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(passes), j.threads,
              seconds_since(t0), static_cast<unsigned long long>(j.bad_bytes.load()), j.errors.load());
  return j.errors.load() == 0 && j.bad_bytes.load() == 0 && passes > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: fuse_chaos_io write FILE MIB THREADS SEED [PROGRESS_FLAG AT_MIB [AGAIN_UNTIL]]\n"
                 "       fuse_chaos_io read FILE MIB THREADS SEED [STOP_FLAG]\n");
    return 2;
  }
  std::string mode = argv[1];
  Job j;
  j.path = argv[2];
  j.chunks = std::strtoull(argv[3], nullptr, 10);
  j.threads = std::atoi(argv[4]);
  j.seed = std::strtoull(argv[5], nullptr, 10);
  if (j.chunks == 0 || j.threads < 1 || j.threads > 64) {
    std::fprintf(stderr, "fuse_chaos_io: MIB must be > 0 and THREADS 1..64\n");
    return 2;
  }
  if (mode == "write")
    return run_write(j, argc > 7 ? argv[6] : nullptr, argc > 7 ? std::strtoull(argv[7], nullptr, 10) : 0,
                     argc > 8 ? argv[8] : nullptr);
  if (mode == "read") return run_read(j, argc > 6 ? argv[6] : nullptr);
  std::fprintf(stderr, "fuse_chaos_io: unknown mode '%s' (write or read)\n", mode.c_str());
  return 2;
}
