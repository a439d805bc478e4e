// Directory listings made through the shim never show a graveyard: Kafka refuses to
// start when a log dir (often the mount root) holds a directory that is not a
// partition.
#include <dirent.h>

#include "export.h"
#include "real.h"
#include "state.h"

using namespace nfsshim::preload;

NFSSHIM_EXPORT struct dirent* readdir(DIR* dir) {
  auto real = REAL(readdir);
  if (!real) {
    errno = ENOSYS;
    return nullptr;
  }
  struct dirent* d;
  do d = real(dir);
  while (d && hidden_name(d->d_name));
  return d;
}

NFSSHIM_EXPORT struct dirent64* readdir64(DIR* dir) {
  auto real = REAL(readdir64);
  if (!real) {
    errno = ENOSYS;
    return nullptr;
  }
  struct dirent64* d;
  do d = real(dir);
  while (d && hidden_name(d->d_name));
  return d;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NFSSHIM_EXPORT int readdir_r(DIR* dir, struct dirent* entry, struct dirent** result) {
  auto real = REAL(readdir_r);
  if (!real) return ENOSYS;
  int rv;
  do rv = real(dir, entry, result);
  while (rv == 0 && *result && hidden_name((*result)->d_name));
  return rv;
}

NFSSHIM_EXPORT int readdir64_r(DIR* dir, struct dirent64* entry, struct dirent64** result) {
  auto real = REAL(readdir64_r);
  if (!real) return ENOSYS;
  int rv;
  do rv = real(dir, entry, result);
  while (rv == 0 && *result && hidden_name((*result)->d_name));
  return rv;
}
#pragma GCC diagnostic pop
