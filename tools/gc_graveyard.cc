#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cli.h"
#include "gc.h"
#include "nfsshim/graveyard.h"
#include "nfsshim/identity.h"

namespace nfsshim::tools {

void report(const char* action, const std::string& path, const std::string& why) {
  std::printf("%s: %s (%s)\n", action, terminal_safe(path).c_str(), terminal_safe(why).c_str());
}

namespace {

struct Location {
  std::string parent;  // directory holding the graveyard
  std::string name;    // the graveyard directory's name
};

std::string base_name(const std::string& p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
std::string dir_name(const std::string& p) {
  size_t s = p.find_last_of('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}

// Where PATH's graveyard is; false if PATH has none.
bool locate(const std::string& path, const Config& cfg, Location* loc) {
  char buf[PATH_MAX];
  std::string real = ::realpath(path.c_str(), buf) ? buf : path;
  std::string mapped = mapped_graveyard(cfg, real);
  if (!mapped.empty()) {  // a mount with a configured graveyard elsewhere
    *loc = {dir_name(mapped), base_name(mapped)};
    return true;
  }
  for (const auto& g : cfg.graveyards) {
    if (g.second == real) {
      *loc = {dir_name(real), base_name(real)};
      return true;
    }
  }
  struct stat st;
  std::string inside = real + (real == "/" ? "" : "/") + cfg.graveyard_name;
  if (::lstat(inside.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    *loc = {real, cfg.graveyard_name};
    return true;
  }
  // The graveyard itself: its name, or its shape (1733: anyone adds, nobody lists).
  if (::stat(real.c_str(), &st) == 0 && real != "/" &&
      (base_name(real) == cfg.graveyard_name || (st.st_mode & 07777) == 01733)) {
    *loc = {dir_name(real), base_name(real)};
    return true;
  }
  return false;
}

// The u<UID> subdirectories to look at: all of them as root, else our own. As root, 0 or
// the errno of a graveyard that cannot be listed (root squashed by the server, or without
// CAP_DAC_READ_SEARCH, on a graveyard a user made: 1733 lets nobody else list it).
int users(int parent_fd, const std::string& name, std::vector<uid_t>* out) {
  if (::geteuid() != 0) {
    out->push_back(::geteuid());
    return 0;
  }
  int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return err;
  }
  while (struct dirent* de = ::readdir(d)) {
    char* end = nullptr;
    if (de->d_name[0] != 'u' || de->d_name[1] == '\0') continue;
    unsigned long uid = std::strtoul(de->d_name + 1, &end, 10);
    // The name of that very uid_t: "u4294967297" (made by anyone in the 1733 top) is not u1.
    if (*end == '\0' && std::to_string(static_cast<uid_t>(uid)) == de->d_name + 1)
      out->push_back(static_cast<uid_t>(uid));
  }
  ::closedir(d);
  return 0;
}

// 0 or the errno of a graveyard directory whose entries cannot be listed.
int listable(const Graveyard& g) {
  int fd = ::openat(g.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

}  // namespace

GcResult gc_graveyards(const std::string& path, const Config& cfg, const GcOptions& opt) {
  GcResult r;
  Location loc;
  if (!locate(path, cfg, &loc)) {
    std::printf("nothing to do: no graveyard in %s (%s)\n", path.c_str(), cfg.graveyard_name.c_str());
    return r;
  }
  int parent = ::open(loc.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) {
    report("failed", loc.parent, std::string("cannot open: ") + std::strerror(errno));
    ++r.failed;
    return r;
  }
  std::string top = (loc.parent == "/" ? "" : loc.parent) + "/" + loc.name;
  struct stat st;
  if (::fstatat(parent, loc.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
    // A mapped graveyard is made at the first bury: until then there is nothing to reap.
    std::printf("nothing to do: no graveyard in %s (%s)\n", path.c_str(), top.c_str());
    ::close(parent);
    return r;
  }
  Identity self = self_identity();
  std::vector<uid_t> uids;
  if (int err = users(parent, loc.name, &uids); err != 0) {
    // Saying nothing would look like an empty graveyard: the daily run must show it.
    report("failed", top, std::string("cannot list: ") + std::strerror(err));
    ++r.failed;
  }
  for (uid_t uid : uids) {
    std::string dir = top + "/u" + std::to_string(uid);
    std::unique_ptr<Graveyard> g;
    std::string why;
    int rv = Graveyard::open(parent, loc.name, uid, false, &g, &why);
    if (rv == -ENOENT) continue;  // this user never buried anything here
    if (rv < 0) {
      // A subdirectory with the wrong owner or mode is never reaped: it may be a trap.
      report("failed", dir, why);
      ++r.failed;
      continue;
    }
    if (int err = listable(*g); err != 0) {
      report("failed", dir, std::string("cannot list: ") + std::strerror(err));
      ++r.failed;
      continue;
    }
    for (const ReapDecision& d : g->plan(self, opt.max_age_s, opt.now)) {
      std::string entry = dir + "/" + d.name;
      if (d.action != ReapAction::remove) {
        report("kept", entry, d.reason);
        ++r.kept;
      } else if (opt.dry_run) {
        report("would remove", entry, d.reason);
        ++r.removed;
      } else {
        // Graveyard::execute, one entry at a time, to say which one failed and why.
        int err = g->remove(d.name);
        if (err == 0 || err == -ENOENT) {
          report("removed", entry, d.reason);
          ++r.removed;
        } else {
          report("failed", entry, std::string("cannot remove: ") + std::strerror(-err));
          ++r.failed;
        }
      }
    }
  }
  ::close(parent);
  return r;
}

}  // namespace nfsshim::tools
