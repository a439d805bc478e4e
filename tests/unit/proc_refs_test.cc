#include "nfsshim/proc_refs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "temp_dir.h"

namespace nfsshim {
namespace {

TEST(ProcRefs, ParsesMapsLines) {
  const char text[] =
      "7f0000000000-7f0000001000 r--s 00000000 00:35 1234 /mnt/k/00.index\n"
      "7f0000002000-7f0000004000 rw-s 00001000 fd:01 1234 /other/dev/same/ino\n"
      "7f0000005000-7f0000006000 rw-p 00000000 00:00 0 \n"
      "7f0000007000-7f0000008000 r--s 00000000 00:35 99 /mnt/k/x";
  std::vector<InodeKey> keys{{makedev(0, 0x35), 1234}, {makedev(0, 0x35), 99}};
  std::vector<Refs> out(2);
  parse_maps(text, sizeof text - 1, keys, &out);
  ASSERT_EQ(out[0].maps.size(), 1u);
  EXPECT_EQ(out[0].maps[0].start, 0x7f0000000000u);
  EXPECT_EQ(out[0].maps[0].end, 0x7f0000001000u);
  ASSERT_EQ(out[1].maps.size(), 1u);  // last line has no newline
}

// Found by fuzzing (tests/fuzz): a truncated line must not make the parser read on into
// the next line or past the text. The text sits at the end of a buffer followed by a
// line that would match if the parser borrowed its numbers.
TEST(ProcRefs, ShortLinesNeverBorrowFromTheNextLine) {
  const std::string text =
      "1-2 r--s\n"
      "00:35 1234 /borrowed\n"
      "7f00-7f01 r--s 0 00:35\n"
      "1234\n"
      "5";
  std::vector<InodeKey> keys{{makedev(0, 0x35), 1234}};
  std::vector<Refs> out(1);
  parse_maps(text.data(), text.size(), keys, &out);
  EXPECT_TRUE(out[0].maps.empty());
  // Parsing stops at LEN even without a NUL or newline after it.
  const std::string whole = "7f00-7f01 r--s 0 00:35 12345 /x\n";
  out.assign(1, Refs{});
  parse_maps(whole.data(), whole.size() - 5, keys, &out);  // cut after "1234"
  ASSERT_EQ(out[0].maps.size(), 1u);
}

TEST(ProcRefs, FindsDescriptorsAndMappingsOfAnInode) {
  TempDir d;
  std::string p = d.path() + "/f";
  int fd = open(p.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  int fd2 = dup(fd);
  void* m = mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  InodeKey key{st.st_dev, st.st_ino};

  Refs r = scan_refs({key})[0];
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.fds.size(), 2u);
  ASSERT_EQ(r.maps.size(), 1u);
  EXPECT_EQ(r.maps[0].start, reinterpret_cast<uintptr_t>(m));

  close(fd);
  close(fd2);
  r = scan_refs({key})[0];
  EXPECT_TRUE(r.fds.empty());
  EXPECT_TRUE(r.any());  // the mapping alone holds it
  // A partial unmap leaves the rest of the mapping.
  ASSERT_EQ(munmap(m, 4096), 0);
  r = scan_refs({key})[0];
  ASSERT_EQ(r.maps.size(), 1u);
  EXPECT_EQ(r.maps[0].start, reinterpret_cast<uintptr_t>(m) + 4096);
  ASSERT_EQ(munmap(static_cast<char*>(m) + 4096, 4096), 0);
  EXPECT_FALSE(scan_refs({key})[0].any());
}

}  // namespace
}  // namespace nfsshim
