#pragma once
#include <string>
namespace torture {
// Hostile names, a tree DEPTH deep (components COMPONENT_LEN bytes long) and a directory
// of ENTRIES entries under DIR.
int run_names(const std::string& dir, int depth, size_t component_len, long entries);
}  // namespace torture
