// doctor: the filesystem of PATH, its NFS options, and where the graveyard would be.
#include <limits.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doctor.h"

namespace nfsshim::tools {

const char* fs_magic_name(long magic) {
  switch (static_cast<unsigned long>(magic) & 0xffffffffUL) {
    case 0x6969: return "nfs";
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x01021994: return "tmpfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlay";
    case 0x65735546: return "fuse";
    case 0x2FC12FC1: return "zfs";
    case 0x00C36400: return "ceph";
    case 0xFF534D42: return "cifs";
    case 0xFE534D42: return "smb2";
    default: return "";
  }
}

static bool has_flag(const std::string& options, const char* flag) {
  std::string s = "," + options + ",";
  return s.find(std::string(",") + flag + ",") != std::string::npos;
}

// The mount PATH's descriptor is on (by mount id; by device as a fallback).
static bool find_mount(int fd, dev_t dev, Mount* out) {
  int id = fd_mount_id(fd);
  auto mounts = read_mountinfo();
  for (const auto& m : mounts)
    if (m.id == id) return *out = m, true;
  for (const auto& m : mounts)
    if (m.dev == dev) return *out = m, true;
  return false;
}

static void check_nfs_options(Doctor* d, Section& s) {
  const std::string& o = d->mount.super_options;
  std::string vers = mount_option(o, "vers");
  if (vers.empty()) vers = d->mount.fstype == "nfs4" ? "4" : "3";
  s.add("vers", vers);
  std::string nconnect = mount_option(o, "nconnect");
  s.add("nconnect", nconnect.empty() ? "1" : nconnect);
  for (const char* k : {"acregmin", "acregmax", "acdirmin", "acdirmax", "rsize", "wsize", "proto", "sec",
                        "timeo", "retrans"}) {
    std::string v = mount_option(o, k);
    if (!v.empty()) s.add(k, v);
  }
  std::string lookupcache = mount_option(o, "lookupcache");
  s.add("lookupcache", lookupcache.empty() ? "all" : lookupcache);
  bool soft = has_flag(o, "soft") || has_flag(o, "softerr");
  s.add("recovery", soft ? (has_flag(o, "softerr") ? "softerr" : "soft") : "hard");
  s.add_bool("noac", has_flag(o, "noac"));

  double v = std::atof(vers.c_str());
  if (v < 4.1)
    d->problems.push_back("NFS version " + vers + ": run Kafka on NFSv4.1 or later (NetApp TR-4947: vers=4.1)");
  if (std::atoi(nconnect.c_str()) < 16)
    d->notes.push_back("nconnect=" + (nconnect.empty() ? std::string("1") : nconnect) +
                       ": NetApp recommends vers=4.1,nconnect=16 for Kafka (more TCP connections, more throughput)");
  if (soft)
    d->problems.push_back("soft mount: a slow server turns into I/O errors that take Kafka log dirs offline; mount with 'hard'");
  if (lookupcache == "none" || has_flag(o, "noac"))
    d->notes.push_back("lookupcache=none or noac: every lookup or attribute read goes to the server; only use it if several clients write the same files");
}

void check_filesystem(Doctor* d) {
  Section& s = d->section("filesystem");
  s.add("path", d->real);
  struct statfs sf;
  long magic = ::fstatfs(d->dirfd, &sf) == 0 ? static_cast<long>(sf.f_type) : 0;
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(magic) & 0xffffffffUL);
  s.add("statfs_magic", hex);
  s.add("statfs_type", fs_magic_name(magic));
  bool found = find_mount(d->dirfd, d->dev, &d->mount);
  s.add("fstype", found ? d->mount.fstype : "");
  s.add("source", found ? d->mount.source : "");
  s.add("mount_point", found ? d->mount.point : "");
  d->nfs = magic == kNfsSuperMagic || (found && is_nfs_fstype(d->mount.fstype));
  s.add_bool("nfs", d->nfs);
  if (d->nfs && found) {
    s.add("super_options", d->mount.super_options);
    check_nfs_options(d, s);
  } else if (!d->nfs) {
    d->notes.push_back("not NFS (" + (found ? d->mount.fstype : std::string(fs_magic_name(magic))) +
                       "): this filesystem keeps unlinked open files itself; nfsshim acts here only "
                       "in directories listed in 'watch' (for tests)");
  }
}

