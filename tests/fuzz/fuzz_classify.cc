// Fuzz target: graveyard reaping decisions (graveyard.h classify_entry) and the
// /proc/PID/stat start-time reader they rely on (identity.h process_start_time).
// A private fake /proc (made once in /dev/shm or /tmp) holds exactly one live process, so the
// decisions do not depend on the machine.
// Input: byte 0 picks the mode ('P': the rest is a stat line for process_start_time;
// anything else: FuzzedDataProvider drives name, self, age and foreign age).
// Invariants (the promises the reaper makes):
//   - an entry of a process that is alive on this boot is never removed, nor one whose
//     /proc stat cannot be understood; a missing process's entry is removed;
//   - only entries of this very process are adopted;
//   - names that are not nfsshim entries are kept; the decision always has a reason;
//   - swept and foreign entries are removed exactly when older than the foreign age;
//   - a stat line as the kernel writes it (any comm) yields its start time.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_check.h"
#include "nfsshim/entry_name.h"
#include "nfsshim/graveyard.h"
#include "nfsshim/identity.h"

using nfsshim::ReapAction;

namespace {

constexpr pid_t kLivePid = 4242;
constexpr uint64_t kLiveStart = 777;
constexpr pid_t kStatPid = 5151;  // the stat file rewritten by the 'P' mode
std::string g_proc;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string stat_line(pid_t pid, const std::string& comm, uint64_t start) {
  std::string s = std::to_string(pid) + " (" + comm + ") S";
  for (int field = 4; field < 22; ++field) s += " " + std::to_string(field * 3);
  return s + " " + std::to_string(start) + " 123456 789 18446744073709551615\n";
}

void fuzz_stat(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {  // raw text: must not crash or read out of bounds
    write_file(g_proc + "/" + std::to_string(kStatPid) + "/stat", in.ConsumeRemainingBytesAsString());
    (void)nfsshim::process_start_time(kStatPid, g_proc.c_str());
    return;
  }
  // A well-formed line: comm is at most 15 bytes (TASK_COMM_LEN) of anything but NUL.
  std::string comm = in.ConsumeRandomLengthString(15);
  for (char& c : comm)
    if (c == '\0') c = ' ';
  uint64_t start = in.ConsumeIntegral<uint64_t>();
  write_file(g_proc + "/" + std::to_string(kStatPid) + "/stat", stat_line(kStatPid, comm, start));
  uint64_t got = nfsshim::process_start_time(kStatPid, g_proc.c_str());
  FUZZ_CHECK(got == start, "comm %s start %llu read as %llu", fuzz_quote(comm).c_str(),
             static_cast<unsigned long long>(start), static_cast<unsigned long long>(got));
}

void fuzz_classify(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  nfsshim::Identity self;
  self.host = "host";
  self.boot = "0a1b2c3d";
  self.pid = in.ConsumeIntegralInRange<pid_t>(1, 10000);
  self.start = in.ConsumeIntegralInRange<uint64_t>(0, 1000);
  int64_t age = in.ConsumeIntegral<int64_t>();
  int64_t foreign = in.ConsumeIntegral<int64_t>();
  std::string name = in.ConsumeRemainingBytesAsString();

  auto d = nfsshim::classify_entry(name, self, age, foreign, g_proc.c_str());
  FUZZ_CHECK(d.name == name, "decision for %s names %s", fuzz_quote(name).c_str(),
             fuzz_quote(d.name).c_str());
  FUZZ_CHECK(!d.reason.empty(), "no reason for %s", fuzz_quote(name).c_str());
  auto e = nfsshim::EntryName::parse(name);
  if (!e) {
    FUZZ_CHECK(d.action == ReapAction::keep, "non-entry %s not kept", fuzz_quote(name).c_str());
    return;
  }
  bool old = age >= foreign;
  bool same_boot = e->owner.same_boot(self);
  bool me = same_boot && e->owner.pid == self.pid && e->owner.start == self.start;
  bool alive = same_boot && ((e->owner.pid == kLivePid && e->owner.start == kLiveStart) || me);
  if (d.action == ReapAction::adopt)
    FUZZ_CHECK(me && e->kind != 's', "adopted %s (self pid %d start %llu)",
               fuzz_quote(name).c_str(), static_cast<int>(self.pid),
               static_cast<unsigned long long>(self.start));
  if (e->kind == 's' || !same_boot) {
    FUZZ_CHECK((d.action == ReapAction::remove) == old, "%s: age %lld, foreign age %lld, %s",
               fuzz_quote(name).c_str(), static_cast<long long>(age),
               static_cast<long long>(foreign), d.reason.c_str());
    return;
  }
  FUZZ_CHECK(!(alive && d.action == ReapAction::remove), "live owner's entry %s removed: %s",
             fuzz_quote(name).c_str(), d.reason.c_str());
  // kStatPid's stat holds whatever the 'P' mode wrote last: a stat that cannot be read
  // counts as alive (never reap on a doubt), so that owner may go either way.
  bool doubt = e->owner.pid == kStatPid;
  FUZZ_CHECK(alive || doubt || d.action == ReapAction::remove, "dead owner's entry %s kept: %s",
             fuzz_quote(name).c_str(), d.reason.c_str());
}

void remove_fake_proc() {
  for (pid_t pid : {kLivePid, kStatPid}) {
    std::string d = g_proc + "/" + std::to_string(pid);
    ::unlink((d + "/stat").c_str());
    ::rmdir(d.c_str());
  }
  ::rmdir(g_proc.c_str());
}

}  // namespace

// The fake /proc lives in /dev/shm (tmpfs: the 'P' mode rewrites a file per input) or
// /tmp, whatever $TMPDIR says: process_start_time builds "PROC/PID/stat" in a 64-byte
// buffer, so a long root would not be read at all.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  struct stat st;
  std::string dir = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0
                        ? "/dev/shm/nfsshim-fz.XXXXXX"
                        : "/tmp/nfsshim-fz.XXXXXX";
  if (!::mkdtemp(&dir[0])) std::abort();
  g_proc = dir;
  for (pid_t pid : {kLivePid, kStatPid}) ::mkdir((dir + "/" + std::to_string(pid)).c_str(), 0700);
  write_file(dir + "/" + std::to_string(kLivePid) + "/stat", stat_line(kLivePid, "java", kLiveStart));
  std::atexit(remove_fake_proc);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] == 'P') fuzz_stat(data + 1, size - 1);
  else fuzz_classify(data, size);
  return 0;
}
