#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gc.h"
#include "nfsshim/stats_file.h"

namespace nfsshim::tools {

GcResult gc_stats(const std::string& dir, const GcOptions& opt) {
  GcResult r;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return r;  // nobody published here
  int dfd = ::dirfd(d);
  while (struct dirent* de = ::readdir(d)) {
    if (!is_stats_file_name(de->d_name)) continue;
    struct stat before;
    if (::fstatat(dfd, de->d_name, &before, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // Others' files in the sticky directory are theirs (or root's) to remove.
    if (::geteuid() != 0 && before.st_uid != ::geteuid()) continue;
    StatsSnapshot s;
    if (read_stats_file(dfd, de->d_name, &s) != -ESRCH) continue;
    std::string path = dir + "/" + de->d_name;
    std::string why = "stats file of process " + std::to_string(s.pid) + ", which is gone";
    // A new process with the same pid may have replaced the file since we read it.
    struct stat now;
    if (::fstatat(dfd, de->d_name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != before.st_ino) continue;
    if (opt.dry_run) {
      report("would remove", path, why);
      ++r.removed;
    } else if (::unlinkat(dfd, de->d_name, 0) == 0 || errno == ENOENT) {
      report("removed", path, why);
      ++r.removed;
    } else {
      report("failed", path, std::string("cannot remove: ") + std::strerror(errno));
      ++r.failed;
    }
  }
  ::closedir(d);
  return r;
}

}  // namespace nfsshim::tools
