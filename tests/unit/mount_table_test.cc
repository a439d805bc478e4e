#include "nfsshim/mount_table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace nfsshim {
namespace {

const char kSample[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "95 22 0:53 / /mnt/kafka\\040logs rw,relatime shared:50 - nfs4 ontap:/kafka "
    "rw,vers=4.1,rsize=262144,nconnect=16,hard,proto=tcp\n"
    "96 22 0:54 /sub /mnt/v3 rw - nfs srv:/exp rw,vers=3,nolock\n"
    "garbage line\n"
    "97 22 0:55 / /mnt/fuse rw nosuid - fuse.bindfs bindfs rw,user_id=0\n";

TEST(MountTable, ParsesFieldsAndEscapes) {
  auto m = parse_mountinfo(kSample);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].id, 95);
  EXPECT_EQ(m[1].dev, makedev(0, 53));
  EXPECT_EQ(m[1].point, "/mnt/kafka logs");
  EXPECT_EQ(m[1].fstype, "nfs4");
  EXPECT_EQ(m[1].source, "ontap:/kafka");
  EXPECT_TRUE(is_nfs_fstype(m[1].fstype));
  EXPECT_TRUE(is_nfs_fstype(m[2].fstype));
  EXPECT_FALSE(is_nfs_fstype(m[3].fstype));
  EXPECT_EQ(m[2].root, "/sub");
  EXPECT_EQ(mount_option(m[1].super_options, "vers"), "4.1");
  EXPECT_EQ(mount_option(m[1].super_options, "nconnect"), "16");
  EXPECT_EQ(mount_option(m[1].super_options, "hard"), "hard");
  EXPECT_EQ(mount_option(m[1].super_options, "soft"), "");
}

TEST(MountTable, AReadThatFailsSaysSoAndALongTableIsReadWhole) {
  bool ok = true;
  EXPECT_TRUE(read_mountinfo("/nonexistent/mountinfo", &ok).empty());
  EXPECT_FALSE(ok);
  // 3 MiB of mounts (a host full of containers), an NFS mount last.
  char path[] = "/tmp/mountinfo.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text;
  for (int i = 0; text.size() < (3u << 20); ++i)
    text += std::to_string(100 + i) + " 1 0:" + std::to_string(50 + i % 200) +
            " / /var/lib/containers/overlay/" + std::to_string(i) + "/merged rw,relatime shared:1 - overlay overlay rw\n";
  text += "99999 1 0:777 / /mnt/kafka rw,relatime shared:2 - nfs4 filer:/kafka rw,vers=4.1,nconnect=16\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  auto m = read_mountinfo(path, &ok);
  unlink(path);
  EXPECT_TRUE(ok);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back().point, "/mnt/kafka");
  EXPECT_EQ(m.back().fstype, "nfs4");
}

TEST(MountTable, ReadsOurOwnMountsAndMountIds) {
  auto m = read_mountinfo();
  ASSERT_FALSE(m.empty());
  int fd = open("/", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  int id = fd_mount_id(fd);
  close(fd);
  ASSERT_GT(id, 0);
  bool found = false;
  for (const auto& x : m) found = found || (x.id == id && x.point == "/");
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace nfsshim
