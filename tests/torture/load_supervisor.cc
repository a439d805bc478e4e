// The supervisor of the Kafka-like load: starts the workers, kills some at random,
// samples memory, then checks the end state (graveyard drained, no silly-rename
// leftovers, every surviving file verified) and prints the figures.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "load.h"
#include "verify.h"

namespace torture {
namespace {

struct Worker {
  int slot = 0, gen = 0;
  pid_t pid = -1;
  int fd = -1;  // its counter pipe
  std::string partial;
  Totals last;
  int kills = 0;  // times this slot was SIGKILLed
};

pid_t spawn(const LoadOptions& o, char* self, double end_time, Worker* w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 3);  // dup2 clears O_CLOEXEC on fd 3
    // Workers only: the supervisor itself must see the graveyard the preload hides.
    if (!o.worker_preload.empty()) ::setenv("LD_PRELOAD", o.worker_preload.c_str(), 1);
    const WorkerOptions& wo = o.worker;
    std::vector<std::string> a = {
        self, "worker", "--dir", wo.dir, "--slot", std::to_string(w->slot), "--gen",
        std::to_string(w->gen), "--end", std::to_string(static_cast<long long>(end_time)),
        "--threads", std::to_string(wo.threads), "--partitions", std::to_string(wo.partitions),
        "--roll", std::to_string(wo.roll_bytes), "--keep", std::to_string(wo.keep_segments),
        "--seed", std::to_string(wo.seed)};
    if (g_policy.plain_ok) a.push_back("--plain-ok");
    if (g_policy.enospc_ok) a.push_back("--enospc-ok");
    if (g_policy.disconnect_ok) a.push_back("--disconnect-ok");
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(&s[0]);
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  ::close(p[1]);
  w->pid = pid;
  w->fd = p[0];
  w->partial.clear();
  w->last.clear();
  return pid;
}

void drain(Worker* w) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(w->fd, buf, sizeof buf);
    if (n <= 0) break;
    w->partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = w->partial.find('\n')) != std::string::npos) {
      std::string line = w->partial.substr(0, nl);
      w->partial.erase(0, nl + 1);
      if (line.size() > 2) {
        w->last.clear();
        parse_counters(line.substr(2), &w->last);
      }
    }
    if (static_cast<size_t>(n) < sizeof buf) break;
  }
}

// A worker's end (waitpid status ST) that fails the run: anything but a clean exit, unless
// the daemon is meant to be killed under it (then a disconnect may end it any way).
bool bad_end(int st) {
  bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return !ok && !(g_policy.disconnect_ok && (WIFSIGNALED(st) || WEXITSTATUS(st) == 0));
}

void add(Totals* sum, const Totals& t) {
  for (auto& kv : t) (*sum)[kv.first] += kv.second;
}

}  // namespace

