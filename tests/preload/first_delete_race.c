// first_delete_race WATCHED_DIR: the first deletes of a process, made by several threads at
// once, must all go through the graveyard. The shim learns what is watched on the first
// delete; a thread that asks while another is still reading the mount table must wait for
// the answer, not take "nothing watched" and run the plain unlink (on NFS: a silly rename).
//
// 50 times: a fresh child (the parent has made no delete, so the child's shim has not looked
// yet) opens 8 files, releases 8 threads together that each unlink one, and checks (the
// files still open) that all 8 are in the graveyard. Exit 0 and "PASS" if every child saw 8.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "names_with.h"

enum { kThreads = 8, kChildren = 50 };

static char grave[4096];
static char files[kThreads][4200];
static pthread_barrier_t start;
static int unlink_rv[kThreads];

// Graveyard entries of PID (names b~HOST~BOOT[.PIDNS]~PID~START~SEQ).
static int entries(pid_t pid) {
  char tag[32];
  snprintf(tag, sizeof tag, "~%d~", (int)pid);
  int n = names_with(grave, tag);
  return n < 0 ? 0 : n;
}

static void* remover(void* arg) {
  int i = (int)(long)arg;
  pthread_barrier_wait(&start);
  unlink_rv[i] = unlink(files[i]);
  return NULL;
}

// One child: returns how many of its held files reached the graveyard (-1: setup failed).
static int child_run(const char* dir) {
  int fds[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    snprintf(files[i], sizeof files[i], "%s/first_delete_race.%d.%d", dir, (int)getpid(), i);
    fds[i] = open(files[i], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fds[i] < 0) return -1;
  }
  pthread_barrier_init(&start, NULL, kThreads);
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i)
    if (pthread_create(&t[i], NULL, remover, (void*)(long)i) != 0) return -1;
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < kThreads; ++i)
    if (unlink_rv[i] != 0) return -1;
  int n = entries(getpid());
  for (int i = 0; i < kThreads; ++i) close(fds[i]);
  return n;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: first_delete_race WATCHED_DIR\n");
    return 2;
  }
  snprintf(grave, sizeof grave, "%s/.graveyard.nfsshim/u%d", argv[1], (int)geteuid());
  // No delete in this process before the forks: each child's first look is its own.
  int bad = 0;
  for (int c = 0; c < kChildren; ++c) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      int n = child_run(argv[1]);
      if (n != kThreads) printf("child %d: %d of %d held files in the graveyard\n", (int)getpid(), n, kThreads);
      fflush(stdout);
      _exit(n == kThreads ? 0 : 1);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return 2;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  if (bad) {
    printf("FAIL: in %d of %d processes a first concurrent unlink of a held file ran plain\n", bad, kChildren);
    return 1;
  }
  printf("PASS: in %d processes all %d first concurrent unlinks of held files were buried\n", kChildren, kThreads);
  return 0;
}
