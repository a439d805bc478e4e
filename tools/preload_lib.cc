#include "preload_lib.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifndef NFSSHIM_INSTALL_LIBDIR
#error "NFSSHIM_INSTALL_LIBDIR must be set by the build (CMAKE_INSTALL_FULL_LIBDIR)"
#endif

namespace nfsshim::tools {

static const char kLibName[] = "libnfsshim-preload.so";

static bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

bool find_preload_library(std::string* lib, std::string* why) {
  const char* env = std::getenv("NFSSHIM_PRELOAD_LIB");
  if (env && *env) {
    // Absolute: the command may change directory before it runs the next program.
    char real[PATH_MAX];
    if (!::realpath(env, real)) {
      *why = std::string("cannot open '") + env + "' (NFSSHIM_PRELOAD_LIB): " + std::strerror(errno);
      return false;
    }
    *lib = real;
    return true;
  }
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.resize(dir.rfind('/'));
    std::string sibling = dir + "/../preload/" + kLibName;
    if (exists(sibling)) {
      char real[PATH_MAX];
      *lib = ::realpath(sibling.c_str(), real) ? std::string(real) : sibling;
      return true;
    }
  }
  *lib = std::string(NFSSHIM_INSTALL_LIBDIR) + "/" + kLibName;
  return true;
}

// The ELF identification and machine of a file; false if it is no ELF file.
static bool read_elf_header(const char* path, Elf64_Ehdr* h, std::string* why) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("cannot open '") + path + "': " + std::strerror(errno);
    return false;
  }
  // Elf32_Ehdr is a prefix-compatible smaller header: e_ident, e_type and e_machine
  // sit at the same offsets in both.
  std::memset(h, 0, sizeof *h);
  ssize_t got = ::pread(fd, h, sizeof *h, 0);
  ::close(fd);
  if (got < static_cast<ssize_t>(sizeof(Elf32_Ehdr)) || std::memcmp(h->e_ident, ELFMAG, SELFMAG) != 0) {
    *why = std::string("'") + path + "' is not an ELF file";
    return false;
  }
  return true;
}

bool check_elf_library(const std::string& path, std::string* why) {
  Elf64_Ehdr lib, self;
  if (!read_elf_header(path.c_str(), &lib, why)) return false;
  std::string ignored;
  if (!read_elf_header("/proc/self/exe", &self, &ignored)) return true;  // cannot compare
  if (lib.e_ident[EI_CLASS] != self.e_ident[EI_CLASS] || lib.e_ident[EI_DATA] != self.e_ident[EI_DATA] ||
      lib.e_machine != self.e_machine) {
    *why = "'" + path + "' is an ELF file for another architecture (machine " +
           std::to_string(lib.e_machine) + ", class " + std::to_string(lib.e_ident[EI_CLASS]) +
           "; this system: machine " + std::to_string(self.e_machine) + ", class " +
           std::to_string(self.e_ident[EI_CLASS]) + ")";
    return false;
  }
  if (lib.e_type != ET_DYN) {
    *why = "'" + path + "' is not a shared library (ELF type " + std::to_string(lib.e_type) + ")";
    return false;
  }
  return true;
}

std::string prepend_preload(const std::string& lib, const std::string& existing) {
  // ld.so splits LD_PRELOAD at spaces and colons.
  std::string rest;
  size_t pos = 0;
  while (pos <= existing.size()) {
    size_t end = existing.find_first_of(" :", pos);
    if (end == std::string::npos) end = existing.size();
    std::string item = existing.substr(pos, end - pos);
    if (!item.empty() && item != lib) rest += (rest.empty() ? "" : ":") + item;
    pos = end + 1;
  }
  return rest.empty() ? lib : lib + ":" + rest;
}

}  // namespace nfsshim::tools
