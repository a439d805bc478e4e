// crash_helper FILE die|wait: opens FILE, unlinks it (the shim buries it) and then
// either SIGKILLs itself (no exit handler runs) or waits for stdin to close.
#include <fcntl.h>
#include <signal.h>
#include <cstdio>
#include <unistd.h>

#include <cstring>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_helper FILE die|wait\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
  if (fd < 0 || write(fd, "doomed", 6) != 6 || unlink(argv[1]) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  std::printf("buried %s\n", argv[1]);
  std::fflush(stdout);
  if (std::strcmp(argv[2], "die") == 0) kill(getpid(), SIGKILL);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  close(fd);
  return 0;
}
