#include "silly_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nfsshim/silly_name.h"

namespace nfsshim::tools {

namespace {

// Deeper trees are not walked: each level holds one descriptor.
constexpr int kMaxDepth = 128;

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
