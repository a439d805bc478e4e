#include "watch.h"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nfsshim/entry_name.h"
#include "nfsshim/identity.h"
#include "nfsshim/log.h"
#include "nfsshim/metrics.h"
#include "nfsshim/sys.h"
#include "registry.h"
#include "state.h"

namespace nfsshim::preload {

Watcher& Watcher::get() {
  static Watcher* w = new Watcher;  // never destroyed: used from exit-time destructors
  return *w;
}

static long coarse_seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec;
}

void Watcher::refresh_locked(bool force) {
  long now = coarse_seconds();
  if (!force && now - refreshed_at_.load(std::memory_order_relaxed) < 1) return;
  // No statfs here: a hung NFS mount elsewhere must not stall calls on other
  // filesystems. The magic number is checked when a mount is first used (visit).
  // A failed read (EMFILE, ENOMEM) keeps the table we have: an empty one would turn every
  // delete on NFS into the plain call, silly renames and all, until the next refresh.
  // Built aside and swapped in at the end: an allocation failing (bad_alloc) keeps the old
  // tables whole.
  bool ok = false;
  // The thread's: an exited leader's /proc/self has no mount table.
  auto all = read_mountinfo("/proc/thread-self/mountinfo", &ok);
  if (!ok) all = read_mountinfo("/proc/self/mountinfo", &ok);
  std::vector<Mount> mounts;
  if (ok)
    for (auto& m : all)
      if (is_nfs_fstype(m.fstype)) mounts.push_back(std::move(m));
  std::vector<WatchDir> watch_dirs;
  for (const auto& d : config().watch) {
    struct stat st, up;
    char real[PATH_MAX];
    if (sys::fstatat(AT_FDCWD, d.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (!realpath(d.c_str(), real)) continue;
    WatchDir w;
    w.dev = st.st_dev;
    w.path = real;
    w.whole = sys::fstatat(AT_FDCWD, (w.path + "/..").c_str(), &up, 0) == 0 && up.st_dev != st.st_dev;
    watch_dirs.push_back(std::move(w));
  }
  if (ok) mounts_.swap(mounts);
  watch_dirs_.swap(watch_dirs);
  dev_cache_.clear();
  // The answer first, then its time: any()'s lock-free path trusts any_ only once it sees
  // a fresh time, so no thread takes the initial "nothing watched" while the first read
  // is still going (its delete would run plain: on NFS a silly rename). Until then the
  // others wait for the lock.
  any_.store(!mounts_.empty() || !watch_dirs_.empty(), std::memory_order_relaxed);
  refreshed_at_.store(now, std::memory_order_release);
}

bool Watcher::any() noexcept {
  // Lock-free until the once-a-second refresh is due.
  // Acquire: pairs with refresh_locked's release, so any_ is at least that refresh's.
  if (coarse_seconds() - refreshed_at_.load(std::memory_order_acquire) < 1)
    return any_.load(std::memory_order_relaxed);
  // Called outside the wrappers' try blocks: out of memory, the tables we have answer.
  try {
    std::lock_guard<std::mutex> lock(mu_0);
    refresh_locked(false);
  } catch (...) {
  }
  return any_.load(std::memory_order_relaxed);
}

// An O_PATH descriptor of the directory that holds DIRFD/PATH (invalid if none).
static sys::Fd open_parent(int dirfd, const char* path) {
  std::string dir(path);
  size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
  return sys::Fd(sys::openat(dirfd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_PATH));
}

// Canonical path of the directory that holds DIRFD/PATH, or "" if unknown.
static std::string parent_path(int dirfd, const char* path) {
  sys::Fd d = open_parent(dirfd, path);
  if (!d.valid()) return "";
  char rel[32], buf[PATH_MAX];
  std::snprintf(rel, sizeof rel, "fd/%d", d.get());
  ssize_t n = sys::with_proc_self(rel, [&](const char* link) {
    return sys::readlinkat(AT_FDCWD, link, buf, sizeof buf - 1);
  });
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

// Of nested watch dirs the deepest that holds the file, as doctor and gc see it.
const Watcher::WatchDir* Watcher::watch_dir_locked(int dirfd, const char* path, dev_t dev) {
  std::string parent;
  const WatchDir* best = nullptr;
  for (const auto& w : watch_dirs_) {
    if (w.dev != dev || (best && w.path.size() <= best->path.size())) continue;
    bool holds = w.whole;  // the root of its mount holds every file of the device
    if (!holds) {
      if (parent.empty()) parent = parent_path(dirfd, path);
      holds = !parent.empty() && path_within(parent, w.path);
    }
    if (holds) best = &w;
  }
  return best;
}

bool Watcher::watched(int dirfd, const char* path, dev_t dev) {
  std::lock_guard<std::mutex> lock(mu_0);
  refresh_locked(false);
  int state = -1;  // 0 no, 1 NFS, 2 some watch dir on this dev
  for (const auto& c : dev_cache_)
    if (c.first == dev) state = c.second;
  if (state < 0) {
    auto classify = [&] {
      for (const auto& m : mounts_)
        if (m.dev == dev) return 1;
      for (const auto& w : watch_dirs_)
        if (w.dev == dev) return 2;
      return 0;
    };
    state = classify();
    if (state == 0) {
      // A mount newer than our last look? Re-read once before saying no.
      refresh_locked(true);
      state = classify();
    }
    dev_cache_.emplace_back(dev, state);
  }
  if (state == 1) return true;
  return state == 2 && watch_dir_locked(dirfd, path, dev) != nullptr;
}

// Where does the file at DIRFD/PATH live: which watched directory or NFS mount?
Watcher::Site* Watcher::site_for_locked(int dirfd, const char* path, dev_t dev) {
  std::string root;
  bool configured = false;
  if (const WatchDir* w = watch_dir_locked(dirfd, path, dev)) {
    root = w->path;
    configured = true;
  }
  if (root.empty()) {
    std::vector<const Mount*> cands;
    for (const auto& m : mounts_)
      if (m.dev == dev) cands.push_back(&m);
    if (cands.empty()) return nullptr;
    root = cands[0]->point;
    if (cands.size() > 1) {
      // The same filesystem is mounted more than once; rename only works within one
      // mount, so find the mount of the file's directory.
      sys::Fd d = open_parent(dirfd, path);
      int id = d.valid() ? fd_mount_id(d.get()) : -1;
      for (const auto* m : cands)
        if (m->id == id) root = m->point;
    }
  }
  for (auto& s : sites_)
    if (s->root == root && s->dev == dev) return s.get();

  auto s = std::make_unique<Site>();
  s->root = root;
  s->dev = dev;
  s->configured = configured;
  s->grave_parent = root;
  s->grave_name = config().graveyard_name;
  std::string mapped = mapped_graveyard(config(), root);
  if (!mapped.empty()) {
    size_t slash = mapped.rfind('/');
    s->grave_parent = slash == 0 ? "/" : mapped.substr(0, slash);
    s->grave_name = mapped.substr(slash + 1);
  }
  sites_.push_back(std::move(s));
  return sites_.back().get();
}

void Watcher::visit_locked(Site* s, bool create) {
  if (s->grave || (s->visited && !create)) return;
  std::string why;
  sys::Fd parent(sys::openat(AT_FDCWD, s->grave_parent.c_str(), O_RDONLY | O_DIRECTORY));
  int rv = parent.valid() ? 0 : parent.get();
  if (rv == 0) {
    struct stat st;
    rv = sys::fstat(parent.get(), &st);
    struct statfs sf;
    if (rv == 0 && st.st_dev != s->dev) {
      rv = -EXDEV;
      why = "'" + s->grave_parent + "' is not on the same filesystem as '" + s->root + "'";
    } else if (rv == 0 && !s->configured && fstatfs(parent.get(), &sf) == 0 &&
               sf.f_type != kNfsSuperMagic) {
      // mountinfo said nfs, the kernel's magic number says otherwise.
      rv = -EXDEV;
      why = "'" + s->root + "' is not an NFS filesystem (statfs magic)";
    }
  } else {
    why = "cannot open '" + s->grave_parent + "': " + std::strerror(-rv);
  }
  if (rv == 0) rv = Graveyard::open(parent.get(), s->grave_name, geteuid(), create, &s->grave, &why);
  // The host may close our descriptor (a close loop in a daemon): reopen it there then.
  if (rv == 0) s->grave->reopen_at(s->grave_parent);
  bool first = !s->visited;
  s->visited = true;
  if (rv < 0) {
    // Absent and not asked to create: nothing to reap, nothing to say.
    if (!create && rv == -ENOENT) return;
    if (log::first_time("graveyard:" + s->root))
      SHIM_LOG_WARN("graveyard for '{}' unusable, deletes there fall back to the plain call: {}",
                    s->root, why);
    Counters::inc(counters().errors);
    return;
  }
  if (!first && !create) return;
  // Crash recovery: entries of owners that are gone; adopt our own (from before exec).
  Identity self = self_identity();
  auto plan = s->grave->plan(self, config().foreign_max_age_s, time(nullptr));
  ReapStats st = s->grave->execute(plan);
  Counters::inc(counters().reaped_dead, st.removed);
  if (st.removed)
    SHIM_LOG_INFO("reaped {} graveyard entries of dead processes under '{}'", st.removed, s->root);
  for (const auto& d : plan) {
    // Our names from before exec are taken (this image's counter starts at 0): number
    // ours past them, adopted or not (an 's' entry, or one named without a boot id).
    auto e = EntryName::parse(d.name);
    if (e) {
      EntryName mine = *e;
      mine.owner = self;
      if (mine.format() == d.name) s->grave->skip_seq_past(e->seq);
    }
    if (d.action != ReapAction::adopt) continue;
    struct stat est;
    if (sys::fstatat(s->grave->fd(), d.name.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0) continue;
    InodeKey key{est.st_dev, est.st_ino};
    Registry::get().add(key, s->grave.get(), d.name, scan_refs({key})[0]);
  }
}

Graveyard* Watcher::graveyard_for(int dirfd, const char* path, dev_t dev, bool create) {
  std::lock_guard<std::mutex> lock(mu_0);
  Site* s = site_for_locked(dirfd, path, dev);
  if (!s) return nullptr;
  visit_locked(s, create);
  return s->grave.get();
}

Graveyard* Watcher::graveyard_again(Graveyard* lost, int dirfd, const char* path, dev_t dev) {
  std::lock_guard<std::mutex> lock(mu_0);
  Site* s = site_for_locked(dirfd, path, dev);
  if (!s) return nullptr;
  if (s->grave.get() == lost) {  // else another thread replaced it already
    s->lost.push_back(std::move(s->grave));
    if (log::first_time("graveyard lost:" + s->root))
      SHIM_LOG_WARN("the graveyard for '{}' was removed or replaced while in use; making it again", s->root);
    visit_locked(s, true);
  }
  return s->grave.get();
}

void Watcher::after_fork_child() {
  // atfork_prepare locked mu_0 in the forking thread, the child's only thread: unlock it
  // (not re-create it over a held lock, which TSan reports as a double lock).
  mu_0.unlock();
}

}  // namespace nfsshim::preload
