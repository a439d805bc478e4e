// The mount table, from /proc/self/mountinfo: which filesystems are NFS, where a
// filesystem's root is mounted (the default place for its graveyard).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace nfsshim {

inline constexpr long kNfsSuperMagic = 0x6969;

struct Mount {
  int id = 0;
  dev_t dev = 0;
  std::string root;   // path inside the filesystem that is mounted here
  std::string point;  // mount point
  std::string fstype;
  std::string source;
  std::string options;        // per-mount options
  std::string super_options;  // per-superblock options (NFS: vers=, nconnect=, ...)
};

// Parses mountinfo text; malformed lines are skipped.
std::vector<Mount> parse_mountinfo(const std::string& text);
// Reads /proc/self/mountinfo (or PATH), however long. Empty on error, and then *OK (if
// given) is false: a caller keeping a table must not take that for "no mounts".
std::vector<Mount> read_mountinfo(const char* path = "/proc/self/mountinfo", bool* ok = nullptr);

bool is_nfs_fstype(const std::string& fstype);

// The mount id of the mount FD lives on (/proc/self/fdinfo "mnt_id:"), or -errno.
int fd_mount_id(int fd);

// Value of KEY in a comma-separated option string ("vers=4.1,rsize=..."), or "".
std::string mount_option(const std::string& options, const std::string& key);

}  // namespace nfsshim
