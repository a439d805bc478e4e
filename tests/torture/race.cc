// Security race: while the shim buries and reaps, other threads swap the victim's
// name between a regular file and symlinks to a canary outside the test directory,
// and plant symlinks named like dead processes' entries in the graveyard. Nothing
// outside may be deleted, moved, written or exposed: the canary and the outside
// directory must be exactly as they were.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common.h"
#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"
#include "pattern.h"
#include "race.h"
#include "verify.h"

extern char** environ;

namespace torture {
namespace {

struct Snapshot {
  std::set<std::string> names;
  ino_t canary_ino = 0, inner_ino = 0;
  off_t canary_size = 0;
  timespec canary_mtime{};
  uint64_t canary_good = 0, inner_good = 0;
};

Snapshot snapshot(const std::string& outside) {
  Snapshot s;
  if (DIR* d = ::opendir(outside.c_str())) {
    while (dirent* e = ::readdir(d)) s.names.insert(e->d_name);
    ::closedir(d);
  }
  struct stat st;
  if (::lstat((outside + "/canary").c_str(), &st) == 0) {
    s.canary_ino = st.st_ino;
    s.canary_size = st.st_size;
    s.canary_mtime = st.st_mtim;
  }
  if (::lstat((outside + "/cdir/inner").c_str(), &st) == 0) s.inner_ino = st.st_ino;
  for (auto* p : {&s.canary_good, &s.inner_good}) {
    std::string f = outside + (p == &s.canary_good ? "/canary" : "/cdir/inner");
    int fd = ::open(f.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      FileCheck c = verify_fd(fd, 0, false);
      *p = c.bad ? 0 : c.good;
      ::close(fd);
    }
  }
  return s;
}

bool same(const Snapshot& a, const Snapshot& b) {
  return a.names == b.names && a.canary_ino == b.canary_ino && a.inner_ino == b.inner_ino &&
         a.canary_size == b.canary_size && a.canary_mtime.tv_sec == b.canary_mtime.tv_sec &&
         a.canary_mtime.tv_nsec == b.canary_mtime.tv_nsec && a.canary_good == b.canary_good &&
         a.inner_good == b.inner_good && a.canary_good > 0 && a.inner_good > 0;
}

void write_pattern_file(const std::string& path, uint64_t id, size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<uint8_t> b(n);
  fill(id, 0, b.data(), n);
  if (fd < 0 || ::write(fd, b.data(), n) != static_cast<ssize_t>(n)) std::perror(path.c_str());
  if (fd >= 0) ::close(fd);
}

std::atomic<bool> stop{false};
std::atomic<uint64_t> buries{0}, swaps{0}, plants{0}, reapers{0};

// Holds the victim (never through a symlink) and deletes it, or renames over it.
void burier(const std::string& r, int k) {
  std::string victim = r + "/victim", tmp = r + "/src" + std::to_string(k);
  for (unsigned i = 0; !stop; ++i) {
    int fd = ::open(victim.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) continue;  // a symlink at that moment (ELOOP), or swapped away
    if (i % 2) {
      ::unlink(victim.c_str());
    } else {
      int s = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (s >= 0) ::close(s);
      ::rename(tmp.c_str(), victim.c_str());
    }
    ::close(fd);
    ++buries;
  }
}

// Swaps the victim's name between a regular file and symlinks to the outside.
void swapper(const std::string& r, const std::string& outside) {
  std::string victim = r + "/victim", tmp = r + "/swap.tmp";
  const std::string targets[] = {outside + "/canary", outside + "/cdir", outside};
  for (unsigned i = 0; !stop; ++i) {
    ::unlink(tmp.c_str());
    if (i % 4 == 3) {
      int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) ::close(fd);
    } else if (::symlink(targets[i % 3].c_str(), tmp.c_str()) != 0) {
      continue;
    }
    if (::rename(tmp.c_str(), victim.c_str()) == 0) ++swaps;
  }
}

// Plants symlinks (to the outside) and a directory named like entries of a dead process
// in the graveyard, for the next reap to meet.
void planter(const std::string& gdir, const std::string& outside) {
  nfsshim::Identity dead = nfsshim::self_identity();
  dead.pid = 4194303;  // above any pid_max default: never alive
  dead.start = 1;
  for (uint64_t seq = 1; !stop; ++seq) {
    nfsshim::EntryName e;
    e.owner = dead;
    e.seq = seq;
    std::string p = gdir + "/" + e.format();
    int rc = seq % 3 == 0 ? ::mkdir(p.c_str(), 0700)
                          : ::symlink((outside + (seq % 3 == 1 ? "/canary" : "/cdir")).c_str(), p.c_str());
    if (rc == 0) ++plants;
    if (seq % 3 == 0) {  // a file inside the planted directory: a reap must not recurse
      std::string inner = p + "/inner";
      int fd = ::open(inner.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// New shimmed processes, each reaping what the dead left on its first delete.
void reaper_loop(char* self, const std::string& r) {
  for (unsigned i = 0; !stop; ++i) {
    std::string path = r + "/reap" + std::to_string(i % 4);
    char* argv[] = {self, const_cast<char*>("reap-once"), const_cast<char*>(path.c_str()), nullptr};
    pid_t pid;
    if (::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) == 0) {
      ::waitpid(pid, nullptr, 0);
      ++reapers;
    }
  }
}

}  // namespace

int run_reap_once(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  ::unlink(path.c_str());
  ::close(fd);
  return 0;
}

int run_race(const std::string& dir, const std::string& outside, const std::string& gdir,
             double seconds, const std::string& label, char* self) {
  ::mkdir(outside.c_str(), 0755);
  ::mkdir((outside + "/cdir").c_str(), 0755);
  write_pattern_file(outside + "/canary", 0xca4a21, 100000);
  write_pattern_file(outside + "/cdir/inner", 0x1a4e2, 5000);
  Snapshot before = snapshot(outside);
  std::string r = dir + "/race";
  if (::mkdir(r.c_str(), 0755) != 0 && errno != EEXIST) return std::perror(r.c_str()), 2;

  std::vector<std::thread> th;
  th.emplace_back(burier, r, 0);
  th.emplace_back(burier, r, 1);
  th.emplace_back(swapper, r, outside);
  if (!gdir.empty()) th.emplace_back(planter, gdir, outside);
  th.emplace_back(reaper_loop, self, r);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  stop = true;
  for (auto& t : th) t.join();

  Snapshot after = snapshot(outside);
  bool ok = same(before, after);
  std::printf("race: %llu buries/renames-over, %llu symlink swaps, %llu planted entries, %llu reaping processes\n",
              static_cast<unsigned long long>(buries.load()), static_cast<unsigned long long>(swaps.load()),
              static_cast<unsigned long long>(plants.load()), static_cast<unsigned long long>(reapers.load()));
  if (!ok) {
    std::printf("race: FAIL: the outside directory or its canary changed (entries %zu -> %zu, canary %llu -> %llu "
                "verified bytes, inner %llu -> %llu)\n",
                before.names.size(), after.names.size(), static_cast<unsigned long long>(before.canary_good),
                static_cast<unsigned long long>(after.canary_good), static_cast<unsigned long long>(before.inner_good),
                static_cast<unsigned long long>(after.inner_good));
  }
  // Tidy our own directory: names only (no symlink is followed by unlink).
  if (DIR* d = ::opendir(r.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) ::unlinkat(::dirfd(d), e->d_name, 0);
    ::closedir(d);
  }
  if (::rmdir(r.c_str()) != 0) {
    std::printf("race: FAIL: rmdir %s: %s\n", r.c_str(), std::strerror(errno));
    ok = false;
  }
  std::printf("FIGURES %s ops=%llu faults=%llu survived=%llu verified=%llu lost=%d rss=%ld daemon_rss=0 %s\n",
              label.c_str(), static_cast<unsigned long long>(buries + swaps + plants + reapers),
              static_cast<unsigned long long>(swaps + plants), static_cast<unsigned long long>(ok ? swaps + plants : 0),
              static_cast<unsigned long long>(after.canary_good + after.inner_good), ok ? 0 : 1, rss_kib(getpid()),
              ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace torture
