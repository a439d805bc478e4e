// The graveyard: one hidden directory per filesystem where a file that was unlinked
// (or renamed over) while still referenced waits for its last reference to go.
//
//   <root>/.graveyard.nfsshim/          mode 1733: anyone may add, nobody may list
//   <root>/.graveyard.nfsshim/u<UID>/   mode 0700, owned by UID: one user's entries
//   <root>/.graveyard.nfsshim/u<UID>/<entry name>   see entry_name.h
//
// Moving a file into the graveyard is a rename on the same filesystem, so open fds and
// mappings keep working on the same data (and on NFS no silly rename happens: only
// the *target* of a rename and an unlinked busy name are silly-renamed). Everything
// is done relative to the descriptor of the user's subdirectory, opened with
// O_NOFOLLOW and checked for owner and mode, so a symlink or a directory planted by
// another user can never redirect a bury, a reap or a restore.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"

namespace nfsshim {

inline constexpr const char kDefaultGraveyardName[] = ".graveyard.nfsshim";

// True if NAME may be used as a graveyard directory name: one path component that the
// usual cleanup globs (".nfs*", ".fuse_hidden*") do not match.
bool valid_graveyard_name(const std::string& name, std::string* why);

enum class ReapAction {
  keep,    // owner alive, or too young to judge, or not ours to judge
  remove,  // owner gone
  adopt,   // owned by this very process (e.g. entries made before an exec)
};

struct ReapDecision {
  std::string name;
  ReapAction action = ReapAction::keep;
  std::string reason;
};

struct ReapStats {
  unsigned removed = 0;
  unsigned kept = 0;
  unsigned failed = 0;
};

// Decides what to do with one entry. AGE_S is how long ago it was buried (ctime).
ReapDecision classify_entry(const std::string& name, const Identity& self, int64_t age_s,
                            int64_t foreign_max_age_s, const char* proc = "/proc");

class Graveyard {
 public:
  // Opens PARENT_FD/NAME/u<UID>, creating missing levels when CREATE is set.
  // Returns 0 or -errno; on failure WHY says what was wrong.
  static int open(int parent_fd, const std::string& name, uid_t uid, bool create,
                  std::unique_ptr<Graveyard>* out, std::string* why);

  Graveyard(const Graveyard&) = delete;
  Graveyard& operator=(const Graveyard&) = delete;
  ~Graveyard();

  // Where to open it again if its descriptor is lost: the directory that holds NAME (an
  // absolute path). Call before the object is shared. Without it a lost descriptor fails
  // every operation with EBADF.
  void reopen_at(const std::string& parent_path) { parent_path_ = parent_path; }

  // The descriptor of the user's directory, or -EBADF. Checked on every use: a host may
  // close descriptors it does not know of (closefrom, close_range, a close loop from 3)
  // and reuse the number for a directory of its own; a bury through it would move the
  // application's file into the application's directory. A descriptor that is no longer
  // this directory (device and inode from open) is never used; the directory is opened
  // again (reopen_at), and must be the same one.
  int fd() const;
  dev_t dev() const { return dev_; }

  // Moves DIRFD/PATH here under a fresh name of KIND ('b' or 's'). 0 or -errno;
  // on failure nothing was moved.
  int bury(int dirfd, const char* path, char kind, std::string* entry);
  // Names of later burials go on past sequence number SEQ (a name up to it is taken:
  // our own from before an exec, which kept our pid and start time).
  void skip_seq_past(uint64_t seq);
  // Removes an entry (0, or -errno; -ENOENT if somebody else already did).
  int remove(const std::string& entry);
  // Moves an entry back to DIRFD/PATH without replacing anything there.
  int restore(const std::string& entry, int dirfd, const char* path);
  // An entry that could not be restored after a failed rename over it (the application
  // was told its file stayed): renamed to "k~ENTRY", which no reaper removes, so that
  // the owner's exit does not make it reapable. Returns where it is, for the log: the
  // new name, or ENTRY with the reason it may still be reaped.
  std::string keep(const std::string& entry);
  // A directory that took a name between the caller's stat and bury() was moved in with
  // it (no reaper can remove a directory entry): back to DIRFD/PATH, never over a name
  // taken meanwhile (restore). 0, or -errno with *KEPT saying where it stays (keep()).
  int put_back_directory(const std::string& entry, int dirfd, const char* path, std::string* kept);

  // Names of all entries (including ones the kernel silly-renamed in here).
  std::vector<std::string> list() const;
  // What reaping would do with every entry.
  std::vector<ReapDecision> plan(const Identity& self, int64_t foreign_max_age_s,
                                 time_t now) const;
  // Removes the entries that PLAN marked for removal.
  ReapStats execute(const std::vector<ReapDecision>& plan);

 private:
  Graveyard(int fd, dev_t dev, ino_t ino, const std::string& name, uid_t uid)
      : fd_(fd), dev_(dev), ino_(ino), name_(name), uid_(uid) {}
  bool is_this_dir(int fd) const;
  int reopen() const;
  // Replaced (never closed: the number is the host's now) when found to be lost.
  mutable std::atomic<int> fd_;
  const dev_t dev_;
  const ino_t ino_;
  const std::string name_;  // for reopen
  const uid_t uid_;
  std::string parent_path_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace nfsshim
