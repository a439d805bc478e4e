// Behaviour of the preload, run under LD_PRELOAD with NFSSHIM_WATCH=<scratch dir>.
// Every test checks the graveyard directly, so a run without the shim fails.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "preload_env.h"

using namespace shimtest;

namespace {

class Preload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(watch_root().empty()) << "run me under CTest (NFSSHIM_WATCH unset)";
    dir_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { EXPECT_TRUE(entries_of().empty()) << "leaked graveyard entries"; }
  std::string p(const char* name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(Preload, UnlinkOfOpenFileBuriesItAndFreesTheName) {
  write_file(p("seg.log"), "old data");
  int fd = open(p("seg.log").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  errno = 1234;
  ASSERT_EQ(unlink(p("seg.log").c_str()), 0);
  EXPECT_EQ(errno, 1234) << "success must leave errno alone";
  EXPECT_FALSE(exists(p("seg.log")));
  EXPECT_EQ(entries_of().size(), 1u);
  // The name is free at once; the old fd still has the old data and can write.
  write_file(p("seg.log"), "new file");
  EXPECT_EQ(read_fd(fd), "old data");
  ASSERT_EQ(pwrite(fd, "OLD", 3, 0), 3);
  EXPECT_EQ(read_fd(fd), "OLD data");
  EXPECT_EQ(read_file(p("seg.log")), "new file");
  ASSERT_EQ(close(fd), 0);
  EXPECT_TRUE(entries_of().empty());
  // rmdir works once everything is deleted.
  ASSERT_EQ(unlink(p("seg.log").c_str()), 0);
  EXPECT_EQ(rmdir(dir_.c_str()), 0);
}

TEST_F(Preload, UnlinkOfUnreferencedFileLeavesNothing) {
  write_file(p("a"), "x");
  ASSERT_EQ(unlink(p("a").c_str()), 0);
  EXPECT_FALSE(exists(p("a")));
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, AMappingAloneKeepsTheFileUntilTheLastMunmap) {
  int fd = open(p("00.index").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 3 * 4096), 0);
  auto* m = static_cast<char*>(mmap(nullptr, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(m, MAP_FAILED);
  std::strcpy(m + 4096, "index entry");
  ASSERT_EQ(close(fd), 0);  // Kafka closes the fd right after mapping
  ASSERT_EQ(unlink(p("00.index").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  EXPECT_STREQ(m + 4096, "index entry");
  ASSERT_EQ(munmap(m, 4096), 0);  // partial unmaps: still mapped
  EXPECT_EQ(entries_of().size(), 1u);
  ASSERT_EQ(munmap(m + 2 * 4096, 4096), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  EXPECT_STREQ(m + 4096, "index entry");
  ASSERT_EQ(munmap(m + 4096, 4096), 0);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, MremapMovesTheTrackedMapping) {
  int fd = open(p("i").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  close(fd);
  ASSERT_EQ(unlink(p("i").c_str()), 0);
  void* m2 = mremap(m, 4096, 8192, MREMAP_MAYMOVE);
  ASSERT_NE(m2, MAP_FAILED);
  EXPECT_EQ(entries_of().size(), 1u);
  ASSERT_EQ(munmap(m2, 8192), 0);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, MappingMadeAfterTheUnlinkIsTracked) {
  int fd = open(p("i").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(unlink(p("i").c_str()), 0);
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  close(fd);
  EXPECT_EQ(entries_of().size(), 1u);
  munmap(m, 4096);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, EveryDupKeepsItAlive) {
  write_file(p("f"), "data");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  int a = dup(fd);
  int b = fcntl(fd, F_DUPFD_CLOEXEC, 100);
  int c = dup2(fd, 150);
  int d = dup3(fd, 151, O_CLOEXEC);
  ASSERT_TRUE(a >= 0 && b >= 100 && c == 150 && d == 151);
  for (int x : {fd, a, b, c}) {
    ASSERT_EQ(close(x), 0);
    EXPECT_EQ(entries_of().size(), 1u);
  }
  EXPECT_EQ(read_fd(d), "data");
  // dup2 over the last reference closes it too.
  int nul = open("/dev/null", O_RDONLY);
  ASSERT_EQ(dup2(nul, d), d);
  close(nul);
  close(d);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, StdioStreamsAreReferencesToo) {
  write_file(p("f"), "stream");
  FILE* f = fopen(p("f").c_str(), "r");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(remove(p("f").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  char buf[16] = {};
  ASSERT_NE(fgets(buf, sizeof buf, f), nullptr);
  EXPECT_STREQ(buf, "stream");
  ASSERT_EQ(fclose(f), 0);
  EXPECT_TRUE(entries_of().empty());
}

// fileno() of a stream without a descriptor sets EBADF: the shim asks it (to know whether
// the stream holds a buried file) only while something is buried, and must not leave that
// errno behind a successful fclose.
TEST_F(Preload, FcloseOfAStreamWithoutADescriptorLeavesErrnoAlone) {
#if defined(__SANITIZE_THREAD__)
  // Measured: a TSan program without the shim gets errno 9 after fclose of a memstream
  // (TSan's own fclose interceptor asks fileno), so the errno there is not ours to check.
  GTEST_SKIP() << "TSan's fclose interceptor sets EBADF itself for a stream without a descriptor";
#endif
  write_file(p("f"), "held");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);  // something buried: fclose asks which fd it closes
  char* buf = nullptr;
  size_t len = 0;
  FILE* m = open_memstream(&buf, &len);
  ASSERT_NE(m, nullptr);
  errno = 1234;
  ASSERT_EQ(fclose(m), 0);
  EXPECT_EQ(errno, 1234) << "success must leave errno alone";
  free(buf);
  char raw[8];
  FILE* c = fmemopen(raw, sizeof raw, "w");
  ASSERT_NE(c, nullptr);
  errno = 1234;
  ASSERT_EQ(fclose(c), 0);
  EXPECT_EQ(errno, 1234) << "success must leave errno alone";
  errno = 1234;
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(errno, 1234);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, FreopenReleasesTheOldFile) {
  write_file(p("f"), "1");
  write_file(p("g"), "2");
  FILE* f = fopen(p("f").c_str(), "r");
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  f = freopen(p("g").c_str(), "r", f);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(entries_of().empty());
  fclose(f);
}

TEST_F(Preload, CloseRangeDropsReferences) {
  write_file(p("f"), "1");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(dup2(fd, 200), 200);
  close(fd);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  // Through the symbol the shim exports (glibc < 2.34, e.g. RHEL 8, declares none).
  using CloseRange = int (*)(unsigned, unsigned, int);
  auto cr = reinterpret_cast<CloseRange>(dlsym(RTLD_DEFAULT, "close_range"));
  ASSERT_NE(cr, nullptr);
  ASSERT_EQ(cr(200, 200, 0), 0);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, ClosefromDropsReferences) {
  write_file(p("f"), "1");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(dup2(fd, 900), 900);  // above every descriptor the test harness keeps
  close(fd);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  using Closefrom = void (*)(int);
  auto cf = reinterpret_cast<Closefrom>(dlsym(RTLD_DEFAULT, "closefrom"));
  ASSERT_NE(cf, nullptr);
  errno = 1234;
  cf(900);
  EXPECT_EQ(errno, 1234);
  EXPECT_EQ(fcntl(900, F_GETFD), -1);
  EXPECT_TRUE(entries_of().empty()) << "closefrom dropped the last reference but the entry stayed";
}

// glibc exports other names for close, dup2 and fclose (__close, __dup2, _IO_fclose, all
// GLIBC_2.2.5). A program (or a library) calling them drops the last reference as surely
// as close does. (Not fcloseall: glibc's flushes the streams and leaves their descriptors
// open.)
TEST_F(Preload, CloseAliasesDropReferences) {
  auto sym = [](const char* name) {
    void* f = dlsym(RTLD_DEFAULT, name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  };
  auto close_alias = reinterpret_cast<int (*)(int)>(sym("__close"));
  auto dup2_alias = reinterpret_cast<int (*)(int, int)>(sym("__dup2"));
  auto fclose_alias = reinterpret_cast<int (*)(FILE*)>(sym("_IO_fclose"));
  if (!close_alias || !dup2_alias || !fclose_alias) return;

  write_file(p("a"), "a");
  int fd = open(p("a").c_str(), O_RDONLY);
  ASSERT_EQ(unlink(p("a").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);
  errno = 1234;
  EXPECT_EQ(close_alias(fd), 0);
  EXPECT_EQ(errno, 1234);
  EXPECT_TRUE(entries_of().empty()) << "__close dropped the last reference but the entry stayed";

  write_file(p("b"), "b");
  fd = open(p("b").c_str(), O_RDONLY);
  int other = open("/dev/null", O_RDONLY);
  ASSERT_EQ(unlink(p("b").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);
  EXPECT_EQ(dup2_alias(other, fd), fd);
  EXPECT_TRUE(entries_of().empty()) << "__dup2 over the last reference but the entry stayed";
  close(fd);
  close(other);

  write_file(p("c"), "c");
  FILE* f = fopen(p("c").c_str(), "r");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(unlink(p("c").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);
  EXPECT_EQ(fclose_alias(f), 0);
  EXPECT_TRUE(entries_of().empty()) << "_IO_fclose dropped the last reference but the entry stayed";
}

// A recount that cannot read /proc (the process at its descriptor limit) knows nothing
// about the references: the entry stays, and the next close or munmap scans again, so the
// file goes once its last reference does, not at exit.
TEST_F(Preload, AnIncompleteScanIsRepeatedAtTheNextCloseOrMunmap) {
  write_file(p("idx"), std::string(4096, 'i'));
  int fd = open(p("idx").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(unlink(p("idx").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);
  struct rlimit old, low;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  low = old;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  int null = open("/dev/null", O_RDONLY);
  ASSERT_GE(null, 0);
  std::vector<int> fill;
  for (int d; (d = dup(null)) >= 0;) fill.push_back(d);  // the table is full
  // The close frees one slot: /proc/self/fd opens there, /proc/self/maps cannot.
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(entries_of().size(), 1u) << "removed although the mapping holds it";
  for (int d : fill) close(d);  // unrelated descriptors: each close may scan again
  close(null);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_EQ(static_cast<const char*>(m)[0], 'i');
  ASSERT_EQ(munmap(m, 4096), 0);
  EXPECT_TRUE(entries_of().empty()) << "the last munmap did not remove the entry";
}

TEST_F(Preload, RenameOverAnOpenTargetBuriesTheTarget) {
  write_file(p("checkpoint"), "old");
  int fd = open(p("checkpoint").c_str(), O_RDONLY);
  write_file(p("checkpoint.tmp"), "new");
  ASSERT_EQ(rename(p("checkpoint.tmp").c_str(), p("checkpoint").c_str()), 0);
  EXPECT_EQ(read_file(p("checkpoint")), "new");
  EXPECT_FALSE(exists(p("checkpoint.tmp")));
  EXPECT_EQ(read_fd(fd), "old");
  EXPECT_EQ(entries_of().size(), 1u);
  close(fd);
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, RenameOverATargetNoOneHoldsIsAtomic) {
  // Kafka's checkpoints are written to .tmp and renamed over their name, which must never
  // be missing: not to another thread, not after a crash between two steps.
  const std::string name = p("checkpoint"), tmp = p("checkpoint.tmp");
  // The shim is at work: a rename over a held target buries it.
  write_file(name, "held");
  int held = open(name.c_str(), O_RDONLY);
  write_file(tmp, "0");
  ASSERT_EQ(rename(tmp.c_str(), name.c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u) << "the held target was not buried: is the shim loaded?";
  close(held);
  EXPECT_TRUE(entries_of().empty());
  std::atomic<bool> stop{false};
  std::atomic<int> missing{0};
  std::thread watcher([&] {
    struct stat st;
    while (!stop.load()) {
      if (stat(name.c_str(), &st) != 0) missing.fetch_add(1);
    }
  });
  for (int i = 1; i <= 3000; ++i) {
    write_file(tmp, std::to_string(i));
    if (rename(tmp.c_str(), name.c_str()) != 0) {
      ADD_FAILURE() << "rename " << i << ": " << std::strerror(errno);
      break;
    }
  }
  stop = true;
  watcher.join();
  EXPECT_EQ(missing.load(), 0) << "the renamed-over name was missing to another thread";
  EXPECT_EQ(read_file(name), "3000");
  EXPECT_TRUE(entries_of().empty());
}

TEST_F(Preload, FailedRenamePutsTheTargetBack) {
  write_file(p("target"), "keep me");
  struct stat before, after;
  ASSERT_EQ(stat(p("target").c_str(), &before), 0);
  int fd = open(p("target").c_str(), O_RDONLY);
  ASSERT_EQ(mkdir(p("adir").c_str(), 0755), 0);
  // A directory cannot replace a file: EISDIR... from the kernel's check order, the
  // shim must return the plain call's errno.
  errno = 0;
  int rv = rename(p("adir").c_str(), p("target").c_str());
  int e = errno;
  EXPECT_EQ(rv, -1);
  EXPECT_EQ(e, ENOTDIR);
  errno = 0;
  EXPECT_EQ(renameat(AT_FDCWD, p("missing").c_str(), AT_FDCWD, p("target").c_str()), -1);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(stat(p("target").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(read_file(p("target")), "keep me");
  close(fd);
}

TEST_F(Preload, RenameNoreplaceAndExchangeAreUntouched) {
  write_file(p("a"), "A");
  write_file(p("b"), "B");
  int fd = open(p("b").c_str(), O_RDONLY);
  EXPECT_EQ(renameat2(AT_FDCWD, p("a").c_str(), AT_FDCWD, p("b").c_str(), RENAME_NOREPLACE), -1);
  EXPECT_EQ(errno, EEXIST);
  ASSERT_EQ(renameat2(AT_FDCWD, p("a").c_str(), AT_FDCWD, p("b").c_str(), RENAME_EXCHANGE), 0);
  EXPECT_EQ(read_file(p("a")), "B");
  EXPECT_TRUE(entries_of().empty());
  close(fd);
}

TEST_F(Preload, RenameOfAFileOntoItselfOrAHardLinkIsANoOp) {
  write_file(p("a"), "A");
  ASSERT_EQ(link(p("a").c_str(), p("b").c_str()), 0);
  int fd = open(p("a").c_str(), O_RDONLY);
  ASSERT_EQ(rename(p("a").c_str(), p("b").c_str()), 0);
  EXPECT_TRUE(exists(p("a")));  // POSIX: both names stay
  EXPECT_TRUE(exists(p("b")));
  EXPECT_TRUE(entries_of().empty());
  close(fd);
}

TEST_F(Preload, DirfdRelativeCalls) {
  int dfd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dfd, 0);
  int fd = openat(dfd, "x", O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(write(fd, "rel", 3), 3);
  ASSERT_EQ(unlinkat(dfd, "x", 0), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  EXPECT_EQ(read_fd(fd), "rel");
  ASSERT_EQ(mkdirat(dfd, "sub", 0755), 0);
  ASSERT_EQ(unlinkat(dfd, "sub", AT_REMOVEDIR), 0);
  close(fd);
  EXPECT_TRUE(entries_of().empty());
  close(dfd);
}

TEST_F(Preload, OPathAndOTmpfileDescriptors) {
  write_file(p("f"), "path");
  int pfd = open(p("f").c_str(), O_PATH);
  ASSERT_GE(pfd, 0);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);  // an O_PATH fd holds the inode too
  close(pfd);
  EXPECT_TRUE(entries_of().empty());

  int tfd = open(dir_.c_str(), O_TMPFILE | O_RDWR, 0600);
  if (tfd < 0 && errno == EOPNOTSUPP) GTEST_SKIP() << "no O_TMPFILE on this filesystem";
  ASSERT_GE(tfd, 0);
  ASSERT_EQ(write(tfd, "tmp", 3), 3);
  std::string proc = "/proc/self/fd/" + std::to_string(tfd);
  ASSERT_EQ(linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, p("t").c_str(), AT_SYMLINK_FOLLOW), 0);
  ASSERT_EQ(unlink(p("t").c_str()), 0);
  EXPECT_EQ(entries_of().size(), 1u);
  EXPECT_EQ(read_fd(tfd), "tmp");
  close(tfd);
}

TEST_F(Preload, SymlinksAreUnlinkedNotTheirTargets) {
  write_file(p("target"), "t");
  int fd = open(p("target").c_str(), O_RDONLY);
  ASSERT_EQ(symlink("target", p("link").c_str()), 0);
  ASSERT_EQ(unlink(p("link").c_str()), 0);
  EXPECT_FALSE(exists(p("link")));
  EXPECT_EQ(read_file(p("target")), "t");
  EXPECT_TRUE(entries_of().empty());
  close(fd);
}

TEST_F(Preload, OneNameOfAMultiLinkOpenFile) {
  write_file(p("a"), "shared");
  ASSERT_EQ(link(p("a").c_str(), p("b").c_str()), 0);
  int fd = open(p("b").c_str(), O_RDONLY);  // opened by one name, unlinked by another
  ASSERT_EQ(unlink(p("a").c_str()), 0);
  EXPECT_FALSE(exists(p("a")));
  EXPECT_EQ(read_file(p("b")), "shared");
  close(fd);
  EXPECT_TRUE(entries_of().empty());
  EXPECT_EQ(read_file(p("b")), "shared");
  struct stat st;
  ASSERT_EQ(stat(p("b").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
}

TEST_F(Preload, ReaddirHidesTheGraveyard) {
  write_file(p("f"), "1");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(unlink(p("f").c_str()), 0);  // the graveyard now exists
  ASSERT_TRUE(exists(watch_root() + "/.graveyard.nfsshim"));
  DIR* d = opendir(watch_root().c_str());
  ASSERT_NE(d, nullptr);
  bool seen = false;
  while (struct dirent* e = readdir(d)) seen = seen || std::strcmp(e->d_name, ".graveyard.nfsshim") == 0;
  closedir(d);
  EXPECT_FALSE(seen);
  d = opendir(watch_root().c_str());
  struct dirent64 ent, *res = nullptr;
  seen = false;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  while (readdir64_r(d, &ent, &res) == 0 && res) seen = seen || std::strcmp(res->d_name, ".graveyard.nfsshim") == 0;
#pragma GCC diagnostic pop
  closedir(d);
  EXPECT_FALSE(seen);
  close(fd);
}

TEST_F(Preload, AForkedChildNeverRemovesItsParentsEntries) {
  write_file(p("f"), "parent's");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fd);  // the child's copy
    _exit(entries_of(getppid()).size() == 1 ? 0 : 1);
  }
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_EQ(entries_of().size(), 1u);
  EXPECT_EQ(read_fd(fd), "parent's");
  close(fd);
  EXPECT_TRUE(entries_of().empty());
}

// A vfork child (JDK 8 and 11 launch processes so, and the child closes every descriptor
// it inherited) shares our memory but not our descriptor table: its close must not recount
// from its own view and remove the entry its parent still holds.
__attribute__((noinline)) static pid_t vfork_and_close(int fd) {
  pid_t child = vfork();
  if (child == 0) {
    close(fd);
    _exit(0);
  }
  return child;
}

TEST_F(Preload, AVforkChildNeverRemovesItsParentsEntries) {
  write_file(p("f"), "parent's");
  int fd = open(p("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(unlink(p("f").c_str()), 0);
  ASSERT_EQ(entries_of().size(), 1u);
  pid_t child = vfork_and_close(fd);
  ASSERT_GT(child, 0);
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_EQ(entries_of().size(), 1u) << "the child's close removed the parent's entry";
  EXPECT_EQ(read_fd(fd), "parent's");
  ASSERT_EQ(close(fd), 0);
  EXPECT_TRUE(entries_of().empty()) << "the parent's last close did not remove its entry";
}

TEST_F(Preload, AChildsOwnBuriesGoWhenItExits) {
  write_file(p("f"), "child's");
  pid_t child = fork();
  if (child == 0) {
    int fd = open(p("f").c_str(), O_RDONLY);
    if (unlink(p("f").c_str()) != 0 || entries_of().size() != 1) _exit(1);
    (void)fd;
    exit(0);  // fd still open: the exit handler removes the entry
  }
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_TRUE(entries_of(child).empty());
}

// After an exec the new image (same pid, same start time) adopts the entries the old
// image made: they are removed when the new image drops the last reference or exits.
// Without adoption the entry would outlive the process until some later reap.
TEST_F(Preload, EntriesSurviveExecAndAreAdopted) {
  const char* pre = std::getenv("LD_PRELOAD");
  if (!pre || !std::strstr(pre, "nfsshim"))
    GTEST_SKIP() << "the shim is linked into this test (TSan build): an exec'd program would run without it";
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  std::string helper = std::string(self);
  helper = helper.substr(0, helper.rfind('/')) + "/crash_helper";
  ASSERT_EQ(access(helper.c_str(), X_OK), 0) << helper;
  write_file(p("before-exec"), "inherited");
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  int outfd[2];
  ASSERT_EQ(pipe(outfd), 0);
  pid_t child = fork();
  if (child == 0) {
    int fd = open(p("before-exec").c_str(), O_RDONLY);  // no O_CLOEXEC: survives exec
    if (fd < 0 || unlink(p("before-exec").c_str()) != 0) _exit(10);
    dup2(pipefd[0], 0);
    dup2(outfd[1], 1);
    close(pipefd[1]);
    close(outfd[0]);
    execl(helper.c_str(), helper.c_str(), p("after-exec").c_str(), "wait", nullptr);
    _exit(11);
  }
  close(pipefd[0]);
  close(outfd[1]);
  char buf[256] = {};
  ASSERT_GT(read(outfd[0], buf, sizeof buf - 1), 0);  // "buried ..." once it ran its unlink
  EXPECT_EQ(entries_of(child).size(), 2u) << "the pre-exec entry and the helper's own";
  close(pipefd[1]);  // the helper closes its file and exits
  int st = 0;
  waitpid(child, &st, 0);
  close(outfd[0]);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  EXPECT_TRUE(entries_of(child).empty()) << "the adopted entry outlived the process";
}

// rmdir sweeps only names the NFS client or libfuse gave an unlinked open file; a user's
// own dot file that merely starts the same way keeps the directory non-empty.
TEST_F(Preload, RmdirLeavesUsersDotFilesAlone) {
  ASSERT_EQ(mkdir(p("d").c_str(), 0755), 0);
  write_file(p("d/.nfsrc"), "user's");
  write_file(p("d/.fuse_hidden_notes"), "user's too");
  errno = 0;
  EXPECT_EQ(rmdir(p("d").c_str()), -1);
  EXPECT_EQ(errno, ENOTEMPTY);
  EXPECT_EQ(read_file(p("d/.nfsrc")), "user's");
  EXPECT_EQ(read_file(p("d/.fuse_hidden_notes")), "user's too");
}

// rmdir of a directory that holds only a silly-rename leftover: the real call fails with
// ENOTEMPTY, the shim sweeps the leftover into the graveyard and removes the directory.
// The caller sees the plain call's success: 0 and errno as a successful plain call leaves
// it (untouched by rmdir and unlinkat; remove is compared with a plain remove of an empty
// directory, glibc's leaves its first unlink's EISDIR).
TEST_F(Preload, RmdirThatSweptLeavesErrnoAsOnSuccess) {
  ASSERT_EQ(mkdir(p("empty").c_str(), 0755), 0);
  errno = 1234;
  ASSERT_EQ(remove(p("empty").c_str()), 0);
  const int remove_errno = errno;  // nothing to sweep: the plain call's errno
  auto leftover_dir = [&](const char* name) {
    std::string d = p(name);
    EXPECT_EQ(mkdir(d.c_str(), 0755), 0);
    write_file(d + "/.nfs0000000000000000000000a1", "left over");
    return d;
  };
  std::string d = leftover_dir("rmdir");
  errno = 1234;
  EXPECT_EQ(rmdir(d.c_str()), 0);
  EXPECT_EQ(errno, 1234) << "rmdir: " << std::strerror(errno);
  EXPECT_FALSE(exists(d));
  d = leftover_dir("unlinkat");
  errno = 1234;
  EXPECT_EQ(unlinkat(AT_FDCWD, d.c_str(), AT_REMOVEDIR), 0);
  EXPECT_EQ(errno, 1234) << "unlinkat: " << std::strerror(errno);
  EXPECT_FALSE(exists(d));
  d = leftover_dir("remove");
  errno = 1234;
  EXPECT_EQ(remove(d.c_str()), 0);
  EXPECT_EQ(errno, remove_errno) << "remove: " << std::strerror(errno);
  EXPECT_FALSE(exists(d));
  // The swept leftovers ('s' entries) wait for the foreign age; not this test's to keep.
  for (const auto& e : entries_of()) {
    EXPECT_EQ(e[0], 's') << e;
    EXPECT_EQ(unlink((graveyard_dir() + "/" + e).c_str()), 0) << e;
  }
}

TEST_F(Preload, ErrorsAreThoseOfThePlainCall) {
  errno = 0;
  EXPECT_EQ(unlink(p("missing").c_str()), -1);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(mkdir(p("d").c_str(), 0755), 0);
  EXPECT_EQ(unlink(p("d").c_str()), -1);
  EXPECT_EQ(errno, EISDIR);
  write_file(p("d/f"), "x");
  EXPECT_EQ(rmdir(p("d").c_str()), -1);
  EXPECT_EQ(errno, ENOTEMPTY);
  EXPECT_EQ(remove(p("d").c_str()), -1);
  EXPECT_EQ(errno, ENOTEMPTY);
  EXPECT_EQ(unlink(p("d/f/g").c_str()), -1);
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_EQ(unlinkat(AT_FDCWD, p("d/f").c_str(), 0x4242), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(close(-1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(dup2(-1, 5), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
