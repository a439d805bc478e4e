// zombie_leader WATCH_DIR: the main thread calls pthread_exit while a worker goes on (a JVM
// launcher may do this). /proc/self is then the exited leader: its fd list is empty and
// its maps too, so a scan through it finds no references. A worker's unlink of a file it
// holds must still bury it, and a rename over a held target too. The scan happens in a
// forked child (the test harness's own main thread must not exit). Exit 0 and "PASS" if so.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "names_with.h"

static char dir[4096], grave[4200];

static int put(const char* name, const char* data) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && write(fd, data, strlen(data)) != (ssize_t)strlen(data)) return -1;
  return fd;
}

static int leader_is_zombie(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return strstr(buf, "\nState:\tZ") != NULL;
}

static void* worker(void* arg) {
  (void)arg;
  char tag[32], seg[4200], ck[4200], tmp[4200];
  snprintf(tag, sizeof tag, "~%d~", (int)getpid());
  snprintf(seg, sizeof seg, "%s/seg", dir);
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(tmp, sizeof tmp, "%s/ck.tmp", dir);
  // Until the leader has exited: /proc/self/status says "State:\tZ (zombie)" then.
  for (int i = 0; !leader_is_zombie(); ++i) {
    if (i == 500) _exit(fail("the main thread did not exit within 5 s: the case is not made"));
    usleep(10 * 1000);
  }
  int fd = put("seg", "data");
  int fd2 = put("ck", "old");
  int fd3 = put("ck.tmp", "new");
  if (fd < 0 || fd2 < 0 || fd3 < 0) _exit(fail("create"));
  close(fd3);
  if (unlink(seg) != 0) _exit(fail("unlink"));
  int after_unlink = names_with(grave, tag);
  if (rename(tmp, ck) != 0) _exit(fail("rename"));
  int after_rename = names_with(grave, tag);
  close(fd);
  close(fd2);
  int after_close = names_with(grave, tag);
  fprintf(stderr, "graveyard entries after unlink: %d, after rename: %d, after the closes: %d\n",
          after_unlink, after_rename, after_close);
  if (after_unlink != 1) _exit(fail("the held file was unlinked plainly after the leader exited"));
  if (after_rename != 2) _exit(fail("the held rename target was not buried after the leader exited"));
  if (after_close != 0) _exit(fail("the last closes did not remove the entries"));
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: zombie_leader WATCH_DIR");
  snprintf(dir, sizeof dir, "%s/zombie_leader.%d", argv[1], (int)getpid());
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", argv[1], (int)geteuid());
  if (mkdir(dir, 0755) != 0) return fail("mkdir");
  pid_t child = fork();
  if (child == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) _exit(fail("pthread_create"));
    pthread_exit(NULL);
  }
  int st = 0;
  if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return fail("the child failed");
  char ck[4200];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  unlink(ck);
  rmdir(dir);
  puts("PASS: with the leader thread gone, held files were still buried");
  return 0;
}
