#include "nfsshim/nfs/nfs3_errno.h"

#include <nfsc/libnfs-raw-nfs.h>

#include <cerrno>

namespace nfsshim::nfs {

int nfs3_errno(int status) {
  switch (status) {
    case NFS3_OK: return 0;
    case NFS3ERR_PERM: return -EPERM;
    case NFS3ERR_NOENT: return -ENOENT;
    case NFS3ERR_IO: return -EIO;
    case NFS3ERR_NXIO: return -ENXIO;
    case NFS3ERR_ACCES: return -EACCES;
    case NFS3ERR_EXIST: return -EEXIST;
    case NFS3ERR_XDEV: return -EXDEV;
    case NFS3ERR_NODEV: return -ENODEV;
    case NFS3ERR_NOTDIR: return -ENOTDIR;
    case NFS3ERR_ISDIR: return -EISDIR;
    case NFS3ERR_INVAL: return -EINVAL;
    case NFS3ERR_FBIG: return -EFBIG;
    case NFS3ERR_NOSPC: return -ENOSPC;
    case NFS3ERR_ROFS: return -EROFS;
    case NFS3ERR_MLINK: return -EMLINK;
    case NFS3ERR_NAMETOOLONG: return -ENAMETOOLONG;
    case NFS3ERR_NOTEMPTY: return -ENOTEMPTY;
    case NFS3ERR_DQUOT: return -EDQUOT;
    case NFS3ERR_STALE: return -ESTALE;
    case NFS3ERR_REMOTE: return -EREMOTE;
    case NFS3ERR_BADHANDLE: return -EBADF;      // as the kernel client (nfs3err_badhandle)
    case NFS3ERR_NOT_SYNC: return -EIO;
    case NFS3ERR_BAD_COOKIE: return -EINVAL;   // readdir restarts from cookie 0 on it
    case NFS3ERR_NOTSUPP: return -EOPNOTSUPP;
    case NFS3ERR_TOOSMALL: return -EINVAL;
    case NFS3ERR_SERVERFAULT: return -EREMOTEIO;
    case NFS3ERR_BADTYPE: return -EOPNOTSUPP;  // a file type the server cannot create
    case NFS3ERR_JUKEBOX: return -EAGAIN;       // callers retry after a delay
    default: return -EIO;
  }
}

const char* nfs3_status_name(int status) {
  switch (status) {
    case NFS3_OK: return "NFS3_OK";
    case NFS3ERR_PERM: return "NFS3ERR_PERM";
    case NFS3ERR_NOENT: return "NFS3ERR_NOENT";
    case NFS3ERR_IO: return "NFS3ERR_IO";
    case NFS3ERR_ACCES: return "NFS3ERR_ACCES";
    case NFS3ERR_EXIST: return "NFS3ERR_EXIST";
    case NFS3ERR_NOTDIR: return "NFS3ERR_NOTDIR";
    case NFS3ERR_ISDIR: return "NFS3ERR_ISDIR";
    case NFS3ERR_INVAL: return "NFS3ERR_INVAL";
    case NFS3ERR_NOSPC: return "NFS3ERR_NOSPC";
    case NFS3ERR_NOTEMPTY: return "NFS3ERR_NOTEMPTY";
    case NFS3ERR_STALE: return "NFS3ERR_STALE";
    case NFS3ERR_BADHANDLE: return "NFS3ERR_BADHANDLE";
    case NFS3ERR_JUKEBOX: return "NFS3ERR_JUKEBOX";
    case NFS3ERR_SERVERFAULT: return "NFS3ERR_SERVERFAULT";
    default: return "NFS3ERR_other";
  }
}

}  // namespace nfsshim::nfs
