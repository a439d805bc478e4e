#include "silly_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nfsshim/silly_name.h"

namespace nfsshim::tools {

namespace {

// Deeper trees are not walked: each level holds one descriptor.
constexpr int kMaxDepth = 128;

// Whether DIRFD/NAME is on device DEV and not a mount point, asked without a round trip
// to the filesystem (AT_STATX_DONT_SYNC): a plain stat of a mount point inside the tree
// goes to that mount's server or daemon, and a stopped FUSE daemon or a dead NFS server
// there hung the walk. True where statx cannot tell (the syncing stat then decides).
bool same_mount(int dirfd, const char* name, dev_t dev) {
#if defined(SYS_statx) && defined(AT_STATX_DONT_SYNC)
  struct statx sx;
  if (::syscall(SYS_statx, dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
                STATX_TYPE | STATX_INO, &sx) != 0)
    return errno != ENOENT;  // gone meanwhile: false; ENOSYS, EPERM (seccomp): cannot tell
  if (makedev(sx.stx_dev_major, sx.stx_dev_minor) != dev) return false;
#ifdef STATX_ATTR_MOUNT_ROOT  // Linux 5.8
  if ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
    return false;  // a bind mount of this filesystem: walked where it is mounted from
#endif
#else
  (void)dirfd, (void)name, (void)dev;
#endif
  return true;
}

void walk(int dirfd, const std::string& path, dev_t dev, int depth, const SillyVisitor& visit,
          std::vector<std::string>* unreadable) {
  DIR* d = ::fdopendir(dirfd);
  if (!d) {
    unreadable->push_back(path + ": " + std::strerror(errno));
    ::close(dirfd);
    return;
  }
  while (struct dirent* de = ::readdir(d)) {
    const char* name = de->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (!same_mount(dirfd, name, dev)) continue;
    struct stat st;
    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    std::string child = path + "/" + name;
    if (S_ISREG(st.st_mode) && is_nfs_silly_name(name)) {
      visit(dirfd, name, child, st);
    } else if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
      if (depth >= kMaxDepth) {
        unreadable->push_back(child + ": deeper than " + std::to_string(kMaxDepth) + " levels");
        continue;
      }
      int sub = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct stat now;
      if (sub < 0) {
        unreadable->push_back(child + ": " + std::strerror(errno));
        continue;
      }
      // Swapped for another directory (e.g. a mount point) between lstat and open?
      if (::fstat(sub, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        ::close(sub);
        continue;
      }
      walk(sub, child, dev, depth + 1, visit, unreadable);
    }
  }
  ::closedir(d);
}

}  // namespace

int walk_silly(const std::string& root, const SillyVisitor& visit, std::vector<std::string>* unreadable) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  std::string path = root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root;
  walk(fd, path, st.st_dev, 0, visit, unreadable);
  return 0;
}

}  // namespace nfsshim::tools
