#pragma once
#include <string>
namespace torture {
// A file replaced by rename(2) in a loop while READERS threads open and read it; see replace.cc.
int run_replace(const std::string& dir, double seconds, int readers);
}  // namespace torture