int run_load(const LoadOptions& o, char* self) {
  double end_time = static_cast<double>(std::time(nullptr)) + o.seconds;
  std::mt19937_64 rng(o.worker.seed);
  std::vector<Worker> ws(static_cast<size_t>(o.procs));
  for (int i = 0; i < o.procs; ++i) {
    ws[i].slot = i;
    if (spawn(o, self, end_time, &ws[i]) < 0) return std::perror("fork"), 2;
  }
  Totals sum;
  uint64_t kills = 0, kills_survived = 0, bad_exits = 0;
  long peak_rss = 0, peak_daemon = 0, daemon_quarter = -1, daemon_last = 0;
  double start = now_s();
  double next_kill = o.kill_every_s > 0 ? now_s() + o.kill_every_s * (0.5 + (rng() % 1000) / 1000.0) : 0;
  double next_sample = 0;
  size_t alive = ws.size();
  while (alive > 0) {
    std::vector<pollfd> pf;
    for (auto& w : ws)
      if (w.pid > 0) pf.push_back({w.fd, POLLIN, 0});
    ::poll(pf.data(), pf.size(), 100);
    for (auto& w : ws)
      if (w.pid > 0) drain(&w);
    double t = now_s();
    if (t >= next_sample) {
      next_sample = t + 0.5;
      for (auto& w : ws)
        if (w.pid > 0) peak_rss = std::max(peak_rss, rss_kib(w.pid));
      if (o.daemon_pid > 0) {
        long r = rss_kib(o.daemon_pid);
        peak_daemon = std::max(peak_daemon, r);
        // Growth shows as a difference between a quarter into the run and its end.
        if (daemon_quarter < 0 && t >= start + o.seconds / 4) daemon_quarter = r;
        if (r > 0) daemon_last = r;
      }
    }
    if (next_kill > 0 && t >= next_kill && std::time(nullptr) + 3 < end_time) {
      Worker& w = ws[rng() % ws.size()];
      if (w.pid > 0) {
        ::kill(w.pid, SIGKILL);
        int st = 0;
        ::waitpid(w.pid, &st, 0);
        // It may have ended on its own just before (a SIGBUS, a failed check): that counts.
        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) && bad_end(st)) {
          ++bad_exits;
          std::fprintf(stderr, "torture: worker %d (gen %d) ended with %s %d just before its SIGKILL\n", w.slot,
                       w.gen, WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
        drain(&w);
        ::close(w.fd);
        add(&sum, w.last);
        ++kills;
        ++w.gen;
        ++w.kills;  // survived once a successor recovered its files and ended cleanly
        spawn(o, self, end_time, &w);
      }
      next_kill = t + o.kill_every_s * (0.5 + (rng() % 1000) / 1000.0);
    }
    for (auto& w : ws) {
      if (w.pid <= 0) continue;
      int st;
      if (::waitpid(w.pid, &st, WNOHANG) != w.pid) continue;
      drain(&w);
      ::close(w.fd);
      add(&sum, w.last);
      if (bad_end(st)) {
        ++bad_exits;
        std::fprintf(stderr, "torture: worker %d (gen %d) ended with %s %d\n", w.slot, w.gen,
                     WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
      } else {
        kills_survived += static_cast<uint64_t>(w.kills);
      }
      w.pid = -1;
      --alive;
    }
  }

  // Quiescence: every process is gone, so every graveyard entry must go. (Not when the
  // daemon was killed under us: the caller remounts and checks then.)
  std::string backing = o.backing.empty() ? o.worker.dir : o.backing;
  bool dead_mount = g_policy.disconnect_ok;
  TreeCheck q, v;
  double until = now_s() + o.quiesce_s;
  if (!dead_mount) do {
    q = check_tree(backing, o.graveyard, false, false);
    if (q.graveyard_entries == 0 && q.silly == 0) break;
    ::usleep(200000);
  } while (now_s() < until);
  uint64_t left_at_quiescence = q.graveyard_entries, gc_reaped = 0;
  if (!dead_mount && q.graveyard_entries && !o.gc.empty()) {
    std::string cmd = "'" + o.gc + "' gc '" + backing + "' >&2";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "torture: %s failed\n", cmd.c_str());
    TreeCheck g = check_tree(backing, o.graveyard, false, false);
    gc_reaped = q.graveyard_entries - std::min(q.graveyard_entries, g.graveyard_entries);
    q.graveyard_entries = g.graveyard_entries;
    q.silly = g.silly;
  }
  if (!dead_mount) v = check_tree(o.worker.dir, o.graveyard, true, o.zeros_ok);

  uint64_t lost = sum["bytes_lost"] + v.bad;
  bool rss_ok = peak_rss <= o.max_rss_mib * 1024 && peak_daemon <= o.max_daemon_rss_mib * 1024;
  bool pass = lost == 0 && sum["forbidden"] == 0 && sum["unexpected"] == 0 && bad_exits == 0 &&
              q.graveyard_entries == 0 && q.silly == 0 && rss_ok && v.first_problem.empty();
  std::printf("---- %s: %d processes x %d threads, %.0f s\n", o.label.c_str(), o.procs, o.worker.threads, o.seconds);
  auto row = [](const char* k, uint64_t n) { std::printf("  %-34s %llu\n", k, static_cast<unsigned long long>(n)); };
  row("operations", sum["ops"]);
  row("bytes written", sum["bytes_written"]);
  row("bytes verified (while running)", sum["bytes_verified"]);
  row("fetches / cross-process reads", sum["fetches"] + sum["cross_reads"]);
  row("segment rolls", sum["rolls"]);
  row("retention deletes", sum["retention_deletes"]);
  row("partition deletes", sum["partition_deletes"]);
  row("partition moves", sum["partition_moves"]);
  row("checkpoint replaces", sum["checkpoints"]);
  row("SIGKILLs injected", kills);
  row("SIGKILLs survived (recovered)", kills_survived);
  row("files recovered after SIGKILL", sum["recovered_files"]);
  row("ENOENT from racing deletes (ok)", sum["enoent"]);
  row("ENOSPC seen (expected here)", sum["enospc"]);
  row("EBUSY/ENOTEMPTY as plain (expected)", sum["plain_errors"]);
  row("EBUSY/ENOTEMPTY/ESTALE (must be 0)", sum["forbidden"]);
  row("ESTALE on opendir of a removed dir", sum["stale_dirs"]);
  row("unexpected errors (must be 0)", sum["unexpected"]);
  row("disconnects (daemon killed)", sum["disconnects"]);
  row("surviving files verified", v.files);
  row("surviving bytes verified", v.good);
  row("zero pages accepted", v.zero_pages + sum["zero_pages"]);
  row("bytes lost (must be 0)", lost);
  row("graveyard entries at quiescence", left_at_quiescence);
  row("graveyard entries reaped by gc", gc_reaped);
  row("graveyard entries left (must be 0)", q.graveyard_entries);
  row("silly-rename leftovers (must be 0)", q.silly);
  row("worker failures (must be 0)", bad_exits);
  row("peak worker RSS KiB", static_cast<uint64_t>(peak_rss));
  row("peak daemon RSS KiB", static_cast<uint64_t>(std::max(0L, peak_daemon)));
  row("daemon RSS KiB a quarter in", static_cast<uint64_t>(std::max(0L, daemon_quarter)));
  row("daemon RSS KiB at the end", static_cast<uint64_t>(daemon_last));
  if (!v.first_problem.empty()) std::printf("  problem: %s\n", v.first_problem.c_str());
  if (!q.first_problem.empty()) std::printf("  problem: %s\n", q.first_problem.c_str());
  if (!rss_ok) std::printf("  problem: RSS above the bound (%ld MiB worker, %ld MiB daemon)\n", o.max_rss_mib, o.max_daemon_rss_mib);
  // A fault the caller set up for the whole run (read-only graveyard, full filesystem).
  kills += o.faults;
  if (pass) kills_survived += o.faults;
  std::printf("FIGURES %s ops=%llu faults=%llu survived=%llu verified=%llu lost=%llu rss=%ld daemon_rss=%ld %s\n",
              o.label.c_str(), static_cast<unsigned long long>(sum["ops"]),
              static_cast<unsigned long long>(kills), static_cast<unsigned long long>(kills_survived),
              static_cast<unsigned long long>(sum["bytes_verified"] + v.good),
              static_cast<unsigned long long>(lost), peak_rss, std::max(0L, peak_daemon), pass ? "PASS" : "FAIL");
  std::fflush(stdout);
  return pass ? 0 : 1;
}

}  // namespace torture
