// Finding the preload library and checking that this machine can load it.
#pragma once

#include <string>

namespace nfsshim::tools {

// Where libnfsshim-preload.so is, in this order: $NFSSHIM_PRELOAD_LIB (made absolute;
// false with WHY if it does not exist); the build tree next to this binary
// (<build>/tools/nfsshim -> <build>/preload/); the installed library directory. Sets
// LIB to the first that exists (or the installed path).
bool find_preload_library(std::string* lib, std::string* why);

// True if PATH is a shared object (ELF ET_DYN) of this process's class, byte order
// and machine, judged by comparing ELF headers with /proc/self/exe.
bool check_elf_library(const std::string& path, std::string* why);

// LD_PRELOAD with LIB in front of EXISTING (kept, not replaced; LIB not repeated).
std::string prepend_preload(const std::string& lib, const std::string& existing);

}  // namespace nfsshim::tools
