// doctor: does unlinking an open file here leave a silly-renamed ".nfs*" name behind?
// Raw syscalls only: if the preload is loaded into this process (LD_PRELOAD or
// /etc/ld.so.preload), libc's unlink would be ours and the probe would test the shim.
#include <dirent.h>
#include <time.h>

#include <cstring>
#include <set>
#include <string>

#include "doctor.h"
#include "nfsshim/sys.h"

namespace nfsshim::tools {

namespace {

std::set<std::string> silly_names(int dirfd) {
  std::set<std::string> out;
  sys::Fd d(sys::openat(dirfd, ".", O_RDONLY | O_DIRECTORY));
  if (!d.valid()) return out;
  sys::for_each_name(d.get(), [&](const char* name) {
    if (std::strncmp(name, ".nfs", 4) == 0) out.insert(name);
    return true;
  });
  return out;
}

void sleep_ms(long ms) {
  struct timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

void check_silly_rename(Doctor* d) {
  Section& s = d->section("silly_rename_probe");
  char name[96];
  std::snprintf(name, sizeof name, ".nfsshim-doctor-%d-%ld", static_cast<int>(::getpid()),
                static_cast<long>(::time(nullptr)));
  sys::Fd fd(sys::openat(d->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  if (!fd.valid()) {
    s.add("result", std::string("skipped: cannot create a file: ") + std::strerror(-fd.get()));
    s.add("silly_rename", "");
    d->problems.push_back("cannot create a file in '" + d->real + "': " + std::strerror(-fd.get()) +
                          " (a Kafka log dir must be writable)");
    return;
  }
  struct stat st;
  sys::fstat(fd.get(), &st);
  std::set<std::string> before = silly_names(d->dirfd);
  int rv = sys::unlinkat(d->dirfd, name, 0);
  if (rv < 0) {
    s.add("result", std::string("unlink failed: ") + std::strerror(-rv));
    d->problems.push_back("unlinking an open file in '" + d->real + "' failed: " + std::strerror(-rv));
    return;
  }
  std::string silly;
  for (const auto& n : silly_names(d->dirfd)) {
    struct stat nst;
    if (before.count(n) == 0 && sys::fstatat(d->dirfd, n.c_str(), &nst, AT_SYMLINK_NOFOLLOW) == 0 &&
        nst.st_ino == st.st_ino && nst.st_dev == st.st_dev)
      silly = n;
  }
  fd.reset();
  s.add_bool("silly_rename", !silly.empty());
  s.add("silly_name", silly);
  if (silly.empty()) {
    s.add("result", "unlinked while open, no .nfs* name appeared");
    if (d->nfs)
      d->notes.push_back("no silly rename on unlink: the server preserves unlinked open files "
                         "(NFSv4.1 OPEN4_RESULT_PRESERVE_UNLINKED). Renaming over an open file still silly-renames.");
    return;
  }
  // The client removes the name at the last close; give it a moment.
  bool gone = false;
  for (int i = 0; i < 20 && !gone; ++i) {
    struct stat nst;
    gone = sys::fstatat(d->dirfd, silly.c_str(), &nst, AT_SYMLINK_NOFOLLOW) == -ENOENT;
    if (!gone) sleep_ms(50);
  }
  if (!gone) gone = sys::unlinkat(d->dirfd, silly.c_str(), 0) == 0;
  s.add_bool("cleaned_up", gone);
  s.add("result", "unlinked while open, the NFS client renamed it to " + silly);
  d->notes.push_back("unlinking an open file here leaves a silly-renamed " + silly.substr(0, 4) +
                     "... file: Kafka's partition deletes fail with 'Directory not empty' without nfsshim. "
                     "Run the broker under the preload (nfsshim run -- kafka-server-start.sh ...) or the FUSE overlay");
  if (!gone) d->problems.push_back("the probe's silly-renamed file '" + d->real + "/" + silly + "' could not be removed");
}

}  // namespace nfsshim::tools
