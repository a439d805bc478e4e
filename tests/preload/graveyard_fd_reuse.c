// graveyard_fd_reuse WATCHED_DIR: the shim keeps a descriptor of the graveyard. A host that
// closes every descriptor it does not know of (a close loop from 3 up, as daemons do) closes
// it too, and the next directory the host opens may get its number. The next bury must
// still go into the graveyard, never into the host's directory. Exit 0 and "PASS" if so.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names_with.h"

static char grave[4096];

// Creates DIR/NAME, keeps it open as descriptor KEEP (above the host's close loop) and
// unlinks it: it is buried.
static int held_and_unlinked(const char* dir, const char* name, int keep) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || dup2(fd, keep) != keep) return -1;
  close(fd);
  return unlink(path);
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: graveyard_fd_reuse WATCHED_DIR");
  char dir[4096], sub[4200], tag[32];
  snprintf(dir, sizeof dir, "%s/graveyard_fd_reuse.%d", argv[1], (int)getpid());
  snprintf(sub, sizeof sub, "%s/sub", dir);
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", argv[1], (int)geteuid());
  snprintf(tag, sizeof tag, "~%d~", (int)getpid());
  if (mkdir(dir, 0755) != 0 || mkdir(sub, 0755) != 0) return fail("mkdir");

  // The first bury opens the graveyard's descriptor.
  if (held_and_unlinked(dir, "a", 2000) != 0) return fail("unlink of a");
  if (names_with(grave, tag) != 1) return fail("a was not buried: is the shim loaded?");

  // The host closes everything it does not know of, then opens its own directory: one of
  // these gets the graveyard descriptor's old number.
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  int subs[64];
  for (int i = 0; i < 64; ++i)
    if ((subs[i] = open(sub, O_RDONLY | O_DIRECTORY)) < 0) return fail("open sub");

  if (held_and_unlinked(dir, "b", 2001) != 0) return fail("unlink of b");
  int in_sub = names_with(sub, "~");
  int in_grave = names_with(grave, tag);
  for (int i = 0; i < 64; ++i) close(subs[i]);
  if (in_sub != 0) return fail("the bury went into the host's directory through a reused descriptor number");
  if (in_grave != 2) return fail("b is not in the graveyard next to a");

  // The last closes remove both entries, through the graveyard's new descriptor.
  close(2000);
  close(2001);
  if (names_with(grave, tag) != 0) return fail("the last closes did not remove the entries");
  rmdir(sub);
  rmdir(dir);
  puts("PASS: after the host closed the graveyard's descriptor and reused its number, buries still went to the graveyard");
  return 0;
}
