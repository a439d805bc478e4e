// nfs::ReaddirRestarts: what a listing does after a READDIR failed part-way, and what it
// ends with when it gives up (never ENOENT for a directory that exists: glibc's readdir
// takes ENOENT from getdents for the end of the directory).
#include <gtest/gtest.h>

#include <cerrno>

#include "nfsshim/nfs/engine.h"

using nfsshim::nfs::ReaddirRestarts;

namespace {
int exists() { return 0; }
}  // namespace

TEST(ReaddirRestarts, AVanishedEntryIsAskedAgainThenFromTheStart) {
  ReaddirRestarts r;
  int err = -ENOENT;
  EXPECT_EQ(r.after(&err, 4, exists, "test"), ReaddirRestarts::kSameCookie);
  err = -ESTALE;
  EXPECT_EQ(r.after(&err, 4, exists, "test"), ReaddirRestarts::kFromStart);
  err = -EINVAL;
  EXPECT_EQ(r.after(&err, 4, exists, "test"), ReaddirRestarts::kFromStart) << "a cookie refused";
  err = -EINVAL;
  EXPECT_EQ(r.after(&err, 0, exists, "test"), ReaddirRestarts::kFail) << "EINVAL at cookie 0 is the request's";
  EXPECT_EQ(err, -EINVAL);
  err = -EIO;
  EXPECT_EQ(r.after(&err, 4, exists, "test"), ReaddirRestarts::kFail);
  EXPECT_EQ(err, -EIO);
}

TEST(ReaddirRestarts, TheDirectoryGoneEndsWithItsErrorAnUnknownStateWithEio) {
  ReaddirRestarts r;
  int err = -ENOENT;
  EXPECT_EQ(r.after(&err, 4, [] { return -ENOENT; }, "test"), ReaddirRestarts::kFail);
  EXPECT_EQ(err, -ENOENT) << "the directory itself is gone";
  err = -ENOENT;
  EXPECT_EQ(r.after(&err, 4, [] { return -ESTALE; }, "test"), ReaddirRestarts::kFail);
  EXPECT_EQ(err, -ESTALE);
  err = -ENOENT;
  EXPECT_EQ(r.after(&err, 4, [] { return -EACCES; }, "test"), ReaddirRestarts::kFail);
  EXPECT_EQ(err, -EIO) << "a GETATTR that cannot tell must not end the listing as empty";
}

TEST(ReaddirRestarts, GivingUpOnVanishingEntriesIsEio) {
  ReaddirRestarts r;
  int tries = 0;
  int err = -ENOENT;
  ReaddirRestarts::Next n;
  while ((n = r.after(&err, 4, exists, "test")) != ReaddirRestarts::kFail) {
    ASSERT_LT(++tries, 10000) << "never gives up";
    err = -ENOENT;
  }
  EXPECT_GE(tries, 3);
  EXPECT_EQ(err, -EIO) << "ENOENT would read as an empty directory";
}
