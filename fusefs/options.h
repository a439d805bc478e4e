// Command line and mount options of nfsshim-fuse:
//   nfsshim-fuse SOURCE MOUNTPOINT [-o opt[,opt...]] [-f] [-d] [-s]
// The same shape mount.fuse3 uses for /etc/fstab entries
// ("SOURCE MOUNTPOINT fuse.nfsshim-fuse opts 0 0" runs "nfsshim-fuse SOURCE MOUNTPOINT -o opts").
// Options we do not know are left for libfuse (allow_other, max_read=, ...); libfuse rejects
// the ones it does not know either, before anything is opened or mounted.
#pragma once

#include "fuse_api.h"

#include <string>

namespace nfsshim::fuse {

// mount(8)'s type of our mounts: fuse.SUBTYPE, the subtype parse_options passes to libfuse.
inline constexpr char kFsType[] = "fuse.nfsshim-fuse";

struct Options {
  std::string source;      // directory served (absolute path after parsing)
  std::string mountpoint;  // where it is mounted (may be SOURCE itself)
  // Graveyard directory (-o graveyard=DIR); empty: SOURCE/<graveyard_name from nfsshim.conf>.
  std::string graveyard;

  // Cache settings. Changes made beside the mount (other NFS clients, the backing directory
  // itself) become visible through the mount after at most entry_timeout (names),
  // attr_timeout (size, mode, times) and negative_timeout (names that did not exist).
  // File data is re-read from the backing file at every open unless keep_cache is set.
  double entry_timeout = 1.0;
  double attr_timeout = 1.0;
  double negative_timeout = 0.0;
  bool keep_cache = false;  // keep page cache across opens (only if nobody else writes)
  // Drop the backing file's page cache copy of data our mount's page cache holds
  // (backing_cache.h): the classic path keeps every byte cached twice otherwise.
  bool drop_backing_cache = false;
  bool writeback = false;   // kernel writeback cache (writes reach SOURCE later; off for NFS)
  // Kernel passthrough (passthrough.h): data I/O of open files bypasses the daemon where the
  // kernel offers it (Linux 6.9) and the daemon runs as root; not with writeback. On by
  // default; where it cannot work the classic path serves, logged as a warning only when
  // -o passthrough asked for it (passthrough_asked), else as information.
  bool passthrough = true;
  bool passthrough_asked = false;

  bool splice = true;        // splice for reads and writes
  bool allow_other = true;   // every process on the host sees the mount (the point of it)
  unsigned max_threads = 0;  // worker threads (0: libfuse default)
  unsigned max_idle_threads = 0;
  // Adaptive loop (loop.h): a request running this long with nobody reading adds a reader.
  // 0: libfuse's multi-threaded loop (also chosen by clone_fd and max_idle_threads).
  unsigned stall_us = 100;
  // Adaptive loop: the reader spins up to this long after a request while requests come
  // back to back (loop.h). 0: it always sleeps in read(/dev/fuse).
  unsigned spin_us = 50;
  unsigned read_ahead_kb = 1024;  // kernel readahead for the mount (0: kernel default;
                                  // an nfs:// SOURCE: 4096 unless given)
  // -o read_ahead_kb was given: failing to set it is then a warning, else information
  // (an unprivileged daemon may not write sysfs).
  bool read_ahead_kb_asked = false;
  // nfs:// SOURCE: a file's WRITEs may be answered before the server's reply up to this
  // many KiB in flight (nfs/write_behind.h); 0: each WRITE waits for its NFS WRITE.
  unsigned write_behind_kb = 4096;

  // -o log=, -o log_level= (-d: debug). Empty: `log` and `log_level` of nfsshim.conf (or
  // NFSSHIM_LOG...) if set there, else stderr with -f, syslog otherwise, and info.
  std::string log_target;  // stderr | syslog | file:PATH
  std::string log_level;

  bool foreground = false;
  bool debug = false;
  bool singlethread = false;
  bool clone_fd = false;
  bool show_help = false;
  bool show_version = false;
};

// Parses ARGC/ARGV into OPTS; what libfuse must see (its own -o options) is left in
// FUSE_ARGS, which the caller frees with fuse_opt_free_args. Returns false with a
// message in WHY on bad usage.
bool parse_options(int argc, char** argv, Options* opts, fuse_args* fuse_args_out,
                   std::string* why);

void print_usage(const char* prog);

}  // namespace nfsshim::fuse
