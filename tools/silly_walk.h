// Finding the Linux NFS client's silly-rename leftovers (".nfs" + 24 hex digits) in
// a tree. The walk never follows a symlink and never leaves the root's filesystem:
// every directory is opened relative to its parent's descriptor with O_NOFOLLOW, and
// every file is looked at (and removed) relative to its directory's descriptor.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <string>
#include <vector>

namespace nfsshim::tools {

// Called for every silly-renamed regular file: DIRFD/NAME is the entry, PATH its
// full path for messages, ST its lstat.
using SillyVisitor = std::function<void(int dirfd, const char* name, const std::string& path,
                                        const struct stat& st)>;

// Walks ROOT. Directories that cannot be opened are appended to UNREADABLE (with the
// reason). Returns 0, or -errno if ROOT itself cannot be opened.
int walk_silly(const std::string& root, const SillyVisitor& visit, std::vector<std::string>* unreadable);

}  // namespace nfsshim::tools
