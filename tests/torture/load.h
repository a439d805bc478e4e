// The Kafka-like load: a supervisor process that runs worker processes (each a copy of
// this program, exec'd, many threads) on one log dir, injects SIGKILLs, samples memory,
// and checks the end state.
#pragma once

#include <string>

namespace torture {

struct WorkerOptions {
  std::string dir;        // the log dir (as the application sees it)
  int slot = 0;           // which worker this is (names its partitions)
  int gen = 0;            // restart generation of this slot
  double end_time = 0;    // CLOCK_REALTIME second at which to stop
  int threads = 8;        // appenders + fetchers (admin threads come on top)
  int partitions = 4;
  size_t roll_bytes = 1 << 20;
  int keep_segments = 3;
  unsigned seed = 1;
};

int run_worker(const WorkerOptions& o);  // exit status

struct LoadOptions {
  WorkerOptions worker;
  int procs = 3;
  double seconds = 30;
  double kill_every_s = 0;   // SIGKILL a random worker this often (0: never)
  std::string backing;       // where the graveyard and leftovers are looked for (default dir)
  std::string graveyard = ".graveyard.nfsshim";
  int daemon_pid = 0;        // FUSE daemon whose RSS is sampled
  long max_rss_mib = 512;    // per worker
  long max_daemon_rss_mib = 512;
  double quiesce_s = 15;     // how long the graveyard may take to drain
  std::string gc;            // nfsshim binary: run `gc` if entries outlive quiescence
  std::string label = "load";
  bool zeros_ok = false;     // final verification accepts zero pages (after a daemon crash)
  std::string worker_preload;  // LD_PRELOAD for the workers only
  int faults = 0;            // faults the caller injected for the whole run (counted in FIGURES)
};

int run_load(const LoadOptions& o, char* self);

}  // namespace torture
