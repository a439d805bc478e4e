// Heap settings for a process that moves NFS data through the engines directly (the engine
// benchmark, a tool embedding an engine). Not for the preload: it never changes its host's
// heap. Not used by nfsshim-fuse: through a FUSE mount (4 writers of 400 MiB with fsync,
// then readers; nconnect=4) it saved no measurable daemon CPU (3.07-3.31 s vs 2.76-3.44 s
// for 3.2 GiB) and kept more memory (peak RSS 339-424 vs 279-315 MB, idle 339-402 vs
// 152-237 MB), on a loaded machine.
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
