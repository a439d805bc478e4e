// nfsshim run: exec a command with the preload in front of LD_PRELOAD.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "preload_lib.h"

namespace nfsshim::tools {

static const char kRunHelp[] =
    "usage: nfsshim run [--config FILE] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with libnfsshim-preload.so put in front of LD_PRELOAD (an existing\n"
    "LD_PRELOAD is kept). With --config, NFSSHIM_CONFIG=FILE is set for CMD.\n"
    "The library is $NFSSHIM_PRELOAD_LIB if set, else the one of this build tree,\n"
    "else the installed one; it must be a shared library for this architecture.\n"
    "\n"
    "exit status: CMD's; 2 bad arguments or unusable library or config;\n"
    "126 CMD cannot be executed; 127 CMD not found.\n";

int cmd_run(const std::vector<std::string>& args) {
  std::string config;
  bool given_config = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help(a)) {
      std::fputs(kRunHelp, stdout);
      return kExitOk;
    }
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--config") {
      if (i + 1 >= args.size()) return usage_error("run", "--config needs a FILE");
      config = args[++i];
      given_config = true;
    } else if (a.rfind("--config=", 0) == 0) {
      config = a.substr(9);
      given_config = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("run", "unknown option '" + a + "'");
    } else {
      break;
    }
  }
  if (given_config && config.empty())  // not "no --config": the user meant a file
    return usage_error("run", "--config needs a FILE, got an empty one");
  if (i >= args.size()) return usage_error("run", "no command given");

  if (!config.empty()) {
    char real[PATH_MAX];
    if (::access(config.c_str(), R_OK) != 0 || !::realpath(config.c_str(), real))
      return usage_error("run", "cannot read config file '" + config + "': " + std::strerror(errno));
    config = real;
  }
  std::string lib, why;
  if (!find_preload_library(&lib, &why) || !check_elf_library(lib, &why))
    return usage_error("run", "preload library unusable: " + why);
  if (lib.find_first_of(" :") != std::string::npos)
    return usage_error("run", "preload library path '" + lib + "' contains ' ' or ':', which LD_PRELOAD cannot hold");

  const char* old = std::getenv("LD_PRELOAD");
  std::string preload = prepend_preload(lib, old ? old : "");
  if (::setenv("LD_PRELOAD", preload.c_str(), 1) != 0 ||
      (!config.empty() && ::setenv("NFSSHIM_CONFIG", config.c_str(), 1) != 0)) {
    std::perror("nfsshim run: setenv");
    return kExitUsage;
  }
  std::vector<char*> argv;
  for (size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  int err = errno;
  std::fprintf(stderr, "nfsshim run: cannot execute '%s': %s\n", argv[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace nfsshim::tools
