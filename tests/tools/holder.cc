// holder: a test program driven line by line on stdin, run under the preload.
//   hold PATH   create/open PATH, then unlink it while open -> "held PATH"
//   close       close every descriptor it holds            -> "closed"
//   nodump      prctl(PR_SET_DUMPABLE, 0)                  -> "nodump"
//   quit        exit normally
// It prints "ready PID" first. Every reply is flushed, so a test can step it.
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

int main() {
  std::vector<int> fds;
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("hold ", 0) == 0) {
      std::string path = line.substr(5);
      int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0 || write(fd, "x", 1) != 1 || unlink(path.c_str()) != 0) {
        std::printf("error %s: %s\n", path.c_str(), std::strerror(errno));
      } else {
        fds.push_back(fd);
        std::printf("held %s\n", path.c_str());
      }
    } else if (line == "close") {
      for (int fd : fds) close(fd);
      fds.clear();
      std::printf("closed\n");
    } else if (line == "nodump") {
      // Like a setcap'd program: /proc/PID then belongs to root, and hidepid=2 hides it
      // even from processes of the same user.
      if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) std::printf("error nodump: %s\n", std::strerror(errno));
      else std::printf("nodump\n");
    } else if (line == "quit") {
      return 0;
    } else {
      std::printf("error unknown command '%s'\n", line.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
