// Heap settings for a process that moves NFS data through the engines (nfsshim-fuse with an
// nfs:// source, the engine benchmark). Not for the preload: it never changes its host's heap.
#pragma once

namespace nfsshim::nfs {

// Every WRITE and READ payload (1 MiB) passes through buffers that are malloc'd and freed
// per call: the UnstableWriter's retained copy, libnfs's encoded request, the NFSv4.1
// compound. glibc serves such sizes with mmap or gives them back to the kernel when freed
// (trim threshold), so each call touches fresh pages: a page fault and a cleared page per
// 4 KiB. perf on a v3 sequential write put 42% of the client's CPU there. This keeps
// blocks up to 32 MiB in the heap and freed memory up to 64 MiB for reuse (M_MMAP_THRESHOLD,
// M_TRIM_THRESHOLD). Call once, early in main. Returns false if glibc refused either.
bool keep_io_buffers_in_heap();

}  // namespace nfsshim::nfs
