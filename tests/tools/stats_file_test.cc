// The counters file: publish, read back, fork, and what a reader refuses.
#include "nfsshim/stats_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nfsshim/identity.h"

namespace nfsshim {
namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

// The scratch dirs go at exit (not per test: a published stats file lives as long as the
// process). Fork children leave with _exit, so only this process removes them.
std::vector<std::string>& tmp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

void remove_tmp_dirs() {
  for (const auto& d : tmp_dirs()) ::nftw(d.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string make_tmp_dir() {
  char tmpl[] = "/tmp/nfsshim-stats-test.XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  if (!d) return "";
  if (tmp_dirs().empty()) std::atexit(remove_tmp_dirs);
  tmp_dirs().push_back(d);
  return d;
}

const StatsSnapshot* find_pid(const std::vector<StatsSnapshot>& v, pid_t pid) {
  for (const auto& s : v)
    if (s.pid == pid) return &s;
  return nullptr;
}

size_t index_of(const char* name) {
  for (size_t i = 0; i < kCounterCount; ++i)
    if (std::strcmp(kCounterInfo[i].name, name) == 0) return i;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// The file's bytes, copyable (Counters holds atomics, which are not).
struct RawLayout {
  StatsHeader header;
  uint64_t counters[kCounterCount];
};
static_assert(sizeof(RawLayout) == sizeof(StatsLayout), "RawLayout mirrors StatsLayout");

// A valid file for PID/START written by hand (as another process would have).
RawLayout layout_for(pid_t pid, uint64_t start) {
  RawLayout l;
  std::memset(&l, 0, sizeof l);
  std::memcpy(l.header.magic, kStatsMagic, sizeof l.header.magic);
  l.header.version = kStatsVersion;
  l.header.header_size = sizeof(StatsHeader);
  l.header.counter_count = kCounterCount;
  l.header.kind = static_cast<uint32_t>(StatsKind::fuse);
  l.header.pid = pid;
  l.header.start = start;
  std::strcpy(l.header.name, "handmade");
  l.counters[index_of("swept")] = 42;
  return l;
}

void write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

TEST(StatsFile, CounterTableFollowsTheCountersLayout) {
  Counters c;
  const char* base = reinterpret_cast<const char*>(&c);
  for (size_t i = 0; i < kCounterCount; ++i) {
    const char* member = reinterpret_cast<const char*>(&(c.*kCounterInfo[i].member));
    EXPECT_EQ(static_cast<size_t>(member - base), i * sizeof(uint64_t)) << kCounterInfo[i].name;
  }
  EXPECT_EQ(sizeof(StatsLayout), sizeof(StatsHeader) + kCounterCount * sizeof(uint64_t));
}

// One test: publishing is once per process.
TEST(StatsFile, PublishedCountersAreTheLiveCountersAndForkGetsItsOwn) {
  std::string dir = make_tmp_dir() + "/run";  // created by publish
  Counters::inc(counters().buried, 2);  // counted before publishing: must be carried over
  std::string why;
  ASSERT_EQ(publish_counters(StatsKind::preload, dir, &why), 0) << why;
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  EXPECT_EQ(published_stats_path(), dir + "/" + std::to_string(::getpid()) + ".stats");

  Counters::inc(counters().buried);
  counters().live_entries.store(7, std::memory_order_relaxed);
  auto procs = read_stats_dir(dir);
  const StatsSnapshot* me = find_pid(procs, ::getpid());
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->kind, StatsKind::preload);
  EXPECT_EQ(me->name, program_invocation_short_name);
  EXPECT_EQ(me->start, process_start_time(::getpid()));
  EXPECT_EQ(me->values[index_of("buried")], 3u);
  EXPECT_EQ(me->values[index_of("live_entries")], 7u);

  // A fork child counts into a file of its own, starting from the parent's values.
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int rv = republish_counters_after_fork();
    Counters::inc(counters().buried, 10);
    char c = rv == 0 ? 'y' : 'n';
    if (::write(to_parent[1], &c, 1) != 1 || ::read(to_child[0], &c, 1) != 1) ::_exit(3);
    ::_exit(0);  // no atexit: the file stays behind, as after a crash
  }
  char c = 0;
  ASSERT_EQ(::read(to_parent[0], &c, 1), 1);
  EXPECT_EQ(c, 'y');
  procs = read_stats_dir(dir);
  const StatsSnapshot* kid = find_pid(procs, child);
  me = find_pid(procs, ::getpid());
  ASSERT_NE(kid, nullptr);
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(kid->values[index_of("buried")], 13u);
  EXPECT_EQ(me->values[index_of("buried")], 3u) << "the child wrote into the parent's file";
  ASSERT_EQ(::write(to_child[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);

  // The child is gone: its file is still there but no reader believes it.
  std::string kid_file = std::to_string(child) + ".stats";
  EXPECT_EQ(::access((dir + "/" + kid_file).c_str(), F_OK), 0);
  procs = read_stats_dir(dir);
  EXPECT_EQ(find_pid(procs, child), nullptr);
  EXPECT_NE(find_pid(procs, ::getpid()), nullptr);
  StatsSnapshot s;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_EQ(read_stats_file(dfd, kid_file.c_str(), &s), -ESRCH);
  ::close(dfd);
}

// Another user can plant <pid>.stats for future pids in the sticky directory; root's
// tests cannot make a file they cannot remove, so a non-empty directory of that name
// stands in (unlinkat fails, O_EXCL says EEXIST). The process publishes under another
// name, and readers list it once.
TEST(StatsFile, ANameSomeoneElseHoldsGetsAnUnguessableOne) {
  std::string why;
  ASSERT_EQ(publish_counters(StatsKind::preload, make_tmp_dir() + "/run", &why), 0) << why;
  const std::string path = published_stats_path();
  const std::string dir = path.substr(0, path.rfind('/'));
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(to_parent[0]);
    ::close(to_child[1]);  // the parent's end closing (it failed) lets us go too
    std::string planted = dir + "/" + std::to_string(::getpid()) + ".stats";
    if (::mkdir(planted.c_str(), 0755) != 0 || ::mkdir((planted + "/x").c_str(), 0755) != 0) ::_exit(2);
    std::string first = republish_counters_after_fork() == 0 ? published_stats_path() : "failed";
    // As a new image after exec (no atexit ran): publishing again must not leave the first.
    std::string got = republish_counters_after_fork() == 0 ? published_stats_path() : "failed";
    if (first == got || ::access(first.c_str(), F_OK) == 0) got = "the file before 'exec' stayed: " + first;
    char c;
    if (::write(to_parent[1], got.data(), got.size()) != static_cast<ssize_t>(got.size())) ::_exit(3);
    ::close(to_parent[1]);
    ::_exit(::read(to_child[0], &c, 1) == 1 ? 0 : 4);
  }
  ::close(to_parent[1]);
  ::close(to_child[0]);
  struct Release {  // the child waits for us until the checks are done, however they end
    int fd;
    pid_t pid;
    ~Release() {
      char c = 'x';
      if (::write(fd, &c, 1) != 1) ADD_FAILURE() << "cannot release the child";
      ::close(fd);
      int status = 0;
      EXPECT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_EQ(status, 0);
    }
  } release{to_child[1], child};
  char buf[512];
  ssize_t n = ::read(to_parent[0], buf, sizeof buf);
  ::close(to_parent[0]);
  ASSERT_GT(n, 0) << "the child did not publish";
  std::string got(buf, static_cast<size_t>(n));
  const std::string prefix = dir + "/" + std::to_string(child) + "-";
  ASSERT_EQ(got.compare(0, prefix.size(), prefix), 0) << "published as " << got;
  std::string name = got.substr(dir.size() + 1);
  EXPECT_TRUE(is_stats_file_name(name.c_str())) << name;
  auto rows_of = [&](pid_t pid) {
    size_t rows = 0;
    for (const auto& s : read_stats_dir(dir)) rows += s.pid == pid;
    return rows;
  };
  EXPECT_EQ(rows_of(child), 1u);
  // A copy under another valid name (its user may make one) is not a second process.
  std::ifstream in(got, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_file(dir + "/" + std::to_string(child) + "-0123abcd.stats", bytes.data(), bytes.size());
  EXPECT_EQ(rows_of(child), 1u) << "process listed twice";
}

class StatsReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_tmp_dir();
    dfd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dfd_, 0);
    self_ = ::getpid();
    name_ = std::to_string(self_) + ".stats";
  }
  void TearDown() override { ::close(dfd_); }
  int read_layout(const RawLayout& l, size_t n = sizeof(RawLayout)) {
    write_file(dir_ + "/" + name_, &l, n);
    StatsSnapshot s;
    return read_stats_file(dfd_, name_.c_str(), &s);
  }
  std::string dir_, name_;
  int dfd_ = -1;
  pid_t self_ = 0;
};

TEST_F(StatsReader, AcceptsAValidFile) {
  RawLayout l = layout_for(self_, process_start_time(self_));
  write_file(dir_ + "/" + name_, &l, sizeof l);
  StatsSnapshot s;
  ASSERT_EQ(read_stats_file(dfd_, name_.c_str(), &s), 0);
  EXPECT_EQ(s.kind, StatsKind::fuse);
  EXPECT_EQ(s.name, "handmade");
  EXPECT_EQ(s.values[index_of("swept")], 42u);
}

TEST_F(StatsReader, RejectsWhatIsNotAStatsFile) {
  RawLayout good = layout_for(self_, process_start_time(self_));
  RawLayout l = good;
  l.header.magic[0] = 'X';
  EXPECT_EQ(read_layout(l), -EINVAL) << "bad magic";
  l = good;
  l.header.version = kStatsVersion + 1;
  EXPECT_EQ(read_layout(l), -EINVAL) << "other version";
  l = good;
  l.header.counter_count = kCounterCount - 1;
  EXPECT_EQ(read_layout(l), -EINVAL) << "other counter count";
  l = good;
  l.header.kind = 9;
  EXPECT_EQ(read_layout(l), -EINVAL) << "unknown kind";
  EXPECT_EQ(read_layout(good, sizeof(StatsLayout) - 8), -EINVAL) << "truncated";
  l = good;
  l.header.pid = self_ + 1;
  EXPECT_EQ(read_layout(l), -EINVAL) << "pid differs from the file name";
  EXPECT_EQ(read_layout(good), 0) << "the same file, valid";
  StatsSnapshot s;
  EXPECT_EQ(read_stats_file(dfd_, "notes.txt", &s), -EINVAL);
  EXPECT_FALSE(is_stats_file_name("12.stats.tmp"));
  EXPECT_FALSE(is_stats_file_name(".stats"));
  EXPECT_TRUE(is_stats_file_name("12.stats"));
  EXPECT_TRUE(is_stats_file_name("4294967295.stats"));
  EXPECT_FALSE(is_stats_file_name("12345678901.stats"));
  // One name per pid: a leading 0 would list process 12 twice (nfsshim stat, Prometheus).
  EXPECT_FALSE(is_stats_file_name("012.stats"));
  EXPECT_FALSE(is_stats_file_name("0.stats"));
  EXPECT_TRUE(is_stats_file_name("12-0123abcd.stats"));
  EXPECT_FALSE(is_stats_file_name("12-0123abc.stats"));
  EXPECT_FALSE(is_stats_file_name("12-0123ABCD.stats"));
  EXPECT_FALSE(is_stats_file_name("12-0123abcd0.stats"));
  EXPECT_FALSE(is_stats_file_name("-0123abcd.stats"));
}

TEST_F(StatsReader, IgnoresDeadAndRecycledProcesses) {
  // A pid reused by another process: same pid, other start time.
  RawLayout l = layout_for(self_, process_start_time(self_) + 1);
  EXPECT_EQ(read_layout(l), -ESRCH);
  // A process that is gone.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  uint64_t start = 0;
  for (int i = 0; i < 100 && start == 0; ++i) start = process_start_time(child);  // zombie until reaped
  ASSERT_NE(start, 0u);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  std::string dead = std::to_string(child) + ".stats";
  RawLayout d = layout_for(child, start);
  write_file(dir_ + "/" + dead, &d, sizeof d);
  StatsSnapshot s;
  EXPECT_EQ(read_stats_file(dfd_, dead.c_str(), &s), -ESRCH);
  EXPECT_TRUE(read_stats_dir(dir_).empty());
}

}  // namespace
}  // namespace nfsshim
