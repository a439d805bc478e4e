// log = file:PATH (libshim/src/log/log.cc) keeps no descriptor of its own open between
// lines: a host that closes every descriptor above 2 (closefrom, as daemons and the JVM's
// process launcher do) and opens a file of its own must not find our next line in it, and
// no exec'd child inherits the log file.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "nfsshim/log.h"
#include "temp_dir.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Descriptors of this process that name PATH.
int fds_on(const std::string& path) {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = ::readdir(d)) {
    char link[PATH_MAX];
    std::string fd = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = ::readlink(fd.c_str(), link, sizeof link - 1);
    if (len > 0 && std::string(link, static_cast<size_t>(len)) == path) ++n;
  }
  ::closedir(d);
  return n;
}

TEST(LogFile, KeepsNoDescriptorThatTheHostCouldCloseAndReuse) {
  TempDir t;
  const std::string log = t.path() + "/shim.log", host = t.path() + "/host.data";
  std::string why;
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "file:" + log, "info", &why)) << why;
  SHIM_LOG_WARN("first line");
  EXPECT_EQ(fds_on(log), 0) << "the log file stays open: exec'd children inherit it";
  // The host closes what it does not know of and opens its own file: the lowest free
  // number, the one our log file had if we kept it.
  for (int fd = 3; fd < 64; ++fd) {
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    char buf[PATH_MAX];
    ssize_t len = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (len > 0 && std::string(buf, static_cast<size_t>(len)) == log) ::close(fd);
  }
  int hfd = ::open(host.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(hfd, 0);
  SHIM_LOG_WARN("second line");
  ::close(hfd);
  EXPECT_EQ(slurp(host), "") << "the shim's log line went into the host's file";
  const std::string got = slurp(log);
  EXPECT_NE(got.find("first line"), std::string::npos) << got;
  EXPECT_NE(got.find("second line"), std::string::npos) << got;
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "stderr", "warn", &why)) << why;
}

// A target that is not a regular file (a FIFO would block every thread that logs) is
// refused at init.
TEST(LogFile, AFifoIsRefusedAtInit) {
  TempDir t;
  const std::string fifo = t.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(nfsshim::log::init("nfsshim-test", "file:" + fifo, "info", &why));
  EXPECT_NE(why.find(fifo), std::string::npos) << why;  // ENXIO (no reader) or not regular
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "stderr", "warn", &why)) << why;
}

// A target that cannot be opened is refused at init (the caller logs to stderr instead).
TEST(LogFile, AnUnwritableTargetIsRefusedAtInit) {
  std::string why;
  EXPECT_FALSE(nfsshim::log::init("nfsshim-test", "file:/nonexistent-dir/x.log", "info", &why));
  EXPECT_NE(why.find("/nonexistent-dir/x.log"), std::string::npos) << why;
  ASSERT_TRUE(nfsshim::log::init("nfsshim-test", "stderr", "warn", &why)) << why;
}

}  // namespace
