#include "silly_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfsshim::tools {

bool is_silly_name(const char* name) {
  // fs/nfs/dir.c: ".nfs" + 16 hex digits of the file id + 8 of a counter.
  if (std::strncmp(name, ".nfs", 4) != 0 || std::strlen(name) != 28) return false;
  for (const char* p = name + 4; *p; ++p)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) return false;
  return true;
}

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
    if (S_ISREG(st.st_mode) && is_silly_name(name)) {
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
