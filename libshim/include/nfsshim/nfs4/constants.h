// NFSv4.1 protocol numbers (RFC 8881 section 18 and RFC 8881's XDR, RFC 5662).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfsshim::nfs4 {

constexpr uint32_t kNfsProgram = 100003;
constexpr uint32_t kNfsVersion = 4;
constexpr uint32_t kProcNull = 0;
constexpr uint32_t kProcCompound = 1;
constexpr uint32_t kMinorVersion = 1;

// Limits from the XDR (NFS4_FHSIZE, NFS4_VERIFIER_SIZE, NFS4_OPAQUE_LIMIT,
// NFS4_SESSIONID_SIZE, NFS4_OTHER_SIZE) and sane maxima for what we accept.
constexpr size_t kFhSize = 128;
constexpr size_t kVerifierSize = 8;
constexpr size_t kOpaqueLimit = 1024;
constexpr size_t kSessionIdSize = 16;
constexpr size_t kStateidOtherSize = 12;
constexpr size_t kMaxNameBytes = 255;        // a component we send (NAME_MAX)
constexpr size_t kMaxStringBytes = 4096;     // any string we accept (owner, link text)
constexpr uint32_t kMaxBitmapWords = 8;      // bitmap4 length we accept
constexpr uint32_t kMaxResults = 64;         // resarray<> length we accept
constexpr uint32_t kMaxDirEntries = 65536;   // READDIR entries in one reply
constexpr size_t kMaxIoBytes = 64u << 20;    // READ data we accept

enum Op : uint32_t {
  OP_ACCESS = 3, OP_CLOSE = 4, OP_COMMIT = 5, OP_CREATE = 6, OP_GETATTR = 9, OP_GETFH = 10,
  OP_LINK = 11, OP_LOCK = 12, OP_LOCKT = 13, OP_LOCKU = 14, OP_LOOKUP = 15, OP_OPEN = 18,
  OP_PUTFH = 22, OP_PUTROOTFH = 24, OP_READ = 25, OP_READDIR = 26, OP_READLINK = 27,
  OP_REMOVE = 28, OP_RENAME = 29, OP_RESTOREFH = 31, OP_SAVEFH = 32, OP_SETATTR = 34,
  OP_WRITE = 38, OP_BIND_CONN_TO_SESSION = 41, OP_EXCHANGE_ID = 42, OP_CREATE_SESSION = 43,
  OP_DESTROY_SESSION = 44, OP_FREE_STATEID = 45, OP_SEQUENCE = 53, OP_TEST_STATEID = 55,
  OP_DESTROY_CLIENTID = 57, OP_RECLAIM_COMPLETE = 58, OP_ILLEGAL = 10044,
};

// nfs_ftype4
enum FileType : uint32_t {
  NF4REG = 1, NF4DIR = 2, NF4BLK = 3, NF4CHR = 4, NF4LNK = 5, NF4SOCK = 6, NF4FIFO = 7,
  NF4ATTRDIR = 8, NF4NAMEDATTR = 9,
};

// EXCHANGE_ID flags
constexpr uint32_t EXCHGID4_FLAG_SUPP_MOVED_REFER = 0x00000001;
constexpr uint32_t EXCHGID4_FLAG_SUPP_MOVED_MIGR = 0x00000002;
constexpr uint32_t EXCHGID4_FLAG_BIND_PRINC_STATEID = 0x00000100;
constexpr uint32_t EXCHGID4_FLAG_USE_NON_PNFS = 0x00010000;
constexpr uint32_t EXCHGID4_FLAG_USE_PNFS_MDS = 0x00020000;
constexpr uint32_t EXCHGID4_FLAG_USE_PNFS_DS = 0x00040000;
constexpr uint32_t EXCHGID4_FLAG_UPD_CONFIRMED_REC_A = 0x40000000;
constexpr uint32_t EXCHGID4_FLAG_CONFIRMED_R = 0x80000000;
// state_protect_how4
constexpr uint32_t SP4_NONE = 0, SP4_MACH_CRED = 1, SP4_SSV = 2;

