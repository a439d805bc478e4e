#include "nfsshim/graveyard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"
#include "nfsshim/sys.h"
#include "temp_dir.h"

namespace nfsshim {
namespace {

class GraveyardTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = sys::openat(AT_FDCWD, dir_.path().c_str(), O_RDONLY | O_DIRECTORY); }
  void TearDown() override { sys::close(root_); }
  std::unique_ptr<Graveyard> open_grave(bool create = true) {
    std::unique_ptr<Graveyard> g;
    std::string why;
    EXPECT_EQ(Graveyard::open(root_, kDefaultGraveyardName, geteuid(), create, &g, &why), 0) << why;
    return g;
  }
  void write_file(const std::string& name, const std::string& data) {
    int fd = sys::openat(root_, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    sys::close(fd);
  }
  TempDir dir_;
  int root_ = -1;
};

TEST_F(GraveyardTest, CreatesBothLevelsWithSafeModes) {
  mode_t old = umask(022);
  auto g = open_grave();
  umask(old);
  ASSERT_TRUE(g);
  struct stat top, user;
  ASSERT_EQ(stat((dir_.path() + "/.graveyard.nfsshim").c_str(), &top), 0);
  EXPECT_EQ(top.st_mode & 07777, 01733u);
  ASSERT_EQ(stat((dir_.path() + "/.graveyard.nfsshim/u" + std::to_string(geteuid())).c_str(), &user), 0);
  EXPECT_EQ(user.st_mode & 07777, 0700u);
}

TEST_F(GraveyardTest, WithoutCreateAbsentIsENOENT) {
  std::unique_ptr<Graveyard> g;
  std::string why;
  EXPECT_EQ(Graveyard::open(root_, kDefaultGraveyardName, geteuid(), false, &g, &why), -ENOENT);
  EXPECT_FALSE(g);
}

TEST_F(GraveyardTest, RefusesAPlantedSymlink) {
  ASSERT_EQ(mkdir((dir_.path() + "/elsewhere").c_str(), 0777), 0);
  ASSERT_EQ(symlink("elsewhere", (dir_.path() + "/.graveyard.nfsshim").c_str()), 0);
  std::unique_ptr<Graveyard> g;
  std::string why;
  EXPECT_LT(Graveyard::open(root_, kDefaultGraveyardName, geteuid(), true, &g, &why), 0);
  EXPECT_FALSE(g);
  EXPECT_FALSE(why.empty());
}

TEST_F(GraveyardTest, RefusesAUserDirWithLooseModeOrOtherOwner) {
  std::string top = dir_.path() + "/.graveyard.nfsshim";
  std::string sub = top + "/u" + std::to_string(geteuid());
  ASSERT_EQ(mkdir(top.c_str(), 01733), 0);
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  ASSERT_EQ(chmod(sub.c_str(), 0755), 0);
  std::unique_ptr<Graveyard> g;
  std::string why;
  EXPECT_EQ(Graveyard::open(root_, kDefaultGraveyardName, geteuid(), true, &g, &why), -EPERM);
  EXPECT_NE(why.find("expected owner"), std::string::npos) << why;
  // Planted by someone else (only testable as root): also refused.
  if (geteuid() == 0) {
    ASSERT_EQ(chmod(sub.c_str(), 0700), 0);
    ASSERT_EQ(chown(sub.c_str(), 65534, 65534), 0);
    EXPECT_EQ(Graveyard::open(root_, kDefaultGraveyardName, 0, true, &g, &why), -EPERM);
  }
}

TEST_F(GraveyardTest, RejectsNamesThatCleanupGlobsMatch) {
  std::string why;
  EXPECT_FALSE(valid_graveyard_name(".nfsshim", &why));
  EXPECT_FALSE(valid_graveyard_name(".fuse_hidden1", &why));
  EXPECT_FALSE(valid_graveyard_name("a/b", &why));
  EXPECT_FALSE(valid_graveyard_name("..", &why));
  EXPECT_TRUE(valid_graveyard_name(".graveyard.nfsshim", &why));
}

TEST_F(GraveyardTest, BuryKeepsDataForOpenFdAndFreesTheName) {
  auto g = open_grave();
  write_file("seg.log", "hello");
  int fd = sys::openat(root_, "seg.log", O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string entry;
  ASSERT_EQ(g->bury(root_, "seg.log", 'b', &entry), 0);
  struct stat st;
  EXPECT_EQ(sys::fstatat(root_, "seg.log", &st, 0), -ENOENT);
  char buf[8] = {};
  EXPECT_EQ(pread(fd, buf, sizeof buf, 0), 5);
  EXPECT_STREQ(buf, "hello");
  EXPECT_EQ(g->list(), std::vector<std::string>{entry});
  EXPECT_EQ(g->remove(entry), 0);
  EXPECT_TRUE(g->list().empty());
  sys::close(fd);
}

TEST_F(GraveyardTest, BuryOfMissingFileMovesNothing) {
  auto g = open_grave();
  std::string entry;
  EXPECT_EQ(g->bury(root_, "absent", 'b', &entry), -ENOENT);
  EXPECT_TRUE(g->list().empty());
}

TEST_F(GraveyardTest, RestoreNeverReplacesANewFile) {
  auto g = open_grave();
  write_file("ckpt", "old");
  std::string entry;
  ASSERT_EQ(g->bury(root_, "ckpt", 'b', &entry), 0);
  write_file("ckpt", "new");
  EXPECT_EQ(g->restore(entry, root_, "ckpt"), -EEXIST);
  EXPECT_EQ(g->list().size(), 1u);
  ASSERT_EQ(sys::unlinkat(root_, "ckpt", 0), 0);
  EXPECT_EQ(g->restore(entry, root_, "ckpt"), 0);
  EXPECT_TRUE(g->list().empty());
}

// A process at its descriptor limit cannot read its start time from /proc. A bury must
// then not name an entry with start time 0 (every reaper would take it for a dead
// process's); once read, the start time is remembered, so later buries work at the limit.
TEST_F(GraveyardTest, BuryNeverNamesAnEntryWithoutItsOwnersStartTime) {
  auto g = open_grave();
  write_file("a", "x");
  write_file("b", "y");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a new pid: its start time is not known yet
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(10);
    rl.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(11);
    std::vector<int> fds;
    for (int fd; (fd = ::dup(root_)) >= 0;) fds.push_back(fd);
    std::string entry;
    if (g->bury(root_, "a", 'b', &entry) != -EAGAIN) _exit(1);
    struct stat st;
    if (sys::fstatat(root_, "a", &st, AT_SYMLINK_NOFOLLOW) != 0) _exit(2);  // not moved
    ::close(fds.back());  // one free descriptor: /proc can be read
    fds.pop_back();
    Identity me = self_identity();
    if (me.start == 0 || me.start != process_start_time(getpid())) _exit(3);
    fds.push_back(::dup(root_));  // at the limit again
    if (g->bury(root_, "b", 'b', &entry) != 0) _exit(4);
    auto e = EntryName::parse(entry);
    if (!e || e->owner.pid != getpid() || e->owner.start != me.start) _exit(5);
    _exit(g->remove(entry) == 0 ? 0 : 6);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 0) << "1: bury at the limit did not refuse, 2: it moved the file, 3: wrong "
                                   "start time, 4: bury after the start time was read failed, 5: entry "
                                   "named wrongly, 6: remove failed";
}

// After exec the preload skips its counter past its earlier image's names
// (preload.exec_adopts_and_buries_on); it never goes back.
TEST_F(GraveyardTest, SkipSeqPastNumbersLaterEntriesAfterIt) {
  auto g = open_grave();
  auto seq_of_next = [&](const char* file) -> uint64_t {
    write_file(file, "x");
    std::string entry;
    EXPECT_EQ(g->bury(root_, file, 'b', &entry), 0);
    auto e = EntryName::parse(entry);
    return e ? e->seq : UINT64_MAX;
  };
  EXPECT_EQ(seq_of_next("a"), 0u);
  g->skip_seq_past(7);
  EXPECT_EQ(seq_of_next("b"), 8u);
  g->skip_seq_past(3);
  EXPECT_EQ(seq_of_next("c"), 9u);
}

TEST(ClassifyEntry, DecidesByOwner) {
  Identity self = self_identity();
  auto name = [&](const Identity& o, char kind = 'b') {
    EntryName e;
    e.kind = kind;
    e.owner = o;
    e.seq = 1;
    return e.format();
  };
  EXPECT_EQ(classify_entry(name(self), self, 0, 100).action, ReapAction::adopt);

  Identity dead = self;
  dead.start = self.start + 12345;  // our pid, another start time: that process is gone
  EXPECT_EQ(classify_entry(name(dead), self, 0, 100).action, ReapAction::remove);

  Identity parent = self;
  parent.pid = getppid();
  parent.start = process_start_time(parent.pid);
  EXPECT_EQ(classify_entry(name(parent), self, 0, 100).action, ReapAction::keep);

  Identity other = self;
  other.host = "elsewhere";
  EXPECT_EQ(classify_entry(name(other), self, 99, 100).action, ReapAction::keep);
  EXPECT_EQ(classify_entry(name(other), self, 100, 100).action, ReapAction::remove);
  Identity rebooted = self;
  rebooted.boot = "ffffffff";
  EXPECT_EQ(classify_entry(name(rebooted), self, 5, 100).action, ReapAction::keep);

  // Another pid namespace on this host (a container sharing its name and kernel): its
  // pids are not ours to look up, even one that names a dead process here.
  ASSERT_FALSE(self.pidns.empty()) << "no pid namespace read from /proc/self/ns/pid";
  Identity contained = dead;
  contained.pidns = self.pidns + "1";
  auto d = classify_entry(name(contained), self, 99, 100);
  EXPECT_EQ(d.action, ReapAction::keep);
  EXPECT_EQ(d.reason, "owner in another pid namespace, younger than the foreign age");
  EXPECT_EQ(classify_entry(name(contained), self, 100, 100).action, ReapAction::remove);
  // A name without one (written before pid namespaces were named) is judged as before.
  Identity unnamed = dead;
  unnamed.pidns.clear();
  EXPECT_EQ(classify_entry(name(unnamed), self, 0, 100).action, ReapAction::remove);
  unnamed = parent;
  unnamed.pidns.clear();
  EXPECT_EQ(classify_entry(name(unnamed), self, 0, 100).action, ReapAction::keep);

  // An nfs:// daemon's entry ('n') follows the same owner rules (the daemon itself keeps
  // 'b' entries of gone owners until the foreign age: nfs_graveyard.cc).
  EXPECT_EQ(classify_entry(name(dead, 'n'), self, 0, 100).action, ReapAction::remove);
  EXPECT_EQ(classify_entry(name(parent, 'n'), self, 0, 100).action, ReapAction::keep);
  EXPECT_EQ(classify_entry(name(other, 'n'), self, 99, 100).action, ReapAction::keep);

  EXPECT_EQ(classify_entry(name(self, 's'), self, 5, 100).action, ReapAction::keep);
  EXPECT_EQ(classify_entry(name(self, 's'), self, 500, 100).action, ReapAction::remove);
  EXPECT_EQ(classify_entry(".nfs000000000012abcd00000001", self, 1e6, 100).action, ReapAction::keep);
  EXPECT_EQ(classify_entry("random", self, 1e6, 100).action, ReapAction::keep);
}

// A boot id that could not be read says nothing: two hosts with the same name and no
// boot id are not one boot, and neither may judge the other's pids by its own /proc.
// Entries named without one are judged like another host's.
TEST(ClassifyEntry, AnUnknownBootIsNeverOurs) {
  Identity self = self_identity();
  self.boot = "0";  // what an unreadable boot id was written as
  Identity other = self;
  other.start = self.start + 12345;  // our pid, another start time: gone, were it ours
  EntryName e;
  e.kind = 'b';
  e.owner = other;
  e.seq = 1;
  EXPECT_FALSE(other.same_boot(self));
  auto d = classify_entry(e.format(), self, 99, 100);
  EXPECT_EQ(d.action, ReapAction::keep) << d.reason;
  EXPECT_EQ(d.reason, "owner on another host or boot, younger than the foreign age");
  EXPECT_EQ(classify_entry(e.format(), self, 100, 100).action, ReapAction::remove);
  // Nor is our own entry ours to adopt then: it is kept like a foreign one.
  e.owner = self;
  EXPECT_EQ(classify_entry(e.format(), self, 99, 100).action, ReapAction::keep);
  // A reaper that knows its boot id does not take such an entry for its own boot either.
  Identity known = self_identity();
  e.owner = known;
  e.owner.boot = "0";
  e.owner.start = known.start + 12345;
  EXPECT_EQ(classify_entry(e.format(), known, 99, 100).action, ReapAction::keep);
}

TEST_F(GraveyardTest, ReapRemovesOnlyDeadOwnersEntries) {
  auto g = open_grave();
  // A child buries a file and is killed: its entry is an orphan.
  write_file("victim", "x");
  pid_t child = fork();
  if (child == 0) {
    std::string e;
    _exit(g->bury(root_, "victim", 'b', &e) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // And we bury one of our own.
  write_file("mine", "y");
  std::string mine;
  ASSERT_EQ(g->bury(root_, "mine", 'b', &mine), 0);
  ASSERT_EQ(g->list().size(), 2u);

  auto plan = g->plan(self_identity(), 3600, time(nullptr));
  ASSERT_EQ(plan.size(), 2u);
  ReapStats s = g->execute(plan);
  EXPECT_EQ(s.removed, 1u);
  EXPECT_EQ(g->list(), std::vector<std::string>{mine});
}

}  // namespace
}  // namespace nfsshim
