// LD_PRELOAD for the daemon in create_race_test.sh: the attacker who wins the race between
// the daemon making a node and giving it to the caller. NODE_SWAP=NAME:VICTIM: right
// after a symlinkat, mknodat or openat(O_CREAT) of NAME succeeds, NAME is renamed to
// NAME.made and VICTIM (an absolute path on the same filesystem) is renamed to NAME, once
// per process.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int swapped;

static void swap(int dirfd, const char* name) {
  const char* spec = getenv("NODE_SWAP");
  const char* colon = spec ? strchr(spec, ':') : NULL;
  if (swapped || !colon || strncmp(spec, name, (size_t)(colon - spec)) != 0 ||
      name[colon - spec] != '\0')
    return;
  swapped = 1;
  char made[4096];
  snprintf(made, sizeof made, "%s.made", name);
  if (renameat(dirfd, name, dirfd, made) != 0 || renameat(AT_FDCWD, colon + 1, dirfd, name) != 0)
    perror("node_swap: rename");
}

int symlinkat(const char* target, int dirfd, const char* name) {
  int (*real)(const char*, int, const char*) =
      (int (*)(const char*, int, const char*))dlsym(RTLD_NEXT, "symlinkat");
  int rv = real(target, dirfd, name);
  if (rv == 0) swap(dirfd, name);
  return rv;
}

int mknodat(int dirfd, const char* name, mode_t mode, dev_t dev) {
  int (*real)(int, const char*, mode_t, dev_t) =
      (int (*)(int, const char*, mode_t, dev_t))dlsym(RTLD_NEXT, "mknodat");
  int rv = real(dirfd, name, mode, dev);
  if (rv == 0) swap(dirfd, name);
  return rv;
}

static int open_and_swap(const char* sym, int dirfd, const char* name, int flags, va_list ap) {
  mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
  int (*real)(int, const char*, int, ...) = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, sym);
  int rv = real(dirfd, name, flags, mode);
  if (rv >= 0 && (flags & O_CREAT)) swap(dirfd, name);
  return rv;
}

int openat(int dirfd, const char* name, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int rv = open_and_swap("openat", dirfd, name, flags, ap);
  va_end(ap);
  return rv;
}

int openat64(int dirfd, const char* name, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int rv = open_and_swap("openat64", dirfd, name, flags, ap);
  va_end(ap);
  return rv;
}
