// pause_at.so: a test helper preloaded next to the nfsshim preload. It stops the
// process (SIGSTOP, so a test can look at it and then SIGCONT it) on the first call
// of each function named in PAUSE_AT (comma separated; supported: rmdir, munmap).
// On a stop it prints "pause_at: FUNC" on stderr first. Either order in LD_PRELOAD
// works: in front of the shim it is called directly, behind it the shim's wrappers
// reach it as the "real" function (dlsym RTLD_NEXT).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace {

// True once, on the first call of FUNC, if PAUSE_AT names it.
bool first_call(const char* func, std::atomic<bool>* done) {
  if (done->exchange(true)) return false;
  const char* list = getenv("PAUSE_AT");
  if (!list) return false;
  size_t n = strlen(func);
  for (const char* p = list; *p;) {
    const char* end = strchr(p, ',');
    size_t len = end ? static_cast<size_t>(end - p) : strlen(p);
    if (len == n && strncmp(p, func, n) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

void pause_here(const char* func) {
  char msg[64] = "pause_at: ";
  strncat(msg, func, sizeof msg - strlen(msg) - 2);
  strcat(msg, "\n");
  ssize_t ignored = write(2, msg, strlen(msg));
  (void)ignored;
  raise(SIGSTOP);
}

std::atomic<bool> g_rmdir{false}, g_munmap{false};

using RmdirFn = int (*)(const char*);
using MunmapFn = int (*)(void*, size_t);
RmdirFn g_real_rmdir;
MunmapFn g_real_munmap;

// Resolved once, before main: no dlsym inside the wrappers (munmap may be called
// while the loader or the shim is still setting up).
__attribute__((constructor)) void resolve() {
  g_real_rmdir = reinterpret_cast<RmdirFn>(dlsym(RTLD_NEXT, "rmdir"));
  g_real_munmap = reinterpret_cast<MunmapFn>(dlsym(RTLD_NEXT, "munmap"));
}

}  // namespace

extern "C" int rmdir(const char* path) {
  if (first_call("rmdir", &g_rmdir)) pause_here("rmdir");
  return g_real_rmdir ? g_real_rmdir(path) : static_cast<int>(syscall(SYS_rmdir, path));
}

extern "C" int munmap(void* addr, size_t len) {
  if (!g_real_munmap) return static_cast<int>(syscall(SYS_munmap, addr, len));
  if (first_call("munmap", &g_munmap)) pause_here("munmap");
  return g_real_munmap(addr, len);
}
