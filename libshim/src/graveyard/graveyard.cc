#include "nfsshim/graveyard.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "nfsshim/sys.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)  // glibc < 2.28 headers
#endif

namespace nfsshim {

bool valid_graveyard_name(const std::string& name, std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (name.empty() || name == "." || name == "..") return fail("must be a file name");
  if (name.find('/') != std::string::npos) return fail("must be one path component, without '/'");
  if (name.size() > 200) return fail("must be at most 200 bytes");
  if (name.rfind(".nfs", 0) == 0) return fail("must not start with '.nfs' (silly-rename cleanup globs)");
  if (name.rfind(".fuse_hidden", 0) == 0) return fail("must not start with '.fuse_hidden'");
  return true;
}

// Opens (and with CREATE makes) the directory PARENT/NAME; never follows a symlink.
static int open_dir(int parent, const char* name, mode_t create_mode, bool create, bool* created) {
  *created = false;
  if (create) {
    int rv = sys::mkdirat(parent, name, create_mode);
    if (rv == 0) *created = true;
    else if (rv != -EEXIST) return rv;
  }
  int fd = sys::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  // The shared level is 1733: other users may enter it but not list it. A path descriptor
  // is all they need to reach their own u<uid> below.
  if (fd == -EACCES && !*created) fd = sys::openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  return fd;
}

int Graveyard::open(int parent_fd, const std::string& name, uid_t uid, bool create,
                    std::unique_ptr<Graveyard>* out, std::string* why) {
  if (!valid_graveyard_name(name, why)) return -EINVAL;
  bool created = false;
  sys::Fd top(open_dir(parent_fd, name.c_str(), 01733, create, &created));
  if (!top.valid()) {
    if (why) *why = std::string("cannot open graveyard directory '") + name + "': " + std::strerror(-top.get());
    return top.get();
  }
  // mkdir honours the umask; the shared level must be exactly 1733.
  if (created) sys::fchmod(top.get(), 01733);

  std::string sub = "u" + std::to_string(uid);
  sys::Fd user(open_dir(top.get(), sub.c_str(), 0700, create, &created));
  if (!user.valid()) {
    if (why) *why = "cannot open '" + name + "/" + sub + "': " + std::strerror(-user.get());
    return user.get();
  }
  if (created) sys::fchmod(user.get(), 0700);
  struct stat st;
  int rv = sys::fstat(user.get(), &st);
  if (rv < 0) return rv;
  if (st.st_uid != uid || (st.st_mode & 077) != 0) {
    if (why)
      *why = "'" + name + "/" + sub + "' is owned by uid " + std::to_string(st.st_uid) +
             " with mode " + std::to_string(st.st_mode & 07777) +
             " (octal digits in decimal); expected owner " + std::to_string(uid) +
             " and no group/other access";
    return -EPERM;
  }
  out->reset(new Graveyard(user.release(), st.st_dev, st.st_ino, name, uid));
  return 0;
}

// Only a descriptor that still is our directory is ours to close.
Graveyard::~Graveyard() {
  int fd = fd_.load(std::memory_order_acquire);
  if (is_this_dir(fd)) sys::close(fd);
}

// fd_inode asks the filesystem nothing (no NFS round trip): cheap enough for every use.
// A removed directory (nlink 0: an operator's rm -rf) is ours no more: a rename into it
// fails with ENOENT.
bool Graveyard::is_this_dir(int fd) const {
  dev_t dev;
  ino_t ino;
  nlink_t nlink;
  return fd >= 0 && sys::fd_inode(fd, &dev, &ino, &nlink) == 0 && dev == dev_ && ino == ino_ &&
         nlink != 0;
}

// A new descriptor of this very directory, opened by path, or -errno.
int Graveyard::reopen() const {
  if (parent_path_.empty()) return -EBADF;
  sys::Fd parent(sys::openat(AT_FDCWD, parent_path_.c_str(), O_RDONLY | O_DIRECTORY));
  if (!parent.valid()) return parent.get();
  std::unique_ptr<Graveyard> again;
  int rv = open(parent.get(), name_, uid_, false, &again, nullptr);  // same owner/mode checks
  if (rv < 0) return rv;
  // Another directory under the name now (removed and made again): our entries are not
  // in it. Its descriptor is closed with it.
  if (again->dev_ != dev_ || again->ino_ != ino_) return -ESTALE;
  return again->fd_.exchange(-1);
}

int Graveyard::fd() const {
  int fd = fd_.load(std::memory_order_acquire);
  if (is_this_dir(fd)) return fd;
  int fresh = reopen();
  if (fresh < 0) return -EBADF;
  if (fd_.compare_exchange_strong(fd, fresh, std::memory_order_acq_rel)) return fresh;
  // Another thread reopened it first: use its descriptor (now in FD).
  sys::close(fresh);
  return is_this_dir(fd) ? fd : -EBADF;
}

int Graveyard::bury(int dirfd, const char* path, char kind, std::string* entry) {
  EntryName e;
  e.kind = kind;
  e.owner = self_identity();
  // Without our start time the entry would look like a dead process's to every reaper.
  if (e.owner.start == 0) return -EAGAIN;
  // A name can only collide with an entry of a dead process whose pid and start time
  // we reuse, which cannot happen on one boot; still, never replace anything.
  const int dir = fd();
  if (dir < 0) return dir;
  for (int attempt = 0; attempt < 4; ++attempt) {
    e.seq = seq_.fetch_add(1, std::memory_order_relaxed);
    std::string name = e.format();
    struct stat st;
    if (sys::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    int rv = sys::renameat(dirfd, path, dir, name.c_str());
    if (rv == 0) *entry = std::move(name);
    return rv;
  }
  return -EEXIST;
}

void Graveyard::skip_seq_past(uint64_t seq) {
  if (seq == UINT64_MAX) return;
  uint64_t cur = seq_.load(std::memory_order_relaxed);
  while (cur <= seq && !seq_.compare_exchange_weak(cur, seq + 1, std::memory_order_relaxed)) {
  }
}

int Graveyard::remove(const std::string& entry) {
  const int dir = fd();
  return dir < 0 ? dir : sys::unlinkat(dir, entry.c_str(), 0);
}

std::string Graveyard::keep(const std::string& entry) {
  std::string name = "k~" + entry;
  const int dir = fd();
  int rv = dir < 0 ? dir : sys::renameat(dir, entry.c_str(), dir, name.c_str());
  if (rv == 0) return "'" + name + "'";
  return "'" + entry + "' (and may be reaped: renaming it failed too: " + std::strerror(-rv) + ")";
}

int Graveyard::put_back_directory(const std::string& entry, int dirfd, const char* path,
                                  std::string* kept) {
  int rv = restore(entry, dirfd, path);
  if (rv < 0) *kept = keep(entry);
  return rv;
}

int Graveyard::restore(const std::string& entry, int dirfd, const char* path) {
  // link + unlink instead of rename: link fails with EEXIST rather than replace a file
  // created meanwhile under the old name (renameat2's NOREPLACE is not on NFS).
  const int dir = fd();
  if (dir < 0) return dir;
  int rv = sys::linkat(dir, entry.c_str(), dirfd, path, 0);
  if (rv == 0) {
    sys::unlinkat(dir, entry.c_str(), 0);
    return 0;
  }
  if (rv == -EEXIST) return rv;
  // No link (fs.protected_hardlinks and a file the caller does not own, a filesystem
  // without hard links): the file must still go back, so rename it, never over a name
  // taken meanwhile: NOREPLACE where the filesystem has it, else only if the name is free
  // (a file created in the instant between the check and the rename would be replaced).
  rv = sys::renameat2(dir, entry.c_str(), dirfd, path, RENAME_NOREPLACE);
  if (rv != -EINVAL && rv != -ENOSYS) return rv;
  struct stat st;
  if (sys::fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) return -EEXIST;
  return sys::renameat(dir, entry.c_str(), dirfd, path);
}

std::vector<std::string> Graveyard::list() const {
  std::vector<std::string> names;
  // A fresh descriptor: getdents on ours would move a shared file offset.
  const int dir = fd();
  if (dir < 0) return names;
  sys::Fd d(sys::openat(dir, ".", O_RDONLY | O_DIRECTORY));
  if (!d.valid()) return names;
  sys::for_each_name(d.get(), [&](const char* name) {
    names.emplace_back(name);
    return true;
  });
  return names;
}

ReapDecision classify_entry(const std::string& name, const Identity& self, int64_t age_s,
                            int64_t foreign_max_age_s, const char* proc) {
  ReapDecision d;
  d.name = name;
  auto e = EntryName::parse(name);
  if (!e) {
    // The kernel silly-renames in here when another process still held a file we
    // removed; it deletes that name itself at the holder's last close.
    d.reason = name.rfind(".nfs", 0) == 0 || name.rfind(".fuse_hidden", 0) == 0
                   ? "held by another process (kernel silly-rename)"
               : name.rfind("k~", 0) == 0
                   ? "the target of a failed rename that could not be put back (see the log)"
                   : "not an nfsshim entry";
    return d;
  }
  bool foreign_age = age_s >= foreign_max_age_s;
  if (e->kind == 's') {
    d.action = foreign_age ? ReapAction::remove : ReapAction::keep;
    d.reason = foreign_age ? "swept silly-rename leftover older than the foreign age"
                           : "swept silly-rename leftover, younger than the foreign age";
    return d;
  }
  if (!e->owner.same_boot(self)) {
    d.action = foreign_age ? ReapAction::remove : ReapAction::keep;
    d.reason = foreign_age ? "owner on another host or boot, older than the foreign age"
                           : "owner on another host or boot, younger than the foreign age";
    return d;
  }
  if (!e->owner.same_pids(self)) {
    d.action = foreign_age ? ReapAction::remove : ReapAction::keep;
    d.reason = foreign_age ? "owner in another pid namespace, older than the foreign age"
                           : "owner in another pid namespace, younger than the foreign age";
    return d;
  }
  if (e->owner.pid == self.pid && e->owner.start == self.start) {
    d.action = ReapAction::adopt;
    d.reason = "owned by this process";
    return d;
  }
  if (process_alive(e->owner.pid, e->owner.start, proc)) {
    d.reason = "owner process " + std::to_string(e->owner.pid) + " is alive";
    return d;
  }
  d.action = ReapAction::remove;
  d.reason = "owner process " + std::to_string(e->owner.pid) + " is gone";
  return d;
}

std::vector<ReapDecision> Graveyard::plan(const Identity& self, int64_t foreign_max_age_s,
                                          time_t now) const {
  std::vector<ReapDecision> out;
  const int dir = fd();
  if (dir < 0) return out;
  for (const auto& name : list()) {
    struct stat st;
    int64_t age = 0;
    if (sys::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      age = static_cast<int64_t>(now) - static_cast<int64_t>(st.st_ctime);
    else
      continue;  // gone meanwhile
    out.push_back(classify_entry(name, self, age, foreign_max_age_s));
  }
  return out;
}

ReapStats Graveyard::execute(const std::vector<ReapDecision>& plan) {
  ReapStats s;
  for (const auto& d : plan) {
    if (d.action != ReapAction::remove) {
      ++s.kept;
      continue;
    }
    int rv = remove(d.name);
    if (rv == 0 || rv == -ENOENT) ++s.removed;
    else ++s.failed;
  }
  return s;
}

}  // namespace nfsshim
