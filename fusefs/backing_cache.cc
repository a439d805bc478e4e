// The backing file's pages dropped once our mount's page cache holds them (backing_cache.h).
#include "backing_cache.h"

#include <fcntl.h>

#include <atomic>
#include <cstring>

#include "nfsshim/log.h"

namespace nfsshim::fuse {

namespace {

// Advice only: a failure changes no result, and is logged once.
void drop(int fd, off_t off, off_t len) {
  int e = ::posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
  static std::atomic<bool> said{false};
  if (e != 0 && !said.exchange(true))
    SHIM_LOG_WARN("drop_backing_cache: posix_fadvise(DONTNEED) of a backing file: {} "
                  "(its pages stay cached; said once)", std::strerror(e));
}

}  // namespace

// From the start of the largest folio OFF may lie in: a page cache folio goes only when the
// range covers all of it, and readahead fills the cache with folios of up to 2 MiB (Linux
// 6.x; 4 KiB pages on RHEL 8), so the exact range of a 1 MiB READ dropped little on ext4:
// 256 MiB of a 273 MiB file read through the mount left 260 cached; of 64 MiB read ahead
// from disk, 34 to 51 stayed (mapped: the part past where readahead's window had grown).
void drop_read(int fd, off_t off, size_t len) {
  if (len == 0) return;
  const off_t from = off / kFolioMax * kFolioMax;
  drop(fd, from, off + static_cast<off_t>(len) - from);
}

void drop_written(int fd, off_t off, size_t len) {
  const off_t end = off + static_cast<off_t>(len);
  if (end / kDropStep == off / kDropStep || end <= kDropLag) return;
  const off_t upto = (end - kDropLag) / kDropStep * kDropStep;
  if (upto > 0) drop(fd, 0, upto);  // never length 0: that would mean the whole file
}

void drop_synced(int fd) { drop(fd, 0, 0); }  // length 0: to the end of the file

}  // namespace nfsshim::fuse
