// Heap settings for a process that moves NFS data through the engines directly (the engine
// benchmark, nfsshim-fuse with an nfs:// SOURCE). Not for the preload: it never changes its
// host's heap. nfsshim-fuse takes it since write-behind copies every WRITE's data: 1 GiB of
// 1 MiB dd writes through a vers=3/4.1 mount (nconnect=4) cost the daemon 0.90-0.98 s of
// CPU instead of 1.16-2.0 s and took 1.25-1.36 s instead of 1.46-2.17 s; 4 writers of
// 256 MiB: 1.60-1.85 against 1.84-1.95 s/GiB; peak RSS the same (266-295 MB), but memory
// freed stays with the process (idle 277-286 MB against 219-275). Before write-behind it
// saved no measurable daemon CPU there.
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
