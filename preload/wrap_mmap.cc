// Mappings: a buried file may be held by a mapping alone (Kafka closes an index's fd
// right after mapping it), so unmapping can be its last reference.
#define _GNU_SOURCE 1
#include <stdarg.h>
#include <sys/mman.h>

#include <cstdint>

#include "export.h"
#include "guard.h"
#include "real.h"
#include "registry.h"

using namespace nfsshim::preload;

namespace {

void after_map(void* rv, void* addr, size_t len, int flags, int fd) noexcept {
  if (rv == MAP_FAILED) return;
  Registry& reg = Registry::get();
  if (reg.empty()) return;
  Guard g;
  if (!g.outermost()) return;
  ErrnoKeeper keep;
  try {
    // MAP_FIXED silently replaces what was there, maybe a tracked mapping.
    if ((flags & MAP_FIXED) && reg.maps_tracked() &&
        reg.overlaps(reinterpret_cast<uintptr_t>(addr), len))
      reg.recount();
    else if (reg.fd_tracked(fd))
      reg.mapped(fd, reinterpret_cast<uintptr_t>(rv), len);
  } catch (...) {
  }
}

bool touches_tracked(void* addr, size_t len) noexcept {
  Registry& reg = Registry::get();
  if (!reg.maps_tracked()) return false;
  try {
    return reg.overlaps(reinterpret_cast<uintptr_t>(addr), len);
  } catch (...) {
    return false;
  }
}

}  // namespace

NFSSHIM_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  auto real = REAL(mmap);
  if (!real) {
    errno = ENOSYS;
    return MAP_FAILED;
  }
  void* rv = real(addr, len, prot, flags, fd, off);
  after_map(rv, addr, len, flags, fd);
  return rv;
}

NFSSHIM_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  auto real = REAL(mmap64);
  if (!real) {
    errno = ENOSYS;
    return MAP_FAILED;
  }
  void* rv = real(addr, len, prot, flags, fd, off);
  after_map(rv, addr, len, flags, fd);
  return rv;
}

NFSSHIM_EXPORT int munmap(void* addr, size_t len) {
  auto real = REAL(munmap);
  if (!real) return missing_symbol();
  Guard g;
  if (!g.outermost() || !touches_tracked(addr, len)) return real(addr, len);
  int rv = real(addr, len);
  ErrnoKeeper keep;
  try {
    Registry::get().recount();
  } catch (...) {
  }
  return rv;
}

NFSSHIM_EXPORT void* mremap(void* old, size_t oldlen, size_t newlen, int flags, ...) {
  auto real = REAL(mremap);
  if (!real) {
    errno = ENOSYS;
    return MAP_FAILED;
  }
  void* newaddr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    newaddr = va_arg(ap, void*);
    va_end(ap);
  }
  Guard g;
  bool tracked = g.outermost() && (touches_tracked(old, oldlen) ||
                                   ((flags & MREMAP_FIXED) && touches_tracked(newaddr, newlen)));
  void* rv = (flags & MREMAP_FIXED) ? real(old, oldlen, newlen, flags, newaddr)
                                    : real(old, oldlen, newlen, flags);
  if (tracked) {
    ErrnoKeeper keep;
    try {
      Registry::get().recount();
    } catch (...) {
    }
  }
  return rv;
}
