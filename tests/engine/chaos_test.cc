// chaos_test URL EXPORT_DIR FLAG_DIR MIN_RECONNECTS|soft [MIN_RESENT_BYTES]
// Keeps a write+read workload running on the engine while chaos_test.sh breaks connections
// (ss -K) and restarts the server; then checks that every byte arrived, through our reads
// and in the server's own file. Protocol with the script: we create FLAG_DIR/ready once the
// workload runs; the script creates FLAG_DIR/stop when its disruptions are done.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nfsshim/nfs/engine.h"

using namespace nfsshim::nfs;

namespace {

char pattern(uint64_t off, uint32_t gen) {
  uint64_t x = (off / 8 + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(gen) << 40);
  x ^= x >> 31;
  return static_cast<char>(x >> ((off % 8) * 8));
}

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: chaos_test URL EXPORT_DIR FLAG_DIR MIN_RECONNECTS [MIN_RESENT_BYTES]\n");
    return 2;
  }
  std::string flags = argv[3];
  uint64_t min_reconnects = std::strtoull(argv[4], nullptr, 10);
  uint64_t min_resent = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 0;
  NfsUrl u;
  std::string why;
  std::unique_ptr<Engine> e;
  if (parse_nfs_url(argv[1], &u, &why) < 0 || Engine::open(u, &e, &why) < 0) {
    std::fprintf(stderr, "chaos_test: %s\n", why.c_str());
    return 1;
  }
  Cred c = e->default_cred();
  if (std::string(argv[4]) == "soft") {
    // Soft mount, server gone for good: a request fails with EIO after timeo*(retrans+1)
    // instead of hanging (the script stops ganesha once we say ready).
    Fh f;
    if (e->create(c, e->root(), "soft.dat", 0644, false, &f, nullptr) < 0) return 1;
    int fd = ::open((flags + "/ready").c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) ::close(fd);
    while (!exists(flags + "/stop")) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto t0 = std::chrono::steady_clock::now();
    ssize_t rv = e->write(c, f, 0, 5, "hello", kFileSync, nullptr);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("write with the server gone: %zd (%s) after %.1f s\n", rv, rv < 0 ? std::strerror(static_cast<int>(-rv)) : "ok", secs);
    bool ok = rv == -EIO && secs < 30;
    std::printf(ok ? "RESULT PASS\n" : "RESULT FAIL\n");
    return ok ? 0 : 1;
  }
  const int threads = 4;
  const size_t region = 16u << 20, chunk = 2u << 20;  // each thread rewrites its region
  Fh fh;
  e->remove(c, e->root(), "chaos.dat");
  if (e->create(c, e->root(), "chaos.dat", 0644, true, &fh, nullptr) < 0) return 1;
  UnstableWriter w(*e, fh, 256u << 20);  // keep everything until the final COMMIT
  // Written once before the disruptions and never again: after a server restart only the
  // verifier check can bring these UNSTABLE bytes back.
  const size_t early = 8u << 20;
  const uint64_t early_off = threads * region;
  {
    std::vector<char> buf(early);
    for (size_t k = 0; k < early; ++k) buf[k] = pattern(early_off + k, 0);
    if (w.write(c, early_off, buf.data(), early) != static_cast<ssize_t>(early)) return 1;
  }
  std::atomic<int> errors{0};
  std::atomic<uint64_t> written{0};
  std::vector<uint32_t> last_gen(threads * (region / chunk), 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::vector<char> buf(chunk), back(chunk);
      for (uint32_t gen = 1; !exists(flags + "/stop"); ++gen) {
        for (size_t i = 0; i < region / chunk; ++i) {
          uint64_t off = t * region + i * chunk;
          for (size_t k = 0; k < chunk; ++k) buf[k] = pattern(off + k, gen);
          if (w.write(c, off, buf.data(), chunk) != static_cast<ssize_t>(chunk)) {
            std::fprintf(stderr, "write at %llu failed\n", static_cast<unsigned long long>(off));
            errors.fetch_add(1);
            return;
          }
          last_gen[t * (region / chunk) + i] = gen;
          written.fetch_add(chunk);
          if (e->read(c, fh, off, chunk, back.data()) != static_cast<ssize_t>(chunk) || back != buf) {
            std::fprintf(stderr, "read-back at %llu differs\n", static_cast<unsigned long long>(off));
            errors.fetch_add(1);
            return;
          }
        }
        if (written.load() >= 64u << 20 && !exists(flags + "/ready")) {
          int fd = ::open((flags + "/ready").c_str(), O_CREAT | O_WRONLY, 0644);
          if (fd >= 0) ::close(fd);
        }
      }
    });
  for (auto& th : ts) th.join();
  int rv = w.commit(c);
  if (rv < 0) {
    std::fprintf(stderr, "commit: %s\n", std::strerror(-rv));
    errors.fetch_add(1);
  }
  // Everything, once more through the engine and from the server's disk.
  std::vector<char> all(threads * region + early);
  if (e->read(c, fh, 0, all.size(), all.data()) != static_cast<ssize_t>(all.size())) errors.fetch_add(1);
  std::string path = std::string(argv[2]) + "/chaos.dat";
  std::vector<char> disk(all.size());
  int fd = ::open(path.c_str(), O_RDONLY);
  size_t got = 0;
  ssize_t n;
  while (fd >= 0 && got < disk.size() && (n = ::pread(fd, disk.data() + got, disk.size() - got, got)) > 0)
    got += static_cast<size_t>(n);
  if (fd >= 0) ::close(fd);
  size_t bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    char want = pattern(i, i < early_off ? last_gen[i / chunk] : 0);
    if (all[i] != want || got != disk.size() || disk[i] != want) ++bad;
  }
  EngineStats s = e->stats();
  std::printf("written %llu MiB, reconnects %llu, re-sent RPCs %llu, timeouts %llu, re-sent after verifier change %llu bytes, "
              "bad bytes %zu, errors %d\n",
              static_cast<unsigned long long>(written.load() >> 20), static_cast<unsigned long long>(s.reconnects),
              static_cast<unsigned long long>(s.retries), static_cast<unsigned long long>(s.timeouts),
              static_cast<unsigned long long>(w.resent_bytes()), bad, errors.load());
  bool ok = bad == 0 && errors.load() == 0 && s.reconnects >= min_reconnects && w.resent_bytes() >= min_resent;
  std::printf(ok ? "RESULT PASS\n" : "RESULT FAIL\n");
  return ok ? 0 : 1;
}
