// graveyard_removed WATCH_DIR [SERVER_VIEW]: an operator removes the graveyard directory while
// the process runs (rm -rf from a shell without the shim; with SERVER_VIEW, the directory on
// the NFS server that WATCH_DIR shows, as from another NFS client: our descriptor then says
// ESTALE, not ENOENT). The next unlink of a held file must make the graveyard again and bury
// the file there, not silently run the plain call. WATCH_DIR must be this test's own: the
// whole graveyard is removed. Exit 0 and "PASS" if so.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names_with.h"

// Creates DIR/NAME, unlinks it while open; returns the descriptor (or -1).
static int held_and_unlinked(const char* dir, const char* name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || unlink(path) != 0) return -1;
  return fd;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) return fail("usage: graveyard_removed WATCH_DIR [SERVER_VIEW]");
  char grave[4300], top[4200], cmd[4300], tag[32], removed[4200];
  snprintf(top, sizeof top, "%s/.graveyard.nfsshim", argv[1]);
  snprintf(removed, sizeof removed, "%s/.graveyard.nfsshim", argv[argc - 1]);
  snprintf(grave, sizeof grave, "%s/u%d", top, (int)geteuid());
  snprintf(tag, sizeof tag, "~%d~", (int)getpid());

  int fd = held_and_unlinked(argv[1], "a");
  if (fd < 0) return fail("unlink of a");
  if (names_with(grave, tag) != 1) return fail("a was not buried: is the shim loaded?");
  close(fd);
  if (names_with(grave, tag) != 0) return fail("the last close of a did not remove its entry");

  snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD rm -rf '%s'", removed);
  if (system(cmd) != 0 || access(removed, F_OK) == 0) return fail("rm -rf of the graveyard");

  for (int i = 0; i < 2; ++i) {
    fd = held_and_unlinked(argv[1], "b");
    if (fd < 0) return fail("unlink of b");
    int n = names_with(grave, tag);
    if (n != 1) {
      fprintf(stderr, "unlink #%d of a held file after the graveyard was removed: %d entries\n", i + 1, n);
      return fail("the held file was not buried in a graveyard made again");
    }
    close(fd);
    if (names_with(grave, tag) != 0) return fail("the last close of b did not remove its entry");
  }
  puts("PASS: after the graveyard was removed, the next bury made it again");
  return 0;
}
