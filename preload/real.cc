#include "real.h"

#include <dlfcn.h>

namespace nfsshim::preload {

void* real_symbol(std::atomic<void*>* slot, const char* name) {
  void* p = slot->load(std::memory_order_acquire);
  if (p) return p;
  // Racing threads all get the same answer; storing it twice is harmless.
  p = dlsym(RTLD_NEXT, name);
  if (p) slot->store(p, std::memory_order_release);
  return p;
}

}  // namespace nfsshim::preload
