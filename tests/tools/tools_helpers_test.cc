// Small pieces of the tools: LD_PRELOAD composition, silly-rename names, ELF check,
// the holder scan, and gc of stats files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli.h"
#include "gc.h"
#include "holders.h"
#include "preload_lib.h"
#include "silly_walk.h"

namespace nfsshim::tools {
namespace {

// Names other users chose reach root's terminal and the journal: no escape sequence, no
// second line; ordinary UTF-8 stays as it is.
TEST(Output, TerminalSafeWritesControlCharactersAsEscapes) {
  EXPECT_EQ(terminal_safe("plain/path.nfs0001"), "plain/path.nfs0001");
  EXPECT_EQ(terminal_safe("x\x1b[2Jy"), "x\\x1b[2Jy");
  EXPECT_EQ(terminal_safe("a\nremoved: /etc/shadow"), "a\\x0aremoved: /etc/shadow");
  EXPECT_EQ(terminal_safe(std::string("t\x7f\x00z", 4)), "t\\x7f\\x00z");
  EXPECT_EQ(terminal_safe("c1\xc2\x9b" "31m"), "c1\\u009b31m");           // U+009B, CSI
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xe2\x88\x95"), "caf\xc3\xa9 \xe2\x88\x95");  // é, U+2215
  EXPECT_EQ(terminal_safe("bad\x9b"), "bad\xef\xbf\xbd");               // not UTF-8: U+FFFD
}

TEST(Run, PrependsThePreloadAndKeepsTheRest) {
  EXPECT_EQ(prepend_preload("/l/p.so", ""), "/l/p.so");
  EXPECT_EQ(prepend_preload("/l/p.so", "/a.so"), "/l/p.so:/a.so");
  EXPECT_EQ(prepend_preload("/l/p.so", "/a.so /b.so:/c.so"), "/l/p.so:/a.so:/b.so:/c.so");
  EXPECT_EQ(prepend_preload("/l/p.so", "/a.so:/l/p.so"), "/l/p.so:/a.so") << "not loaded twice";
}

TEST(Run, ElfCheck) {
  std::string why;
  EXPECT_TRUE(check_elf_library("/proc/self/exe", &why) || why.find("not a shared library") != std::string::npos) << why;
  EXPECT_FALSE(check_elf_library("/etc/hostname", &why));
  EXPECT_NE(why.find("not an ELF"), std::string::npos) << why;
  EXPECT_FALSE(check_elf_library("/nonexistent/lib.so", &why));
  EXPECT_NE(why.find("cannot open"), std::string::npos) << why;
}

TEST(Holders, FindsOurOwnDescriptor) {
  char tmpl[] = "/tmp/nfsshim-holders.XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  struct Unlink {
    const char* path;
    ~Unlink() { ::unlink(path); }
  } unlink_at_exit{tmpl};  // also when an ASSERT below returns early
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  // The name stays until the last scan: a freed inode number can be given at once to
  // another process's new file (tests run in parallel), which would then "hold" ours.
  InodeKey held{st.st_dev, st.st_ino};
  InodeKey nobody{st.st_dev, st.st_ino + 1000000007};
  HolderScan h = scan_holders({held, nobody});
  EXPECT_EQ(h.holder[0], ::getpid());
  EXPECT_EQ(h.holder[1], 0);
  ::close(fd);
  h = scan_holders({held});
  EXPECT_EQ(h.holder[0], 0) << "closed, nobody holds it";
}

}  // namespace
}  // namespace nfsshim::tools
