#include "nfsshim/silly_name.h"

#include <cstring>

namespace nfsshim {
namespace {

// NAME is PREFIX followed by exactly DIGITS hex digits.
bool prefix_and_hex(const char* name, const char* prefix, size_t digits) {
  const size_t n = std::strlen(prefix);
  if (std::strncmp(name, prefix, n) != 0 || std::strlen(name) != n + digits) return false;
  for (const char* p = name + n; *p; ++p)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) return false;
  return true;
}

}  // namespace

bool is_nfs_silly_name(const char* name) { return prefix_and_hex(name, ".nfs", 24); }
bool is_fuse_hidden_name(const char* name) { return prefix_and_hex(name, ".fuse_hidden", 16); }

}  // namespace nfsshim
