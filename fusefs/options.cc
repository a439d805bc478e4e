#include "options.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nfsshim::fuse {
namespace {

// Whole-number options, parsed here rather than by fuse_opt's sscanf("%u"), which takes
// "-1" for 4294967295 and wraps numbers too big for 32 bits without a word.
struct NumberOption {
  const char* name;  // "name=" is the option
  unsigned Options::*field;
  unsigned max;
  const char* unit;
};

const NumberOption kNumbers[] = {
    {"max_threads", &Options::max_threads, 100000, ""},
    {"max_idle_threads", &Options::max_idle_threads, 100000, ""},
    {"stall_us", &Options::stall_us, 1000000, " microseconds"},
    {"spin_us", &Options::spin_us, 10000, " microseconds"},
    {"read_ahead_kb", &Options::read_ahead_kb, 1u << 20, " KiB"},   // 1 GiB
    {"write_behind_kb", &Options::write_behind_kb, 1u << 18, " KiB"},  // 256 MiB per file
};
constexpr int kNumberCount = static_cast<int>(sizeof kNumbers / sizeof kNumbers[0]);

struct ParseContext {
  Options* opts;
  std::string why;
  int positional = 0;
};

// fuse_opt_parse fills plain C fields; they are copied into Options afterwards.
struct RawOptions {
  ParseContext* ctx;
  char* graveyard;
  char* log_target;
  char* log_level;
  double entry_timeout;
  double attr_timeout;
  double negative_timeout;
  int keep_cache;
  int drop_backing_cache;
  int writeback;
  int passthrough;
  int nosplice;
  int noallow_other;
};

enum Key {
  kForeground,
  kDebug,
  kSingle,
  kCloneFd,
  kHelp,
  kVersion,
  kDrop,
  kNumber,  // kNumber + i: kNumbers[i]
};

#define RAW_OPT(templ, field, value) {templ, offsetof(RawOptions, field), value}

const struct fuse_opt kSpec[] = {
    RAW_OPT("graveyard=%s", graveyard, 0),
    RAW_OPT("log=%s", log_target, 0),
    RAW_OPT("log_level=%s", log_level, 0),
    RAW_OPT("entry_timeout=%lf", entry_timeout, 0),
    RAW_OPT("attr_timeout=%lf", attr_timeout, 0),
    RAW_OPT("negative_timeout=%lf", negative_timeout, 0),
    RAW_OPT("keep_cache", keep_cache, 1),
    RAW_OPT("nokeep_cache", keep_cache, 0),
    RAW_OPT("drop_backing_cache", drop_backing_cache, 1),
    RAW_OPT("nodrop_backing_cache", drop_backing_cache, 0),
    RAW_OPT("writeback", writeback, 1),
    RAW_OPT("nowriteback", writeback, 0),
    RAW_OPT("passthrough", passthrough, 1),
    RAW_OPT("nopassthrough", passthrough, 0),
    RAW_OPT("splice", nosplice, 0),
    RAW_OPT("nosplice", nosplice, 1),
    // allow_other is our default; both words are ours (the last one wins, as for the
    // others) and parse_options passes allow_other on to libfuse once, if wanted.
    RAW_OPT("allow_other", noallow_other, 0),
    RAW_OPT("noallow_other", noallow_other, 1),
    FUSE_OPT_KEY("max_threads=", kNumber + 0),
    FUSE_OPT_KEY("max_idle_threads=", kNumber + 1),
    FUSE_OPT_KEY("stall_us=", kNumber + 2),
    FUSE_OPT_KEY("spin_us=", kNumber + 3),
    FUSE_OPT_KEY("read_ahead_kb=", kNumber + 4),
    FUSE_OPT_KEY("write_behind_kb=", kNumber + 5),
    FUSE_OPT_KEY("-f", kForeground),
    FUSE_OPT_KEY("foreground", kForeground),
    FUSE_OPT_KEY("-d", kDebug),
    FUSE_OPT_KEY("debug", kDebug),
    FUSE_OPT_KEY("-s", kSingle),
    FUSE_OPT_KEY("clone_fd", kCloneFd),
    FUSE_OPT_KEY("-h", kHelp),
    FUSE_OPT_KEY("--help", kHelp),
    FUSE_OPT_KEY("-V", kVersion),
    FUSE_OPT_KEY("--version", kVersion),
    // fstab words that mount(8) or mount.fuse3 may hand on and that mean nothing here.
    FUSE_OPT_KEY("defaults", kDrop),
    FUSE_OPT_KEY("_netdev", kDrop),
    FUSE_OPT_KEY("nofail", kDrop),
    FUSE_OPT_KEY("auto", kDrop),
    FUSE_OPT_KEY("noauto", kDrop),
    FUSE_OPT_KEY("user", kDrop),
    FUSE_OPT_KEY("users", kDrop),
    FUSE_OPT_KEY("nouser", kDrop),
    FUSE_OPT_END,
};

#undef RAW_OPT

// "name=N" into its field: digits only, at most the option's max.
bool set_number(const NumberOption& o, const char* arg, Options* opts, std::string* why) {
  const char* v = std::strchr(arg, '=') + 1;
  const std::string range = std::string(o.name) + " must be a whole number from 0 to " +
                            std::to_string(o.max) + o.unit;
  unsigned long long n = 0;
  bool ok = *v != '\0';
  for (const char* c = v; ok && *c; ++c) {
    ok = *c >= '0' && *c <= '9';
    if (ok) n = n * 10 + static_cast<unsigned>(*c - '0');
    ok = ok && n <= o.max;
  }
  if (!ok) {
    *why = range + " (got '" + v + "')";
    return false;
  }
  opts->*o.field = static_cast<unsigned>(n);
  if (o.field == &Options::read_ahead_kb) opts->read_ahead_kb_asked = true;
  return true;
}

// Returns 0 to drop ARG, 1 to keep it for libfuse, -1 on error.
int on_option(void* data, const char* arg, int key, struct fuse_args*) {
  ParseContext* st = static_cast<RawOptions*>(data)->ctx;
  Options* o = st->opts;
  switch (key) {
    case kForeground: o->foreground = true; return 0;
    case kDebug: o->debug = true; o->foreground = true; return 1;  // libfuse prints requests too
    case kSingle: o->singlethread = true; return 0;
    case kCloneFd: o->clone_fd = true; return 0;
    case kHelp: o->show_help = true; return 0;
    case kVersion: o->show_version = true; return 0;
    case kDrop: return 0;
    case FUSE_OPT_KEY_NONOPT:
      if (st->positional == 0) o->source = arg;
      else if (st->positional == 1) o->mountpoint = arg;
      else {
        st->why = std::string("unexpected argument '") + arg + "' (only SOURCE and MOUNTPOINT)";
        return -1;
      }
      ++st->positional;
      return 0;
    default:
      if (key >= kNumber && key < kNumber + kNumberCount)
        return set_number(kNumbers[key - kNumber], arg, o, &st->why) ? 0 : -1;
      return 1;  // a libfuse option: it validates it
  }
}

// "/a/b/" -> absolute and without a trailing slash; realpath when it exists.
std::string absolute(const std::string& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (r) {
    std::string s(r);
    std::free(r);
    return s;
  }
  return p;
}

}  // namespace

