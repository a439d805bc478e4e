// The one nfsstat4 table: name, -errno and recovery class side by side.
#include <cerrno>
#include <cstddef>

#include "nfsshim/nfs4/nfsstat4.h"

namespace nfsshim::nfs4 {
namespace {

struct Entry {
  uint32_t status;
  const char* name;
  int err;  // negative errno
  Recovery recovery;
};

#define E(st, err, rec) {st, #st, err, Recovery::rec}
constexpr Entry kTable[] = {
    E(NFS4_OK, 0, kNone),
    E(NFS4ERR_PERM, -EPERM, kNone),
    E(NFS4ERR_NOENT, -ENOENT, kNone),
    E(NFS4ERR_IO, -EIO, kNone),
    E(NFS4ERR_NXIO, -ENXIO, kNone),
    E(NFS4ERR_ACCESS, -EACCES, kNone),
    E(NFS4ERR_EXIST, -EEXIST, kNone),
    E(NFS4ERR_XDEV, -EXDEV, kNone),
    E(NFS4ERR_NOTDIR, -ENOTDIR, kNone),
    E(NFS4ERR_ISDIR, -EISDIR, kNone),
    E(NFS4ERR_INVAL, -EINVAL, kNone),
    E(NFS4ERR_FBIG, -EFBIG, kNone),
    E(NFS4ERR_NOSPC, -ENOSPC, kNone),
    E(NFS4ERR_ROFS, -EROFS, kNone),
    E(NFS4ERR_MLINK, -EMLINK, kNone),
    E(NFS4ERR_NAMETOOLONG, -ENAMETOOLONG, kNone),
    E(NFS4ERR_NOTEMPTY, -ENOTEMPTY, kNone),
    E(NFS4ERR_DQUOT, -EDQUOT, kNone),
    E(NFS4ERR_STALE, -ESTALE, kNone),
    E(NFS4ERR_BADHANDLE, -ESTALE, kNone),
    E(NFS4ERR_BAD_COOKIE, -EINVAL, kNone),
    E(NFS4ERR_NOTSUPP, -EOPNOTSUPP, kNone),
    E(NFS4ERR_TOOSMALL, -ERANGE, kNone),
    E(NFS4ERR_SERVERFAULT, -EREMOTEIO, kNone),
    E(NFS4ERR_BADTYPE, -EINVAL, kNone),
    E(NFS4ERR_DELAY, -EAGAIN, kRetryLater),
    E(NFS4ERR_SAME, -EINVAL, kNone),
    E(NFS4ERR_DENIED, -EAGAIN, kNone),  // lock conflict: F_SETLK reports EAGAIN
    E(NFS4ERR_EXPIRED, -EIO, kNewClientId),
    E(NFS4ERR_LOCKED, -EAGAIN, kNone),
    E(NFS4ERR_GRACE, -EAGAIN, kWaitGrace),
    E(NFS4ERR_FHEXPIRED, -ESTALE, kNone),
    E(NFS4ERR_SHARE_DENIED, -EACCES, kNone),
    E(NFS4ERR_WRONGSEC, -EPERM, kNone),
    E(NFS4ERR_CLID_INUSE, -EBUSY, kNone),
    E(NFS4ERR_RESOURCE, -EREMOTEIO, kNone),  // as the kernel (nfs4_map_errors): not retried
    E(NFS4ERR_MOVED, -EREMOTE, kNone),
    E(NFS4ERR_NOFILEHANDLE, -EBADF, kNone),
    E(NFS4ERR_MINOR_VERS_MISMATCH, -EPROTONOSUPPORT, kNone),
    E(NFS4ERR_STALE_CLIENTID, -EIO, kNewClientId),
    E(NFS4ERR_STALE_STATEID, -EIO, kRecoverStateid),
    E(NFS4ERR_OLD_STATEID, -EIO, kRecoverStateid),
    E(NFS4ERR_BAD_STATEID, -EIO, kRecoverStateid),
    E(NFS4ERR_BAD_SEQID, -EIO, kNone),
    E(NFS4ERR_NOT_SAME, -EINVAL, kNone),
    E(NFS4ERR_LOCK_RANGE, -ENOLCK, kNone),
    E(NFS4ERR_SYMLINK, -ELOOP, kNone),
    E(NFS4ERR_RESTOREFH, -EBADF, kNone),
    E(NFS4ERR_LEASE_MOVED, -EIO, kNone),
    E(NFS4ERR_ATTRNOTSUPP, -EOPNOTSUPP, kNone),
    E(NFS4ERR_NO_GRACE, -EIO, kNone),
    E(NFS4ERR_RECLAIM_BAD, -EIO, kNone),
    E(NFS4ERR_RECLAIM_CONFLICT, -EIO, kNone),
    E(NFS4ERR_BADXDR, -EPROTO, kNone),
    E(NFS4ERR_LOCKS_HELD, -EBUSY, kNone),
    E(NFS4ERR_OPENMODE, -EBADF, kNone),
    E(NFS4ERR_BADOWNER, -EINVAL, kNone),
    E(NFS4ERR_BADCHAR, -EINVAL, kNone),
    E(NFS4ERR_BADNAME, -EINVAL, kNone),
    E(NFS4ERR_BAD_RANGE, -EINVAL, kNone),
    E(NFS4ERR_LOCK_NOTSUPP, -ENOLCK, kNone),
    E(NFS4ERR_OP_ILLEGAL, -EOPNOTSUPP, kNone),
    E(NFS4ERR_DEADLOCK, -EDEADLK, kNone),
    E(NFS4ERR_FILE_OPEN, -EBUSY, kNone),
    E(NFS4ERR_ADMIN_REVOKED, -EIO, kRecoverStateid),
    E(NFS4ERR_CB_PATH_DOWN, -EIO, kNone),
    E(NFS4ERR_BADIOMODE, -EINVAL, kNone),
    E(NFS4ERR_BADLAYOUT, -EINVAL, kNone),
    E(NFS4ERR_BAD_SESSION_DIGEST, -EIO, kNone),
    E(NFS4ERR_BADSESSION, -EIO, kNewSession),
    E(NFS4ERR_BADSLOT, -EIO, kSlotResync),
    E(NFS4ERR_COMPLETE_ALREADY, 0, kNone),  // RECLAIM_COMPLETE sent twice: harmless
    E(NFS4ERR_CONN_NOT_BOUND_TO_SESSION, -EIO, kReconnect),
    E(NFS4ERR_DELEG_ALREADY_WANTED, -EINVAL, kNone),
    E(NFS4ERR_BACK_CHAN_BUSY, -EBUSY, kRetryLater),
    E(NFS4ERR_LAYOUTTRYLATER, -EAGAIN, kRetryLater),
    E(NFS4ERR_LAYOUTUNAVAILABLE, -EOPNOTSUPP, kNone),
    E(NFS4ERR_NOMATCHING_LAYOUT, -EINVAL, kNone),
    E(NFS4ERR_RECALLCONFLICT, -EAGAIN, kRetryLater),
    E(NFS4ERR_UNKNOWN_LAYOUTTYPE, -EOPNOTSUPP, kNone),
    E(NFS4ERR_SEQ_MISORDERED, -EIO, kSlotResync),
    E(NFS4ERR_SEQUENCE_POS, -EPROTO, kNone),
    E(NFS4ERR_REQ_TOO_BIG, -E2BIG, kNone),
    E(NFS4ERR_REP_TOO_BIG, -E2BIG, kNone),
    E(NFS4ERR_REP_TOO_BIG_TO_CACHE, -E2BIG, kNone),
    E(NFS4ERR_RETRY_UNCACHED_REP, -EIO, kRetryUncached),
    E(NFS4ERR_UNSAFE_COMPOUND, -EPROTO, kNone),
    E(NFS4ERR_TOO_MANY_OPS, -E2BIG, kNone),
    E(NFS4ERR_OP_NOT_IN_SESSION, -EPROTO, kNone),
    E(NFS4ERR_HASH_ALG_UNSUPP, -EOPNOTSUPP, kNone),
    E(NFS4ERR_CLIENTID_BUSY, -EBUSY, kNone),
    E(NFS4ERR_PNFS_IO_HOLE, -EIO, kNone),
    E(NFS4ERR_SEQ_FALSE_RETRY, -EIO, kSlotResync),
    E(NFS4ERR_BAD_HIGH_SLOT, -EIO, kSlotResync),
    E(NFS4ERR_DEADSESSION, -EIO, kNewSession),
    E(NFS4ERR_ENCR_ALG_UNSUPP, -EOPNOTSUPP, kNone),
    E(NFS4ERR_PNFS_NO_LAYOUT, -EIO, kNone),
    E(NFS4ERR_NOT_ONLY_OP, -EPROTO, kNone),
    E(NFS4ERR_WRONG_CRED, -EPERM, kNone),
    E(NFS4ERR_WRONG_TYPE, -EINVAL, kNone),
    E(NFS4ERR_DIRDELEG_UNAVAIL, -EOPNOTSUPP, kNone),
    E(NFS4ERR_REJECT_DELEG, -EIO, kNone),
    E(NFS4ERR_RETURNCONFLICT, -EAGAIN, kRetryLater),
    E(NFS4ERR_DELEG_REVOKED, -EIO, kRecoverStateid),
};
#undef E

const Entry* find(uint32_t status) {
  for (const Entry& e : kTable) {
    if (e.status == status) return &e;
  }
  return nullptr;
}

}  // namespace

int nfs4_errno(uint32_t status) {
  const Entry* e = find(status);
  return e ? e->err : -EIO;
}

Recovery nfs4_recovery(uint32_t status) {
  const Entry* e = find(status);
  return e ? e->recovery : Recovery::kNone;
}

const char* nfs4_status_name(uint32_t status) {
  const Entry* e = find(status);
  return e ? e->name : "NFS4ERR_?";
}

}  // namespace nfsshim::nfs4
