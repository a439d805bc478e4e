// LD_PRELOAD for the daemon in lookup_reuse_test.sh: holds the daemon between the
// lookup's stat of a name and what it does with the answer. LOOKUP_PAUSE=NAME:DIR: after
// the first newfstatat of NAME (the daemon's sys::fstatat goes through syscall(3)), it
// creates DIR/paused and waits (at most 20 s) until DIR/go exists, once per process.
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

static void pause_if(const char* name) {
  const char* spec = getenv("LOOKUP_PAUSE");
  const char* colon = spec ? strchr(spec, ':') : NULL;
  if (!colon || !name || strncmp(spec, name, (size_t)(colon - spec)) != 0 ||
      name[colon - spec] != '\0' || __atomic_exchange_n(&paused, 1, __ATOMIC_SEQ_CST))
    return;
  char mark[4096], go[4096];
  snprintf(mark, sizeof mark, "%s/paused", colon + 1);
  snprintf(go, sizeof go, "%s/go", colon + 1);
  int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  struct stat st;
  for (int i = 0; i < 2000 && stat(go, &st) != 0; i++) usleep(10000);
}

long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  long rv = real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (n == SYS_newfstatat) {
    int e = errno;
    pause_if((const char*)a[1]);
    errno = e;
  }
  return rv;
}
