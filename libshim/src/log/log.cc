#include "nfsshim/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>

namespace nfsshim::log {
namespace {

struct State {
  std::mutex mu;
  std::shared_ptr<spdlog::logger> logger;
  std::string ident = "nfsshim";
  std::string target = "stderr";
  spdlog::level::level_enum level = spdlog::level::warn;
  std::set<std::string> once;
};

// Never destroyed: wrappers may log from other libraries' destructors at exit.
State& state() {
  static State* s = new State;
  return *s;
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& ident, const std::string& target,
                                            spdlog::level::level_enum level) {
  spdlog::sink_ptr sink;
  if (target == "syslog")
    sink = std::make_shared<spdlog::sinks::syslog_sink_mt>(ident, LOG_PID, LOG_USER, false);
  else if (target.rfind("file:", 0) == 0)
    sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(target.substr(5), false);
  else
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto lg = std::make_shared<spdlog::logger>(ident, std::move(sink));
  lg->set_pattern(target == "syslog" ? "%l: %v" : "%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
  lg->set_level(level);
  lg->flush_on(spdlog::level::trace);
  return lg;
}

}  // namespace

bool init(const std::string& ident, const std::string& target, const std::string& level,
          std::string* why) {
  State& s = state();
  auto lvl = spdlog::level::from_str(level);
  std::shared_ptr<spdlog::logger> lg;
  bool ok = true;
  try {
    lg = make_logger(ident, target, lvl);
  } catch (const std::exception& e) {
    if (why) *why = std::string("cannot open log target '") + target + "': " + e.what();
    lg = make_logger(ident, "stderr", lvl);
    ok = false;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  s.ident = ident;
  s.target = ok ? target : "stderr";
  s.level = lvl;
  s.logger = std::move(lg);
  return ok;
}

spdlog::logger& get() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.logger) s.logger = make_logger(s.ident, "stderr", s.level);
  return *s.logger;
}

void after_fork_child() {
  State& s = state();
  // The child has one thread: nobody else can hold s.mu or the sink's lock except a
  // thread that no longer exists. Re-create both without unlocking or destroying.
  new (&s.mu) std::mutex;
  new std::shared_ptr<spdlog::logger>(std::move(s.logger));  // leaked on purpose
  try {
    s.logger = make_logger(s.ident, s.target, s.level);
  } catch (...) {
    s.logger = make_logger(s.ident, "stderr", s.level);
  }
}

bool first_time(const std::string& key) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.once.insert(key).second;
}

}  // namespace nfsshim::log
