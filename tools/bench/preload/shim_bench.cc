// shim_bench: the preload's costs, measured by one process that the bench script runs
// with and without LD_PRELOAD (and with different settings) in alternating rounds.
//
//   shim_bench percall open_close|unlink|rename|unlink_open DIR ITERS
//       prints "ns_per_op N": the mean time of the named call alone.
//   shim_bench memory DIR FILES
//       buries FILES open files (one fd each), prints the heap bytes per tracked
//       reference, then runs 1,000,000 open/close cycles and prints the RSS growth.
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

static std::string name(const std::string& dir, int i) { return dir + "/f" + std::to_string(i); }

static void make(const std::string& p) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(p.c_str());
    std::exit(1);
  }
  close(fd);
}

static long rss_kib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f && std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
  if (f) std::fclose(f);
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static size_t heap_used() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  return mallinfo2().uordblks;
#else
  return static_cast<size_t>(mallinfo().uordblks);
#endif
}

static int percall(const std::string& op, const std::string& dir, int iters) {
  std::vector<std::string> names;
  for (int i = 0; i < iters; ++i) names.push_back(name(dir, i));
  std::chrono::nanoseconds spent{0};
  if (op == "open_close") {
    make(names[0]);
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) close(open(names[0].c_str(), O_RDONLY));
    spent = Clock::now() - t0;
    unlink(names[0].c_str());
  } else if (op == "unlink") {
    for (auto& n : names) make(n);
    auto t0 = Clock::now();
    for (auto& n : names) unlink(n.c_str());
    spent = Clock::now() - t0;
  } else if (op == "rename") {
    // rename over an existing target, like a checkpoint replace
    std::string target = dir + "/target";
    make(target);
    for (auto& n : names) make(n);
    auto t0 = Clock::now();
    for (auto& n : names) rename(n.c_str(), target.c_str());
    spent = Clock::now() - t0;
    unlink(target.c_str());
  } else if (op == "unlink_open") {
    // the bury path: unlink of a file this process holds open
    std::vector<int> fds;
    for (auto& n : names) {
      make(n);
      fds.push_back(open(n.c_str(), O_RDONLY));
    }
    auto t0 = Clock::now();
    for (auto& n : names) unlink(n.c_str());
    spent = Clock::now() - t0;
    for (int fd : fds) close(fd);
  } else {
    std::fprintf(stderr, "unknown op %s\n", op.c_str());
    return 2;
  }
  std::printf("ns_per_op %.1f\n", static_cast<double>(spent.count()) / iters);
  return 0;
}

static int memory(const std::string& dir, int files) {
  std::vector<int> fds;
  for (int i = 0; i < files; ++i) {
    make(name(dir, i));
    fds.push_back(open(name(dir, i).c_str(), O_RDONLY));
  }
  size_t before = heap_used();
  long rss_before = rss_kib();
  for (int i = 0; i < files; ++i) unlink(name(dir, i).c_str());
  size_t after = heap_used();
  long rss_after = rss_kib();
  std::printf("heap_bytes_per_tracked_ref %.1f\n", (static_cast<double>(after) - before) / files);
  std::printf("rss_kib_for_%d_tracked_refs %ld\n", files, rss_after - rss_before);
  for (int fd : fds) close(fd);
  // 1M open/close cycles of a watched file: no growth expected.
  std::string f = dir + "/cycle";
  make(f);
  for (int i = 0; i < 100000; ++i) close(open(f.c_str(), O_RDONLY));  // warm up
  long r0 = rss_kib();
  size_t h0 = heap_used();
  for (int i = 0; i < 1000000; ++i) close(open(f.c_str(), O_RDONLY));
  std::printf("rss_growth_kib_over_1M_open_close %ld\n", rss_kib() - r0);
  std::printf("heap_growth_bytes_over_1M_open_close %ld\n", static_cast<long>(heap_used()) - static_cast<long>(h0));
  unlink(f.c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "percall") == 0) return percall(argv[2], argv[3], std::atoi(argv[4]));
  if (argc == 4 && std::strcmp(argv[1], "memory") == 0) return memory(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr, "usage: shim_bench percall OP DIR ITERS | memory DIR FILES\n");
  return 2;
}
