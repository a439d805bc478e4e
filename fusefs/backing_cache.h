// -o drop_backing_cache: one page cache copy of file data, not two. On the classic path
// (no kernel passthrough: RHEL 8's kernel, and every kernel before 6.9) each byte read or
// written through the mount sits in our mount's page cache and again in the backing
// file's (the NFS client's), so a Kafka broker's cached log data costs twice its size
// (measured: 1 GiB written and read through a classic mount over ext4 added 2048 MiB to
// Cached; fincore showed all of a 256 MiB file read through it cached in SOURCE). This drops
// the backing file's pages once our mount's cache holds them, with
// posix_fadvise(POSIX_FADV_DONTNEED), which drops only clean pages:
// - read: the range just served (and before it to a 2 MiB boundary: whole folios);
// - write: every kDropStep of a file written, all of it older than kDropLag (the kernel
//   starts writeback of what is still dirty there, so the next call drops it);
// - fsync: the whole file (clean now).
// The cost: data read again after a reopen (which drops our cache, keep_cache off) comes
// from the server or disk instead of the backing cache. Off by default.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace nfsshim::fuse {

inline constexpr off_t kDropStep = 8 << 20;
inline constexpr off_t kDropLag = 8 << 20;
// The largest page cache folio (PMD size on x86-64): folios are aligned to their size.
inline constexpr off_t kFolioMax = 2 << 20;

// The backing pages of [OFF, OFF+LEN) of FD, just copied into our mount's page cache, and
// those before it back to a kFolioMax boundary (served before, if the reader is sequential).
void drop_read(int fd, off_t off, size_t len);
// After LEN bytes were written at OFF: drops [0, end - kDropLag) when the write crossed a
// multiple of kDropStep.
void drop_written(int fd, off_t off, size_t len);
// After a successful fsync or fdatasync of FD: every page of it.
void drop_synced(int fd);

}  // namespace nfsshim::fuse
