// nfsshim-fuse nfs://HOST/EXPORT?... MOUNTPOINT: start-up of the engine-backed mount. Every
// failure before the mount (bad URL, server unreachable, unknown export, graveyard) prints
// one line naming the problem and exits 1 with nothing mounted.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "loop.h"
#include "nfs/nfs_fs.h"
#include "nfsshim/log.h"
#include "nfsshim/nfs/heap_tuning.h"
#include "passthrough.h"
#include "read_ahead.h"

namespace nfsshim::fuse::nfsfs {
namespace {

int fail(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", prog, msg.c_str());
  SHIM_LOG_ERROR("{}", msg);
  return 1;
}

int open_engine(NfsFs& fs, const nfs::NfsUrl& url, std::string* why) {
  int rv = open_client(url, &fs.client, why);
  if (rv < 0) return rv;
  return open_graveyard(fs, why);
}


// Options that only a local SOURCE uses are accepted (one fstab line may switch between the
// two) but named, so that nobody believes they took effect.
void warn_local_only_options(const Options& opts) {
  std::string unused;
  auto add = [&unused](bool given, const char* what) {
    if (given) unused += (unused.empty() ? "" : ", ") + std::string(what);
  };
  // Close-to-open: every open re-reads the data and writes go out at once (write-behind,
  // write_behind_kb, is the nfs:// path's own).
  add(opts.writeback, "writeback");
  add(opts.keep_cache, "keep_cache");
  add(opts.drop_backing_cache, "drop_backing_cache");  // no backing page cache
  add(opts.negative_timeout > 0, "negative_timeout");  // a missing name is asked again
  if (!unused.empty())
    SHIM_LOG_WARN("-o {}: no effect with an nfs:// SOURCE (they are for a local SOURCE)", unused);
}

// How long a gathered write may wait for the next one: a log's appends come within
// microseconds of each other; a lone write goes out after this.
constexpr std::chrono::microseconds kGatherDelay{10000};

}  // namespace

int run_nfs_mount(const Options& opts, int64_t foreign_max_age_s, fuse_args* args, const char* prog) {
  // Write-behind copies every WRITE's data (up to 1 MiB) and the engines keep it until the
  // COMMIT: with glibc's default thresholds each copy landed in fresh pages (heap_tuning.h).
  if (!nfs::keep_io_buffers_in_heap()) SHIM_LOG_INFO("malloc: cannot raise the mmap and trim thresholds");
  nfs::NfsUrl url;
  std::string why;
  if (nfs::parse_nfs_url(opts.source, &url, &why) < 0) return fail(prog, "SOURCE: " + why);
  NfsFs fs;
  fs.opts = opts;
  fs.foreign_max_age_s = foreign_max_age_s;
  // Each readahead window is split into 1 MiB READs spread over the connections: 4 MiB kept
  // 4 in flight and read 1.1-1.2x faster than 1 MiB through vers=3 and 4.1 mounts, nconnect
  // 1 and 4 (fusefs/README.md).
  if (!opts.read_ahead_kb_asked) fs.opts.read_ahead_kb = 4096;
  fs.graveyard_name = ".graveyard.nfsshim";
  if (!opts.graveyard.empty()) {
    if (opts.graveyard.find('/') != std::string::npos)
      return fail(prog, "graveyard=" + opts.graveyard + ": with an nfs:// SOURCE it is a name in the export root");
    fs.graveyard_name = opts.graveyard;
  }
  if (open_engine(fs, url, &why) < 0) return fail(prog, opts.source + ": " + why);
  fs.nodes = std::make_unique<NodeTable>(fs.client->root());
  fs.wb_budget = uint64_t{opts.write_behind_kb} << 10;
  fs.wb_limit = std::make_unique<WriteBehindLimit>(std::max(1u, request_threads(opts) / 2));
  // Small answered writes that continue each other go out as one WRITE of up to 1 MiB
  // (within write_behind_kb), at the latest kGatherDelay after the first; at most 64
  // batches (64 MiB) wait at once. fusefs/README.md, "Write-behind".
  fs.gather_max = static_cast<size_t>(std::min<uint64_t>(fs.wb_budget, 1 << 20));
  fs.gather = std::make_unique<GatherFlusher>(kGatherDelay, 64);

  struct stat st;
  if (::stat(opts.mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(prog, "MOUNTPOINT '" + opts.mountpoint + "' is not a directory");
  const fuse_lowlevel_ops ops = make_nfs_ops(fs.client->server_locks());
  fuse_session* se = fuse_session_new(args, &ops, sizeof ops, &fs);
  if (!se) return fail(prog, "invalid options (see the message above)");
  fs.se = se;
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    return fail(prog, "cannot install signal handlers");
  }
  if (fuse_session_mount(se, opts.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return fail(prog, "cannot mount on '" + opts.mountpoint + "' (see the message above)");
  }
  // Our /dev/fuse io asks for parallel lookups in one directory (passthrough.h), so that a
  // LOOKUP waiting for the server does not hold up the others there; nothing is passed
  // through. -o nopassthrough keeps libfuse's io (lookups in a directory one at a time).
  std::string io_why;
  if (opts.passthrough && !passthrough::install(se, false, &io_why))
    SHIM_LOG_INFO("parallel lookups: off, {}", io_why);
  if (opts.passthrough_asked)
    SHIM_LOG_WARN("passthrough: off, an nfs:// SOURCE has no local backing files to pass through to");
  warn_local_only_options(opts);
  serve_init_then_read_ahead(se, fs.opts);  // else sequential reads come as 128 KiB READs
  SHIM_LOG_INFO("mounted {} on {} ({}, parallel lookups {})", opts.source, opts.mountpoint,
                fs.client->describe(), passthrough::parallel_dirops() ? "on" : "off");
  int rv = 0;
  if (!opts.foreground) {
    // The engine's loop threads do not survive fork: stop them and start again in the child.
    fs.client.reset();
    if (fuse_daemonize(0) != 0 || open_engine(fs, url, &why) < 0) {
      SHIM_LOG_ERROR("after detaching: {}", why);
      rv = 1;
    }
  }
  if (rv == 0) {
    // Its thread, like the gatherer's, starts only here: threads do not survive the fork.
    fs.unstable = std::make_unique<nfs::UnstableLimit>(size_t(url.max_unstable_mb) << 20,
                                                       std::chrono::seconds(url.commit_secs));
    fs.gather->start([&fs](const std::shared_ptr<Node>& n, int64_t ticket) { send_gathered(fs, n, ticket); });
    rv = run_loop(se, opts);
    fs.lock_waits.stop();  // F_SETLKW waits end (ENOLCK) while /dev/fuse is still open
    SHIM_LOG_INFO("unmounting {} (loop ended: {})", opts.mountpoint, rv);
    fs.gather->stop();  // what no release sent (the daemon stopped with files open)
    fs.unstable->commit_all();  // and their data made stable before the daemon goes
    uint64_t writes, failed, batches, gathered;
    unsigned peak;
    fs.wb_limit->counts(&writes, &peak, &failed);
    fs.gather->counts(&batches, &gathered);
    SHIM_LOG_INFO("write-behind: {} writes answered before the server's reply ({} small ones gathered "
                  "into {} batches), at most {} NFS WRITEs in flight, {} failed",
                  writes + gathered - batches, gathered, batches, peak, failed);
    SHIM_LOG_INFO("writes with their data through a pipe (splice): {}", fs.piped_writes.load());
    nfs::UnstableLimit::Stats us = fs.unstable->stats();
    SHIM_LOG_INFO("unstable data: at most {} KiB kept for COMMIT (max_unstable_mb={}), {} COMMITs to stay "
                  "under it, {} of data older than {} s, {} failed; {} COMMITs in all; {} KiB written "
                  "stably by the server (FILE_SYNC replies: not kept)",
                  us.peak_bytes >> 10, url.max_unstable_mb, us.pressure_commits, us.age_commits,
                  url.commit_secs, us.failed_commits, us.commits, us.stable_bytes >> 10);
    if (rv == SIGTERM || rv == SIGINT || rv == SIGHUP) rv = 0;
  }
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  // Files still buried at unmount (no release came): the reaper of the next start removes
  // them, since this process is then gone.
  return rv == 0 ? 0 : 1;
}

}  // namespace nfsshim::fuse::nfsfs
