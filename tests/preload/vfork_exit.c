// vfork_exit WATCHED_DIR: a vfork child whose exec fails and that then calls exit(), not
// _exit() (as careless launchers do), runs the exit handlers in its parent's memory. The
// shim's handler removes the process's graveyard entries at exit: in such a child it must
// leave the parent's alone. Exit 0 and "PASS" if it does.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "names_with.h"

static char grave[4096];

// Graveyard entries of PID (names b~HOST~BOOT[.PIDNS]~PID~START~SEQ).
static int entries(pid_t pid) {
  char tag[32];
  snprintf(tag, sizeof tag, "~%d~", (int)pid);
  int n = names_with(grave, tag);
  return n < 0 ? 0 : n;
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: vfork_exit WATCHED_DIR");
  char file[4096];
  snprintf(file, sizeof file, "%s/vfork_exit.%d", argv[1], (int)getpid());
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", argv[1], (int)geteuid());
  int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "parent's", 8) != 8) return fail("cannot write the file");
  if (unlink(file) != 0) return fail("unlink");
  if (entries(getpid()) != 1) return fail("the unlinked open file was not buried: is the shim loaded?");
  pid_t child = vfork();
  if (child == 0) {
    execl("/nonexistent/program", "program", (char*)NULL);
    exit(127);  // not _exit: the exit handlers run, in the parent's memory
  }
  int st = 0;
  if (child < 0 || waitpid(child, &st, 0) != child) return fail("vfork/waitpid");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 127) return fail("the child did not exit with 127");
  if (entries(getpid()) != 1) return fail("the vfork child's exit() removed the parent's graveyard entry");
  char buf[8];
  if (pread(fd, buf, sizeof buf, 0) != 8 || memcmp(buf, "parent's", 8) != 0)
    return fail("the parent's open file lost its data");
  close(fd);
  if (entries(getpid()) != 0) return fail("the parent's last close did not remove its entry");
  puts("PASS: a vfork child's exit() left the parent's entry; the parent's last close removed it");
  return 0;
}
