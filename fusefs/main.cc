// nfsshim-fuse SOURCE MOUNTPOINT [-o options] [-f]
//
// Start-up order: options (libfuse validates its own in fuse_session_new), SOURCE opened
// before mounting (so MOUNTPOINT may be SOURCE itself), graveyard opened and reaped,
// /dev/fuse and MOUNTPOINT checked, mount, detach, serve. Any failure before the mount
// prints one line naming the problem and exits 1 with nothing mounted.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "fs.h"
#include "fuse_api.h"
#include "nfs/nfs_fs.h"
#include "loop.h"
#include "nfsshim/config.h"
#include "nfsshim/graveyard.h"
#include "nfsshim/identity.h"
#include "nfsshim/log.h"
#include "nfsshim/mount_table.h"
#include "nfsshim/stats_file.h"
#include "nfsshim/sys.h"
#include "ops_table.h"
#include "options.h"
#include "passthrough.h"
#include "read_ahead.h"

extern char** environ;

namespace nfsshim::fuse {
namespace {

constexpr const char kProg[] = "nfsshim-fuse";

// A start-up error: on stderr (the user is waiting for it) and in the log.
int fail(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kProg, msg.c_str());
  SHIM_LOG_ERROR("{}", msg);
  return 1;
}

std::string errstr(int err) { return std::strerror(err < 0 ? -err : err); }

// Opens SOURCE as an O_PATH directory descriptor, after checking that it can be listed.
int open_source(const std::string& source, sys::Fd* out, struct stat* st, std::string* why) {
  sys::Fd probe(sys::openat(AT_FDCWD, source.c_str(), O_RDONLY | O_DIRECTORY));
  if (!probe.valid()) {
    *why = "SOURCE '" + source + "': " + errstr(probe.get());
    return probe.get();
  }
  sys::Fd fd(sys::openat(AT_FDCWD, source.c_str(), O_PATH | O_DIRECTORY));
  if (!fd.valid() || sys::fstat(fd.get(), st) != 0) {
    *why = "SOURCE '" + source + "': " + errstr(fd.valid() ? errno : fd.get());
    return -EIO;
  }
  *out = std::move(fd);
  return 0;
}

bool check_mountpoint(const std::string& mnt, std::string* why) {
  struct stat st;
  if (::stat(mnt.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOTCONN)
      *why = "MOUNTPOINT '" + mnt + "' is a FUSE mount whose daemon is gone; run 'fusermount3 -u -z " +
             mnt + "' first";
    else
      *why = "MOUNTPOINT '" + mnt + "': " + errstr(e);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *why = "MOUNTPOINT '" + mnt + "' is not a directory";
    return false;
  }
  for (const Mount& m : read_mountinfo()) {
    if (m.point == mnt && m.fstype == kFsType) {
      *why = "MOUNTPOINT '" + mnt + "' is in use: already mounted by nfsshim-fuse (source " +
             m.source + ")";
      return false;
    }
  }
  return true;
}

bool check_dev_fuse(std::string* why) {
  sys::Fd fd(sys::openat(AT_FDCWD, "/dev/fuse", O_RDWR));
  if (!fd.valid()) {
    *why = "cannot open /dev/fuse: " + errstr(fd.get()) +
           " (is the fuse module loaded, and may we open the device?)";
    return false;
  }
  struct stat st;
  if (sys::fstat(fd.get(), &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(10, 229)) {
    *why = "/dev/fuse is not the FUSE device (character device 10:229)";
    return false;
  }
  return true;
}

// Opens the graveyard (creating it) and reaps the entries of dead owners, e.g. of a
// previous daemon killed with -9.
bool open_graveyard(Fs& fs, int source_fd, const struct stat& source_st, const Config& cfg,
                    std::string* why) {
  std::string dir = fs.opts.graveyard;
  sys::Fd parent;
  std::string name;
  if (dir.empty()) {
    parent.reset(sys::openat(source_fd, ".", O_PATH | O_DIRECTORY));
    name = cfg.graveyard_name;
  } else {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    size_t slash = dir.rfind('/');
    std::string pdir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
    name = slash == std::string::npos ? dir : dir.substr(slash + 1);
    // Relative paths are relative to SOURCE.
    parent.reset(sys::openat(source_fd, pdir.c_str(), O_PATH | O_DIRECTORY));
    if (!parent.valid()) {
      *why = "graveyard '" + fs.opts.graveyard + "': " + errstr(parent.get());
      return false;
    }
  }
  struct stat pst;
  if (!parent.valid() || sys::fstat(parent.get(), &pst) != 0) {
    *why = "graveyard: cannot open its parent directory";
    return false;
  }
  if (pst.st_dev != source_st.st_dev) {
    *why = "graveyard '" + fs.opts.graveyard +
           "' is on another filesystem than SOURCE (a rename into it would fail)";
    return false;
  }
  int rv = Graveyard::open(parent.get(), name, ::geteuid(), true, &fs.graveyard, why);
  if (rv < 0) {
    *why = "graveyard: " + *why;
    return false;
  }
  struct stat gst;
  if (sys::fstatat(parent.get(), name.c_str(), &gst, AT_SYMLINK_NOFOLLOW) != 0) {
    *why = "graveyard: cannot stat '" + name + "'";
    return false;
  }
  fs.graveyard_key = key_of(gst);
  fs.graveyard_parent_key = key_of(pst);
  fs.graveyard_name = name;

  auto plan = fs.graveyard->plan(self_identity(), cfg.foreign_max_age_s, std::time(nullptr));
  ReapStats rs = fs.graveyard->execute(plan);
  SHIM_LOG_INFO("graveyard {}: reaped {} entries of dead owners, kept {}, failed {}", name,
                rs.removed, rs.kept, rs.failed);
  return true;
}

// The daemon keeps one O_PATH descriptor per inode the kernel knows (fs.h): the usual soft
// limit of 1024 would make the ~1000th file of a mount fail with EMFILE. Take the hard limit.
void raise_fd_limit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

int run(int argc, char** argv) {
  raise_fd_limit();
  Fs fs;
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  std::string why;
  struct ArgsFree {
    fuse_args* a;
    ~ArgsFree() { fuse_opt_free_args(a); }
  } args_free{&args};
  if (!parse_options(argc, argv, &fs.opts, &args, &why)) {
    std::fprintf(stderr, "%s: %s\n", kProg, why.c_str());
    std::fprintf(stderr, "usage: %s SOURCE MOUNTPOINT [-o opt[,opt...]] [-f]   (--help for more)\n",
                 kProg);
    return 1;
  }
  if (fs.opts.show_help) {
    print_usage(kProg);
    fuse_lowlevel_help();
    return 0;
  }
  if (fs.opts.show_version) {
    std::printf("%s %s, libfuse %s (built against %d.%d)\n", kProg, "0.1.0", fuse_pkgversion(),
                NFSSHIM_LIBFUSE_VERSION / 100, NFSSHIM_LIBFUSE_VERSION % 100);
    return 0;
  }

  std::vector<ConfigError> cfg_errors;
  Config cfg = load_config(environ, &cfg_errors);
  // -o log= and -o log_level= win; then the settings file and NFSSHIM_LOG...; then our own
  // defaults, which differ from the preload's (stderr is gone once detached; the mount's
  // start and end are worth an info line). The file's "log = stderr" is the preload's
  // choice as much as ours: detached, it means syslog, or every line would be lost.
  const bool cfg_stderr = cfg.is_given("log") && cfg.log_target == "stderr" && !fs.opts.foreground;
  std::string target = !fs.opts.log_target.empty() ? fs.opts.log_target
                       : cfg.is_given("log") && !cfg_stderr ? cfg.log_target
                       : fs.opts.foreground                 ? "stderr"
                                                            : "syslog";
  std::string level = !fs.opts.log_level.empty() ? fs.opts.log_level
                      : cfg.is_given("log_level") ? cfg.log_level
                                                  : "info";
  if (!log::init(kProg, target, level, &why)) std::fprintf(stderr, "%s: %s\n", kProg, why.c_str());
  for (const auto& e : cfg_errors) SHIM_LOG_WARN("config: {}", e.str());
  // SOURCE nfs://...: the direct NFS engine serves the mount (fusefs/nfs/).
  if (nfsfs::is_nfs_source(fs.opts.source))
    return nfsfs::run_nfs_mount(fs.opts, cfg.foreign_max_age_s, &args, kProg);

  // Backing calls must create with exactly the mode the kernel sent (it applied the umask).
  ::umask(0);
  fs.uid = ::geteuid();
  fs.gid = ::getegid();

  // libfuse checks its options here, before anything is opened or mounted.
  const fuse_lowlevel_ops ops = make_ops();
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, &fs);
  if (!se) return fail("invalid options (see the message above)");
  struct SessionFree {
    fuse_session* se;
    ~SessionFree() { fuse_session_destroy(se); }
  } se_free{se};

  sys::Fd source_fd;
  struct stat source_st;
  if (open_source(fs.opts.source, &source_fd, &source_st, &why) < 0) return fail(why);
  if (!check_mountpoint(fs.opts.mountpoint, &why)) return fail(why);
  if (!check_dev_fuse(&why)) return fail(why);
  if (!open_graveyard(fs, source_fd.get(), source_st, cfg, &why)) return fail(why);
  struct statfs sfs;
  fs.backing_nfs = ::fstatfs(source_fd.get(), &sfs) == 0 && sfs.f_type == kNfsSuperMagic;
  fs.stable_inums = !fs.backing_nfs && local_fs_type(sfs.f_type);
  fs.source_dev = source_st.st_dev;
  fs.inodes = std::make_unique<InodeTable>(std::move(source_fd), source_st);

  if (fuse_set_signal_handlers(se) != 0) return fail("cannot install signal handlers");
  if (fuse_session_mount(se, fs.opts.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    return fail("cannot mount on '" + fs.opts.mountpoint + "' (see the message above)");
  }
  // Passthrough is asked for in the INIT reply: our io must be in place before INIT is read.
  if (fs.opts.passthrough) {
    std::string pt_why;
    if (fs.opts.writeback)
      passthrough::say_off(fs.opts.passthrough_asked, "the kernel allows none with the writeback cache");
    else if (!passthrough::install(se, true, &pt_why))
      passthrough::say_off(fs.opts.passthrough_asked, pt_why);
  }
  serve_init_then_read_ahead(se, fs.opts);
  SHIM_LOG_INFO("mounted {} on {} ({}; entry_timeout {}s, attr_timeout {}s, keep_cache {}, "
                "drop_backing_cache {}, writeback {}, passthrough {}, parallel lookups {})",
                fs.opts.source, fs.opts.mountpoint, fs.backing_nfs ? "NFS" : "not NFS",
                fs.opts.entry_timeout, fs.opts.attr_timeout, fs.opts.keep_cache ? "on" : "off",
                fs.opts.drop_backing_cache ? "on" : "off", fs.opts.writeback ? "on" : "off",
                passthrough::active() ? "on" : "off", passthrough::parallel_dirops() ? "on" : "off");

  // The mount exists now: detach (the parent exits 0 once the child is ready).
  if (fuse_daemonize(fs.opts.foreground) != 0) {
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    return fail("cannot detach from the terminal");
  }
  // After the fork of daemonize: the counters file is named by the daemon's own pid.
  // NFSSHIM_STATS_DIR (or stats_dir in /etc/nfsshim.conf) says where, as for the preload.
  {
    std::vector<ConfigError> ignored;
    std::string stats_why;
    if (publish_counters(StatsKind::fuse, load_config(environ, &ignored).stats_dir, &stats_why) < 0)
      SHIM_LOG_INFO("counters not published for `nfsshim stat`: {}", stats_why);
  }
  int rv = run_loop(se, fs.opts);
  // libfuse's signal handlers end the loop with the signal number as its result.
  if (rv == SIGTERM || rv == SIGINT || rv == SIGHUP) {
    SHIM_LOG_INFO("unmounting {} (signal {})", fs.opts.mountpoint, rv);
    rv = 0;
  } else {
    SHIM_LOG_INFO("unmounting {} (loop ended: {})", fs.opts.mountpoint, rv);
  }
  SHIM_LOG_INFO("writes with their data through a pipe (splice): {}", fs.piped_writes.load());
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  // Nobody can reach an open file through the mount any more: no entry needs to wait.
  drop_all_buried(fs);
  return rv == 0 ? 0 : 1;
}

}  // namespace
}  // namespace nfsshim::fuse

int main(int argc, char** argv) {
  try {
    return nfsshim::fuse::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nfsshim-fuse: %s\n", e.what());
    return 1;
  }
}
