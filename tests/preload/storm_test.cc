// Many threads opening, mapping, unlinking, renaming over and closing files at once
// under the preload. Each file's content is a unique token; every descriptor and
// mapping must keep reading the token of the file it opened, whatever happened to its
// name; at the end no graveyard entry may be left and every name that should exist
// must hold its last token. Run it under TSan and ASan too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "preload_env.h"

using namespace shimtest;

namespace {

constexpr int kThreads = 8;
constexpr int kNames = 6;
constexpr size_t kTokenLen = 24;

std::atomic<uint64_t> g_token{1};
std::atomic<uint64_t> g_ops{0};
std::atomic<int> g_failures{0};

std::string make_token() {
  char buf[kTokenLen + 1];
  std::snprintf(buf, sizeof buf, "token-%018llu", static_cast<unsigned long long>(g_token++));
  return buf;
}

struct Held {
  int fd = -1;
  char* map = nullptr;
  std::string token;
};

void check(bool ok, const char* what) {
  if (!ok) {
    if (g_failures++ < 10) std::fprintf(stderr, "storm: %s (errno %d)\n", what, errno);
  }
}

// Writes a fresh file NAME.tmp with a new token and renames it over NAME.
std::string replace(const std::string& name) {
  std::string tok = make_token();
  write_file(name + ".tmp", tok);
  check(rename((name + ".tmp").c_str(), name.c_str()) == 0, "rename over");
  return tok;
}

void worker(const std::string& dir, int id, int iterations, std::map<std::string, std::string>* final_state) {
  std::mt19937 rng(static_cast<unsigned>(id * 7919 + 17));
  std::map<std::string, std::string> names;  // name -> token it holds now (absent: deleted)
  std::vector<Held> held;
  auto name_of = [&](int i) { return dir + "/t" + std::to_string(id) + "-" + std::to_string(i); };
  for (int it = 0; it < iterations; ++it) {
    std::string name = name_of(static_cast<int>(rng() % kNames));
    switch (rng() % 8) {
      case 0:  // create or overwrite by replace
        names[name] = replace(name);
        break;
      case 1:
      case 2: {  // open (and sometimes map and close the fd, like Kafka's indexes)
        auto f = names.find(name);
        if (f == names.end()) break;
        Held h;
        h.fd = open(name.c_str(), O_RDONLY | O_CLOEXEC);
        check(h.fd >= 0, "open");
        if (h.fd < 0) break;
        h.token = f->second;
        if (rng() % 2) {
          void* m = mmap(nullptr, kTokenLen, PROT_READ, MAP_SHARED, h.fd, 0);
          check(m != MAP_FAILED, "mmap");
          h.map = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
          if (h.map && rng() % 2) {
            close(h.fd);
            h.fd = -1;
          }
        }
        held.push_back(h);
        break;
      }
      case 3:  // unlink
        if (names.erase(name)) check(unlink(name.c_str()) == 0, "unlink");
        break;
      case 4:  // remove()
        if (names.erase(name)) check(remove(name.c_str()) == 0, "remove");
        break;
      case 5:
      case 6: {  // drop a reference, verifying it first
        if (held.empty()) break;
        size_t i = rng() % held.size();
        Held h = held[i];
        held.erase(held.begin() + static_cast<long>(i));
        if (h.fd >= 0) {
          char buf[kTokenLen] = {};
          check(pread(h.fd, buf, kTokenLen, 0) == static_cast<ssize_t>(kTokenLen), "pread");
          check(std::memcmp(buf, h.token.data(), kTokenLen) == 0, "fd reads another file's data");
          int d = dup(h.fd);
          check(close(h.fd) == 0, "close");
          check(close(d) == 0, "close dup");
        }
        if (h.map) {
          check(std::memcmp(h.map, h.token.data(), kTokenLen) == 0, "mapping shows another file's data");
          check(munmap(h.map, kTokenLen) == 0, "munmap");
        }
        break;
      }
      case 7:  // a fork that closes everything it inherited, like a JVM spawning a process
        if (it % 97 == 0) {
          pid_t c = fork();
          if (c == 0) _exit(0);
          int st;
          waitpid(c, &st, 0);
        }
        break;
    }
    ++g_ops;
  }
  for (auto& h : held) {
    if (h.fd >= 0) close(h.fd);
    if (h.map) munmap(h.map, kTokenLen);
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  final_state->insert(names.begin(), names.end());
}

TEST(Storm, NoLeakedEntryAndNoLostFile) {
  ASSERT_FALSE(watch_root().empty()) << "run me under CTest";
  std::string dir = fresh_dir("storm");
  const char* env = std::getenv("STORM_ITERATIONS");
  int iterations = env ? std::atoi(env) : 10000;
  std::map<std::string, std::string> expect;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, dir, i, iterations, &expect);
  for (auto& t : threads) t.join();

  EXPECT_EQ(g_failures.load(), 0);
  EXPECT_TRUE(entries_of().empty()) << entries_of().size() << " graveyard entries leaked";
  for (const auto& [name, token] : expect) EXPECT_EQ(read_file(name), token) << name;
  // Nothing but the expected names is left.
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kNames; ++i) {
      std::string n = dir + "/t" + std::to_string(t) + "-" + std::to_string(i);
      EXPECT_EQ(exists(n), expect.count(n) == 1) << n;
    }
  std::printf("storm: %llu operations by %d threads\n", static_cast<unsigned long long>(g_ops.load()), kThreads);
}

}  // namespace