bool parse_options(int argc, char** argv, Options* opts, fuse_args* out, std::string* why) {
  ParseContext ctx;
  ctx.opts = opts;
  RawOptions raw{};
  raw.ctx = &ctx;
  raw.entry_timeout = opts->entry_timeout;
  raw.attr_timeout = opts->attr_timeout;
  raw.negative_timeout = opts->negative_timeout;
  raw.keep_cache = opts->keep_cache;
  raw.drop_backing_cache = opts->drop_backing_cache;
  raw.writeback = opts->writeback;
  raw.passthrough = -1;  // neither word given
  raw.nosplice = !opts->splice;
  raw.noallow_other = !opts->allow_other;

  *out = FUSE_ARGS_INIT(argc, argv);
  // fuse_opt_parse writes the templates into RAW and hands RAW to on_option.
  int rv = fuse_opt_parse(out, &raw, kSpec, on_option);
  // The strings libfuse copied are ours to free, also when parsing failed later on.
  auto take = [](char*& s, std::string* dst) {
    if (s) *dst = s;
    std::free(s);
    s = nullptr;
  };
  bool level_given = raw.log_level != nullptr;
  take(raw.graveyard, &opts->graveyard);
  take(raw.log_target, &opts->log_target);
  take(raw.log_level, &opts->log_level);
  if (rv != 0) {
    *why = ctx.why.empty() ? "bad option (see the message above)" : ctx.why;
    return false;
  }
  opts->entry_timeout = raw.entry_timeout;
  opts->attr_timeout = raw.attr_timeout;
  opts->negative_timeout = raw.negative_timeout;
  opts->keep_cache = raw.keep_cache != 0;
  opts->drop_backing_cache = raw.drop_backing_cache != 0;
  opts->writeback = raw.writeback != 0;
  if (raw.passthrough >= 0) {
    opts->passthrough = raw.passthrough == 1;
    opts->passthrough_asked = raw.passthrough == 1;
  }
  opts->splice = raw.nosplice == 0;
  opts->allow_other = raw.noallow_other == 0;
  if (opts->debug) opts->log_level = "debug";

  if (opts->show_help || opts->show_version) return true;
  for (double t : {opts->entry_timeout, opts->attr_timeout, opts->negative_timeout}) {
    if (!(t >= 0.0) || t > 86400.0) {
      *why = "timeouts must be between 0 and 86400 seconds";
      return false;
    }
  }
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "warning", "error",
                                        "critical", "off"};
  bool level_ok = !level_given && opts->log_level.empty();  // not given: nfsshim.conf's
  for (const char* l : kLevels) level_ok = level_ok || opts->log_level == l;
  if (!level_ok) {
    *why = "log_level must be one of trace, debug, info, warn, error, critical, off (got '" +
           opts->log_level + "')";
    return false;
  }
  if (!opts->log_target.empty() && opts->log_target != "stderr" && opts->log_target != "syslog" &&
      opts->log_target.compare(0, 6, "file:/") != 0) {
    // Absolute: the file is opened for each line, and the daemon detached is in "/".
    *why = "log must be stderr, syslog or file:/ABSOLUTE/PATH (got '" + opts->log_target + "')";
    return false;
  }
  if (opts->source.empty()) {
    *why = "missing SOURCE and MOUNTPOINT";
    return false;
  }
  if (opts->mountpoint.empty()) {
    *why = "missing MOUNTPOINT";
    return false;
  }
  if (opts->source.rfind("nfs://", 0) != 0) opts->source = absolute(opts->source);  // nfs:// is a URL
  opts->mountpoint = absolute(opts->mountpoint);
  if (opts->allow_other && fuse_opt_add_arg(out, "-oallow_other") != 0) {
    *why = "out of memory";
    return false;
  }
  // The daemon runs every backing call with its own (root) rights: the kernel must check
  // the caller's permissions against the attributes we report.
  if (fuse_opt_add_arg(out, "-odefault_permissions") != 0) {
    *why = "out of memory";
    return false;
  }
  std::string fsname = "-ofsname=" + opts->source;
  std::string escaped;  // libfuse splits -o on ','; a ',' in the path must be escaped
  for (char c : fsname) {
    if (c == ',' || c == '\\') escaped += '\\';
    escaped += c;
  }
  if (fuse_opt_add_arg(out, escaped.c_str()) != 0 ||
      fuse_opt_add_arg(out, "-osubtype=nfsshim-fuse") != 0) {
    *why = "out of memory";
    return false;
  }
  return true;
}

