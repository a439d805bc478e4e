// nfsshim stat: the counters every running shimmed process publishes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "cli.h"
#include "stat_format.h"

namespace nfsshim::tools {

static const char kStatHelp[] =
    "usage: nfsshim stat [--json | --prometheus] [--watch SECONDS]\n"
    "\n"
    "Shows the counters of every running process that uses the nfsshim preload (or\n"
    "the FUSE daemon), read from the stats directory (nfsshim.conf(5): stats_dir,\n"
    "default /run/nfsshim). Files of processes that are gone are ignored.\n"
    "\n"
    "  --json           one JSON document\n"
    "  --prometheus     Prometheus text format, for node_exporter's textfile collector:\n"
    "                     nfsshim stat --prometheus > DIR/nfsshim.prom.$$ &&\n"
    "                     mv DIR/nfsshim.prom.$$ DIR/nfsshim.prom\n"
    "  --watch SECONDS  print again every SECONDS until interrupted\n"
    "\n"
    "exit status: 0 shown (also when no process publishes); 2 bad arguments.\n";

int cmd_stat(const std::vector<std::string>& args) {
  enum { table, json, prometheus } format = table;
  long watch = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help(a)) {
      std::fputs(kStatHelp, stdout);
      return kExitOk;
    } else if (a == "--json" || a == "--prometheus") {
      if (format != table) return usage_error("stat", "choose one of --json and --prometheus");
      format = a == "--json" ? json : prometheus;
    } else if (a == "--watch" || a.rfind("--watch=", 0) == 0) {
      std::string v;
      if (a == "--watch") {
        if (i + 1 >= args.size()) return usage_error("stat", "--watch needs SECONDS");
        v = args[++i];
      } else {
        v = a.substr(8);
      }
      char* end = nullptr;
      watch = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || watch < 1 || watch > 86400)
        return usage_error("stat", "bad --watch '" + v + "': expected whole seconds, 1 to 86400");
    } else {
      return usage_error("stat", "unknown argument '" + a + "'");
    }
  }
  Config cfg = load_tool_config();
  for (;;) {
    auto procs = read_stats_dir(cfg.stats_dir);
    std::string text = format == json ? format_json(procs)
                       : format == prometheus ? format_prometheus(procs)
                                              : format_table(procs);
    if (watch && format == table) {
      std::time_t now = std::time(nullptr);
      char when[32];
      std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
      std::printf("%s\n", when);
    }
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (!watch) return kExitOk;
    ::sleep(static_cast<unsigned>(watch));
    if (format == table) std::printf("\n");
  }
}

}  // namespace nfsshim::tools
