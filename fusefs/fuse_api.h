// The one place that picks the libfuse API level. NFSSHIM_LIBFUSE_VERSION comes from
// pkg-config (MAJOR*100+MINOR): FUSE_VERSION in the headers says 32 for 3.2..3.9.
#pragma once

#ifndef NFSSHIM_LIBFUSE_VERSION
#error "NFSSHIM_LIBFUSE_VERSION must be set by the build (fusefs/CMakeLists.txt)"
#endif

#if NFSSHIM_LIBFUSE_VERSION >= 312
#define FUSE_USE_VERSION 312  // opaque fuse_loop_cfg_* for fuse_session_loop_mt
#else
#define FUSE_USE_VERSION 32   // public struct fuse_loop_config (RHEL 8: libfuse 3.3)
#endif

#include <fuse_lowlevel.h>

// copy_file_range arrived in libfuse 3.4, lseek in 3.8.
#define NFSSHIM_HAVE_COPY_FILE_RANGE (NFSSHIM_LIBFUSE_VERSION >= 304)
#define NFSSHIM_HAVE_LSEEK (NFSSHIM_LIBFUSE_VERSION >= 308)
// Kernel passthrough (FUSE_PASSTHROUGH, Linux 6.9) through our own io on /dev/fuse, which
// needs fuse_session_custom_io (libfuse 3.14; passthrough.h).
#define NFSSHIM_HAVE_PASSTHROUGH (NFSSHIM_LIBFUSE_VERSION >= 314)
