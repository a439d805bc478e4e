// keep_io_buffers_in_heap(): 1 MiB buffers freed and malloc'd again, as the engines do per
// WRITE/READ, must stop costing fresh pages. Counted as minor page faults (getrusage) in a
// forked child, which starts with glibc's default heap settings.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nfsshim/nfs/heap_tuning.h"

namespace {

long minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

// Rounds of 16 x 1 MiB buffers in use at once (the in-flight pieces of a large write),
// each filled, then all freed. Returns the minor faults of rounds 2..ROUNDS.
long faults_of_buffer_rounds(int rounds) {
  std::vector<char*> bufs(16);
  long before = 0;
  for (int r = 0; r < rounds; ++r) {
    if (r == 1) before = minor_faults();  // round 1 may fault: first use of the memory
    for (auto& b : bufs) {
      b = static_cast<char*>(std::malloc(1 << 20));
      if (!b) std::abort();
      std::memset(b, r, 1 << 20);
    }
    for (auto& b : bufs) std::free(b);
  }
  return minor_faults() - before;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizer = true;  // the sanitizers bring their own allocator
#else
constexpr bool kSanitizer = false;
#endif

TEST(HeapTuning, FreedIoBuffersAreReusedWithoutPageFaults) {
  if (kSanitizer) GTEST_SKIP() << "sanitizer allocator: mallopt has no effect";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    long plain = faults_of_buffer_rounds(10);
    long ok = nfsshim::nfs::keep_io_buffers_in_heap() ? 1 : 0;
    faults_of_buffer_rounds(2);  // settle: the heap grows once to the working set
    long tuned = faults_of_buffer_rounds(10);
    long out[3] = {plain, tuned, ok};
    ssize_t n = write(fds[1], out, sizeof out);
    _exit(n == static_cast<ssize_t>(sizeof out) ? 0 : 1);
  }
  close(fds[1]);
  long got[3] = {-1, -1, -1};
  ssize_t n = read(fds[0], got, sizeof got);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof got));
  std::printf("minor faults over 9 rounds of 16 x 1 MiB: glibc defaults %ld, tuned %ld\n",
              got[0], got[1]);
  EXPECT_EQ(got[2], 1) << "mallopt refused";
  // 9 rounds x 16 MiB = 36864 pages. Defaults: the freed 16 MiB is trimmed (threshold
  // 2 x the largest freed mmap'd block), so most rounds fault every page again.
  EXPECT_GT(got[0], 9 * 4096 / 2) << "the default heap reused the buffers: test is moot";
  EXPECT_LT(got[1], 9 * 4096 / 20) << "buffers still cost fresh pages after tuning";
}

}  // namespace
