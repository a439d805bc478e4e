// Kernel passthrough (FUSE_PASSTHROUGH, Linux 6.9): the kernel reads, writes and maps an
// open file through its backing file itself; the daemon sees only the open and the release.
// That removes the second copy of every byte (caller -> FUSE page cache -> daemon -> backing
// file), which holds the classic path at about half the speed of the backing filesystem.
//
// libfuse has an API for it from 3.17 only (Debian 12 ships 3.14, RHEL 8 3.3). The protocol
// needs three things, which we do ourselves through fuse_session_custom_io (libfuse >= 3.14):
//   - the INIT reply asks for it: FUSE_PASSTHROUGH in flags2 and a max_stack_depth;
//   - a backing file is registered with ioctl(FUSE_DEV_IOC_BACKING_OPEN) on /dev/fuse,
//     which answers a backing id (root only: the kernel asks for CAP_SYS_ADMIN);
//   - the OPEN or CREATE reply carries FOPEN_PASSTHROUGH and that id.
// The custom io reads every request itself (no splice receive), so it knows which request
// a thread is serving when that thread's reply goes out.
//
// Rules the kernel enforces per inode (fs/fuse/iomode.c), kept by op_open.cc: all files
// open at once on one inode use one backing id, and an inode is never open through
// passthrough and through the page cache at the same time (the open would fail with EBUSY
// or ETXTBSY).
#pragma once

#include "fuse_api.h"

#include <cstdint>
#include <string>

namespace nfsshim::fuse::passthrough {

// Why passthrough is not used (MSG): a warning if the user asked for it (-o passthrough),
// information if it was only the default.
void say_off(bool asked, const std::string& msg);

// After fuse_session_mount: routes SE's requests and replies through our io, which asks
// for parallel lookups and, with PASSTHROUGH, for kernel passthrough wherever the kernel
// offers them. False (with WHY) where libfuse is too old.
bool install(fuse_session* se, bool passthrough, std::string* why);

// The kernel offered passthrough in its INIT request and install() asked for it (known
// once INIT was read).
bool kernel_offers();
// We asked for it in the INIT reply: opens may use it.
bool active();
// Our io also asked for FUSE_PARALLEL_DIROPS in the INIT reply (where the kernel offered it,
// whether or not it offered passthrough): lookups in one directory run in parallel.
bool parallel_dirops();

// Registers backing file FD: its id (> 0), or -errno (EPERM without CAP_SYS_ADMIN,
// ELOOP for a SOURCE that is itself stacked, EOPNOTSUPP when the kernel refused). EPERM and
// ELOOP hold for every file of the mount: they turn passthrough off (active() false).
int backing_open(int fd);
void backing_close(int id);

// fuse_reply_open / fuse_reply_create whose reply opens the file through backing id ID
// (0: a plain reply). *CARRIED: the reply went out with the id (false when it could not be
// added; the file is then open through the page cache).
int reply_open(fuse_req_t req, const fuse_file_info* fi, int id, bool* carried);
int reply_create(fuse_req_t req, const fuse_entry_param* e, const fuse_file_info* fi, int id,
                 bool* carried);

}  // namespace nfsshim::fuse::passthrough