// CREATE_SESSION flags
constexpr uint32_t CREATE_SESSION4_FLAG_PERSIST = 0x1;
constexpr uint32_t CREATE_SESSION4_FLAG_CONN_BACK_CHAN = 0x2;
constexpr uint32_t CREATE_SESSION4_FLAG_CONN_RDMA = 0x4;

// SEQUENCE sr_status_flags
constexpr uint32_t SEQ4_STATUS_CB_PATH_DOWN = 0x1;
constexpr uint32_t SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING = 0x2;
constexpr uint32_t SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED = 0x4;
constexpr uint32_t SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED = 0x8;
constexpr uint32_t SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED = 0x10;
constexpr uint32_t SEQ4_STATUS_ADMIN_STATE_REVOKED = 0x20;
constexpr uint32_t SEQ4_STATUS_RECALLABLE_STATE_REVOKED = 0x40;
constexpr uint32_t SEQ4_STATUS_LEASE_MOVED = 0x80;
constexpr uint32_t SEQ4_STATUS_RESTART_RECLAIM_NEEDED = 0x100;
constexpr uint32_t SEQ4_STATUS_CB_PATH_DOWN_SESSION = 0x200;
constexpr uint32_t SEQ4_STATUS_BACKCHANNEL_FAULT = 0x400;
constexpr uint32_t SEQ4_STATUS_DEVID_CHANGED = 0x800;
constexpr uint32_t SEQ4_STATUS_DEVID_DELETED = 0x1000;

// BIND_CONN_TO_SESSION directions
constexpr uint32_t CDFC4_FORE = 0x1, CDFC4_BACK = 0x2, CDFC4_FORE_OR_BOTH = 0x3,
                   CDFC4_BACK_OR_BOTH = 0x7;
constexpr uint32_t CDFS4_FORE = 0x1, CDFS4_BACK = 0x2, CDFS4_BOTH = 0x3;

// ACCESS bits
constexpr uint32_t ACCESS4_READ = 0x01, ACCESS4_LOOKUP = 0x02, ACCESS4_MODIFY = 0x04,
                   ACCESS4_EXTEND = 0x08, ACCESS4_DELETE = 0x10, ACCESS4_EXECUTE = 0x20;

// OPEN
constexpr uint32_t OPEN4_SHARE_ACCESS_READ = 1, OPEN4_SHARE_ACCESS_WRITE = 2,
                   OPEN4_SHARE_ACCESS_BOTH = 3;
constexpr uint32_t OPEN4_SHARE_ACCESS_WANT_NO_DELEG = 0x0400;
constexpr uint32_t OPEN4_SHARE_DENY_NONE = 0, OPEN4_SHARE_DENY_READ = 1,
                   OPEN4_SHARE_DENY_WRITE = 2, OPEN4_SHARE_DENY_BOTH = 3;
constexpr uint32_t OPEN4_NOCREATE = 0, OPEN4_CREATE = 1;
constexpr uint32_t UNCHECKED4 = 0, GUARDED4 = 1, EXCLUSIVE4 = 2, EXCLUSIVE4_1 = 3;
constexpr uint32_t CLAIM_NULL = 0, CLAIM_FH = 4;
constexpr uint32_t OPEN4_RESULT_CONFIRM = 0x2;
constexpr uint32_t OPEN4_RESULT_LOCKTYPE_POSIX = 0x4;
constexpr uint32_t OPEN4_RESULT_PRESERVE_UNLINKED = 0x8;
constexpr uint32_t OPEN4_RESULT_MAY_NOTIFY_LOCK = 0x20;
constexpr uint32_t OPEN_DELEGATE_NONE = 0, OPEN_DELEGATE_READ = 1, OPEN_DELEGATE_WRITE = 2,
                   OPEN_DELEGATE_NONE_EXT = 3;
constexpr uint32_t WND4_CONTENTION = 7, WND4_RESOURCE = 8;
constexpr uint32_t NFS_LIMIT_SIZE = 1, NFS_LIMIT_BLOCKS = 2;

// WRITE stable_how4
constexpr uint32_t UNSTABLE4 = 0, DATA_SYNC4 = 1, FILE_SYNC4 = 2;

// LOCK types
constexpr uint32_t READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4;

}  // namespace nfsshim::nfs4
