// What the FUSE backend needs from an NFS server, over either direct engine: NFSv3 through
// libnfs (client_v3.cc) or our NFSv4.1 sessions (client_v41.cc). Metadata calls have the
// engines' shared signatures; the data path of one open file is a FileIo, because v4.1 reads
// and writes through OPEN state (stateids) while v3 has none.
#pragma once

#include <sys/types.h>

#include <fcntl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nfsshim/nfs/engine.h"
#include "nfsshim/nfs/url.h"

namespace nfsshim::fuse::nfsfs {

// Server state a create left open (v4.1: the OPEN that created the file). Passed to the
// new file's first FileIo::open so that it needs no second OPEN: the creator may write a
// file whose mode it just made read-only, as open(2) promises.
class CreatedOpen {
 public:
  virtual ~CreatedOpen() = default;
};

// The data path of one file while the mount has it open (one per Node, shared by all of
// the file's FUSE opens; each open has a handle). All calls block; errors are -errno.
class FileIo {
 public:
  virtual ~FileIo() = default;
  // A FUSE open with open(2) FLAGS; CREATED (may be null) is what create() left open.
  virtual int open(const nfs::Cred& c, int flags, std::unique_ptr<CreatedOpen> created,
                   uint64_t* handle) = 0;
  virtual int close(const nfs::Cred& c, uint64_t handle) = 0;
  virtual ssize_t read(const nfs::Cred& c, uint64_t handle, uint64_t off, size_t len, char* buf) = 0;
  // STABLE nfs::kUnstable: kept until commit() (resent FILE_SYNC if the server restarted
  // meanwhile); nfs::kFileSync (an O_SYNC, O_DSYNC or O_DIRECT file): kept only if the
  // server answered less. DATA is the caller's copy, kept and sent as it is.
  virtual ssize_t write(const nfs::Cred& c, uint64_t off, std::shared_ptr<const std::string> data,
                        int stable) = 0;
  virtual int commit(const nfs::Cred& c) = 0;
  // COMMIT with the credentials of the last write (the writer may write; another caller not).
  virtual int commit_kept() = 0;
  // Data kept for COMMIT that the server may have lost: written before its last restart as
  // the engine saw it (v3: a reconnect, v4.1: a new client id; UnstableWriter::
  // kept_before_restart). commit_if_restarted commits it now, which re-sends it on the
  // server's new verifier: 1 done, 0 none such, -errno. kept_bytes: all data kept.
  virtual bool kept_before_restart() = 0;
  virtual int commit_if_restarted() = 0;
  virtual size_t kept_bytes() = 0;
  // True when the server promised to keep the file's data after its last name is removed
  // until every open of ours is closed (v4.1 OPEN4_RESULT_PRESERVE_UNLINKED on each open,
  // none in flight). Never for v3.
  virtual bool server_keeps_unlinked() = 0;

  // POSIX byte-range locks kept by the server, for Client::server_locks() mounts: OWNER is
  // FUSE's lock_owner, LK as fcntl's (l_whence SEEK_SET, l_len 0 = to the end). getlk
  // leaves LK's l_type F_UNLCK or describes the conflicting lock; setlk with SLEEP waits
  // until granted or CANCEL is set. unlock_owner drops all of OWNER's locks (at flush: a
  // close(2) releases the process's locks on the file). -errno.
  virtual int getlk(const nfs::Cred& c, uint64_t handle, uint64_t owner, struct flock* lk);
  virtual int setlk(const nfs::Cred& c, uint64_t handle, uint64_t owner, const struct flock& lk,
                    bool sleep, const std::atomic<bool>* cancel);
  virtual int unlock_owner(const nfs::Cred& c, uint64_t handle, uint64_t owner);
};

class Client {
 public:
  virtual ~Client() = default;
  virtual std::string describe() const = 0;  // for the log: version, connections, io backend
  virtual const nfs::Fh& root() const = 0;
  virtual nfs::Cred default_cred() const = 0;
  // The identity fixed by uid=/gid= in the URL, or -1 (then each caller's own).
  virtual int fixed_uid() const = 0;
  virtual int fixed_gid() const = 0;

  virtual int getattr(const nfs::Cred& c, const nfs::Fh& fh, nfs::Attr* out) = 0;
  virtual int setattr(const nfs::Cred& c, const nfs::Fh& fh, const nfs::SetAttr& sa) = 0;
  virtual int lookup(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, nfs::Fh* out,
                     nfs::Attr* attr) = 0;
  virtual int readlink(const nfs::Cred& c, const nfs::Fh& fh, std::string* target) = 0;
  // FLAGS: the open(2) flags (O_EXCL: an exclusive create; O_TRUNC: a file of NAME made
  // since the kernel's LOOKUP is truncated; v4.1: the access mode). CREATED null: nothing
  // stays open on the server (mknod).
  virtual int create(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, uint32_t mode,
                     int flags, nfs::Fh* out, nfs::Attr* attr,
                     std::unique_ptr<CreatedOpen>* created) = 0;
  virtual int mkdir(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name, uint32_t mode,
                    nfs::Fh* out, nfs::Attr* attr) = 0;
  virtual int symlink(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name,
                      const std::string& target, nfs::Fh* out, nfs::Attr* attr) = 0;
  // ACCESS: the bits of WANT (ACCESS3_* = ACCESS4_*) the server grants C on FH.
  virtual int access(const nfs::Cred& c, const nfs::Fh& fh, uint32_t want, uint32_t* granted) = 0;
  virtual int link(const nfs::Cred& c, const nfs::Fh& fh, const nfs::Fh& dir, const std::string& name) = 0;
  virtual int remove(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name) = 0;
  virtual int rmdir(const nfs::Cred& c, const nfs::Fh& dir, const std::string& name) = 0;
  virtual int rename(const nfs::Cred& c, const nfs::Fh& from_dir, const std::string& from,
                     const nfs::Fh& to_dir, const std::string& to) = 0;
  // Entries with attributes and, where the server sends them, file handles.
  virtual int readdirplus(const nfs::Cred& c, const nfs::Fh& dir, std::vector<nfs::DirEntry>* out) = 0;
  virtual int fsstat(const nfs::Cred& c, const nfs::Fh& fh, nfs::FsStat* out) = 0;
  // The file's I/O while it is open; its UNSTABLE data counts against LIMIT (the mount's).
  virtual std::unique_ptr<FileIo> file_io(const nfs::Fh& fh, nfs::UnstableLimit* limit) = 0;
  // True if POSIX locks go to the server (NFSv4.1 LOCK): visible to every client of the
  // export. False (NFSv3: no NLM here): the kernel keeps them local to this host.
  virtual bool server_locks() const { return false; }
};

// The client for URL's version (vers=3 or vers=4.1): connected, the export's root known.
int open_client(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why);
int open_client_v3(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why);
int open_client_v41(const nfs::NfsUrl& url, std::unique_ptr<Client>* out, std::string* why);

// Whether removing a name of a file that is open through the mount must move it into the
// graveyard (rather than a plain REMOVE): a regular file opened by us and not buried yet,
// unless the server itself keeps it for our opens. Whatever its link count, as the kernel
// client's silly rename: another client may remove the other names next.
inline bool must_bury(bool regular, int nopen, bool buried, bool server_keeps) {
  return regular && nopen > 0 && !buried && !server_keeps;
}

}  // namespace nfsshim::fuse::nfsfs
