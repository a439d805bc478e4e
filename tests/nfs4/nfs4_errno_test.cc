#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "nfsshim/nfs4/nfsstat4.h"

using namespace nfsshim::nfs4;

TEST(Nfs4Errno, CommonStatusesMapToTheirErrno) {
  EXPECT_EQ(nfs4_errno(NFS4_OK), 0);
  EXPECT_EQ(nfs4_errno(NFS4ERR_PERM), -EPERM);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NOENT), -ENOENT);
  EXPECT_EQ(nfs4_errno(NFS4ERR_ACCESS), -EACCES);
  EXPECT_EQ(nfs4_errno(NFS4ERR_EXIST), -EEXIST);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NOTDIR), -ENOTDIR);
  EXPECT_EQ(nfs4_errno(NFS4ERR_ISDIR), -EISDIR);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NOSPC), -ENOSPC);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NOTEMPTY), -ENOTEMPTY);
  EXPECT_EQ(nfs4_errno(NFS4ERR_STALE), -ESTALE);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NAMETOOLONG), -ENAMETOOLONG);
  EXPECT_EQ(nfs4_errno(NFS4ERR_XDEV), -EXDEV);
  EXPECT_EQ(nfs4_errno(NFS4ERR_DENIED), -EAGAIN);
  EXPECT_EQ(nfs4_errno(NFS4ERR_DEADLOCK), -EDEADLK);
  EXPECT_EQ(nfs4_errno(NFS4ERR_SYMLINK), -ELOOP);
  EXPECT_EQ(nfs4_errno(NFS4ERR_NOTSUPP), -EOPNOTSUPP);
  EXPECT_EQ(nfs4_errno(99999), -EIO);  // unknown
  EXPECT_STREQ(nfs4_status_name(NFS4ERR_GRACE), "NFS4ERR_GRACE");
  EXPECT_STREQ(nfs4_status_name(99999), "NFS4ERR_?");
}

TEST(Nfs4Errno, RecoveryStatusesAreNotFlattened) {
  EXPECT_EQ(nfs4_recovery(NFS4ERR_DELAY), Recovery::kRetryLater);
  // Not a "try later": a server may give it for good (the kernel does not resend either).
  EXPECT_EQ(nfs4_recovery(NFS4ERR_RESOURCE), Recovery::kNone);
  EXPECT_EQ(nfs4_errno(NFS4ERR_RESOURCE), -EREMOTEIO);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_GRACE), Recovery::kWaitGrace);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_BADSESSION), Recovery::kNewSession);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_DEADSESSION), Recovery::kNewSession);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_EXPIRED), Recovery::kNewClientId);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_STALE_CLIENTID), Recovery::kNewClientId);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_BAD_STATEID), Recovery::kRecoverStateid);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_SEQ_MISORDERED), Recovery::kSlotResync);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_BADSLOT), Recovery::kSlotResync);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_CONN_NOT_BOUND_TO_SESSION), Recovery::kReconnect);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_RETRY_UNCACHED_REP), Recovery::kRetryUncached);
  EXPECT_EQ(nfs4_recovery(NFS4ERR_NOENT), Recovery::kNone);
  EXPECT_EQ(nfs4_recovery(NFS4_OK), Recovery::kNone);
  EXPECT_EQ(nfs4_errno(NFS4ERR_DELAY), -EAGAIN);
  EXPECT_EQ(nfs4_errno(NFS4ERR_GRACE), -EAGAIN);
}

TEST(Nfs4Errno, EveryKnownStatusHasANameAndANonPositiveErrno) {
  // Walk the whole numeric range the RFC uses: every named status maps to <= 0,
  // names are unique, and only NFS4_OK and COMPLETE_ALREADY are success.
  std::set<std::string> names;
  for (uint32_t s = 0; s < 10100; ++s) {
    const char* n = nfs4_status_name(s);
    if (std::strcmp(n, "NFS4ERR_?") == 0) {
      EXPECT_EQ(nfs4_errno(s), -EIO);
      continue;
    }
    EXPECT_TRUE(names.insert(n).second) << n;
    EXPECT_LE(nfs4_errno(s), 0) << n;
    if (s != NFS4_OK && s != NFS4ERR_COMPLETE_ALREADY) {
      EXPECT_LT(nfs4_errno(s), 0) << n;
    }
  }
  EXPECT_GE(names.size(), 100u);
}
