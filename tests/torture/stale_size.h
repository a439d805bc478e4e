#pragma once
#include <string>
namespace torture {
// A growing file mapped and touched at its end while its directory is listed; see stale_size.cc.
// LIST false: no listing. SIZE_BY_FSTAT false: the mapping's size is what the writer's
// pwrite calls returned, not fstat (shows which of the two gives the stale size).
int run_stale_size(const std::string& dir, double seconds, bool list, bool size_by_fstat);
}  // namespace torture
