// Directory listings made through the shim never show a graveyard: Kafka refuses to
// start when a log dir (often the mount root) holds a directory that is not a
// partition.
#include <dirent.h>

#include "export.h"
#include "real.h"
#include "state.h"

using namespace nfsshim::preload;

namespace {

// Skips hidden names; REAL is readdir or readdir64.
template <typename Ent>
Ent* next_visible(Ent* (*real)(DIR*), DIR* dir) {
  if (!real) {
    errno = ENOSYS;
    return nullptr;
  }
  Ent* d;
  do d = real(dir);
  while (d && hidden_name(d->d_name));
  return d;
}

// The same for readdir_r and readdir64_r.
template <typename Ent>
int next_visible_r(int (*real)(DIR*, Ent*, Ent**), DIR* dir, Ent* entry, Ent** result) {
  if (!real) return ENOSYS;
  int rv;
  do rv = real(dir, entry, result);
  while (rv == 0 && *result && hidden_name((*result)->d_name));
  return rv;
}

}  // namespace

NFSSHIM_EXPORT struct dirent* readdir(DIR* dir) { return next_visible(REAL(readdir), dir); }

NFSSHIM_EXPORT struct dirent64* readdir64(DIR* dir) { return next_visible(REAL(readdir64), dir); }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NFSSHIM_EXPORT int readdir_r(DIR* dir, struct dirent* entry, struct dirent** result) {
  return next_visible_r(REAL(readdir_r), dir, entry, result);
}

NFSSHIM_EXPORT int readdir64_r(DIR* dir, struct dirent64* entry, struct dirent64** result) {
  return next_visible_r(REAL(readdir64_r), dir, entry, result);
}
#pragma GCC diagnostic pop
