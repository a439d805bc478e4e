// The shim's process-wide state: settings, and whether anything is watched at all.
// Lock order (acquire in this order, never the reverse):
//   Watcher::mu_0  ->  Registry::mu_1  ->  the log state's mutex (libshim/src/log)
#pragma once

#include <atomic>

#include "nfsshim/config.h"

namespace nfsshim::preload {

// Settings loaded by the constructor; read-only afterwards.
const Config& config();

// True once the constructor has loaded the config and the shim is enabled.
bool initialized();

// Cheap check run first by every delete/rename wrapper: is any filesystem watched?
// Without configured directories this re-reads the mount table at most once a second
// (a coarse-clock check, no syscall) to notice NFS mounts that came or went.
bool anything_watched();

// Is NAME (a directory entry) a graveyard directory to hide from listings?
bool hidden_name(const char* name);

void init_process();

// Resolves the real mmap family (wrap_mmap.cc); called by init_process.
void resolve_mmap_symbols();

}  // namespace nfsshim::preload
