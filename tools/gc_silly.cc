#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "gc.h"
#include "holders.h"
#include "silly_walk.h"

namespace nfsshim::tools {

static int64_t age_of(const struct stat& st, time_t now) {
  // The later of mtime and ctime: a silly rename sets ctime, writes set mtime.
  time_t t = std::max(st.st_mtime, st.st_ctime);
  return static_cast<int64_t>(now) - static_cast<int64_t>(t);
}

GcResult gc_silly(const std::string& path, const GcOptions& opt) {
  GcResult r;
  std::vector<std::string> unreadable;
  // Pass 1: the old enough candidates, by inode and path.
  std::vector<InodeKey> keys;
  std::vector<std::string> paths;
  int rv = walk_silly(
      path,
      [&](int, const char*, const std::string& p, const struct stat& st) {
        int64_t age = age_of(st, opt.now);
        if (age < opt.max_age_s) {
          report("kept", p, "silly-renamed " + std::to_string(age) + " s ago, younger than --max-age");
          ++r.kept;
        } else {
          keys.push_back({st.st_dev, st.st_ino});
          paths.push_back(p);
        }
      },
      &unreadable);
  if (rv < 0) {
    report("failed", path, std::string("cannot open: ") + std::strerror(-rv));
    ++r.failed;
    return r;
  }
  for (const auto& u : unreadable) {
    report("kept", u, "directory not searched");
    ++r.kept;
  }
  if (keys.empty()) return r;

  // One pass over every process's descriptors and mappings for all candidates.
  HolderScan holders = scan_holders(keys, opt.proc.c_str());

  // Pass 2: act on the same inodes under the same names, found again relative to their
  // directories, and still old: a file silly-renamed since pass 1 is young again, even if
  // it got the inode number of one that went meanwhile.
  unreadable.clear();
  walk_silly(
      path,
      [&](int dirfd, const char* name, const std::string& p, const struct stat& st) {
        size_t i = 0;
        while (i < keys.size() && !(keys[i] == InodeKey{st.st_dev, st.st_ino} && paths[i] == p)) ++i;
        if (i == keys.size()) return;  // young, or new since pass 1
        const int64_t age = age_of(st, opt.now);
        pid_t holder = holders.holder[i];
        std::string why = "silly-renamed " + std::to_string(age) + " s ago";
        if (age < opt.max_age_s) {
          report("kept", p, why + ", changed since the scan began, younger than --max-age");
          ++r.kept;
        } else if (holder) {
          report("kept", p, "held by process " + std::to_string(holder));
          ++r.kept;
        } else if (!holders.complete) {
          report("kept", p, "cannot tell whether it is held: " + holders.incomplete_why);
          ++r.kept;
        } else if (opt.dry_run) {
          report("would remove", p, why + ", held by no process on this host");
          ++r.removed;
        } else if (::unlinkat(dirfd, name, 0) == 0) {
          report("removed", p, why + ", held by no process on this host");
          ++r.removed;
        } else {
          // EBUSY: the NFS client says this host still holds it after all.
          report("failed", p, std::string("cannot remove: ") + std::strerror(errno));
          ++r.failed;
        }
      },
      &unreadable);
  return r;
}

}  // namespace nfsshim::tools
