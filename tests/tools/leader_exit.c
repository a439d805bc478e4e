// leader_exit FILE [map]: holds FILE open (or, with "map", only mapped), starts a
// thread that sleeps, prints "ready PID" and ends its main thread with pthread_exit.
// The thread group leader is then a zombie whose /proc/PID/fd and maps read empty,
// while the other thread still holds FILE.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void* sleeper(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  if (argc > 2 && strcmp(argv[2], "map") == 0) {
    if (mmap(NULL, 1, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
      perror("mmap");
      return 1;
    }
    close(fd);
  }
  pthread_t t;
  if (pthread_create(&t, NULL, sleeper, NULL) != 0) return 1;
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  pthread_exit(NULL);
}
