#include "state.h"

#include <pthread.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "guard.h"
#include "nfsshim/log.h"
#include "nfsshim/stats_file.h"
#include "registry.h"
#include "watch.h"

extern char** environ;

namespace nfsshim::preload {

__thread int tls_depth __attribute__((tls_model("initial-exec"))) = 0;

ErrnoKeeper::ErrnoKeeper() : saved_(errno) {}
ErrnoKeeper::~ErrnoKeeper() { errno = saved_; }

namespace {
Config* g_config = nullptr;  // set once by init_process, never freed
std::atomic<bool> g_ready{false};
std::string* g_hidden = nullptr;  // graveyard directory names to hide
size_t g_hidden_count = 0;
std::atomic<pid_t> g_pid{0};  // the process whose state this is (set at start and by fork)

pid_t current_pid() { return static_cast<pid_t>(::syscall(SYS_getpid)); }

void atfork_prepare() {
  // Lock order: Watcher before Registry before the log state (see state.h).
  Watcher::get().lock();
  Registry::get().mutex().lock();
  log::before_fork();
}
void atfork_parent() {
  log::after_fork_parent();
  Registry::get().mutex().unlock();
  Watcher::get().unlock();
}
void atfork_child() {
  g_pid.store(current_pid(), std::memory_order_relaxed);  // first: before any Guard
  // Then: until then counters() is the parent's published mapping.
  republish_counters_after_fork();
  Registry::get().after_fork_child();
  Watcher::get().after_fork_child();
  log::after_fork_child();
}
}  // namespace

bool foreign_child() {
  pid_t p = g_pid.load(std::memory_order_relaxed);
  return p != 0 && current_pid() != p;
}

const Config& config() { return *g_config; }
bool initialized() { return g_ready.load(std::memory_order_acquire); }

bool anything_watched() {
  if (!initialized()) return false;
  ErrnoKeeper keep;  // a mount-table refresh may fail a syscall or two
  return Watcher::get().any();
}

bool hidden_name(const char* name) {
  if (!initialized() || name[0] != '.') return false;
  for (size_t i = 0; i < g_hidden_count; ++i)
    if (std::strcmp(name, g_hidden[i].c_str()) == 0) return true;
  return false;
}

void init_process() {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return;
  Guard guard;
  ErrnoKeeper keep;
  resolve_mmap_symbols();
  std::vector<ConfigError> errors;
  // Secure execution (set-user-ID, set-group-ID, file capabilities; the shim gets there
  // through /etc/ld.so.preload): the environment is the caller's, and NFSSHIM_CONFIG,
  // NFSSHIM_LOG=file:, NFSSHIM_STATS_DIR would have the program read and write files of
  // its owner for them. Only /etc/nfsshim.conf counts there.
  const bool secure = getauxval(AT_SECURE) != 0;
  bool ignored = false;
  for (char** e = environ; secure && e && *e; ++e) ignored = ignored || std::strncmp(*e, "NFSSHIM_", 8) == 0;
  g_config = new Config(load_config(secure ? nullptr : environ, &errors));
  std::string why;
  if (!log::init("nfsshim", g_config->log_target, g_config->log_level, &why))
    SHIM_LOG_ERROR("{}", why);
  if (ignored) SHIM_LOG_WARN("secure-execution program: NFSSHIM_* environment ignored, /etc/nfsshim.conf only");
  for (const auto& e : errors)
    SHIM_LOG_ERROR("bad setting ignored, default kept: {}", e.str());
  if (!g_config->enabled) return;

  // Names hidden from readdir: the default graveyard name and every configured one.
  std::vector<std::string> names{g_config->graveyard_name};
  for (const auto& g : g_config->graveyards) names.push_back(g.second.substr(g.second.rfind('/') + 1));
  g_hidden = new std::string[names.size()];
  for (size_t i = 0; i < names.size(); ++i) g_hidden[i] = names[i];
  g_hidden_count = names.size();

  Watcher::get();
  Registry::get();
  g_pid.store(current_pid(), std::memory_order_relaxed);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  // Counters into <stats_dir>/<pid>.stats for `nfsshim stat`; without it they stay private.
  if (publish_counters(StatsKind::preload, g_config->stats_dir, &why) < 0 && log::first_time("stats"))
    SHIM_LOG_DEBUG("counters not published: {}", why);
  g_ready.store(true, std::memory_order_release);
  SHIM_LOG_DEBUG("nfsshim preload active: mode={}, {} watch dirs", to_string(g_config->mode),
                 g_config->watch.size());
}

__attribute__((constructor)) static void on_load() { init_process(); }

// Last references at exit: remove our graveyard entries now. Fds still open are
// closed by the kernel right after; on NFS it keeps their data (in a silly-renamed
// name inside the graveyard) until then.
__attribute__((destructor)) static void on_unload() {
  if (!initialized()) return;
  Guard guard;
  // Not in a vfork child that calls exit() (a failed exec): the entries are its parent's.
  if (!guard.outermost()) return;
  ErrnoKeeper keep;
  try {  // a destructor at exit: an exception would end the process with abort()
    Registry::get().remove_all();
  } catch (...) {
  }
}

}  // namespace nfsshim::preload
