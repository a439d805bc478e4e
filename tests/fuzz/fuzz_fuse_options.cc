// Fuzz target: nfsshim-fuse's command line and -o option parser (fusefs/options.cc,
// on top of libfuse's fuse_opt_parse). Input: the arguments after the program name, one
// per line (an fstab entry arrives as "SOURCE MOUNTPOINT -o OPTS").
// Invariants:
//   - a rejected command line comes with a non-empty message;
//   - an accepted one has SOURCE and MOUNTPOINT, timeouts in [0, 86400], a known log
//     level and log target, and hands libfuse default_permissions, the subtype,
//     allow_other exactly when wanted, and an fsname that unescapes to SOURCE;
//   - no leak, no crash, whatever the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "options.h"

namespace {

// The -o options in ARGS as libfuse reads them: "-o" then the next argument, or "-oLIST";
// LIST split at commas that no backslash escapes (items keep their escapes).
std::vector<std::string> libfuse_options(const fuse_args& args) {
  std::vector<std::string> items;
  for (int i = 0; i < args.argc; ++i) {
    std::string a = args.argv[i], list;
    if (a == "-o" && i + 1 < args.argc) list = args.argv[++i];
    else if (a.rfind("-o", 0) == 0 && a.size() > 2) list = a.substr(2);
    else continue;
    std::string item;
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k] == '\\' && k + 1 < list.size()) {
        item += list[k];
        item += list[++k];
      } else if (list[k] == ',') {
        items.push_back(item);
        item.clear();
      } else {
        item += list[k];
      }
    }
    items.push_back(item);
  }
  return items;
}

// libfuse's -o escaping: '\x' stands for x.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

void check_accepted(const nfsshim::fuse::Options& o, const fuse_args& args) {
  FUZZ_CHECK(!o.source.empty() && !o.mountpoint.empty(), "accepted without SOURCE/MOUNTPOINT");
  for (double t : {o.entry_timeout, o.attr_timeout, o.negative_timeout})
    FUZZ_CHECK(t >= 0.0 && t <= 86400.0, "timeout %g accepted", t);
  static const char* const levels[] = {"trace", "debug",    "info", "warn",
                                       "warning", "error", "critical", "off"};
  bool level_ok = o.log_level.empty();  // not given: nfsshim.conf's log_level
  for (const char* l : levels) level_ok = level_ok || o.log_level == l;
  FUZZ_CHECK(level_ok, "log_level %s accepted", fuzz_quote(o.log_level).c_str());
  FUZZ_CHECK(o.log_target.empty() || o.log_target == "stderr" || o.log_target == "syslog" ||
                 o.log_target.rfind("file:/", 0) == 0,
             "log %s accepted", fuzz_quote(o.log_target).c_str());
  bool perms = false, subtype = false, allow_other = false;
  std::string fsname;  // the last one wins in libfuse: it must be ours
  for (const std::string& opt : libfuse_options(args)) {
    perms = perms || opt == "default_permissions";
    subtype = subtype || opt == "subtype=nfsshim-fuse";
    allow_other = allow_other || opt == "allow_other";
    if (opt.rfind("fsname=", 0) == 0) fsname = opt.substr(7);
  }
  FUZZ_CHECK(perms && subtype && !fsname.empty(), "libfuse arguments incomplete");
  FUZZ_CHECK(unescape(fsname) == o.source, "fsname %s for source %s", fuzz_quote(fsname).c_str(),
             fuzz_quote(o.source).c_str());
  FUZZ_CHECK(allow_other == o.allow_other, "allow_other %d but -oallow_other %s", o.allow_other,
             allow_other ? "passed" : "missing");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words{"nfsshim-fuse"};
  size_t pos = 0;
  while (pos <= input.size() && words.size() < 64) {
    size_t nl = input.find('\n', pos);
    if (nl == std::string::npos) nl = input.size();
    words.push_back(input.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(&w[0]);  // a NUL inside a word: C sees a prefix
  argv.push_back(nullptr);

  nfsshim::fuse::Options opts;
  fuse_args args{};
  std::string why;
  bool ok = nfsshim::fuse::parse_options(static_cast<int>(words.size()), argv.data(), &opts,
                                         &args, &why);
  if (!ok) FUZZ_CHECK(!why.empty(), "rejected without a message");
  else if (!opts.show_help && !opts.show_version) check_accepted(opts, args);
  fuse_opt_free_args(&args);
  return 0;
}
