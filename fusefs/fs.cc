#include "fs.h"

#include <fcntl.h>
#if __has_include(<linux/openat2.h>)  // not in RHEL 8's kernel headers (4.18)
#include <linux/openat2.h>
#endif
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nfsshim/mount_table.h"

namespace nfsshim::fuse {

ProcPath::ProcPath(int fd) {
  static const char kPrefix[] = "/proc/self/fd/";
  std::memcpy(buf, kPrefix, sizeof kPrefix - 1);
  auto r = std::to_chars(buf + sizeof kPrefix - 1, buf + sizeof buf - 1, fd);
  *r.ptr = '\0';
}

void set_timeouts(const Fs& fs, fuse_entry_param* e) {
  e->attr_timeout = fs.opts.attr_timeout;
  e->entry_timeout = fs.opts.entry_timeout;
}

// A buried file's graveyard entry is our link, not one of the user's names.
static void hide_grave_link(Inode& inode, struct stat* st) {
  if (!S_ISREG(st->st_mode) || st->st_nlink == 0) return;
  std::lock_guard<std::mutex> lock(inode.mu);
  if (!inode.grave_entry.empty()) --st->st_nlink;
}

// splitmix64's finalizer: spreads device numbers (small, close together) over 64 bits.
static uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ino_t Fs::visible_ino(dev_t dev, ino_t ino) const {
  if (dev == source_dev) return ino;
  constexpr uint64_t kTop = 1ull << 63;
  return static_cast<ino_t>(kTop | ((static_cast<uint64_t>(ino) + mix64(dev)) & (kTop - 1)));
}

int stat_inode(const Fs& fs, Inode& inode, struct stat* st) {
  int rv = sys::fstatat(inode.fd.get(), "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
  if (rv < 0) return rv;
  hide_grave_link(inode, st);
  st->st_ino = fs.visible_ino(st->st_dev, st->st_ino);
  return 0;
}

// The same for the attributes of a lookup reply (a name found has one of the user's names
// besides a graveyard entry only if it has two links or more).
static void hide_grave_link(Fs& fs, fuse_entry_param* e) {
  if (!S_ISREG(e->attr.st_mode) || e->attr.st_nlink < 2) return;
  if (auto inode = fs.inodes->get(e->ino)) hide_grave_link(*inode, &e->attr);
}

// Whether two descriptors of one NFS filesystem are known to name different files: their
// file handles differ (an NFS handle carries the server's generation; the inode number
// may not). False where the kernel gives no handle: one over MAX_HANDLE_SZ (an NFS server
// handle over about 114 bytes: EOVERFLOW). Not for FUSE, whose handle is the kernel's
// node id: two hard links there have two.
static bool handles_differ(int a, int b) {
  alignas(file_handle) unsigned char buf_a[sizeof(file_handle) + MAX_HANDLE_SZ];
  alignas(file_handle) unsigned char buf_b[sizeof buf_a];
  auto* ha = reinterpret_cast<file_handle*>(buf_a);
  auto* hb = reinterpret_cast<file_handle*>(buf_b);
  int mount_id;
  ha->handle_bytes = hb->handle_bytes = MAX_HANDLE_SZ;
  if (::name_to_handle_at(a, "", ha, &mount_id, AT_EMPTY_PATH) != 0 ||
      ::name_to_handle_at(b, "", hb, &mount_id, AT_EMPTY_PATH) != 0)
    return false;
  return ha->handle_type != hb->handle_type || ha->handle_bytes != hb->handle_bytes ||
         std::memcmp(ha->f_handle, hb->f_handle, ha->handle_bytes) != 0;
}

int do_lookup(Fs& fs, fuse_ino_t parent_ino, const char* name, fuse_entry_param* e, bool created) {
  auto parent = fs.inodes->get(parent_ino);
  if (!parent) return -ESTALE;
  if (fs.hidden_name(*parent, name)) return -ENOENT;
  // ".." of the root would leave SOURCE (the kernel only asks with export support).
  if (parent_ino == FUSE_ROOT_ID && std::strcmp(name, "..") == 0) name = ".";
  // Fast path (stable inode numbers): most lookups are revalidations of inodes the kernel
  // knows, and one fstatat answers them (instead of openat + fstat + close + a stat of the
  // known descriptor). Saves syscalls; the gain was below the noise of tools/bench/fuse on the
  // 2-vCPU test VM, where the daemon's thread hand-off dominates (fusefs/README.md).
  if (!created && fs.stable_inums) {
    uint64_t made = fs.inodes->made();
    int rv = sys::fstatat(parent->fd.get(), name, &e->attr, AT_SYMLINK_NOFOLLOW);
    if (rv < 0) return rv;
    if (fs.hidden_inode(e->attr)) return -ENOENT;
    if (fs.stable(key_of(e->attr)) &&
        (e->ino = fs.inodes->add_known_lookup(key_of(e->attr), made, &e->generation)) != 0) {
      hide_grave_link(fs, e);
      e->attr.st_ino = fs.visible_ino(e->attr.st_dev, e->attr.st_ino);
      set_timeouts(fs, e);
      return 0;
    }
  }
  sys::Fd fd(sys::openat(parent->fd.get(), name, O_PATH | O_NOFOLLOW));
  if (!fd.valid()) return fd.get();
  int rv = sys::fstatat(fd.get(), "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
  if (rv < 0) return rv;
  if (fs.hidden_inode(e->attr)) return -ENOENT;  // reached through another name (a bind mount)
  // Our O_PATH descriptor keeps a local inode (and its number) alive, but on a FUSE or NFS
  // backing filesystem a deleted file's number can come back for a new file while we still
  // hold the old one: then the table entry is stale and must not be reused. NFS may answer
  // the old descriptor's stat from its attribute cache (nlink still 1), so on an NFS
  // SOURCE the file handles decide.
  if (!fs.stable(key_of(e->attr))) {
    if (auto known = fs.inodes->find(key_of(e->attr))) {
      struct stat kst;
      const bool nfs = fs.backing_nfs && e->attr.st_dev == fs.source_dev;
      bool same = sys::fstatat(known->fd.get(), "", &kst, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0 &&
                  (kst.st_mode & S_IFMT) == (e->attr.st_mode & S_IFMT) && kst.st_nlink > 0 &&
                  !(nfs && handles_differ(known->fd.get(), fd.get()));
      if (!same) fs.inodes->retire(*known);
    }
  }
  e->ino = fs.inodes->add_lookup(std::move(fd), e->attr, &e->generation);
  hide_grave_link(fs, e);
  e->attr.st_ino = fs.visible_ino(e->attr.st_dev, e->attr.st_ino);  // keys are done with it
  set_timeouts(fs, e);
  return 0;
}

bool is_mount_point(int dirfd, const char* name) {
  // openat2 (Linux 5.6) with RESOLVE_NO_XDEV refuses to step onto another mount (EXDEV)
  // before asking that filesystem anything.
#if defined(SYS_openat2) && defined(RESOLVE_NO_XDEV)
  static std::atomic<bool> no_openat2{false};
  if (!no_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_XDEV;
    sys::Fd fd(static_cast<int>(sys::ret(::syscall(SYS_openat2, dirfd, name, &how, sizeof how))));
    // EPERM: a seccomp filter that does not know openat2 (older container runtimes).
    if (fd.get() != -ENOSYS && fd.get() != -EPERM) return fd.get() == -EXDEV;
    no_openat2.store(true, std::memory_order_relaxed);
  }
#endif
  // Older kernels (RHEL 8's 4.18): an O_PATH open crosses onto the mount without a
  // getattr; compare the mount ids of the two descriptors. (NFS may still revalidate the
  // mount's root on the way: tests/fusefs/DIFFERENCES.md.)
  sys::Fd fd(sys::openat(dirfd, name, O_PATH | O_NOFOLLOW));
  if (!fd.valid()) return false;
  int id = fd_mount_id(fd.get());
  return id >= 0 && id != fd_mount_id(dirfd);
}

bool local_fs_type(long type) {
  switch (type) {
    // Not overlayfs: without xino its inode numbers can repeat across layers.
    case 0xEF53: case 0x58465342: case 0x9123683E: case 0x01021994: return true;
    default: return false;
  }
}

bool Fs::local_fs(const Inode& inode) const {
  if (inode.key.dev == source_dev) return stable_inums;  // local and not NFS (main.cc)
  struct statfs sfs;
  return ::fstatfs(inode.fd.get(), &sfs) == 0 && local_fs_type(sfs.f_type);
}

bool caller_has_cap(fuse_req_t req, unsigned cap) {
  char path[64], buf[4096];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(fuse_req_ctx(req)->pid));
  ssize_t n = sys::read_file(AT_FDCWD, path, buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* eff = std::strstr(buf, "\nCapEff:");
  return eff && cap < 64 && ((std::strtoull(eff + 9, nullptr, 16) >> cap) & 1);
}

int sticky_check(fuse_req_t req, int dirfd, const char* name, const struct stat* known) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == 0 || (known && known->st_uid == ctx->uid)) return 0;
  // The directory first: most are not sticky, and then the name needs no stat.
  struct stat dir, st;
  if (::fstat(dirfd, &dir) != 0) return -errno;
  if (!(dir.st_mode & S_ISVTX) || dir.st_uid == ctx->uid) return 0;
  if (!known) {
    if (sys::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;  // the call answers
    known = &st;
  }
  if (known->st_uid == ctx->uid) return 0;
  return caller_has_cap(req, 3 /* CAP_FOWNER */) ? 0 : -EPERM;
}

}  // namespace nfsshim::fuse
