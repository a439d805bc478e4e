// nfsshim gc: reap graveyard entries (and optionally silly-rename leftovers) that
// nobody can still need, and the stats files of dead processes.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cli.h"
#include "gc.h"

namespace nfsshim::tools {

static const char kGcHelp[] =
    "usage: nfsshim gc [--dry-run] [--max-age AGE] [--silly [--proc DIR]] [PATH...]\n"
    "\n"
    "For each PATH (a mount root or watched directory holding .graveyard.nfsshim, or a\n"
    "graveyard directory itself) removes the entries whose owner process on this host\n"
    "is gone and, once older than AGE, the entries of other hosts or boots and swept\n"
    "silly-rename leftovers. An entry whose owner is alive is never touched. As root\n"
    "all users' subdirectories are reaped, otherwise only your own. Stats files of dead\n"
    "processes are removed from the stats directory (nfsshim.conf(5): stats_dir).\n"
    "\n"
    "  --dry-run       say what would be removed, remove nothing\n"
    "  --max-age AGE   e.g. 3600, 90m, 12h, 7d (default: foreign_max_age, 7d)\n"
    "  --silly         also remove the NFS client's .nfsXXXX silly-rename files under\n"
    "                  PATH (same filesystem, no symlinks followed) older than AGE that\n"
    "                  no process on this host holds open or mapped (if some process\n"
    "                  cannot be inspected, nothing is removed)\n"
    "  --proc DIR      the proc filesystem to search for holders (default /proc; e.g.\n"
    "                  /host/proc in a container that sees the host's processes there)\n"
    "\n"
    "Prints one line per entry: 'removed:', 'would remove:', 'kept:' or 'failed:' (also\n"
    "for a PATH that cannot be opened; the other PATHs are still reaped).\n"
    "exit status: 0 done; 1 some removals failed or some PATH could not be opened;\n"
    "2 bad arguments or unreadable --proc (nothing changed).\n";

int cmd_gc(const std::vector<std::string>& args) {
  Config cfg = load_tool_config();
  GcOptions opt;
  opt.max_age_s = cfg.foreign_max_age_s;
  bool silly = false;
  std::vector<std::string> paths;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.empty() || a[0] != '-') {
      paths.push_back(a);
    } else if (is_help(a)) {
      std::fputs(kGcHelp, stdout);
      return kExitOk;
    } else if (a == "--") {
      options_done = true;
    } else if (a == "--dry-run" || a == "-n") {
      opt.dry_run = true;
    } else if (a == "--silly") {
      silly = true;
    } else if (a == "--proc") {
      if (i + 1 >= args.size()) return usage_error("gc", "--proc needs a DIR");
      opt.proc = args[++i];
    } else if (a == "--max-age" || a.rfind("--max-age=", 0) == 0) {
      std::string v;
      if (a == "--max-age") {
        if (i + 1 >= args.size()) return usage_error("gc", "--max-age needs a duration");
        v = args[++i];
      } else {
        v = a.substr(10);
      }
      if (!parse_duration(v, &opt.max_age_s))
        return usage_error("gc", "bad --max-age '" + v + "': expected a duration such as 3600, 90m, 12h or 7d");
    } else {
      return usage_error("gc", "unknown option '" + a + "'");
    }
  }
  if (silly && paths.empty()) return usage_error("gc", "--silly needs a PATH to walk");
  if (::access(opt.proc.c_str(), R_OK | X_OK) != 0)
    return usage_error("gc", "cannot read --proc '" + opt.proc + "'");
  opt.now = std::time(nullptr);
  GcResult total;
  for (const auto& p : paths) {
    // A PATH that cannot be opened (gone, or root squashed on a 0750 directory) is one
    // failure: the daily run over every NFS mount goes on with the others.
    int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      report("failed", p, std::string("cannot open directory: ") + std::strerror(errno));
      ++total.failed;
      continue;
    }
    ::close(fd);
    total.add(gc_graveyards(p, cfg, opt));
    if (silly) total.add(gc_silly(p, opt));
  }
  total.add(gc_stats(cfg.stats_dir, opt));
  std::fflush(stdout);
  std::fprintf(stderr, "nfsshim gc: %u %s, %u kept, %u failed\n", total.removed,
               opt.dry_run ? "would be removed" : "removed", total.kept, total.failed);
  return total.failed ? kExitProblems : kExitOk;
}

}  // namespace nfsshim::tools
