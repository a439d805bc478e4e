// Names of graveyard entries. One format shared by the preload, the FUSE daemon and
// `nfsshim gc`:
//
//   KIND~HOST~BOOT[.PIDNS]~PID~START~SEQ
//
// KIND is 'b' for a file we buried through the kernel (the preload, a local SOURCE's
// daemon: removed when its owner's last reference goes, or when the owner is found dead),
// 'n' for one an nfs:// daemon buried with its own NFS client (the same rules; the daemon
// reaps kernel-made 'b' entries only at the foreign age, fusefs/nfs/nfs_graveyard.cc), or 's' for a silly-rename
// leftover we swept out of a directory so that rmdir could succeed (somebody else may
// hold it: removed only after the foreign age). HOST contains no '~'; all other fields are numbers (BOOT and
// PIDNS hex). PIDNS (the pid namespace's inode) is in names made since 2026-12-04; a name
// without it is judged as if its owner shared the reaper's pid namespace, as before.
// BOOT "0" (kUnknownBoot) is an owner whose boot id could not be read: judged like
// another host's, whoever reaps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nfsshim/identity.h"

namespace nfsshim {

struct EntryName {
  char kind = 'b';
  Identity owner;
  uint64_t seq = 0;

  std::string format() const;
  static std::optional<EntryName> parse(std::string_view name);
};

}  // namespace nfsshim
