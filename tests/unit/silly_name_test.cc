#include "nfsshim/silly_name.h"

#include <gtest/gtest.h>

namespace nfsshim {
namespace {

TEST(SillyName, NamesTheNfsClientMakes) {
  EXPECT_TRUE(is_nfs_silly_name(".nfs000000000012abcd00000001"));
  EXPECT_TRUE(is_nfs_silly_name(".nfsABCDEF000012abcd0000000f"));
  EXPECT_FALSE(is_nfs_silly_name(".nfs000000000012abcd0000001"));   // 27 characters
  EXPECT_FALSE(is_nfs_silly_name(".nfs000000000012abcd000000011"));  // 29
  EXPECT_FALSE(is_nfs_silly_name(".nfsshim-doctor-1-2"));
  EXPECT_FALSE(is_nfs_silly_name(".nfsrc"));
  EXPECT_FALSE(is_nfs_silly_name(".nfs000000000012abcd0000000g"));
  EXPECT_FALSE(is_nfs_silly_name("nfs000000000012abcd000000011"));
  EXPECT_FALSE(is_nfs_silly_name(".fuse_hidden0000000200000001"));
}

TEST(SillyName, NamesLibfuseHides) {
  EXPECT_TRUE(is_fuse_hidden_name(".fuse_hidden0000000200000001"));
  EXPECT_TRUE(is_fuse_hidden_name(".fuse_hiddenABCDEF0100000a0f"));
  EXPECT_FALSE(is_fuse_hidden_name(".fuse_hidden000000020000001"));  // 15 digits
  EXPECT_FALSE(is_fuse_hidden_name(".fuse_hidden_notes"));
  EXPECT_FALSE(is_fuse_hidden_name(".nfs000000000012abcd00000001"));
}

}  // namespace
}  // namespace nfsshim
