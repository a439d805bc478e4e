// engine_bench URL [options]: a direct NFS engine alone (no FUSE), one configuration per
// run: the NFSv3 engine, or with vers=4.1 in the URL the NFSv4.1 session engine (targets.h).
// Phases: seq write of SIZE MiB (UNSTABLE, COMMIT every 64 MiB and at the end), seq read
// of it, random 4 KiB reads. Prints one line per phase:
//   phase=write vers=3 io=.. nconnect=.. MiBps=.. cpu_s_per_GiB=.. rpcs=.. syscalls_per_rpc=..
//   loop_syscalls_per_rpc=.. peak_rss_MiB=.. calls_per_conn=a/b/.. [v4.1: peak_slots=.. ...]
// rpcs counts RPCs for v3 and compounds (SEQUENCE + PUTFH + op) for v4.1.
// --server-pid PID adds the server's CPU time per phase (server_cpu_s_per_GiB=,
// server_cpu_us_per_op=; from /proc/PID/stat, 10 ms ticks): on a loopback test bed client
// and server share the CPUs, so their sum bounds the speed.
// Syscalls are counted with a perf tracepoint counter (raw_syscalls:sys_enter) over the
// whole process; "n/a" where perf events are not allowed. See engine_bench.sh for the matrix.
#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nfsshim/nfs/heap_tuning.h"
#include "targets.h"

namespace {

// Counts every syscall of this process: one perf tracepoint counter (raw_syscalls:sys_enter)
// on the main thread, inherited by the worker threads it starts (their counts are added when
// they exit, i.e. when a phase joins them), plus one counter per thread already running
// when add_running_threads() is called (the engine's loop threads, which never exit).
class SyscallCounter {
 public:
  SyscallCounter() {
    std::ifstream f("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id");
    if (!(f >> id_)) {
      std::ifstream g("/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id");
      if (!(g >> id_)) id_ = -1;
    }
    if (id_ >= 0) open_for(0, true);
  }
  void add_running_threads() {
    if (fds_.empty()) return;
    pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));
    DIR* d = ::opendir("/proc/self/task");
    if (!d) return;
    while (struct dirent* de = ::readdir(d)) {
      pid_t tid = static_cast<pid_t>(std::atoi(de->d_name));
      if (tid > 0 && tid != self) open_for(tid, false);
    }
    ::closedir(d);
  }
  bool ok() const { return !fds_.empty(); }
  uint64_t value() const {
    uint64_t sum = 0;
    for (int fd : fds_) {
      uint64_t v = 0;
      if (::read(fd, &v, sizeof v) == sizeof v) sum += v;
    }
    return sum;
  }

 private:
  void open_for(pid_t tid, bool inherit) {
    struct perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_TRACEPOINT;
    a.size = sizeof a;
    a.config = static_cast<uint64_t>(id_);
    a.inherit = inherit ? 1 : 0;
    int fd = static_cast<int>(::syscall(SYS_perf_event_open, &a, tid, -1, -1, 0));
    if (fd >= 0) fds_.push_back(fd);
  }
  long id_ = -1;
  std::vector<int> fds_;
};

