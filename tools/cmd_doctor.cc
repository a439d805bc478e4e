// nfsshim doctor: is PATH a place where Kafka can delete open files safely, and what
// would make it so?
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "doctor.h"

namespace nfsshim::tools {

static const char kDoctorHelp[] =
    "usage: nfsshim doctor PATH [--json]\n"
    "\n"
    "Checks the filesystem of the directory PATH: type, mount and (for NFS) the mount\n"
    "options that matter for Kafka; whether unlinking an open file there leaves a\n"
    "silly-renamed .nfs* file (it creates, opens, unlinks and cleans up a probe file);\n"
    "where the graveyard would be and whether it is usable; the kernel (5.18+ for\n"
    "preserve-unlinked), io_uring, /dev/fuse and fusermount3. Then says what to do.\n"
    "\n"
    "  --json   one JSON document instead of text\n"
    "\n"
    "exit status: 0 no problems; 1 problems found; 2 bad arguments or unreadable PATH.\n";

static void print_text(const Doctor& d) {
  for (const auto& s : d.sections) {
    std::printf("%s\n", s.name.c_str());
    for (const auto& f : s.facts)
      std::printf("  %-26s %s\n", (f.key + ":").c_str(), terminal_safe(f.value).c_str());
  }
  std::printf("\nproblems:%s\n", d.problems.empty() ? " none" : "");
  for (const auto& p : d.problems) std::printf("  - %s\n", terminal_safe(p).c_str());
  std::printf("recommendations:%s\n", d.notes.empty() ? " none" : "");
  for (const auto& n : d.notes) std::printf("  - %s\n", terminal_safe(n).c_str());
  std::printf("result: %s\n", d.problems.empty() ? "OK" : (std::to_string(d.problems.size()) + " problem(s)").c_str());
}

static void print_json(const Doctor& d) {
  std::string out = "{\"path\": \"" + json_escape(d.real) + "\"";
  for (const auto& s : d.sections) {
    out += ",\n \"" + s.name + "\": {";
    for (size_t i = 0; i < s.facts.size(); ++i) {
      const Fact& f = s.facts[i];
      out += (i ? ", \"" : "\"") + f.key + "\": ";
      out += f.raw ? f.value : "\"" + json_escape(f.value) + "\"";
    }
    out += "}";
  }
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    out += std::string(",\n \"") + key + "\": [";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", \"" : "\"") + json_escape(v[i]) + "\"";
    out += "]";
  };
  list("problems", d.problems);
  list("recommendations", d.notes);
  out += std::string(",\n \"ok\": ") + (d.problems.empty() ? "true" : "false") + "}\n";
  std::fputs(out.c_str(), stdout);
}

int cmd_doctor(const std::vector<std::string>& args) {
  bool json = false;
  std::string path;
  for (const auto& a : args) {
    if (is_help(a)) {
      std::fputs(kDoctorHelp, stdout);
      return kExitOk;
    } else if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("doctor", "unknown option '" + a + "'");
    } else if (!path.empty()) {
      return usage_error("doctor", "one PATH only (got '" + path + "' and '" + a + "')");
    } else {
      path = a;
    }
  }
  if (path.empty()) return usage_error("doctor", "no PATH given");
  Doctor d;
  d.path = path;
  d.dirfd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.dirfd < 0) return usage_error("doctor", "cannot open directory '" + path + "': " + std::strerror(errno));
  struct stat st;
  ::fstat(d.dirfd, &st);
  d.dev = st.st_dev;
  char buf[PATH_MAX];
  d.real = ::realpath(path.c_str(), buf) ? buf : path;
  d.cfg = load_tool_config();

  check_filesystem(&d);
  check_silly_rename(&d);
  check_graveyard(&d);
  check_host(&d);
  ::close(d.dirfd);
  if (json)
    print_json(d);
  else
    print_text(d);
  return d.problems.empty() ? kExitOk : kExitProblems;
}

}  // namespace nfsshim::tools
