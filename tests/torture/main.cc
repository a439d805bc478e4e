// torture_driver: the workload and checks of the torture suite (see README.md).
//   load    --dir D [--procs N --threads T --seconds S --kill-every S --backing B
//            --daemon-pid P --gc NFSSHIM --max-rss-mib M --max-daemon-rss-mib M
//            --partitions N --roll BYTES --keep N --seed N --label L --zeros-ok --faults N
//            --worker-preload LIB
//            --plain-ok --enospc-ok --disconnect-ok --quiesce S]
//   worker  (started by load)
//   names   --dir D [--depth N --component-len N --entries N]
//   race    --dir D --outside O [--graveyard-dir G] [--seconds S] [--label L]
//   replace --dir D [--seconds S --readers N]   readers of a file replaced by rename in a loop
//   stale-size --dir D [--seconds S --list 0|1 --fstat 0|1]   a growing file mapped at its end while the dir is listed
//   verify  --dir D [--backing B] [--zeros-ok]   check a tree once (after a crash)
//   reap-once PATH
// Exit status: 0 every check passed, 1 a check failed, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "common.h"
#include "load.h"
#include "names.h"
#include "race.h"
#include "replace.h"
#include "stale_size.h"
#include "verify.h"

using namespace torture;

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr, "torture_driver: %s\nusage: torture_driver load|names|race|replace|stale-size|verify --dir DIR [options] (see main.cc)\n",
               why.c_str());
  return 2;
}

// --key value pairs and --flags, after the subcommand.
bool parse(int argc, char** argv, std::map<std::string, std::string>* kv, std::string* bad) {
  static const char* flags[] = {"--zeros-ok", "--plain-ok", "--enospc-ok", "--disconnect-ok"};
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    bool is_flag = false;
    for (auto f : flags) is_flag |= a == f;
    if (is_flag) {
      (*kv)[a] = "1";
    } else if (a.compare(0, 2, "--") == 0 && i + 1 < argc) {
      (*kv)[a] = argv[++i];
    } else {
      *bad = "unexpected argument '" + a + "'";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing subcommand");
  std::string cmd = argv[1];
  if (cmd == "reap-once") return argc == 3 ? run_reap_once(argv[2]) : usage("reap-once PATH");
  std::map<std::string, std::string> kv;
  std::string bad;
  if (!parse(argc, argv, &kv, &bad)) return usage(bad);
  auto str = [&](const char* k, const std::string& d) { return kv.count(k) ? kv[k] : d; };
  auto num = [&](const char* k, double d) { return kv.count(k) ? std::strtod(kv[k].c_str(), nullptr) : d; };
  std::string dir = str("--dir", "");
  if (dir.empty()) return usage("--dir is required");
  g_policy.plain_ok = kv.count("--plain-ok");
  g_policy.enospc_ok = kv.count("--enospc-ok");
  g_policy.disconnect_ok = kv.count("--disconnect-ok");

  WorkerOptions w;
  w.dir = dir;
  w.slot = static_cast<int>(num("--slot", 0));
  w.gen = static_cast<int>(num("--gen", 0));
  w.end_time = num("--end", 0);
  w.threads = static_cast<int>(num("--threads", 8));
  w.partitions = static_cast<int>(num("--partitions", 4));
  w.roll_bytes = static_cast<size_t>(num("--roll", 1 << 20));
  w.keep_segments = static_cast<int>(num("--keep", 3));
  w.seed = static_cast<unsigned>(num("--seed", 1));
  if (w.threads < 1 || w.partitions < 1 || w.roll_bytes < 4096 || w.keep_segments < 1)
    return usage("--threads, --partitions, --keep must be >= 1 and --roll >= 4096");

  if (cmd == "worker") return run_worker(w);
  if (cmd == "load") {
    LoadOptions o;
    o.worker = w;
    o.procs = static_cast<int>(num("--procs", 3));
    o.seconds = num("--seconds", 30);
    o.kill_every_s = num("--kill-every", 0);
    o.backing = str("--backing", "");
    o.daemon_pid = static_cast<int>(num("--daemon-pid", 0));
    o.gc = str("--gc", "");
    o.max_rss_mib = static_cast<long>(num("--max-rss-mib", 512));
    o.max_daemon_rss_mib = static_cast<long>(num("--max-daemon-rss-mib", 512));
    o.quiesce_s = num("--quiesce", 15);
    o.label = str("--label", "load");
    o.zeros_ok = kv.count("--zeros-ok");
    o.faults = static_cast<int>(num("--faults", 0));
    o.worker_preload = str("--worker-preload", "");
    if (o.procs < 1 || o.seconds <= 0) return usage("--procs must be >= 1 and --seconds > 0");
    return run_load(o, argv[0]);
  }
  if (cmd == "names")
    return run_names(dir, static_cast<int>(num("--depth", 200)), static_cast<size_t>(num("--component-len", 48)),
                     static_cast<long>(num("--entries", 20000)));
  if (cmd == "race") {
    std::string out = str("--outside", "");
    if (out.empty()) return usage("race needs --outside DIR");
    return run_race(dir, out, str("--graveyard-dir", ""), num("--seconds", 10), str("--label", "race"), argv[0]);
  }
  if (cmd == "replace")
    return run_replace(dir, num("--seconds", 10), static_cast<int>(num("--readers", 4)));
  if (cmd == "stale-size")
    return run_stale_size(dir, num("--seconds", 10), num("--list", 1) != 0, num("--fstat", 1) != 0);
  if (cmd == "verify") {
    TreeCheck t = check_tree(dir, ".graveyard.nfsshim", true, kv.count("--zeros-ok"));
    TreeCheck b = check_tree(str("--backing", dir), ".graveyard.nfsshim", false, false);
    std::printf("verify %s: %llu files, %llu bytes good, %llu bad, %llu zero pages; graveyard entries %llu, "
                "silly leftovers %llu\n",
                dir.c_str(), static_cast<unsigned long long>(t.files), static_cast<unsigned long long>(t.good),
                static_cast<unsigned long long>(t.bad), static_cast<unsigned long long>(t.zero_pages),
                static_cast<unsigned long long>(b.graveyard_entries), static_cast<unsigned long long>(b.silly));
    if (!t.first_problem.empty()) std::printf("  problem: %s\n", t.first_problem.c_str());
    return t.bad == 0 && b.graveyard_entries == 0 && b.silly == 0 ? 0 : 1;
  }
  return usage("unknown subcommand '" + cmd + "'");
}
