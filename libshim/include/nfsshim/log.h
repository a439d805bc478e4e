// Logging over spdlog. One logger per process, created by log::init; until then (and
// if init fails) messages go to stderr at warn level and above. The preload holds its
// reentrancy guard around every call, so a sink's own open/write/close never re-enter
// the wrappers.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace nfsshim::log {

// TARGET: stderr | syslog | file:PATH. LEVEL: trace..off. Returns false and sets WHY
// if the target could not be opened (the stderr logger is kept then).
bool init(const std::string& ident, const std::string& target, const std::string& level,
          std::string* why);

spdlog::logger& get();

// Fork handlers (pthread_atfork). before_fork holds the logger's state until
// after_fork_parent / after_fork_child. In the child another thread may have held the
// sink's lock: after_fork_child starts a new logger and leaks the old one rather than
// touch its mutex.
void before_fork();
void after_fork_parent();
void after_fork_child();

// True the first time KEY is seen in this process (for "log once" fallbacks).
bool first_time(const std::string& key);

}  // namespace nfsshim::log

#define SHIM_LOG_DEBUG(...) ::nfsshim::log::get().debug(__VA_ARGS__)
#define SHIM_LOG_INFO(...) ::nfsshim::log::get().info(__VA_ARGS__)
#define SHIM_LOG_WARN(...) ::nfsshim::log::get().warn(__VA_ARGS__)
#define SHIM_LOG_ERROR(...) ::nfsshim::log::get().error(__VA_ARGS__)
