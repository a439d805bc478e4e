#include "ops.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "nfsshim/log.h"
#include "nfsshim/metrics.h"
#include "nfsshim/silly_name.h"
#include "nfsshim/sys.h"
#include "registry.h"
#include "state.h"
#include "watch.h"

namespace nfsshim::preload {
namespace {

// A watched regular file at DIRFD/PATH (the name itself, not a symlink's target).
bool watched_file(int dirfd, const char* path, struct stat* st) {
  if (sys::fstatat(dirfd, path, st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISREG(st->st_mode)) return false;
  return Watcher::get().watched(dirfd, path, st->st_dev);
}

void fallback(const char* op, int err) {
  Counters::inc(counters().fallbacks);
  if (log::first_time(std::string("fallback:") + op + ":" + std::to_string(err)))
    SHIM_LOG_WARN("{}: cannot use the graveyard ({}); using the plain call", op, std::strerror(err));
}

// A directory that took the name between our stat and the bury went into the graveyard:
// back to its name (never over one taken meanwhile), else kept there as k~ and said so.
void put_back_directory(Graveyard* grave, const std::string& entry, int dirfd, const char* path) {
  std::string kept;
  if (int rv = grave->put_back_directory(entry, dirfd, path, &kept); rv < 0)
    SHIM_LOG_ERROR("a directory took '{}' as it was buried and cannot go back ({}): it stays as {}", path,
                   std::strerror(-rv), kept);
}

// GRAVE->bury, but a graveyard that is gone (an operator's rm -rf: its descriptor cannot
// be opened again, or the rename into it says ENOENT while the source is still there; on
// NFS, removed from another client, ESTALE) is made again, once. Updates GRAVE. Without
// this every later delete would run plain (a silly rename).
int bury_into(Graveyard** grave, int dirfd, const char* path, dev_t dev, std::string* entry) {
  int rv = (*grave)->bury(dirfd, path, 'b', entry);
  struct stat st;
  const bool dir_gone = rv == -EBADF || ((rv == -ENOENT || rv == -ESTALE) &&
                                         sys::fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0);
  if (!dir_gone) return rv;
  Graveyard* again = Watcher::get().graveyard_again(*grave, dirfd, path, dev);
  if (!again) return rv == -ENOENT ? -ESTALE : rv;  // not "the source is gone": logged
  *grave = again;
  rv = again->bury(dirfd, path, 'b', entry);
  // Still ENOENT with the source there: not the plain call's answer; fall back, logged.
  if (rv == -ENOENT && sys::fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) return -ESTALE;
  return rv;
}

// Runs F, the bookkeeping after the file went into the graveyard, and returns 0: the call
// has happened. An allocation failing there (bad_alloc) must not send the plain call after
// it, which would say ENOENT; untracked, the entry stays until a reaper finds us gone.
template <typename F>
int after_bury(F f) noexcept {
  try {
    f();
  } catch (...) {
  }
  return 0;
}

// Buries DIRFD/PATH (expected to be inode KEY). In mode=referenced only if this
// process references it. Returns 0 if buried, kPass if the plain call should run.
int bury(int dirfd, const char* path, const struct stat& st, const char* op) {
  InodeKey key{st.st_dev, st.st_ino};
  Refs refs;
  bool scanned = false;
  if (config().mode == BuryMode::referenced) {
    refs = scan_refs({key}, -1, true)[0];
    Counters::inc(counters().scans);
    scanned = true;
    if (!refs.any()) {
      // Not ours to protect; still visit the graveyard once for crash recovery.
      Watcher::get().graveyard_for(dirfd, path, st.st_dev, false);
      return kPass;
    }
  }
  Graveyard* grave = Watcher::get().graveyard_for(dirfd, path, st.st_dev, true);
  if (!grave) {
    fallback(op, EACCES);
    return kPass;
  }
  std::string entry;
  int rv = bury_into(&grave, dirfd, path, st.st_dev, &entry);
  if (rv < 0) {
    // ENOENT, EACCES, EPERM, EROFS...: the plain call will say the same (or succeed
    // where our rename could not, e.g. across a bind mount).
    if (rv != -ENOENT) fallback(op, -rv);
    return kPass;
  }
  Counters::inc(counters().buried);
  // Another thread may have swapped the name between our stat and the rename: what we
  // moved is what unlink would have removed; track the inode we actually hold.
  struct stat now;
  if (sys::fstatat(grave->fd(), entry.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
      (now.st_dev != key.dev || now.st_ino != key.ino)) {
    if (S_ISDIR(now.st_mode)) {
      // A directory took the name in that window: unlink would have said EISDIR.
      put_back_directory(grave, entry, dirfd, path);
      return -EISDIR;
    }
    key = {now.st_dev, now.st_ino};
    scanned = false;
  }
  return after_bury([&] {
    if (!scanned) {  // mode=all, or the inode changed under us
      // Descriptors are enough to know it is held: the mappings are read at the next
      // recount (a close of one of these fds), before anything could be removed.
      refs = scan_refs({key}, -1, true)[0];
      Counters::inc(counters().scans);
    }
    Registry::get().add(key, grave, entry, refs);
  });
}

}  // namespace

int bury_unlink(int dirfd, const char* path) {
  struct stat st;
  if (!watched_file(dirfd, path, &st)) return kPass;
  return bury(dirfd, path, st, "unlink");
}

int bury_rename(int olddir, const char* oldpath, int newdir, const char* newpath) {
  struct stat target, source;
  if (!watched_file(newdir, newpath, &target)) return kPass;
  // A rename the kernel would refuse or treat as a no-op must stay exactly that.
  if (sys::fstatat(olddir, oldpath, &source, AT_SYMLINK_NOFOLLOW) != 0) return kPass;
  if (S_ISDIR(source.st_mode)) return kPass;
  if (source.st_dev == target.st_dev && source.st_ino == target.st_ino) return kPass;
  if (source.st_dev != target.st_dev) return kPass;  // EXDEV
  // Only a target this process holds goes through the graveyard, in both modes: the plain
  // rename is atomic (a checkpoint written to .tmp and renamed over its name is never
  // missing, not even after a crash), ours is two renames. The kernel's silly rename of a
  // held target is two renames as well. A target only other processes hold is silly-renamed
  // by the kernel, as without the shim, until they close it.
  Registry& reg = Registry::get();
  InodeKey key{target.st_dev, target.st_ino};
  Refs refs = scan_refs({key}, -1, true)[0];
  Counters::inc(counters().scans);
  if (!refs.any()) return kPass;
  // Find the graveyard entry name by burying; the target name is absent until the
  // rename below puts the new file there.
  Graveyard* grave = Watcher::get().graveyard_for(newdir, newpath, target.st_dev, true);
  if (!grave) {
    fallback("rename", EACCES);
    return kPass;
  }
  std::string entry;
  int rv = bury_into(&grave, newdir, newpath, target.st_dev, &entry);
  if (rv < 0) {
    if (rv != -ENOENT) fallback("rename", -rv);
    return kPass;
  }
  struct stat moved;
  if (sys::fstatat(grave->fd(), entry.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(moved.st_mode)) {
    // A directory took the target name after our stat: put it back; the plain rename
    // then gives the kernel's answer for a directory target.
    put_back_directory(grave, entry, newdir, newpath);
    return kPass;
  }
  rv = sys::renameat(olddir, oldpath, newdir, newpath);
  if (rv < 0) {
    int rr = grave->restore(entry, newdir, newpath);
    if (rr == -EEXIST) {
      // A new file took the old target's name meanwhile: keep the old one in the
      // graveyard as if it had been renamed over, which is what happened. The answer is
      // the rename's failure whatever happens here (no plain rename over the new file).
      after_bury([&] {
        SHIM_LOG_WARN("rename failed ({}) and '{}' was created meanwhile: the old file stays buried",
                      std::strerror(-rv), newpath);
        reg.add(key, grave, entry, scan_refs({key})[0]);
      });
    } else if (rr < 0) {
      // Never remove a file the application did not delete: leave it there under a name
      // no reaper takes (as b~ it was reaped once this process was gone).
      SHIM_LOG_ERROR("rename failed ({}) and '{}' could not be put back ({}): it is in the graveyard as {}",
                     std::strerror(-rv), newpath, std::strerror(-rr), grave->keep(entry));
    }
    return rv;
  }
  Counters::inc(counters().buried);
  return after_bury([&] {
    // The references read above are the buried file's, unless another file took the name
    // between our stat and the bury: then that one's.
    struct stat now;
    if (sys::fstatat(grave->fd(), entry.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        (now.st_dev != key.dev || now.st_ino != key.ino)) {
      key = {now.st_dev, now.st_ino};
      refs = scan_refs({key}, -1, true)[0];
      Counters::inc(counters().scans);
    }
    reg.add(key, grave, entry, refs);
  });
}

int sweep_rmdir(int dirfd, const char* path) {
  if (!config().sweep_silly) return kPass;
  struct stat st;
  if (sys::fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return kPass;
  if (!Watcher::get().watched(dirfd, path, st.st_dev)) return kPass;
  sys::Fd dir(sys::openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (!dir.valid()) return kPass;

  // Only a directory that holds nothing but silly-rename leftovers qualifies.
  std::vector<std::string> names;
  bool only_silly = true;
  int rv = sys::for_each_name(dir.get(), [&](const char* nm) {
    only_silly = (is_nfs_silly_name(nm) || is_fuse_hidden_name(nm)) && names.size() < 4096;
    if (only_silly) names.emplace_back(nm);
    return only_silly;
  });
  if (rv < 0 || !only_silly) return kPass;
  if (names.empty()) return kPass;
  Graveyard* grave = Watcher::get().graveyard_for(dirfd, path, st.st_dev, true);
  if (!grave) return kPass;

  std::vector<std::pair<std::string, std::string>> moved;  // (original, entry)
  for (const auto& nm : names) {
    struct stat fst;
    if (sys::fstatat(dir.get(), nm.c_str(), &fst, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(fst.st_mode)) break;
    std::string entry;
    // EBUSY: a process on this client still holds it; the kernel will not let it move.
    if (grave->bury(dir.get(), nm.c_str(), 's', &entry) != 0) break;
    moved.emplace_back(nm, entry);
  }
  if (moved.size() == names.size() && sys::unlinkat(dirfd, path, AT_REMOVEDIR) == 0) {
    Counters::inc(counters().swept, moved.size());
    SHIM_LOG_INFO("rmdir '{}': moved {} silly-rename leftovers into the graveyard", path, moved.size());
    return 0;
  }
  for (const auto& m : moved) grave->restore(m.second, dir.get(), m.first.c_str());
  return kPass;
}

}  // namespace nfsshim::preload
