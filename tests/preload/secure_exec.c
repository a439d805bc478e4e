// secure_exec LIB: says whether it runs in secure-execution mode (AT_SECURE: installed
// set-user-ID root and run by another user), then loads LIB (the preload) by its path, as
// the dynamic loader loads /etc/ld.so.preload into such programs, so that its constructor
// reads the caller's environment from here.
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: secure_exec LIB\n");
    return 2;
  }
  printf("secure=%lu\n", getauxval(AT_SECURE));
  fflush(stdout);
  if (!dlopen(argv[1], RTLD_NOW)) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  printf("loaded\n");
  return 0;
}
