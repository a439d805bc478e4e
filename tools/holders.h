// Which files does any process on this host hold? Reads every /proc/PID/fd and
// /proc/PID/maps: open descriptors and file mappings, however they were made (those of
// one live thread, /proc/PID/task/TID/, where the main thread has exited).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "nfsshim/proc_refs.h"

namespace nfsshim::tools {

struct HolderScan {
  std::vector<pid_t> holder;  // holder[i]: a pid holding KEYS[i], or 0 if none seen
  bool complete = true;       // false if some process could not be inspected
  std::string incomplete_why;
};

// One pass over PROC (normally "/proc") for all KEYS at once. Processes that exit
// during the scan are skipped; one whose fd or maps cannot be read makes the
// result incomplete (then nothing can be said to be unheld).
HolderScan scan_holders(const std::vector<InodeKey>& keys, const char* proc = "/proc");

}  // namespace nfsshim::tools
