#include "nfsshim/entry_name.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfsshim/identity.h"
#include "temp_dir.h"

namespace nfsshim {
namespace {

TEST(EntryName, RoundTrip) {
  EntryName e;
  e.kind = 'b';
  e.owner.host = "broker-1.example.com";
  e.owner.boot = "1a2b3c4d";
  e.owner.pid = 4242;
  e.owner.start = 987654321;
  e.seq = 17;
  std::string s = e.format();
  EXPECT_EQ(s, "b~broker-1.example.com~1a2b3c4d~4242~987654321~17");
  auto p = EntryName::parse(s);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, 'b');
  EXPECT_TRUE(p->owner.same_process(e.owner));
  EXPECT_EQ(p->seq, 17u);
}

TEST(EntryName, KnowsItsThreeKinds) {
  for (char kind : {'b', 'n', 's'}) {
    std::string s = std::string(1, kind) + "~h~1a2b3c4d~7~8~9";
    auto p = EntryName::parse(s);
    ASSERT_TRUE(p) << s;
    EXPECT_EQ(p->kind, kind);
    EXPECT_EQ(p->format(), s);
  }
  for (const char* bad : {"k~h~1a2b3c4d~7~8~9", "x~h~1a2b3c4d~7~8~9", "bn~h~1a2b3c4d~7~8~9"})
    EXPECT_FALSE(EntryName::parse(bad)) << bad;
}

TEST(EntryName, CarriesThePidNamespaceAfterTheBoot) {
  EntryName e;
  e.kind = 'b';
  e.owner.host = "h";
  e.owner.boot = "1a2b3c4d";
  e.owner.pidns = "effffffc";
  e.owner.pid = 7;
  e.owner.start = 8;
  e.seq = 9;
  EXPECT_EQ(e.format(), "b~h~1a2b3c4d.effffffc~7~8~9");
  auto p = EntryName::parse(e.format());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->owner.boot, "1a2b3c4d");
  EXPECT_EQ(p->owner.pidns, "effffffc");
  EXPECT_TRUE(p->owner.same_process(e.owner));
  // Names of before carry none.
  auto old = EntryName::parse("b~h~1a2b3c4d~7~8~9");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->owner.pidns, "");
  for (const char* bad : {"b~h~1a2b.~7~8~9", "b~h~.ab~7~8~9", "b~h~1a.2b.3c~7~8~9", "b~h~1a.zz~7~8~9"})
    EXPECT_FALSE(EntryName::parse(bad)) << bad;
}

TEST(Identity, NamesItsPidNamespace) {
  Identity me = self_identity();
  char link[64] = {};
  ASSERT_GT(readlink("/proc/self/ns/pid", link, sizeof link - 1), 0);
  EXPECT_EQ("pid:[" + std::to_string(std::stoull(me.pidns, nullptr, 16)) + "]", link);
}

// A child forked after unshare(CLONE_NEWPID) lives in the new namespace: its entries
// must say so, not repeat what its parent read before the fork.
TEST(Identity, AChildInANewPidNamespaceNamesItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "unshare(CLONE_NEWPID) needs root";
  const std::string mine = self_identity().pidns;
  ASSERT_FALSE(mine.empty());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWPID) != 0) _exit(2);
    pid_t grandchild = fork();
    if (grandchild < 0) _exit(5);
    if (grandchild == 0) {
      const std::string ns = self_identity().pidns;
      _exit(ns.empty() ? 3 : ns == mine ? 4 : 0);
    }
    int st = 0;
    if (waitpid(grandchild, &st, 0) != grandchild || !WIFEXITED(st)) _exit(5);
    _exit(WEXITSTATUS(st));
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "2: unshare failed, 3: no namespace read, 4: the parent's namespace, "
                                   "5: fork/wait failed";
}

TEST(EntryName, NeverMatchesSillyRenameGlobs) {
  EntryName e;
  e.owner.host = "h";
  e.owner.boot = "0";
  e.owner.pid = 1;
  EXPECT_NE(e.format().rfind(".nfs", 0), 0u);
}

TEST(EntryName, RejectsGarbage) {
  for (const char* bad : {"", "b", ".nfs0000000000001234abcd0001", "x~h~0~1~2~3", "b~h~zz~1~2~3",
                          "b~h~0~-1~2~3", "b~h~0~1~2", "b~h~0~1~2~3~4", "b~~0~1~2~3",
                          "b~h~0~1~2~3x", "b~h~0~0~2~3",
                          // pids beyond pid_t (found by fuzzing: were truncated to 1 / negative)
                          "b~h~0~4294967297~7~1", "b~h~ab~2461440870~0~0"})
    EXPECT_FALSE(EntryName::parse(bad)) << bad;
}

