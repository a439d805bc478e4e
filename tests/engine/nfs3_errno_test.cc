#include "nfsshim/nfs/nfs3_errno.h"

#include <gtest/gtest.h>
#include <nfsc/libnfs-raw-nfs.h>

#include <cerrno>

namespace nfsshim::nfs {
namespace {

TEST(Nfs3Errno, OkIsZeroAndErrorsAreNegative) {
  EXPECT_EQ(nfs3_errno(NFS3_OK), 0);
  const int all[] = {NFS3ERR_PERM, NFS3ERR_NOENT, NFS3ERR_IO, NFS3ERR_NXIO, NFS3ERR_ACCES, NFS3ERR_EXIST,
                     NFS3ERR_XDEV, NFS3ERR_NODEV, NFS3ERR_NOTDIR, NFS3ERR_ISDIR, NFS3ERR_INVAL, NFS3ERR_FBIG,
                     NFS3ERR_NOSPC, NFS3ERR_ROFS, NFS3ERR_MLINK, NFS3ERR_NAMETOOLONG, NFS3ERR_NOTEMPTY,
                     NFS3ERR_DQUOT, NFS3ERR_STALE, NFS3ERR_REMOTE, NFS3ERR_BADHANDLE, NFS3ERR_NOT_SYNC,
                     NFS3ERR_BAD_COOKIE, NFS3ERR_NOTSUPP, NFS3ERR_TOOSMALL, NFS3ERR_SERVERFAULT,
                     NFS3ERR_BADTYPE, NFS3ERR_JUKEBOX, 99999};
  for (int s : all) EXPECT_LT(nfs3_errno(s), 0) << s;
}

TEST(Nfs3Errno, TheTable) {
  EXPECT_EQ(nfs3_errno(NFS3ERR_PERM), -EPERM);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NOENT), -ENOENT);
  EXPECT_EQ(nfs3_errno(NFS3ERR_IO), -EIO);
  EXPECT_EQ(nfs3_errno(NFS3ERR_ACCES), -EACCES);
  EXPECT_EQ(nfs3_errno(NFS3ERR_EXIST), -EEXIST);
  EXPECT_EQ(nfs3_errno(NFS3ERR_XDEV), -EXDEV);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NOTDIR), -ENOTDIR);
  EXPECT_EQ(nfs3_errno(NFS3ERR_ISDIR), -EISDIR);
  EXPECT_EQ(nfs3_errno(NFS3ERR_INVAL), -EINVAL);
  EXPECT_EQ(nfs3_errno(NFS3ERR_FBIG), -EFBIG);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NOSPC), -ENOSPC);
  EXPECT_EQ(nfs3_errno(NFS3ERR_ROFS), -EROFS);
  EXPECT_EQ(nfs3_errno(NFS3ERR_MLINK), -EMLINK);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NAMETOOLONG), -ENAMETOOLONG);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NOTEMPTY), -ENOTEMPTY);
  EXPECT_EQ(nfs3_errno(NFS3ERR_DQUOT), -EDQUOT);
  EXPECT_EQ(nfs3_errno(NFS3ERR_STALE), -ESTALE);
  EXPECT_EQ(nfs3_errno(NFS3ERR_BADHANDLE), -EBADF);
  EXPECT_EQ(nfs3_errno(NFS3ERR_NOTSUPP), -EOPNOTSUPP);
  EXPECT_EQ(nfs3_errno(NFS3ERR_SERVERFAULT), -EREMOTEIO);
  EXPECT_EQ(nfs3_errno(NFS3ERR_JUKEBOX), -EAGAIN);
  EXPECT_EQ(nfs3_errno(12345), -EIO);  // unknown: an I/O error, never success
  EXPECT_STREQ(nfs3_status_name(NFS3ERR_STALE), "NFS3ERR_STALE");
}

}  // namespace
}  // namespace nfsshim::nfs
