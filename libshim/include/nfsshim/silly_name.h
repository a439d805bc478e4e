// Names that kernels and FUSE libraries give a file unlinked while open, so that rmdir can
// tell their leftovers from the user's own files (".nfsrc" is a user's file).
#pragma once

namespace nfsshim {

// The Linux NFS client's silly rename (fs/nfs/dir.c): ".nfs" + 16 hex digits of the file
// id + 8 of a counter.
bool is_nfs_silly_name(const char* name);
// libfuse's high-level API (hide_node): ".fuse_hidden" + 8 hex digits of the inode + 8 of
// a counter.
bool is_fuse_hidden_name(const char* name);

}  // namespace nfsshim
