// lock_probe: POSIX record locks (fcntl) on a file, for the lock tests of nfs:// mounts.
//   lock_probe hold FILE READY RELEASE  write-lock [0,100), create READY, wait for RELEASE
//                                       to exist, then close the file (no explicit unlock)
//   lock_probe try FILE                 F_SETLK write [0,100): prints "granted" or "busy"
//   lock_probe getlk FILE               F_GETLK write [50,10): "unlocked" or "locked R|W START LEN"
//   lock_probe wait FILE SECONDS        F_SETLKW write [0,100) under alarm(SECONDS):
//                                       "granted MS" or "interrupted MS" (also on an
//                                       earlier SIGALRM)
// Exit 0 unless a call fails in another way than expected (then 1, with the errno).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct flock range(short type, off_t start, off_t len) {
  struct flock lk;
  std::memset(&lk, 0, sizeof lk);
  lk.l_type = type;
  lk.l_whence = SEEK_SET;
  lk.l_start = start;
  lk.l_len = len;
  return lk;
}

int fail(const char* what) {
  std::printf("error: %s: %s\n", what, std::strerror(errno));
  return 1;
}

void on_alarm(int) {}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: lock_probe hold|try|getlk|wait FILE [...]\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "wait") {
    // Before the open, which may wait too: a signal then ends the open, not the process.
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;  // no SA_RESTART: the wait ends with EINTR
    sigaction(SIGALRM, &sa, nullptr);
  }
  int fd = ::open(argv[2], O_RDWR);
  if (fd < 0) return fail("open");
  if (mode == "hold" && argc == 5) {
    struct flock lk = range(F_WRLCK, 0, 100);
    if (fcntl(fd, F_SETLK, &lk) != 0) return fail("F_SETLK");
    int r = ::open(argv[3], O_CREAT | O_WRONLY, 0644);
    if (r < 0) return fail("ready flag");
    ::close(r);
    while (::access(argv[4], F_OK) != 0) usleep(20000);
    ::close(fd);  // releases the lock
    std::printf("released\n");
    return 0;
  }
  if (mode == "try") {
    struct flock lk = range(F_WRLCK, 0, 100);
    if (fcntl(fd, F_SETLK, &lk) == 0) {
      std::printf("granted\n");
      return 0;
    }
    if (errno == EAGAIN || errno == EACCES) {
      std::printf("busy\n");
      return 0;
    }
    return fail("F_SETLK");
  }
  if (mode == "getlk") {
    struct flock lk = range(F_WRLCK, 50, 10);
    if (fcntl(fd, F_GETLK, &lk) != 0) return fail("F_GETLK");
    if (lk.l_type == F_UNLCK) {
      std::printf("unlocked\n");
    } else {
      std::printf("locked %c %lld %lld\n", lk.l_type == F_RDLCK ? 'R' : 'W',
                  static_cast<long long>(lk.l_start), static_cast<long long>(lk.l_len));
    }
    return 0;
  }
  if (mode == "wait" && argc == 4) {
    alarm(static_cast<unsigned>(std::atoi(argv[3])));
    auto t0 = std::chrono::steady_clock::now();
    struct flock lk = range(F_WRLCK, 0, 100);
    int rv = fcntl(fd, F_SETLKW, &lk);
    long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - t0).count();
    if (rv == 0) {
      std::printf("granted %lld\n", ms);
      return 0;
    }
    if (errno == EINTR) {
      std::printf("interrupted %lld\n", ms);
      return 0;
    }
    return fail("F_SETLKW");
  }
  std::fprintf(stderr, "lock_probe: bad arguments\n");
  return 2;
}
