// Test helpers for the preload's C test programs: counting graveyard entries by name, and
// reporting a failure.
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <string.h>

// Prints "FAIL: WHY" on stderr; returns 1 (the exit status).
static inline int fail(const char* why) {
  fprintf(stderr, "FAIL: %s\n", why);
  return 1;
}

// Names in DIR that contain TAG (an entry's owner pid is "~PID~" in b~HOST~BOOT~PID~START~SEQ);
// -1 if DIR cannot be opened.
static inline int names_with(const char* dir, const char* tag) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, tag)) ++n;
  closedir(d);
  return n;
}
