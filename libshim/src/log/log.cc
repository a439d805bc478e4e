#include "nfsshim/log.h"

#include <fcntl.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/syslog_sink.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "nfsshim/sys.h"

namespace nfsshim::log {
namespace {

// Raw write(2): the preload's wrappers must not see it, and no stdio lock is involved.
void write_all(int fd, const char* p, size_t left) {
  while (left > 0) {
    long n = ::syscall(SYS_write, fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// stderr. Not spdlog's stderr_sink_mt: all of those share one process-wide mutex
// (console_mutex), which a thread blocked writing a line (stderr a full pipe) holds across
// fork(); the child's new logger would lock it in set_pattern and hang for ever. This
// sink's mutex is its own, and the child gets a new sink (after_fork_child).
class StderrSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    write_all(2, line.data(), line.size());
  }
  void flush_() override {}
};

// file:PATH. The file is opened for each line and closed again: a descriptor of ours kept
// open would be inherited by every exec'd child, could be closed under us by the host
// (closefrom, close_range) and its number reused for the host's own file, which our
// next line would then corrupt; and logrotate's new file is used at once. Lines are rare
// (the preload logs warnings; debug is for debugging). Raw syscalls: the preload's own
// open/close wrappers must not see them.
class AppendFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit AppendFileSink(std::string path) : path_(std::move(path)) {
    int fd = open_file();
    if (fd < 0) throw spdlog::spdlog_ex("cannot open " + path_ + ": " + std::strerror(-fd));
    struct stat st;
    bool regular = sys::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    sys::close(fd);
    if (!regular) throw spdlog::spdlog_ex(path_ + " is not a regular file");
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    int fd = open_file();
    if (fd < 0) {
      // Gone, rotated with a mode we may not write, no descriptor left (EMFILE): stderr,
      // saying why the first time.
      if (!warned_) {
        warned_ = true;
        std::string why = "nfsshim: cannot open log file " + path_ + " (" + std::strerror(-fd) +
                          "): writing to stderr while it cannot be opened\n";
        write_all(2, why.data(), why.size());
      }
      write_all(2, line.data(), line.size());
      return;
    }
    write_all(fd, line.data(), line.size());  // O_APPEND: lands at the end
    sys::close(fd);
  }
  void flush_() override {}

 private:
  // Non-blocking: a FIFO put there never holds up the host's threads (ENXIO, to stderr).
  int open_file() const {
    return sys::openat(AT_FDCWD, path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK, 0666);
  }
  std::string path_;
  bool warned_ = false;  // under base_sink's mutex
};

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
    sink = std::make_shared<AppendFileSink>(target.substr(5));
  else
    sink = std::make_shared<StderrSink>();
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

// State's strings and set must not be copied into a child half-updated: fork waits for
// them. Only short updates run under s.mu (never a write of a log line).
void before_fork() { state().mu.lock(); }
void after_fork_parent() { state().mu.unlock(); }

void after_fork_child() {
  State& s = state();
  // The child has one thread, the one whose before_fork locked s.mu: it unlocks it. The
  // old sink's lock may be held by a thread that no longer exists: a new logger replaces
  // it, and the old one is never unlocked or destroyed.
  s.mu.unlock();
  new std::shared_ptr<spdlog::logger>(std::move(s.logger));  // leaked on purpose
  try {
    s.logger = make_logger(s.ident, s.target, s.level);
  } catch (...) {
    try {
      s.logger = make_logger(s.ident, "stderr", s.level);
    } catch (...) {  // out of memory in a fork child: none now, get() makes one when asked
    }
  }
}

bool first_time(const std::string& key) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.once.insert(key).second;
}

}  // namespace nfsshim::log
