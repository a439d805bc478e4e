// State shared by all operations of one mount, and the small helpers they have in common.
// Conventions: helpers return >= 0 or -errno; only the op_*.cc functions reply.
#pragma once

#include "fuse_api.h"

#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>

#include "inode_table.h"
#include "nfsshim/graveyard.h"
#include "options.h"

namespace nfsshim::fuse {

struct Fs {
  Options opts;
  std::atomic<uint64_t> piped_writes{0};  // WRITEs whose data came through a pipe (splice)
  std::unique_ptr<InodeTable> inodes;
  std::unique_ptr<Graveyard> graveyard;  // null only if it could not be opened
  // The graveyard directory is hidden: its own key, and (parent, name) where it lives.
  InodeKey graveyard_key;
  InodeKey graveyard_parent_key;
  std::string graveyard_name;
  // On NFS an unlink of a name whose dentry we hold (our O_PATH fd) is silly-renamed into
  // the user's directory: there every unlink of a known inode goes through the graveyard.
  bool backing_nfs = false;
  // Inode numbers of SOURCE's filesystem cannot come back while we hold an O_PATH descriptor
  // of the inode (local filesystems; not NFS or FUSE): a lookup of a known inode then needs no
  // new descriptor and no check that the known one is still the same file.
  bool stable_inums = false;
  dev_t source_dev = 0;
  uid_t uid = 0;  // the daemon's own ids: new files get the caller's
  gid_t gid = 0;
  // The kernel checks POSIX ACLs (FUSE_POSIX_ACL, asked for at init), and leaves the umask
  // of new nodes to us (FUSE_DONT_MASK: CallerUmask).
  bool posix_acl = false;
  bool dont_mask = false;