// The watched directory or NFS mount point PATH belongs to ("" if none).
static std::string watch_root(const Doctor* d, bool* configured) {
  *configured = false;
  std::string best;
  for (const auto& w : d->cfg.watch) {
    char buf[PATH_MAX];
    std::string r = ::realpath(w.c_str(), buf) ? buf : w;
    // The deepest that holds PATH on its own filesystem: a mount below a watch dir is not
    // part of it (the preload matches watch dirs by device too).
    struct stat st;
    if (path_within(d->real, r) && r.size() > best.size() && ::stat(r.c_str(), &st) == 0 &&
        st.st_dev == d->dev)
      best = r;
  }
  if (!best.empty()) {
    *configured = true;
    return best;
  }
  return d->nfs ? d->mount.point : "";
}

void check_graveyard(Doctor* d) {
  Section& s = d->section("graveyard");
  bool configured = false;
  std::string root = watch_root(d, &configured);
  s.add_bool("watched", !root.empty());
  if (root.empty()) {
    s.add("location", "");
    return;
  }
  s.add("watched_as", configured ? "watch directory" : "NFS mount");
  // Mappings that are never used: MOUNT written other than as its real path (compared as
  // written), or a directory between root and PATH (burying goes by root).
  for (const auto& g : d->cfg.graveyards) {
    std::string m = resolved_mount(g.first);
    if (m != g.first) {  // compared as written (config.h): this one never matches
      d->problems.push_back("graveyard mapping '" + g.first + "=" + g.second + "' is not used: '" + g.first +
                            "' is not a real path (it resolves to '" + m + "'): write '" + m + "'");
      continue;  // one problem per mapping
    }
    if (m != root && path_within(d->real, m) && path_within(m, root))
      d->problems.push_back("graveyard mapping '" + g.first + "=" + g.second + "' is not used: '" + g.first +
                            "' is neither a watched directory nor an NFS mount point (the graveyard of '" +
                            d->real + "' is decided by '" + root + "')");
  }
  std::string dir = mapped_graveyard(d->cfg, root);
  if (dir.empty()) dir = (root == "/" ? "" : root) + "/" + d->cfg.graveyard_name;
  s.add("location", dir);
  std::string parent = dir.substr(0, dir.rfind('/'));
  if (parent.empty()) parent = "/";

  struct stat pst;
  if (::stat(parent.c_str(), &pst) != 0) {
    d->problems.push_back("graveyard parent '" + parent + "' cannot be reached: " + std::strerror(errno));
    return;
  }
  bool same_fs = pst.st_dev == d->dev;
  s.add_bool("same_filesystem", same_fs);
  if (!same_fs)
    d->problems.push_back("graveyard '" + dir + "' is not on the filesystem of '" + d->real +
                          "': burying is a rename and cannot cross filesystems");
  struct stat gst;
  bool exists = ::lstat(dir.c_str(), &gst) == 0;
  s.add_bool("exists", exists);
  if (!exists) {
    bool writable = ::access(parent.c_str(), W_OK | X_OK) == 0;
    s.add_bool("creatable", writable);
    if (!writable)
      d->problems.push_back("graveyard '" + dir + "' is missing and cannot be created by uid " +
                            std::to_string(::geteuid()) + ": create it as root with mode 1733 (mkdir -m 1733 '" + dir + "')");
    return;
  }
  char mode[16];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(gst.st_mode & 07777));
  s.add("mode", mode);
  s.add_num("owner", static_cast<long long>(gst.st_uid));
  if (!S_ISDIR(gst.st_mode)) {
    d->problems.push_back("'" + dir + "' exists but is not a directory (a symlink is never followed)");
    return;
  }
  if ((gst.st_mode & 07777) != 01733)
    d->problems.push_back("graveyard '" + dir + "' has mode " + mode +
                          ", expected 1733 (anyone may add, nobody may list): chmod 1733 '" + dir + "'");
  std::string mine = dir + "/u" + std::to_string(::geteuid());
  struct stat ust;
  if (::lstat(mine.c_str(), &ust) == 0) {
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(ust.st_mode & 07777));
    s.add("own_dir", mine);
    s.add("own_dir_mode", mode);
    s.add_num("own_dir_owner", static_cast<long long>(ust.st_uid));
    if (!S_ISDIR(ust.st_mode) || ust.st_uid != ::geteuid() || (ust.st_mode & 077) != 0)
      d->problems.push_back("'" + mine + "' must be a directory owned by uid " + std::to_string(::geteuid()) +
                            " with mode 0700 (it is " + mode + ", owner " + std::to_string(ust.st_uid) +
                            "): the preload refuses to use it");
  }
  if (parent == root && !configured)
    d->notes.push_back("the graveyard is a hidden directory in the mount root '" + root +
                       "'. If that directory is a Kafka log.dirs entry, every process that lists it must run "
                       "under the preload (which hides it), or mount the export one level up and use a "
                       "subdirectory as the log dir, or set 'graveyard = " + root + "=DIR' (same filesystem)");
}

}  // namespace nfsshim::tools
