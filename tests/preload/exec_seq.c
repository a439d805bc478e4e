// exec_seq WATCHED_DIR: after exec the pid and start time stay the same, and the shim in
// the new image adopts the entries of the old one. Its own entry names must then go on
// past the adopted ones: a new image that numbered its entries from 0 again found the
// first 4 names taken and gave up ("cannot use the graveyard (File exists); using the
// plain call": on NFS a silly rename). This program buries 4 held files, execs itself
// with its stderr in a file, and unlinks a fifth held file: expected 5 entries and no
// warning. Exit 0 and "PASS" if so.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names_with.h"

static char grave[4096];

// Graveyard entries of this process (names b~HOST~BOOT[.PIDNS]~PID~START~SEQ).
static int entries(void) {
  char tag[32];
  snprintf(tag, sizeof tag, "~%d~", (int)getpid());
  int n = names_with(grave, tag);
  return n < 0 ? 0 : n;
}

// Creates DIR/exec_seq.PID.I, keeps it open (across exec: no O_CLOEXEC) and unlinks it.
static int hold_and_unlink(const char* dir, int i) {
  char file[4096];
  snprintf(file, sizeof file, "%s/exec_seq.%d.%d", dir, (int)getpid(), i);
  int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "x", 1) != 1 || unlink(file) != 0) return -1;
  if (access(file, F_OK) == 0) return -1;
  return fd;
}

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: exec_seq WATCHED_DIR");
  const char* dir = argv[1];
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", dir, (int)geteuid());
  char log[4096];
  snprintf(log, sizeof log, "%s/exec_seq.%d.log", dir, (int)getpid());
  if (argc == 2) {  // the first image
    for (int i = 0; i < 4; ++i)
      if (hold_and_unlink(dir, i) < 0) return fail("cannot hold and unlink a file");
    if (entries() != 4) return fail("the 4 unlinked open files were not buried: is the shim loaded?");
    int l = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (l < 0 || dup2(l, 2) != 2) return fail("cannot send stderr to the log");
    close(l);
    execl("/proc/self/exe", argv[0], dir, "after-exec", (char*)NULL);
    return fail("exec");
  }
  // The new image: the shim's stderr goes to the log until the result is known.
  int fd = hold_and_unlink(dir, 4);
  int n = entries();
  char buf[4096] = {0};
  int l = open(log, O_RDONLY);
  ssize_t got = l < 0 ? -1 : read(l, buf, sizeof buf - 1);
  if (l >= 0) close(l);
  unlink(log);
  int out = open("/dev/stdout", O_WRONLY);  // stderr back where the test can see it
  if (out >= 0) dup2(out, 2);
  if (got < 0) return fail("cannot read the log");
  fprintf(stderr, "after exec: %d entries; the shim said: %s\n", n, got > 0 ? buf : "(nothing)\n");
  if (fd < 0) return fail("cannot hold and unlink the fifth file");
  if (n != 5) return fail("the fifth unlinked open file was not buried (not 5 entries)");
  if (strstr(buf, "cannot use the graveyard")) return fail("the shim fell back to the plain call");
  puts("PASS: after exec the fifth held file was buried next to the 4 adopted ones");
  return 0;
}