  bool hidden_name(const Inode& parent, const char* name) const {
    return parent.key == graveyard_parent_key && graveyard_name == name;
  }
  bool hidden_inode(const struct stat& st) const { return key_of(st) == graveyard_key; }
  // The inode number the kernel sees for backing inode INO of device DEV. Through the mount
  // every file has one st_dev, so a filesystem mounted inside SOURCE (whose numbers start
  // over: two tmpfs both have a file 2) must not show its own numbers, or tar, du and find
  // take two files for one. SOURCE's own keep theirs; another device's get the top bit
  // and a per-device offset (stateless, so the same in every reply for the mount's life):
  // distinct within a device, and a clash across devices needs two numbers 2^63 apart
  // modulo the offsets' difference. 32-bit stat() (no LFS) would get EOVERFLOW for them.
  ino_t visible_ino(dev_t dev, ino_t ino) const;
  // Whether KEY is on SOURCE's own filesystem and that one has stable inode numbers.
  bool stable(const InodeKey& key) const { return stable_inums && key.dev == source_dev; }
  // Whether INODE is on a local filesystem (local_fs_type): its close(2) reports nothing a
  // FLUSH would carry, and it keeps an unlinked file unseen for a mapping. SOURCE's kind was
  // seen at the start; a filesystem mounted inside SOURCE is asked through INODE's own
  // descriptor each time (a device number alone could name another filesystem later).
  bool local_fs(const Inode& inode) const;
};

// Local filesystems whose inode numbers stay taken while we hold an O_PATH descriptor (and
// whose close(2) reports nothing a FLUSH would carry): ext2/3/4, xfs, btrfs, tmpfs. Anything
// else (NFS, FUSE, CIFS, ...) gets the careful path. TYPE: statfs's f_type.
bool local_fs_type(long type);

inline Fs& fs_of(fuse_req_t req) { return *static_cast<Fs*>(fuse_req_userdata(req)); }

// -errno of a failed libc call (errno set, return value -1), else the value.
inline long neg(long rv) { return rv == -1 ? -errno : rv; }

// Replies with -RV (RV < 0) or success (0).
inline void reply_status(fuse_req_t req, long rv) { fuse_reply_err(req, rv < 0 ? static_cast<int>(-rv) : 0); }

// "/proc/self/fd/N": reopens or names what an O_PATH descriptor refers to.
struct ProcPath {
  explicit ProcPath(int fd);
  const char* c_str() const { return buf; }
  char buf[40];
};

// Looks PARENT/NAME up in the backing filesystem and counts one kernel lookup.
// 0 or -errno; the graveyard is -ENOENT. CREATED: the caller just made the name (the inode
// cannot be known yet, so the known-inode fast path is skipped).
int do_lookup(Fs& fs, fuse_ino_t parent, const char* name, fuse_entry_param* e,
              bool created = false);

// Whether DIRFD/NAME is the mount point of another mount (a bind mount too), found without
// asking the mounted filesystem anything (it may not answer: a stopped FUSE daemon, a hard
// NFS mount whose server is gone). False on errors: the caller's lookup reports them.
bool is_mount_point(int dirfd, const char* name);

// Attributes as the kernel should see them (a buried inode does not count its graveyard link).
int stat_inode(const Fs& fs, Inode& inode, struct stat* st);

// Entry and attribute timeouts from the options.
void set_timeouts(const Fs& fs, fuse_entry_param* e);
// The sticky-directory rule for removing or replacing NAME in DIRFD: in a directory with
// S_ISVTX only the file's owner, the directory's owner, root or a caller with CAP_FOWNER
// may. The kernel checked it against the inode it had cached for the name, which another
// file may have replaced on SOURCE since (entry_timeout); the daemon acts as root. KNOWN:
// the name's fresh attributes if the caller has them. 0 (also for a name that is gone: the
// call then answers) or -errno.
int sticky_check(fuse_req_t req, int dirfd, const char* name, const struct stat* known = nullptr);
// Whether the caller has capability CAP in its effective set (/proc/PID/status CapEff: the
// caller waits in its system call, so the pid is its own). Not in which user namespace:
// used where the kernel let the call through already, or for names (listxattr).
bool caller_has_cap(fuse_req_t req, unsigned cap);

// Open-count bookkeeping and the graveyard (graveyard_ops.cc).
void open_ref(Inode& inode);
// One open file of INODE is gone: at the last one a buried inode's entry is removed.
void release_ref(Fs& fs, Inode& inode);
// If removing DIRFD/NAME (the name of INODE) now would hurt (the file is open, we hold its
// dentry on NFS, or a passthrough mapping may hold it), moves it into the graveyard instead:
// returns 1 and the name is gone.
// Returns 0 if the caller should remove the name itself, or -errno. With PIN, a return of 1
// also counts one more open, which the caller ends with release_ref: a last release on
// another thread cannot remove the entry that a failed rename must put back.
int bury(Fs& fs, Inode& inode, int dirfd, const char* name, bool pin = false);
int bury_locked(Fs& fs, Inode& inode, int dirfd, const char* name, bool pin);  // INODE.mu held
// bury(), and where the file is not buried PLAIN() (the plain unlink or rename, 0 or
// -errno) under the same lock: an open cannot come between the decision and the call (a
// FUSE SOURCE would hide the file it opened as .fuse_hidden* beside its name). Returns
// bury's answer; where it is 0, PLAIN ran and *PLAIN_RV holds its result.
template <typename F>
int bury_or(Fs& fs, Inode& inode, int dirfd, const char* name, bool pin, F plain, int* plain_rv) {
  std::lock_guard<std::mutex> lock(inode.mu);
  int rv = bury_locked(fs, inode, dirfd, name, pin);
  if (rv == 0) *plain_rv = plain();
  return rv;
}
// Undoes bury (the rename that followed it failed): puts the entry back at DIRFD/NAME.
int unbury(Fs& fs, Inode& inode, int dirfd, const char* name);
// After bury and the operation it prepared: removes the entry at once if nothing is open.
void settle(Fs& fs, Inode& inode);
// At shutdown: the kernel connection is gone, no handle can be used again.
void drop_all_buried(Fs& fs);

}  // namespace nfsshim::fuse