// The boot id is its first 8 hex digits; one that cannot be read (or is not one) is
// "0", which no identity counts as the same boot (ClassifyEntry.AnUnknownBootIsNeverOurs).
TEST(Identity, ReadsTheBootId) {
  TempDir d;
  auto boot_id = [&](const char* text) {
    std::ofstream(d.path() + "/boot_id") << text;
    return read_boot_id((d.path() + "/boot_id").c_str());
  };
  EXPECT_EQ(boot_id("404c0a1e-6f0d-4c8e-9d3a-2b1f5e7c9a10\n"), "404c0a1e");
  EXPECT_EQ(boot_id("00000000-0000-4000-8000-000000000001\n"), "00000000");
  EXPECT_EQ(boot_id(""), kUnknownBoot);
  EXPECT_EQ(boot_id("404c0a\n"), kUnknownBoot);  // too short
  EXPECT_EQ(boot_id("4x4c0a1e-6f0d\n"), kUnknownBoot);
  EXPECT_EQ(read_boot_id((d.path() + "/missing").c_str()), kUnknownBoot);
  EXPECT_EQ(self_identity().boot, read_boot_id("/proc/sys/kernel/random/boot_id"));
  EXPECT_NE(self_identity().boot, kUnknownBoot);
  Identity a, b;
  a.host = b.host = "h";
  a.boot = b.boot = kUnknownBoot;
  EXPECT_FALSE(a.same_boot(b));
  a.boot = b.boot = "";
  EXPECT_FALSE(a.same_boot(b));
  a.boot = b.boot = "404c0a1e";
  EXPECT_TRUE(a.same_boot(b));
}

TEST(Identity, SanitizesHostnames) {
  EXPECT_EQ(sanitize_host("a~b/c d\x01\xff"), "a_b_c_d__");
  EXPECT_EQ(sanitize_host(""), "unknown");
}

TEST(Identity, SelfIsAlive) {
  Identity me = self_identity();
  EXPECT_GT(me.pid, 0);
  EXPECT_GT(me.start, 0u);
  EXPECT_FALSE(me.boot.empty());
  EXPECT_TRUE(process_alive(me.pid, me.start));
  EXPECT_FALSE(process_alive(me.pid, me.start + 1));  // same pid, other start: recycled
}

// /proc/PID/stat shows a start time shifted by the reader's time-namespace boottime
// offset (the kernel's timens_add_boottime_ns): entries must carry raw boot time.
TEST(Identity, StartTimesAreRawBootTime) {
  constexpr uint64_t kTick = 10000000;  // 10 ms: USER_HZ 100
  // What the kernel shows a reader with OFFSET_NS for a process started at RAW_NS.
  auto shown = [](uint64_t raw_ns, int64_t offset_ns) {
    return (raw_ns + static_cast<uint64_t>(offset_ns)) / kTick;
  };
  const uint64_t raw = 6460022 * kTick + 3000000;  // started 64600.223 s after boot
  EXPECT_EQ(unshift_boottime(shown(raw, 0), 0, kTick), 6460022u);
  EXPECT_EQ(unshift_boottime(UINT64_MAX, 0, kTick), UINT64_MAX);  // no offset: unchanged
  EXPECT_EQ(unshift_boottime(shown(raw, 100000 * 1000000000ll), 100000 * 1000000000ll, kTick), 6460022u);
  EXPECT_EQ(unshift_boottime(shown(raw, -60000 * 1000000000ll), -60000 * 1000000000ll, kTick), 6460022u);
  // A negative offset larger than the process's start: the kernel's sum wraps.
  EXPECT_EQ(unshift_boottime(shown(raw, -90000 * 1000000000ll), -90000 * 1000000000ll, kTick), 6460022u);
  // An offset that is not a whole number of ticks: at most one tick early, never garbage.
  uint64_t odd = unshift_boottime(shown(raw, 5000000), 5000000, kTick);
  EXPECT_TRUE(odd == 6460021u || odd == 6460022u) << odd;
  EXPECT_EQ(unshift_boottime(shown(1000, 5000000), 5000000, kTick), 0u);  // not just below 0
  // Ours, read through /proc, is what the host's time namespace shows (offset 0 here).
  std::ifstream f("/proc/self/timens_offsets");
  std::string line;
  bool zero = true;
  while (std::getline(f, line))
    if (line.rfind("boottime", 0) == 0) zero = line.find_first_of("123456789") == std::string::npos;
  if (zero) {
    EXPECT_EQ(process_start_time(getpid()), self_identity().start);
  }
}

// A reap judges owners by PROC/PID/stat: only a missing process is dead. One whose stat
// cannot be understood (or a PROC path too long to build) is kept alive.
TEST(Identity, OnlyAMissingProcessIsDead) {
  TempDir d;
  std::string proc = d.path() + "/proc";
  ASSERT_EQ(mkdir(proc.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((proc + "/42").c_str(), 0755), 0);
  std::ofstream(proc + "/42/stat") << "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 rest\n";
  ASSERT_EQ(mkdir((proc + "/43").c_str(), 0755), 0);
  std::ofstream(proc + "/43/stat") << "garbage without the comm field\n";
  EXPECT_TRUE(process_alive(42, 777, proc.c_str()));
  EXPECT_FALSE(process_alive(42, 778, proc.c_str()));  // recycled pid
  EXPECT_FALSE(process_alive(44, 777, proc.c_str()));  // no such process
  EXPECT_TRUE(process_alive(43, 777, proc.c_str()));   // unreadable: not judged dead
  std::string long_proc = proc + "/" + std::string(300, 'x');
  EXPECT_TRUE(process_alive(42, 777, long_proc.c_str()));
}

}  // namespace
}  // namespace nfsshim
