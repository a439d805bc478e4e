// alloc_fail WATCH_DIR: every C++ allocation the shim makes inside an intercepted call fails
// in turn (operator new throws std::bad_alloc at the Nth allocation after arming, for N = 1,
// 2, ... until the call makes no Nth one). The wrappers are noexcept: an exception that gets
// out of one ends the host process (std::terminate: a JVM dies). And the call must still give
// the plain call's answer: on these held files unlink, remove and rename succeed, the names
// change as asked, and holders keep their data. A second round arms unlink at the start of
// a new second, when the shim re-reads the mount table (not every point there: each costs
// a wait). Exit 0 and "PASS" if so.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <new>

namespace {
std::atomic<long> g_left{0};  // >0: armed; the allocation that brings it to 0 fails
std::atomic<bool> g_fired{false};
std::atomic<long> g_count{-1};  // >=0: counting allocations
char g_what[256] = "(not in a call)";

void* allocate(size_t n) {
  if (g_count.load() >= 0) ++g_count;
  if (g_left.load() > 0 && g_left.fetch_sub(1) == 1) {
    g_fired = true;
    throw std::bad_alloc();
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void* allocate_nothrow(size_t n) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
}  // namespace

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate_nothrow(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate_nothrow(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {
char g_dir[4096];

int fail(const char* why) {
  fprintf(stderr, "FAIL: %s, in %s\n", why, g_what);
  return 1;
}

const char* at(const char* name) {
  static char bufs[4][4200];
  static int i = 0;
  char* b = bufs[i++ % 4];
  snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
  return b;
}

int put(const char* name, const char* data) {
  int fd = open(at(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && write(fd, data, strlen(data)) != static_cast<ssize_t>(strlen(data))) return -1;
  return fd;
}

bool holds(int fd, const char* data) {
  char buf[64] = {0};
  return pread(fd, buf, sizeof buf - 1, 0) == static_cast<ssize_t>(strlen(data)) && strcmp(buf, data) == 0;
}

bool file_is(const char* name, const char* data) {
  int fd = open(at(name), O_RDONLY);
  if (fd < 0) return false;
  bool ok = holds(fd, data);
  close(fd);
  return ok;
}

bool gone(const char* name) {
  struct stat st;
  return lstat(at(name), &st) != 0 && errno == ENOENT;
}

void arm(const char* op, long n) {
  snprintf(g_what, sizeof g_what, "%s with allocation #%ld failing", op, n);
  g_fired = false;
  g_left = n;
}
// Whether the armed allocation happened (and failed).
bool disarm() {
  g_left = 0;
  return g_fired;
}

void wait_next_second() {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &a);
  do {
    usleep(2000);
    clock_gettime(CLOCK_MONOTONIC_COARSE, &b);
  } while (b.tv_sec == a.tv_sec);
}

// One armed call of OP; 1 if the Nth allocation happened, 0 if not, -1 on a wrong answer.
// N = 0: none fails; *COUNT (if given) gets the number of allocations in the call.
int one(const char* op, long n, bool new_second, long* count = nullptr) {
  int fd = put("held", "old");
  int src = put("src", "new");
  if (fd < 0 || src < 0) return fail("setup"), -1;
  close(src);
  if (mkdir(at("d"), 0755) != 0 && errno != EEXIST) return fail("setup mkdir"), -1;
  if (new_second) wait_next_second();
  int rv;
  arm(op, n);
  g_count = 0;
  if (strcmp(op, "unlink") == 0)
    rv = unlink(at("held"));
  else if (strcmp(op, "unlinkat") == 0)
    rv = unlinkat(AT_FDCWD, at("held"), 0);
  else if (strcmp(op, "remove") == 0)
    rv = remove(at("held"));
  else if (strcmp(op, "rename") == 0)
    rv = rename(at("src"), at("held"));
  else
    rv = rmdir(at("d"));
  int err = errno;
  bool fired = disarm();
  if (count) *count = g_count;
  g_count = -1;
  if (rv != 0) {
    fprintf(stderr, "%s: returned %d, errno %s\n", g_what, rv, strerror(err));
    return fail("the call failed where the plain call succeeds"), -1;
  }
  if (strcmp(op, "rmdir") == 0) {
    if (!gone("d")) return fail("the directory is still there"), -1;
  } else if (strcmp(op, "rename") == 0) {
    if (!gone("src") || !file_is("held", "new")) return fail("the rename did not happen"), -1;
  } else if (!gone("held")) {
    return fail("the name is still there"), -1;
  }
  if (strcmp(op, "rmdir") != 0 && !holds(fd, "old")) return fail("the holder lost its data"), -1;
  // Close through the shim, armed as well: its recount may allocate.
  arm("close of the held file", n);
  rv = close(fd);
  disarm();
  if (rv != 0) return fail("close failed"), -1;
  unlink(at("held"));
  unlink(at("src"));
  rmdir(at("d"));
  return fired ? 1 : 0;
}

// Every allocation point of OP in turn; the count of points, or -1.
long every_point(const char* op) {
  for (long n = 1; n < 5000; ++n) {
    int r = one(op, n, false);
    if (r < 0) return -1;
    if (r == 0) return n - 1;
  }
  fail("more than 5000 allocations in one call");
  return -1;
}

// OP at the start of a new second, when the shim first re-reads the mount table: each
// call waits up to a second, so not every point: the first 5, every 25th, and the last 40
// (the tables built from the mount table, then the call's own), where reading the table
// (which keeps its own failures) is behind. The count is not exact: other tests mounting
// and unmounting meanwhile change the table. The count of points, or -1.
long refresh_points(const char* op) {
  long total = 0;
  if (one(op, 0, true, &total) < 0) return -1;
  long fired = 0;
  for (long n = 1; n <= total + 1; ++n) {
    if (n > 5 && n % 25 != 0 && n < total - 40) continue;
    int r = one(op, n, true);
    if (r < 0) return -1;
    fired += r;
  }
  if (fired < 5) return fail("the armed allocations were not made: is the mount table re-read?"), -1;
  return total;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: alloc_fail WATCH_DIR");
  snprintf(g_dir, sizeof g_dir, "%s/alloc_fail", argv[1]);
  mkdir(g_dir, 0755);
  std::set_terminate([] {
    fprintf(stderr, "FAIL: std::terminate (an exception left the shim) in %s\n", g_what);
    std::abort();
  });
  const char* ops[] = {"unlink", "unlinkat", "remove", "rename", "rmdir"};
  for (const char* op : ops) {
    long points = every_point(op);
    if (points < 0) return 1;
    printf("%s: %ld allocations, each failed in turn: same answer\n", op, points);
  }
  long points = refresh_points("unlink");
  if (points < 0) return 1;
  printf("unlink at a mount-table refresh: %ld allocations, the first, last and every 25th failed: same answer\n",
         points);
  if (points == 0) return fail("no allocation in the shim at all: is it loaded?");
  rmdir(g_dir);
  puts("PASS: a failed allocation anywhere in the shim never ends the process or changes an answer");
  return 0;
}
