// nfsshim: run a program under the preload, reap graveyards, check a filesystem,
// show the counters of shimmed processes. One cmd_<verb>.cc per command.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"

namespace {

const char kUsage[] =
    "usage: nfsshim COMMAND [ARGS...]\n"
    "\n"
    "Makes delete-while-open safe on NFS (see nfsshim(1)).\n"
    "\n"
    "commands:\n"
    "  run [--config FILE] -- CMD ARGS...   run CMD with the nfsshim preload\n"
    "  gc [--dry-run] [--max-age AGE] [--silly] [PATH...]\n"
    "                                       reap graveyard entries of dead processes\n"
    "  doctor PATH [--json]                 check a filesystem for nfsshim and Kafka\n"
    "  stat [--json|--prometheus] [--watch SECONDS]\n"
    "                                       counters of running shimmed processes\n"
    "\n"
    "'nfsshim COMMAND --help' describes each command.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace nfsshim::tools;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  std::string verb = argv[1];
  if (is_help(verb) || verb == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  if (verb == "run") return cmd_run(args);
  if (verb == "gc") return cmd_gc(args);
  if (verb == "doctor") return cmd_doctor(args);
  if (verb == "stat") return cmd_stat(args);
  std::fprintf(stderr, "nfsshim: unknown command '%s'\n\n%s", verb.c_str(), kUsage);
  return kExitUsage;
}
