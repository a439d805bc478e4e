// Wrappers are the only symbols the preload exports (see preload.map).
#pragma once

#include <cerrno>

#define NFSSHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace nfsshim::preload {

// A required libc symbol is missing: fail this call, never the process.
inline int missing_symbol() {
  errno = ENOSYS;
  return -1;
}

// Sets errno from a -errno result and returns -1, or returns 0.
inline int finish(int rv) {
  if (rv < 0) {
    errno = -rv;
    return -1;
  }
  return 0;
}

}  // namespace nfsshim::preload
