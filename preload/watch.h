// Which filesystems are watched and where each one's graveyard is.
//   - an NFS mount (statfs magic NFS_SUPER_MAGIC): graveyard at its mount point, or
//     where the config's `graveyard = MOUNT=DIR` says;
//   - a configured `watch` directory: graveyard inside that directory.
// The first watched call on a filesystem also reaps its graveyard (crash recovery).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nfsshim/graveyard.h"
#include "nfsshim/mount_table.h"

namespace nfsshim::preload {

class Watcher {
 public:
  static Watcher& get();

  // Is the file DIRFD/PATH, which lives on DEV, watched? NFS mounts are watched
  // whole; a configured directory covers the files below it (just a dev check when
  // the directory is the root of its filesystem, else a look at the parent's path).
  bool watched(int dirfd, const char* path, dev_t dev);
  // True if any filesystem is watched right now (refreshes the mount table when stale).
  bool any() noexcept;

  // The graveyard for a file at DIRFD/PATH on DEV. CREATE makes it if missing. Returns
  // null and logs once per mount if it cannot be used; the caller then falls back to
  // the plain call.
  Graveyard* graveyard_for(int dirfd, const char* path, dev_t dev, bool create);
  // LOST (from graveyard_for for DIRFD/PATH on DEV) cannot be reached any more: its
  // directory was removed (an operator's rm -rf) or replaced. Opens, or makes, the
  // graveyard again; null if that fails (logged once).
  Graveyard* graveyard_again(Graveyard* lost, int dirfd, const char* path, dev_t dev);

  void lock() { mu_0.lock(); }
  void unlock() { mu_0.unlock(); }
  void after_fork_child();

 private:
  struct Site {
    std::string root;  // mount point or watched directory
    std::string grave_parent, grave_name;
    dev_t dev = 0;
    std::unique_ptr<Graveyard> grave;
    // Replaced by graveyard_again; kept: the registry's entries point to them.
    std::vector<std::unique_ptr<Graveyard>> lost;
    bool configured = false;  // a `watch` directory rather than an NFS mount
    bool visited = false;     // reaped (or found absent) once in this process
  };
  void refresh_locked(bool force);
  Site* site_for_locked(int dirfd, const char* path, dev_t dev);
  void visit_locked(Site* s, bool create);

  std::mutex mu_0;
  std::vector<Mount> mounts_;
  struct WatchDir {
    dev_t dev = 0;
    std::string path;    // canonical
    bool whole = false;  // the root of its filesystem: no path check needed
  };
  const WatchDir* watch_dir_locked(int dirfd, const char* path, dev_t dev);
  std::vector<WatchDir> watch_dirs_;
  std::vector<std::unique_ptr<Site>> sites_;
  std::vector<std::pair<dev_t, int>> dev_cache_;  // 0 no, 1 NFS, 2 watch dirs
  std::atomic<long> refreshed_at_{-1000};  // coarse monotonic seconds
  std::atomic<bool> any_{false};
};

}  // namespace nfsshim::preload
