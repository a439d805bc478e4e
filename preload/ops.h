// The decisions behind the delete and rename wrappers. Each returns kPass when the
// plain libc call should simply run (not ours, or our machinery cannot help), or the
// result of the operation it performed: 0, or -errno.
#pragma once

namespace nfsshim::preload {

inline constexpr int kPass = 1;

// unlinkat(DIRFD, PATH, 0) of a watched regular file: bury it instead.
int bury_unlink(int dirfd, const char* path);
// renameat(OLDDIR, OLDPATH, NEWDIR, NEWPATH) onto a watched regular file: bury the
// target, then rename (and put the target back if the rename fails).
int bury_rename(int olddir, const char* oldpath, int newdir, const char* newpath);
// After rmdir(DIRFD/PATH) failed with ENOTEMPTY: move .nfs*/.fuse_hidden* leftovers
// into the graveyard and try again. Returns 0 on success, kPass otherwise (the caller
// then reports the original failure).
int sweep_rmdir(int dirfd, const char* path);

}  // namespace nfsshim::preload
