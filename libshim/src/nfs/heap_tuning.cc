#include "nfsshim/nfs/heap_tuning.h"

#include <malloc.h>

namespace nfsshim::nfs {

bool keep_io_buffers_in_heap() {
  // 32 MiB is glibc's largest mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX).
  // Setting it fixes the threshold (no dynamic adjustment), so the trim threshold is
  // set too; the memory kept is bounded by what the process had in use at its peak.
  bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1 && ok;
  return ok;
}

}  // namespace nfsshim::nfs