double cpu_seconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// User + system CPU seconds of process PID (all its threads), or -1 if unreadable.
double process_cpu_seconds(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return -1;
  size_t close = s.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long peak_rss_mib() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

struct Phase {
  const char* name;
  std::chrono::steady_clock::time_point t0;
  double cpu0;
  double srv0;
  uint64_t sys0;
  Target::Counters c0;
};

// "a/b/c": calls per connection during the phase.
std::string per_conn(const Target::Counters& now, const Target::Counters& then) {
  std::string s;
  for (size_t i = 0; i < now.per_conn.size(); ++i) {
    uint64_t before = i < then.per_conn.size() ? then.per_conn[i] : 0;
    s += (i ? "/" : "") + std::to_string(now.per_conn[i] - before);
  }
  return s.empty() ? "-" : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s URL [--size MiB] [--chunk KiB] [--depth N] [--rand-ops N] "
                         "[--rand-depth N] [--phases write,read,rand] [--name FILE] [--server-pid PID]\n"
                         "  URL: nfs://HOST/EXPORT?vers=3|4.1&nconnect=N&io=uring|epoll&...\n", argv[0]);
    return 2;
  }
  // The engine alone, as a tool embedding it would run it (nfsshim-fuse does not: see
  // heap_tuning.h); the mount lines of engine_bench.sh measure the daemon as shipped.
  nfsshim::nfs::keep_io_buffers_in_heap();
  std::string url_s = argv[1];
  size_t size_mib = 1024, chunk_kib = 4096;
  int depth = 4, rand_ops = 20000, rand_depth = 16;
  std::string phases = "write,read,rand", name = "engine_bench.dat";
  pid_t server_pid = 0;
  for (int i = 2; i < argc; i += 2) {
    std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "option %s needs a value\n", k.c_str());
      return 2;
    }
    std::string v = argv[i + 1];
    if (k == "--size") size_mib = std::stoul(v);
    else if (k == "--chunk") chunk_kib = std::stoul(v);
    else if (k == "--depth") depth = std::stoi(v);
    else if (k == "--rand-ops") rand_ops = std::stoi(v);
    else if (k == "--rand-depth") rand_depth = std::stoi(v);
    else if (k == "--phases") phases = v;
    else if (k == "--name") name = v;
    else if (k == "--server-pid") {
      server_pid = static_cast<pid_t>(std::atoi(v.c_str()));
      if (process_cpu_seconds(server_pid) < 0) {
        std::fprintf(stderr, "--server-pid %s: no readable /proc/%s/stat\n", v.c_str(), v.c_str());
        return 2;
      }
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  SyscallCounter sc;  // before the engine's threads exist, so they are counted
  std::unique_ptr<Target> e;
  std::string why;
  if (int rv = open_target(url_s, &e, &why); rv < 0) {
    std::fprintf(stderr, "engine_bench: %s (%s)\n", why.c_str(), std::strerror(-rv));
    return 1;
  }
  sc.add_running_threads();
  const uint64_t size = static_cast<uint64_t>(size_mib) << 20;
  const size_t chunk = chunk_kib << 10;
  const uint64_t nchunks = (size + chunk - 1) / chunk;

  auto begin = [&](const char* n) {
    return Phase{n, std::chrono::steady_clock::now(), cpu_seconds(), process_cpu_seconds(server_pid),
                 sc.value(), e->counters()};
  };
  auto end = [&](const Phase& p, uint64_t bytes, uint64_t ops) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.t0).count();
    double cpu = cpu_seconds() - p.cpu0;
    Target::Counters s = e->counters();
    uint64_t rpcs = s.calls - p.c0.calls;
    double gib = static_cast<double>(bytes) / (1u << 30);
    std::printf("phase=%s vers=%s io=%s nconnect=%d MiBps=%.1f ops_per_s=%.0f cpu_s_per_GiB=%.3f cpu_us_per_op=%.1f rpcs=%llu ",
                p.name, e->vers(), e->io(), e->nconnect(), static_cast<double>(bytes) / (1 << 20) / secs,
                static_cast<double>(ops) / secs, gib > 0 ? cpu / gib : 0.0, cpu * 1e6 / static_cast<double>(ops),
                static_cast<unsigned long long>(rpcs));
    if (sc.ok())
      std::printf("syscalls_per_rpc=%.2f ", static_cast<double>(sc.value() - p.sys0) / static_cast<double>(rpcs));
    else
      std::printf("syscalls_per_rpc=n/a ");
    if (double srv1 = process_cpu_seconds(server_pid); server_pid > 0 && srv1 >= 0 && p.srv0 >= 0)
      std::printf("server_cpu_s_per_GiB=%.3f server_cpu_us_per_op=%.1f ", gib > 0 ? (srv1 - p.srv0) / gib : 0.0,
                  (srv1 - p.srv0) * 1e6 / static_cast<double>(ops));
    std::printf("loop_syscalls_per_rpc=%.2f peak_rss_MiB=%ld secs=%.2f rsize=%u wsize=%u calls_per_conn=%s%s\n",
                static_cast<double>(s.loop_syscalls - p.c0.loop_syscalls) / static_cast<double>(rpcs),
                peak_rss_mib(), secs, e->rsize(), e->wsize(), per_conn(s, p.c0).c_str(), e->extra().c_str());
    std::fflush(stdout);
  };

  if (phases.find("write") != std::string::npos) {
    if (int rv = e->create(name); rv < 0) {
      std::fprintf(stderr, "create %s: %s\n", name.c_str(), std::strerror(-rv));
      return 1;
    }
    std::atomic<uint64_t> next{0};
    std::atomic<int> failed{0};
    Phase p = begin("write");
    std::vector<std::thread> ts;
    for (int t = 0; t < depth; ++t)
      ts.emplace_back([&] {
        std::vector<char> buf(chunk, 'w');
        for (uint64_t i; (i = next.fetch_add(1)) < nchunks;) {
          uint64_t off = i * chunk;
          size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - off));
          std::memcpy(buf.data(), &off, sizeof off);
          if (e->write(off, buf.data(), n) != static_cast<ssize_t>(n)) failed.fetch_add(1);
        }
      });
    for (auto& t : ts) t.join();
    if (e->commit() != 0) failed.fetch_add(1);
    end(p, size, nchunks);
    if (failed.load()) {
      std::fprintf(stderr, "write phase: %d failures\n", failed.load());
      return 1;
    }
  } else if (int rv = e->open_existing(name); rv < 0) {
    std::fprintf(stderr, "open %s: %s\n", name.c_str(), std::strerror(-rv));
    return 1;
  }

  if (phases.find("read") != std::string::npos) {
    std::atomic<uint64_t> next{0};
    std::atomic<int> failed{0};
    Phase p = begin("read");
    std::vector<std::thread> ts;
    for (int t = 0; t < depth; ++t)
      ts.emplace_back([&] {
        std::vector<char> buf(chunk);
        for (uint64_t i; (i = next.fetch_add(1)) < nchunks;) {
          uint64_t off = i * chunk;
          size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - off));
          uint64_t tag = 0;
          if (e->read(off, n, buf.data()) != static_cast<ssize_t>(n)) failed.fetch_add(1);
          std::memcpy(&tag, buf.data(), sizeof tag);
          if (tag != off) failed.fetch_add(1);  // the write phase's marker
        }
      });
    for (auto& t : ts) t.join();
    end(p, size, nchunks);
    if (failed.load()) {
      std::fprintf(stderr, "read phase: %d failures\n", failed.load());
      return 1;
    }
  }

  if (phases.find("rand") != std::string::npos) {
    std::atomic<int> next{0}, failed{0};
    Phase p = begin("rand4k");
    std::vector<std::thread> ts;
    for (int t = 0; t < rand_depth; ++t)
      ts.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
        char buf[4096];
        while (next.fetch_add(1) < rand_ops) {
          uint64_t off = (rng() % (size / 4096)) * 4096;
          if (e->read(off, sizeof buf, buf) != static_cast<ssize_t>(sizeof buf)) failed.fetch_add(1);
        }
      });
    for (auto& t : ts) t.join();
    end(p, static_cast<uint64_t>(rand_ops) * 4096, static_cast<uint64_t>(rand_ops));
    if (failed.load()) {
      std::fprintf(stderr, "rand phase: %d failures\n", failed.load());
      return 1;
    }
  }
  return 0;
}