void print_usage(const char* prog) {
  std::printf(
      "usage: %s SOURCE MOUNTPOINT [-o opt[,opt...]] [-f] [-d] [-s]\n"
      "\n"
      "Serves directory SOURCE at MOUNTPOINT (may be the same path) and keeps unlinked or\n"
      "renamed-over files that are still open in SOURCE's graveyard until their last close.\n"
      "SOURCE may also be nfs://HOST[:PORT]/EXPORT[?vers=3|4.1&nconnect=N&...]: the daemon\n"
      "is then its own NFS client (keys: nfsshim-fuse(8)).\n"
      "\n"
      "nfsshim-fuse options:\n"
      "    -o graveyard=DIR          graveyard directory (default SOURCE/.graveyard.nfsshim)\n"
      "    -o entry_timeout=SECS     name cache timeout (default 1)\n"
      "    -o attr_timeout=SECS      attribute cache timeout (default 1)\n"
      "    -o negative_timeout=SECS  cache of missing names (default 0)\n"
      "    -o keep_cache             keep file data cached across opens (default off)\n"
      "    -o writeback              kernel writeback cache (default off)\n"
      "    -o drop_backing_cache     data cached once: drop SOURCE's copy of what the mount's\n"
      "                              page cache holds (classic path; default off)\n"
      "                              (these four: no effect with an nfs:// SOURCE)\n"
      "    -o passthrough            reads and writes of open files bypass the daemon where the\n"
      "                              kernel offers it (Linux 6.9, daemon as root; default on,\n"
      "                              a warning where it cannot work; also lets lookups in one\n"
      "                              directory run in parallel); nopassthrough: never\n"
      "    -o nosplice               no splice for data (default: splice)\n"
      "    -o noallow_other          only the mounting user sees the mount\n"
      "    -o max_threads=N          worker threads (default 10, at most 100000)\n"
      "    -o max_idle_threads=N     idle worker threads kept (libfuse's loop; default: libfuse's)\n"
      "    -o stall_us=N             a request running N us with nobody reading starts another\n"
      "                              thread (default 100, at most 1000000); 0: libfuse's loop\n"
      "    -o spin_us=N              the reading thread stays awake up to N us after a request\n"
      "                              while requests come back to back (default 50; 0: sleeps)\n"
      "    -o read_ahead_kb=N        kernel readahead of the mount in KiB (default 1024, nfs://\n"
      "                              SOURCE 4096; at most 1048576, 0: kernel's)\n"
      "    -o write_behind_kb=N      nfs:// SOURCE: KiB of a file's WRITEs answered before the\n"
      "                              server's reply (default 4096, at most 262144; 0: each WRITE\n"
      "                              waits); a failed one is reported at the next flush or fsync;\n"
      "                              small contiguous ones go out together (1 MiB, 10 ms at most)\n"
      "    -o log=stderr|syslog|file:/PATH  (default: log of nfsshim.conf, else stderr with\n"
      "                              -f, syslog otherwise; its stderr means syslog detached)\n"
      "    -o log_level=LEVEL        trace, debug, info, warn, error (default: log_level of\n"
      "                              nfsshim.conf, else info)\n"
      "    -f                        stay in the foreground\n"
      "    -d                        debug (implies -f)\n"
      "    -s                        single-threaded (one caller's metadata loop may run faster;\n"
      "                              serializes all callers' NFS round trips)\n"
      "\n",
      prog);
}

}  // namespace nfsshim::fuse
