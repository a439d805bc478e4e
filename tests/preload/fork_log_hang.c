// fork_log_hang WATCHED_DIR (run with NFSSHIM_LOG_LEVEL=debug): one thread is inside a
// shim log line, blocked writing to a full stderr pipe, when another thread forks. The
// child must not hang in the shim's fork handler (which starts a new logger for the child):
// it must reach its _exit(0). Exit 0 and "PASS" if it does.
//
// The log line: rmdir of a directory holding only a silly-rename leftover; the shim sweeps
// it into the graveyard and says so (info), holding none of its own locks while it writes.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[4096];
// Set by the thread when rmdir returns. Atomic: the blocked write is a raw syscall,
// which orders nothing for ThreadSanitizer.
static int rmdir_rv = -2;
static int rmdir_done(void) { return __atomic_load_n(&rmdir_rv, __ATOMIC_ACQUIRE); }

static void* remover(void* arg) {
  (void)arg;
  int rv = rmdir(dir);  // logs "moved 1 silly-rename leftovers", blocks on stderr
  __atomic_store_n(&rmdir_rv, rv, __ATOMIC_RELEASE);
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int out = -1;  // the original stderr
static int fail(const char* why) {
  dprintf(out, "FAIL: %s\n", why);
  return 1;
}

int main(int argc, char** argv) {
  out = dup(2);
  if (argc != 2) return fail("usage: fork_log_hang WATCHED_DIR");
  snprintf(dir, sizeof dir, "%s/fork_log_hang.%d", argv[1], (int)getpid());
  char leftover[4200];
  snprintf(leftover, sizeof leftover, "%s/.nfs0000000000000000000000f1", dir);
  int fd;
  if (mkdir(dir, 0755) != 0 || (fd = open(leftover, O_WRONLY | O_CREAT, 0644)) < 0) return fail("setup");
  close(fd);
  // The shim's first use of the graveyard happens now, by the same kind of rmdir, while
  // stderr still takes lines: it may log (entries of dead owners reaped) under its own
  // locks, which fork waits for.
  char warm[4200], warm_leftover[4300];
  snprintf(warm, sizeof warm, "%s.warm", dir);
  snprintf(warm_leftover, sizeof warm_leftover, "%s/.nfs0000000000000000000000f2", warm);
  if (mkdir(warm, 0755) != 0 || (fd = open(warm_leftover, O_WRONLY | O_CREAT, 0644)) < 0) return fail("setup");
  close(fd);
  if (rmdir(warm) != 0) return fail("the warm-up rmdir failed");

  // stderr becomes a full pipe: the next write to it blocks.
  int p[2];
  if (pipe(p) != 0 || dup2(p[1], 2) != 2) return fail("pipe");
  close(p[1]);
  fcntl(2, F_SETFL, O_NONBLOCK);
  static char block[4096];
  while (write(2, block, sizeof block) > 0) {}
  while (write(2, block, 1) > 0) {}
  fcntl(2, F_SETFL, 0);

  pthread_t t;
  if (pthread_create(&t, NULL, remover, NULL) != 0) return fail("pthread_create");
  usleep(300 * 1000);  // until the thread is blocked in its log line
  if (rmdir_done() != -2) return fail("rmdir returned without logging: run with NFSSHIM_LOG_LEVEL=debug, under the shim");

  pid_t child = fork();
  if (child == 0) _exit(0);
  if (child < 0) return fail("fork");

  // Unblock the thread, then give the child a while to exit.
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  int st = 0;
  pid_t got = 0;
  for (double end = now() + 10; now() < end && got == 0;) {
    while (read(p[0], block, sizeof block) > 0) {}
    got = waitpid(child, &st, WNOHANG);
    if (got == 0) usleep(10 * 1000);
  }
  if (got == 0) {
    kill(child, SIGKILL);
    waitpid(child, &st, 0);
    return fail("the forked child hangs in the shim's fork handler (stderr logger's lock)");
  }
  while (rmdir_done() == -2) {  // drain until the thread's line is through
    while (read(p[0], block, sizeof block) > 0) {}
    usleep(1000);
  }
  pthread_join(t, NULL);
  if (got != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return fail("the child did not _exit(0)");
  if (rmdir_done() != 0) return fail("rmdir of the directory with a silly-rename leftover failed");
  // The swept leftover waits in the graveyard for the foreign age: remove it now.
  char grave[4200], tag[32], entry[8400];
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", argv[1], (int)geteuid());
  snprintf(tag, sizeof tag, "~%d~", (int)getpid());
  DIR* d = opendir(grave);
  for (struct dirent* e; d && (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, tag) && snprintf(entry, sizeof entry, "%s/%s", grave, e->d_name) > 0) unlink(entry);
  if (d) closedir(d);
  dprintf(out, "PASS: a child forked while another thread was writing a shim log line exited\n");
  return 0;
}
