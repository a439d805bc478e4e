// The real libc functions behind our wrappers, from dlsym(RTLD_NEXT). Each is looked up
// on first use and cached in an atomic, so no wrapper depends on our constructor having
// run. A missing symbol is a null pointer: the wrapper then fails with ENOSYS (never
// exits the host process).
#pragma once

#include <atomic>

namespace nfsshim::preload {

void* real_symbol(std::atomic<void*>* slot, const char* name);

}  // namespace nfsshim::preload

// REAL(close)(fd): the next definition of `close` after ours.
#define REAL(name)                                                                     \
  ([]() {                                                                              \
    static std::atomic<void*> slot{nullptr};                                           \
    return reinterpret_cast<decltype(&::name)>(::nfsshim::preload::real_symbol(&slot, #name)); \
  }())
