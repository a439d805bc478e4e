// Mappings: a buried file may be held by a mapping alone (Kafka closes an index's fd
// right after mapping it), so unmapping can be its last reference.
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mman.h>

#include <atomic>
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

// The real functions, resolved by the constructor. Until then (and for code that runs
// before any constructor, such as a sanitizer runtime initialising itself) the kernel
// is called directly: glibc's mmap family are plain system calls, and no dlsym,
// allocation or atomic may happen that early.
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
static MmapFn g_mmap, g_mmap64;
static MunmapFn g_munmap;
static MremapFn g_mremap;

namespace nfsshim::preload {
void resolve_mmap_symbols() {
  g_mmap = reinterpret_cast<MmapFn>(dlsym(RTLD_NEXT, "mmap"));
  g_mmap64 = reinterpret_cast<MmapFn>(dlsym(RTLD_NEXT, "mmap64"));
  g_munmap = reinterpret_cast<MunmapFn>(dlsym(RTLD_NEXT, "munmap"));
  g_mremap = reinterpret_cast<MremapFn>(dlsym(RTLD_NEXT, "mremap"));
}
}  // namespace nfsshim::preload

#define EARLY_SAFE __attribute__((no_sanitize("thread")))

EARLY_SAFE static void* sys_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

NFSSHIM_EXPORT EARLY_SAFE void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!g_mmap) return sys_mmap(addr, len, prot, flags, fd, off);
  void* rv = g_mmap(addr, len, prot, flags, fd, off);
  after_map(rv, addr, len, flags, fd);
  return rv;
}

NFSSHIM_EXPORT EARLY_SAFE void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  if (!g_mmap64) return sys_mmap(addr, len, prot, flags, fd, off);
  void* rv = g_mmap64(addr, len, prot, flags, fd, off);
  after_map(rv, addr, len, flags, fd);
  return rv;
}

// munmap and mremap check after the real call, as the closes do (wrap_fd.cc
// released_tracked): a bury that scanned the mapping sees it gone, or this sees its range.
NFSSHIM_EXPORT EARLY_SAFE int munmap(void* addr, size_t len) {
  if (!g_munmap) return static_cast<int>(::syscall(SYS_munmap, addr, len));
  int rv = g_munmap(addr, len);
  full_barrier();
  if (!Registry::get().maps_tracked()) return rv;  // the common case: no Guard
  Guard g;
  if (!g.outermost() || !touches_tracked(addr, len)) return rv;
  ErrnoKeeper keep;
  try {
    Registry::get().recount();
  } catch (...) {
  }
  return rv;
}

NFSSHIM_EXPORT EARLY_SAFE void* mremap(void* old, size_t oldlen, size_t newlen, int flags, ...) {
  void* newaddr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    newaddr = va_arg(ap, void*);
    va_end(ap);
  }
  if (!g_mremap)
    return reinterpret_cast<void*>(::syscall(SYS_mremap, old, oldlen, newlen, flags, newaddr));
  Guard g;
  void* rv = (flags & MREMAP_FIXED) ? g_mremap(old, oldlen, newlen, flags, newaddr)
                                    : g_mremap(old, oldlen, newlen, flags);
  full_barrier();
  bool tracked = g.outermost() && (touches_tracked(old, oldlen) ||
                                   ((flags & MREMAP_FIXED) && touches_tracked(newaddr, newlen)));
  if (tracked) {
    ErrnoKeeper keep;
    try {
      Registry::get().recount();
    } catch (...) {
    }
  }
  return rv;
}
