// LD_PRELOAD for the daemon: holds one of its threads at a chosen point of an op until the
// test has done what it races with. DAEMON_PAUSE=POINT:NAME:DIR, POINT one of
//   after-stat     after the first newfstatat of NAME (a lookup's stat of the name)
//   before-unlink  before the first unlinkat of NAME
// (the daemon's sys:: calls go through syscall(3)). The thread creates DIR/paused and
// waits (at most 20 s) until DIR/go exists, once per process.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int paused;

static void pause_if(const char* point, const char* name) {
  const char* spec = getenv("DAEMON_PAUSE");
  size_t plen = strlen(point);
  if (!spec || !name || strncmp(spec, point, plen) != 0 || spec[plen] != ':') return;
  const char* want = spec + plen + 1;
  const char* colon = strchr(want, ':');
  if (!colon || strncmp(want, name, (size_t)(colon - want)) != 0 || name[colon - want] != '\0' ||
      __atomic_exchange_n(&paused, 1, __ATOMIC_SEQ_CST))
    return;
  char mark[4096], go[4096];
  snprintf(mark, sizeof mark, "%s/paused", colon + 1);
  snprintf(go, sizeof go, "%s/go", colon + 1);
  int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  struct stat st;
  for (int i = 0; i < 2000 && stat(go, &st) != 0; i++) usleep(10000);
}

// Takes six arguments whatever the call passed, as syscall(3) itself does: reading past
// the ones passed is that function's contract, not a bug for AddressSanitizer to report
// (the sanitizer trees build this hook instrumented too).
__attribute__((no_sanitize_address)) long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  if (n == SYS_unlinkat) pause_if("before-unlink", (const char*)a[1]);
  long rv = real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (n == SYS_newfstatat) {
    int e = errno;
    pause_if("after-stat", (const char*)a[1]);
    errno = e;
  }
  return rv;
}
