// Delete-on-last-close: a name removed while its file is open moves into the graveyard of
// the backing filesystem; the entry goes when the kernel releases the last open file
// (after the last close and the last munmap).
#include <cstring>

#include "fs.h"
#include "nfsshim/log.h"
#include "nfsshim/metrics.h"

namespace nfsshim::fuse {

// Removes INODE's graveyard entry if nothing holds it open. Called with inode.mu held;
// the entry name is moved out so that only one caller removes it.
static std::string take_unused_entry(Inode& inode) {
  if (inode.nopen > 0 || inode.grave_entry.empty()) return {};
  return std::move(inode.grave_entry);
}

static void remove_entry(Fs& fs, const Inode& inode, const std::string& entry) {
  if (entry.empty()) return;
  int rv = fs.graveyard->remove(entry);
  if (rv < 0 && rv != -ENOENT) {
    Counters::inc(counters().errors);
    SHIM_LOG_WARN("[ino {}] cannot remove graveyard entry {}: {}", inode.key.ino, entry,
                  std::strerror(-rv));
    return;
  }
  Counters::inc(counters().removed_last_ref);
  SHIM_LOG_DEBUG("[ino {}] removed graveyard entry {}", inode.key.ino, entry);
}

void open_ref(Inode& inode) {
  std::lock_guard<std::mutex> lock(inode.mu);
  ++inode.nopen;
}

void release_ref(Fs& fs, Inode& inode) {
  std::string entry;
  {
    std::lock_guard<std::mutex> lock(inode.mu);
    if (inode.nopen == 0) {
      SHIM_LOG_ERROR("[ino {}] release without open", inode.key.ino);
      return;
    }
    --inode.nopen;
    entry = take_unused_entry(inode);
  }
  remove_entry(fs, inode, entry);
}

// True if the bury moved a directory: one took NAME between the caller's stat and the
// rename (another NFS client, a program on SOURCE). The plain unlink or rename would have
// failed (EISDIR) and left it; in the graveyard no reaper could remove it and its tree
// would be gone from every view. It goes back, or if its name was taken meanwhile, stays
// as k~ (never reaped) with an error logged.
static bool moved_a_directory(Fs& fs, const Inode& inode, const std::string& entry, int dirfd,
                              const char* name) {
  struct stat st;
  const int dir = fs.graveyard->fd();
  if (dir < 0 || sys::fstatat(dir, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
    return false;
  std::string kept;
  if (int rv = fs.graveyard->put_back_directory(entry, dirfd, name, &kept); rv < 0)
    SHIM_LOG_ERROR("[ino {}] a directory took '{}' as it was buried and cannot go back ({}): it stays as {}",
                   inode.key.ino, name, std::strerror(-rv), kept);
  return true;
}

int bury(Fs& fs, Inode& inode, int dirfd, const char* name, bool pin) {
  std::lock_guard<std::mutex> lock(inode.mu);
  return bury_locked(fs, inode, dirfd, name, pin);
}

int bury_locked(Fs& fs, Inode& inode, int dirfd, const char* name, bool pin) {
  if (!fs.graveyard || inode.type != S_IFREG) return 0;
  // Nothing open: a plain unlink, unless something we cannot count may hold the file and
  // SOURCE would then hide it beside its name (.nfs*, .fuse_hidden*): on NFS our own O_PATH
  // descriptor (fs.h); on NFS or FUSE (not a local filesystem) a passthrough mapping
  // (inode_table.h). Buried, it goes at once (settle), and any such rename happens in the
  // graveyard. A local filesystem keeps an unlinked file for its mapping unseen.
  const bool unseen_holder = fs.backing_nfs || (inode.passthrough_seen && !fs.local_fs(inode));
  if (inode.nopen == 0 && !unseen_holder) return 0;
  if (inode.key.dev != fs.graveyard->dev()) {
    if (log::first_time("fuse:bury-xdev"))
      SHIM_LOG_WARN("[ino {}] file is on another filesystem than the graveyard: plain unlink",
                    inode.key.ino);
    Counters::inc(counters().fallbacks);
    return 0;
  }
  // Already buried through another hard link: this name is just one more link. Where
  // SOURCE hides a held file beside its name, the name our O_PATH descriptor holds (the
  // first one looked up, maybe this one) would be silly-renamed in the user's directory:
  // it goes into the graveyard instead and is removed there at once (any such rename then
  // happens in the graveyard, and ends when the holder lets go).
  const bool another_link = !inode.grave_entry.empty();
  if (another_link && !unseen_holder) return 0;
  std::string entry;
  int rv = fs.graveyard->bury(dirfd, name, 'b', &entry);
  if (rv == 0 && moved_a_directory(fs, inode, entry, dirfd, name)) return -EISDIR;
  if (rv == 0 && another_link) {
    remove_entry(fs, inode, entry);
    if (pin) ++inode.nopen;
    return 1;
  }
  if (rv < 0) {
    if (rv == -ENOENT) return rv;
    if (log::first_time("fuse:bury:" + std::to_string(-rv)))
      SHIM_LOG_WARN("[ino {}] cannot move '{}' into the graveyard ({}): plain unlink",
                    inode.key.ino, name, std::strerror(-rv));
    Counters::inc(counters().fallbacks);
    return 0;
  }
  Counters::inc(counters().buried);
  SHIM_LOG_DEBUG("[ino {}] buried '{}' as {} ({} open)", inode.key.ino, name, entry, inode.nopen);
  inode.grave_entry = std::move(entry);
  if (pin) ++inode.nopen;
  return 1;
}

int unbury(Fs& fs, Inode& inode, int dirfd, const char* name) {
  std::lock_guard<std::mutex> lock(inode.mu);
  if (inode.grave_entry.empty()) return 0;
  int rv = fs.graveyard->restore(inode.grave_entry, dirfd, name);
  if (rv == -EEXIST) {
    // A new file took the name meanwhile: the old one stays buried, as if replaced.
    SHIM_LOG_WARN("[ino {}] cannot put '{}' back from the graveyard: it was created meanwhile",
                  inode.key.ino, name);
    return rv;
  }
  if (rv < 0) {
    // Never remove a file the application did not delete: leave it there under a name
    // no reaper takes (as b~ it was reaped at the daemon's next start).
    SHIM_LOG_ERROR("[ino {}] cannot put '{}' back from the graveyard ({}): it stays there as {}",
                   inode.key.ino, name, std::strerror(-rv), fs.graveyard->keep(inode.grave_entry));
    inode.grave_entry.clear();
    return rv;
  }
  inode.grave_entry.clear();
  return 0;
}

void settle(Fs& fs, Inode& inode) {
  std::string entry;
  {
    std::lock_guard<std::mutex> lock(inode.mu);
    entry = take_unused_entry(inode);
  }
  remove_entry(fs, inode, entry);
}

void drop_all_buried(Fs& fs) {
  if (!fs.graveyard) return;
  for (const auto& inode : fs.inodes->all()) {
    std::string entry;
    {
      std::lock_guard<std::mutex> lock(inode->mu);
      entry = std::move(inode->grave_entry);
      inode->grave_entry.clear();
    }
    remove_entry(fs, *inode, entry);
  }
}

}  // namespace nfsshim::fuse
